"""Measurements of Chen, Bruna & Bietti's noisy in-context recall (§3, App. B), on any ``HookedTransformer``.

Test metrics (``recall_metrics``, Figs 3, 8, 10-13, 19-20) are read at a batch's ``loss_mask`` positions;
interventions (``interventions``: drop / rank-truncate F₁, F₂ or the first-layer OV product) come from
``hooks`` and are undone after each measurement. Weight-space read-outs (Figs 3 right, 7, 9) are the raw
bilinear forms the model computes: no softmax, and ``1/√d_head`` only where the model uses it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import torch
from jaxtyping import Float, Int

from analyses.heads import attention_mass, attention_patterns
from analyses.ov import full_ov_circuit
from hooks import low_rank
from mechrecall._tl import HookedTransformer
from mechrecall.batch import Batch

Intervention = Callable[[HookedTransformer], AbstractContextManager]


# ----------------------------------------------------------------------------------- interventions


def has_ff(model: HookedTransformer, layer: int) -> bool:
    """Whether block ``layer`` has a feed-forward layer with an input matrix (MLP ``W_in`` or linear ``W_F``)."""
    mlp = getattr(model.blocks[layer], "mlp", None)
    return not model.cfg.attn_only and (hasattr(mlp, "W_in") or hasattr(mlp, "W_F"))


def interventions(model: HookedTransformer, rhos: Sequence[float] = (0.1, 0.2)) -> dict[str, Intervention]:
    """``{name: model -> context manager}``: ``full``; per FF layer ``l`` (1-indexed as in the paper),
    ``drop_F{l}`` (its input matrix at rank 0 — with zero biases exactly dropping it) and, for the last
    FF layer, ``F{L}_rho{ρ}``; for an attention-only model, ``OV1_rho{ρ}`` (Fig 13: the first-layer
    ``W_V W_O`` product truncated; ρ = 0 drops the head's output)."""
    out: dict[str, Intervention] = {"full": lambda m: contextlib.nullcontext()}
    ff_layers = [l for l in range(model.cfg.n_layers) if has_ff(model, l)]
    for layer in ff_layers:
        out[f"drop_F{layer + 1}"] = functools.partial(_truncate, layer=layer, matrix="mlp_in", rho=0.0)
    if ff_layers:
        for rho in rhos:
            out[f"F{ff_layers[-1] + 1}_rho{rho:g}"] = functools.partial(
                _truncate, layer=ff_layers[-1], matrix="mlp_in", rho=rho
            )
    else:
        for rho in rhos:
            out[f"OV1_rho{rho:g}"] = functools.partial(_truncate, layer=0, matrix="attn_ov", rho=rho, head=0)
    return out


def _truncate(
    model: HookedTransformer, *, layer: int, matrix: str, rho: float, head: int | None = None
) -> AbstractContextManager:
    """``hooks.low_rank`` of one matrix (undone on exit)."""
    return low_rank(model, layer, matrix, rho, head=head)


# ----------------------------------------------------------------------------------- test metrics


@torch.no_grad()
def recall_metrics(model: HookedTransformer, batch: Batch, noise_token: int) -> dict[str, float]:
    """Mean over the ``loss_mask`` positions of a clean (α = 0) test batch:

    ``p_correct`` = p(ȳ) (the target there), ``p_noise`` = p(τ), ``loss`` = cross-entropy (the "clean test
    loss"), ``acc`` = argmax accuracy, ``argmax_noise`` = fraction of argmax = τ.

    On a synthetic-IOI batch (App. J: extras ``y_distractor [B]``, the token that follows the trigger twice —
    the IOI task's subject S, while ȳ, the one that follows it once, is the indirect object IO) also
    ``p_distractor`` = p(S), ``io_s_margin`` = mean logit(IO) − logit(S) and ``io_over_s`` = the fraction of
    sequences with logit(IO) > logit(S): whether the model counts, apart from how much mass τ takes.
    """
    logits = model(batch.tokens)[batch.loss_mask]  # [n, d_vocab]
    target = batch.targets[batch.loss_mask]
    logprobs = logits.float().log_softmax(-1)
    probs = logprobs.exp()
    argmax = logits.argmax(-1)
    out = {
        "p_correct": probs.gather(-1, target[:, None]).mean().item(),
        "p_noise": probs[:, noise_token].mean().item(),
        "loss": -logprobs.gather(-1, target[:, None]).mean().item(),
        "acc": (argmax == target).float().mean().item(),
        "argmax_noise": (argmax == noise_token).float().mean().item(),
    }
    if "y_distractor" in batch.extras and batch.loss_mask is not None:
        margin = io_s_margins(logprobs, batch)
        out["p_distractor"] = probs.gather(-1, _subject(batch)[:, None]).mean().item()
        out["io_s_margin"] = margin.mean().item()
        out["io_over_s"] = (margin > 0).float().mean().item()
    return out


def _subject(batch: Batch) -> Int[torch.Tensor, " n"]:
    """S (``extras["y_distractor"]``) of the sequence of each ``loss_mask`` position."""
    assert batch.loss_mask is not None
    rows = batch.loss_mask.nonzero()[:, 0]  # the sequence of each measured position
    return batch.extras["y_distractor"].to(rows.device)[rows]


def io_s_margins(logprobs: Float[torch.Tensor, "n d_vocab"], batch: Batch) -> Float[torch.Tensor, " n"]:
    """log p(IO) − log p(S) at each ``loss_mask`` position of a synthetic-IOI batch (IO = the target ȳ there)."""
    assert batch.loss_mask is not None
    target = batch.targets[batch.loss_mask]
    return (logprobs.gather(-1, target[:, None]) - logprobs.gather(-1, _subject(batch)[:, None]))[:, 0]


def metrics_under_interventions(
    model: HookedTransformer, batch: Batch, noise_token: int, edits: dict[str, Intervention]
) -> dict[str, float]:
    """``recall_metrics`` under each intervention, flattened as ``{"{name}.{metric}": value}``."""
    out = {}
    for name, edit in edits.items():
        with edit(model):
            out.update({f"{name}.{k}": v for k, v in recall_metrics(model, batch, noise_token).items()})
    return out


# ----------------------------------------------------------------------------------- attention


@torch.no_grad()
def trigger_successor_attention(
    model: HookedTransformer, batch: Batch, layer: int = 1, head: int = 0
) -> dict[str, float]:
    """Fig 4's aggregate: attention of layer ``layer`` (0-indexed; the paper's "layer 2" is 1), from the
    ``loss_mask`` queries, on the tokens right after a trigger that are the correct output (``[q, ȳ]``)
    and on those that are the noise token (``[q, τ]``). Use a batch generated with α > 0."""
    successor, noise = batch.extras["trigger_successor"], batch.extras["noise"]
    queries = batch.loss_mask
    patterns = attention_patterns(model, batch.tokens, [layer])  # one forward pass for both masses
    correct = attention_mass(model, batch.tokens, successor & ~noise, queries, patterns=patterns)[0, head].item()
    noisy = attention_mass(model, batch.tokens, successor & noise, queries, patterns=patterns)[0, head].item()
    return {"on_correct": correct, "on_noise": noisy}


# ----------------------------------------------------------------------------------- weight-space read-outs


@torch.no_grad()
def ff_logits(
    model: HookedTransformer, layer: int, tokens: Sequence[int] | None = None
) -> Float[torch.Tensor, "n d_vocab"]:
    """``W_U F_l(W_E(i))`` for input tokens ``i`` (default all): the FF layer's direct logits on a raw
    token embedding (no position, no attention), ``+ b_U``. Fig 7 middle is this matrix."""
    if not has_ff(model, layer):
        raise ValueError(f"block {layer} has no feed-forward layer")
    ids = torch.arange(model.cfg.d_vocab) if tokens is None else torch.as_tensor(tokens)
    x = model.W_E[ids.to(model.W_E.device)][None]  # [1, n, d_model]
    return (model.blocks[layer].mlp(x)[0] @ model.W_U + model.b_U).float()


def ff_noise_margin(
    model: HookedTransformer, noise_token: int, triggers: Sequence[int] = (1,), layer: int | None = None
) -> float:
    """Fig 3 right: ``[W_U F(W_E(q))]_τ − max_{k ≠ τ} [W_U F(W_E(q))]_k`` of the last FF layer (default),
    the minimum over ``triggers``. Positive: the trigger → noise association is stored in that FF layer."""
    layer = max(l for l in range(model.cfg.n_layers) if has_ff(model, l)) if layer is None else layer
    logits = ff_logits(model, layer, list(triggers))
    others = logits.clone()
    others[:, noise_token] = float("-inf")
    return (logits[:, noise_token] - others.max(-1).values).min().item()


@torch.no_grad()
def ov_memory_matrix(model: HookedTransformer, layer: int = 1, head: int = 0) -> Float[torch.Tensor, "d_vocab d_vocab"]:
    """Fig 7 right: ``W_E W_V W_O W_U`` of head ``(layer, head)`` — identity-like for a copying head."""
    return full_ov_circuit(model, layer, head).AB.float()


@torch.no_grad()
def qk_trigger_matching(model: HookedTransformer, head: int = 0) -> Float[torch.Tensor, "d_vocab d_vocab"]:
    """Fig 9: ``S[i, j] = (W_E(j) W²_Q) · (W_E(i) W¹_V W¹_O W²_K)`` (``/√d_head`` if the model scales):
    the layer-2 score of a query token ``j`` for a key that layer 1 tagged with previous token ``i``.
    An induction head makes it large only at ``i = j ∈ Q`` (the triggers)."""
    a0, a1 = model.blocks[0].attn, model.blocks[1].attn
    query = model.W_E @ a1.W_Q[head]  # [V, d_head]
    key = model.W_E @ a0.W_V[head] @ a0.W_O[head] @ a1.W_K[head]  # [V, d_head]
    scale = model.cfg.d_head**-0.5 if model.cfg.use_attn_scale else 1.0
    return (key @ query.T * scale).float()  # [i (previous token), j (query token)]


def qk_trigger_margin(qk: Float[torch.Tensor, "d_vocab d_vocab"], trigger: int) -> float:
    """Fig 9 (left): ``S[q, q]`` minus the largest other entry of row ``q`` of :func:`qk_trigger_matching`."""
    q = trigger
    return (qk[q, q] - torch.cat([qk[q, :q], qk[q, q + 1 :]]).max()).item()


def qk_diagonal_wins(
    qk: Float[torch.Tensor, "d_vocab d_vocab"], triggers: Sequence[int]
) -> tuple[Float[torch.Tensor, " n_triggers"], Float[torch.Tensor, " n_triggers"]]:
    """Fig 9 (right): ``S[q, q]`` of each trigger and the largest off-diagonal entry of its row."""
    diag = torch.stack([qk[q, q] for q in triggers])
    off = qk.clone()
    for q in triggers:
        off[q, q] = float("-inf")
    return diag, off[list(triggers)].max(-1).values


def memory_recall_accuracy(M: Float[torch.Tensor, "n n"], exclude: Sequence[int] = ()) -> float:
    """``mean_i [argmax_j M[i, j] == i]`` over rows ``i`` not in ``exclude`` (Bietti et al.'s memory probe)."""
    rows = torch.tensor([i for i in range(M.shape[0]) if i not in set(exclude)], device=M.device)
    return (M[rows].argmax(-1) == rows).float().mean().item()


@torch.no_grad()
def previous_token_score(
    model: HookedTransformer, tokens: Int[torch.Tensor, "batch pos"], layer: int = 0, head: int = 0
) -> float:
    """Fig 7 left, aggregated: mean attention of ``(layer, head)`` from ``t ≥ 1`` to ``t − 1``."""
    from analyses.heads import previous_token_keys

    queries = torch.ones_like(tokens, dtype=torch.bool)
    queries[:, 0] = False
    return attention_mass(model, tokens, previous_token_keys(tokens), queries, layers=[layer])[0, head].item()


def rho_sweep(
    model: HookedTransformer,
    clean: Batch,
    noise_token: int,
    kind: str,
    rhos: Sequence[float] = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
    layer: int = 0,
) -> list[dict[str, float]]:
    """``recall_metrics`` with ``layer``'s ``kind`` (0-indexed; default the paper's layer 1) truncated to each ρ
    (``analyses.lowrank.laser_sweep``: one SVD)."""
    from analyses.lowrank import laser_sweep

    sweep = laser_sweep(
        model,
        lambda m: recall_metrics(m, clean, noise_token),
        layers=[layer],
        matrices=[kind],
        rhos=rhos,
        heads=[0] if kind == "attn_ov" else None,
    )
    wide = sweep.table.pivot_table(index="rho", columns="metric", values="value")
    return [{"rho": float(rho), **{k: float(v) for k, v in row.items()}} for rho, row in wide.iterrows()]


# ----------------------------------------------------------------------------------- IOI counting (App. J)

#: The no-counting baselines of "IO preferred over S" (issue 25), each scored per sequence as the probability
#: that it prefers IO (a tie, which such a rule breaks by a coin flip, is ½): none tells IO from S by counting the
#: trigger's successors.
IOI_BASELINES = {
    "most_recent": "the most recent successor of the trigger",
    "first": "the first successor of the trigger",
    "coin": "a coin flip between the two names",
    "proportional": "the trigger's successors copied in proportion to their counts (IO 1/3, S 2/3)",
    "less_often": "the name seen less often anywhere in the context (a tie: a coin flip)",
}


def _prefers(more: torch.Tensor, fewer: torch.Tensor) -> Float[torch.Tensor, " batch"]:
    """1 where ``more > fewer``, ½ where equal, 0 below: the chance a rule scoring IO by ``more`` prefers it."""
    return (more > fewer).float() + 0.5 * (more == fewer).float()


def ioi_baselines(
    tokens: Int[torch.Tensor, "batch pos"],
    trigger_positions: Int[torch.Tensor, "batch 3"],
    io: Int[torch.Tensor, " batch"],
    s: Int[torch.Tensor, " batch"],
) -> dict[str, Float[torch.Tensor, " batch"]]:
    """Each of :data:`IOI_BASELINES`' chance of preferring IO to S, per sequence, from the context alone
    (``trigger_positions``: the three in-context triggers, sorted; their successors are IO once and S twice)."""
    successors = tokens.gather(1, trigger_positions + 1)  # [B, 3]
    io, s = io[:, None], s[:, None]
    return {
        "most_recent": (successors[:, -1:] == io).float()[:, 0],
        "first": (successors[:, :1] == io).float()[:, 0],
        "coin": torch.full((tokens.shape[0],), 0.5, device=tokens.device),
        "proportional": _prefers((successors == io).sum(1), (successors == s).sum(1)),
        "less_often": _prefers((tokens == s).sum(1), (tokens == io).sum(1)),
    }


@torch.no_grad()
def io_preferred(model: HookedTransformer, batch: Batch) -> Float[torch.Tensor, " batch"]:
    """1 where the model prefers IO (ȳ) to S (the distractor) at the sequence's measured position (the per-sequence
    ``io_over_s`` of :func:`recall_metrics`), else 0."""
    if batch.loss_mask is None:
        raise ValueError("io_preferred needs a batch with a loss_mask (the measured position of each sequence)")
    logprobs = model(batch.tokens)[batch.loss_mask].float().log_softmax(-1)
    return (io_s_margins(logprobs, batch) > 0).float()


def by_position(values: Float[torch.Tensor, " batch"], slot: Int[torch.Tensor, " batch"]) -> list[float | None]:
    """The mean of ``values`` over the sequences whose IO follows the 1st / 2nd / 3rd trigger (``slot`` 0, 1, 2;
    ``None`` where no sequence has it)."""
    return [values[slot == k].mean().item() if bool((slot == k).any()) else None for k in range(3)]


def counting_summary(ours: Sequence[float | None], baselines: Mapping[str, Sequence[float | None]]) -> dict[str, Any]:
    """The counting claim's numbers from the by-position fractions (IO 1st / 2nd / 3rd successor) of ours and of
    each baseline: the best baseline (the highest mean over the three positions), ``margin_by_position`` = ours
    minus that baseline at each position, ``margin`` = their minimum (> 0: above the best baseline wherever IO
    sits), and ``control_margin`` = the same minimum for each baseline (never > 0: the best one's is 0, any
    other's mean lies below the best's, so one of its positions does), with ``control`` their maximum."""

    def mean(xs: Sequence[float | None]) -> float:
        return sum(float(x) for x in xs if x is not None) / max(1, sum(x is not None for x in xs))

    def worst(xs: Sequence[float | None], bar: Sequence[float | None]) -> float:
        return min(float(x) - float(b) for x, b in zip(xs, bar, strict=True) if x is not None and b is not None)

    best = max(baselines, key=lambda k: mean(baselines[k]))
    bar = baselines[best]
    control = {name: worst(values, bar) for name, values in baselines.items()}
    return {
        "best_baseline": best,
        "margin_by_position": [None if x is None or b is None else float(x) - float(b) for x, b in zip(ours, bar)],
        "margin": worst(ours, bar),
        "control_margin": control,
        "control": max(control.values()),
    }


def ioi_counting(model: HookedTransformer, batch: Batch) -> dict[str, Any]:
    """Whether the model counts, judged against :data:`IOI_BASELINES` on the same test sequences: "IO preferred
    over S" overall and by where IO sits among the trigger's three successors, for ours and each baseline, and
    :func:`counting_summary`."""
    ex = batch.extras
    slot = ex["ybar_slot"]
    ours = io_preferred(model, batch).to(slot.device)
    base = ioi_baselines(batch.tokens, ex["trigger_positions"], ex["ybar"], ex["y_distractor"])
    base_by = {k: by_position(v.to(slot.device), slot) for k, v in base.items()}
    return {
        "ours": ours.mean().item(),
        "ours_by_position": by_position(ours, slot),
        "baselines": {k: v.mean().item() for k, v in base.items()},
        "baselines_by_position": base_by,
        "n_by_position": [int((slot == k).sum()) for k in range(3)],
        **counting_summary(by_position(ours, slot), base_by),
    }
