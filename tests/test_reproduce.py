"""The main job end to end on a tiny plan: ``analyses.report.reproduce`` with two workers.

Two small parts of two experiments (contextual recall's construction at the micro preset; LASER's factual part,
``not run`` here without Pythia weights) and one experiment that fails (a bad option): the claims file must hold
exactly the experiments' own rows, the failure must stay in its section, a rerun must skip what is finished, and
``report.html`` must render offline in headless Chromium with every claims table and figure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from analyses.report import readme_table, reproduce
from analyses.report.collect import collect
from analyses.report.render import write_report
from analyses.report.runner import Job, plan_jobs
from mechrecall.claims import judge_row
from mechrecall.errors import UsageError

torch.set_num_threads(1)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--proxy-server=http://127.0.0.1:9",  # every http(s) fetch fails ...
    "--host-resolver-rules=MAP * ~NOTFOUND",  # ... and so does every DNS lookup
    "--virtual-time-budget=5000",
    "--window-size=1200,1400",
]
JOBS = [
    Job("contextual_recall", "micro", ("construction",)),
    Job("laser_pythia", "paper", ("factual",)),
    Job("induction_emergence", "micro", ("exact",), {"thresholds": "5,5,5"}),  # fails: thresholds outside (0, 1)
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    report = reproduce(out, jobs=JOBS, workers=2, progress=False)
    return out, report


@pytest.mark.slow  # the module's tiny report: two workers, two experiments
def test_claims_json_holds_every_experiments_own_rows(run):
    out, report = run
    saved = json.loads((out / "report" / "claims.json").read_text())
    expected = []
    for name in ("contextual_recall", "laser_pythia"):
        expected += [
            dict(row, experiment=name) for row in json.loads((out / name / "results.json").read_text())["claims"]
        ]
    assert expected, "the experiments wrote no claims"
    assert [(r["id"], r["ours"], r["claim"], r["rule"]) for r in saved["claims"]] == [
        (r["id"], r["ours"], r["claim"], r["rule"]) for r in expected
    ]
    assert [r["verdict"] for r in saved["claims"]] == [judge_row(r) for r in expected]
    assert saved["summary"] == {v: sum(r["verdict"] == v for r in expected) for v in saved["summary"]}
    laser = [r for r in saved["claims"] if r["experiment"] == "laser_pythia"]
    assert laser and all(r["verdict"] == "not run" and r["reason"] for r in laser)
    assert report["records"]["contextual_recall"]["status"] == "done"


@pytest.mark.slow  # the module's tiny report: two workers, two experiments
def test_a_failing_experiment_stays_in_its_section(run):
    out, report = run
    sections = {s["experiment"]: s for s in report["experiments"]}
    assert sections["induction_emergence"]["status"] == "failed"
    assert "thresholds" in sections["induction_emergence"]["error"]
    assert sections["contextual_recall"]["status"] == "done" and sections["laser_pythia"]["status"] == "done"
    md = (out / "report" / "report.md").read_text()
    section = md.split("### `induction_emergence`")[1]
    assert "**Failed:**" in section and "thresholds" in section
    assert "thresholds" in (out / "report" / "logs" / "induction_emergence.exact.log").read_text()


@pytest.mark.slow  # the module's tiny report: two workers, two experiments
def test_markdown_and_readme_table(run):
    out, report = run
    md = (out / "report" / "report.md").read_text()
    for s in report["experiments"]:
        if s["paper"]:
            assert f"## {s['paper']}" in md
        for fig in s["figures"]:
            assert (fig["file"] or fig["caption"]) in md
    table = readme_table(out)
    assert table.splitlines()[0].startswith("| experiment | claim | paper | ours | control | rule | verdict")
    assert len(table.splitlines()) == 2 + len(report["claims"])


@pytest.mark.slow  # the module's tiny report: two workers, two experiments
def test_a_rerun_skips_what_is_finished(run):
    out, _ = run
    results = out / "contextual_recall" / "results.json"
    before = results.stat().st_mtime_ns
    again = reproduce(out, jobs=JOBS[:2], workers=1, progress=False)
    assert results.stat().st_mtime_ns == before, "a finished part was run again"
    assert again["records"]["contextual_recall"]["status"] == "done"
    assert again["records"]["contextual_recall"]["parts"] == {"construction": "done earlier, kept"}


def test_plan_and_options():
    names = [j.name for j in plan_jobs("quick")]
    assert {"noisy_icl", "laser_pythia", "contextual_recall", "induction_emergence"} <= set(names)
    jobs = {j.name: j for j in plan_jobs("quick", only=["laser_pythia", "contextual_recall"], model="/m")}
    assert set(jobs) == {"laser_pythia", "contextual_recall"}
    assert jobs["laser_pythia"].options == {"model": ["/m"]} and jobs["contextual_recall"].options == {"model": "/m"}
    assert not jobs["laser_pythia"].offline and all(j.offline for j in plan_jobs("quick"))
    with pytest.raises(UsageError, match="unknown experiment"):
        plan_jobs("quick", only=["nope"])


def test_only_takes_parts_of_an_experiment():
    jobs = plan_jobs("smoke", only=["ic_recall:exact", "induction_emergence:exact", "ic_recall:pattern"], seeds=(0, 1))
    assert sorted((j.name, j.parts, j.seed) for j in jobs) == [
        ("ic_recall", ("exact",), 0),
        ("ic_recall", ("exact",), 1),
        ("ic_recall", ("pattern",), 0),
        ("ic_recall", ("pattern",), 1),
        ("induction_emergence", ("exact",), 0),
        ("induction_emergence", ("exact",), 1),
    ]
    whole = plan_jobs("quick", only=["induction_emergence:exact", "induction_emergence"])  # the whole one wins
    assert {j.parts[0] for j in whole} == {j.parts[0] for j in plan_jobs("quick", only=["induction_emergence"])}
    with pytest.raises(UsageError, match=r"--only ic_recall:nope: ic_recall has no part 'nope' in the quick report"):
        plan_jobs("quick", only=["ic_recall:nope"])
    with pytest.raises(UsageError, match="no part 'finetune' in the quick report; expected one of main, theory"):
        plan_jobs("quick", only=["noisy_icl:finetune"])  # a part of the paper report only


@pytest.mark.parametrize("report_preset", ["quick", "smoke", "paper"])
def test_every_report_judges_at_a_preset_comparable_to_the_papers(report_preset):
    from analyses.registry import experiment

    for job in plan_jobs(report_preset):
        presets = experiment(job.name).preset_values()
        assert presets is None or presets[job.preset].comparable, (job.name, job.preset)


def test_cli_seed_and_seeds_together_are_refused_in_one_line(capsys):
    from analyses.reproduce import main

    assert main(["--seeds", "0-2", "--seed", "1"]) == 2
    assert capsys.readouterr().err.strip().endswith("--seed 1 with --seeds; expected one of them")


@pytest.mark.parametrize(
    ("argv", "seeds"),
    [
        ([], (0,)),
        (["--preset", "smoke"], (0, 1, 2, 3, 4)),
        (["--preset", "smoke", "--seed", "4"], (4,)),
        (["--seeds", "1,3"], (1, 3)),
    ],
)
def test_cli_seeds_default_to_three_for_the_smoke_report_and_one_otherwise(monkeypatch, tmp_path, argv, seeds):
    import analyses.report
    from analyses.reproduce import main

    asked = {}

    def fake(out, **kw):
        asked.update(kw)
        raise KeyboardInterrupt  # stop before any work

    monkeypatch.setattr(analyses.report, "reproduce", fake)
    assert main(["--out", str(tmp_path), *argv]) == 130
    assert tuple(asked["seeds"]) == seeds


def test_cli_help_imports_no_torch():
    """``--help`` answers without the heavy imports (its time is benchmarks/bench_help.py's)."""
    code = "import sys; from analyses.reproduce import parser; parser().format_help(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


# --------------------------------------------------------------------------- the page in a browser


def _attention_section(root: Path) -> None:
    """An experiment folder whose part saved two CircuitsVis attention pages (as the demos do) and a checkpoint."""
    from analyses.attention_html import save_attention_html
    from mechrecall.builder import build_toy_model

    model = build_toy_model(
        dict(n_layers=1, n_heads=2, d_model=16, d_head=8, d_vocab=20, n_ctx=16, attn_only=True), [], seed=0
    )
    save_attention_html(root / "toy" / "attention.html", model, torch.tensor([1, 2, 3, 1, 2, 3]), 0)
    save_attention_html(root / "toy" / "attention_h1.html", model, torch.tensor([4, 5, 4, 5]), 0, heads=[1])
    payload = {
        "paper": "A toy paper",
        "config": {"preset": "micro", "seed": 0},
        "parts": {"demo": {"status": "done", "figures": ["attention.html", "attention_h1.html"], "claims": []}},
        "claims": [],
    }
    (root / "toy" / "results.json").write_text(json.dumps(payload))
    # a trained toy model left behind by a run: the hand-built induction circuit, as the trainer saves it
    from mechrecall.checkpoint import save_checkpoint
    from tests.handbuilt import handbuilt_induction_model

    checkpoints = root / "toy" / "runs" / "demo" / "checkpoints"
    save_checkpoint(checkpoints / "step-00000001", handbuilt_induction_model(), step=1)
    (checkpoints / "latest.json").write_text(json.dumps({"name": "step-00000001", "step": 1}))


@pytest.mark.slow  # the module's tiny report: two workers, two experiments
def test_report_html_renders_offline_in_headless_chromium(run, tmp_path):
    if CHROMIUM is None:
        pytest.skip("Chromium not installed: no `chromium` or `chromium-browser` on PATH")
    out, report = run
    _attention_section(out)
    names = [j.name for j in JOBS] + ["toy"]
    full = collect(out, names, report["records"], "test")
    page = write_report(full, out)["html"]
    html = page.read_text()
    assert not re.search(r"<(script|img|link)[^>]*\b(src|href)=[\"']?(https?:)?//", html), "fetches from the network"

    done = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    dom = re.sub(r"<script\b.*?</script\s*>", "", done.stdout, flags=re.S | re.I)
    papers = {s["paper"] for s in full["experiments"] if s["paper"]}
    for paper in papers:
        assert f"<h2>{paper}</h2>".replace("&", "&amp;") in dom
    for s in full["experiments"]:
        rows = [r for r in full["claims"] if r["experiment"] == s["experiment"]]
        if rows:
            table = re.search(rf'<table class="claims" data-experiment="{s["experiment"]}">(.*?)</table>', dom, re.S)
            assert table, f"no claims table for {s['experiment']}"
            assert table.group(1).count('<tr class="claim"') == len(rows)
        for fig in [f for f in s["figures"] if f["file"]]:
            tag = "div" if fig["file"].endswith(".html") else "img"
            found = re.findall(rf'<{tag}\b[^>]*title="{re.escape(fig["file"])}[^"]*"[^>]*>', dom) or re.findall(
                rf'<{tag}\b[^>]*alt="{re.escape(fig["file"])}[^"]*"[^>]*>', dom
            )
            assert found, f"figure {fig['file']} missing"
            assert 'data-rendered="yes"' in found[0], f"figure {fig['file']} did not render: {found[0][:300]}"
    circuit = [f for s in full["experiments"] for f in s["figures"] if "circuits/toy/" in f["file"]]
    assert len(circuit) == 1 and "L0H0 → L1H1 by K-composition" in circuit[0]["caption"]
    assert 'class="failed"' in dom
    assert html.count("var CircuitsVis=") == 1, "the CircuitsVis bundle is not included exactly once"


def test_an_out_that_is_a_file_is_refused_before_any_experiment_runs(tmp_path):
    (tmp_path / "file").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "analyses.reproduce", "--out", str(tmp_path / "file"), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "exists and is not a folder" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_report_over_seeds_plans_a_job_per_seed_and_merges_each_claim(tmp_path):
    jobs = plan_jobs("quick", only=["induction_emergence"], seeds=(0, 1))
    parts = {key: [j.parts[0] for j in jobs if j.key == key] for key in dict.fromkeys(j.key for j in jobs)}
    assert set(parts) == {"induction_emergence/seed0", "induction_emergence/seed1"}  # one job per part and seed
    assert all(j.folder == f"seed{j.seed}" and j.id == f"{j.key}:{j.parts[0]}" for j in jobs)
    assert "ode" in parts["induction_emergence/seed0"]  # the exact part runs once, at seed 0
    assert "ode" not in parts["induction_emergence/seed1"] and len(parts["induction_emergence/seed1"]) > 1
    from mechrecall.claims import Claim, at_least

    for seed, ours in ((0, 0.95), (1, 0.5)):
        row = Claim(id="toy.p.c", claim="c", ours=ours, rule=at_least(0.9), control=0.1, control_is="untrained").row()
        payload = {"paper": "P", "config": {"preset": "smoke", "seed": seed}, "parts": {}, "claims": [row]}
        (tmp_path / f"seed{seed}" / "toy").mkdir(parents=True)
        (tmp_path / f"seed{seed}" / "toy" / "results.json").write_text(json.dumps(payload))
    report = collect(tmp_path, ["toy"], folders={"toy": ["seed0", "seed1"]}, circuits=False)
    (row,) = report["claims"]
    assert row["seeds"] == [0, 1] and row["passed"] == 1 and row["spread"] == [0.5, 0.95]
    assert row["verdict"] == "partial" and report["experiments"][0]["seed"] == [0, 1]
    md = write_report(report, tmp_path)["md"].read_text()
    assert "| 0.725 [0.5, 0.95] | 0.1 (untrained) |" in md and "| 0, 1 (1/2 passed) |" in md


def test_a_worker_exits_when_the_report_process_is_killed(tmp_path):
    """A parent killed outright (SIGKILL: no cleanup) leaves no worker writing on (``runner.watch_parent``)."""
    pid_file = tmp_path / "worker.pid"
    parent = (
        "import multiprocessing, os, sys, time\n"
        "from mechrecall.executors.local import watch_parent\n"
        "def sleep(path):\n"
        "    open(path, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        "if __name__ == '__main__':\n"
        "    ctx = multiprocessing.get_context('spawn')\n"
        "    from concurrent.futures import ProcessPoolExecutor\n"
        "    pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=watch_parent, initargs=(os.getpid(), 0.1))\n"
        f"    pool.submit(sleep, {str(pid_file)!r})\n"
        "    time.sleep(60)\n"
    )
    script = tmp_path / "parent.py"  # a file: spawned workers import the function they run from it
    script.write_text(parent)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=Path(__file__).resolve().parents[1])
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        assert _alive(worker)  # alive while its parent is
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(worker):
        os.kill(worker, 9)
        raise AssertionError("the worker outlived its killed parent")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped by its new parent, does not)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_two_parts_of_one_experiment_run_side_by_side_and_both_are_kept(tmp_path):
    """Part-level jobs of one experiment on two workers write one ``results.json`` holding both parts."""
    from analyses.report.runner import run_all

    jobs = [Job("laser_pythia", "paper", (part,), offline=True) for part in ("factual", "factual20")]
    records = run_all(jobs, tmp_path, workers=2, progress=False)
    assert set(records) == {"laser_pythia"}
    assert records["laser_pythia"]["parts"] == {"factual": "done", "factual20": "done"}
    payload = json.loads((tmp_path / "laser_pythia" / "results.json").read_text())
    assert set(payload["parts"]) == {"factual", "factual20"}


