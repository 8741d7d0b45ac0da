"""The paper-scale ledger: the step probe's counts against closed forms, the window's choice of jobs, the kept
results' provenance and the ledger generated from them."""

from __future__ import annotations

import json

import pytest
import torch

from analyses.report import ledger, measured, window
from mechrecall import probe
from mechrecall.batch import Batch
from mechrecall.errors import UsageError
from mechrecall.trainer import TrainConfig, train

B, I, O = 8, 16, 24


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(I, O) / I**0.5)


def _loss(model: Linear, batch: Batch) -> torch.Tensor:
    return ((batch.tokens[:, 0] @ model.W) ** 2).mean()


def _batch(step: int, gen: torch.Generator) -> Batch:
    return Batch(tokens=torch.randn(B, 1, I, generator=gen), targets=torch.zeros(B, dtype=torch.long))


def test_probe_times_a_few_steps_counts_flops_by_closed_form_and_measures_a_shape_once(tmp_path, monkeypatch):
    file = tmp_path / "probe.jsonl"
    monkeypatch.setenv(probe.ENV_FILE, str(file))
    monkeypatch.setenv(probe.ENV_STEPS, "2")
    cfg = TrainConfig(steps=500, optimizer="sgd", lr=0.1, eval_every=100, progress=False)
    evals = {"w": lambda m: float(m.W.sum())}
    result = train(Linear(), _batch, cfg, loss_fn=_loss, evals=evals, out_dir=tmp_path / "a")
    assert result.step == probe.WARMUP + 2 and len(result.history["train"]) == probe.WARMUP + 2
    assert [r["step"] for r in result.history["eval"]] == [0, 1, 2, 3]  # cheap: a series, as a part may read
    (line,) = probe.records(file)
    # forward x @ W: 2·B·I·O; backward, the weight's gradient only (x needs none): 2·B·I·O
    assert line["flops_per_step"] == 4 * B * I * O
    assert line["steps"] == 500 and line["probed"] == 2 and line["evals"] == 6  # steps 0, 100, ..., 500
    assert line["seconds_per_step"] > 0 and line["params"] == I * O and line["batch"] == [B, 1, I]
    expected = 500 * line["seconds_per_step"] + 6 * line["eval_seconds"]
    assert probe.estimate_seconds([line]) == pytest.approx(expected)

    again = train(Linear(), _batch, TrainConfig(**{**cfg.to_dict(), "seed": 7}), loss_fn=_loss, evals=evals)
    assert again.step == 1 and len(again.history["train"]) == 1  # the same shape: measured once, one step untimed
    assert [r["step"] for r in again.history["eval"]] == [0, 1]  # still a series
    second = probe.records(file)[1]
    assert second["same_as"] == 0 and second["seconds_per_step"] == line["seconds_per_step"]

    wider = TrainConfig(**{**cfg.to_dict(), "lr": 0.2})  # another config: a shape of its own
    assert train(Linear(), _batch, wider, loss_fn=_loss).step == probe.WARMUP + 2


def test_without_the_probe_training_runs_every_step(tmp_path, monkeypatch):
    monkeypatch.delenv(probe.ENV_FILE, raising=False)
    cfg = TrainConfig(steps=7, optimizer="sgd", lr=0.1, progress=False)
    result = train(Linear(), _batch, cfg, loss_fn=_loss)
    assert result.step == 7 and len(result.history["train"]) == 7


def test_budgets_parse_and_bad_ones_are_one_line():
    assert window.parse_budget("12m") == 720 and window.parse_budget("90s") == 90
    assert window.parse_budget("1.5h") == 5400 and window.parse_budget("600") == 600
    for bad in ("", "12 minutes", "-3m", "0"):
        with pytest.raises(UsageError, match="--budget"):
            window.parse_budget(bad)


def test_the_window_packs_the_longest_jobs_that_fit_and_lets_one_per_lane_run_on():
    est = {"a": 500.0, "b": 400.0, "c": 300.0, "d": 200.0, "e": 5000.0, "f": 50.0}
    picks = window.choose(est, budget=600.0, lanes=2)
    fits = {p.part: p.lane for p in picks if p.finishes}
    # longest first into the emptier lane: a → 0, b → 1, c does not fit either, d → 1 (600), f → 0 (550)
    assert fits == {"a": 0, "b": 1, "d": 1, "f": 0}
    for lane in (0, 1):
        assert sum(p.seconds for p in picks if p.finishes and p.lane == lane) <= 600
    (partial,) = [p for p in picks if not p.finishes]
    assert (partial.part, partial.lane) == ("e", 0)  # the longest left over, in the lane with time left
    assert window.choose({}, 600.0, 3) == []
    with pytest.raises(UsageError, match="--lanes 0"):
        window.choose(est, 600.0, 0)


