"""The trainer's step with torch's fused optimiser kernel and with a compiled forward, against the default.

    .venv/bin/python benchmarks/bench_step_kernels.py            # fused AdamW on two small toys, ~1 min
    .venv/bin/python benchmarks/bench_step_kernels.py --full     # and compiled steps (inductor), ~10 min

Three candidates run ``mechrecall.train`` on the same toy for the same steps on one thread: ``foreach`` (the
default on a CPU: AdamW's foreach kernel, an eager forward), ``fused`` (``TrainConfig(fused=True)``: torch's fused
AdamW) and, with ``--full``, ``compiled`` (``TrainConfig(fused=True, compile="inductor")``: the forward and loss
compiled into one graph). Each step's time is read inside the loop (an evaluation after every step records the
clock); a candidate's time is the median step after its first two (the first compiles). **ratio** = candidate /
``foreach`` in the same rounds (``timing.interleave``); the note gives the first step of the compiled run (the
compilation, paid once per process and shape) and the largest difference from the foreach run's final weights
(the kernels round differently: none of them is bit for bit the default, which is why the CPU keeps it).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_stacked_seeds import SHAPES as STACKED_SHAPES
from bench_stacked_seeds import toy_model
from timing import interleave

from mechrecall import TrainConfig, train
from mechrecall.sequences import induction_batch

#: Two of ``bench_stacked_seeds.py``'s toys: a step that is all overhead and a smoke-size toy.
SHAPES = {name: STACKED_SHAPES[name] for name in ("d16-L2-batch8", "d64-L2-batch32")}
KERNELS = {"foreach": {}, "fused": {"fused": True}, "compiled": {"fused": True, "compile": "inductor"}}


def _train(shape: tuple[int, ...], steps: int, kernel: dict) -> tuple[list[float], torch.nn.Module]:
    """One run: the seconds of each step (the clock read by an evaluation after every step) and the model."""
    _, _, vocab, ctx, batch = shape

    def batch_fn(step, gen):
        return replace(induction_batch(batch, ctx, vocab, gen), loss_mask=None)

    cfg = TrainConfig(steps=steps, lr=1e-3, loss_positions="all", eval_every=1, progress=False, **kernel)
    result = train(toy_model(shape, 0), batch_fn, cfg, evals={"clock": lambda m: time.perf_counter()})
    clock = [row["clock"] for row in result.history["eval"]]
    return [b - a for a, b in itertools.pairwise(clock)], result.model


def _compare(shape: tuple[int, ...], steps: int, kernels: list[str], rounds: int) -> list[dict]:
    """One toy: each kernel's median step against the foreach kernel's, its first step and its final weights."""
    first: dict[str, float] = {}
    weights: dict[str, dict[str, torch.Tensor]] = {}

    def sampler(kernel: str):
        def sample() -> float:
            seconds, model = _train(shape, steps, KERNELS[kernel])
            first.setdefault(kernel, seconds[0])
            weights.setdefault(kernel, {k: v.detach().clone() for k, v in model.named_parameters()})
            return statistics.median(seconds[2:])

        return sample

    c = interleave({k: sampler(k) for k in kernels}, "foreach", rounds)
    rows = []
    for kernel in kernels[1:]:
        gap = max(float((weights[kernel][k] - v).abs().max()) for k, v in weights["foreach"].items())
        compiled = f"first step {first[kernel]:.1f} s (compiling); " if kernel == "compiled" else ""
        rows.append(
            {
                "kernel": kernel,
                "ratio": round(c.ratios[kernel], 3),
                "note": f"{c.seconds[kernel] * 1e3:.1f} vs {c.seconds['foreach'] * 1e3:.1f} ms per step; {compiled}"
                f"largest weight difference after {steps} steps {gap:.1e}; 1 thread",
            }
        )
    return rows


def run(quick: bool = True, shapes: list[str] | None = None) -> list[dict]:
    """The benchmark's rows (``benchmarks/run.py``): per toy and kernel, its step time / the foreach step's."""
    torch.set_num_threads(1)
    steps, rounds = (20, 3) if quick else (40, 3)
    kernels = ["foreach", "fused"] + ([] if quick else ["compiled"])
    rows = []
    for name, shape in SHAPES.items():
        if shapes and name not in shapes:
            continue
        for r in _compare(shape, steps, kernels, rounds):
            rows.append(
                {
                    "benchmark": "step_kernels",
                    "measure": f"a {name} toy's training step, {r['kernel']} / foreach (AdamW, eager forward)",
                    "ratio": r["ratio"],
                    "target": "< 1",
                    "ok": r["ratio"] < 1,
                    "note": r["note"],
                }
            )
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="also the compiled step (inductor: minutes to compile)")
    p.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=None, help="these toys only (default: both)")
    a = p.parse_args()
    print("| measure | ratio | note |\n|---|---|---|")
    for r in run(not a.full, a.shapes):
        print(f"| {r['measure']} | {r['ratio']} | {r['note']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
