"""IC-recall (Huang, Nichani, Lee & Ge): the task, the construction and the closed forms, against independent
computations (brute force over the population, the paper's formula written in plain torch)."""

import itertools

import pytest
import torch

from analyses.papers.ic_recall.data import ICRecallSpec, ICRecallTask
from analyses.papers.ic_recall.models import (
    AnalyticICRecall,
    associative_memory,
    build_model,
    closed_form_answer_logits,
    closed_form_relation_logits,
    confusing_logit_gap,
    initial_scores,
    memory_readout,
    memory_recall,
    orthonormal_embeddings,
    scores,
    set_scores,
)
from analyses.papers.ic_recall.runs import FinetuneConfig, check_sample_count, finetune
from mechrecall._tl import tl_parameter, tl_parameters, tl_state_dict, weight
from mechrecall.builder import trainable_parameters

torch.set_num_threads(1)


# ------------------------------------------------------------------------------------ task


def test_population_types_and_ceilings_by_brute_force():
    task = ICRecallTask(ICRecallSpec(5, 12, 2, "random", seed=3))
    pop = task.population(None)
    assert len(pop) == 12 * 5 * 4 * 3 == task.spec.population_size
    assert len({tuple(t) for t in pop.tokens.tolist()}) == len(pop)
    rel = task.rel.tolist()
    inv_K, types_conf, types_mis = [], [], []
    for b in range(len(pop)):
        s, a = pop.subjects[b].tolist(), pop.answers[b].tolist()
        assert rel[pop.relation[b]][s[2]] == a[2] and len(set(s)) == 3
        K = sum(rel[r][s[0]] == a[0] and rel[r][s[1]] == a[1] for r in range(task.m))
        inv_K.append(1 / K)
        types_conf.append(any(rel[r][s[0]] == a[1] and rel[r][s[1]] == a[0] for r in range(task.m)))
        two = [r for r in range(task.m) if {rel[r][x] for x in s} >= {a[0], a[1]}]
        types_mis.append(any(rel[r][s[2]] in (a[0], a[1]) for r in two))
    types = task.sequence_types(pop)
    assert types["confusing"].tolist() == types_conf
    assert types["mismatched"].tolist() == types_mis
    assert task.bayes_ceiling(pop) == pytest.approx(sum(inv_K) / len(inv_K), abs=1e-12)
    assert task.bayes_ceiling() == pytest.approx(sum(inv_K) / len(inv_K), abs=1e-12)  # exact, by enumeration


def test_table1_every_n3_sequence_is_confusing_and_mismatched():
    task = ICRecallTask(ICRecallSpec(3, 6, 2, "all_bijections"))
    types = task.sequence_types(task.population())
    assert types["confusing"].all() and types["mismatched"].all()
    assert sorted(map(tuple, task.rel.tolist())) == sorted(itertools.permutations(range(3)))


def test_affine_satisfies_assumption_2_2_and_random_paper_sizes_do_not():
    assert ICRecallTask(ICRecallSpec(7, 42, 2, "affine", seed=1)).assumption_2_2_violations() == 0
    assert ICRecallTask(ICRecallSpec(11, 55, 2, "affine", seed=2)).bayes_ceiling() == 1.0
    paper = ICRecallTask(ICRecallSpec(8, 64, 2, "random", seed=0))
    assert paper.assumption_2_2_violations() > 0
    assert 0.57 < paper.bayes_ceiling() < 0.63  # ≈ (1 − e^{−λ})/λ, λ = 63/56
    assert len({tuple(r) for r in paper.rel.tolist()}) == 64  # distinct bijections
    assert all(sorted(r) == list(range(8)) for r in paper.rel.tolist())


def test_the_bayes_ceiling_of_random_families_varies_a_little_between_seeds():
    """A property of the data (once a row of the claims table): the exact ceiling of Fig 2's sizes (n = 8, m = 64,
    random bijections) differs between relation sets, by about ±0.01 over five seeds, never reaching 1."""
    ceilings = [ICRecallTask(ICRecallSpec(8, 64, 2, "random", seed=s)).bayes_ceiling() for s in range(5)]
    half_range = (max(ceilings) - min(ceilings)) / 2
    assert 0.002 < half_range < 0.03 and all(0.55 < c < 0.65 for c in ceilings)


