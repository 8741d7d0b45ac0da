"""The induction-circuit demo (part ``demo`` of ``python -m analyses.induction_emergence``).

A 2-layer, 1-head-per-layer, attention-only, bias-free toy transformer learns random token sequences
that repeat with a random period; an induction circuit forms (the emergence studied by Musat et al.):
layer 0 attends to the previous token, layer 1 attends to the tokens that *followed* earlier occurrences
of the current one.
The run trains with checkpoints (re-running resumes); ``analyses.head_roles`` then finds the circuit.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch

from mechrecall.builder import build_toy_model
from mechrecall.checkpoint import load_model
from mechrecall.claims import at_least
from mechrecall.errors import UsageError
from mechrecall.experiment import Context, PartResult
from mechrecall.sequences import induction_batch
from mechrecall.surgeries import ZeroBiases
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


#: Training steps of each preset (``--steps`` overrides).
PRESET_STEPS = {"micro": 150, "smoke": 1000, "paper": 3000}


def model_config(c: DemoConfig) -> dict:
    return dict(
        n_layers=2,
        n_heads=1,
        d_model=c.d_model,
        d_head=c.d_model,
        d_vocab=c.d_vocab,
        n_ctx=c.seq_len,
        attn_only=True,
        normalization_type=None,
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


def part_demo(ctx: Context) -> PartResult:
    """The foundation demo: train the 2-layer attention-only model on periodic random tokens, find its circuit."""
    c = DemoConfig(steps=ctx.options.get("steps") or PRESET_STEPS[ctx.preset], seed=ctx.seed)
    out = ctx.run_dir("demo")
    model = build_toy_model(model_config(c), [ZeroBiases()], seed=c.seed)
    if ctx.device:
        model.to(ctx.device)
    test = induction_batch(512, c.seq_len, c.d_vocab, torch.Generator().manual_seed(10_000 + c.seed)).to(
        model.cfg.device
    )
    tc = TrainConfig(
        steps=c.steps,
        optimizer="adamw",
        lr=c.lr,
        loss_positions="mask",
        eval_every=c.eval_every,
        checkpoint_every=c.checkpoint_every,
        seed=c.seed,
        progress=ctx.progress,
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
    reloaded = load_model(checkpoint).to(model.cfg.device)
    emerged = next((row["step"] for row in result.history["eval"] if row["accuracy"] >= 0.9), None)
    from analyses.attention_html import attention_pattern_html
    from analyses.heads import head_roles, head_roles_figure

    roles = head_roles(model)
    score = {(r["layer"], r["head"], r["score"]): r["value"] for r in roles.to_dict(orient="records")}
    results = {
        "config": asdict(c),
        "final": final,
        "steps_to_90pct_accuracy": emerged,
        "chance_accuracy": 1 / c.d_vocab,
        "reloaded_checkpoint_accuracy": induction_accuracy(reloaded, test),
        "train_seconds_this_invocation": seconds,
        "resumed_from_step": result.resumed_from,
        "checkpoint": str(checkpoint.relative_to(ctx.out)),
        "head_roles": roles.to_dict(orient="records"),
        "history": result.history,
    }
    claims = [
        ctx.claim(
            "demo",
            "induction_accuracy",
            "a 2-layer attention-only model learns in-context copying (induction accuracy on repeated random tokens)",
            final["accuracy"],
            at_least(0.6, partial=0.2),
            where="§2 (the induction task)",
            note=f"chance is {1 / c.d_vocab:.3f}",
        ),
        ctx.claim(
            "demo",
            "previous_token_head_in_layer0",
            "the previous-token head is in layer 0 (head-role score L0 minus L1)",
            score[(0, 0, "previous_token")] - score[(1, 0, "previous_token")],
            at_least(0.0),
            where="§2 (the induction circuit)",
        ),
        ctx.claim(
            "demo",
            "induction_head_in_layer1",
            "the induction head is in layer 1 (head-role score L1 minus L0)",
            score[(1, 0, "induction")] - score[(0, 0, "induction")],
            at_least(0.0),
            where="§2 (the induction circuit)",
        ),
    ]
    figures = {
        "demo_training.png": _figure(result.history),
        "demo_head_roles.png": head_roles_figure(roles, title="head roles after training"),
        "demo_attention_L1.html": attention_pattern_html(model, test.tokens[:1].cpu(), layer=1),
    }
    ctx.say(
        f"induction accuracy {final['accuracy']:.3f} (chance {1 / c.d_vocab:.3f}); L0 previous-token attention "
        f"{final['attention.L0_previous_token']:.2f}, L1 induction attention {final['attention.L1_induction']:.2f}"
    )
    return PartResult(results, claims, figures, footer=f"{c.steps} steps, d_model {c.d_model}, vocabulary {c.d_vocab}")


def _figure(history: dict):
    from analyses.plotting import subplots

    fig, (ax_loss, ax_eval) = subplots(1, 2, figsize=(9, 3.2))
    ax_loss.plot([r["step"] for r in history["train"]], [r["loss"] for r in history["train"]], lw=0.8)
    ax_loss.set(xlabel="step", ylabel="train loss (predictable positions)", yscale="log", title="loss")
    steps = [r["step"] for r in history["eval"]]
    ax_eval.plot(steps, [r["accuracy"] for r in history["eval"]], label="induction accuracy")
    ax_eval.plot(steps, [r["attention.L0_previous_token"] for r in history["eval"]], label="L0 attn on previous token")
    ax_eval.plot(
        steps, [r["attention.L1_induction"] for r in history["eval"]], label="L1 attn after earlier occurrences"
    )
    ax_eval.set(xlabel="step", ylim=(0, 1.02), title="emergence of the induction circuit")
    ax_eval.legend(fontsize=7)
    fig.tight_layout()
    return fig


def check(ctx: Context) -> None:
    """Options, checked before any work."""
    steps = ctx.options.get("steps")
    if steps is not None and steps < 1:
        raise UsageError(f"--steps {steps}; expected an integer >= 1")
