"""The experiment protocol (``mechrecall.experiment``) and claims as data (``mechrecall.claims``), on toy parts."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import Field

from analyses.registry import EXPERIMENTS
from mechrecall.claims import (
    VERDICTS,
    Claim,
    ClaimSpec,
    ClaimTextError,
    above_untrained,
    at_least,
    at_most,
    between,
    check_table,
    evaluate,
    is_true,
    judge_row,
    lookup,
    near,
    over_seeds,
    seed_verdict,
    summary,
    summary_by_class,
)
from mechrecall.claims import control_problems as problems
from mechrecall.errors import UsageError
from mechrecall.experiment import Experiment, Option, Part, PartResult
from mechrecall.presets import Preset, describe_overrides, override
from mechrecall.seeds import parse_seeds
from mechrecall.typed import Entry, Maybe, NotApplicable, NotRun, Results, ResultsError, read_results

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------- rules and verdicts


@pytest.mark.parametrize(
    "rule,ours,verdict",
    [
        (at_least(0.9, partial=0.6), 0.95, "reproduced"),
        (at_least(0.9, partial=0.6), 0.9, "reproduced"),  # bounds are inclusive
        (at_least(0.9, partial=0.6), 0.7, "partial"),
        (at_least(0.9, partial=0.6), 0.59, "not reproduced"),
        (at_least(0.9), 0.7, "not reproduced"),  # no partial band
        (at_most(0.05, partial=0.1), 0.02, "reproduced"),
        (at_most(0.05, partial=0.1), 0.08, "partial"),
        (at_most(0.05, partial=0.1), 0.2, "not reproduced"),
        (between(0.4, 0.6, partial=(0.3, 0.7)), 0.65, "partial"),
        (between(0.4, 0.6, partial=(0.3, 0.7)), 0.29, "not reproduced"),
        (near(2.0, 0.1, partial_tol=0.5), 1.95, "reproduced"),
        (near(2.0, 0.1, partial_tol=0.5), 2.4, "partial"),
        (is_true(), True, "reproduced"),
        (is_true(), 0, "not reproduced"),
        (at_least(0.9), None, "not run"),
        (at_least(0.9), math.nan, "not run"),
    ],
)
def test_verdict_is_computed_from_the_number_and_the_rule(rule, ours, verdict):
    claim = Claim(id="x.y.z", claim="c", ours=ours, rule=rule)
    assert claim.verdict == verdict
    row = claim.row()
    assert row["verdict"] == verdict and judge_row(row) == verdict  # the written row re-judges to the same verdict


def test_rows_describe_the_rule_in_words_and_refuse_non_numbers():
    row = Claim(id="a.b.c", claim="p", ours=0.7, rule=at_least(0.9, partial=0.6), paper=0.98, where="Fig 3").row()
    assert row["rule"] == "≥ 0.9; partial if ≥ 0.6" and row["paper"] == 0.98 and row["where"] == "Fig 3"
    assert near(0.5, 0.05).describe() == "within ±0.05 of 0.5"
    with pytest.raises(TypeError, match="expected a number"):
        Claim(id="a.b.c", claim="p", ours="0.3 → 0.9", rule=at_least(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="without spaces"):
        Claim(id="a b", claim="p", ours=1, rule=at_least(0))
    with pytest.raises(ValueError, match="lo <= hi"):
        between(1, 0)
    rows = [
        Claim(id=f"i{k}", claim="c", ours=v, rule=at_least(1, partial=0)).row()
        for k, v in enumerate((2, 0.5, -1, None))
    ]
    assert summary(rows) == dict(zip(VERDICTS, (1, 1, 1, 0, 0, 1)))


@pytest.mark.parametrize(
    "ours,control,comparable,verdict",
    [
        (0.95, 0.1, True, "reproduced"),
        (0.7, 0.1, True, "partial"),
        (0.95, 0.95, True, "vacuous"),  # the control passes too: the rule cannot tell
        (0.95, 0.7, True, "vacuous"),  # ... and so does a control in the partial band
        (0.2, 0.95, True, "vacuous"),  # a bug in the claim whatever ours is
        (0.95, 0.1, False, "not comparable"),  # a preset not comparable to the paper's gets no verdict
        (0.95, 0.95, False, "not comparable"),
        (None, 0.95, True, "not run"),
        (0.95, None, True, "reproduced"),  # no control measured: the rule's verdict (control_problems names it)
    ],
)
def test_a_claim_is_judged_beside_its_control_and_its_preset(ours, control, comparable, verdict):
    claim = Claim(
        id="x.y.z", claim="c", ours=ours, rule=at_least(0.9, partial=0.6), control=control, comparable=comparable
    )
    row = claim.row()
    assert claim.verdict == verdict == row["verdict"] == judge_row(row)
    assert (row["control"], row["comparable"]) == (control, comparable)


def test_control_problems_name_a_missing_control_and_one_the_rule_passes():
    rule = at_least(0.9, partial=0.6)
    rows = [
        Claim(id="a.b.ok", claim="c", ours=1.0, rule=rule, control=0.1).row(),
        Claim(id="a.b.none", claim="c", ours=1.0, rule=rule, control_is="untrained").row(),
        Claim(id="a.b.passes", claim="c", ours=1.0, rule=rule, control=0.7).row(),
        Claim(id="a.b.not_run", claim="c", ours=None, rule=rule).row(),  # nothing measured: nothing to check
    ]
    assert problems(rows) == [
        "a.b.none: no control value (untrained)",
        "a.b.passes: control 0.7 passes the rule '≥ 0.9; partial if ≥ 0.6'",
    ]


def test_a_contrast_is_judged_against_its_untrained_seeds():
    untrained = [0.01, -0.03, 0.02, 0.0, -0.01]
    rule = above_untrained(untrained, what="score difference")
    assert rule.lo == pytest.approx(0.06) and "largest |score difference| of 5 untrained seeds" in rule.describe()
    assert all(rule.judge(v) == "not reproduced" for v in untrained)  # any untrained seed, the control, fails
    assert rule.judge(0.2) == "reproduced"
    with pytest.raises(ValueError, match="expected >= 5 seeds"):
        above_untrained(untrained[:4])


@pytest.mark.parametrize(
    "ours,controls,verdict",
    [
        ((1.0, 0.95, 0.92), (0.1, 0.2, 0.0), "reproduced"),  # every seed passes
        ((1.0, 0.7, 0.95), (0.1, 0.2, 0.0), "partial"),  # one partial: not every seed reproduced
        ((1.0, 0.1, 0.2), (0.1, 0.2, 0.0), "not reproduced"),  # 1 of 3 passes: less than half
        ((1.0, 0.1, 0.95, 0.2), (0.1,) * 4, "partial"),  # 2 of 4: half
        ((1.0, None, 0.95), (0.1, None, 0.0), "partial"),  # a seed without a number is a miss
        ((1.0, 0.95, 0.92), (0.1, 0.95, 0.0), "vacuous"),  # the control passes on one seed
        ((None, None), (None, None), "not run"),
    ],
)
def test_the_verdict_over_seeds(ours, controls, verdict):
    assert seed_verdict(at_least(0.9, partial=0.6), ours, controls) == verdict
    if verdict != "not run":
        assert seed_verdict(at_least(0.9, partial=0.6), ours, controls, comparable=False) == "not comparable"


def test_rows_over_seeds_hold_the_mean_the_spread_and_the_seeds_passed():
    rule = at_least(0.9, partial=0.6)
    per_seed = {
        s: [
            Claim(id="a.b.c", claim="c", ours=v, rule=rule, control=0.1, seeds=(s,)).row(),
            *([Claim(id="a.b.exact", claim="e", ours=1.0, rule=rule, control=0.0).row()] if s == 0 else []),
        ]
        for s, v in ((0, 1.0), (1, 0.7), (2, 0.94))
    }
    row, exact = over_seeds(per_seed)
    assert row["ours"] == pytest.approx((1.0 + 0.7 + 0.94) / 3) and row["spread"] == [0.7, 1.0]
    assert row["seeds"] == [0, 1, 2] and row["passed"] == 2 and row["verdict"] == "partial" == judge_row(row)
    assert [s["ours"] for s in row["per_seed"]] == [1.0, 0.7, 0.94] and row["control"] == pytest.approx(0.1)
    assert exact["seeds"] == [0] and exact["verdict"] == "reproduced"  # an exact claim: the one seed it has
    row["per_seed"][1]["control"] = 0.99  # the written numbers decide, not the written verdict
    assert judge_row(row) == "vacuous"
    row["per_seed"][1]["control"] = 0.1
    row["per_seed"][1]["rule_spec"] = at_least(0.5).to_dict()  # each seed judged by its own rule
    assert judge_row(row) == "reproduced"


def test_summary_by_class_counts_paper_claims_apart():
    rows = [
        Claim(id=f"a.b.{k}", claim="c", ours=1.0, rule=at_least(0.5), kind=k).row()
        for k in ("paper", "paper", "extension", "ablation")
    ]
    counts = summary_by_class(rows)
    assert [counts[k]["reproduced"] for k in ("paper", "extension", "ablation")] == [2, 1, 1]


@pytest.mark.parametrize(
    "text,seeds", [("0-4", (0, 1, 2, 3, 4)), ("0,3,7", (0, 3, 7)), ("5", (5,)), ("1-2,2,9", (1, 2, 9))]
)
def test_seeds_are_parsed_from_ranges_and_lists(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "3-1", "-1", "0-", "1,,2"])
def test_bad_seeds_are_refused_naming_the_value(text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="expected seeds >= 0 like 0-4"):
        parse_seeds(text)


# --------------------------------------------------------------------------- the run loop

CALLS: list[str] = []


def _part(name, value):
    def run(ctx):
        CALLS.append(name)
        if ctx.options["fail"] == name:
            raise RuntimeError(f"{name} broke")
        if ctx.options["fail"] == f"{name}:nan":  # what mechrecall.trainer raises on a diverging run
            raise FloatingPointError("training loss is nan at step 3; lower the learning rate")
        assert ctx.part == name  # the protocol knows which part runs
        return PartResult(
            {"value": value * ctx.params.scale, "seed": ctx.seed, "steps": ctx.params.steps},
            {f"{name}.html": f"<p>{name}</p>"},
        )

    return run


@dataclass(frozen=True)
class ToyPreset(Preset):
    steps: int = 10
    scale: float = 1.0


class ToyResults(Results):
    """A toy part's typed results."""

    value: float
    seed: int
    steps: int


