"""Several seeds in one process (``mechrecall.stacked.train_seeds``) against the same seeds trained one by one.

    .venv/bin/python benchmarks/bench_stacked_seeds.py            # two small toys, 3 seeds, ~1 min
    .venv/bin/python benchmarks/bench_stacked_seeds.py --full     # and the d256 toy, 30 steps, ~15 min
    .venv/bin/python benchmarks/bench_stacked_seeds.py --seeds 8 --shapes d16-L2-batch8

Both candidates run the trainer's whole loop (data, forward, loss, backward, AdamW, bookkeeping) for the same
steps on one thread: ``separate`` calls ``mechrecall.train`` once per seed, ``stacked`` trains the seeds'
weights stacked on a leading axis under ``torch.func.vmap``. The note gives the largest difference between their
final weights (0 where the batched kernels round as the single ones do; see ``mechrecall.stacked``).
**ratio** = stacked seconds / separate seconds, measured in the same rounds (``timing.interleave``); below 1 the
stacking pays. A toy too small to fill the machine gains the most:
its step is mostly per-call overhead, paid once for all seeds instead of once per seed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import interleave

from mechrecall import TrainConfig, build_toy_model, train
from mechrecall._tl import IS_BRIDGE
from mechrecall.sequences import induction_batch
from mechrecall.stacked import train_seeds

#: name -> (d_model, n_layers, d_vocab, n_ctx, batch): a step that is all overhead (as ``ic_recall``'s cells and
#: ``sgd_scaling``'s), a small toy (the papers' smoke presets) and one at several papers' own width (d_model 256).
SHAPES = {
    "d16-L2-batch8": (16, 2, 16, 16, 8),
    "d64-L2-batch32": (64, 2, 64, 32, 32),
    "d256-L2-batch64": (256, 2, 64, 32, 64),
}


def toy_model(shape: tuple[int, ...], seed: int):
    d, layers, vocab, ctx, _ = shape
    cfg = dict(n_layers=layers, n_heads=1, d_model=d, d_head=d, d_mlp=4 * d, d_vocab=vocab, n_ctx=ctx, act_fn="relu")
    return build_toy_model(cfg, [], seed=seed)


def _runs(shape: tuple[int, ...], seeds: int, steps: int):
    _, _, vocab, ctx, batch = shape
    cfgs = [TrainConfig(steps=steps, lr=1e-3, loss_positions="all", seed=s, progress=False) for s in range(seeds)]

    def batch_fn(step, gen):
        b = induction_batch(batch, ctx, vocab, gen)
        return replace(b, loss_mask=None)

    def separate():
        return [train(toy_model(shape, c.seed), batch_fn, c).model for c in cfgs]

    def stacked():
        return [r.model for r in train_seeds([toy_model(shape, c.seed) for c in cfgs], batch_fn, cfgs)]

    return separate, stacked


def _timed(fn):
    def sample() -> float:
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began

    return sample


def run(quick: bool = True, seeds: int = 3, shapes: list[str] | None = None) -> list[dict]:
    """The benchmark's rows (``benchmarks/run.py``): per toy shape, stacked / separate seconds."""
    if IS_BRIDGE:
        return []  # stacking needs TransformerLens 3.x (mechrecall._tl.check_stackable)
    torch.set_num_threads(1)
    steps, rounds = (10, 3) if quick else (30, 5)
    shapes = shapes or (list(SHAPES)[:2] if quick else list(SHAPES))  # quick: not the d256 toy (~5 min)
    rows = []
    for name, shape in SHAPES.items():
        if name not in shapes:
            continue
        separate, stacked = _runs(shape, seeds, steps)
        a, b = separate(), stacked()  # the warm-up doubles as the comparison of the weights both train
        gap = max(
            float((x - dict(n.named_parameters())[k]).abs().max())
            for m, n in zip(a, b)
            for k, x in m.named_parameters()
        )
        c = interleave({"separate": _timed(separate), "stacked": _timed(stacked)}, "separate", rounds)
        per_step = c.seconds["stacked"] / steps
        rows.append(
            {
                "benchmark": "stacked_seeds",
                "measure": f"{seeds} seeds of a {name} toy, stacked / one by one (whole training loop)",
                "ratio": round(c.ratios["stacked"], 3),
                "target": "< 1",
                "ok": c.ratios["stacked"] < 1,
                "note": f"{per_step * 1e3:.1f} ms per stacked step of {seeds} seeds vs "
                f"{c.seconds['separate'] / steps / seeds * 1e3:.1f} ms per seed alone; "
                f"largest weight difference {gap:.1e}; "
                f"{steps} steps, 1 thread",
            }
        )
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--full", action="store_true", help="30 steps, 5 rounds (default 10 steps, 3 rounds)")
    p.add_argument(
        "--shapes",
        nargs="+",
        choices=list(SHAPES),
        default=None,
        help="these toys only (default: the two small ones; with --full all three)",
    )
    a = p.parse_args()
    if a.seeds < 1:
        p.error(f"--seeds {a.seeds}: expected >= 1")
    print("| toy | stacked / separate | note |\n|---|---|---|")
    for r in run(not a.full, a.seeds, a.shapes):
        print(f"| {r['measure']} | {r['ratio']} | {r['note']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
