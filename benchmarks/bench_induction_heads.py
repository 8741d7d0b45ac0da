"""Benchmark: one SGD step of the disentangled transformer, HookedTransformer embedding vs plain torch.

Both candidates start from the same weights, train on the same fixed batch (Gaussian data, mean MSE,
SGD lr 1) and take turns (round-robin, so background load hits them alike); the ratio is the median
over rounds of (TL time / plain time) within a round. The TL embedding does more arithmetic than the
equations need: its residual is 8D wide in both layers and the identity ``W_K`` / ``W_V`` / ``W_O`` are
real matmuls, so the ratio grows with D.
"""

from __future__ import annotations

import statistics
import time

import torch

from analyses.papers.induction_heads.data import make_continuous_icl_batch
from analyses.papers.induction_heads.models import DisentangledReference, build_disentangled, mse


def compare_train_steps(
    dim: int = 16, n_pairs: int = 8, batch: int = 512, rounds: int = 5, steps: int = 5, seed: int = 0
) -> dict:
    """``{"tl_ms", "plain_ms", "ratio", "ratios", "max_weight_gap"}`` (ms per training step, medians)."""
    X, y, _ = make_continuous_icl_batch(batch, n_pairs, dim, generator=torch.Generator().manual_seed(seed))
    dtl = build_disentangled(dim, n_pairs, init_std=0.01, seed=seed)
    ref = DisentangledReference(dim)
    with torch.no_grad():
        for p, w in zip(ref.parameters(), dtl.weights()):
            p.copy_(w)
    opt_tl = torch.optim.SGD(dtl.trainable_parameters(), lr=1.0)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=1.0)

    def step_tl() -> None:
        opt_tl.zero_grad(set_to_none=True)
        mse(dtl(X), y).backward()
        opt_tl.step()

    def step_ref() -> None:
        opt_ref.zero_grad(set_to_none=True)
        mse(ref(X), y).backward()
        opt_ref.step()

    def timed(fn) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        return (time.perf_counter() - start) / steps * 1000

    timed(step_tl), timed(step_ref)  # warm-up (same number of steps for both: same trajectory)
    tl, plain = [], []
    for _ in range(rounds):
        tl.append(timed(step_tl))
        plain.append(timed(step_ref))
    gap = max(float((a - b.detach()).abs().max()) for a, b in zip(dtl.weights(), ref.parameters()))
    return {
        "tl_ms": statistics.median(tl),
        "plain_ms": statistics.median(plain),
        "ratio": statistics.median(a / b for a, b in zip(tl, plain)),
        "ratios": [a / b for a, b in zip(tl, plain)],
        "max_weight_gap": gap,
        "dim": dim,
        "n_pairs": n_pairs,
        "batch": batch,
    }
