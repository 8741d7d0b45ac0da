"""Head roles: per-(layer, head) scores that say what each attention head does.

Attention scores are all one quantity, the **attention mass from query positions A to key positions
B**: for each head, the mean over selected queries ``q`` (and prompts) of ``sum_{k in B(q)} A[q, k]``
(``attention_mass``). The named roles choose B:

- ``previous_token``: ``B(q) = {q - 1}``, queries ``q >= 1``;
- ``duplicate_token``: earlier positions holding the same token, ``B(q) = {k < q : x_k = x_q}``;
- ``induction``: positions right after earlier occurrences of the current token,
  ``B(q) = {1 <= k <= q : x_{k-1} = x_q}`` (Olsson et al. 2022) — on repeated random tokens, the
  token the model should copy;

queries without any key in ``B(q)`` are skipped. With every query kept, ``attention_mass`` is exactly
TransformerLens' ``head_detector.detect_head(..., error_measure="mul")`` (tested).

The **copying score** is weight-based (Elhage et al. 2021): for the full OV circuit
``W_E W_V^h W_O^h W_U`` (``[d_vocab, d_vocab]``), ``sum_i Re(lambda_i) / sum_i |lambda_i|`` over its
eigenvalues — +1 for a head that copies the attended token to the output, computed on the small
``d_head x d_head`` matrix via ``FactoredMatrix`` (LayerNorm ignored).

Default prompts are repeated random tokens drawn from the model's own vocabulary (TL's
``evals.induction_loss`` draws ids 100-20000, which breaks toy vocabularies), with the tokenizer's BOS
prepended when the model prepends one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pandas as pd
import torch
from jaxtyping import Bool, Float, Int

from analyses.plotting import heatmap, layer_head_table
from mechrecall._tl import HookedTransformer, get_act_name
from mechrecall.checks import check_layers
from mechrecall.sequences import repeated_random_tokens

ATTENTION_ROLES = ("previous_token", "duplicate_token", "induction")
ROLES = (*ATTENTION_ROLES, "copying")

if TYPE_CHECKING:
    from matplotlib.figure import Figure


# ----------------------------------------------------------------------------------- prompts


def _bos(model: HookedTransformer) -> int | None:
    tok = getattr(model, "tokenizer", None)
    if tok is not None and getattr(model.cfg, "default_prepend_bos", False) and tok.bos_token_id is not None:
        return int(tok.bos_token_id)
    return None


def repeated_tokens(
    model: HookedTransformer, *, batch: int = 8, half_len: int | None = None, seed: int = 0
) -> tuple[Int[torch.Tensor, "batch pos"], int]:
    """Repeated random tokens from the model's vocabulary: ``[BOS] x_1..x_L x_1..x_L``.

    Returns ``(tokens [batch, (1) + 2L], offset)`` where ``offset`` is 1 if a BOS was prepended.
    ``half_len`` defaults to ``min(64, (n_ctx - offset) // 2)``; ids are drawn from
    ``[0, min(d_vocab, len(tokenizer)))``.
    """
    bos = _bos(model)
    offset = int(bos is not None)
    max_half = (model.cfg.n_ctx - offset) // 2
    half_len = min(64, max_half) if half_len is None else half_len
    if not 2 <= half_len <= max_half:
        raise ValueError(f"half_len={half_len!r}; expected 2..{max_half} for n_ctx={model.cfg.n_ctx}")
    vocab = model.cfg.d_vocab
    if getattr(model, "tokenizer", None) is not None:
        vocab = min(vocab, len(model.tokenizer))
    tokens = repeated_random_tokens(batch, half_len, vocab, torch.Generator().manual_seed(seed))
    if bos is not None:
        tokens = torch.cat([torch.full((batch, 1), bos), tokens], dim=1)
    return tokens.to(model.cfg.device), offset


# ----------------------------------------------------------------------------------- key masks


def previous_token_keys(tokens: Int[torch.Tensor, "batch pos"]) -> Bool[torch.Tensor, "batch q k"]:
    """``B(q) = {q - 1}``."""
    n = tokens.shape[1]
    eye = torch.eye(n, dtype=torch.bool, device=tokens.device)
    keys = torch.zeros(n, n, dtype=torch.bool, device=tokens.device)
    keys[1:, :-1] = eye[1:, 1:]
    return keys.expand(tokens.shape[0], n, n)


def duplicate_token_keys(tokens: Int[torch.Tensor, "batch pos"]) -> Bool[torch.Tensor, "batch q k"]:
    """``B(q) = {k < q : x_k = x_q}``."""
    same = tokens[:, :, None] == tokens[:, None, :]
    return same & torch.ones_like(same[0]).tril(-1)


def induction_keys(tokens: Int[torch.Tensor, "batch pos"]) -> Bool[torch.Tensor, "batch q k"]:
    """``B(q) = {1 <= k <= q : x_{k-1} = x_q}``: the tokens that followed earlier occurrences of ``x_q``."""
    keys = torch.zeros(*tokens.shape, tokens.shape[1], dtype=torch.bool, device=tokens.device)
    keys[:, :, 1:] = tokens[:, :, None] == tokens[:, None, :-1]
    return keys & torch.ones_like(keys[0]).tril()


KEY_MASKS = {
    "previous_token": previous_token_keys,
    "duplicate_token": duplicate_token_keys,
    "induction": induction_keys,
}


# ----------------------------------------------------------------------------------- scores


@torch.no_grad()
def attention_patterns(
    model: HookedTransformer, tokens: Int[torch.Tensor, "batch pos"], layers: Sequence[int] | None = None
) -> Float[torch.Tensor, "layer batch head q k"]:
    """Attention patterns of ``layers`` (default all) stacked: ``[layer, batch, head, q, k]``."""
    layers = list(range(model.cfg.n_layers)) if layers is None else check_layers(model, layers)
    names = [get_act_name("pattern", l) for l in layers]
    _, cache = model.run_with_cache(tokens, names_filter=names)
    return torch.stack([cache[n] for n in names])


def attention_mass(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    keys: Bool[torch.Tensor, "batch q k"] | Bool[torch.Tensor, "batch k"] | Bool[torch.Tensor, "q k"],
    queries: Bool[torch.Tensor, "batch q"] | None = None,
    *,
    layers: Sequence[int] | None = None,
    patterns: Float[torch.Tensor, "layer batch head q k"] | None = None,
) -> Float[torch.Tensor, "layer head"]:
    """Mean over selected queries of the attention mass each head puts on the selected keys.

    ``keys``: which keys count, per query ``[batch, q, k]``, the same for every query ``[batch, k]``
    (e.g. the positions of ``[q, ȳ]``), or the same for every prompt ``[q, k]``. ``queries``: which
    ``(prompt, query)`` pairs to average over (default all). Pass ``patterns`` to reuse a forward pass.
    Returns ``[n_layers_selected, n_heads]``; e.g. Chen et al.'s attention on ``[q, ȳ]`` vs ``[q, τ]``
    is two calls with ``queries`` = the last position and ``keys`` = where ``ȳ`` / ``τ`` sit.
    """
    batch, n = tokens.shape
    keys = keys.to(torch.bool)
    if keys.shape == (batch, n):
        keys = keys[:, None, :].expand(batch, n, n)
    elif keys.shape == (n, n) and batch != n:
        keys = keys.expand(batch, n, n)
    if keys.shape != (batch, n, n):
        raise ValueError(
            f"keys has shape {tuple(keys.shape)}; expected [batch, q, k], [batch, k] or [q, k] "
            f"with batch={batch}, pos={n}"
        )
    if queries is None:
        queries = torch.ones(batch, n, dtype=torch.bool, device=tokens.device)
    if queries.shape != (batch, n):
        raise ValueError(f"queries has shape {tuple(queries.shape)}; expected [batch, pos] = {(batch, n)}")
    if not queries.any():
        raise ValueError("queries selects no (prompt, position) pair")
    if patterns is None:
        patterns = attention_patterns(model, tokens, layers)
    mass = (patterns * keys[None, :, None].to(patterns.dtype)).sum(-1)  # [layer, batch, head, q]
    sel = queries[None, :, None, :].to(mass.dtype)
    return (mass * sel).sum((1, 3)) / queries.sum()


def role_scores(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"] | None = None,
    roles: Iterable[str] = ATTENTION_ROLES,
    *,
    seed: int = 0,
) -> dict[str, Float[torch.Tensor, "layer head"]]:
    """``{role: [n_layers, n_heads]}`` for the attention roles (default prompts: ``repeated_tokens``)."""
    roles = list(roles)
    unknown = [r for r in roles if r not in ATTENTION_ROLES]
    if unknown:
        raise ValueError(f"unknown attention role(s) {unknown}; expected some of {ATTENTION_ROLES}")
    if tokens is None:
        tokens, _ = repeated_tokens(model, seed=seed)
    patterns = attention_patterns(model, tokens)
    out = {}
    for role in roles:
        keys = KEY_MASKS[role](tokens)
        queries = keys.any(-1)
        if not queries.any():
            raise ValueError(f"the prompts have no position where the {role!r} score is defined")
        out[role] = attention_mass(model, tokens, keys, queries, patterns=patterns)
    return out


@torch.no_grad()
def copying_scores(model: HookedTransformer) -> Float[torch.Tensor, "layer head"]:
    """Elhage et al.'s copying score of every head: ``sum Re(lambda) / sum |lambda|`` of ``W_E W_OV W_U``."""
    from analyses.ov import full_ov_circuit

    eig = full_ov_circuit(model).eigenvalues  # [layer, head, d_head] complex
    total = eig.abs().sum(-1)
    return torch.where(total > 0, eig.real.sum(-1) / total.clamp_min(1e-30), torch.zeros_like(total))


def head_roles(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"] | None = None,
    roles: Iterable[str] = ROLES,
    *,
    seed: int = 0,
) -> pd.DataFrame:
    """All head-role scores as a tidy table ``(layer, head, score, value)``; ``heatmap(table)`` plots it."""
    roles = list(roles)
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ValueError(f"unknown role(s) {unknown}; expected some of {ROLES}")
    scores = role_scores(model, tokens, [r for r in roles if r != "copying"], seed=seed)
    if "copying" in roles:
        scores["copying"] = copying_scores(model)
    return layer_head_table({r: scores[r] for r in roles})


def top_heads(table: pd.DataFrame, score: str, k: int = 3) -> list[tuple[int, int]]:
    """The ``k`` ``(layer, head)`` pairs with the highest ``score`` in a ``head_roles`` table."""
    part = table[table["score"] == score]
    if part.empty:
        raise ValueError(f"score {score!r} not in the table; it has {sorted(table['score'].unique())}")
    part = part.sort_values("value", ascending=False).head(k)
    return [(int(l), int(h)) for l, h in zip(part["layer"], part["head"])]


def head_roles_figure(table: pd.DataFrame, title: str | None = None) -> Figure:
    """One layer x head heatmap per score, values printed in the cells. The attention scores share one colour
    scale on [0, 1]; the copying score (an eigenvalue ratio) has its own on [-1, 1]."""
    limits = dict.fromkeys(ATTENTION_ROLES, (0.0, 1.0)) | {"copying": (-1.0, 1.0)}
    return heatmap(table, title=title, limits=limits, annotate=True)


# ----------------------------------------------------------------------------------- induction performance


@torch.no_grad()
def induction_performance(
    model: HookedTransformer, tokens: Int[torch.Tensor, "batch pos"] | None = None, *, seed: int = 0
) -> dict[str, float]:
    """Next-token loss and top-1 accuracy on the repeated half of ``repeated_tokens`` prompts.

    Vocabulary-aware replacement for TL's ``evals.induction_loss``. With explicit ``tokens`` they
    must be ``[BOS] x x`` as ``repeated_tokens`` makes them (BOS iff the model prepends one).
    """
    if tokens is None:
        tokens, offset = repeated_tokens(model, seed=seed)
    else:
        offset = int(_bos(model) is not None)
    half = (tokens.shape[1] - offset) // 2
    logits = model(tokens)
    # Predict token t+1 from position t for the positions whose next token is in the second half.
    start = offset + half
    pred = logits[:, start:-1]
    target = tokens[:, start + 1 :]
    logprobs = pred.log_softmax(-1)
    loss = -logprobs.gather(-1, target[..., None]).mean().item()
    accuracy = (pred.argmax(-1) == target).float().mean().item()
    return {"loss": loss, "accuracy": accuracy}


@torch.no_grad()
def head_outputs(
    model: HookedTransformer, tokens: Int[torch.Tensor, "batch pos"], layer: int = 0, positions: int | torch.Tensor = -1
) -> Float[torch.Tensor, "batch head d_model"]:
    """Each head's write to the residual stream at one position per prompt: ``z[b, pos_b, h] @ W_O[h]``.

    ``positions``: an int (the same for every prompt, negative from the end) or an int tensor ``[batch]``.
    Used to compare heads with theoretical head outputs (Vasudeva et al. §4, Figs. 10/12).
    """
    if not 0 <= layer < model.cfg.n_layers:
        raise ValueError(f"layer={layer} out of range; expected 0..{model.cfg.n_layers - 1}")
    name = get_act_name("z", layer)
    _, cache = model.run_with_cache(tokens, names_filter=name, stop_at_layer=layer + 1)
    z = cache[name]  # [batch, pos, head, d_head]
    batch, seq_len = tokens.shape
    index = torch.as_tensor(positions, device=z.device).long().expand(batch) % seq_len
    z_at = z[torch.arange(batch, device=z.device), index]  # [batch, head, d_head]
    return torch.einsum("bhe,hed->bhd", z_at, model.blocks[layer].attn.W_O)