def _fake_run(root, experiment="induction_emergence", part="demo", seeds=(0, 1), options=None, ours=1.0):
    """A report folder as a run leaves it: per seed, the experiment's results.json, one part done, one failed."""
    for seed in seeds:
        claims = [
            {
                "id": f"{experiment}.{part}.x",
                "claim": "x",
                "paper": 1.0,
                "ours": ours + seed * 1e-3,
                "control": 0.0,
                "rule": "≥ 0.5",
                "rule_spec": {"kind": "at_least", "lo": 0.5, "hi": None, "partial": None},
                "verdict": "reproduced",
                "comparable": True,
                "class": "paper",
                "scale": {},
                "at_scale": "paper",
            },
            {
                "id": f"{experiment}.other.y",
                "claim": "y",
                "paper": 1.0,
                "ours": 0.0,
                "control": 0.0,
                "rule": "≥ 0.5",
                "rule_spec": {"kind": "at_least", "lo": 0.5, "hi": None, "partial": None},
                "verdict": "not reproduced",
            },
        ]
        payload = {
            "experiment": experiment,
            "config": {"preset": "paper", "seed": seed, "options": options or {}},
            "claims": claims,
            "parts": {
                part: {"status": "done", "seconds": 12.0, "figures": ["f.png"]},
                "other": {"status": "failed", "seconds": 3.0},
            },
            "figures": ["f.png"],
        }
        path = root / f"seed{seed}" / experiment / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(payload))


def test_a_kept_run_has_its_provenance_and_only_the_parts_that_finished(tmp_path):
    _fake_run(tmp_path / "out")
    kept = measured.keep(tmp_path / "out", device="cpu", runs=tmp_path / "runs", name="paper-cpu-x")
    prov = json.loads((kept / "provenance.json").read_text())
    assert prov["preset"] == "paper" and prov["seeds"] == [0, 1] and prov["device"] == "cpu"
    assert prov["parts"] == {"induction_emergence:demo": {"seeds": [0, 1], "seconds": [12.0, 12.0], "changed": []}}
    assert {"commit", "date", "cpu", "torch"} <= set(prov["machine"])
    stored = json.loads((kept / "seed1" / "induction_emergence" / "results.json").read_text())
    assert list(stored["parts"]) == ["demo"] and stored["figures"] == []
    (run,) = measured.kept_runs(tmp_path / "runs")
    rows = measured.kept_rows([run])
    assert [r["id"] for r in rows] == ["induction_emergence.demo.x"]  # the failed part's claim is not shown
    assert rows[0]["verdict"] == "reproduced" and rows[0]["per_seed"] and rows[0]["kept"] == "paper-cpu-x"
    with pytest.raises(FileNotFoundError, match="no finished part"):
        measured.keep(tmp_path / "out", runs=tmp_path / "runs", only=["noisy_icl"])
    again = measured.keep(tmp_path / "out", device="cpu", runs=tmp_path / "runs")
    assert measured.keep(tmp_path / "out", device="cpu", runs=tmp_path / "runs").name == again.name + "-2"
    with pytest.raises(FileNotFoundError, match=r"no <experiment>/results\.json"):
        measured.keep(tmp_path / "empty", runs=tmp_path / "runs")


