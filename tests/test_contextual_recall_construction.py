"""The §4 construction (Prop. 1-4) in a HookedTransformer, against a plain-torch Eq. 1, and Theorem 2's cascade."""

from __future__ import annotations

import pytest
import torch

from analyses.papers.contextual_recall.data import (
    WorldConfig,
    all_icl_rel,
    build_world,
    sample_icl_rel,
    sample_pt_rel,
    split_subjects,
)
from analyses.papers.contextual_recall.metrics import head_role_cosines, recall_metrics
from analyses.papers.contextual_recall.models import (
    build_model_b,
    construction_weights,
    functional_last_logits,
    load_construction,
    world_r_ctx,
)
from analyses.papers.contextual_recall.presets import CASCADE_HOLDS, CASCADE_PAPER
from analyses.papers.contextual_recall.theory import (
    Steps,
    _Cascade,
    balanced_split,
    block_rows,
    cascade_condition,
    gd_cascade,
    hard_last_logits,
    predicted_alpha1,
)
from mechrecall._tl import tl_grad, weight
from mechrecall.builder import trainable_parameters

CFG = WorldConfig(
    n_subjects=32,
    n_types=3,
    n_values=(8, 8, 8),
    n_grammar=6,
    grammar_len=5,
    n_subseq=3,
    p_grammar_only=0.0,
    target_div=None,
    relation_tokens=True,
    seed=0,
)
N_DEMOS = 4


@pytest.fixture(scope="module")
def setup():
    w = build_world(CFG)
    T = world_r_ctx(CFG, N_DEMOS)
    ft, ho = split_subjects(w, 16, 0)
    g = torch.Generator().manual_seed(0)
    return dict(
        w=w,
        T=T,
        ft=ft,
        ho=ho,
        pt=sample_pt_rel(w, 256, g),
        icl_all=sample_icl_rel(w, 256, N_DEMOS, g, demo_subjects=torch.arange(32)),
        icl_ho=sample_icl_rel(w, 256, N_DEMOS, g, demo_subjects=ft, query_subjects=ho),
    )


def _model(s, weights):
    m = build_model_b(s["w"].V, s["T"], d_head=s["w"].V + s["T"], n_heads=len(weights), attn_scale=False)
    load_construction(m, weights)
    return m


def _reference(weights, tokens, s):
    kqs, ovs = zip(*weights.values())
    return functional_last_logits(tokens, kqs, ovs, s["w"].V, s["T"])


def test_model_b_is_one_hot_tied_and_trains_only_qkvo():
    m = build_model_b(CFG.d_vocab, 20, d_head=8)
    assert sorted(trainable_parameters(m)) == [
        "blocks.0.attn.W_K",
        "blocks.0.attn.W_O",
        "blocks.0.attn.W_Q",
        "blocks.0.attn.W_V",
    ]
    V = CFG.d_vocab
    assert torch.equal(m.W_E[:, :V], torch.eye(V)) and (m.W_E[:, V:] == 0).all()
    assert torch.equal(m.W_U, m.W_E.T) and (m.W_pos == 0).all()


def test_tl_model_matches_plain_torch_eq1_with_relative_keys_and_no_skip(setup):
    s = setup
    for mode in ("pt", "icl"):
        weights = construction_weights(s["w"], 3.0, mode, T_max=s["T"], ft_subjects=s["ft"], grammar_head=True)
        m = _model(s, weights)
        for b in (s["pt"], s["icl_ho"]):
            torch.testing.assert_close(m(b.tokens)[:, -1], _reference(weights, b.tokens, s), rtol=1e-4, atol=1e-4)


def test_prop1_recalls_facts_but_not_in_context(setup):
    s = setup
    m = _model(s, construction_weights(s["w"], 10.0, "pt", T_max=s["T"]))
    assert recall_metrics(m, s["pt"], s["w"])["exact"] == 1.0
    assert recall_metrics(m, s["icl_all"], s["w"])["exact"] == 0.0
    m3 = _model(s, construction_weights(s["w"], 10.0, "pt", T_max=s["T"], grammar_head=True))
    assert recall_metrics(m3, s["pt"], s["w"])["exact"] == 1.0


def test_prop1_logits_have_margin_one(setup):
    s = setup
    w = s["w"]
    logits = _reference(construction_weights(w, 60.0, "pt", T_max=s["T"]), s["pt"].tokens, s)
    target = s["pt"].extras["target"]
    rows = torch.arange(len(target))
    torch.testing.assert_close(logits[rows, target], torch.ones(len(target)), atol=1e-3, rtol=0)
    others = logits.clone()
    others[rows, target] = -9
    assert others.max() < 1e-3  # +1 on the answer, <= 0 everywhere else


