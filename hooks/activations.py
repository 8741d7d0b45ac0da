"""Hook functions and context managers that edit activations: ablate, patch, add a vector.

Every context manager adds TransformerLens forward hooks through ``model.hooks(...)``, which removes
exactly the hooks it added when the block exits — normally or by an exception — so contexts nest and
undo themselves. Weights are never touched here (see ``hooks.weights`` for that).

Hook names follow TransformerLens: a head's output is edited at ``blocks.{l}.attn.hook_z``
(``[batch, pos, head, d_head]``, before ``W_O``), a whole attention layer at ``blocks.{l}.hook_attn_out``
and an MLP at ``blocks.{l}.hook_mlp_out`` (both ``[batch, pos, d_model]``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Literal

import torch
from jaxtyping import Float

from hooks.positions import Positions, position_mask
from mechrecall._tl import ActivationCache, HookedTransformer, HookPoint, get_act_name
from mechrecall.checks import check_heads, check_layers

Head = tuple[int, int]
HookFn = Callable[[torch.Tensor, object], torch.Tensor]


# --------------------------------------------------------------------------------------- hook names


def head_hook_name(layer: int) -> str:
    """``blocks.{layer}.attn.hook_z``: per-head outputs ``[batch, pos, head, d_head]`` before ``W_O``."""
    return get_act_name("z", layer)


def attn_out_hook_name(layer: int) -> str:
    return get_act_name("attn_out", layer)


def mlp_out_hook_name(layer: int) -> str:
    return get_act_name("mlp_out", layer)


def check_hook_names(model: HookedTransformer, names: Iterable[str]) -> None:
    """Raise a ``ValueError`` naming any hook point the model does not have."""
    names = list(names)
    if getattr(model.cfg, "attn_only", False):
        mlp = [n for n in names if "mlp" in n]
        if mlp:  # TL keeps hook_mlp_out on attention-only blocks, but it never fires
            raise ValueError(f"hook point(s) {mlp}: the model is attention-only (it has no MLPs)")
    missing = [n for n in names if n not in model.hook_dict]
    if missing:
        hint = " (an attention-only model has no MLP hooks)" if any("mlp" in n for n in missing) else ""
        raise ValueError(f"model has no hook point(s) {missing}{hint}; e.g. {sorted(model.hook_dict)[:4]} ...")


# --------------------------------------------------------------------------------------- hook functions


def replace_hook(value: torch.Tensor | float, positions: Positions = None, head: int | None = None) -> HookFn:
    """A hook replacing the activation (or head ``head`` of it) at ``positions`` by ``value``.

    ``value`` broadcasts against the selected slice: ``0.0`` for zero ablation, a mean
    ``[pos, ...]``/``[...]`` for mean ablation, a cached activation ``[batch, pos, ...]`` for patching.
    """

    def hook(act: torch.Tensor, hook: HookPoint | None = None) -> torch.Tensor:
        mask = position_mask(positions, act.shape[0], act.shape[1], act.device)  # [batch, pos]
        target = act if head is None else act[:, :, head]
        new = torch.as_tensor(value, dtype=act.dtype, device=act.device)
        new = torch.broadcast_to(new, target.shape)
        edited = torch.where(mask.view(*mask.shape, *[1] * (target.ndim - 2)), new, target)
        if head is None:
            return edited
        act = act.clone()
        act[:, :, head] = edited
        return act

    return hook


def add_hook(vector: Float[torch.Tensor, "*d"], coeff: float = 1.0, positions: Positions = None) -> HookFn:
    """A hook adding ``coeff * vector`` to the activation at ``positions`` (steering / task vectors)."""

    def hook(act: torch.Tensor, hook: HookPoint | None = None) -> torch.Tensor:
        mask = position_mask(positions, act.shape[0], act.shape[1], act.device)
        delta = coeff * vector.to(act.device, act.dtype)
        return act + mask.view(*mask.shape, *[1] * (act.ndim - 2)).to(act.dtype) * delta

    return hook


# --------------------------------------------------------------------------------------- context managers


@contextmanager
def hooked(model: HookedTransformer, fwd_hooks: Sequence[tuple[str, HookFn]]) -> Iterator[HookedTransformer]:
    """Add ``fwd_hooks`` for the duration of the block; removed on exit, even on an exception."""
    check_hook_names(model, [name for name, _ in fwd_hooks])
    with model.hooks(fwd_hooks=list(fwd_hooks)):
        yield model


@torch.no_grad()
def activation_means(
    model: HookedTransformer,
    tokens: torch.Tensor,
    names: Sequence[str],
    *,
    over: Literal["batch", "batch_pos"] = "batch",
) -> dict[str, torch.Tensor]:
    """Mean activation at each hook in ``names`` over a reference batch.

    ``over="batch"`` keeps positions (``[pos, ...]``, for prompts that share a template);
    ``over="batch_pos"`` averages positions too (``[...]``, usable at any sequence length).
    """
    if over not in ("batch", "batch_pos"):
        raise ValueError(f"over={over!r}; expected 'batch' or 'batch_pos'")
    check_hook_names(model, names)
    _, cache = model.run_with_cache(tokens, names_filter=list(names))
    dims = (0,) if over == "batch" else (0, 1)
    return {name: cache[name].mean(dims) for name in names}


def _ablation_targets(
    model: HookedTransformer, heads: Iterable[Head], attn_layers: Iterable[int], mlps: Iterable[int]
) -> list[tuple[str, int | None]]:
    targets: list[tuple[str, int | None]] = [(head_hook_name(l), h) for l, h in check_heads(model, heads)]
    targets += [(attn_out_hook_name(l), None) for l in check_layers(model, attn_layers)]
    targets += [(mlp_out_hook_name(l), None) for l in check_layers(model, mlps)]
    if not targets:
        raise ValueError("nothing to ablate: pass heads=[(layer, head), ...], attn_layers=[...] or mlps=[...]")
    check_hook_names(model, [name for name, _ in targets])
    return targets


@contextmanager
def ablate(
    model: HookedTransformer,
    *,
    heads: Iterable[Head] = (),
    attn_layers: Iterable[int] = (),
    mlps: Iterable[int] = (),
    mode: Literal["zero", "mean"] = "zero",
    reference: torch.Tensor | None = None,
    over: Literal["batch", "batch_pos"] = "batch_pos",
    positions: Positions = None,
) -> Iterator[HookedTransformer]:
    """Zero- or mean-ablate heads, whole attention layers and/or MLPs inside the block.

    A head is ablated at ``hook_z`` (its contribution ``z W_O`` vanishes; the layer's shared ``b_O``
    stays), an attention layer at ``hook_attn_out``, an MLP at ``hook_mlp_out``. Mean ablation replaces
    the activation by its mean over ``reference`` tokens (``[batch, pos]``; ``over`` as in
    ``activation_means``). ``positions`` restricts the edit (see ``hooks.positions``).

    >>> with ablate(model, heads=[(1, 0)]):          # doctest: +SKIP
    ...     logits = model(tokens)
    """
    targets = _ablation_targets(model, heads, attn_layers, mlps)
    if mode not in ("zero", "mean"):
        raise ValueError(f"mode={mode!r}; expected 'zero' or 'mean'")
    if mode == "mean" and reference is None:
        raise ValueError("mode='mean' needs reference=tokens [batch, pos] to average activations over")
    if mode == "zero" and reference is not None:
        raise ValueError("reference= is only used with mode='mean'")
    means = activation_means(model, reference, sorted({n for n, _ in targets}), over=over) if mode == "mean" else {}
    fwd = []
    for name, head in targets:
        value = 0.0 if mode == "zero" else (means[name][..., head, :] if head is not None else means[name])
        fwd.append((name, replace_hook(value, positions, head)))
    with hooked(model, fwd):
        yield model


@contextmanager
def patch(
    model: HookedTransformer,
    source_cache: ActivationCache | Mapping[str, torch.Tensor],
    names: Iterable[str],
    *,
    positions: Positions = None,
    heads: Iterable[int] | None = None,
) -> Iterator[HookedTransformer]:
    """Activation patching: inside the block, hooks ``names`` take their values from ``source_cache``.

    ``source_cache`` is an ``ActivationCache`` (or dict) from ``model.run_with_cache(source_tokens)``
    with the same ``[batch, pos]`` shape as the tokens the block runs on. ``positions`` restricts the
    patch; ``heads`` restricts it to those heads of a ``hook_z``/``hook_q``/... activation.
    """
    names = list(names)
    check_hook_names(model, names)
    missing = [n for n in names if n not in source_cache]
    if missing:
        raise ValueError(f"source_cache has no activation for {missing}; run_with_cache with those names")
    fwd = []
    for name in names:
        if heads is None:
            fwd.append((name, replace_hook(source_cache[name], positions)))
        else:
            for head in heads:
                fwd.append((name, replace_hook(source_cache[name][:, :, head], positions, head)))
    with hooked(model, fwd):
        yield model


@contextmanager
def add_vector(
    model: HookedTransformer,
    name: str,
    vector: Float[torch.Tensor, " d"],
    *,
    coeff: float = 1.0,
    positions: Positions = None,
) -> Iterator[HookedTransformer]:
    """Add ``coeff * vector`` to hook ``name`` at ``positions`` inside the block (steering, task vectors).

    ``vector`` has the activation's trailing shape, e.g. ``[d_model]`` for ``blocks.{l}.hook_resid_pre``.
    """
    check_hook_names(model, [name])
    vector = torch.as_tensor(vector)
    with hooked(model, [(name, add_hook(vector, coeff, positions))]):
        yield model
