"""Training step of the noisy-in-context-recall toy model (Chen, Bruna & Bietti) vs a plain-torch model of its shape.

    .venv/bin/python benchmarks/bench_noisy_icl_train_step.py            # smoke + large sizes, ~3-8 min
    .venv/bin/python benchmarks/bench_noisy_icl_train_step.py --quick    # smoke size, 5 rounds, ~15 s
    .venv/bin/python benchmarks/bench_noisy_icl_train_step.py --paper    # + d = T = 256, B = 512: + ~15 min on CPU
    .venv/bin/python benchmarks/bench_noisy_icl_train_step.py --profile  # + where the time goes: + ~30 s
    .venv/bin/python benchmarks/bench_noisy_icl_train_step.py --json runs/bench_train_step.json
    .venv/bin/python benchmarks/bench_noisy_icl_train_step.py --device cuda   # GPU (synchronised per sample)

The model is ``analyses.papers.distributional.models.two_layer_model(d_vocab=65, n_ctx=T, d_model=d, d_mlp=4d,
ff=("mlp", "mlp"))``: a TransformerLens HookedTransformer with 2 layers, one head with d_head = d, no
LayerNorm, causal attention scaled by 1/sqrt(d), ReLU MLPs; trainable W_K, W_V, W_O, W_in, W_out; frozen
W_E, W_pos, W_U and W_Q = I; every bias zero and frozen. The data is one fixed batch drawn once with
``sample_noisy_icl(NoisyICLConfig.preset("official_code", seq_len=T), B, Generator().manual_seed(0))``;
the loss is the cross-entropy on the batch's ``loss_mask`` positions (2nd+ occurrence of the trigger).

One training step = forward, loss, backward, ``SGD(lr=0.03, momentum=0.9, weight_decay=1e-4)`` step,
zero_grad. Three candidates, each training its own copy of the same initial weights:

  (a) tl       the HookedTransformer in a plain loop (forward / loss / backward / step / zero_grad);
  (b) plain    ``PlainTwoLayer`` below in the same loop: an ``nn.Module`` with the same trainable
               parameters (same shapes, copied from the TL model) computing the same function with
               plain matmuls. It *does* multiply by the frozen W_Q = I (a buffer), as TL does, so both do
               the same arithmetic; it has no bias terms at all (TL's are zero and frozen, but TL still
               adds them). Before timing, the script asserts that the logits agree to 1e-5 and the
               gradients of the loss to 1e-5 relative.
  (c) trainer  ``mechrecall.trainer.train(model, batch_fn -> the fixed batch, TrainConfig(steps=n,
               optimizer="sgd", lr=0.03, momentum=0.9, weight_decay=1e-4, loss_positions="mask",
               progress=False))``, no evals, no out_dir. "per step" is the steady state: the time between
               consecutive ``batch_fn`` calls (one whole step of the trainer's loop, its per-step
               bookkeeping -- seeded generator, finite-loss check, grad norm, ``loss.item()``, history --
               included). Its fixed cost per ``train`` call (optimiser construction and the no-grad
               validation forward on the first batch) is reported separately as ``setup ms``.

Read the ratios ``tl/plain`` = (a)/(b) and ``trainer/plain`` = (c)/(b): 1.15x = 15% slower than the plain
model; the target is <= 1.15x. Absolute times move with the machine and its load; the ratios are measured
in the same run, on the same batch, as the median over rounds of (candidate / plain) within a round. All
three take the same number of steps, so (a) and (b) follow the same training trajectory (checked: the
final losses agree).

``--profile`` adds (i) the per-step time at a tiny size (d=64, T=16, B=4), where a step is mostly Python
and dispatch overhead, and (ii) per size, a torch.profiler table of self CPU ms per step per op for (a),
(b), (c), with the TL - plain difference, and the ops that only the trainer runs (its grad norm etc.).

Timing: ``timing.interleave``: every candidate runs one warm-up sample, then ``--repeats`` rounds in which
(a), (b), (c) take turns (round-robin, so background load hits them alike). A sample is a warm-up block of n
consecutive steps then a timed block of n steps, n (the same for all three) chosen so that the fastest one's
block lasts >= ``min_time``; (a) and (b) are timed with ``timing.time_call`` (``torch.utils.benchmark.Timer``,
whose block-size estimate is the warm-up block), (c) from the timestamps in its ``batch_fn``. Reported: median
ms per step. ``--paper`` runs 3 rounds of 1 + 1 steps each, without the warm-up sample (one step takes tens
of seconds on one CPU thread).

``run(quick)`` returns the rows of ``benchmarks/run.py``: per size tl/plain and trainer/plain, target <= 1.15x.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import math
import os
import platform
import statistics
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from timing import interleave, row, time_call
from torch import nn

from analyses.papers.distributional.data.recall import NoisyICLConfig, sample_noisy_icl
from analyses.papers.distributional.models import two_layer_model
from mechrecall.batch import Batch
from mechrecall.io import atomic_write_json
from mechrecall.trainer import TrainConfig, train

NAME = "noisy_icl_train_step"

TARGET = 1.15
D_VOCAB = 65
SGD = dict(lr=0.03, momentum=0.9, weight_decay=1e-4)
SIZES = {
    "smoke": dict(d_model=64, seq_len=64, batch=64),  # preset "smoke" of analyses.papers.distributional.presets
    "large": dict(d_model=128, seq_len=128, batch=128),
    "paper": dict(d_model=256, seq_len=256, batch=512),  # the paper's size (preset "paper")
}
FULL = dict(sizes=("smoke", "large"), repeats=15, min_time=0.3)
QUICK = dict(sizes=("smoke",), repeats=5, min_time=0.15)
PAPER = dict(repeats=3, steps=1)
CANDIDATES = ("tl", "plain", "trainer")


class PlainTwoLayer(nn.Module):
    """Eq. 1 of Chen et al. in plain torch: the function of ``two_layer_model(ff=("mlp", "mlp"))``, no biases.

    ``x = W_E[z] + W_pos``; per layer ``x += softmax_causal((x W_Q)(x W_K)^T / sqrt(d)) (x W_V) W_O`` and
    ``x += relu(x W_in) W_out``; ``logits = x W_U``. Trainable: W_K, W_V, W_O, W_in, W_out (``nn.Parameter``);
    frozen: W_E, W_pos, W_U, W_Q = I (buffers).
    """

    def __init__(self, d_vocab: int, n_ctx: int, d_model: int, d_mlp: int, n_layers: int = 2):
        super().__init__()
        self.scale = math.sqrt(d_model)
        self.register_buffer("W_E", torch.zeros(d_vocab, d_model))
        self.register_buffer("W_pos", torch.zeros(n_ctx, d_model))
        self.register_buffer("W_U", torch.zeros(d_model, d_vocab))
        self.register_buffer("causal", torch.ones(n_ctx, n_ctx, dtype=torch.bool).tril())
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            layer = nn.Module()
            layer.register_buffer("W_Q", torch.eye(d_model))
            for name, shape in (
                ("W_K", (d_model, d_model)),
                ("W_V", (d_model, d_model)),
                ("W_O", (d_model, d_model)),
                ("W_in", (d_model, d_mlp)),
                ("W_out", (d_mlp, d_model)),
            ):
                setattr(layer, name, nn.Parameter(torch.zeros(shape)))
            self.layers.append(layer)

    @classmethod
    def from_hooked(cls, model) -> "PlainTwoLayer":
        """A copy of ``model``'s weights (every frozen bias must be zero: they are left out here)."""
        cfg = model.cfg
        assert cfg.n_heads == 1 and cfg.d_head == cfg.d_model and cfg.normalization_type is None
        for name, p in model.named_parameters():
            if ".b_" in name or name.startswith("b_"):
                assert not p.requires_grad and not p.detach().any(), f"{name} is not a frozen zero bias"
        plain = cls(cfg.d_vocab, cfg.n_ctx, cfg.d_model, cfg.d_mlp, cfg.n_layers)
        with torch.no_grad():
            plain.W_E.copy_(model.embed.W_E)
            plain.W_pos.copy_(model.pos_embed.W_pos)
            plain.W_U.copy_(model.unembed.W_U)
            for layer, block in zip(plain.layers, model.blocks):
                for name in ("W_Q", "W_K", "W_V", "W_O"):
                    getattr(layer, name).copy_(getattr(block.attn, name)[0])  # [1, d, d] -> [d, d]
                layer.W_in.copy_(block.mlp.W_in)
                layer.W_out.copy_(block.mlp.W_out)
        return plain

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.shape[1]
        x = self.W_E[tokens] + self.W_pos[:T]
        causal = self.causal[:T, :T]
        for layer in self.layers:
            q, k, v = x @ layer.W_Q, x @ layer.W_K, x @ layer.W_V
            scores = (q @ k.transpose(1, 2) / self.scale).masked_fill(~causal, float("-inf"))
            x = x + (scores.softmax(-1) @ v) @ layer.W_O
            x = x + torch.relu(x @ layer.W_in) @ layer.W_out
        return x @ self.W_U


