"""The one timing helper of the benchmarks, built on ``torch.utils.benchmark.Timer``.

    from timing import compare
    c = compare({"plain": f, "hooked": g}, baseline="plain", rounds=5)
    c.seconds["hooked"], c.ratios["hooked"]      # median s per call; hooked / plain in the same rounds

``time_call(fn)`` is one ``Timer(stmt="fn()", ...).blocked_autorange(min_run_time)`` measurement: Timer picks
how many calls make one block (its first, estimating block also warms up; a function slower than
``min_run_time`` is called twice: once to estimate, once measured) and reports the median seconds per call.
It synchronises an accelerator (CUDA) before reading the clock.

``compare`` times several candidates in the *same* run: one warm-up call each (whose results are returned,
for correctness checks), then ``rounds`` rounds in which the candidates take turns (round-robin), so that
background load on a shared machine hits all of them alike. Per candidate it reports the median over
rounds, and per candidate the ratio to the baseline as the median over rounds of (candidate / baseline in
that round), which follows slow load drifts better than a ratio of medians. ``interleave`` is the same
round-robin for candidates that time themselves (a callable returning the seconds of one sample).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.benchmark import Measurement, Timer


@dataclass
class Comparison:
    """Times of candidates measured in the same run, and their ratios to a baseline."""

    baseline: str
    seconds: dict[str, float]  # median over rounds of each candidate's seconds per call
    ratios: dict[str, float]  # median over rounds of (candidate / baseline) within a round
    samples: dict[str, list[float]]  # seconds per call, one per round
    results: dict[str, Any] = field(default_factory=dict)  # each function's warm-up result (``compare``)


def time_call(fn: Callable[[], Any], min_run_time: float = 0.05, num_threads: int | None = None) -> Measurement:
    """``Timer.blocked_autorange`` of ``fn()``; ``.median`` is seconds per call. Threads: torch's current count."""
    threads = num_threads or torch.get_num_threads()
    return Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads).blocked_autorange(min_run_time=min_run_time)


def interleave(samplers: dict[str, Callable[[], float]], baseline: str, rounds: int) -> Comparison:
    """Round-robin ``rounds`` times over ``samplers`` (each returns the seconds of one sample)."""
    if baseline not in samplers:
        raise KeyError(f"baseline {baseline!r} is not one of {list(samplers)}")
    samples: dict[str, list[float]] = {name: [] for name in samplers}
    for _ in range(max(1, rounds)):
        for name, sample in samplers.items():
            samples[name].append(sample())
    base = samples[baseline]
    return Comparison(
        baseline=baseline,
        seconds={k: statistics.median(v) for k, v in samples.items()},
        ratios={k: statistics.median(x / y for x, y in zip(v, base)) for k, v in samples.items()},
        samples=samples,
    )


def compare(
    fns: dict[str, Callable[[], Any]],
    baseline: str,
    rounds: int = 3,
    min_run_time: float = 0.05,
    num_threads: int | None = None,
    warmup: bool = True,
) -> Comparison:
    """Time every function of ``fns`` with ``time_call`` in ``rounds`` interleaved rounds, after one warm-up call
    each (``warmup=False``: none, and no ``results``); the ratios are to ``fns[baseline]``."""
    results = {name: fn() for name, fn in fns.items()} if warmup else {}
    samplers = {name: (lambda fn=fn: time_call(fn, min_run_time, num_threads).median) for name, fn in fns.items()}
    comparison = interleave(samplers, baseline, rounds)
    comparison.results = results
    return comparison


def row(benchmark: str, measure: str, ratio: float, target: str = "", ok: bool | None = None, note: str = "") -> dict:
    """One result row of the common benchmark interface (see ``run.py``)."""
    return dict(benchmark=benchmark, measure=measure, ratio=float(ratio), target=target, ok=ok, note=note)
