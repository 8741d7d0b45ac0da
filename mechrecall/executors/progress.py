"""Jobs done / running / queued with an ETA: a live line on a terminal, one line per job event otherwise, and one
line per event in a log file.

The ETA schedules what is left (the running jobs' remaining estimates, then the queued ones, longest first) on the
executor's slots; a job's estimate is what the same part took on another seed, once one finished, else its declared
cost scaled by how long the finished jobs really took (their summed seconds over their summed declared seconds:
the long jobs weigh most).
"""

from __future__ import annotations

import heapq
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from mechrecall.executors.base import Failure, Task


def makespan(remaining: Sequence[float], queued: Sequence[float], slots: int) -> float:
    """Seconds until the last job ends: ``remaining`` (running jobs' seconds left) occupy slots first, then each of
    ``queued`` (longest first) starts on the slot that frees up first."""
    ends = sorted(remaining)[-slots:] if slots else []
    ends += [0.0] * max(0, slots - len(ends))
    heapq.heapify(ends)
    for seconds in sorted(queued, reverse=True):
        heapq.heappush(ends, heapq.heappop(ends) + seconds)
    return max(ends, default=0.0)


def family(task_id: str) -> str:
    """A job's id without its seed: ``noisy_icl/seed2:main`` → ``noisy_icl:main``."""
    return re.sub(r"/seed\d+(?=:|$)", "", task_id)


def clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on."""
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Hears :func:`~mechrecall.executors.base.run_tasks`' events. ``stream``: where the display goes (a terminal:
    one live line, redrawn; else a line per event); ``log``: a file that gets a timestamped line per event."""

    def __init__(
        self,
        tasks: Sequence[Task],
        slots: int,
        *,
        stream: TextIO | None = None,
        log: str | Path | None = None,
        enabled: bool = True,
        clock_fn: Any = time.monotonic,
    ):
        self.tasks = {t.id: t for t in tasks}
        self.slots, self.enabled, self.now = max(1, slots), enabled, clock_fn
        self.stream = stream or sys.stderr
        self.live = enabled and self.stream.isatty()
        self.log = Path(log) if log else None
        self.started: dict[str, float] = {}
        self.took: dict[str, float] = {}  # the finished jobs' seconds
        self.failed: list[str] = []
        self.t0 = self.now()
        self._drawn = ""

    def __call__(self, kind: str, task: Task | None, info: Any) -> None:
        if task is None:
            self._draw()
            return
        if kind == "started":
            self.started[task.id] = self.now()
            line = f"started {task.id}"
        elif kind == "retrying":
            self.started.pop(task.id, None)
            line = f"retrying {task.id}: {info}"
        else:
            self.took[task.id] = self.now() - self.started.pop(task.id, self.now())
            reason = info.reason if isinstance(info, Failure) else ""
            if isinstance(info, dict) and info.get("status") == "failed":  # a job's record
                kind, reason = "failed", info.get("error", "")
            if kind == "failed":
                self.failed.append(task.id)
            reason = f": {reason}" if reason else ""
            line = f"{kind} {task.id} in {self.took[task.id]:.0f} s{reason}"
        self.event(line)

    # ---------------------------------------------------------------- what is shown

    def scale(self) -> float:
        """Real seconds per declared second, over the finished jobs (1 before any finished)."""
        declared = sum(self.tasks[i].seconds for i in self.took)
        return sum(self.took.values()) / declared if declared > 0 else 1.0

    def estimate(self, task_id: str) -> float:
        """A job's seconds: what the same job took on another seed where one finished (``x/seed1:part`` for
        ``x/seed2:part``), else its declared cost × :meth:`scale`."""
        same = [s for i, s in self.took.items() if family(i) == family(task_id)]
        return statistics.median(same) if same else self.tasks[task_id].seconds * self.scale()

    def eta(self) -> float:
        """Seconds until every job is done, from the estimates (:func:`makespan`)."""
        now = self.now()
        # a job past its estimate: a tenth of the estimate more (no better guess)
        remaining = [max(0.1 * self.estimate(i), self.estimate(i) - (now - t)) for i, t in self.started.items()]
        queued = [self.estimate(i) for i in self.tasks if i not in self.started and i not in self.took]
        return makespan(remaining, queued, self.slots)

    def status(self) -> str:
        queued = len(self.tasks) - len(self.took) - len(self.started)
        line = f"{len(self.took)}/{len(self.tasks)} jobs done, {len(self.started)} running, {queued} queued"
        line += f", {len(self.failed)} failed" if self.failed else ""
        if len(self.took) < len(self.tasks):
            line += f"; ETA {clock(self.eta())}"
        return f"[{clock(self.now() - self.t0)}] {line}"

    def event(self, line: str) -> None:
        stamped = f"[{clock(self.now() - self.t0)}] {line}"
        if self.log:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}; {self.status().split('] ', 1)[1]}\n")
        if not self.enabled:
            return
        if self.live:
            self.stream.write("\r\x1b[K")
        print(f"{stamped}; {self.status().split('] ', 1)[1]}", file=self.stream, flush=True)
        self._drawn = ""
        self._draw()

    def _draw(self) -> None:
        if not self.live:
            return
        line = self.status()
        if line != self._drawn:
            self.stream.write(f"\r\x1b[K{line}")
            self.stream.flush()
            self._drawn = line

    def close(self) -> None:
        if self.live and self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