# ----------------------------------------------------------------------------- setup


def make_batch(T: int, B: int) -> Batch:
    return sample_noisy_icl(NoisyICLConfig.preset("official_code", seq_len=T), B, torch.Generator().manual_seed(0))


def make_tl(d: int, T: int):
    return two_layer_model(d_vocab=D_VOCAB, n_ctx=T, d_model=d, d_mlp=4 * d, ff=("mlp", "mlp"), seed=0)


def masked_loss(model, batch: Batch) -> torch.Tensor:
    logits = model(batch.tokens)
    return F.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask])


def trainable(model) -> list[torch.Tensor]:
    return [p for p in model.parameters() if p.requires_grad]


def check_equivalent(tl, plain, batch: Batch) -> dict:
    """Assert that the two models compute the same logits and the same gradients; return the differences."""
    n_tl, n_plain = sum(p.numel() for p in trainable(tl)), sum(p.numel() for p in trainable(plain))
    assert n_tl == n_plain, f"trainable parameters: TL {n_tl}, plain {n_plain}"
    with torch.no_grad():
        logit_diff = (tl(batch.tokens) - plain(batch.tokens)).abs().max().item()
    assert logit_diff < 1e-5, f"TL and plain logits differ by {logit_diff:.3g}"
    masked_loss(tl, batch).backward()
    masked_loss(plain, batch).backward()
    grads_tl = {n: p.grad for n, p in tl.named_parameters() if p.requires_grad}
    grad_diff = 0.0
    for l, layer in enumerate(plain.layers):
        pairs = [
            (layer.W_K, grads_tl[f"blocks.{l}.attn.W_K"][0]),
            (layer.W_V, grads_tl[f"blocks.{l}.attn.W_V"][0]),
            (layer.W_O, grads_tl[f"blocks.{l}.attn.W_O"][0]),
            (layer.W_in, grads_tl[f"blocks.{l}.mlp.W_in"]),
            (layer.W_out, grads_tl[f"blocks.{l}.mlp.W_out"]),
        ]
        for p, g in pairs:
            grad_diff = max(grad_diff, ((p.grad - g).abs().max() / g.abs().max().clamp_min(1e-30)).item())
    assert grad_diff < 1e-5, f"TL and plain gradients differ by {grad_diff:.3g} (relative)"
    for m in (tl, plain):
        m.zero_grad(set_to_none=True)
    return dict(max_abs_logit_diff=logit_diff, max_rel_grad_diff=grad_diff)


