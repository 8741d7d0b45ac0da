"""The sweep command (``python -m analyses.sweep``): the grid and its folders, every bad input refused before any work,
and an end-to-end sweep of a micro part over 2 values × 2 seeds whose table, summary and figure are checked against
each job's own ``results.json``, with a grid that grows (only the new points run, their files shipped back as from a
Ray node) and a rerun that runs nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analyses.registry import experiment
from analyses.report.collect import collect_sweeps
from analyses.report.sweep import (
    Axis,
    Sweep,
    parse_grid,
    plan_sweep,
    points,
    resolve_measures,
    run_sweep,
    slug,
    summarise,
    sweep_figure,
    value_slug,
)
from analyses.sweep import main
from mechrecall.errors import UsageError
from mechrecall.executors.local import LocalExecutor


def test_the_grid_is_the_product_of_the_axes_first_axis_outermost():
    axes = parse_grid(experiment("noisy_icl"), ["steps=10,20,30", "--d-model=16,32"])
    assert [(a.dest, a.flag, a.values) for a in axes] == [
        ("steps", "--steps", (10, 20, 30)),
        ("d_model", "--d-model", (16, 32)),
    ]
    grid = points(axes)
    assert len(grid) == 6 and grid[0] == {"steps": 10, "d_model": 16} and grid[1] == {"steps": 10, "d_model": 32}
    assert [slug(p) for p in grid[:2]] == ["steps=10__d_model=16", "steps=10__d_model=32"]
    assert len({slug(p) for p in grid}) == 6


def test_values_are_parsed_by_their_options_type_choices_and_list_form():
    noisy = experiment("noisy_icl")
    (alpha,) = parse_grid(noisy, ["alpha=0.25,1e-05"])
    assert alpha.values == (0.25, 1e-05) and all(isinstance(v, float) for v in alpha.values)
    (data,) = parse_grid(noisy, ["data-preset=official_code,paper_text"])
    assert data.values == ("official_code", "paper_text")
    (ns,) = parse_grid(experiment("induction_emergence"), ["ns=2,4;2,4,8"])  # a list option: values split on ';'
    assert ns.values == ((2, 4), (2, 4, 8))
    (bos,) = parse_grid(experiment("laser_pythia"), ["prepend_bos=true,false"])
    assert bos.values == (True, False)
    assert [value_slug(v) for v in (0.25, 1e-05, (2, 4, 8), True, "a/b c")] == [
        "0.25",
        "1e-05",
        "2-4-8",
        "true",
        "a-b-c",
    ]


def test_default_measures_are_every_claim_of_the_part_and_names_resolve():
    exp = experiment("induction_emergence")
    own = [s.id.split(".", 1)[1] for s in exp.claim_table() if s.part == "demo"]
    measures = resolve_measures(exp, "demo", None)
    assert [m.name for m in measures] == own and {m.kind for m in measures} == {"claim"} and len(own) >= 2
    full, short, part_id, entry = resolve_measures(
        exp, "demo", [f"induction_emergence.demo.{own[0]}", own[1], f"demo.{own[2]}", "final/accuracy"]
    )
    assert (full.name, full.ref) == (own[0], f"induction_emergence.demo.{own[0]}")
    assert (short.kind, part_id.name, entry.kind, entry.ref) == ("claim", own[2], "entry", "final/accuracy")


@pytest.mark.parametrize(
    "target,grid,kwargs,words",
    [
        ("noisy_icl:main", ["nope=1"], {}, "has no option 'nope'"),
        ("noisy_icl:main", ["steps=ten"], {}, "--steps takes an integer"),
        ("noisy_icl:main", ["steps=10,0"], {}, "--steps 0; expected an integer >= 1"),
        ("noisy_icl:main", ["alpha=0.5,1.5"], {}, "--alpha 1.5; expected a number in [0, 1]"),
        ("noisy_icl:main", ["lr=0"], {}, "--lr 0.0; expected a number > 0"),
        ("noisy_icl:main", ["lr=nan"], {}, "--lr nan"),
        ("noisy_icl:main", ["data_preset=paper"], {}, "expects one of official_code, paper_text"),
        ("noisy_icl:main", ["steps=10,10"], {}, "a value is given twice"),
        ("noisy_icl:main", ["steps=10", "steps=20"], {}, "on the grid twice"),
        ("noisy_icl:main", ["steps"], {}, "expected NAME=V1,V2"),
        ("noisy_icl:main", [], {}, "at least one NAME=V1,V2"),
        ("nope:main", ["steps=1"], {}, "expected EXPERIMENT:PART"),
        ("noisy_icl", ["steps=1"], {}, "expected EXPERIMENT:PART"),
        ("noisy_icl:nope", ["steps=1"], {}, "unknown part"),
        ("noisy_icl:ioi", ["steps=1"], {"preset": "smoke"}, "not part of --preset smoke"),
        ("noisy_icl:main", ["steps=1"], {"preset": "huge"}, "--preset 'huge'"),
        ("noisy_icl:theory", ["alpha=0.5"], {"seeds": (0, 1)}, "does not depend on a seed"),
        ("noisy_icl:main", ["steps=1"], {"seeds": ()}, "expected distinct seeds"),
        ("noisy_icl:main", ["steps=1"], {"measures": ["main.nope"]}, "no claim of that id"),
        ("ic_recall:pattern", ["workers=1,2"], {}, "does not change the numbers"),
        ("induction_emergence:demo", ["n_pairs=8,16"], {}, "--n-pairs 16; expected an integer in [1, 15]"),
        ("noisy_icl:main", ["steps=1"], {"name": "../elsewhere"}, "--name '../elsewhere'; expected one folder"),
        ("noisy_icl:main", ["steps=1"], {"name": ".."}, "--name '..'; expected one folder"),
    ],
)
def test_a_bad_sweep_is_one_line_before_any_work(tmp_path, target, grid, kwargs, words):
    with pytest.raises(UsageError) as caught:
        plan_sweep(tmp_path, target, grid, **{"seeds": (0,), **kwargs})
    message = str(caught.value)
    assert words in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_sweep_folder_of_another_configuration_is_refused(tmp_path):
    sweep = plan_sweep(tmp_path, "induction_emergence:demo", ["steps=5"], preset="micro")
    results = sweep.folder / sweep.jobs[0].folder / "induction_emergence" / "results.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"config": {"preset": "smoke", "seed": 0, "options": {}}}))
    with pytest.raises(UsageError, match=r"another configuration .*preset: 'smoke' there, 'micro' now.*--name"):
        plan_sweep(tmp_path, "induction_emergence:demo", ["steps=5"], preset="micro")
    assert plan_sweep(tmp_path, "induction_emergence:demo", ["steps=5"], preset="micro", name="other").jobs


def test_the_command_line_says_a_bad_value_in_one_line_and_exits_2(tmp_path, capsys):
    code = main(["noisy_icl:main", "--grid", "steps=0", "--out", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == "python -m analyses.sweep: error: --steps 0; expected an integer >= 1"
    code = main(["noisy_icl:main", "--grid", "steps=1", "--out", str(tmp_path), "--address", "auto"])
    assert code == 2 and "--address is an option of --executor ray" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def _summary(rows):
    return pd.DataFrame(rows, columns=["steps", "d_model", "measure", "mean", "min", "max", "n", "verdicts"])


def test_the_figure_draws_one_line_per_value_of_the_other_axes_at_the_mean_with_its_band():
    axes = [Axis("steps", "--steps", (10, 20, 40)), Axis("d_model", "--d-model", (16, 32))]
    sweep = Sweep(
        "noisy_icl",
        "main",
        "micro",
        axes,
        (0, 1),
        resolve_measures(experiment("noisy_icl"), "main", ["a"]),
        Path("."),
        [],
    )
    rows = [(s, d, "a", s * d / 100, s * d / 100 - 1, s * d / 100 + 1, 2, "") for s in (10, 20, 40) for d in (16, 32)]
    fig = sweep_figure(sweep, _summary(rows))
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in lines] == ["d_model=16", "d_model=32"]
    for line, d in zip(lines, (16, 32)):
        assert list(line.get_xdata()) == [10.0, 20.0, 40.0]
        assert list(line.get_ydata()) == pytest.approx([s * d / 100 for s in (10, 20, 40)])
    assert len(ax.collections) == 2  # a min-max band per line
    assert ax.get_xlabel() == "steps" and "over steps {10, 20, 40} × d_model {16, 32}" in fig.texts[0].get_text()


class Unshared(LocalExecutor):
    """Local workers treated as on another machine (as Ray's): the runner ships each job's files back."""

    shared_out = False


@pytest.mark.slow
def test_a_sweep_end_to_end_table_summary_figure_resume(tmp_path):
    target, exp = "induction_emergence:demo", experiment("induction_emergence")
    names = [m.name for m in resolve_measures(exp, "demo", None)]
    plan = dict(seeds=(0, 1), preset="micro", measures=[*names, "final/accuracy"])
    first = run_sweep(plan_sweep(tmp_path, target, ["steps=5"], **plan), workers=2, progress=False)
    assert not first["failed"] and len(first["table"]) == 2
    grown = plan_sweep(tmp_path, target, ["steps=5,15"], **plan)  # the grid grows: only steps=15 runs
    second = run_sweep(grown, executor=Unshared(workers=2), progress=False, command="the command")
    assert [j["kept"] for j in second["jobs"]] == [True, True, False, False] and not second["failed"]

    folder = tmp_path / "sweeps" / "induction_emergence.demo"
    table = pd.read_csv(folder / "table.csv")
    assert list(table[["steps", "seed"]].itertuples(index=False, name=None)) == [(5, 0), (5, 1), (15, 0), (15, 1)]
    for row in table.to_dict("records"):  # every cell is the job's own number
        payload = json.loads(
            (folder / f"steps={row['steps']}" / f"seed{row['seed']}" / exp.name / "results.json").read_text()
        )
        assert payload["config"]["seed"] == row["seed"] and payload["config"]["options"]["steps"] == row["steps"]
        part = payload["parts"]["demo"]
        assert row["final/accuracy"] == pytest.approx(part["results"]["final"]["accuracy"])
        for name in names:
            claim = next(c for c in part["claims"] if c["id"] == f"induction_emergence.demo.{name}")
            assert row[name] == pytest.approx(claim["ours"]) and row[f"{name}.verdict"] == "not comparable"
    assert table["final/accuracy"].nunique() == 4  # seeds and steps differ: no row copied from another

    summary = pd.read_csv(folder / "summary.csv")
    for steps in (5, 15):
        values = table.loc[table["steps"] == steps, "final/accuracy"]
        got = summary[(summary["steps"] == steps) & (summary["measure"] == "final/accuracy")].iloc[0]
        assert (got["mean"], got["min"], got["max"], got["n"]) == pytest.approx(
            (sum(values) / 2, min(values), max(values), 2)
        )
        verdicts = summary[(summary["steps"] == steps) & (summary["measure"] == names[0])].iloc[0]["verdicts"]
        assert verdicts == "not comparable 2/2"
        in_report = next(
            r
            for r in collect_sweeps(tmp_path)[0]["rows"]
            if r["point"] == {"steps": str(steps)} and r["measure"] == "final/accuracy"
        )  # what the report shows is this summary
        assert (in_report["mean"], in_report["n"], in_report["control"]) == pytest.approx((sum(values) / 2, 2, None))
    assert (folder / "figure.png").stat().st_size > 10_000
    fig = sweep_figure(grown, summarise(grown, table))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(" ")[0] for ax in panels] == [*names, "final/accuracy"]
    for ax in panels:
        assert len([line for line in ax.get_lines() if not line.get_label().startswith("_")]) == 1
    logs = sorted(p.name for p in (folder / "logs").iterdir())
    assert logs == [
        "progress.log",
        "steps=15.seed0.log",
        "steps=15.seed1.log",
        "steps=5.seed0.log",
        "steps=5.seed1.log",
    ]
    meta = json.loads((folder / "sweep.json").read_text())
    assert meta["grid"] == {"steps": [5, 15]} and meta["command"] == "the command" and meta["seeds"] == [0, 1]

    rerun = run_sweep(grown, workers=2, progress=False)  # nothing left to run
    assert all(j["kept"] for j in rerun["jobs"]) and rerun["table"].equals(second["table"])
    starts = [line for line in (folder / "logs" / "progress.log").read_text().splitlines() if "job(s) to run" in line]
    assert [line.split(" ", 2)[2].split(";")[0] for line in starts] == [
        "2 job(s) to run, 0 finished earlier",
        "2 job(s) to run, 2 finished earlier",
        "0 job(s) to run, 4 finished earlier",
    ]


def test_cli_help_imports_no_torch_and_mechrecall_sweep_is_the_same_command():
    import subprocess
    import sys

    code = "import sys\nfrom analyses.sweep import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
    code += "print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().endswith("False") and "--grid NAME=V1,V2" in done.stdout, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "analyses.registry", "sweep", "noisy_icl:main", "--grid", "steps=0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--steps 0; expected an integer >= 1" in done.stderr


@pytest.mark.parametrize("named,code", [(True, 2), (False, 0)])
def test_a_measure_in_no_job_is_an_error_when_named_and_a_note_otherwise(capsys, named, code):
    from analyses.sweep import report

    result = {
        "summary": _summary([]),
        "paths": {"table": "t.csv"},
        "failed": [],
        "missing": {"final.accuracy": "not measured: the results have no entry 'final.accuracy'"},
        "measures_named": named,
    }
    assert report(result) == code
    err = capsys.readouterr().err
    assert ("error: --measure final.accuracy" in err) == named
    assert ("note: 1 claim(s) of the part have no value in any job, left out: final.accuracy" in err) == (not named)