def test_kept_runs_of_one_part_are_judged_together_over_their_seeds(tmp_path):
    runs = tmp_path / "runs"
    _fake_run(tmp_path / "first", seeds=(0, 1), ours=0.1)
    measured.keep(tmp_path / "first", runs=runs, name="paper-cpu-a")
    _fake_run(tmp_path / "later", seeds=(1, 2), ours=0.9)  # seed 1 again: the later run's stands
    measured.keep(tmp_path / "later", runs=runs, name="paper-cpu-b")
    _fake_run(tmp_path / "set", seeds=(0,), options={"set": ["standard.d_model=64"]})
    measured.keep(tmp_path / "set", runs=runs, name="paper-cpu-c")
    _fake_run(tmp_path / "twin", experiment="noisy_icl", seeds=(0,))  # another experiment's part of the same name
    measured.keep(tmp_path / "twin", runs=runs, name="paper-cpu-d")
    full, twin, changed = measured.kept_rows(measured.kept_runs(runs))  # the paper's sizes first
    assert twin["part"] == "noisy_icl:demo" and twin["seeds"] == [0] and full["part"] == "induction_emergence:demo"
    assert full["seeds"] == [0, 1, 2] and full["kept"] == "paper-cpu-a, paper-cpu-b" and full["changed"] == []
    assert [s["ours"] for s in full["per_seed"]] == pytest.approx([0.1, 0.901, 0.902])
    assert full["passed"] == 2 and full["verdict"] != "reproduced"  # seed 0 misses the rule (≥ 0.5)
    assert changed["seeds"] == [0] and changed["kept"] == "paper-cpu-c"
    assert changed["changed"] == ["standard.d_model=64"]


def test_the_ledger_lists_every_part_with_its_probe_and_what_ran(tmp_path, monkeypatch):
    probes, runs = tmp_path / "probe", tmp_path / "runs"
    probes.mkdir()
    line = {
        "run": "main",
        "steps": 2000,
        "evals": 11,
        "probed": 3,
        "seconds_per_step": 2.0,
        "flops_per_step": 4e9,
        "eval_seconds": 1.0,
        "spent": 9.0,
    }
    part = {
        "part": "noisy_icl:main",
        "kind": "train",
        "wall_s": 60.0,
        "exit": 0,
        "runs": [line],
        "estimate_s": 60.0 - 9.0 + 2000 * 2.0 + 11 * 1.0,
    }
    m = ledger.machine()
    (probes / "cpu.json").write_text(json.dumps({"machine": m, "matmul_flops_one_core": 4e9, "parts": [part]}))
    monkeypatch.setattr(ledger, "PROBES", probes)
    monkeypatch.setattr(ledger, "MEASURED", tmp_path)
    monkeypatch.setattr(measured, "RUNS", runs)
    walls = {"device": "GPU-X", "date": "2026-01-01", "parts": {"noisy_icl:theory": {"wall_s": 9, "status": "done"}}}
    (tmp_path / "gpu_walls.json").write_text(json.dumps({"windows": [walls]}))
    _fake_run(tmp_path / "out")
    measured.keep(tmp_path / "out", device="cpu", runs=runs, name="paper-cpu-x")
    text = measured.ledger_md()
    refs = ledger.paper_parts()
    for ref in refs:
        assert f"`{ref.id}`" in text
    row = next(r for r in text.splitlines() if r.startswith("| `noisy_icl:main`"))
    assert "d_model 256 (192)" in row and "| 4e+09 |" in row and "2,000 (1 runs)" in row
    assert "| 0.50 |" in row  # 4e9 FLOPs in 2 s over one core's 4e9 FLOP/s
    assert "67.7 min" in row and "13 s (est.)" in row and "not yet (fits here)" in row
    theory = next(r for r in text.splitlines() if r.startswith("| `noisy_icl:theory`"))
    assert "9 s (measured, GPU-X 2026-01-01, seed 0; not kept)" in theory and "not probed" in theory
    demo = next(r for r in text.splitlines() if r.startswith("| `induction_emergence:demo`"))
    assert "run (cpu; seeds 0, 1 of 3)" in demo and "1 reproduced at the paper's scale" in demo
    assert (
        "1 of the" in text
        and "(their paper claims: 1 reproduced at the paper's scale)" in text
        and "`paper-cpu-x`" in text
        and "1 fit 2 h on one core of this machine, 0 of them with every seed they need" in text
    )
    _fake_run(tmp_path / "main", "noisy_icl", "main", seeds=(0, 1, 2))  # the part that fits: its 3 seeds
    _fake_run(tmp_path / "exact", "induction_emergence", "ode", seeds=(0,))  # no seed
    for folder in ("main", "exact"):
        measured.keep(tmp_path / folder, device="cpu", runs=runs, name=f"paper-cpu-{folder}")
    rows = {line.split(" | ")[0]: line for line in measured.ledger_md().splitlines() if line.startswith("| `")}
    assert "run (cpu; seeds 0, 1, 2)" in rows["| `noisy_icl:main`"]
    assert "run (cpu; exact: no seed)" in rows["| `induction_emergence:ode`"]
    assert "1 fit 2 h on one core of this machine, 1 of them with every seed they need" in measured.ledger_md()
    assert "3 of the" in measured.ledger_md()
    reduced = {"set": ["weights_dim=8"]}  # --set: the paper's sizes but one axis
    _fake_run(tmp_path / "reduced", "induction_emergence", "weights", seeds=(0, 1, 2), options=reduced)
    measured.keep(tmp_path / "reduced", device="cpu", runs=runs, name="paper-cpu-reduced")
    text = measured.ledger_md()
    row = next(r for r in text.splitlines() if r.startswith("| `induction_emergence:weights`"))
    assert "run (cpu; seeds 0, 1, 2; the paper's sizes but weights_dim=8)" in row
    assert "3 of the" in text  # not at the paper's sizes: not counted
    _fake_run(tmp_path / "unknown", "induction_emergence", "standard", seeds=(0,), options={"turbo": 1})
    with pytest.raises(ValueError, match=r"induction_emergence \(seed 0\): unknown option\(s\) \['turbo'\]"):
        measured.keep(tmp_path / "unknown", device="cpu", runs=runs, name="paper-cpu-unknown")
    coverage = measured.ledger_md().splitlines()[4]
    _fake_run(tmp_path / "batch", "induction_emergence", "standard", seeds=(0,), options={"batch": 64})  # --batch
    measured.keep(tmp_path / "batch", device="cpu", runs=runs, name="paper-cpu-batch")
    assert measured.ledger_md().splitlines()[4] == coverage  # its claims are not the paper's sizes' either
    row = next(r for r in measured.ledger_md().splitlines() if r.startswith("| `induction_emergence:standard`"))
    assert "run (cpu; seeds 0 of 3; the paper's sizes but standard.batch_size=64)" in row
    assert "| the paper's but standard.batch_size 512 (64) |" in row  # the largest run here, field by field
    _fake_run(tmp_path / "more", seeds=(2,))  # the demo part's third seed, in a run of its own
    measured.keep(tmp_path / "more", device="cpu", runs=runs, name="paper-cpu-more")
    demo = next(r for r in measured.ledger_md().splitlines() if r.startswith("| `induction_emergence:demo`"))
    assert "run (cpu; seeds 0, 1, 2)" in demo and demo.endswith("| 1 reproduced at the paper's scale |")
    _fake_run(tmp_path / "narrow", seeds=(0,), options={"set": ["standard.d_model=64"]}, ours=0.0)
    measured.keep(tmp_path / "narrow", device="cpu", runs=runs, name="paper-cpu-narrow")  # beside the full size
    demo = next(r for r in measured.ledger_md().splitlines() if r.startswith("| `induction_emergence:demo`"))
    assert "run (cpu; seeds 0, 1, 2; and the paper's sizes but standard.d_model=64: seeds 0 of 3)" in demo
    assert demo.endswith("| 1 reproduced at the paper's scale |")  # the verdicts are the paper's sizes' alone


