"""The main job until the paper experiments land: train a toy model end to end and report on it.

A 2-layer, 1-head-per-layer, attention-only, bias-free toy transformer learns random token sequences
that repeat with a random period; an induction circuit forms (the emergence studied by Musat et al.): layer 0 attends to the
previous token, layer 1 attends to the tokens that *followed* earlier occurrences of the current one.
The run trains with checkpoints (re-running resumes), then writes ``results.json``, a training-curve PNG
and the final model checkpoint into ``--out``.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from mechrecall.builder import build_toy_model
from mechrecall.checkpoint import load_model
from mechrecall.results import Claim, write_results
from mechrecall.surgeries import ZeroBiases
from mechrecall.tasks.induction import induction_batch
from mechrecall.trainer import Batch, TrainConfig, latest_checkpoint, select_positions, train


@dataclass(frozen=True)
class DemoConfig:
    d_vocab: int = 64
    seq_len: int = 32
    d_model: int = 64
    batch_size: int = 64
    steps: int = 1000
    lr: float = 3e-3
    eval_every: int = 25
    checkpoint_every: int = 100
    seed: int = 0


def model_config(c: DemoConfig) -> dict:
    return dict(
        n_layers=2, n_heads=1, d_model=c.d_model, d_head=c.d_model, d_vocab=c.d_vocab, n_ctx=c.seq_len,
        attn_only=True, normalization_type=None,
    )


def induction_accuracy(model, test: Batch) -> float:
    """Top-1 accuracy on the predictable (second-half) positions."""
    rows, labels = select_positions(model(test.tokens), test.targets, "mask", test.loss_mask)
    return (rows.argmax(-1) == labels).float().mean().item()


def circuit_attention(model, test: Batch) -> dict[str, float]:
    """The two halves of an induction circuit, read from the attention patterns (``analyses.heads``).

    ``L0_previous_token``: layer-0 attention from each query ``t >= 1`` to key ``t - 1``.
    ``L1_induction``: layer-1 attention, from the predictable queries, on the keys ``j <= t`` whose
    previous token equals the query's token (the tokens that followed earlier occurrences of it).
    """
    from analyses.heads import attention_mass, attention_patterns, induction_keys, previous_token_keys

    tokens = test.tokens
    patterns = attention_patterns(model, tokens)
    after_first = torch.ones_like(tokens, dtype=torch.bool)
    after_first[:, 0] = False
    prev = attention_mass(model, tokens, previous_token_keys(tokens), after_first, patterns=patterns)
    induction = attention_mass(model, tokens, induction_keys(tokens), test.loss_mask, patterns=patterns)
    return {"L0_previous_token": prev[0, 0].item(), "L1_induction": induction[1, 0].item()}


def run_demo(out: str | Path, c: DemoConfig = DemoConfig(), *, progress: bool = True) -> dict:
    out = Path(out)
    model = build_toy_model(model_config(c), [ZeroBiases()], seed=c.seed)
    test = induction_batch(512, c.seq_len, c.d_vocab, torch.Generator().manual_seed(10_000 + c.seed))
    tc = TrainConfig(
        steps=c.steps, optimizer="adamw", lr=c.lr, loss_positions="mask", eval_every=c.eval_every,
        checkpoint_every=c.checkpoint_every, seed=c.seed, progress=progress,
    )
    started = time.perf_counter()
    result = train(
        model,
        lambda step, gen: induction_batch(c.batch_size, c.seq_len, c.d_vocab, gen),
        tc,
        evals={"accuracy": lambda m: induction_accuracy(m, test), "attention": lambda m: circuit_attention(m, test)},
        out_dir=out,
    )
    seconds = time.perf_counter() - started
    final = result.history["eval"][-1]
    checkpoint = latest_checkpoint(out)
    reloaded = load_model(checkpoint)
    emerged = next((row["step"] for row in result.history["eval"] if row["accuracy"] >= 0.9), None)
    results = {
        "final": final,
        "steps_to_90pct_accuracy": emerged,
        "chance_accuracy": 1 / c.d_vocab,
        "reloaded_checkpoint_accuracy": induction_accuracy(reloaded, test),
        "train_seconds_this_invocation": seconds,
        "resumed_from_step": result.resumed_from,
        "checkpoint": str(checkpoint.relative_to(out)),
        "history": result.history,
    }
    claims = [
        Claim("induction accuracy after training", final["accuracy"], None, "repeated random tokens",
              f"chance is {1 / c.d_vocab:.3f}"),
        Claim("layer-1 attention on tokens after earlier occurrences", final["attention.L1_induction"], None, "",
              "an induction head puts most of its mass there"),
        Claim("layer-0 attention on the previous token", final["attention.L0_previous_token"], None, "",
              "a previous-token head"),
    ]
    from analyses import attention_pattern_html, head_roles, head_roles_figure

    roles = head_roles(model)
    results["head_roles"] = roles.to_dict(orient="records")
    figures = {
        "training.png": _figure(result.history),
        "head_roles.png": head_roles_figure(roles, title="head roles after training"),
        "attention_L1.html": attention_pattern_html(model, test.tokens[:1], layer=1),
    }
    write_results(out, results, experiment="demo_induction", config=asdict(c), seed=c.seed, claims=claims,
                  figures=figures)
    return results


def _figure(history: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_eval) = plt.subplots(1, 2, figsize=(9, 3.2))
    ax_loss.plot([r["step"] for r in history["train"]], [r["loss"] for r in history["train"]], lw=0.8)
    ax_loss.set(xlabel="step", ylabel="train loss (predictable positions)", yscale="log", title="loss")
    steps = [r["step"] for r in history["eval"]]
    ax_eval.plot(steps, [r["accuracy"] for r in history["eval"]], label="induction accuracy")
    ax_eval.plot(steps, [r["attention.L0_previous_token"] for r in history["eval"]], label="L0 attn on previous token")
    ax_eval.plot(steps, [r["attention.L1_induction"] for r in history["eval"]], label="L1 attn after earlier occurrences")
    ax_eval.set(xlabel="step", ylim=(0, 1.02), title="emergence of the induction circuit")
    ax_eval.legend(fontsize=7)
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mechrecall demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/demo", help="output directory (re-running resumes from its checkpoints)")
    parser.add_argument("--steps", type=int, default=DemoConfig.steps, help="training steps (default %(default)s)")
    parser.add_argument("--seed", type=int, default=DemoConfig.seed, help="seed for init and data (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads; 1 is fastest for tiny models (default %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps={args.steps}; expected >= 1")
    if args.threads < 1:
        parser.error(f"--threads={args.threads}; expected >= 1")
    torch.set_num_threads(args.threads)
    results = run_demo(args.out, DemoConfig(steps=args.steps, seed=args.seed), progress=not args.no_progress)
    final = results["final"]
    print(
        f"induction accuracy {final['accuracy']:.3f} (chance {results['chance_accuracy']:.3f}); "
        f"L0 previous-token attention {final['attention.L0_previous_token']:.2f}, "
        f"L1 induction attention {final['attention.L1_induction']:.2f}; "
        f">=90% accuracy from step {results['steps_to_90pct_accuracy']}\n"
        f"wrote {Path(args.out) / 'results.json'}, training.png, head_roles.png, attention_L1.html, {results['checkpoint']}"
    )
    return 0
