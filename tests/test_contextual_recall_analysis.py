"""Metrics, representation geometry, steering and head outputs used by the contextual-recall analyses,
each against an independent computation (brute-force loops, manual hooks)."""

from __future__ import annotations

import pytest
import torch

from analyses.heads import head_outputs
from analyses.papers.contextual_recall.data import (
    WorldConfig,
    build_world,
    icl_prefix_tokens,
    prefix_subjects,
    sample_icl,
    sample_pt,
)
from analyses.papers.contextual_recall.metrics import (
    BREAKDOWN,
    breakdown_of_logits,
    metrics_of_predictions,
    prediction_breakdown,
)
from analyses.papers.contextual_recall.models import build_model_a
from analyses.task_vectors import class_cosine_matrix, cosine_silhouette_score, replace_and_rank
from mechrecall.batch import Batch

CFG = WorldConfig(
    n_subjects=12,
    n_types=3,
    n_values=(12, 4, 4),
    n_grammar=5,
    grammar_len=3,
    n_subseq=2,
    p_grammar_only=0.0,
    target_div=0.3,
    seed=0,
)


def test_metrics_on_hand_made_predictions():
    w = build_world(CFG)
    subj = torch.tensor([0, 1, 2, 3])
    ell = torch.tensor([1, 1, 2, 0])
    target = w.attributes[subj, ell]
    other_subject_same_type = w.value_ids(1)[(w.value_ids(1) != target[1])][0]  # type 1, not subject 1's value
    own_other_type = w.attributes[2, 0]  # subject 2's own type-0 attribute
    pred = torch.stack([target[0], other_subject_same_type, own_other_type, torch.tensor(CFG.sep)])
    batch = Batch(
        torch.zeros(4, 2, dtype=torch.long),
        torch.zeros(4, 2, dtype=torch.long),
        None,
        {"target": target, "subject": subj, "attr_type": ell, "pred_pos": torch.zeros(4, dtype=torch.long)},
    )
    m = metrics_of_predictions(pred, batch, w)
    assert m["exact"] == 0.25
    assert m["attr_type"] == 0.5  # predictions 0 and 1 are of the target's type
    assert m["subject"] == 0.5  # predictions 0 and 2 are the subject's own attributes
    assert m["attribute"] == 0.75


def test_prediction_breakdown_on_hand_built_logits():
    w = build_world(CFG)
    target = torch.tensor([int(w.attributes[0, 1]), int(w.attributes[1, 1]), int(w.attributes[2, 2])] * 2)
    ell = torch.tensor([1, 1, 2] * 2)
    same_type = next(int(v) for v in w.value_ids(1) if v != target[1])
    answers = [
        target[0],  # the attribute
        same_type,  # another value of the right type
        CFG.grammar_offset + 2,  # a grammar token
        CFG.sep,  # other
        int(w.value_ids(0)[0]),  # a value of another type: other
        3,  # a subject: other
    ]
    logits = torch.randn(6, w.V) * 0.1
    logits[torch.arange(6), torch.tensor(answers)] = 5.0
    b = breakdown_of_logits(logits, target, ell, w)
    assert list(b) == list(BREAKDOWN) and sum(b.values()) == pytest.approx(1.0)
    assert b == pytest.approx({"attribute": 1 / 6, "right_type": 1 / 6, "grammar": 1 / 6, "other": 3 / 6})
    tie = torch.zeros(1, w.V)  # all equal: the first index (subject 0) is the answer -> other
    assert breakdown_of_logits(tie, target[:1], ell[:1], w)["other"] == 1.0
    model = build_model_a(w.V, 8, 16, seed=0)
    tokens = torch.randint(w.V, (6, 5))
    pos = torch.tensor([4, 3, 2, 4, 1, 0])
    batch = Batch(tokens, tokens, None, {"target": target, "attr_type": ell, "pred_pos": pos})
    with torch.no_grad():
        expect = breakdown_of_logits(model(tokens)[torch.arange(6), pos], target, ell, w)
    assert prediction_breakdown(model, batch, w) == expect


def _brute_silhouette(x, labels):
    n = len(labels)
    d = [[1 - torch.nn.functional.cosine_similarity(x[i], x[j], dim=0).item() for j in range(n)] for i in range(n)]
    s = []
    for i in range(n):
        own = [d[i][j] for j in range(n) if labels[j] == labels[i] and j != i]
        if not own:
            s.append(0.0)
            continue
        a = sum(own) / len(own)
        b = min(
            sum(d[i][j] for j in range(n) if labels[j] == c) / sum(1 for j in range(n) if labels[j] == c)
            for c in set(labels)
            if c != labels[i]
        )
        s.append((b - a) / max(a, b))
    return sum(s) / n


