"""The paper-scale ledger: every part of every experiment at the papers' own sizes — what one training step costs,
how long the paper preset takes here and on a GPU, and whether it has run (``docs/paper-scale.md``).

The costs come from a **probe** (:mod:`mechrecall.probe`): each part runs at the paper preset with every training
run cut to a few timed steps, its FLOPs per step counted, and everything else (data, evaluations, SVDs) at full
size, so a part's estimated wall time is its probed wall time, less the probe's own training, plus each run's
``steps x seconds per step + evaluations x seconds per evaluation``. The probe of a machine is stored as JSON in
``analyses/measured/probe/`` (:func:`probe_all`); the ledger (:func:`ledger_md`) renders it with the paper-scale
results kept in ``analyses/measured/`` (:mod:`analyses.report.measured`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEASURED = Path(__file__).resolve().parent.parent / "measured"
PROBES = MEASURED / "probe"
#: A part that fits "here" runs its paper preset within this on one core (the issue's "≤ 2 h on 2 cores", one
#: part per core).
FITS_HERE_S = 2 * 3600.0
#: The GPU estimate where no window has measured a part: a step costs its FLOPs at this sustained rate, and never
#: less than the floor (a toy's step is kernel launches, not arithmetic). Assumptions, printed with the ledger.
GPU_FLOPS, GPU_STEP_FLOOR_S = 50e12, 0.004


@dataclass(frozen=True)
class PartRef:
    """One part of an experiment's paper preset; ``kind``: ``train`` (toys it trains), ``pretrained`` (reads a
    real model: timed by ``benchmarks/bench_pretrained_shapes.py`` instead); ``seeding``: ``seeded`` (one run per
    seed), ``exact`` (no seed: runs once) or ``trials`` (runs once, over trial seeds of its own)."""

    experiment: str
    part: str
    kind: str
    help: str
    sizes: tuple[str, ...] | None = None
    seeding: str = "seeded"

    @property
    def id(self) -> str:
        return f"{self.experiment}:{self.part}"


def paper_parts() -> list[PartRef]:
    """Every part of the ``paper`` report plan, in the report's order."""
    from analyses.registry import experiment, experiments
    from analyses.report.plan import step

    refs = []
    for name in experiments():
        exp, s = experiment(name), step("paper", name)
        for part in exp.select_parts(s.parts, s.preset):
            p = next(q for q in exp.parts if q.name == part)
            seeding = "exact" if not p.seeded else "trials" if p.trials else "seeded"
            refs.append(PartRef(name, part, "pretrained" if p.pretrained else "train", p.help, p.sizes, seeding))
    return refs


def flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A preset as ``{"g.d_model": 256, "pattern.B.m": 64, ...}``: nested dataclasses, mappings, named tuples
    ``(("A", cell), ...)`` and sequences of records joined by dots; numbers and sequences of numbers as leaves."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif (
        isinstance(value, (tuple, list))
        and value
        and all(isinstance(v, (tuple, list)) and len(v) == 2 and isinstance(v[0], str) for v in value)
    ):
        value = dict(value)
    elif (
        isinstance(value, (tuple, list))
        and value
        and all(isinstance(v, Mapping) or dataclasses.is_dataclass(v) for v in value)
    ):
        value = {str(i): v for i, v in enumerate(value)}
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: value}


def _numeric(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (tuple, list)):
        return bool(value) and all(_numeric(v) for v in value)
    return isinstance(value, (int, float))


#: Numeric preset fields that are bookkeeping, not a size the ledger compares.
NOT_SIZES = {"seed", "log_every", "eval_every", "fig_nos", "checkpoint_every", "pt_eval_every", "ft_eval_every"}


def _selected(field: str, sizes: Sequence[str] | None) -> bool:
    """Whether a flattened preset field is one of a part's ``sizes`` (a field, or a prefix ending in . or _)."""
    if sizes is None:
        return True
    return any(field == p or field.startswith(p if p.endswith((".", "_")) else p + ".") for p in sizes)


def size_differences(experiment: str, here: str, sizes: Sequence[str] | None = None) -> list[tuple[str, Any, Any]]:
    """``(field, paper's value, value at preset `here`)`` for every numeric preset field of ``sizes`` (a part's
    :attr:`~mechrecall.experiment.Part.sizes`; ``None``: all) where the two presets differ."""
    from analyses.registry import experiment as lookup

    table = lookup(experiment).preset_values()
    if "paper" not in table or here not in table or here == "paper":
        return []
    paper, ours = flat(table["paper"]), flat(table[here])
    return [
        (k, v, ours.get(k))
        for k, v in paper.items()
        if _selected(k, sizes) and _numeric(v) and v != ours.get(k) and k.rsplit(".", 1)[-1] not in NOT_SIZES
    ]