PRESETS = {"micro": ToyPreset(steps=2, comparable=False), "smoke": ToyPreset(), "paper": ToyPreset(steps=100)}
CLAIMS = tuple(
    ClaimSpec[ToyResults](
        f"{name}.value", f"{name} value", value=lambda r: r.value, rule=at_least(1.0, partial=0.5), where="Fig 1"
    )
    for name in ("first", "second", "big")
)


TOY = Experiment(
    name="toy",
    paper="A Toy Paper",
    summary="Toy parts.",
    parts=(
        Part("first", _part("first", 2.0), "one", results=lambda: ToyResults),
        Part("second", _part("second", 0.7), "two", results=lambda: ToyResults),
        Part("big", _part("big", 0.0), "paper only", presets=("paper",), results=lambda: ToyResults),
    ),
    options=(
        Option("--scale", type=float, default=None, low=0.001, field="scale", help="a number"),
        Option("--steps", type=int, default=None, low=1, field="steps", help="steps"),
        Option("--fail", default="", compare=False, help="the part to break"),
    ),
    preset_table=PRESETS,
    claims=CLAIMS,
)


def _read(out):
    return json.loads((out / "toy" / "results.json").read_text())


def test_results_are_written_after_each_part_and_kept_on_rerun(tmp_path):
    CALLS.clear()
    with pytest.raises(RuntimeError, match="second broke"):
        TOY.run(tmp_path, preset="micro", options={"fail": "second"})
    data = _read(tmp_path)
    assert data["schema"] == "mechrecall.results/2" and data["paper"] == "A Toy Paper"
    assert data["parts"]["first"]["status"] == "done" and data["parts"]["second"]["status"] == "failed"
    assert "second broke" in data["parts"]["second"]["error"]
    assert [c["id"] for c in data["claims"]] == ["toy.first.value"]
    assert (tmp_path / "toy" / "first.html").read_text() == "<p>first</p>"
    # rerun: the finished part is kept (not called again), the failed one is retried
    CALLS.clear()
    data = TOY.run(tmp_path, preset="micro")
    assert CALLS == ["second"]
    assert [c["verdict"] for c in data["claims"]] == ["not comparable"] * 2  # micro: sizes far below the paper's
    assert [c["ours"] for c in data["claims"]] == [2.0, 0.7]
    assert data["summary"]["not comparable"] == 2
    assert data["figures"] == ["first.html", "second.html"] and "big" not in data["parts"]  # not in micro
    assert _read(tmp_path) == json.loads(json.dumps(data))
    # another configuration is refused, naming the difference; --fresh starts over
    with pytest.raises(UsageError, match=r"options.scale: None there, 2.0 now"):
        TOY.run(tmp_path, preset="micro", options={"scale": 2.0})
    CALLS.clear()
    TOY.run(tmp_path, preset="micro", options={"scale": 2.0}, fresh=True)
    assert CALLS == ["first", "second"]