def test_cosine_silhouette_and_similarity_match_brute_force():
    g = torch.Generator().manual_seed(0)
    labels = [0, 0, 0, 1, 1, 2, 2, 2, 2]
    x = torch.randn(9, 5, generator=g) + 2 * torch.eye(5)[torch.tensor(labels)]
    assert cosine_silhouette_score(x, labels) == pytest.approx(_brute_silhouette(x, labels), abs=1e-6)
    assert cosine_silhouette_score(x * torch.rand(9, 1, generator=g) * 5, labels) == pytest.approx(
        _brute_silhouette(x, labels), abs=1e-6
    )  # scale-invariant (cosine)
    C, uniq = class_cosine_matrix(x, labels)
    assert list(uniq) == [0, 1, 2]
    idx = {c: [i for i, l in enumerate(labels) if l == c] for c in uniq}
    for a in uniq:
        for b in uniq:
            want = sum(
                torch.nn.functional.cosine_similarity(x[i], x[j], dim=0).item() for i in idx[a] for j in idx[b]
            ) / (len(idx[a]) * len(idx[b]))
            assert C[a, b].item() == pytest.approx(want, abs=1e-5)


def test_head_outputs_sum_to_the_attention_output():
    w = build_world(CFG)
    m = build_model_a(w.V, 16, d_model=16)
    b = sample_pt(w, 4, torch.Generator().manual_seed(0))
    f = head_outputs(m, b.tokens, layer=1, positions=b.extras["pred_pos"])
    _, cache = m.run_with_cache(b.tokens)
    want = cache["blocks.1.hook_attn_out"][torch.arange(4), b.extras["pred_pos"]] - m.blocks[1].attn.b_O
    torch.testing.assert_close(f.sum(1), want, rtol=1e-4, atol=1e-5)


def test_replace_and_rank_matches_a_manual_hook():
    w = build_world(CFG)
    m = build_model_a(w.V, 16, d_model=16, seed=1)
    b = sample_icl(w, 6, 3, torch.Generator().manual_seed(0), demo_subjects=torch.arange(12))
    vec = torch.randn(6, 16, generator=torch.Generator().manual_seed(2))
    targets = {"a": b.extras["target"], "b": torch.arange(6)}
    r = replace_and_rank(m, b.tokens, vec, 1, targets, site="attn_out", positions=-1)

    def hook(act, hook):
        act = act.clone()
        act[:, -1] = vec
        return act

    logits = m.run_with_hooks(b.tokens, fwd_hooks=[("blocks.1.hook_attn_out", hook)])[:, -1]
    for key, t in targets.items():
        want = torch.tensor([1 + (logits[i] > logits[i, t[i]]).sum().item() for i in range(6)], dtype=torch.float)
        assert torch.equal(r[key], want)


def test_prefix_prompts_hold_the_context_fixed():
    w = build_world(CFG)
    subj, ell = prefix_subjects(
        w, 2, 3, torch.Generator().manual_seed(0), demo_subjects=torch.arange(6), query_subjects=torch.arange(6, 12)
    )
    t3, t1 = icl_prefix_tokens(w, subj, ell, 3), icl_prefix_tokens(w, subj, ell, 1)
    assert t3.shape == (6, 10) and t1.shape == (6, 4)
    assert torch.equal(t3[:, :3], t1[:, :3]) and torch.equal(t3[:, -1], t1[:, -1])  # same demos, same query
    assert torch.equal(icl_prefix_tokens(w, subj, ell, 0), subj[:, -1:])


def test_seed_spread_collects_every_seed(tmp_path):
    import json

    from analyses.papers.contextual_recall.runs import seed_spread as collect

    for seed, value in ((0, 0.3), (1, 0.9)):
        folder = tmp_path / f"s{seed}" / "contextual_recall"
        folder.mkdir(parents=True)
        rows = [{"id": "x.a", "ours": value}, {"id": "x.b", "ours": None}]
        (folder / "results.json").write_text(json.dumps({"config": {"seed": seed}, "claims": rows}))
    table = collect([tmp_path / "s0", tmp_path / "s1"])
    assert set(table) == {"x.a"}  # not-run rows are left out
    assert table["x.a"]["seeds"] == [0, 1] and (table["x.a"]["min"], table["x.a"]["max"]) == (0.3, 0.9)
    assert abs(table["x.a"]["mean"] - 0.6) < 1e-12