def test_a_run_in_flight_shows_as_running_with_the_seeds_it_started_and_finished(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger, "MEASURED", tmp_path)
    monkeypatch.setattr(measured, "RUNS", tmp_path / "runs")
    (tmp_path / "gpu_walls.json").write_text(json.dumps({"windows": []}))
    out = tmp_path / "paper2"
    (out / "report").mkdir(parents=True)
    (out / "report" / "progress.log").write_text(
        "2026-11-28 05:37:58 3 job(s) to run, 0 finished earlier; 0/3 jobs done\n"
        "2026-11-28 05:37:58 started induction_emergence/seed0:demo; 0/3 jobs done, 1 running\n"
        "2026-11-28 05:38:58 done induction_emergence/seed0:demo in 60 s; 1/3 jobs done\n"
        "2026-11-28 05:38:58 started induction_emergence/seed1:demo; 1/3 jobs done, 1 running\n"
        "2026-11-28 05:38:59 started ic_recall/seed0:sample_complexity/partial-adam-n8-seed3; a sweep cell\n"
        "2026-11-28 05:39:00 started noisy_icl/seed2:main; 1/3 jobs done, 2 running\n"
    )
    assert measured.in_flight([out], "cpu") == [
        {"part": "induction_emergence:demo", "device": "cpu", "out": "paper2", "seeds_started": [0, 1],
         "seeds_done": [0]},
        {"part": "noisy_icl:main", "device": "cpu", "out": "paper2", "seeds_started": [2], "seeds_done": []},
    ]  # fmt: skip
    measured.record_in_flight([out], "cpu")
    _fake_run(tmp_path / "kept", seeds=(0,))  # seed 0 of the demo part is kept already
    measured.keep(tmp_path / "kept", device="cpu", runs=tmp_path / "runs", name="paper-cpu-x")
    rows = {line.split(" | ")[0]: line for line in measured.ledger_md().splitlines() if line.startswith("| `")}
    assert "run (cpu; seeds 0 of 3); running (cpu, as of " in rows["| `induction_emergence:demo`"]
    assert "seeds started 1)" in rows["| `induction_emergence:demo`"]  # seed 0 is kept: not listed again
    assert "running (cpu, as of" in rows["| `noisy_icl:main`"] and "seeds started 2)" in rows["| `noisy_icl:main`"]
    assert "running" not in rows["| `ic_recall:sample_complexity`"]  # a sweep cell is not the part's job
    with pytest.raises(FileNotFoundError, match=r"no report/progress\.log"):
        measured.in_flight([tmp_path / "nothing"], "cpu")