@pytest.mark.parametrize("variant", ["main", "appendix"])
def test_prop2_and_prop4_do_contextual_recall_on_heldout_queries(setup, variant):
    s = setup
    m = _model(s, construction_weights(s["w"], 10.0, "icl", T_max=s["T"], variant=variant))
    assert recall_metrics(m, s["icl_ho"], s["w"])["exact"] == 1.0


def test_prop2_fails_exactly_where_the_answer_was_not_seen_in_finetuning(setup):
    s = setup
    w = s["w"]
    few, _ = split_subjects(w, 3, 5)
    m = _model(s, construction_weights(w, 10.0, "icl", T_max=s["T"], ft_subjects=few))
    b = s["icl_ho"]
    pred = m(b.tokens)[:, -1].argmax(-1)
    u_prime = w.attributes[few].reshape(-1)
    seen = torch.isin(b.extras["target"], u_prime)
    demo_seen = torch.isin(b.tokens[:, 2::3], u_prime).any(1)  # the relation head needs a demo value in U'
    assert (seen & demo_seen).any() and (~seen).any()
    assert (pred[seen & demo_seen] == b.extras["target"][seen & demo_seen]).all()
    assert (pred[~seen] != b.extras["target"][~seen]).all()  # an answer never seen in finetuning is never produced


def test_construction_heads_have_cosine_one_with_the_theoretical_outputs(setup):
    s = setup
    m = _model(s, construction_weights(s["w"], 60.0, "pt", T_max=s["T"]))
    cos = head_role_cosines(m, s["w"], s["pt"], "pt", s["T"])["full"]
    assert cos["relation"][0] == pytest.approx(1.0, abs=1e-4) and cos["subject"][1] == pytest.approx(1.0, abs=1e-4)
    assert (cos["relation_head"], cos["subject_head"]) == (0, 1)


def test_functional_gradient_matches_the_tl_model_gradient(setup):
    s = setup
    w = s["w"]
    weights = construction_weights(w, 1.0, "pt", T_max=s["T"])
    kq = weights["subject"][0].clone().requires_grad_(True)
    b = s["icl_ho"]
    loss = torch.nn.functional.cross_entropy(
        functional_last_logits(
            b.tokens, [weights["relation"][0] * 4, kq * 4], [weights["relation"][1], weights["subject"][1]], w.V, s["T"]
        ),
        b.extras["target"],
    )
    (g_ref,) = torch.autograd.grad(loss, kq)
    m = _model(s, {k: (v[0] * 4, v[1]) for k, v in weights.items()})
    weight(m, "blocks.0.attn.W_K").requires_grad_(True)
    loss_tl = torch.nn.functional.cross_entropy(m(b.tokens)[:, -1], b.extras["target"])
    loss_tl.backward()
    assert (g_ref.abs() > 1e-4).sum() > 10  # W_KQ = 4 W̃: dL/dW̃ = 4 dL/dW_K
    torch.testing.assert_close(tl_grad(m, "blocks.0.attn.W_K")[1] * 4, g_ref, rtol=1e-3, atol=1e-5)


def _tiny(M=8, U=2, M_ft=4, N_ft=2, L=2):
    c = WorldConfig(
        n_subjects=M,
        n_types=L,
        n_values=(U,) * L,
        n_grammar=4,
        grammar_len=3 * (N_ft + 1),
        n_subseq=2,
        p_grammar_only=0.0,
        target_div=None,
        relation_tokens=True,
        seed=0,
    )
    w = build_world(c)
    ft, ho = split_subjects(w, M_ft, 0)
    return balanced_split(w, (ft, ho), 0), ft, ho, world_r_ctx(c, N_ft)


def _prop1(w, T, dtype=torch.float64):
    p1 = construction_weights(w, 1.0, "pt", T_max=T)
    return [x.to(dtype) for x in (p1["relation"][0], p1["subject"][0], p1["relation"][1], p1["subject"][1])]


def _population_loss(w, pop, T, beta, kr, ks, ovr, ovs):
    logits = functional_last_logits(pop.tokens, [beta * kr, beta * ks], [ovr, ovs], w.V, T)
    return torch.nn.functional.cross_entropy(logits, pop.extras["target"])


