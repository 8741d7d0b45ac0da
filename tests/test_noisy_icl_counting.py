"""Synthetic IOI's counting claim (App. J; issue 25): the no-counting baselines of "IO preferred over S", the split
by where IO sits among the trigger's successors, and the claim's rule against the best baseline."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from analyses.papers.distributional.claims import NOISY_ICL_CLAIMS
from analyses.papers.distributional.data.recall import NoisyICLConfig, sample_synthetic_ioi
from analyses.papers.distributional.metrics import (
    IOI_BASELINES,
    by_position,
    counting_summary,
    io_preferred,
    ioi_baselines,
    ioi_counting,
    recall_metrics,
)
from analyses.papers.distributional.models import two_layer_model
from analyses.papers.distributional.results import IOIResults
from mechrecall.typed import read_results

Q, IO, S = 1, 7, 8


def _hand_built():
    """Three sequences (T = 10, trigger 1 at positions 1, 4, 6, and last), whose answers are known by eye:
    A: successors IO S S, IO once and S twice in the whole context;
    B: successors S S IO, IO also twice in the filler (3 IO, 2 S);
    C: successors S IO S, IO once more in the filler (2 IO, 2 S: a tie)."""
    tokens = torch.tensor(
        [
            [5, Q, IO, 9, Q, S, Q, S, 4, Q],
            [IO, Q, S, IO, Q, S, Q, IO, 3, Q],
            [IO, Q, S, 3, Q, IO, Q, S, 2, Q],
        ]
    )
    positions = torch.tensor([[1, 4, 6]] * 3)
    return tokens, positions, torch.tensor([IO] * 3), torch.tensor([S] * 3), torch.tensor([0, 2, 1])


def test_baselines_on_hand_built_sequences_give_the_known_answers():
    tokens, positions, io, s, _ = _hand_built()
    base = ioi_baselines(tokens, positions, io, s)
    assert set(base) == set(IOI_BASELINES)
    expected = {
        "most_recent": [0.0, 1.0, 0.0],  # the successor of the 3rd trigger: S, IO, S
        "first": [1.0, 0.0, 0.0],  # of the 1st: IO, S, S
        "coin": [0.5, 0.5, 0.5],
        "proportional": [0.0, 0.0, 0.0],  # S follows the trigger twice, IO once: never IO
        "less_often": [1.0, 0.0, 0.5],  # 1 vs 2; 3 vs 2; 2 vs 2 (a tie: a coin flip)
    }
    assert {k: v.tolist() for k, v in base.items()} == expected


def test_by_position_splits_by_the_io_slot_and_marks_an_empty_one():
    values, slot = torch.tensor([1.0, 0.0, 0.5, 1.0]), torch.tensor([0, 2, 1, 0])
    assert by_position(values, slot) == [1.0, 0.5, 0.0]
    assert by_position(values[:2], slot[:2]) == [1.0, None, 0.0]
    tokens, positions, io, s, slot = _hand_built()
    assert by_position(ioi_baselines(tokens, positions, io, s)["less_often"], slot) == [1.0, 0.5, 0.0]


def test_baselines_reproduce_the_issue_numbers_on_20k_sequences():
    """Issue 25 (20k sequences, T = 16): most recent 0.340, first 0.329, coin 0.499, proportional 0.000, less often
    0.925; each name-position baseline is perfect at its own position and 0 elsewhere."""
    cfg = NoisyICLConfig.preset("official_code", seq_len=16)
    batch = sample_synthetic_ioi(cfg, 20_000, torch.Generator().manual_seed(0), alpha=0.0)
    ex = batch.extras
    base = ioi_baselines(batch.tokens, ex["trigger_positions"], ex["ybar"], ex["y_distractor"])
    means = {k: v.mean().item() for k, v in base.items()}
    assert means["most_recent"] == pytest.approx(1 / 3, abs=0.012) and means["first"] == pytest.approx(1 / 3, abs=0.012)
    assert means["coin"] == 0.5 and means["proportional"] == 0.0
    assert means["less_often"] == pytest.approx(0.925, abs=0.006)
    assert by_position(base["first"], ex["ybar_slot"]) == [1.0, 0.0, 0.0]
    assert by_position(base["most_recent"], ex["ybar_slot"]) == [0.0, 0.0, 1.0]


def test_io_preferred_is_the_per_sequence_io_over_s_and_counting_holds_it():
    model = two_layer_model(d_vocab=65, n_ctx=16, d_model=32, d_mlp=64, ff=("mlp",) * 3, seed=1)
    cfg = NoisyICLConfig.preset("official_code", seq_len=16)
    batch = sample_synthetic_ioi(cfg, 60, torch.Generator().manual_seed(2))
    batch = dataclasses.replace(batch, targets=batch.extras["clean_target"])
    ours = io_preferred(model, batch)
    assert ours.mean().item() == pytest.approx(recall_metrics(model, batch, 2)["io_over_s"])
    c = ioi_counting(model, batch)
    assert c["ours_by_position"] == by_position(ours, batch.extras["ybar_slot"])
    assert sum(c["n_by_position"]) == 60 and c["best_baseline"] == "less_often"


BASELINES = {
    "most_recent": [0.0, 0.0, 1.0],
    "first": [1.0, 0.0, 0.0],
    "coin": [0.5, 0.5, 0.5],
    "proportional": [0.0, 0.0, 0.0],
    "less_often": [0.92, 0.93, 0.91],
}


def _verdict(ours_by_position, baselines=BASELINES):
    """The counting claim's row for a fabricated Adam L = 3 run whose by-position fractions are given."""
    spec = next(c for c in NOISY_ICL_CLAIMS if c.id == "ioi.adam_L3_counts")
    summary = counting_summary(ours_by_position, baselines)
    counting = {
        "ours": sum(ours_by_position) / 3,
        "ours_by_position": ours_by_position,
        "baselines": {k: sum(v) / 3 for k, v in baselines.items()},
        "baselines_by_position": baselines,
        **summary,
    }
    others = {"accuracy_gain": 0.0, "noise_removed": 1.0, "io_s_margin_kept": 0.0}  # not read by this claim
    run = {
        **{f"full.{k}": 0.5 for k in ("acc", "p_noise", "io_s_margin", "io_over_s")},
        "measures": {"counting_margin": summary["margin"], **others},
        "control": {"counting_margin": summary["control"], **others},
        "counting": counting,
    }
    untrained = {"not_applicable": "not trained in this test"}
    runs = {f"{opt}_L{n}": untrained for opt, depths in (("sgd", range(3, 8)), ("adam", range(3, 6))) for n in depths}
    results = read_results(IOIResults, {**runs, "adam_L3": run})
    claim = spec.evaluate(results, experiment="noisy_icl")
    assert claim is not None  # a trained run's claim is never left out
    return claim.row()


