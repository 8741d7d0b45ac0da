"""Noisy in-context recall: data generation as a fraction of one training step, at every preset.

    .venv/bin/python benchmarks/bench_noisy_icl_datagen.py             # micro, smoke, laptop, paper
    .venv/bin/python benchmarks/bench_noisy_icl_datagen.py --quick     # micro, smoke, laptop
    .venv/bin/python benchmarks/bench_noisy_icl_datagen.py --device cuda

Per preset of ``python -m analyses.noisy_icl`` (its ``NOISY_ICL_PRESETS``: d, T, batch, d_mlp; ``official_code`` data at
α = 0.5), two candidates on the same device, timed in the same rounds (``timing.compare``):

  step  one SGD step of the two-layer MLP/MLP model (forward, masked next-token loss, backward, update) on a
        fixed batch, as ``mechrecall.trainer`` does it;
  data  one batch from ``noisy_icl_batch_fn(cfg, batch, device=...)`` as ``train_run`` builds it: on the CPU
        drawn with the trainer's generator, on an accelerator drawn there (seeded from the CPU generator).

Reported per preset: the ratio data / step (the median of the per-round ratios), target <= 0.10 — the generator
must not become the bottleneck of training. Absolute times move with the machine and its load; the ratio is
measured within each round, so background load hits both alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

import torch
from timing import compare, row

from analyses.papers.distributional.data.recall import NoisyICLConfig, noisy_icl_batch_fn
from analyses.papers.distributional.models import two_layer_model
from analyses.papers.distributional.presets import NOISY_ICL_PRESETS as PRESETS
from mechrecall.trainer import next_token_loss

NAME = "noisy_icl_datagen"
TARGET = 0.10


def candidates(preset: str, device: torch.device) -> dict:
    """``{"step": f, "data": g}``: one training step and one batch of the preset, on ``device``."""
    p = PRESETS[preset]
    cfg = NoisyICLConfig.preset("official_code", seq_len=p.seq_len, alpha=0.5)
    model = two_layer_model(d_vocab=cfg.d_vocab, n_ctx=p.seq_len, d_model=p.d_model, d_mlp=p.d_mlp, seed=0)
    if device.type != "cpu":
        model.to(device)
    batch_fn = noisy_icl_batch_fn(cfg, p.batch, device=None if device.type == "cpu" else device)
    batch = batch_fn(0, torch.Generator().manual_seed(0)).to(device)
    params = [q for q in model.parameters() if q.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.03, momentum=0.9, weight_decay=1e-4)
    state = {"step": 0}

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        next_token_loss(model, batch, "mask").backward()
        optimizer.step()
        sync()

    def data() -> None:
        state["step"] += 1
        batch_fn(state["step"], torch.Generator().manual_seed(state["step"]))
        sync()

    return {"step": step, "data": data}


def measure(presets: list[str], device: torch.device, rounds: int, min_run_time: float) -> list[dict]:
    out = []
    for preset in presets:
        c = compare(candidates(preset, device), baseline="step", rounds=rounds, min_run_time=min_run_time, warmup=True)
        p = PRESETS[preset]
        out.append(
            dict(
                preset=preset,
                d=p.d_model,
                T=p.seq_len,
                batch=p.batch,
                d_mlp=p.d_mlp,
                step_ms=1e3 * c.seconds["step"],
                data_ms=1e3 * c.seconds["data"],
                ratio=c.ratios["data"],
            )
        )
    return out


def rows(results: list[dict], device: torch.device) -> list[dict]:
    return [
        row(
            NAME,
            f"data generation / training step, {r['preset']} (d = {r['d']}, T = {r['T']}, batch "
            f"{r['batch']}, {device.type})",
            r["ratio"],
            target=f"<= {TARGET:.2f}",
            ok=r["ratio"] <= TARGET,
            note=f"data {r['data_ms']:.2f} ms, step {r['step_ms']:.1f} ms",
        )
        for r in results
    ]


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def run(quick: bool) -> list[dict]:
    """The rows of ``benchmarks/run.py``: per preset, data generation / training step (target <= 10 %)."""
    device = default_device()
    presets = ["micro", "smoke", "laptop"] + ([] if quick and device.type == "cpu" else ["paper"])
    return rows(measure(presets, device, rounds=3 if quick else 5, min_run_time=0.05 if quick else 0.2), device)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="micro, smoke and laptop only, fewer rounds")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--presets", nargs="+", default=None, choices=sorted(PRESETS))
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default %(default)s)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device) if args.device else default_device()
    presets = args.presets or (["micro", "smoke", "laptop"] + ([] if args.quick else ["paper"]))
    results = measure(presets, device, rounds=3 if args.quick else 5, min_run_time=0.05 if args.quick else 0.2)
    print(
        f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {device}, "
        f"{torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs"
    )
    print(f"{'preset':<8} {'d':>4} {'T':>4} {'batch':>5} {'data ms':>9} {'step ms':>9} {'data/step':>9}")
    for r in results:
        print(
            f"{r['preset']:<8} {r['d']:>4} {r['T']:>4} {r['batch']:>5} {r['data_ms']:>9.2f} {r['step_ms']:>9.1f} "
            f"{r['ratio']:>9.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