def test_population_gradient_matches_finite_differences_of_the_enumerated_population_loss():
    w, ft, _, T = _tiny()
    pop = all_icl_rel(w, 2, ft)
    assert len(pop.tokens) == 2 * 4**3  # L * M_ft^m: every sequence once
    kr, ks, ovr, ovs = _prop1(w, T)
    run = _Cascade(w, T, pop, {}, ovs, 6.0, ())
    _, (_, g_subj, g_ov), _ = run.grads(kr, ks, ovr)
    gen = torch.Generator().manual_seed(1)
    for i, g in enumerate((g_subj, g_ov)):
        direction = torch.randn(g.shape, generator=gen, dtype=g.dtype)
        args = [kr, ks, ovr]
        eps = 1e-6

        def at(t, i=i, args=args, direction=direction):
            moved = list(args)
            moved[i + 1] = moved[i + 1] + t * direction
            return _population_loss(w, pop, T, 6.0, *moved, ovs).item()

        fd = (at(eps) - at(-eps)) / (2 * eps)
        scale = 6.0 if i == 0 else 1.0  # the W̃ gradient is reported as ∇_{W̃}/β
        assert (g * direction).sum().item() * scale == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_kq_rel_gets_exactly_zero_gradient_without_relation_tokens_and_some_with_one():
    w, ft, _, T = _tiny()
    pop = all_icl_rel(w, 2, ft)
    kr, ks, ovr, ovs = _prop1(w, T)
    _, (g_rel, _, _), _ = _Cascade(w, T, pop, {}, ovs, 2.0, ()).grads(kr, ks, ovr)
    assert g_rel.abs().max().item() == 0.0  # Theorem 2, step 1: W_OV^rel reads relation tokens only
    tokens = pop.tokens.clone()
    tokens[:, 1] = w.relation(0)  # the control: a relation token where the first [sep] was
    with_rel = type(pop)(tokens=tokens, targets=pop.targets, extras=pop.extras)
    _, (g_rel, _, _), _ = _Cascade(w, T, with_rel, {}, ovs, 2.0, ()).grads(kr, ks, ovr)
    assert g_rel.abs().max().item() > 1e-6


@pytest.mark.parametrize("step", [0, 1])
def test_block_rows_give_the_exact_population_mean_so_the_control_variate_is_exact_on_the_whole_population(step):
    w, ft, _, T = _tiny(M=16, U=2, M_ft=8, N_ft=2)
    pop = all_icl_rel(w, 2, ft)
    kr, ks, ovr, ovs = _prop1(w, T)
    if step == 1:  # the relation head's attention stays fixed after step 1 (W̃_rel is not updated)
        ovr = ovr + 0.3 * torch.randn(ovr.shape, generator=torch.Generator().manual_seed(0), dtype=ovr.dtype)
    rows = [block_rows(w, ft, 2, ell, T, torch.float64) for ell in range(w.cfg.n_types)]
    assert all(torch.isclose(r[2].sum(), torch.tensor(1.0, dtype=torch.float64)) for r in rows)
    run = _Cascade(w, T, pop, {}, ovs, 40.0, (), rows)
    _, est, full = run.grads(kr, ks, ovr)
    # the sample is the whole population: the control variate's exact and sampled target parts must cancel
    for e, f in zip(est, full):
        torch.testing.assert_close(e, f, rtol=1e-9, atol=1e-12)


def test_hard_attention_is_the_large_beta_limit_and_shares_exact_ties():
    w, ft, _, T = _tiny()
    pop = all_icl_rel(w, 2, ft)
    gen = torch.Generator().manual_seed(0)
    d = w.V + T
    kts = [torch.randn(d, d, generator=gen, dtype=torch.float64) for _ in range(2)]
    ovs = [torch.randn(d, d, generator=gen, dtype=torch.float64) for _ in range(2)]
    hard = hard_last_logits(pop.tokens, kts, ovs, w.V, T)
    big = functional_last_logits(pop.tokens, [1e4 * k for k in kts], ovs, w.V, T)
    torch.testing.assert_close(hard, big, rtol=1e-6, atol=1e-6)
    flat = [torch.zeros(d, d, dtype=torch.float64)] * 2  # every score ties: the plain average of the values
    torch.testing.assert_close(
        hard_last_logits(pop.tokens, flat, ovs, w.V, T),
        functional_last_logits(pop.tokens, flat, ovs, w.V, T),
    )


def test_theorem2_condition_and_step_sizes_from_its_constants():
    assert cascade_condition(build_world(CASCADE_PAPER.world(0)), 128, 5) == 32 * 37 / 128 == 9.25  # >= N_ft = 5
    assert cascade_condition(build_world(CASCADE_HOLDS.world(0)), 8, 3) == 2 * 5 / 8 < 3
    w = build_world(CASCADE_PAPER.world(0))
    eta = Steps.from_alphas(w, 5, 0.0, 0.0, 0.0, 0.25, 1.0, 0.5)
    m, T, U, L = 6, 17, 32, 8
    assert eta.kq_subj / m * (1 - 1 / U) == pytest.approx(0.5)  # α_1 := η m⁻¹ (1 - 1/U_L)
    assert eta.ov_rel / (L * T * U**2) == pytest.approx(0.25)  # α_2 := η (L T U_L²)⁻¹
    assert eta.kq_rel * (m - 1) ** 2 * 0.25 / T == pytest.approx(1.0)  # α_3 := η (m-1)² α_2 / T


