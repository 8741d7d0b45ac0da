"""The two synthetic worlds of the contextual-recall paper: layouts, statistics, Div control and bad input."""

from __future__ import annotations

import itertools

import pytest
import torch

from analyses.papers.contextual_recall.data import (
    IGNORE,
    WorldConfig,
    WorldConfigError,
    all_icl_rel,
    build_world,
    markov_div,
    markov_runs,
    matrix_distance,
    sample_icl,
    sample_icl_rel,
    sample_pt,
    sample_pt_rel,
    split_subjects,
    with_loss,
)

G_CFG = WorldConfig(
    n_subjects=32,
    n_types=4,
    n_values=(32, 8, 8, 8),
    n_grammar=8,
    grammar_len=5,
    n_subseq=3,
    p_grammar_only=0.3,
    target_div=0.5,
    seed=1,
)
R_CFG = WorldConfig(
    n_subjects=24,
    n_types=3,
    n_values=(6, 6, 6),
    n_grammar=5,
    grammar_len=4,
    n_subseq=3,
    p_grammar_only=0.0,
    target_div=None,
    relation_tokens=True,
    seed=2,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_vocabulary_layout_and_balanced_attribute_table():
    w = build_world(G_CFG)
    assert w.V == 32 + 56 + 8 + 1  # V = M + Σ M_ℓ + G + 1
    assert R_CFG.d_vocab == 24 + 18 + 5 + 1 + 3
    types = w.type_of_token()
    for ell, m in enumerate(G_CFG.n_values):
        col = w.attributes[:, ell]
        assert (types[col] == ell).all()
        counts = torch.bincount(col - G_CFG.value_offsets[ell], minlength=m)
        assert counts.tolist() == [32 // m] * m  # each value on exactly M / M_ℓ subjects
    assert len(set(w.attributes[:, 0].tolist())) == 32  # M_1 = M: a unique "name"


def test_pt_sequences_have_the_paper_layout():
    w = build_world(G_CFG)
    c = G_CFG
    b = sample_pt(w, 64, gen(), force_last_factual=True)
    full = torch.cat([b.tokens, b.extras["target"][:, None]], 1)
    T = (c.grammar_len + 3) * c.n_subseq - 1
    assert full.shape == (64, T)
    assert torch.equal(b.targets[:, :-1], b.tokens[:, 1:])  # next-token targets
    unit = c.grammar_len + 3
    seps = full[:, unit - 1 :: unit]
    assert (seps == c.sep).all() and seps.shape[1] == c.n_subseq - 1  # [sep] between, not at the end
    n_filler = 0
    for i in range(c.n_subseq):
        sub = full[:, i * unit : i * unit + c.grammar_len + 2]
        factual = sub[:, 0] == b.extras["subject"]
        grammar = (sub >= c.grammar_offset) & (sub < c.sep)
        assert (factual | grammar.all(1)).all()  # a factual subsequence or a whole grammar-only run
        assert grammar[factual][:, 1:-1].all()
        n_filler += (~factual).sum().item()
        own = w.attributes[b.extras["subject"][factual]]
        assert (own == sub[factual, -1:]).any(1).all()  # the attribute belongs to the subject
    assert (full[:, -unit + 1] == b.extras["subject"]).all()  # the last subsequence is forced factual
    last_type = w.type_of_token()[b.extras["target"]]
    assert torch.equal(last_type, b.extras["attr_type"])
    assert torch.equal(w.attributes[b.extras["subject"], b.extras["attr_type"]], b.extras["target"])
    assert n_filler > 0
    assert (b.extras["pred_pos"] == T - 2).all()


def test_grammar_runs_follow_their_markov_chain():
    tms = torch.tensor([[[0.9, 0.1, 0.0], [0.0, 0.2, 0.8], [0.5, 0.0, 0.5]]])
    runs = markov_runs(tms, torch.zeros(4000, dtype=torch.long), 20, gen(3))
    counts = torch.zeros(3, 3)
    counts.index_put_((runs[:, :-1].reshape(-1), runs[:, 1:].reshape(-1)), torch.ones(4000 * 19), accumulate=True)
    empirical = counts / counts.sum(1, keepdim=True)
    assert (empirical - tms[0]).abs().max() < 0.02
    assert (counts[0, 2] == 0) and (counts[1, 0] == 0)  # zero transitions never happen
    first = torch.bincount(runs[:, 0], minlength=3).float() / 4000
    assert (first - 1 / 3).abs().max() < 0.04  # first token uniform


def test_icl_and_iclgrm_layouts():
    w = build_world(G_CFG)
    ft, ho = split_subjects(w, 16, 0)
    b = sample_icl(w, 32, 4, gen(), demo_subjects=ft, query_subjects=ho)
    assert b.tokens.shape == (32, 3 * 4 + 2 - 1)  # full length 3N + 2
    subj, attr = b.tokens[:, 0::3], b.tokens[:, 1::3]
    ell = b.extras["attr_type"]
    assert torch.isin(subj[:, :-1], ft).all() and torch.isin(b.extras["subject"], ho).all()
    assert torch.equal(attr, w.attributes[subj[:, :-1], ell[:, None].expand(-1, 4)])  # one shared type
    assert (b.tokens[:, 2::3] == G_CFG.sep).all()
    assert torch.equal(b.extras["target"], w.attributes[b.extras["subject"], ell])
    assert (b.extras["pred_pos"] == b.tokens.shape[1] - 1).all()  # predicted at the query subject
    g = sample_icl(w, 64, 3, gen(1), demo_subjects=ft, grammar_len=(1, 4))
    lengths = g.extras["lengths"] + 1
    s_ft = (lengths + 1) // 4 - 3
    assert set(s_ft.tolist()) <= {1, 2, 3, 4} and len(set(s_ft.tolist())) > 1
    assert torch.equal(lengths, (s_ft + 3) * 4 - 1)
    pos = torch.arange(g.targets.shape[1])[None]
    assert ((g.targets == -100) == (pos >= g.extras["lengths"][:, None])).all()  # padding is masked
    assert torch.equal(
        g.tokens[torch.arange(64), g.extras["pred_pos"] + 1 - 1], g.tokens[torch.arange(64), g.extras["lengths"] - 1]
    )


def test_loss_readings_on_a_hand_built_prompt():
    from analyses.papers.contextual_recall.data import _next_token_batch

    w = build_world(G_CFG)
    g0, sep = G_CFG.grammar_offset, G_CFG.sep
    a = w.attributes
    # [s3 g g a] [sep] [s5 g a] ... as two ICL+Grm rows: S_ft = 2 (length 9) and S_ft = 1 (length 7, padded)
    row0 = [3, g0, g0 + 1, int(a[3, 1]), sep, 5, g0 + 2, g0, int(a[5, 1])]
    row1 = [7, g0 + 3, int(a[7, 2]), sep, 9, g0 + 4, int(a[9, 2])]
    full = torch.tensor([row0, [*row1, sep, sep]])
    b = _next_token_batch(full, torch.tensor([9, 7]), torch.tensor([5, 9]), torch.tensor([1, 2]))
    on = {r: [torch.nonzero(m).flatten().tolist() for m in with_loss(b, w, r).loss_mask] for r in ("all", "attributes")}
    assert on["all"] == [list(range(8)), list(range(6))]  # every next token inside the sequence, grammar included
    assert on["attributes"] == [[2, 7], [1, 5]]  # the last grammar token before each attribute
    last = with_loss(b, w, "last")
    assert [torch.nonzero(m).flatten().tolist() for m in last.loss_mask] == [[7], [5]]  # pred_pos only
    assert torch.equal(last.tokens, b.tokens) and torch.equal(last.targets, b.targets)  # only the mask changes
    with pytest.raises(WorldConfigError, match="loss reading 'grammar'"):
        with_loss(b, w, "grammar")


def test_loss_readings_on_sampled_mixes():
    w = build_world(G_CFG)
    ft, _ = split_subjects(w, 16, 0)
    for grm in (0, (1, 4)):
        b = sample_icl(w, 64, 3, gen(3), demo_subjects=ft, grammar_len=grm)
        assert torch.equal(with_loss(b, w, "all").loss_mask, b.targets != IGNORE)  # today's mask
        attr = with_loss(b, w, "attributes").loss_mask
        assert (attr.sum(1) == 4).all()  # one attribute per demonstration and the query
        assert (w.type_of_token()[b.targets[attr]] == b.extras["attr_type"].repeat_interleave(4)).all()
        assert attr[torch.arange(64), b.extras["pred_pos"]].all()


def test_shuffled_subjects_keep_the_attributes_but_break_every_stored_pair():
    w = build_world(G_CFG)
    ft, ho = split_subjects(w, 16, 0)
    plain = sample_icl(w, 256, 4, gen(3), demo_subjects=ft, query_subjects=ho)
    shuf = sample_icl(w, 256, 4, gen(3), demo_subjects=ft, query_subjects=ho, shuffle_subjects=True)
    # the same draw of subjects, types and attributes: only the subject tokens shown differ
    assert torch.equal(shuf.tokens[:, 1::3], plain.tokens[:, 1::3])
    for key in ("target", "subject", "attr_type"):
        assert torch.equal(shuf.extras[key], plain.extras[key])
    shown = shuf.tokens[:, 0::3]
    assert torch.isin(shown[:, :-1], ft).all() and torch.isin(shown[:, -1], ho).all()  # same pools
    ell = shuf.extras["attr_type"]
    stored = w.attributes[shown[:, :-1], ell[:, None].expand(-1, 4)]
    assert (stored == shuf.tokens[:, 1::3]).float().mean() < 0.5  # pairs match a stored fact only by chance
    assert (shuf.targets[:, 0::3] == plain.targets[:, 0::3]).all()  # each subject position still predicts its a
    assert (shown != plain.tokens[:, 0::3]).float().mean() > 0.8


def test_world_r_sequences():
    w = build_world(R_CFG)
    c = R_CFG
    b = sample_pt_rel(w, 50, gen())
    T = (c.grammar_len + 3) * c.n_subseq - 1
    assert b.tokens.shape == (50, T) and (b.tokens[:, -1] == c.sep).all()  # input stops at the final [sep]
    full = torch.cat([b.tokens, b.extras["target"][:, None]], 1).view(50, c.n_subseq, c.grammar_len + 3)
    assert (full[:, :, 0] == b.extras["subject"][:, None]).all() and (full[:, :, -2] == c.sep).all()
    gram = full[:, :, 1:-2]
    is_rel = gram >= c.relation_offset
    assert (is_rel.sum(-1) == 1).all()  # exactly one relation slot per subsequence
    rel_type = (gram * is_rel).sum(-1) - c.relation_offset
    assert torch.equal(full[:, :, -1], w.attributes[b.extras["subject"][:, None], rel_type])
    assert ((gram[~is_rel] >= c.grammar_offset) & (gram[~is_rel] < c.sep)).all()
    i = sample_icl_rel(w, 20, 5, gen(), demo_subjects=torch.arange(6))
    assert i.tokens.shape == (20, 17) and (i.tokens[:, 1::3] == c.sep).all()
    assert i.loss_mask.sum(1).eq(1).all() and i.loss_mask[:, -1].all()  # last-token loss


def test_exact_population_enumerates_every_sequence_once():
    w = build_world(R_CFG)
    pool = torch.tensor([0, 5, 7])
    pop = all_icl_rel(w, 2, pool)
    assert pop.tokens.shape[0] == 3**3 * 3
    keys = {tuple(r) for r in torch.cat([pop.tokens, pop.extras["target"][:, None]], 1).tolist()}
    assert len(keys) == 81
    want = {(a, b, q, e) for a, b, q in itertools.product(pool.tolist(), repeat=3) for e in range(3)}
    got = {(r[0], r[3], r[6], int(w.type_of_token()[r[2]])) for r in pop.tokens.tolist()}
    assert got == want


def test_div_control_and_norms():
    w = build_world(G_CFG)
    assert w.div() == pytest.approx(0.5, abs=1e-5)
    a, b = w.transitions[0], w.transitions[1]
    d = (a - b).abs()
    assert matrix_distance(a, b, "entry_l1").item() == pytest.approx(d.sum().item(), rel=1e-6)
    assert matrix_distance(a, b, "row_mean_l1").item() == pytest.approx(d.sum().item() / 8, rel=1e-6)
    assert matrix_distance(a, b, "induced_l1").item() == pytest.approx(d.sum(0).max().item(), rel=1e-6)
    brute = min(
        matrix_distance(w.transitions[i], w.transitions[j]).item() for i in range(4) for j in range(4) if i != j
    )
    assert markov_div(w.transitions) == pytest.approx(brute)
    assert torch.allclose(w.transitions.sum(-1), torch.ones(4, 8), atol=1e-5)
    g = build_world(
        WorldConfig(
            **{**G_CFG.__dict__, "div_method": "greedy_pool", "target_div": 0.3, "pool_alpha": 10.0, "pool_size": 300}
        )
    )
    assert g.div() >= 0.95 * 0.3


@pytest.mark.parametrize(
    "cfg, match",
    [
        (dict(target_div=1.9), "target_div=1.9 is unreachable"),
        (dict(target_div=0.3, div_method="greedy_pool", pool_alpha=1000.0, pool_size=50), "unreachable"),
        (dict(n_values=(64, 8, 8, 8)), r"n_values\[0\]=64"),
        (dict(n_values=(8, 8)), "n_values has 2 entries"),
        (dict(p_grammar_only=1.0), "p_grammar_only=1.0"),
    ],
)
def test_inconsistent_world_configs_fail_naming_the_value(cfg, match):
    with pytest.raises(WorldConfigError, match=match):
        build_world(WorldConfig(**{**G_CFG.__dict__, **cfg}))


def test_bad_splits_and_pools_fail_before_sampling():
    w = build_world(G_CFG)
    with pytest.raises(WorldConfigError, match="n_finetune=40 is larger than M=32"):
        split_subjects(w, 40, 0)
    with pytest.raises(WorldConfigError, match="n_demos=5 demonstrations but the subject pool has only 3"):
        sample_icl(w, 4, 5, gen(), demo_subjects=torch.arange(3))


def test_same_seed_same_world_and_batches():
    a, b = build_world(G_CFG), build_world(G_CFG)
    assert torch.equal(a.attributes, b.attributes) and torch.equal(a.transitions, b.transitions)
    assert torch.equal(sample_pt(a, 8, gen(5)).tokens, sample_pt(b, 8, gen(5)).tokens)
    c = build_world(WorldConfig(**{**G_CFG.__dict__, "seed": 2}))
    assert not torch.equal(a.attributes, c.attributes)