def to_device(model, device: torch.device):
    with contextlib.redirect_stdout(io.StringIO()):  # HookedTransformer.to prints "Moving model to device"
        return model.to(device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def loop_runner(model, batch: Batch, device: torch.device):
    """``run(n)``: a block of n steps of the plain loop to warm up, then n steps timed with ``timing.time_call``
    (Timer's ``blocked_autorange(min_run_time=0)``: its block-size estimate is the warm-up block); seconds per step."""
    opt = torch.optim.SGD(trainable(model), **SGD)

    def steps(n: int) -> None:
        for _ in range(n):
            loss = masked_loss(model, batch)
            loss.backward()
            opt.step()
            opt.zero_grad()

    return lambda n: time_call(lambda: steps(n), min_run_time=0.0).median / n


def trainer_runner(model, batch: Batch, device: torch.device, setup: list):
    """``run(n)``: one ``train(steps=n)`` call to warm up, then one timed; returns its steady-state seconds per
    step (appends the setup times to ``setup``). The steady state is the time between consecutive ``batch_fn``
    calls, read from timestamps inside the trainer's loop: a Timer around ``train()`` would include its setup."""
    stamps: list[float] = []

    def batch_fn(step: int, generator: torch.Generator) -> Batch:
        sync(device)
        stamps.append(time.perf_counter())
        return batch

    def train_once(n: int) -> float:
        stamps.clear()
        sync(device)
        t = time.perf_counter()
        train(model, batch_fn, TrainConfig(steps=n, optimizer="sgd", loss_positions="mask", progress=False, **SGD))
        sync(device)
        end = time.perf_counter()
        assert len(stamps) == n + 1  # the validation forward, then one call per step
        setup.append(stamps[1] - t)  # optimiser + validation forward (+ the first batch_fn call)
        return (end - stamps[1]) / n

    def run(n: int) -> float:
        train_once(n)
        return train_once(n)

    return run


def measure(runners: dict, repeats: int, min_time: float, steps: int | None = None, warmup: bool = True) -> dict:
    """Median seconds per step of each runner over ``repeats`` interleaved rounds (``timing.interleave``).

    A sample is a warm-up block of n steps and a timed block of n steps, n the same for every runner, so
    (a) and (b) follow the same training trajectory. Ratios: the median of the per-round ratios to plain.
    """
    n = steps
    if warmup:  # one warm-up sample each, which also picks n: the same for every runner
        fastest = min(run(2) for run in runners.values())
        n = n or max(2, math.ceil(min_time / max(fastest, 1e-9)))
    c = interleave({name: (lambda run=run: run(n)) for name, run in runners.items()}, "plain", repeats)
    return {
        name: dict(s=c.seconds[name], ratio=c.ratios[name], steps_per_sample=n, samples=c.samples[name])
        for name in runners
    }


def setup_candidates(size: dict, device: torch.device) -> tuple[dict, dict, Batch, list, dict]:
    """Models (two TL copies of the same init, the plain copy of one), runners, the fixed batch, the
    trainer's setup-time list, and the TL-vs-plain differences (asserted small)."""
    d, T, B = size["d_model"], size["seq_len"], size["batch"]
    batch = make_batch(T, B).to(device)
    models = {c: make_tl(d, T) for c in ("tl", "trainer")}
    models["plain"] = PlainTwoLayer.from_hooked(models["tl"])
    models = {c: to_device(m, device) for c, m in models.items()}
    diffs = check_equivalent(models["tl"], models["plain"], batch)
    setup: list[float] = []
    runners = {
        "tl": loop_runner(models["tl"], batch, device),
        "plain": loop_runner(models["plain"], batch, device),
        "trainer": trainer_runner(models["trainer"], batch, device, setup),
    }
    return models, runners, batch, setup, diffs


def bench_size(
    name: str,
    size: dict,
    repeats: int,
    min_time: float,
    device: torch.device,
    steps: int | None = None,
    warmup: bool = True,
) -> dict:
    models, runners, batch, setup, diffs = setup_candidates(size, device)
    t = measure(runners, repeats, min_time, steps=steps, warmup=warmup)
    with torch.no_grad():  # (a) and (b) trained the same trajectory (the trainer's momentum restarts per call)
        losses = {c: masked_loss(m, batch).item() for c, m in models.items()}
    paired = {c: t[c]["ratio"] for c in CANDIDATES}  # median over rounds of (candidate / plain) in the same round
    return dict(
        size=name,
        **size,
        d_mlp=4 * size["d_model"],
        loss_tokens=int(batch.loss_mask.sum()),
        **diffs,
        ms={c: 1e3 * t[c]["s"] for c in CANDIDATES},
        ratio=paired,
        steps_per_sample=t["plain"]["steps_per_sample"],
        samples_ms={c: [1e3 * s for s in t[c]["samples"]] for c in CANDIDATES},
        trainer_setup_ms=1e3 * statistics.median(setup) if setup else None,
        final_loss=losses,
    )


# ----------------------------------------------------------------------------- profile


def op_profile(size: dict, device: torch.device, steps: int, rounds: int) -> tuple[dict, dict]:
    """Self CPU ms per step of every aten/optimizer op, per candidate (torch.profiler, interleaved rounds)."""
    from torch.profiler import ProfilerActivity, profile

    _, runners, *_ = setup_candidates(size, device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    ops = {c: {} for c in runners}
    wall = {c: [] for c in runners}
    for run in runners.values():
        run(min(3, steps))
    for _ in range(rounds):
        for c, run in runners.items():
            with profile(activities=activities) as prof:
                wall[c].append(run(steps))  # a warm-up block and a timed block of ``steps`` steps each
            for e in prof.key_averages():
                ops[c][e.key] = ops[c].get(e.key, 0.0) + e.self_cpu_time_total / 1e3 / (2 * steps * rounds)
    return ops, {c: 1e3 * statistics.median(w) for c, w in wall.items()}


def profile_report(name: str, size: dict, device: torch.device, top: int = 16) -> dict:
    """Print where a step's time goes in (a), (b), (c): torch.profiler self CPU time per op, ms per step."""
    work = size["d_model"] * size["seq_len"] * size["batch"]
    steps, rounds = (10, 3) if work <= 64**3 else (2, 2) if work <= 128**3 else (1, 1)
    ops, wall = op_profile(size, device, steps, rounds)
    keys = sorted(set().union(*ops.values()), key=lambda k: -max(o.get(k, 0.0) for o in ops.values()))
    print(
        f"\n-- profile, size {name} (d={size['d_model']}, T={size['seq_len']}, B={size['batch']}): torch.profiler "
        f"self CPU ms per step, {rounds} interleaved rounds x {steps} steps (profiler overhead included; the "
        f"trainer's ops include its per-call setup, one no-grad forward per {steps} steps, its wall time does not)"
    )
    print(f"{'op':<44} {'tl':>8} {'plain':>8} {'trainer':>8} {'tl-plain':>9}")
    for k in keys[:top]:
        v = {c: ops[c].get(k, 0.0) for c in CANDIDATES}
        print(f"{k[:44]:<44} {v['tl']:>8.2f} {v['plain']:>8.2f} {v['trainer']:>8.2f} {v['tl'] - v['plain']:>+9.2f}")
    totals = {c: sum(o.values()) for c, o in ops.items()}
    print(
        f"{'sum of self CPU (all ops)':<44} {totals['tl']:>8.2f} {totals['plain']:>8.2f} {totals['trainer']:>8.2f}"
        f" {totals['tl'] - totals['plain']:>+9.2f}"
    )
    print(
        f"{'wall ms per step (while profiled)':<44} {wall['tl']:>8.2f} {wall['plain']:>8.2f} {wall['trainer']:>8.2f}"
        f" {wall['tl'] - wall['plain']:>+9.2f}"
    )
    only_trainer = {k: v for k, v in ops["trainer"].items() if k not in ops["tl"] and v >= 0.005}
    if only_trainer:
        print(
            "ops only in the trainer (ms/step): "
            + ", ".join(f"{k} {v:.3f}" for k, v in sorted(only_trainer.items(), key=lambda kv: -kv[1]))
        )
    return dict(size=name, steps=steps, rounds=rounds, wall_ms=wall, ops_ms={c: dict(o) for c, o in ops.items()})


def overhead_floor(device: torch.device, repeats: int) -> dict:
    """Per-step ms at a tiny size (d=64, T=16, B=4), where the step is mostly Python and dispatch overhead."""
    size = dict(d_model=64, seq_len=16, batch=4)
    _, runners, *_ = setup_candidates(size, device)
    t = measure(runners, repeats, 0.15)
    ms = {c: 1e3 * t[c]["s"] for c in CANDIDATES}
    print(
        f"\n-- fixed per-step overhead, tiny size (d=64, T=16, B=4; median of {repeats} rounds): "
        + ", ".join(f"{c} {ms[c]:.2f} ms" for c in CANDIDATES)
        + f"; tl - plain = {ms['tl'] - ms['plain']:.2f} ms, trainer - tl = {ms['trainer'] - ms['tl']:.2f} ms"
    )
    return dict(size=size, ms=ms)


# ----------------------------------------------------------------------------- main


def rows(results: list[dict]) -> list[dict]:
    """The rows of the common interface (``run.py``)."""
    out = []
    for r in results:
        size = f"{r['size']}: d={r['d_model']}, T={r['seq_len']}, B={r['batch']}"
        for c, what in (("tl", "HookedTransformer loop"), ("trainer", "mechrecall.trainer.train")):
            ms = r["ms"][c], r["ms"]["plain"]
            out.append(
                row(
                    NAME,
                    f"{what} / plain-torch training step time ({size})",
                    r["ratio"][c],
                    f"<= {TARGET:.2f}x",
                    r["ratio"][c] <= TARGET,
                    f"{ms[0]:.1f} vs {ms[1]:.1f} ms per step",
                )
            )
    return out


def run(quick: bool) -> list[dict]:
    """The rows of one run (``--quick``: smoke size, 5 rounds)."""
    return main(["--quick"] if quick else [])["rows"]


def print_table(rows: list[dict]) -> None:
    print(
        f"{'size':<6} {'d':>4} {'T':>4} {'B':>4} {'loss pos':>8} | {'tl ms':>9} {'plain ms':>9} {'trainer ms':>10}"
        f" | {'tl/plain':>8} {'trainer/plain':>13} | {'setup ms':>9} {'|dlogit|':>9}"
    )
    for r in rows:
        ms, ratio = r["ms"], r["ratio"]
        flag = lambda x: " " if x <= TARGET else "!"  # noqa: E731
        print(
            f"{r['size']:<6} {r['d_model']:>4} {r['seq_len']:>4} {r['batch']:>4} {r['loss_tokens']:>8} | "
            f"{ms['tl']:>9.2f} {ms['plain']:>9.2f} {ms['trainer']:>10.2f} | {ratio['tl']:>7.2f}x{flag(ratio['tl'])}"
            f" {ratio['trainer']:>12.2f}x{flag(ratio['trainer'])} | {r['trainer_setup_ms']:>9.1f} "
            f"{r['max_abs_logit_diff']:>9.1e}"
        )


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke size only, 5 rounds (~15 s)")
    p.add_argument(
        "--paper", action="store_true", help="also d = T = 256, B = 512: 3 rounds of 1 + 1 steps (slow on CPU)"
    )
    p.add_argument("--profile", action="store_true", help="also profile (a), (b) and the trainer at each size")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    p.add_argument("--repeats", type=int, default=None, help="rounds per size (median over them)")
    p.add_argument("--device", default="cpu", help="torch device (default cpu; cuda is synchronised per sample)")
    p.add_argument("--json", metavar="PATH", help="also write the numbers to PATH (atomically)")
    args = p.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    repeats = args.repeats or cfg["repeats"]
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    started = time.perf_counter()

    machine = dict(
        torch=torch.__version__,
        transformer_lens=importlib.metadata.version("transformer_lens"),
        threads=torch.get_num_threads(),
        cpus=os.cpu_count(),
        device=str(device),
        device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else platform.machine(),
        python=platform.python_version(),
        platform=platform.platform(),
    )
    print(
        f"noisy-ICL training step ({'quick' if args.quick else 'full'}{' + paper' if args.paper else ''}): "
        f"torch {machine['torch']}, TransformerLens {machine['transformer_lens']}, {machine['threads']} thread(s) "
        f"of {machine['cpus']} CPUs, device {machine['device']} ({machine['device_name']}), "
        f"Python {machine['python']}, {machine['platform']}"
    )
    print(
        f"one step = forward + masked CE + backward + SGD(lr=0.03, momentum=0.9, wd=1e-4) + zero_grad; "
        f"median ms per step over {repeats} interleaved rounds (>= {cfg['min_time']:.2f} s each); ratios = median "
        f"of the per-round ratios; '!' = above the {TARGET:.2f}x target"
    )

    results = []
    for name in cfg["sizes"]:
        results.append(bench_size(name, SIZES[name], repeats, cfg["min_time"], device))
    if args.paper:
        steps = PAPER["steps"]
        print(f"(paper size: {PAPER['repeats']} rounds of {steps} + {steps} steps, no warm-up sample)")
        results.append(bench_size("paper", SIZES["paper"], PAPER["repeats"], 0.0, device, steps=steps, warmup=False))
    print()
    print_table(results)
    print(
        "setup ms = the trainer's fixed cost per train() call (optimiser + no-grad validation forward), "
        "not in 'trainer ms'; |dlogit| = max |TL - plain| logit before training"
    )
    print(
        "checks: max relative gradient difference TL vs plain "
        + ", ".join(f"{r['size']} {r['max_rel_grad_diff']:.1e}" for r in results)
        + "; |loss TL - loss plain| after the same training steps "
        + ", ".join(f"{r['size']} {abs(r['final_loss']['tl'] - r['final_loss']['plain']):.1e}" for r in results)
    )

    profiled = None
    if args.profile:
        names = cfg["sizes"] + (("paper",) if args.paper else ())
        profiled = dict(floor=overhead_floor(device, repeats), ops=[profile_report(n, SIZES[n], device) for n in names])

    total = time.perf_counter() - started
    print(f"\ntotal {total:.1f} s")
    out = dict(
        machine=machine,
        quick=args.quick,
        paper=args.paper,
        repeats=repeats,
        min_time=cfg["min_time"],
        sgd=SGD,
        target=TARGET,
        sizes=results,
        profile=profiled,
        total_s=total,
        rows=rows(results),
    )
    if args.json:
        atomic_write_json(args.json, out)
        print(f"wrote {args.json}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