def test_balanced_split_deals_every_value_equally_often_inside_each_group():
    w = build_world(CASCADE_PAPER.world(0))
    ft, ho = split_subjects(w, 128, 0)
    b = balanced_split(w, (ft, ho), 0)
    for group in (ft, ho):
        for ell in range(8):
            counts = torch.bincount(b.attributes[group, ell] - b.value_ids(ell)[0], minlength=32)
            assert counts.tolist() == [4] * 32
    raw = torch.bincount(w.attributes[ft, 0] - w.value_ids(0)[0], minlength=32)
    assert raw.min() < 4 < raw.max()  # a random 𝒮' of the balanced world is not


def test_two_step_cascade_in_the_theorems_setting_where_the_condition_holds():
    w, ft, ho, T = _tiny(M=16, U=2, M_ft=8, N_ft=3)
    r = gd_cascade(
        w, ft, ho, n_demos=3, T_max=T, beta_grad=40.0, betas_eval=(40.0, float("inf")),
        alpha1=0.5, alpha2=0.25, alpha3=1.0, n_eval=256, dtype=torch.float64,
    )  # fmt: skip
    assert r["population"].startswith("exact") and r["condition_holds"]
    assert r["grad_norm_kq_rel_step1"] == 0.0 and r["grad_norm_kq_rel_step2"] > 0.01  # the cascade
    assert r["grad_norm_kq_subj_step1"] > 0.01 and r["grad_norm_ov_rel_step1"] > 0.01  # step 1 moves these two
    assert r["grad_norm_kq_rel_step2_ov_frozen"] == 0.0  # without step 1's W_OV^rel update, step 2 moves nothing
    assert r["acc_step0"]["heldout_query@beta=inf"] == 0.0
    for step in (1, 2):
        assert r[f"acc_step{step}"]["heldout_query@beta=inf"] == 1.0 == r[f"acc_step{step}"]["all_heldout@beta=inf"]
    co = r["coef"]
    # the identity (class check, here rather than in the claims table): the measured coefficient is our closed form
    # α_1 (1 - 1/m) to float64 precision, and not the printed α_1 (0.5, the paper column of the claim row)
    assert co["alpha1_kq_subj_prev_token"] == pytest.approx(predicted_alpha1(r["eta"]["kq_subj"], 3, 2), abs=1e-9)
    assert co["alpha1_kq_subj_prev_token"] != pytest.approx(r["alpha1"], abs=0.05)
    assert co["ov_rel_same_type_attr_mean"] > 0 > co["ov_rel_cross_type_attr_mean"]
    assert co["kq_rel_attr_positions_mean"] > 0 and co["kq_rel_heldout_subject_tokens_mean"] == 0.0
    th = r["coef_theorem2"]  # the theorem's weights at M=16, L=2, U_L=2, m=4, T=11, α = (0.5, 0.25, 1)
    assert th["ov_rel_same_type_attr_mean"] == 0.75 and th["kq_rel_attr_positions_mean"] == pytest.approx(
        1 / 3 - 1 / 11
    )
    assert th["kq_rel_attr_tokens_mean"] == pytest.approx(1 / 6) and th["kq_rel_ft_subject_tokens_mean"] == -1 / 48
    assert th["alpha1_kq_subj_prev_token"] == 0.5 and set(th) <= set(co)
    assert co["ov_rel_same_type_attr_mean"] == pytest.approx(th["ov_rel_same_type_attr_mean"], abs=0.05)
    assert co["kq_rel_attr_tokens_mean"] == pytest.approx(th["kq_rel_attr_tokens_mean"], abs=0.03)


def test_cascade_collapses_after_step_2_where_the_condition_fails():
    w, ft, ho, T = _tiny(M=64, U=8, M_ft=16, N_ft=3, L=4)
    r = gd_cascade(
        w, ft, ho, n_demos=3, T_max=T, beta_grad=40.0, betas_eval=(float("inf"),),
        alpha1=0.5, alpha2=0.25, alpha3=1.0, n_mc=1024, n_eval=256,
    )  # fmt: skip
    assert not r["condition_holds"] and "control variate" in r["population"]
    assert r["acc_step1"]["heldout_query@beta=inf"] >= 0.99
    assert r["acc_step2"]["heldout_query@beta=inf"] < 0.5
