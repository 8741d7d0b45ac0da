"""The §4 construction (Prop. 1-4) in a HookedTransformer, against a plain-torch Eq. 1, and Theorem 2's cascade."""

from __future__ import annotations

import pytest
import torch

from analyses.papers.contextual_recall.data import (
    WorldConfig,
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
from analyses.papers.contextual_recall.theory import gd_cascade, predicted_alpha1

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
    assert sorted(n for n, p in m.named_parameters() if p.requires_grad) == [
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
    m.blocks[0].attn.W_K.requires_grad_(True)
    loss_tl = torch.nn.functional.cross_entropy(m(b.tokens)[:, -1], b.extras["target"])
    loss_tl.backward()
    assert (g_ref.abs() > 1e-4).sum() > 10  # W_KQ = 4 W̃: dL/dW̃ = 4 dL/dW_K
    torch.testing.assert_close(m.blocks[0].attn.W_K.grad[1] * 4, g_ref, rtol=1e-3, atol=1e-5)


def test_two_step_cascade_with_exact_population_gradients():
    c = WorldConfig(
        n_subjects=16,
        n_types=2,
        n_values=(2, 2),
        n_grammar=8,
        grammar_len=10,
        n_subseq=3,
        p_grammar_only=0.0,
        target_div=None,
        relation_tokens=True,
        seed=0,
    )
    w = build_world(c)
    ft, ho = split_subjects(w, 8, 0)
    r = gd_cascade(w, ft, ho, n_demos=3, T_max=world_r_ctx(c, 3), alpha2=0.25, alpha3=5.0, n_eval=256)
    assert r["population"].startswith("exact") and r["condition_holds"]
    assert r["grad_norm_kq_rel_step1"] == 0.0 and r["grad_norm_kq_rel_step2"] > 0.01  # the cascade
    assert r["acc_step0"]["heldout_query@beta=50"] == 0.0
    assert r["acc_step2"]["heldout_query@beta=50"] == 1.0 and r["acc_step2"]["all_heldout@beta=50"] == 1.0
    co = r["coef"]
    assert co["ov_rel_same_type_attr_mean"] > 0 > co["ov_rel_cross_type_attr_mean"]
    assert co["kq_rel_attr_positions_mean"] > 0 and co["kq_rel_heldout_subject_tokens_mean"] == 0.0
    assert co["alpha1_predicted"] == pytest.approx(predicted_alpha1(2.0, 3, 2))


def test_cascade_collapses_where_the_condition_fails():
    c = WorldConfig(
        n_subjects=64,
        n_types=4,
        n_values=(8,) * 4,
        n_grammar=8,
        grammar_len=10,
        n_subseq=3,
        p_grammar_only=0.0,
        target_div=None,
        relation_tokens=True,
        seed=0,
    )
    w = build_world(c)
    ft, ho = split_subjects(w, 16, 0)
    r = gd_cascade(w, ft, ho, n_demos=3, T_max=world_r_ctx(c, 3), alpha2=0.25, alpha3=5.0, n_mc=2048, n_eval=256)
    assert not r["condition_holds"]
    assert r["acc_step2"]["heldout_query@beta=50"] < 0.5
    assert abs(r["coef"]["alpha1_kq_subj_prev_token"] - r["coef"]["alpha1_predicted"]) < 0.04