def matmul_rate(threads: int = 1, n: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of a float32 ``n x n`` matmul on ``threads`` CPU threads (best of ``repeats``): the peak a training
    step's fraction is measured against."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
    finally:
        torch.set_num_threads(old)
    return 2 * n**3 / best


def part_command(
    part: str,
    out: Path,
    preset: str,
    threads: int,
    *,
    device: str | None = None,
    seed: int | None = None,
    fresh: bool = False,
) -> list[str]:
    """The command line that runs one part (``EXP:PART``) as a user runs it, its sweep's cells in-process."""
    from analyses.registry import experiment

    name, _, part_name = part.partition(":")
    cmd = [sys.executable, "-m", f"analyses.{name}", "--preset", preset, "--experiment", part_name]
    cmd += ["--out", str(out), "--threads", str(threads), "--no-progress"]
    cmd += ["--device", device] if device else []
    cmd += ["--seed", str(seed)] if seed is not None else []
    cmd += ["--fresh"] if fresh else []
    if any(o.dest == "workers" for o in experiment(name).options):
        cmd += ["--workers", "1"]
    return cmd


def probe_part(ref: PartRef, scratch: Path, preset: str = "paper", threads: int = 1, timeout: float = 900) -> dict:
    """Run ``ref`` at ``preset`` under the step probe in a child process; its wall time, runs and estimate."""
    from mechrecall import probe

    out = scratch / ref.id.replace(":", ".")
    out.mkdir(parents=True, exist_ok=True)
    file = out / "probe.jsonl"
    env = {**os.environ, probe.ENV_FILE: str(file), "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            part_command(ref.id, out, preset, threads, fresh=True),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        code, tail = proc.returncode, (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
    except subprocess.TimeoutExpired:
        code, tail = None, [f"probe stopped after {timeout:.0f} s"]
    wall = time.perf_counter() - start
    runs = [{k: v for k, v in r.items() if k != "key"} for r in probe.records(file)]
    row: dict[str, Any] = {
        "part": ref.id,
        "kind": ref.kind,
        "preset": preset,
        "wall_s": round(wall, 2),
        "exit": code,
        "runs": runs,
    }
    if code != 0:
        row["error"] = tail[0][-300:]
    if code is not None:
        row["estimate_s"] = round(wall - probe.probed_seconds(runs) + probe.estimate_seconds(runs), 1)
    else:  # at least this long: what it had not reached is unknown
        row["estimate_at_least_s"] = round(wall - probe.probed_seconds(runs) + probe.estimate_seconds(runs), 1)
    return row


def machine() -> dict[str, Any]:
    """Where a probe ran: the CPU, its cores, torch, the commit."""
    import torch

    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
        cpu = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "commit": _commit(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def probe_all(
    path: Path,
    refs: Iterable[PartRef],
    preset: str = "paper",
    workers: int = 2,
    timeout: float = 900,
    device: str = "cpu",
    redo: Iterable[str] = (),
) -> dict[str, Any]:
    """Probe every training part of ``refs`` (``workers`` at a time, one thread each) and write the probe to
    ``path``, part by part (a rerun keeps the parts already there, but those in ``redo``)."""
    from mechrecall.io import atomic_write_json

    done = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data = {
        **done,
        "machine": done.get("machine") or machine(),
        "device": device,
        "preset": preset,
        "matmul_flops_one_core": done.get("matmul_flops_one_core") or matmul_rate(1),
    }
    rows = {r["part"]: r for r in data.get("parts", [])}
    todo = [r for r in refs if r.kind == "train" and (r.id not in rows or r.id in set(redo))]
    with tempfile.TemporaryDirectory(prefix="probe-") as scratch, ThreadPoolExecutor(workers) as pool:
        for row in pool.map(lambda r: probe_part(r, Path(scratch), preset, 1, timeout), todo):
            rows[row["part"]] = row
            data["parts"] = list(rows.values())
            atomic_write_json(path, data)
            print(f"probed {row['part']}: {_hours(row)}", flush=True)
    return data


def _hours(row: Mapping[str, Any]) -> str:
    """A probed part's estimate: ``42 min``; ``> 3.7 d`` (stopped at the timeout); ``≥ 24 s (probe cut short:
    …)`` where the part failed on its barely trained model, so what came after is not in it."""
    if "estimate_s" not in row:
        return f"> {duration(row.get('estimate_at_least_s', row['wall_s']))}"
    if row.get("exit") not in (0, None):
        return f"≥ {duration(row['estimate_s'])} (probe cut short: {row.get('error', '')[:80]})"
    return duration(row["estimate_s"])


def duration(seconds: float) -> str:
    """``42 s``, ``7.5 min``, ``3.2 h``, ``4.1 d``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def load_probes(folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every stored probe (default :data:`PROBES`), by its file's stem (``cpu``, ``cuda``)."""
    files = sorted((folder or PROBES).glob("*.json"))
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in files}


def gpu_walls(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each part's wall time in a GPU window whose results were not kept (``analyses/measured/gpu_walls.json``):
    ``{part: {"wall_s", "status", "device", "date"}}``, the latest window's where several measured it."""
    data = json.loads((path or MEASURED / "gpu_walls.json").read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for window in data["windows"]:
        for part, m in window["parts"].items():
            out[part] = {**m, "device": window["device"], "date": window["date"]}
    return out


def main_run(runs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The run that costs the most (steps x seconds per step)."""
    return max(runs, key=lambda r: r["steps"] * r["seconds_per_step"], default=None)


def gpu_estimate(runs: Sequence[Mapping[str, Any]], rest_s: float, cpu_flops: float) -> float:
    """The training runs at :data:`GPU_FLOPS` (each step at least :data:`GPU_STEP_FLOOR_S`), their evaluations
    at the CPU's seconds x ``cpu_flops`` / :data:`GPU_FLOPS` (arithmetic-bound there), plus ``rest_s``."""
    steps = sum(r["steps"] * max(r["flops_per_step"] / GPU_FLOPS, GPU_STEP_FLOOR_S) for r in runs)
    evals = sum(r["evals"] * r["eval_seconds"] for r in runs) * cpu_flops / GPU_FLOPS
    return rest_s + steps + evals


def fits_here(row: Mapping[str, Any]) -> bool:
    """Whether a probed part's paper preset is estimated within :data:`FITS_HERE_S` on one core (a probe that
    was cut short gives no estimate to fit)."""
    return "estimate_s" in row and row.get("exit") == 0 and row["estimate_s"] <= FITS_HERE_S