def test_the_report_shows_kept_rows_beside_the_fresh_ones_with_their_own_headline(tmp_path, monkeypatch):
    from analyses.report import collect, render

    runs = tmp_path / "runs"
    _fake_run(tmp_path / "out")
    measured.keep(tmp_path / "out", device="cuda", runs=runs, name="paper-cuda-x")
    monkeypatch.setattr(measured, "RUNS", runs)
    rows = collect.kept_rows(["induction_emergence"])
    assert [r["id"] for r in rows] == ["induction_emergence.demo.x"] and rows[0]["device"] == "cuda"
    assert collect.kept_rows(["noisy_icl"]) == []
    _fake_run(tmp_path / "narrow", seeds=(0,), options={"set": ["standard.d_model=64"]}, ours=0.0)
    measured.keep(tmp_path / "narrow", device="cpu", runs=runs, name="paper-cpu-y")
    rows = collect.kept_rows(["induction_emergence"])
    assert [r["kept"] for r in rows] == ["paper-cuda-x", "paper-cpu-y"]
    section = {
        "experiment": "induction_emergence",
        "paper": "P",
        "preset": "smoke",
        "seed": 0,
        "status": "done",
        "error": "",
        "parts": {},
        "figures": [],
        "results_json": "",
        "seconds": 1.0,
    }
    report = {
        "preset": "smoke",
        "created": "now",
        "claims": [],
        "experiments": [section],
        "kept": rows,
        "sweeps": [],
        "rule_problems": [],
    }
    md = render.markdown(report)
    assert render.KEPT_TITLE in md and "paper-cuda-x" in md
    assert (
        "Kept runs at the paper's sizes (committed, not re-run): paper claims at the paper's scale: 1 reproduced;"
        " at reduced scale: no claims. Kept runs with a preset field changed: paper claims at the paper's scale:"
        " 1 not reproduced" in md
    )
    assert "| paper-cpu-y (the paper's sizes but standard.d_model=64) | cpu |" in md
    page = render.html_page(report, tmp_path)
    assert 'class="kept"' in page and "paper-cuda-x" in page
    assert render.kept_line({**report, "kept": []}) == ""


