"""A sweep in the run folder shows in the report (Markdown, HTML), in docs/claims.md (its figure copied beside it)
and in the README's summary: every number read from the sweep's own ``summary.csv``, none copied from elsewhere."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from analyses.report import update_readme, write_claims_doc
from analyses.report.collect import collect_sweeps
from analyses.report.render import SUMMARY_END, SUMMARY_START, html_page, markdown, summary_md

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
SUMMARY = """steps,measure,mean,min,max,n,verdicts
1000,counts,-0.47,-0.49,-0.46,3,not reproduced 3/3
1000,counts.control,0.0,0.0,0.0,3,
1000,accuracy,0.2,0.1,0.3,3,
3000,counts,-0.35,-0.63,-0.06,3,not reproduced 3/3
3000,counts.control,0.0,0.0,0.0,3,
3000,accuracy,nan,nan,nan,0,
"""


def _out(tmp_path: Path) -> Path:
    """A run folder with one report section (``alpha``) and two sweeps: one of ``alpha``, one of ``gamma``."""
    out = tmp_path / "runs"
    for name, experiment in (("alpha.ioi", "alpha"), ("gamma.main", "gamma")):
        folder = out / "sweeps" / name
        folder.mkdir(parents=True)
        (folder / "summary.csv").write_text(SUMMARY, encoding="utf-8")
        (folder / "figure.png").write_bytes(PNG)
        meta = {
            "schema": "mechrecall.sweep/1",
            "command": f"python -m analyses.sweep {experiment}:ioi --grid steps=1000,3000 --seeds 0-2",
            "experiment": experiment,
            "part": "ioi",
            "preset": "laptop",
            "grid": {"steps": [1000, 3000]},
            "seeds": [0, 1, 2],
            "jobs": [{"status": "done"}] * 5 + [{"status": "failed"}],
        }
        (folder / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    (out / "sweeps" / "broken").mkdir()
    (out / "sweeps" / "broken" / "sweep.json").write_text("{", encoding="utf-8")  # skipped, not fatal
    return out


def _report(out: Path) -> dict:
    section = {"experiment": "alpha", "paper": "A (Doe)", "preset": "laptop", "seed": 0, "status": "done"}
    section.update(error="", figures=[])
    return {
        "preset": "quick",
        "created": "2026-01-02T03:04:05+00:00",
        "experiments": [section],
        "claims": [],
        "sweeps": collect_sweeps(out),
    }


def test_collect_reads_each_sweeps_summary_pairs_each_measure_with_its_control(tmp_path):
    sweeps = collect_sweeps(_out(tmp_path))
    assert [s["name"] for s in sweeps] == ["alpha.ioi", "gamma.main"]
    first = sweeps[0]
    assert (first["jobs_done"], first["jobs"], first["figure"]) == (5, 6, "sweeps/alpha.ioi/figure.png")
    assert first["rows"] == [
        {
            "point": {"steps": "1000"},
            "measure": "counts",
            "mean": -0.47,
            "min": -0.49,
            "max": -0.46,
            "n": 3,
            "control": 0.0,
            "verdicts": "not reproduced 3/3",
        },
        {
            "point": {"steps": "1000"},
            "measure": "accuracy",
            "mean": 0.2,
            "min": 0.1,
            "max": 0.3,
            "n": 3,
            "control": None,
            "verdicts": "",
        },
        {
            "point": {"steps": "3000"},
            "measure": "counts",
            "mean": -0.35,
            "min": -0.63,
            "max": -0.06,
            "n": 3,
            "control": 0.0,
            "verdicts": "not reproduced 3/3",
        },
    ]  # fmt: skip  (3000's accuracy has no value in any seed: left out)


def test_report_shows_each_sweep_under_its_experiment_and_the_others_apart(tmp_path):
    out = _out(tmp_path)
    report = _report(out)
    md = markdown(report)
    alpha, apart = md.index("### `alpha`"), md.index("## Sweeps of experiments not in this report")
    assert alpha < md.index("Along a scale axis: alpha:ioi (laptop preset) over steps {1000, 3000}; seeds 0, 1, 2")
    assert apart < md.index("Along a scale axis: gamma:ioi")
    assert "| steps | measure | ours: mean [min, max] (seeds) | control (mean) | verdicts |" in md
    assert "| 3000 | counts | -0.35 [-0.63, -0.06] (3) | 0 | not reproduced 3/3 |" in md
    assert "| 1000 | accuracy | 0.2 [0.1, 0.3] (3) | — | — |" in md
    assert "5 of 6 jobs done (folder `sweeps/alpha.ioi/`)" in md
    assert "![sweep alpha.ioi](../sweeps/alpha.ioi/figure.png)" in md
    page = html_page(report, out)
    assert page.count('<div class="sweep"') == 2 and "<td>-0.35 [-0.63, -0.06] (3)</td>" in page
    assert page.count(base64.b64encode(PNG).decode()) == 2  # each figure embedded


def test_claims_doc_copies_the_figures_and_the_readme_lists_each_sweeps_first_measure(tmp_path):
    out = _out(tmp_path)
    report = _report(out)
    (out / "report").mkdir()
    (out / "report" / "claims.json").write_text(json.dumps(report), encoding="utf-8")
    doc = write_claims_doc(out, tmp_path / "docs" / "claims.md")
    assert (tmp_path / "docs" / "sweeps" / "alpha.ioi.png").read_bytes() == PNG
    text = doc.read_text(encoding="utf-8")
    assert "![sweep alpha.ioi](sweeps/alpha.ioi.png)" in text and "gamma" not in text  # no gamma section here
    summary = summary_md(report)
    assert (
        "| `alpha:ioi` (laptop) | counts | steps=1000: -0.47 [-0.49, -0.46], not reproduced 3/3; "
        "steps=3000: -0.35 [-0.63, -0.06], not reproduced 3/3 |" in summary
    )
    readme = tmp_path / "README.md"
    readme.write_text(f"{SUMMARY_START}\n{SUMMARY_END}\n", encoding="utf-8")
    update_readme(out, readme)
    assert "every measure and the figures: [docs/claims.md](docs/claims.md)" in readme.read_text(encoding="utf-8")
    assert "Along a scale axis" not in summary_md({**report, "sweeps": []})


def test_a_sweep_run_after_the_report_is_added_to_it(tmp_path):
    from analyses.report import refresh_sweeps
    from analyses.report.render import write_report

    out = _out(tmp_path)
    assert refresh_sweeps(out) is None  # no report there: nothing written
    write_report({**_report(out), "sweeps": []}, out)
    assert "Along a scale axis" not in (out / "report" / "report.md").read_text(encoding="utf-8")
    paths = refresh_sweeps(out)
    assert "Along a scale axis: alpha:ioi" in paths["md"].read_text(encoding="utf-8")
    assert [s["name"] for s in json.loads(paths["claims"].read_text())["sweeps"]] == ["alpha.ioi", "gamma.main"]


def test_default_measures_leave_out_the_claims_no_job_measured(tmp_path):
    from analyses.report.sweep import plan_sweep, write_sweep

    sweep = plan_sweep(tmp_path, "noisy_icl:ioi", ["steps=5"], preset="micro")
    assert not sweep.named and len(sweep.measures) > 2
    measured = [m for m in sweep.measures if m.name in ("adam_L3_counts", "adam_L3_accuracy_gain")]
    rule = {"kind": "at_least", "lo": 0.5, "hi": None, "partial": [0.2, None]}
    claims = [{"id": m.ref, "ours": 0.25, "control": 0.0, "rule_spec": rule} for m in measured]
    job = sweep.folder / sweep.jobs[0].folder / "noisy_icl"
    job.mkdir(parents=True)
    (job / "results.json").write_text(json.dumps({"parts": {"ioi": {"status": "done", "claims": claims}}}))
    meta = write_sweep(sweep, {})
    assert [m["name"] for m in meta["measures"]] == ["adam_L3_counts", "adam_L3_accuracy_gain"]
    assert set(meta["missing"]) == {m.name for m in sweep.measures} - {"adam_L3_counts", "adam_L3_accuracy_gain"}
    assert set(meta["summary"]["measure"]) == {
        f"{m}{c}" for m in ("adam_L3_counts", "adam_L3_accuracy_gain") for c in ("", ".control")
    }


def test_a_recorded_command_is_quoted_as_a_user_types_it():
    from analyses.report.scale import user_command

    recorded = (
        "python -m analyses.sweep noisy_icl:ioi --preset laptop --out /work/s --workers 1 --no-progress --seeds 0-2"
    )
    assert user_command(recorded) == "python -m analyses.sweep noisy_icl:ioi --preset laptop --seeds 0-2"
    assert user_command("python -m analyses.sweep x:y --out=/tmp/a --grid steps=1,2") == (
        "python -m analyses.sweep x:y --grid steps=1,2"
    )
