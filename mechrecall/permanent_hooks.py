"""Named permanent hooks: architecture changes that live in hooks because TL's config can't say them.

A permanent hook is part of the *model* (it survives ``model.reset_hooks()``), so the toy-model builder
records it by name and keyword arguments, and a checkpoint rebuilds it. Each factory takes the model
and its keyword arguments, validates them (``ValueError`` before any work), and returns the
``(hook_name, hook_fn)`` pairs to attach with ``is_permanent=True``.

Registered here:

- ``no_skip_connection(layer)`` -- ``resid_post = resid_post - resid_pre`` in one block, i.e. the block
  outputs only what it adds (Vasudeva et al. 2026, §4 Model B: "no residual connection").
- ``relative_key_positions(layer, pos_offset, n_pos)`` -- key ``i`` seen from query ``t`` carries the
  one-hot position ``h(p_{i-t}) = e_{pos_offset + n_pos - 1 + (i - t)}`` on the *key side only*
  (Vasudeva et al. 2026, Eq. 1). Implemented as ``scores[b,h,t,i] += q_t · (h(p_{i-t}) W_K[h])``.
- ``strict_causal_mask(layers)`` -- a position may not attend to itself (Musat et al., App. B.2); the
  first row then has no admissible key and TL writes a zero pattern row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from mechrecall._tl import HookPoint, Model, attn_scale, get_act_name, scores_hooks
from mechrecall.checks import check_layer

HookFn = Callable[..., torch.Tensor | None]
HookFactory = Callable[..., list[tuple[str, HookFn]]]

PERMANENT_HOOKS: dict[str, HookFactory] = {}


def register_permanent_hook(name: str) -> Callable[[HookFactory], HookFactory]:
    """Decorator: make a hook factory available to the ``PermanentHook`` surgery under ``name``."""

    def decorate(factory: HookFactory) -> HookFactory:
        if name in PERMANENT_HOOKS:
            raise ValueError(f"permanent hook {name!r} is already registered")
        PERMANENT_HOOKS[name] = factory
        return factory

    return decorate


def _check_layer(model: Model, layer: int, hook: str) -> None:
    try:
        check_layer(model, layer)
    except ValueError as exc:
        raise ValueError(f"permanent hook {hook!r}: {exc}") from None


@register_permanent_hook("no_skip_connection")
def no_skip_connection(model: Model, layer: int) -> list[tuple[str, HookFn]]:
    _check_layer(model, layer, "no_skip_connection")
    stash: dict[str, torch.Tensor] = {}

    def save_resid_pre(resid_pre: torch.Tensor, hook: HookPoint) -> None:
        stash["resid_pre"] = resid_pre

    def drop_resid_pre(resid_post: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        return resid_post - stash.pop("resid_pre")

    return [
        (get_act_name("resid_pre", layer), save_resid_pre),
        (get_act_name("resid_post", layer), drop_resid_pre),
    ]


@register_permanent_hook("relative_key_positions")
def relative_key_positions(model: Model, layer: int, pos_offset: int, n_pos: int) -> list[tuple[str, HookFn]]:
    _check_layer(model, layer, "relative_key_positions")
    if not (isinstance(n_pos, int) and n_pos >= 1 and isinstance(pos_offset, int) and pos_offset >= 0):
        raise ValueError(
            f"relative_key_positions: need ints pos_offset >= 0 and n_pos >= 1, got {pos_offset!r}, {n_pos!r}"
        )
    if pos_offset + n_pos > model.cfg.d_model:
        raise ValueError(
            f"relative_key_positions: the position subspace [{pos_offset}, {pos_offset + n_pos}) does not fit in "
            f"d_model={model.cfg.d_model}"
        )
    if n_pos < model.cfg.n_ctx:
        raise ValueError(
            f"relative_key_positions: n_pos={n_pos} must be >= n_ctx={model.cfg.n_ctx} (one offset per distance)"
        )
    attn, scale = model.blocks[layer].attn, attn_scale(model, layer)

    def add_relative_keys(scores: torch.Tensor, stash: dict[str, torch.Tensor]) -> torch.Tensor:
        q = stash["q"]  # [batch, pos, head, d_head]; scores: [batch, head, q_pos, k_pos]
        pos_keys = attn.W_K[:, pos_offset : pos_offset + n_pos, :]  # [head, n_pos, d_head], the current weights
        q_dot_pos = torch.einsum("bthe,hoe->bhto", q, pos_keys) / scale  # [b, h, t, n_pos]
        n_q, n_k = scores.shape[-2:]
        t = torch.arange(n_q, device=scores.device)[:, None]
        i = torch.arange(n_k, device=scores.device)[None, :]
        offset_index = (n_pos - 1 + (i - t)).clamp(0, n_pos - 1)  # [t, i]; entries i > t are masked anyway
        index = offset_index.expand(*q_dot_pos.shape[:2], n_q, n_k)
        return scores + torch.gather(q_dot_pos, -1, index)  # -inf (masked) stays -inf

    return scores_hooks(model, layer, add_relative_keys)


@register_permanent_hook("strict_causal_mask")
def strict_causal_mask(model: Model, layers: Iterable[int]) -> list[tuple[str, HookFn]]:
    layers = list(layers)
    for layer in layers:
        _check_layer(model, layer, "strict_causal_mask")

    def mask_diagonal(scores: torch.Tensor, stash: dict[str, torch.Tensor]) -> torch.Tensor:
        n_q, n_k = scores.shape[-2:]
        diagonal = torch.eye(n_q, n_k, dtype=torch.bool, device=scores.device)
        return scores.masked_fill(diagonal, float("-inf"))

    return [pair for layer in layers for pair in scores_hooks(model, layer, mask_diagonal)]