@pytest.mark.slow
def test_a_window_on_cpu_runs_the_chosen_jobs_stops_the_rest_at_the_deadline_and_keeps_the_results(
    tmp_path, monkeypatch, capsys
):
    """``reproduce --preset paper --device cpu --budget``: the ledger's estimates choose the jobs (a fake probe:
    one exact part that finishes, one long part that runs to the deadline), the finished part's results are kept
    with their provenance, the long one is stopped and left to resume."""
    from analyses import reproduce

    probes = tmp_path / "probe"
    probes.mkdir()
    parts = [
        {
            "part": "induction_emergence:exact",
            "kind": "train",
            "wall_s": 10.0,
            "exit": 0,
            "runs": [],
            "estimate_s": 10.0,
        },
        {"part": "noisy_icl:main", "kind": "train", "wall_s": 60.0, "exit": 0, "runs": [], "estimate_s": 50000.0},
    ]
    (probes / "cpu.json").write_text(json.dumps({"machine": ledger.machine(), "parts": parts}))
    monkeypatch.setattr(ledger, "PROBES", probes)
    monkeypatch.setattr(measured, "RUNS", tmp_path / "committed")
    out = tmp_path / "w"
    argv = [
        "--preset",
        "paper",
        "--device",
        "cpu",
        "--budget",
        "90s",  # the exact part takes 15-20 s alone; a loaded machine (two suites at once) needs the margin
        "--lanes",
        "2",
        "--out",
        str(out),
        "--only",
        "induction_emergence:exact",
        "noisy_icl:main",
    ]
    code = reproduce.main(argv)
    text = capsys.readouterr().out
    assert code == 0, text
    assert "induction_emergence:exact (est. 10 s; finishes)" in text
    assert "noisy_icl:main (est. 13.9 h; runs to the deadline (resumable))" in text
    assert "induction_emergence:exact: done" in text and "noisy_icl:main: stopped" in text
    (kept,) = (out / "kept").iterdir()
    prov = json.loads((kept / "provenance.json").read_text())
    assert list(prov["parts"]) == ["induction_emergence:exact"] and prov["device"] == "cpu"
    assert (out / "window" / "noisy_icl").is_dir()  # the stopped part's folder, to bring back and resume
    assert reproduce.main([*argv[:6], "--budget", "soon"]) == 2
    assert "--budget 'soon'" in capsys.readouterr().err


def test_a_gpu_windows_estimates_prefer_a_measured_wall_then_the_cpu_probes_flops(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger, "MEASURED", tmp_path)
    walls = {
        "device": "H",
        "date": "d",
        "parts": {"a:x": {"wall_s": 100, "status": "done"}, "b:y": {"wall_s": 400, "status": "stopped"}},
    }
    (tmp_path / "gpu_walls.json").write_text(json.dumps({"windows": [walls]}))
    run = {"steps": 1000, "seconds_per_step": 1.0, "flops_per_step": 1e12, "evals": 0, "eval_seconds": 0.0}
    cpu = {
        "matmul_flops_one_core": 1e10,
        "parts": [{"part": p, "estimate_s": 1000.0, "exit": 0, "runs": [run]} for p in ("a:x", "b:y", "c:z")],
    }
    refs = [ledger.PartRef(*p.split(":"), "train", "") for p in ("a:x", "b:y", "c:z")]
    est = window.estimates_for("cuda", refs, {"cpu": cpu})
    assert est["a:x"] == 100.0  # measured in a window
    assert est["c:z"] == pytest.approx(1000 * 1e12 / ledger.GPU_FLOPS)  # 20 s of steps; no rest
    assert est["b:y"] == 400.0  # stopped at 400 s: at least that
    assert window.estimates_for("cpu", refs, {"cpu": cpu}) == {"a:x": 1000.0, "b:y": 1000.0, "c:z": 1000.0}


def test_the_paper_scale_command_says_what_is_wrong_in_one_line(tmp_path, capsys, monkeypatch):
    from analyses import paper_scale

    assert paper_scale.main(["--keep", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no <experiment>/results.json" in err
    assert paper_scale.main(["--probe", "--only", "noisy_icl:nope"]) == 2
    assert "--only noisy_icl:nope; expected an experiment or EXP:PART" in capsys.readouterr().err
    assert paper_scale.main(["--probe", "--workers", "0"]) == 2
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")  # no markers
    assert paper_scale.main(["--ledger", str(tmp_path / "l.md"), "--update-readme", str(readme)]) == 2
    assert "paper-scale:start" in capsys.readouterr().err
    readme.write_text("# x\n<!-- paper-scale:start -->\nold\n<!-- paper-scale:end -->\n")
    assert paper_scale.main(["--ledger", str(tmp_path / "docs" / "l.md"), "--update-readme", str(readme)]) == 0
    text = readme.read_text()
    assert "[docs/l.md](docs/l.md)" in text and "toy-model parts have run at the paper's sizes" in text
    assert "| part |" in (tmp_path / "docs" / "l.md").read_text()
