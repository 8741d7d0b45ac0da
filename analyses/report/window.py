"""A GPU window used in full: the paper preset's longest jobs that fit a time budget, several at once on one
device, unfinished ones left resumable, the finished ones' results packed to bring back.

``python -m analyses.reproduce --preset paper --device cuda --budget 12m`` reads the ledger (the probe's estimate
of each part on that device, :mod:`analyses.report.ledger`), leaves out the parts already kept at the paper preset
on a GPU, and :func:`choose` s the jobs: longest first into ``lanes`` parallel lanes, each lane within the
budget; a lane with time left takes one more job that cannot finish (it trains until the deadline, writing its
checkpoints, and the next window resumes it). At the deadline the jobs still running are stopped. The window's
``OUT/window/`` holds every part's output (checkpoints included: the toys' weights are megabytes) and
``OUT/kept/`` the finished results with their provenance (:func:`analyses.report.measured.keep`): bring both
back, commit ``kept/`` under ``analyses/measured/runs/``, and copy ``window/`` into the next window's ``OUT``.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.report import ledger
from mechrecall.errors import UsageError


def parse_budget(text: str) -> float:
    """``"12m"`` / ``"90s"`` / ``"1.5h"`` / ``"600"`` (seconds) → seconds; a one-line :class:`UsageError` else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--budget {text!r}; expected a positive duration such as 12m, 90s or 1.5h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


@dataclass(frozen=True)
class Pick:
    """A chosen job: its part, lane, estimated seconds and whether it can finish within the budget."""

    part: str
    lane: int
    seconds: float
    finishes: bool


def choose(estimates: Mapping[str, float], budget: float, lanes: int) -> list[Pick]:
    """Jobs for one window: each part's estimated seconds on the device, longest first, into ``lanes`` lanes that
    each stay within ``budget``; then each lane with time left takes the longest job left over, which runs until
    the deadline and is resumed by the next window. Parts with no estimate are not chosen."""
    if lanes < 1:
        raise UsageError(f"--lanes {lanes}; expected >= 1")
    load = [0.0] * lanes
    picks: list[Pick] = []
    left = []
    for part, seconds in sorted(estimates.items(), key=lambda kv: (-kv[1], kv[0])):
        lane = min(range(lanes), key=lambda i: load[i])
        if load[lane] + seconds <= budget:
            load[lane] += seconds
            picks.append(Pick(part, lane, seconds, True))
        else:
            left.append((part, seconds))
    for lane in sorted(range(lanes), key=lambda i: load[i]):
        if left and load[lane] < budget:
            part, seconds = left.pop(0)
            picks.append(Pick(part, lane, seconds, False))
            load[lane] = budget
    return picks


def estimates_for(device: str, refs: Sequence[Any], probes: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Each training part's estimated seconds on ``device``: its own probe there if one was made, else from the
    CPU probe (:func:`analyses.report.ledger.gpu_estimate` for a GPU, the CPU estimate for ``cpu``)."""
    from mechrecall import probe

    kind = "cpu" if device == "cpu" else device.split(":")[0]
    walls = ledger.gpu_walls() if kind != "cpu" else {}
    out = {}
    for ref in refs:
        wall = walls.get(ref.id)
        if wall and wall["status"] == "done":  # measured in an earlier window (its results not kept)
            out[ref.id] = float(wall["wall_s"])
            continue
        own = next((p for p in probes.get(kind, {}).get("parts", []) if p["part"] == ref.id), None)
        cpu = next((p for p in probes.get("cpu", {}).get("parts", []) if p["part"] == ref.id), None)
        if own and "estimate_s" in own:
            out[ref.id] = float(own["estimate_s"])
        elif cpu and "estimate_s" in cpu and kind != "cpu":
            rest = max(cpu["estimate_s"] - probe.estimate_seconds(cpu["runs"]), 0.0)
            rate = float(probes["cpu"].get("matmul_flops_one_core") or 3e10)
            out[ref.id] = max(ledger.gpu_estimate(cpu["runs"], rest / 10, rate), float((wall or {}).get("wall_s", 0)))
    return out


def plan(device: str, budget: float, lanes: int, seed: int, only: Sequence[str] | None = None) -> list[Pick]:
    """The window's picks: the paper plan's training parts not yet kept at the paper preset from this kind of
    device for ``seed`` (``only``: ``EXP`` or ``EXP:PART``), chosen by their estimates on ``device``."""
    from analyses.report import measured

    gpu = device != "cpu"
    done = {
        p
        for r in measured.kept_runs()
        if r["preset"] == "paper" and (r["device"] != "cpu") == gpu and seed in r["seeds"]
        for p in r["parts"]
    }
    refs = [r for r in ledger.paper_parts() if r.kind == "train" and r.id not in done]
    if only:
        refs = [r for r in refs if r.id in only or r.experiment in only]
    return choose(estimates_for(device, refs, ledger.load_probes()), budget, lanes)


def run_window(
    out: str | Path,
    picks: Sequence[Pick],
    budget: float,
    device: str,
    seed: int = 0,
    threads: int = 1,
    poll: float = 1.0,
) -> dict[str, Any]:
    """Run each lane's picks one after another, the lanes at once, until ``budget`` seconds; stop what still runs
    then. Returns ``{part: {"status": done|failed|stopped, "seconds": s}}``; logs in ``OUT/window/logs/``."""
    out = Path(out)
    work, logs = out / "window", out / "window" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    queues = {lane: [p for p in picks if p.lane == lane] for lane in sorted({p.lane for p in picks})}
    running: dict[int, tuple[Pick, subprocess.Popen, float, Any]] = {}
    outcome: dict[str, dict[str, Any]] = {}
    env = {**os.environ, "MPLBACKEND": "Agg"}
    deadline = time.monotonic() + budget
    while (queues and any(queues.values())) or running:
        for lane, queue in queues.items():
            if lane not in running and queue and time.monotonic() < deadline:
                pick = queue.pop(0)
                # the log stays open while its job runs; closed when the job ends or is stopped (below)
                log = open(logs / f"{pick.part.replace(':', '.')}.log", "a", encoding="utf-8")  # noqa: SIM115
                proc = subprocess.Popen(
                    ledger.part_command(pick.part, work, "paper", threads, device=device, seed=seed),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
                running[lane] = (pick, proc, time.monotonic(), log)
        for lane, (pick, proc, started, log) in list(running.items()):
            code = proc.poll()
            late = code is None and time.monotonic() >= deadline
            if late:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if code is not None or late:
                log.close()
                status = "stopped" if late else ("done" if code == 0 else "failed")
                outcome[pick.part] = {"status": status, "seconds": round(time.monotonic() - started, 1)}
                del running[lane]
        if time.monotonic() >= deadline and not running:
            break
        time.sleep(poll)
    for queue in queues.values():
        for pick in queue:
            outcome.setdefault(pick.part, {"status": "not started", "seconds": 0.0})
    return outcome
