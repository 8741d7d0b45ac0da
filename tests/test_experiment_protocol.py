"""The experiment protocol (``mechrecall.experiment``) and claims as data (``mechrecall.claims``), on toy parts."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from mechrecall.claims import VERDICTS, Claim, at_least, at_most, between, is_true, judge_row, near, summary
from mechrecall.errors import UsageError
from mechrecall.experiment import Experiment, Option, Part, PartResult

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
    assert summary(rows) == dict(zip(VERDICTS, (1, 1, 1, 1)))


# --------------------------------------------------------------------------- the run loop

CALLS: list[str] = []


def _part(name, value):
    def run(ctx):
        CALLS.append(name)
        if ctx.options["fail"] == name:
            raise RuntimeError(f"{name} broke")
        if ctx.options["fail"] == f"{name}:nan":  # what mechrecall.trainer raises on a diverging run
            raise FloatingPointError("training loss is nan at step 3; lower the learning rate")
        return PartResult(
            {"value": value, "seed": ctx.seed},
            [ctx.claim(name, "value", f"{name} value", value, at_least(1.0, partial=0.5))],
            {f"{name}.html": f"<p>{name}</p>"},
        )

    return run


def _check(ctx):
    if ctx.options["scale"] <= 0:
        raise UsageError(f"--scale {ctx.options['scale']}; expected > 0")


TOY = Experiment(
    name="toy",
    paper="A Toy Paper",
    summary="Toy parts.",
    parts=(
        Part("first", _part("first", 2.0), "one"),
        Part("second", _part("second", 0.7), "two"),
        Part("big", _part("big", 0.0), "paper only", presets=("paper",)),
    ),
    options=(
        Option("--scale", type=float, default=1.0, help="a number"),
        Option("--fail", default="", compare=False, help="the part to break"),
    ),
    check=_check,
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
    assert [c["verdict"] for c in data["claims"]] == ["reproduced", "partial"]
    assert data["summary"]["reproduced"] == 1 and data["summary"]["partial"] == 1
    assert data["figures"] == ["first.html", "second.html"] and "big" not in data["parts"]  # not in micro
    assert _read(tmp_path) == json.loads(json.dumps(data))
    # another configuration is refused, naming the difference; --fresh starts over
    with pytest.raises(UsageError, match=r"options.scale: 1.0 there, 2.0 now"):
        TOY.run(tmp_path, preset="micro", options={"scale": 2.0})
    CALLS.clear()
    TOY.run(tmp_path, preset="micro", options={"scale": 2.0}, fresh=True)
    assert CALLS == ["first", "second"]


def test_bad_input_is_refused_before_any_work(tmp_path):
    CALLS.clear()
    for kwargs, message in (
        ({"options": {"scale": 0}}, "--scale 0"),
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
    assert TOY.run(tmp_path / "s", preset="smoke", parts=["first"])["claims"][0]["note"] == ""


@pytest.mark.parametrize("module", ["analyses.noisy_icl", "analyses.laser_pythia", "analyses.induction_emergence"])
def test_cli_user_errors_are_one_line_without_traceback(module, tmp_path):
    (tmp_path / "f").write_text("")
    for args in (
        ["--out", str(tmp_path / "f")],
        ["--device", "gpu0", "--out", str(tmp_path / "o")],
        ["--threads", "0"],
        ["--experiment", "nope", "--out", str(tmp_path / "o")],
    ):
        done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2, done.stderr
    assert not (tmp_path / "o").exists()
