"""Training step of the disentangled transformer (Musat et al.): the HookedTransformer embedding vs plain torch.

    .venv/bin/python benchmarks/bench_induction_heads.py            # smoke and paper sizes of the disentangled part
    .venv/bin/python benchmarks/bench_induction_heads.py --quick    # smoke size, 3 rounds, a few seconds
    .venv/bin/python benchmarks/bench_induction_heads.py --json runs/bench_induction_heads.json

Two candidates, each training its own copy of the same initial weights (N(0, 0.01²)) on the same fixed batch
(Gaussian data, eq. 5; mean-reduced MSE; SGD lr 1, no momentum):

  tl     ``analyses.papers.induction_heads.models.build_disentangled``: the disentangled transformer embedded
         in one ``HookedTransformer`` (residual 8D, frozen identity ``W_K`` / ``W_V`` / ``W_O``, trainable
         ``W_Q`` slices and ``W_U``) -- what ``python -m analyses.induction_emergence`` trains;
  plain  ``DisentangledReference``: the same equations (eq. 1) in plain torch with ``W1``, ``W2``, ``W3`` as
         parameters.

One step = zero_grad, forward, loss, backward, SGD step. The TL embedding does more arithmetic than the
equations need (its residual is 8D wide in both layers and the identity matrices are real matmuls), so the
ratio grows with D. Timing: ``timing.compare`` (``torch.utils.benchmark.Timer``, one warm-up call each, then
round-robin rounds); the ratio is the median over rounds of (tl / plain) within a round. The script checks
that both candidates computed the same loss at the warm-up step.

``run(quick)`` returns the rows of ``benchmarks/run.py``: per size tl / plain, target <= 1.15x (the target the
experiment used to report as a claim before the benchmark left it).
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Callable

import torch
from timing import compare, row

from analyses.papers.induction_heads.data import make_continuous_icl_batch
from analyses.papers.induction_heads.models import DisentangledReference, build_disentangled, mse
from mechrecall.io import atomic_write_json

NAME = "induction_heads"
TARGET = 1.15
SIZES = {  # the disentangled part's smoke and paper sizes
    "smoke": dict(dim=16, n_pairs=8, batch=512),
    "paper": dict(dim=32, n_pairs=16, batch=256),
}


def step_functions(dim: int, n_pairs: int, batch: int, seed: int = 0) -> dict[str, Callable[[], float]]:
    """``{"tl": step, "plain": step}``: one SGD step each on the same fixed batch, returning the step's loss."""
    X, y, _ = make_continuous_icl_batch(batch, n_pairs, dim, generator=torch.Generator().manual_seed(seed))
    dtl = build_disentangled(dim, n_pairs, init_std=0.01, seed=seed)
    ref = DisentangledReference(dim)
    with torch.no_grad():
        for p, w in zip(ref.parameters(), dtl.weights()):
            p.copy_(w)
    opt_tl = torch.optim.SGD(dtl.trainable_parameters(), lr=1.0)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=1.0)

    def step_tl() -> float:
        opt_tl.zero_grad(set_to_none=True)
        loss = mse(dtl(X), y)
        loss.backward()
        opt_tl.step()
        return float(loss)

    def step_plain() -> float:
        opt_ref.zero_grad(set_to_none=True)
        loss = mse(ref(X), y)
        loss.backward()
        opt_ref.step()
        return float(loss)

    return {"tl": step_tl, "plain": step_plain}


def bench(size: str, rounds: int, min_run_time: float) -> dict:
    """One size: ms per step of each candidate and the tl / plain ratio."""
    fns = step_functions(**SIZES[size])
    c = compare(fns, baseline="plain", rounds=rounds, min_run_time=min_run_time)
    first = c.results
    assert abs(first["tl"] - first["plain"]) <= 1e-5 * max(1.0, abs(first["plain"])), first
    return {
        "size": size,
        **SIZES[size],
        "tl_ms": 1000 * c.seconds["tl"],
        "plain_ms": 1000 * c.seconds["plain"],
        "ratio": c.ratios["tl"],
    }


def run(quick: bool) -> list[dict]:
    """The rows of one run (``--quick``: the smoke size, 3 rounds)."""
    return main(["--quick"] if quick else [])["rows"]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=None, choices=tuple(SIZES), help="default: all (quick: smoke)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds; the median is reported (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="the smoke size, 3 rounds, a few seconds")
    parser.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sizes = args.sizes or (["smoke"] if args.quick else list(SIZES))
    rounds = args.rounds or (3 if args.quick else 5)
    min_run_time = 0.05 if args.quick else 0.2
    print(f"disentangled transformer, one SGD step, torch {torch.__version__}, Python {platform.python_version()}")
    print(f"{'size':<6} {'D':>4} {'N':>4} {'B':>5} {'tl ms':>9} {'plain ms':>9} {'tl/plain':>9}")
    results, rows = [], []
    for size in sizes:
        r = bench(size, rounds, min_run_time)
        results.append(r)
        print(
            f"{size:<6} {r['dim']:>4} {r['n_pairs']:>4} {r['batch']:>5} {r['tl_ms']:>9.2f} {r['plain_ms']:>9.2f} "
            f"{r['ratio']:>8.2f}x"
        )
        rows.append(
            row(
                NAME,
                f"HookedTransformer embedding / plain-torch training step time ({size}: D={r['dim']}, "
                f"N={r['n_pairs']}, B={r['batch']})",
                r["ratio"],
                f"<= {TARGET}x",
                r["ratio"] <= TARGET,
                f"{r['tl_ms']:.1f} vs {r['plain_ms']:.1f} ms per step",
            )
        )
    if args.json:
        atomic_write_json(args.json, {"results": results, "rows": rows})
    return {"results": results, "rows": rows}


if __name__ == "__main__":
    main()