def test_bad_input_is_refused_before_any_work(tmp_path):
    CALLS.clear()
    for kwargs, message in (
        ({"options": {"scale": 0}}, r"--scale 0; expected a number >= 0.001"),
        ({"options": {"steps": 0}}, r"--steps 0; expected an integer >= 1"),
        ({"seed": -1}, "--seed -1"),
        ({"parts": ["nope"]}, "unknown part"),
        ({"parts": ["big"]}, "not part of --preset micro"),
        ({"preset": "huge"}, "--preset 'huge'"),
        ({"device": "gpu0"}, "--device 'gpu0'"),
        ({"threads": 0}, "--threads 0"),
    ):
        with pytest.raises(UsageError, match=message):
            TOY.run(tmp_path / "x", **{"preset": "micro", **kwargs})
    assert CALLS == [] and not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="exists and is not a folder"):
        TOY.run(tmp_path / "file", preset="micro")
    assert TOY.run(tmp_path / "y", preset="paper", parts=["big"])["summary"]["not reproduced"] == 1


def test_a_diverging_run_ends_in_one_line_and_is_marked_failed(tmp_path, capsys):
    code = TOY.main(["--preset", "micro", "--out", str(tmp_path), "--fail", "second:nan", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "training diverged: training loss is nan at step 3" in err and "results.json" in err
    data = _read(tmp_path)
    assert data["parts"]["first"]["status"] == "done" and data["parts"]["second"]["status"] == "failed"


def test_claims_carry_preset_seed_and_a_micro_note(tmp_path):
    data = TOY.run(tmp_path, preset="micro", seed=7, parts=["first"])
    row = data["claims"][0]
    assert row["preset"] == "micro" and row["seeds"] == [7] and "not comparable" in row["note"]
    assert row["where"] == "Fig 1" and row["class"] == "paper"
    assert TOY.run(tmp_path / "s", preset="smoke", parts=["first"])["claims"][0]["note"] == ""


def test_an_option_overrides_its_preset_field_and_every_claim_says_so(tmp_path):
    data = TOY.run(tmp_path, preset="smoke", parts=["first", "second"], options={"steps": 5, "scale": 0.5})
    assert data["parts"]["first"]["results"]["steps"] == 5  # the part saw the preset with the override applied
    assert [c["ours"] for c in data["claims"]] == [1.0, 0.35]
    assert all(
        "changed from preset smoke: scale 0.5 (preset 1.0), steps 5 (preset 10)" in c["note"] for c in data["claims"]
    )
    same = TOY.run(tmp_path / "same", preset="smoke", parts=["first"], options={"steps": 10})  # the preset's value
    assert same["claims"][0]["note"] == ""


def test_set_changes_any_preset_field_and_refuses_a_bad_one_in_one_line(tmp_path, capsys):
    """``--set FIELD=VALUE`` (every experiment): the paper's sizes but one, say; the claims say what changed, and
    a rerun with another value is another configuration."""
    data = TOY.run(tmp_path, preset="paper", parts=["first"], options={"set": ["steps=7", "scale=2"]})
    assert data["parts"]["first"]["results"]["steps"] == 7
    assert "changed from preset paper: scale 2.0 (preset 1.0), steps 7 (preset 100)" in data["claims"][0]["note"]
    assert data["config"]["options"]["set"] == ["steps=7", "scale=2"]
    for bad, message in [
        ("width=3", "--set width=3: expected FIELD=VALUE with FIELD one of preset paper's fields (at 'width': "),
        ("steps", "--set steps: expected FIELD=VALUE"),
        ("steps=7.5", "--set steps=7.5: expected an int like the preset's 100"),
        ("scale=wide", "--set scale=wide: expected a float like the preset's 1.0"),
    ]:
        assert TOY.main(["--preset", "paper", "--set", bad, "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()


def test_a_strict_bound_and_nan_are_refused_in_one_line():
    lr = Option("--lr", type=float, default=0.1, above=0)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(UsageError, match=r"--lr .*; expected a number > 0$"):
            lr.check(bad)
    lr.check(1e-9)
    both = Option("--p", type=float, low=0, high=1, above=0)
    assert both.range_words() == "a number in [0, 1], > 0"
    assert Option("--k", type=int, low=2, high=None).range_words() == "an integer >= 2"


def test_override_and_its_description():
    new, diffs = override(ToyPreset(), {"steps": 3, "scale": None})
    assert new == ToyPreset(steps=3) and diffs == {"steps": (3, 10)}
    assert describe_overrides("smoke", diffs) == "changed from preset smoke: steps 3 (preset 10)"
    assert describe_overrides("smoke", {}) == ""
    with pytest.raises(KeyError, match="no field"):
        override(ToyPreset(), {"width": 3})


def test_a_dotted_override_changes_a_field_of_a_nested_preset():
    from analyses.papers.induction_heads.presets import PRESETS

    smoke = PRESETS["smoke"]
    new, diffs = override(smoke, {"standard.d_model": 512, "standard.lr": None, "standard.steps": smoke.standard.steps})
    assert new.standard == dataclasses.replace(smoke.standard, d_model=512) and new.demo_steps == smoke.demo_steps
    assert diffs == {"standard.d_model": (512, smoke.standard.d_model)}
    with pytest.raises(KeyError, match="no field"):
        override(smoke, {"standard.width": 3})


def test_an_unseeded_part_refuses_another_seed_naming_the_part(tmp_path):
    exact = Experiment(
        name="toy2",
        paper="p",
        summary="s",
        parts=(Part("exact", _part("exact", 1.0), "h", seeded=False),),
        preset_table=PRESETS,
    )
    with pytest.raises(UsageError, match="--seed 3: part exact does not depend on a seed"):
        exact.run(tmp_path, preset="smoke", seed=3)
    assert not (tmp_path / "toy2").exists()


class Panel(Entry):
    """A sub-table: a number, and one that may not have been measured."""

    b: float
    late: Maybe[float]


class ReadResults(Results):
    n: int
    acc: float
    a: Panel
    m: Maybe[Panel]
    big: Maybe[Panel]
    range: list[float]
    trials: list[int]
    score: float | None = Field(default=None, alias="score.exact")


READ = {
    "n": 3,
    "acc": 0.9,
    "a": {"b": 0.5, "late": {"not_run": "no checkpoint after step 100"}},
    "m": {"not_run": "no weights for pythia-1b here"},
    "big": {"not_applicable": "paper only"},
    "range": [0.8, 1.0],
    "trials": [4, 5],
    "score.exact": None,
    "history": [1, 2, 3],
}


def test_claims_read_typed_results_and_say_why_they_were_not_run():
    results = ReadResults.model_validate(READ)
    assert isinstance(results.m, NotRun) and isinstance(results.big, NotApplicable)
    assert results.m.b is results.m  # a marker absorbs reads below it, so a claim gets the marker back
    spec = ClaimSpec[ReadResults](
        "p.ratio", "r", value=lambda r: r.a.b, rule=lambda r: at_least(r.a.b - 0.1), paper=lambda r: 2 * r.a.b
    )
    claim = spec.evaluate(results, experiment="x", preset="smoke", seeds=(1,))
    assert claim is not None
    assert (claim.id, claim.verdict, claim.paper, claim.seeds) == ("x.p.ratio", "reproduced", 1.0, (1,))
    reasons = {
        "m": (lambda r: r.m.b, "no weights for pythia-1b here"),  # through a NotRun table
        "late": (lambda r: r.a.late, "no checkpoint after step 100"),  # a NotRun number
        "empty": (lambda r: r.score, "not measured: the results entry is empty"),  # null (NaN) in the file
    }
    for name, (read, why) in reasons.items():
        row = ClaimSpec[ReadResults](f"p.{name}", name, value=read, rule=at_least(0)).evaluate(results, experiment="x")
        assert row is not None and row.verdict == "not run" and row.row()["reason"] == why, name
    whole = spec.evaluate(NotRun(not_run="no weights here", model="pythia-1b"), experiment="x")
    assert whole is not None and whole.verdict == "not run" and whole.reason == "no weights here"
    with pytest.raises(ValueError, match="kind="):
        ClaimSpec("p.k", "k", value=lambda r: r, rule=at_least(0), kind="bonus")
    with pytest.raises(TypeError, match="value='a/b'; expected a function"):
        ClaimSpec("p.k", "k", value="a/b", rule=at_least(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="declared twice"):
        check_table([spec, spec], ["p"])
    with pytest.raises(ValueError, match="name parts"):
        check_table([spec], ["q"])


def test_the_sweeps_json_lookup_walks_slash_paths():
    """A sweep's ``--measure`` names a JSON entry on the command line; claims never do."""
    assert lookup(READ, "a/b") == (0.5, "")
    assert lookup(READ, "m/x/y") == (None, "no weights for pythia-1b here")
    assert lookup(READ, "a/c")[1] == "not measured: the results have no entry 'a/c'"
    assert lookup(READ, "score.exact")[1] == "not measured: the results entry 'score.exact' is empty"


def test_a_claim_can_state_its_sizes_spread_and_seeds_from_the_results_or_not_apply(monkeypatch):
    results = ReadResults.model_validate(READ)
    spec = ClaimSpec[ReadResults](
        "p.acc",
        "accuracy",
        value=lambda r: r.acc,
        rule=at_least(0.85),
        note="fixed",
        notes=lambda r: f"chance {1 / r.n:.2f}",
        words=lambda r: f"accuracy at n = {r.n}",
        spread=lambda r: r.range,
        seeds=lambda r: r.trials,
    )
    claim = spec.evaluate(results, experiment="x", seeds=(0,), note_first="micro", note="changed")
    assert claim is not None
    row = claim.row()
    assert row["claim"] == "accuracy at n = 3" and row["note"] == "micro; fixed; chance 0.33; changed"
    assert row["spread"] == [0.8, 1.0] and row["seeds"] == [4, 5]
    broken = ClaimSpec[ReadResults]("p.b", "b", value=lambda r: r.acc, rule=at_least(0), notes=lambda r: r.nn)
    monkeypatch.setenv("MECHRECALL_STRICT_CLAIMS", "0")  # a user's run: the note is lost, the number kept
    bare = broken.evaluate(results, experiment="x", seeds=(0,))
    assert bare is not None and bare.note == "" and bare.ours == 0.9
    monkeypatch.setenv("MECHRECALL_STRICT_CLAIMS", "1")  # the tests: a claim's typo fails loudly
    with pytest.raises(ClaimTextError, match=r"claim p\.b: its notes / words failed: AttributeError"):
        broken.evaluate(results, experiment="x", seeds=(0,))
    big = ClaimSpec[ReadResults]("p.big", "big", value=lambda r: r.big.b, rule=at_least(0))
    assert big.evaluate(results, experiment="x") is None  # a configuration the run does not have: left out
    assert [c.id for c in evaluate([spec, big], "p", results, experiment="x")] == ["x.p.acc"]


def test_typed_results_keep_their_json_and_say_which_field_is_bad():
    results = ReadResults.model_validate(READ)
    assert results.to_json() == {**READ, "a": {"b": 0.5, "late": {"not_run": "no checkpoint after step 100"}}}
    assert ReadResults.model_validate(results.to_json()) == results  # what results.json holds reads back the same
    with pytest.raises(ResultsError, match=r"^ReadResults: a\.b: Input should be a valid number.*'fast'"):
        read_results(ReadResults, {**READ, "a": {"b": "fast", "late": 1.0}})
    with pytest.raises(ResultsError, match=r"^results of schema 'ReadResults/0'; expected 'ReadResults/1'$"):
        read_results(ReadResults, READ, schema="ReadResults/0")
    assert read_results(ReadResults, {"not_run": "no weights", "model": "m"}) == NotRun(not_run="no weights", model="m")


def test_results_json_is_validated_when_read_back_and_a_stale_part_reruns(tmp_path, capsys):
    TOY.run(tmp_path, preset="smoke", parts=["first", "second"], options={"fail": ""})
    stored = _read(tmp_path)
    assert stored["parts"]["first"]["results_schema"] == "ToyResults/1"
    loaded = TOY.load(tmp_path)
    assert loaded["first"] == ToyResults(value=2.0, seed=0, steps=10) and isinstance(loaded["second"], ToyResults)
    stored["parts"]["second"]["results"]["value"] = "high"  # a field that no longer validates
    (tmp_path / "toy" / "results.json").write_text(json.dumps(stored))
    with pytest.raises(ResultsError, match="ToyResults: value: Input should be a valid number"):
        TOY.load(tmp_path)
    CALLS.clear()
    TOY.run(tmp_path, preset="smoke", parts=["first", "second"], options={"fail": ""})
    assert CALLS == ["second"]  # first read back and kept; second ran again
    assert "second: the results in" in capsys.readouterr().out
    assert TOY.load(tmp_path)["second"].value == pytest.approx(0.7)


def test_finished_uses_the_same_configuration_check_as_a_rerun(tmp_path):
    assert not TOY.finished(tmp_path, preset="micro", parts=["first"])
    TOY.run(tmp_path, preset="micro", parts=["first"])
    assert TOY.finished(tmp_path, preset="micro", parts=["first"])
    assert not TOY.finished(tmp_path, preset="micro", parts=["first", "second"])  # second not run
    assert not TOY.finished(tmp_path, preset="micro", parts=["first"], options={"scale": 2.0})
    assert not TOY.finished(tmp_path, preset="micro", parts=["first"], seed=1)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_cli_user_errors_are_one_line_without_traceback(name, tmp_path):
    """One subprocess per entry point for the one-line path (the checks themselves are proven in-process above)."""
    (tmp_path / "f").write_text("")
    for args in (["--out", str(tmp_path / "f")], ["--threads", "0"]):
        done = subprocess.run(
            [sys.executable, "-m", f"analyses.{name}", *args], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_comma_separated_integers():
    import argparse

    from mechrecall.experiment import comma_ints

    assert comma_ints("16, 32,64") == (16, 32, 64)
    ns = Option("--ns", type=comma_ints, low=2)
    with pytest.raises(UsageError, match=r"^--ns 1; expected an integer >= 2$"):
        ns.check(comma_ints("4,1"))
    for bad in ("", "3,x", ","):
        with pytest.raises(argparse.ArgumentTypeError, match="comma-separated integers"):
            comma_ints(bad)


SEEDED = Experiment(
    name="seeded",
    paper="p",
    summary="s",
    parts=(
        Part("trained", _part("trained", 1.0), "seeded", results=lambda: ToyResults),
        Part("exact", _part("exact", 3.0), "exact", seeded=False, results=lambda: ToyResults),
    ),
    options=(Option("--fail", default="", compare=False, help="the part to break"),),
    preset_table=PRESETS,
    claims=(
        ClaimSpec[ToyResults](
            "trained.value",
            "v",
            value=lambda r: r.value,
            rule=at_least(0.9),
            control=lambda r: r.seed,
            control_is="the seed itself",
        ),
        ClaimSpec[ToyResults](
            "exact.value",
            "e",
            value=lambda r: r.value,
            rule=at_least(2.0),
            control=lambda r: r.seed,
            control_is="the seed itself",
        ),
    ),
)


def test_several_seeds_run_each_to_its_folder_and_the_exact_part_once(tmp_path):
    CALLS.clear()
    run = SEEDED.run_seeds(tmp_path, (1, 2), preset="smoke")
    assert CALLS == ["exact", "trained", "trained"]  # the exact part once, at seed 0, first
    assert json.loads((tmp_path / "seed0" / "seeded" / "results.json").read_text())["config"]["seed"] == 0
    for seed in (1, 2):
        payload = json.loads((tmp_path / f"seed{seed}" / "seeded" / "results.json").read_text())
        assert payload["config"]["seed"] == seed and list(payload["parts"]) == ["trained"]
    saved = json.loads((tmp_path / "seeded" / "seeds.json").read_text())
    exact, trained = saved["claims"]  # in the order the seeds ran them
    assert trained["seeds"] == [1, 2]
    assert [(s["seed"], s["ours"], s["control"]) for s in trained["per_seed"]] == [(1, 1.0, 1), (2, 1.0, 2)]
    assert trained["verdict"] == "vacuous"  # seed 1's control (1) passes "≥ 0.9"
    assert exact["seeds"] == [0] and exact["verdict"] == "reproduced" and exact["control"] == 0
    assert run["path"] == tmp_path / "seeded" / "seeds.json" and not run["failed"]
    CALLS.clear()
    SEEDED.run_seeds(tmp_path, (1, 2), preset="smoke")  # a rerun keeps every seed's finished parts
    assert CALLS == []


def test_a_part_with_its_own_trial_seeds_runs_once_at_the_first_seed():
    sweep = Experiment(
        name="trials",
        paper="p",
        summary="s",
        parts=(
            Part("trained", _part("trained", 1.0), "seeded"),
            Part("exact", _part("exact", 3.0), "exact", seeded=False),
            Part("sweep", _part("sweep", 1.0), "cells x its own trial seeds", trials=True),
        ),
        preset_table=PRESETS,
    )
    assert sweep.seed_runs((2, 3, 4), ["trained", "exact", "sweep"]) == [
        (0, ("exact",)),
        (2, ("trained", "sweep")),
        (3, ("trained",)),
        (4, ("trained",)),
    ]
    assert sweep.seed_runs((3,), ["sweep"]) == [(3, ("sweep",))]


def test_a_failing_seed_is_recorded_and_the_others_go_on(tmp_path):
    run = SEEDED.run_seeds(tmp_path, (0, 1), preset="smoke", parts=["trained"], options={"fail": "trained"})
    assert run["failed"] and run["claims"] == []
    assert json.loads((tmp_path / "seed1" / "seeded" / "results.json").read_text())["parts"]["trained"]["status"] == (
        "failed"
    )


def test_cli_seeds_and_seed_together_are_refused(tmp_path, capsys):
    assert SEEDED.main(["--seeds", "0-1", "--seed", "3", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().endswith("--seed 3 with --seeds; expected one of them")
    assert SEEDED.main(["--seeds", "0-1", "--out", str(tmp_path), "--no-progress", "--preset", "smoke"]) == 0
    assert (tmp_path / "seeded" / "seeds.json").exists()


def _outer(ctx):
    """A part during which another run of the same configuration writes another part into the same folder (what a
    second process running that part beside this one does)."""
    NESTED.run(ctx.out.parent, preset=ctx.preset, parts=["first"], seed=ctx.seed)
    return PartResult({"value": 1.5})


NESTED = Experiment(
    name="nested",
    paper="A Toy Paper",
    summary="Two parts, one run while the other runs.",
    parts=(Part("first", _part("first", 2.0), "one"), Part("outer", _outer, "runs 'first' meanwhile")),
    options=(Option("--fail", default="", compare=False, help="the part to break"),),
    preset_table=PRESETS,
    claims=(
        ClaimSpec("first.value", "first value", value=lambda r: r["value"], rule=at_least(1.0), where="Fig 1"),
        ClaimSpec("outer.value", "outer value", value=lambda r: r["value"], rule=at_least(1.0), where="Fig 1"),
    ),
)


def test_parts_written_by_another_run_meanwhile_are_kept(tmp_path):
    """Two runs of one configuration into one folder (a report's part-level jobs) keep each other's parts: the
    second writer merges, under a lock, what the first wrote after the second read ``results.json``."""
    NESTED.run(tmp_path, preset="smoke", parts=["outer"])
    data = json.loads((tmp_path / "nested" / "results.json").read_text())
    assert list(data["parts"]) == ["first", "outer"] and all(p["status"] == "done" for p in data["parts"].values())
    assert [c["id"] for c in data["claims"]] == ["nested.first.value", "nested.outer.value"]


# --------------------------------------------------------------------------- references: mechrecall.lazy, mypy

LAZY_PACKAGE = """
from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:
    import os.path as osp
    from json import dumps

    from . import heavy
    from .heavy import VALUE as value

__getattr__, __dir__ = lazy_imports(__name__)
"""


def test_lazy_imports_serve_the_type_checking_imports_on_first_use(tmp_path, monkeypatch):
    """The names an ``if TYPE_CHECKING:`` block imports are served on first use, each the real object (a submodule,
    an attribute under another name, a stdlib function); the module they come from is imported only then."""
    import os.path

    (tmp_path / "lazydemo").mkdir()
    (tmp_path / "lazydemo" / "__init__.py").write_text(LAZY_PACKAGE)
    (tmp_path / "lazydemo" / "heavy.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("lazydemo", "lazydemo.heavy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import lazydemo

    assert "lazydemo.heavy" not in sys.modules  # nothing imported yet
    assert lazydemo.value == 42 and lazydemo.heavy is sys.modules["lazydemo.heavy"]
    assert lazydemo.dumps is json.dumps and lazydemo.osp is os.path
    assert {"dumps", "heavy", "osp", "value"} <= set(dir(lazydemo))
    with pytest.raises(AttributeError, match="module 'lazydemo' has no attribute 'loads'"):
        lazydemo.loads  # noqa: B018 -- json has it, but the block does not import it


def test_type_checking_imports_reads_the_block_and_nothing_else():
    from mechrecall.lazy import type_checking_imports

    source = "import sys\nif TYPE_CHECKING:\n    from ..x import y as z\n    import a.b\nelse:\n    import c\n"
    assert type_checking_imports(source, "p.q.m") == {"z": ("p.x", "y"), "a": ("a", None)}


def test_mypy_fails_on_a_misspelt_part_reference(tmp_path):
    """A part named by a real reference is checked by mypy: a misspelt part function fails ``mypy`` (a string name
    failed only when the part ran). Uses the repository's mypy cache (seconds; about 20 s without one)."""
    pytest.importorskip("mypy")
    good = (
        "from analyses.papers import ic_recall as paper\nfrom mechrecall.experiment import Part\n\n"
        'PART = Part("exact", lambda ctx: paper.parts.part_exact(ctx), "h")\n'
    )
    errors, out = _mypy_errors(tmp_path, "entry", good, good.replace("part_exact(", "part_exactt("))
    assert len(errors) == 1 and "bad_entry.py:4" in errors[0] and '"part_exactt"' in errors[0], out


def _mypy_errors(tmp_path: Path, name: str, good: str, bad: str) -> tuple[list[str], str]:
    """mypy's error lines over ``good_<name>.py`` and ``bad_<name>.py`` (the repository's config and cache), and its
    whole output."""
    paths = [tmp_path / f"good_{name}.py", tmp_path / f"bad_{name}.py"]
    for path, source in zip(paths, (good, bad), strict=True):
        path.write_text(source)
    mypy = [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--cache-dir", ".mypy_cache"]
    done = subprocess.run([*mypy, *map(str, paths)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return [line for line in done.stdout.splitlines() if ": error:" in line], done.stdout


TYPED_TABLE = """
from mechrecall.claims import ClaimSpec, at_least
from mechrecall.typed import Entry, Maybe, Results


class Final(Entry):
    accuracy: float


class Toy(Results):
    final: Final
    panel: Maybe[Final]


CLAIMS = [
    ClaimSpec[Toy]("p.acc", "a", value=lambda r: r.final.accuracy, rule=at_least(0.5),
                   control=lambda r: r.panel.accuracy),
]
"""


def test_mypy_fails_on_a_misspelt_result_field(tmp_path):
    """A claim reads its number by attribute access on the part's typed results: a misspelt field fails ``mypy``
    (a slash-path string failed only when the part ran), while a read through a field that may hold a marker
    (``Maybe[...]``) type-checks."""
    pytest.importorskip("mypy")
    bad = TYPED_TABLE.replace("r.final.accuracy", "r.final.acuracy")
    errors, out = _mypy_errors(tmp_path, "claims", TYPED_TABLE, bad)
    assert len(errors) == 1 and "bad_claims.py:16" in errors[0] and '"acuracy"' in errors[0], out


def test_a_real_models_experiment_defaults_to_every_core_and_a_toys_to_one(monkeypatch):
    """``--threads``: the toys' steps are fastest on one thread; a pretrained model's forwards and SVDs
    (``laser_pythia``, ``Experiment(threads=None)``) take every core unless told otherwise."""
    import os

    from analyses.registry import experiment

    monkeypatch.setattr(os, "cpu_count", lambda: 7)
    assert experiment("laser_pythia").parser().parse_args([]).threads == 7
    assert experiment("laser_pythia").parser().parse_args(["--threads", "2"]).threads == 2
    assert experiment("noisy_icl").parser().parse_args([]).threads == 1
    assert "this machine's cores" in experiment("laser_pythia").parser().format_help()