def test_pretraining_population_is_every_ordered_pair_of_every_fact():
    task = ICRecallTask(ICRecallSpec(4, 5, 2, "random"))
    tokens, targets = task.pretraining_population()
    assert tokens.shape == (6 * 4 * 5, 2)
    for (u1, u2), t in zip(tokens.tolist(), targets.tolist()):
        triple = sorted([u1, u2, t])
        s, a, r = triple[0], triple[1] - 4, triple[2] - 8
        assert task.rel[r, s] == a


@pytest.mark.parametrize(
    "spec, message",
    [
        (ICRecallSpec(8, 60, 2, "affine"), "prime n; n=8"),
        (ICRecallSpec(7, 43, 2, "affine"), "m=43"),
        (ICRecallSpec(3, 7, 2, "all_bijections"), "m=7"),
        (ICRecallSpec(3, 6, 3, "random"), "k=3"),
        (ICRecallSpec(3, 6, 2, "nope"), "'nope'"),
    ],
)
def test_bad_task_specs_name_the_value(spec, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        ICRecallTask(spec)


def test_bad_training_inputs_name_the_value():
    task = ICRecallTask(ICRecallSpec(3, 6, 2, "all_bijections"))
    with pytest.raises(ValueError, match="N=37"):
        check_sample_count(task, 37)
    with pytest.raises(ValueError, match="T=0"):
        FinetuneConfig(T=0).validate()
    with pytest.raises(ValueError, match="n_ctx=6"):
        build_model(task.spec, n_ctx=6)


# ----------------------------------------------------------------------------------- model


def paper_forward(task, phi, W, V, WKQ, tokens):
    """The paper's §2.1 formula in plain torch: h = W^P(z_{-1} + Z softmax(Zᵀ W^KQ z_{-1})), f = Vᵀ(W h)²."""
    B, L = tokens.shape
    dP = WKQ.shape[0] - phi.shape[0]
    out = torch.zeros(B, L, phi.shape[1], dtype=torch.float64)
    for b in range(B):
        Z = torch.cat([torch.eye(dP, dtype=torch.float64)[:, :L], phi[:, tokens[b]]], 0)  # [dP + d, L]
        for t in range(L):
            att = torch.softmax(Z[:, : t + 1].T @ WKQ @ Z[:, t], 0)
            h = (Z[:, t] + Z[:, : t + 1] @ att)[dP:]
            out[b, t] = phi.T @ (V.T @ (W @ h) ** 2)
    return out


@pytest.mark.parametrize("spec", [ICRecallSpec(3, 6, 2, "all_bijections", 0), ICRecallSpec(5, 20, 3, "affine", 1)])
def test_tl_construction_equals_the_paper_formula_and_the_closed_forms(spec):
    task = ICRecallTask(spec)
    model = build_model(spec, "full", dtype="float64", seed=0)
    Din = model.cfg.d_head
    g = torch.Generator().manual_seed(5)
    WKQ = 0.5 * torch.randn(Din, Din, generator=g, dtype=torch.float64)
    with torch.no_grad():
        model.blocks[0].attn.W_K[0, :Din, :Din] = WKQ
    data = task.population(40, torch.Generator().manual_seed(0))
    phi = orthonormal_embeddings(spec.d_vocab, "random", spec.seed)
    W, V = associative_memory(task, phi)
    logits, cache = model.run_with_cache(data.tokens)
    reference = paper_forward(task, phi, W, V, WKQ, data.tokens)
    assert (logits - reference).abs().max() < 1e-10
    pat = cache["blocks.0.attn.hook_pattern"][:, 0]
    rel = logits[:, task.relation_pos, 2 * task.n : 2 * task.n + task.m]
    ans = logits[:, task.answer_pos, task.n : 2 * task.n]
    assert (
        rel - closed_form_relation_logits(pat[:, task.relation_pos, : 2 * spec.k + 2], task, data)
    ).abs().max() < 1e-10
    assert (ans - closed_form_answer_logits(pat[:, task.answer_pos, : 2 * spec.k + 3], task, data)).abs().max() < 1e-10
    # only W^KQ is trainable in full mode, and nothing but the position block in partial mode
    assert list(trainable_parameters(model)) == ["blocks.0.attn.W_K"]
    partial = build_model(spec, "partial", dtype="float64")
    assert partial.mechrecall_entry_masks["blocks.0.attn.W_K"].sum() == model.cfg.n_ctx**2


def test_memory_recalls_everything_with_the_exact_readout_values():
    task = ICRecallTask(ICRecallSpec(8, 64, 2, "random", 0))
    phi = orthonormal_embeddings(task.spec.d_vocab, "random", 0)
    W, V = associative_memory(task, phi)
    assert W.shape == V.shape == (3 * 64, task.spec.d_vocab)
    assert memory_recall(task, W, V, phi) == {"sr->a": 1.0, "sa->r": 1.0, "ar->s": 1.0}
    s, r = 3, 10
    out = memory_readout(W, V, phi, phi[:, s] + phi[:, task.relation_id(r)])
    a = task.answer_id(int(task.rel[r, s]))
    assert out[a] == pytest.approx(4.0) and out[task.eos_id] == pytest.approx(0.0, abs=1e-12)
    others = [i for i in range(8, 16) if i != a]
    assert torch.allclose(out[others], torch.full((7,), 2.0, dtype=torch.float64))
    assert torch.allclose(out[:8], torch.ones(8, dtype=torch.float64))
    # (s, a) -> every relation mapping s to a scores 4
    a_idx = int(task.rel[r, s])
    out2 = memory_readout(W, V, phi, phi[:, s] + phi[:, task.answer_id(a_idx)])
    hits = (task.rel[:, s] == a_idx).nonzero().flatten()
    assert torch.allclose(out2[task.relation_id(hits)], torch.full((len(hits),), 4.0, dtype=torch.float64))


def test_confusing_gap_and_answer_ties_at_eos():
    task = ICRecallTask(ICRecallSpec(3, 6, 2, "all_bijections"))
    pop = task.population()
    v = torch.softmax(torch.randn(6, generator=torch.Generator().manual_seed(2), dtype=torch.float64), -1)
    rel = closed_form_relation_logits(v, task, pop)
    for b in range(len(pop)):
        s, a = pop.subjects[b].tolist(), pop.answers[b].tolist()
        conf = [r for r in range(6) if task.rel[r, s[0]] == a[1] and task.rel[r, s[1]] == a[0]]
        assert len(conf) == 1
        gap = rel[b, pop.relation[b]] - rel[b, conf[0]]
        assert gap == pytest.approx(float(confusing_logit_gap(v)), abs=1e-12)
    model = build_model(task.spec, "partial", dtype="float64")
    set_scores(model, torch.log(v), torch.zeros(7, dtype=torch.float64))
    eos = model(pop.tokens[:, :6])[:, -1, 3:6]
    assert (eos.max(-1).values - eos.min(-1).values).max() < 1e-12  # Lemma B.1


def test_fast_path_trains_to_the_same_parameters_as_the_tl_model():
    task = ICRecallTask(ICRecallSpec(8, 64, 2, "random", 0))
    data = task.sample(8, torch.Generator().manual_seed(1))
    cfg = FinetuneConfig(T=0.05, lr=1e-2, steps=40)
    init = initial_scores(2, 1e-3, 0)
    fast = AnalyticICRecall(task)
    finetune(fast, task, data, cfg, init=init)
    tl = build_model(task.spec, "partial", dtype="float64")
    frozen = tl_state_dict(tl)
    finetune(tl, task, data, cfg, init=init)
    theta, omega = scores(tl, 2)
    assert (theta - fast.theta.detach()).abs().max() < 1e-10
    assert (omega - fast.omega.detach()).abs().max() < 1e-10
    assert (theta - init[0]).abs().max() > 0.1  # it did train
    W_K = tl.blocks[0].attn.W_K.detach()
    mask = tl.mechrecall_entry_masks["blocks.0.attn.W_K"]
    assert torch.equal(W_K[~mask], frozen["blocks.0.attn.W_K"][~mask])
    for n, p in tl_parameters(tl).items():
        if n != "blocks.0.attn.W_K":
            assert torch.equal(p, frozen[n]), n


def test_one_gd_step_makes_the_query_subject_win_step_two():
    """Lemma 4.5 / App. D: from ω = 0, one GD step at η1 makes ω largest on s3, by ≥ 32 η1 / (147 T)."""
    T = 0.05
    for spec in (ICRecallSpec(3, 6, 2, "all_bijections"), ICRecallSpec(7, 21, 2, "affine", 1)):
        task = ICRecallTask(spec)
        model = AnalyticICRecall(task)
        cfg = FinetuneConfig(T=T, optimizer="pgd", t1=1, t2=0)
        finetune(model, task, task.sample(64, torch.Generator().manual_seed(0)), cfg)
        omega = model.omega.detach()
        # the perturbation ξ of stage 2 is tiny (T³ scale) and cannot change the winner
        assert int(omega.argmax()) == 4
        others = torch.cat([omega[:4], omega[5:]])
        assert float(omega[4] - others.max()) >= 32 * cfg.eta1 / (147 * T) * (1 - 1e-3) - 2 * cfg.radius


def test_the_recipe_rebuilds_the_model_from_a_checkpoint(tmp_path):
    from mechrecall.checkpoint import load_model, save_checkpoint

    task = ICRecallTask(ICRecallSpec(4, 9, 2, "random", 2))
    model = build_model(task.spec, "partial", dtype="float64", seed=3)
    set_scores(model, *initial_scores(2, 0.5, 1))
    save_checkpoint(tmp_path / "ckpt", model)
    again = load_model(tmp_path / "ckpt")
    data = task.population()
    assert torch.equal(again(data.tokens), model(data.tokens))
    assert again.mechrecall_spec["surgeries"][6]["kind"] == "ic_recall_weights"


def test_n3_optimum_minimises_the_first_step_loss_on_the_line():
    """a*(T) (theory.n3_pairwise_optimum, scipy's bounded search) against a fine grid around it."""
    from analyses.papers.ic_recall.theory import n3_first_step_loss, n3_pairwise_optimum

    a = n3_pairwise_optimum(0.05)
    x = torch.linspace(a - 1e-3, a + 1e-3, 201, dtype=torch.float64)
    assert abs(float(x[n3_first_step_loss(x, 0.05).argmin()]) - a) < 2e-5
    assert 0.1331 < a < 0.1333  # Table 2's logits at T = 0.05 (App. B's root (4 − √6)/10 ≈ 0.155 is not it)
    with pytest.raises(ValueError, match="T=0"):
        n3_pairwise_optimum(0)


# ------------------------------------------------------------------ Fig 4: the MLP's cross terms


def _hand_built_mlp(spec: ICRecallSpec, dtype: str = "float32") -> torch.nn.Module:
    """A pretrain-mode model whose MLP weights are set by hand: seeded N(0, 1) entries on the token block only."""
    model = build_model(spec, "full", memory="random", dtype=dtype, seed=5)
    d, dP = spec.d_vocab, model.cfg.n_ctx
    g = torch.Generator().manual_seed(11)
    with torch.no_grad():
        mlp = model.blocks[0].mlp
        mlp.W_in.zero_(), mlp.W_out.zero_()
        mlp.W_in[dP : dP + d] = torch.randn(d, model.cfg.d_mlp, generator=g).to(mlp.W_in.dtype)
        mlp.W_out[:, dP + d :] = torch.randn(model.cfg.d_mlp, d, generator=g).to(mlp.W_out.dtype)
    return model


def test_cancelling_subject_cross_terms_on_a_hand_built_mlp_is_exact():
    """After cancelling, the MLP's output on two subjects s ≠ s' is the sum of its outputs on each alone (the pair
    writes nothing, along any answer or relation direction); every other input keeps its output minus exactly
    2 c_s c_s' B(s, s'), B by polarisation of the original MLP (an independent computation)."""
    from analyses.papers.ic_recall.metrics import cross_term_sizes
    from analyses.papers.ic_recall.models import cancel_cross_terms, pair_terms

    spec = ICRecallSpec(4, 8, 2, "random", 0)
    task = ICRecallTask(spec)
    model = _hand_built_mlp(spec, "float64")
    subjects = torch.arange(spec.n)
    cancelled = cancel_cross_terms(model, spec, subjects)
    assert cancelled.cfg.dtype == torch.float64
    E = model.embed.W_E.double()
    f = lambda m, x: (x @ m.blocks[0].mlp.W_in.double()) ** 2 @ m.blocks[0].mlp.W_out.double()  # noqa: E731
    W_U = model.unembed.W_U.double()
    for s, t in itertools.combinations(range(spec.n), 2):
        interaction = f(cancelled, E[s] + E[t]) - f(cancelled, E[s]) - f(cancelled, E[t])
        assert (interaction @ W_U).abs().max() < 1e-10  # no component on any token's direction
        before = (f(model, E[s] + E[t]) - f(model, E[s]) - f(model, E[t])) @ W_U
        assert before[spec.n : 2 * spec.n].abs().max() > 1e-2  # the hand-built MLP had them, on the answers too
    c = torch.randn(16, spec.d_vocab, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    x = c @ E
    expected = f(model, x)
    for s, t in itertools.combinations(range(spec.n), 2):
        B = (f(model, E[s] + E[t]) - f(model, E[s]) - f(model, E[t])) / 2
        expected -= 2 * c[:, s, None] * c[:, t, None] * B
    assert (f(cancelled, x) - expected).abs().max() < 1e-9
    a = task.answer_id(torch.arange(spec.n))
    assert torch.allclose(pair_terms(cancelled, subjects, a), pair_terms(model, subjects, a), atol=1e-10)
    assert (
        cross_term_sizes(cancelled, task)["subject_subject"] < 1e-9 < cross_term_sizes(model, task)["subject_subject"]
    )
    for name in ("blocks.0.attn.W_K", "embed.W_E", "unembed.W_U"):  # the attention and embeddings are copied
        assert torch.equal(tl_parameter(cancelled, name), tl_parameter(model, name))
    assert not weight(cancelled, "blocks.0.mlp.W_in").requires_grad and cancelled.mechrecall_entry_masks


def test_the_cancelled_model_changes_only_the_mlp_output_by_the_cross_terms():
    """The whole TL forward: the same residual before the MLP, and the MLP output differs by −Σ 2 c_s c_s' B(s, s')
    with c read off the residual (float32)."""
    from analyses.papers.ic_recall.models import cancel_cross_terms, pair_terms

    spec = ICRecallSpec(4, 8, 2, "random", 1)
    task = ICRecallTask(spec)
    model = _hand_built_mlp(spec)
    subjects = torch.arange(spec.n)
    cancelled = cancel_cross_terms(model, spec, subjects)
    tokens = task.sample(32, torch.Generator().manual_seed(0)).tokens
    _, cache = model.run_with_cache(tokens)
    _, cache2 = cancelled.run_with_cache(tokens)
    assert torch.equal(cache["blocks.0.hook_resid_mid"], cache2["blocks.0.hook_resid_mid"])
    coef = cache["blocks.0.hook_resid_mid"] @ model.embed.W_E[subjects].T  # [B, pos, n]: c_s
    B = pair_terms(model, subjects, subjects)
    mask = torch.triu(torch.ones(spec.n, spec.n, dtype=torch.bool), 1).float()
    correction = 2 * torch.einsum("bps,bpt,st,std->bpd", coef, coef, mask, B)
    diff = cache2["blocks.0.hook_mlp_out"] - cache["blocks.0.hook_mlp_out"]
    assert (diff + correction).abs().max() < 1e-4 * (1 + correction.abs().max())


def test_lemma_3_1_memory_has_no_subject_cross_terms():
    """The constructed memory stores one (s, a) pair per row: no subject×subject or answer×answer cross term writes
    on the relation logits, while the subject×answer terms carry R(s, a)."""
    from analyses.papers.ic_recall.metrics import cross_term_sizes

    task = ICRecallTask(ICRecallSpec(5, 12, 2, "random", 0))
    sizes = cross_term_sizes(build_model(task.spec, "full", dtype="float64"), task)
    assert sizes["subject_subject"] < 1e-12 and sizes["answer_answer"] < 1e-12 and sizes["subject_answer_rms"] > 0.1
