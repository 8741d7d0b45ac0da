"""What a training run costs, measured without running it: the step probe behind the paper-scale ledger.

With ``MECHRECALL_PROBE=FILE`` in the environment, :func:`mechrecall.trainer.train` runs only a few steps of each
run (``MECHRECALL_PROBE_STEPS``, default 3, after one warm-up step), times them, counts the FLOPs of one step
(forward and backward, :class:`torch.utils.flop_counter.FlopCounterMode`) and appends one JSON line to ``FILE``:

    {"run": "pt", "steps": 20000, "probed": 3, "seconds_per_step": 0.012, "flops_per_step": 3.1e9,
     "eval_seconds": 0.4, "evals": 41, "params": 1234567, "batch": [512, 64], "device": "cpu", "threads": 1}

Where a round of evaluations is cheap (:data:`SERIES_EVAL_S`) it also runs after each probed step, so that a part
reading a series of them finds one. A later run of the same shape (the same parameter shapes, batch shape and
training config but the seed) takes one untimed step: its line says ``"same_as"`` the first one's index and copies
its rates. The part goes on with its barely trained model, so everything else it does (data, evaluations, SVDs)
runs at full size and is timed by the caller as wall time; the run's estimated cost is
``steps x seconds_per_step + evals x eval_seconds``. Nothing a probed part writes is a result: run it into a
scratch folder. ``MECHRECALL_PROBE_FIRST=1`` ends the process after the first run's line (:class:`ProbeDone`): a
benchmark of the training step alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

ENV_FILE, ENV_STEPS, ENV_FIRST = "MECHRECALL_PROBE", "MECHRECALL_PROBE_STEPS", "MECHRECALL_PROBE_FIRST"
WARMUP = 1
#: Where one round of a run's evaluations takes less than this, the probe evaluates after each of its steps too
#: (outside the timed steps): a part that reads a series of evaluations (an emergence time) then finds one.
SERIES_EVAL_S = 5.0


class ProbeDone(BaseException):
    """Raised after the first probed run when ``MECHRECALL_PROBE_FIRST=1`` (a benchmark of one training step
    needs nothing after it); a ``BaseException``, so no part's ``except Exception`` records it as its failure."""


@dataclass
class Probe:
    """The probe of one ``train`` call: where its records go and how many steps it times."""

    path: Path
    steps: int = 3
    first_only: bool = False
    timings: list[float] = field(default_factory=list)
    flops: int = 0

    def shape_key(self, model: torch.nn.Module, batch_shape: Sequence[int], cfg: Mapping[str, Any]) -> str:
        shapes = [list(p.shape) for p in model.parameters() if p.requires_grad]
        config = {k: v for k, v in cfg.items() if k not in ("seed", "progress")}
        text = json.dumps([shapes, list(batch_shape), config], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def seen(self, key: str) -> tuple[int, dict[str, Any]] | None:
        """The index and record of an earlier run of this shape in the file, if any."""
        for i, record in enumerate(records(self.path)):
            if record.get("key") == key and "same_as" not in record:
                return i, record
        return None

    def stop_at(self, start: int, total: int, key: str) -> int:
        """The step the probed run stops at: one step on for a shape already measured (untimed: a part reading a
        series of evaluations still finds two), else a warm-up and a few timed steps on."""
        return min(total, start + (1 if self.seen(key) else WARMUP + self.steps))

    def step(self, seconds: float) -> None:
        self.timings.append(seconds)

    def write(self, run: str, key: str, total: int, evals: int, eval_seconds: float, extra: Mapping[str, Any]) -> None:
        """Append this run's line to the file (the rates of an earlier run of the same shape, if there was one)."""
        earlier = self.seen(key)
        line: dict[str, Any] = {"run": run, "key": key, "steps": total, "evals": evals, **extra}
        if earlier is not None:
            index, record = earlier
            line.update(same_as=index, **{k: record[k] for k in ("seconds_per_step", "flops_per_step", "eval_seconds")})
        else:
            timed = self.timings[WARMUP:] or self.timings
            line.update(
                probed=len(timed),
                seconds_per_step=statistics.median(timed) if timed else 0.0,
                flops_per_step=self.flops,
                eval_seconds=eval_seconds,
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        if self.first_only:
            raise ProbeDone(run)


def active() -> Probe | None:
    """The probe the environment asks for (``MECHRECALL_PROBE``), or ``None``."""
    path = os.environ.get(ENV_FILE)
    if not path:
        return None
    steps = max(1, int(os.environ.get(ENV_STEPS, "3")))
    return Probe(Path(path), steps=steps, first_only=os.environ.get(ENV_FIRST) == "1")


def records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every line of a probe file (none if it does not exist)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def count_flops(fn: Callable[[], Any]) -> tuple[Any, int]:
    """``fn()``'s value and the FLOPs of the matmul-like ops it ran (forward and backward)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        value = fn()
    return value, int(counter.get_total_flops())


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a step's time on a GPU is its kernels', not its launches')."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(device: torch.device) -> float:
    synchronize(device)
    return time.perf_counter()


def estimate_seconds(lines: Sequence[Mapping[str, Any]]) -> float:
    """The full runs' training time from their probe lines: Σ steps × s/step + evals × s/eval."""
    return sum(r["steps"] * r["seconds_per_step"] + r["evals"] * r["eval_seconds"] for r in lines)


def probed_seconds(lines: Sequence[Mapping[str, Any]]) -> float:
    """The time the probed ``train`` calls themselves took (to take from the probed part's wall time)."""
    return sum(float(r.get("spent", 0.0)) for r in lines)
