"""Pretraining throughput of the mini GPT-NeoX (``python -m pretrained.mini``) vs the matmul-bound limit of a core.

    .venv/bin/python benchmarks/bench_mini_pretrain.py            # laptop preset's model and batch, 1 thread, ~1 min
    .venv/bin/python benchmarks/bench_mini_pretrain.py --quick    # fewer rounds, ~20 s
    .venv/bin/python benchmarks/bench_mini_pretrain.py --threads 2

One training step is the trainer's (``mechrecall.trainer.train``: forward, cross-entropy on every position,
backward, grad clipping, AdamW) on the laptop preset's model and batch (``pretrained.mini.PRESETS["laptop"]``),
timed between consecutive ``batch_fn`` calls. The limit: the FLOPs of one step (6 × the matmul parameters per
token, the unembedding included, plus the attention scores and mixing, 3 × 4 · n_layers · n_ctx · d_model per
token: TransformerLens computes the full T × T) divided by the FLOP/s of one large fp32 matmul (1024³) on the same
threads, measured in the same run. ``ratio`` = achieved FLOP/s ÷ matmul FLOP/s (1 = matmul-bound).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time

import torch
from timing import row, time_call

NAME = "mini_pretrain"


def step_flops(p) -> float:
    """FLOPs of one training step of preset ``p``'s model (see the module docstring)."""
    d, L, T = p.d_model, p.n_layers, p.n_ctx
    matmul_params = L * (4 * d * d + 2 * d * p.d_mlp) + d * p.vocab_size
    per_token = 6 * matmul_params + 3 * 4 * L * T * d
    return per_token * p.batch_size * T


def matmul_flops_per_s(n: int = 1024) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n**3 / time_call(lambda: a @ b, min_run_time=0.5).median


def step_seconds(p, steps: int) -> list[float]:
    """Per-step seconds of the trainer on preset ``p`` (the first two steps are warm-up)."""
    from mechrecall import Freeze, TrainConfig, build_toy_model, train
    from mechrecall.batch import Batch
    from pretrained.mini.series import tl_config

    model = build_toy_model(tl_config(p, p.vocab_size, 0), [Freeze(("unembed.b_U",))], seed=0)
    stamps: list[float] = []

    def batch_fn(step: int, g: torch.Generator) -> Batch:
        stamps.append(time.perf_counter())
        x = torch.randint(0, p.vocab_size, (p.batch_size, p.n_ctx + 1), generator=g)
        return Batch(tokens=x[:, :-1], targets=x[:, 1:])

    cfg = TrainConfig(steps=steps, optimizer="adamw", lr=1e-3, loss_positions="all", grad_clip=1.0, progress=False)
    train(model, batch_fn, cfg)
    return [b - a for a, b in itertools.pairwise(stamps[3:])]  # stamps[0]: the validation batch; then warm-up


def main(argv: list[str] | None = None) -> dict:
    from pretrained.mini import PRESETS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="8 timed steps instead of 20")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    p = PRESETS["laptop"]
    peak = matmul_flops_per_s()
    seconds = statistics.median(step_seconds(p, 12 if args.quick else 24))
    tokens = p.batch_size * p.n_ctx
    achieved = step_flops(p) / seconds
    minutes = p.steps * seconds / 60
    print(
        f"mini laptop preset, {args.threads} thread(s): {seconds * 1e3:.0f} ms/step, {tokens / seconds:,.0f} tokens/s"
    )
    print(
        f"  {achieved / 1e9:.1f} GFLOP/s achieved vs {peak / 1e9:.1f} GFLOP/s for a 1024³ matmul: {achieved / peak:.2f}"
    )
    print(f"  {p.steps} steps ≈ {minutes:.1f} min of training on this many threads")
    rows = [
        row(
            NAME,
            "training FLOP/s ÷ 1024³ matmul FLOP/s (same threads)",
            achieved / peak,
            note=f"{tokens / seconds:,.0f} tokens/s, {args.threads} thread(s); {p.steps} steps ≈ {minutes:.1f} min",
        )
    ]
    return {"rows": rows, "tokens_per_s": tokens / seconds, "matmul_gflops": peak / 1e9}


def run(quick: bool) -> list[dict]:
    """The row of ``benchmarks/run.py``: the ratio of the training step's FLOP/s to one core's matmul FLOP/s."""
    return main(["--quick"] if quick else [])["rows"]


if __name__ == "__main__":
    main(sys.argv[1:])