def test_job_records_merge_per_experiment_run():
    from analyses.report.runner import merge_records

    jobs = [Job("x", "smoke", ("a",)), Job("x", "smoke", ("b",)), Job("x", "smoke", ("a",), seed=1, folder="seed1")]
    by_id = {
        "x:a": {"status": "done", "error": "", "seconds": 2.0, "parts": {"a": "done"}},
        "x:b": {"status": "failed", "error": "worker: killed", "seconds": 1.0, "parts": {}},  # the worker died
        "x/seed1:a": {"status": "done", "error": "", "seconds": 3.0, "parts": {"a": "done"}},
    }
    merged = merge_records(jobs, by_id)
    assert merged["x"] == {
        "name": "x",
        "seed": 0,
        "status": "failed",
        "error": "worker: killed",
        "seconds": 3.0,
        "parts": {"a": "done", "b": "failed"},
    }
    assert merged["x/seed1"]["status"] == "done" and merged["x/seed1"]["parts"] == {"a": "done"}


def test_a_part_measured_on_another_seed_is_costed_by_its_median_time(tmp_path):
    from analyses.report.runner import make_task, measured_seconds

    def results(folder: str, parts: dict) -> None:
        path = tmp_path / folder / "x" / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"experiment": "x", "config": {"preset": "smoke"}, "parts": parts}))

    results("seed0", {"a": {"status": "done", "seconds": 100.0}, "b": {"status": "failed", "seconds": 50.0}})
    results("seed1", {"a": {"status": "done", "seconds": 400.0}, "c": {"status": "done", "seconds": 0.5}})
    results("seed2", {"a": {"status": "done", "seconds": 130.0}})
    (tmp_path / "seed3" / "x").mkdir(parents=True)
    (tmp_path / "seed3" / "x" / "results.json").write_text("{not json")  # unreadable: skipped
    assert measured_seconds(tmp_path) == {("x", "smoke", "a"): 130.0}  # b failed, c resumed in an instant
    job = Job("x", "smoke", ("a",), minutes=2.0)
    assert make_task(job, tmp_path, True).seconds == 120.0 and make_task(job, tmp_path, True, 130.0).seconds == 130.0
