"""IC recall (Huang, Nichani, Lee & Ge): the closed-form fast path against the TransformerLens model, and the
sweep's process pool (1 against 2 workers).

    .venv/bin/python benchmarks/bench_ic_recall.py            # smoke sizes: 200 steps, a sweep of 8 cells
    .venv/bin/python benchmarks/bench_ic_recall.py --quick    # 20 steps, a sweep of 2 cells
    .venv/bin/python benchmarks/bench_ic_recall.py --paper    # 500 steps, a sweep of 16 cells

1. **Fast path** (``analyses.papers.ic_recall.models.AnalyticICRecall``, partial mode in closed form) against the
   TL model (float64, n = 8, m = 64, N = 8): ``finetune`` for S Adam steps from the same start, timed in the same
   rounds (``timing.compare``); ms per step and the ratio TL / fast path. Both must end with the same θ, ω
   (asserted < 1e-10: the experiment's ``exact.fast_path_same_parameters`` claims it too).
2. **Sweep pool**: ``analyses.papers.ic_recall.runs.run_cells`` over affine cells into an emptied folder, with 1
   and with 2 worker processes, in alternating rounds (``timing.interleave``); the ratio 1 worker / 2 workers,
   target >= 1.2 (on 2 free cores; a pool's start-up dominates a small sweep).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from timing import compare, interleave, row

from analyses.papers.ic_recall.data import ICRecallSpec, ICRecallTask
from analyses.papers.ic_recall.models import AnalyticICRecall, build_model, initial_scores, scores
from analyses.papers.ic_recall.presets import Cell
from analyses.papers.ic_recall.runs import FinetuneConfig, finetune, run_cells

NAME = "ic_recall"
TARGET_WORKERS = 1.2
SIZES = {  # Adam steps of the fast-path comparison; the sweep's n, N, seeds and steps
    "quick": {"steps": 20, "sweep": dict(n=(7,), N=(1, 8), seeds=(0,), steps=30)},
    "smoke": {"steps": 200, "sweep": dict(n=(7,), N=(1, 2, 4, 8), seeds=(0, 1), steps=300)},
    "paper": {"steps": 500, "sweep": dict(n=(7, 11), N=(1, 2, 4, 8), seeds=(0, 1), steps=500)},
}


def fast_path(steps: int, rounds: int) -> dict:
    """ms per Adam step of the TL model and of the fast path (same run), their ratio, the parameters' difference."""
    task = ICRecallTask(ICRecallSpec(8, 64, 2, "random", 0))
    data = task.sample(8, torch.Generator().manual_seed(1))
    ft = FinetuneConfig(T=0.05, lr=1e-2, steps=steps)
    init = initial_scores(2, 1e-3, 0)
    fast = AnalyticICRecall(task)
    tl = build_model(task.spec, "partial", dtype="float64", seed=0)
    c = compare(
        {
            "tl": lambda: finetune(tl, task, data, ft, init=init),
            "fast": lambda: finetune(fast, task, data, ft, init=init),
        },
        baseline="fast",
        rounds=rounds,
    )
    theta, omega = scores(tl, 2)  # every call starts from init: both end the same S steps later
    diff = float(max((theta - fast.theta.detach()).abs().max(), (omega - fast.omega.detach()).abs().max()))
    assert diff < 1e-10, f"fast path and TL model differ by {diff:.2e} after {steps} steps"
    return {"steps": steps, "ms_tl": 1e3 * c.seconds["tl"] / steps, "ms_fast": 1e3 * c.seconds["fast"] / steps,
            "ratio": c.ratios["tl"], "max_param_diff": diff}  # fmt: skip


def sweep(sizes: dict, rounds: int) -> dict:
    """Wall seconds of one sweep with 1 and with 2 workers (alternating rounds) and their ratio."""
    cells = [
        Cell(n=n, m=n * (n - 1) // 2, N=N, seed=s, family="affine", lr=1e-2, steps=sizes["steps"])
        for n in sizes["n"]
        for N in sizes["N"]
        for s in sizes["seeds"]
    ]
    root = Path(tempfile.mkdtemp(prefix="bench_ic_recall_"))

    def sampler(workers: int):
        def sample() -> float:
            where = root / f"workers{workers}"
            shutil.rmtree(where, ignore_errors=True)
            return run_cells(cells, where, workers=workers)[1]["seconds"]

        return sample

    try:
        c = interleave({"1": sampler(1), "2": sampler(2)}, baseline="2", rounds=rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"cells": len(cells), "s1": c.seconds["1"], "s2": c.seconds["2"], "ratio": c.ratios["1"]}


def measure(size: str, rounds: int) -> tuple[dict, dict]:
    torch.set_num_threads(1)
    return fast_path(SIZES[size]["steps"], rounds), sweep(SIZES[size]["sweep"], rounds)


def rows(fast: dict, pool: dict) -> list[dict]:
    return [
        row(
            NAME,
            f"TL model / closed-form fast path time per Adam step (n = 8, m = 64, N = 8, {fast['steps']} steps)",
            fast["ratio"],
            target="> 1x",
            ok=fast["ratio"] > 1,
            note=f"TL {fast['ms_tl']:.2f} ms, fast path {fast['ms_fast']:.2f} ms per step; "
            f"max |Δθ, Δω| {fast['max_param_diff']:.1e}",
        ),
        row(
            NAME,
            f"sweep of {pool['cells']} cells: 1 worker / 2 workers wall time",
            pool["ratio"],
            target=f">= {TARGET_WORKERS}x",
            ok=pool["ratio"] >= TARGET_WORKERS,
            note=f"1 worker {pool['s1']:.1f} s, 2 workers {pool['s2']:.1f} s",
        ),
    ]


def run(quick: bool) -> list[dict]:
    """The rows of ``benchmarks/run.py``: TL / fast path per step; sweep 1 / 2 workers."""
    return rows(*measure("quick" if quick else "smoke", rounds=3 if quick else 5))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="20 steps, a sweep of 2 cells, 3 rounds")
    size.add_argument("--paper", action="store_true", help="500 steps, a sweep of 16 cells")
    args = parser.parse_args(argv)
    fast, pool = measure("quick" if args.quick else "paper" if args.paper else "smoke", 3 if args.quick else 5)
    print(f"torch {torch.__version__}, 1 thread")
    print(f"fast path: TL {fast['ms_tl']:.3f} ms/step, closed form {fast['ms_fast']:.3f} ms/step, ratio "
          f"{fast['ratio']:.2f}x ({fast['steps']} steps, max |Δ| {fast['max_param_diff']:.1e})")  # fmt: skip
    print(f"sweep of {pool['cells']} cells: 1 worker {pool['s1']:.2f} s, 2 workers {pool['s2']:.2f} s, "
          f"ratio {pool['ratio']:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
