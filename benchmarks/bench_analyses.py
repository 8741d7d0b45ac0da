"""Benchmarks for the analysis tools, each timed against a baseline measured in the same run.

    .venv/bin/python benchmarks/bench_analyses.py            # full, ~3 min on one quiet CPU thread
    .venv/bin/python benchmarks/bench_analyses.py --quick    # small models, ~20 s
    .venv/bin/python benchmarks/bench_analyses.py --json runs/bench.json --threads 2

1. LASER sweep vs naive truncations, on a random-init GPT-NeoX loaded raw. For every MLP matrix
   (mlp_in, mlp_out of every layer) and R kept-rank fractions rho:
     naive        for each matrix and rho: ``with hooks.low_rank(model, layer, kind, rho): metric(model)``
                  -> one SVD per (matrix, rho), R SVDs per matrix
     laser_sweep  ``analyses.lowrank.laser_sweep(model, metric, rhos=...)`` -> one SVD per matrix, reused
   speed-up = naive / laser_sweep (> 1: the sweep is faster). Both give the same metric values (checked).
   "SVD part only" times just the matrix arithmetic: R ``truncate`` calls per matrix vs one ``svd``
   plus R ``from_svd`` reconstructions -- where the savings come from. The metric is one cheap forward
   pass (mean log-prob of a fixed target at the last position of a small fixed batch).

2. Hook overhead, on a toy HookedTransformer and the GPT-NeoX model, under ``torch.no_grad()``:
   ``run_with_cache`` with a names_filter (one layer's attention pattern), ``run_with_cache`` caching
   everything, and a forward inside ``hooks.ablate(model, heads=[(0, 0)])`` (entering and leaving the
   context included), each as a ratio to a plain ``model(tokens)``: 1.10x = 10% slower than a forward.

3. The SVD of one model matrix, LAPACK (``torch.linalg.svd``) vs the Gram route (``hooks.weights.gram_svd``),
   float64, on a random matrix of Pythia-1B's ``W_in`` shape (2048 x 8192; ``--quick``: 512 x 2048): speed-up =
   LAPACK / Gram, and the largest difference of the LASER truncations at rho = 0.01 and 0.5 (checked < 1e-10
   of sigma_1).

Timing: ``timing.compare`` (``torch.utils.benchmark.Timer``): each function is called once to warm up
(its result is used for the correctness checks), then the candidates of one comparison take turns
(round-robin, so background load hits all of them alike) for ``--repeats`` rounds; in a round Timer's
``blocked_autorange`` calls a function >= 20 ms in all (a slow sweep: once to estimate, once timed).
Reported: median seconds per call; ratios are the median of the per-round ratios.

``run(quick)`` returns the rows of ``benchmarks/run.py``: per R the naive / laser_sweep time ratio (whole
sweep and SVD part, target > 1x: sharing the SVDs must not be slower), per model and variant the ratio
to a plain forward (no target).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys
import tempfile
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch
from timing import compare, row

import hooks
import pretrained
from analyses.lowrank import laser_sweep
from hooks import weights
from mechrecall.builder import build_toy_model
from mechrecall.io import atomic_write_json
from pretrained.testing import tiny_checkpoint

FULL = dict(
    neox=dict(d_model=256, n_layers=4, n_heads=8, d_mlp=1024),
    Rs=(4, 8, 16),
    repeats=3,
    hook_repeats=15,
    svd_shape=(2048, 8192),
    svd_repeats=1,
)
QUICK = dict(
    neox=dict(d_model=64, n_layers=2, n_heads=4, d_mlp=256),
    Rs=(4, 8),
    repeats=5,
    hook_repeats=10,
    svd_shape=(512, 2048),
    svd_repeats=3,
)
NAME = "analyses"
TOY = dict(n_layers=2, n_heads=4, d_model=64, d_head=16, d_mlp=256, d_vocab=64, n_ctx=32, act_fn="relu")
MATRICES = ("mlp_in", "mlp_out")


def load_neox(sizes: dict):
    with tempfile.TemporaryDirectory() as tmp:
        tiny_checkpoint(tmp, "gpt_neox", n_ctx=64, **sizes)
        return pretrained.load(tmp, processing="raw")


# ----------------------------------------------------------------------------- 1. LASER sweep


def make_metric(model, batch: int = 2, seq: int = 16):
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, model.cfg.d_vocab, (batch, seq), generator=gen)
    target = torch.randint(0, model.cfg.d_vocab, (batch,), generator=gen)

    @torch.no_grad()
    def metric(m) -> float:
        logp = m(tokens)[:, -1].log_softmax(-1)
        return logp[torch.arange(batch), target].mean().item()

    return metric


def naive_sweep(model, metric, targets, rhos) -> dict:
    out = {}
    for layer, kind in targets:
        for rho in rhos:
            with hooks.low_rank(model, layer, kind, rho):
                out[layer, kind, rho] = metric(model)
    return out


def shared_sweep(model, metric, rhos) -> dict:
    res = laser_sweep(model, metric, matrices=MATRICES, rhos=rhos)
    return {(r.layer, r.matrix, r.rho): r.value for r in res.table.itertuples()}


def svd_naive(mats, rhos) -> list:
    return [weights.truncate(W, rho) for W in mats for rho in rhos]


def svd_shared(mats, rhos) -> list:
    out = []
    for W in mats:
        factors = weights.svd(W)
        out += [weights.from_svd(factors, weights.rank_for(rho, tuple(W.shape)), W) for rho in rhos]
    return out


def bench_laser(model, Rs, repeats) -> list[dict]:
    metric = make_metric(model)
    targets = [(l, k) for l in range(model.cfg.n_layers) for k in MATRICES]
    mats = [weights.get_matrix(model, l, k).clone() for l, k in targets]
    rows = []
    for R in Rs:
        rhos = [(i + 1) / (R + 1) for i in range(R)]  # in (0, 1): every rho truncates (no full-rank shortcut)
        c = compare(
            {
                "naive": lambda: naive_sweep(model, metric, targets, rhos),
                "laser": lambda: shared_sweep(model, metric, rhos),
            },
            "laser",
            repeats,
            min_run_time=0.02,
        )
        cs = compare(
            {"naive": lambda: svd_naive(mats, rhos), "shared": lambda: svd_shared(mats, rhos)},
            "shared",
            repeats,
            min_run_time=0.02,
        )
        t, res, ts, mres = c.seconds, c.results, cs.seconds, cs.results
        diff = max(abs(res["naive"][key] - res["laser"][key]) for key in res["naive"])
        diff_svd = max((a - b).abs().max().item() for a, b in zip(mres["naive"], mres["shared"]))
        assert len(res["laser"]) == len(res["naive"]) == len(targets) * R
        assert diff < 1e-5, f"laser_sweep and the naive loop disagree by {diff:.3g} (R={R})"
        assert diff_svd < 1e-5, f"truncate and svd + from_svd disagree by {diff_svd:.3g} (R={R})"
        rows.append(
            dict(
                R=R,
                n_matrices=len(targets),
                naive_s=t["naive"],
                laser_s=t["laser"],
                speedup=c.ratios["naive"],
                max_abs_diff=diff,
                svd_naive_s=ts["naive"],
                svd_shared_s=ts["shared"],
                svd_speedup=cs.ratios["naive"],
                svd_max_abs_diff=diff_svd,
            )
        )
    return rows


# ----------------------------------------------------------------------------- 3. one matrix's SVD


def bench_svd(shape: tuple[int, int], repeats: int) -> dict:
    W = torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64) / shape[1] ** 0.5
    c = compare(
        {"lapack": lambda: weights.svd(W, method="lapack"), "gram": lambda: weights.svd(W, method="gram")},
        "gram",
        repeats,
        min_run_time=0.02,
    )
    lapack, gram = c.results["lapack"], c.results["gram"]
    diff = max(
        (weights.from_svd(lapack, k, W) - weights.from_svd(gram, k, W)).abs().max().item()
        for k in (weights.rank_for(0.01, shape), weights.rank_for(0.5, shape))
    )
    assert diff < 1e-10 * lapack.S[0].item(), f"the Gram route's truncations differ from LAPACK's by {diff:.3g}"
    return dict(
        shape=list(shape),
        lapack_s=c.seconds["lapack"],
        gram_s=c.seconds["gram"],
        speedup=c.ratios["lapack"],
        max_abs_diff=diff,
    )


# ----------------------------------------------------------------------------- 2. hook overhead


@torch.no_grad()
def bench_hooks(name, model, repeats, batch: int = 8, seq: int = 32) -> list[dict]:
    tokens = torch.randint(0, model.cfg.d_vocab, (batch, seq), generator=torch.Generator().manual_seed(1))
    pattern = ["blocks.0.attn.hook_pattern"]

    def ablated():
        with hooks.ablate(model, heads=[(0, 0)]):
            return model(tokens)

    fns = {
        "forward": lambda: model(tokens),
        "run_with_cache(filtered)": lambda: model.run_with_cache(tokens, names_filter=pattern),
        "run_with_cache(all)": lambda: model.run_with_cache(tokens),
        "ablate(heads=[(0, 0)])": ablated,
    }
    c = compare(fns, "forward", repeats, min_run_time=0.02)
    return [dict(model=name, variant=v, ms=1e3 * s, ratio=c.ratios[v]) for v, s in c.seconds.items()]


def rows(laser: list[dict], overhead: list[dict], neox_sizes: dict, svd: dict) -> list[dict]:
    """The rows of the common interface (``run.py``)."""
    size = f"GPT-NeoX d_model={neox_sizes['d_model']}, {neox_sizes['n_layers']} layers"
    m, n = svd["shape"]
    out = [
        row(
            NAME,
            f"LAPACK / Gram-route SVD time, float64 {m} x {n}",
            svd["speedup"],
            "> 1x",
            svd["speedup"] > 1,
            f"{svd['lapack_s']:.2f} s vs {svd['gram_s']:.2f} s; truncations differ by {svd['max_abs_diff']:.1e}",
        )
    ]
    for r in laser:
        for key, what in (("speedup", "whole sweep"), ("svd_speedup", "SVD part only")):
            out.append(
                row(
                    NAME,
                    f"naive low_rank loop / laser_sweep time, {what} (R={r['R']}, {size})",
                    r[key],
                    "> 1x",
                    r[key] > 1,
                    f"{r['n_matrices'] * r['R']} vs {r['n_matrices']} SVDs",
                )
            )
    for r in overhead:
        if r["variant"] != "forward":
            out.append(
                row(
                    NAME,
                    f"{r['variant']} / forward time ({r['model']}, no_grad, 8x32 tokens)",
                    r["ratio"],
                    note=f"{r['ms']:.2f} ms per call",
                )
            )
    return out


def run(quick: bool) -> list[dict]:
    """The rows of one run (``--quick``: small models)."""
    return main(["--quick"] if quick else [])["rows"]


# ----------------------------------------------------------------------------- main


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small models (~20 s)")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    p.add_argument("--repeats", type=int, default=None, help="rounds per comparison (median over them)")
    p.add_argument("--json", metavar="PATH", help="also write the numbers to PATH (atomically)")
    args = p.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    repeats = args.repeats or cfg["repeats"]
    hook_repeats = args.repeats or cfg["hook_repeats"]
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    started = time.perf_counter()

    machine = dict(
        torch=torch.__version__,
        transformer_lens=importlib.metadata.version("transformer_lens"),
        threads=torch.get_num_threads(),
        cpus=os.cpu_count(),
        python=platform.python_version(),
        platform=platform.platform(),
        processor=platform.machine(),
    )
    print(
        f"mechrecall benchmarks ({'quick' if args.quick else 'full'}): torch {machine['torch']}, "
        f"TransformerLens {machine['transformer_lens']}, "
        f"{machine['threads']} thread(s) of {machine['cpus']} CPUs, Python {machine['python']}, "
        f"{machine['platform']}"
    )

    neox = load_neox(cfg["neox"])
    toy = build_toy_model(TOY, seed=0)
    sizes = ", ".join(f"{k}={v}" for k, v in cfg["neox"].items())

    print(
        f"\n1. LASER sweep vs naive low_rank loop -- GPT-NeoX ({sizes}), matrices {'+'.join(MATRICES)} "
        f"x {neox.cfg.n_layers} layers, metric = one forward on 2x16 tokens; median of {repeats}"
    )
    laser = bench_laser(neox, cfg["Rs"], repeats)
    print(
        f"{'R':>4} {'SVDs naive/laser':>17} {'naive s':>9} {'laser_sweep s':>14} {'speed-up':>9} {'max|diff|':>10}"
        f" | {'R x truncate s':>15} {'svd+R x from_svd s':>19} {'speed-up':>9}"
    )
    for r in laser:
        svds = f"{r['n_matrices'] * r['R']}/{r['n_matrices']}"
        print(
            f"{r['R']:>4} {svds:>17} {r['naive_s']:>9.3f} {r['laser_s']:>14.3f} {r['speedup']:>8.2f}x "
            f"{r['max_abs_diff']:>10.1e} | {r['svd_naive_s']:>15.3f} {r['svd_shared_s']:>19.3f} "
            f"{r['svd_speedup']:>8.2f}x"
        )

    print(f"\n2. Hook overhead under no_grad, tokens 8x32; ms per call (median of {hook_repeats}), ratio vs forward")
    overhead = bench_hooks("toy", toy, hook_repeats) + bench_hooks("gpt_neox", neox, hook_repeats)
    print(f"{'model':<9} {'variant':<26} {'ms':>8} {'ratio':>7}")
    for r in overhead:
        print(f"{r['model']:<9} {r['variant']:<26} {r['ms']:>8.3f} {r['ratio']:>6.2f}x")

    m, n = cfg["svd_shape"]
    print(f"\n3. One matrix's SVD, float64 {m} x {n}: LAPACK vs the Gram route (median of {cfg['svd_repeats']})")
    svd = bench_svd(cfg["svd_shape"], cfg["svd_repeats"])
    print(
        f"LAPACK {svd['lapack_s']:.3f} s, Gram {svd['gram_s']:.3f} s: {svd['speedup']:.1f}x; "
        f"truncations (rho 0.01, 0.5) differ by {svd['max_abs_diff']:.1e}"
    )

    total = time.perf_counter() - started
    print(f"\ntotal {total:.1f} s")
    out = dict(
        machine=machine,
        quick=args.quick,
        repeats=repeats,
        hook_repeats=hook_repeats,
        neox=cfg["neox"],
        toy=TOY,
        laser=laser,
        hook_overhead=overhead,
        svd=svd,
        total_s=total,
        rows=rows(laser, overhead, cfg["neox"], svd),
    )
    if args.json:
        atomic_write_json(args.json, out)
        print(f"wrote {args.json}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