def test_the_counting_rule_passes_above_every_baseline_and_fails_when_one_position_is_not():
    row = _verdict([0.95, 0.96, 0.97])
    assert row["verdict"] == "reproduced" and row["class"] == "extension" and row["paper"] is None
    assert row["ours"] == pytest.approx(0.03) and row["control"] == 0.0  # less_often is the best; its margin is 0
    assert "best baseline (less_often) 0.92 / 0.93 / 0.91" in row["note"]
    assert _verdict([0.99, 0.99, 0.90])["verdict"] == "not reproduced"  # IO 3rd: below 0.91
    assert _verdict([0.0, 1.0, 1.0])["verdict"] == "not reproduced"  # the 2-of-3 shortcut: 2/3, never IO 1st
    assert _verdict([0.92, 0.93, 0.91])["verdict"] == "not reproduced"  # equal is not above
    # at T = 256 the less-often baseline is weaker (≈ 0.64): the same rule then asks less
    weaker = {**BASELINES, "less_often": [0.64, 0.65, 0.64]}
    assert _verdict([0.7, 0.7, 0.7], weaker)["verdict"] == "reproduced"
    assert _verdict([1.0, 1.0, 0.6], weaker)["verdict"] == "not reproduced"


def test_no_baseline_passes_the_counting_rule():
    """Each baseline's margin against the best one is ≤ 0 (the best one's is 0), for any by-position numbers: the
    rule cannot be vacuous."""
    gen = torch.Generator().manual_seed(0)
    for _ in range(200):
        base = {k: torch.rand(3, generator=gen).tolist() for k in IOI_BASELINES}
        summary = counting_summary([1.0, 1.0, 1.0], base)
        assert summary["control"] <= 0.0 and summary["control_margin"][summary["best_baseline"]] == 0.0
        assert _verdict(base[summary["best_baseline"]], base)["verdict"] == "not reproduced"
