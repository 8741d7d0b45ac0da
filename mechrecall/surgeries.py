"""Declarative surgeries: what a paper's toy model needs that ``HookedTransformerConfig`` can't say.

A toy model is ``HookedTransformerConfig`` + a short list of these, applied in order by
``mechrecall.builder.build_toy_model``. Each surgery is a small frozen dataclass, serialised to JSON
(``to_dict`` / ``surgery_from_dict``) so that a checkpoint can rebuild the exact model. Every surgery
checks its arguments against the model it is applied to and raises ``ValueError`` naming the bad value
and what was expected; it runs on a freshly built model, before any training.

| surgery | what it does | papers |
|---|---|---|
| ``Freeze(params)`` | ``requires_grad=False`` on named params (``fnmatch`` patterns) | all toy models |
| ``ZeroBiases()`` | zero and freeze every ``b_*`` (bias-free linear maps) | Chen et al.; Vasudeva et al. B |
| ``SetWeight(params, init, ...)`` | fixed random / one-hot / orthonormal / identity weights (frozen by default) | all |
| ``LinearFeedForward(blocks)`` | swap ``F(x) = x @ W_F`` into blocks | Chen et al. Figs 11-12, Eq. 2 |
| ``NoFeedForward(blocks)`` | no FF in the given blocks | Chen et al. (one-layer ablations) |
| ``SetActivation(fn)`` | e.g. ``square`` (σ(x) = x²) | Huang et al. IC-recall MLP |
| ``PreviousTokenEmbedding()`` | ``x_t = W_E[z_t] + W_E_prev[z_{t-1}]`` | Chen et al. Eq. 2 |
| ``PermanentHook(name, kwargs)`` | a registered hook kept on the model | Vasudeva et al. B; Musat et al. |
| ``TrainableEntries(param, slices)`` | train only a block of a matrix | Huang et al. partial fine-tuning |
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from mechrecall._tl import (
    Model,
    mlp_activation,
    set_mlp_activation,
    swap_module,
    tl_parameter,
    tl_parameters,
    tl_view,
    weight,
)
from mechrecall.modules import EmbedWithPrevious, LinearFF, ZeroFF
from mechrecall.permanent_hooks import PERMANENT_HOOKS

SURGERIES: dict[str, type["Surgery"]] = {}


def _register(cls: type["Surgery"]) -> type["Surgery"]:
    SURGERIES[cls.kind] = cls
    return cls


@dataclass(frozen=True)
class Surgery:
    """Base class. Subclasses set ``kind`` and implement ``apply(model, generator)``."""

    kind: ClassVar[str] = "surgery"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"kind": self.kind, **_jsonable(values)}


def surgery_from_dict(d: dict[str, Any]) -> Surgery:
    """Inverse of ``Surgery.to_dict``."""
    d = dict(d)
    kind = d.pop("kind", None)
    if kind not in SURGERIES:
        raise ValueError(f"unknown surgery kind {kind!r}; expected one of {sorted(SURGERIES)}")
    cls = SURGERIES[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"surgery {kind!r} got unknown fields {sorted(unknown)}; expected {sorted(names)}")
    return cls(**{k: _tuplify(v) for k, v in d.items()})


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def _tuplify(x: Any) -> Any:
    if isinstance(x, list):
        return tuple(_tuplify(v) for v in x)
    if isinstance(x, dict):
        return {k: _tuplify(v) for k, v in x.items()}
    return x


def match_params(model: Model, patterns: Sequence[str], what: str) -> list[str]:
    """Parameter names matching any ``fnmatch`` pattern; every pattern must match something."""
    if isinstance(patterns, str):
        patterns = (patterns,)
    names = list(tl_parameters(model))
    matched: list[str] = []
    for pattern in patterns:
        hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            raise ValueError(f"{what}: no parameter matches {pattern!r}; expected a name or pattern over: {shown}")
        matched += [n for n in hits if n not in matched]
    return matched


Region = tuple[tuple[int, int] | None, ...]


def region_index(p: torch.Tensor, region: Region | None, what: str) -> tuple[slice, ...]:
    """Index of a block of ``p``: one ``(start, stop)`` (or ``None`` for the whole axis) per leading axis."""
    if region is None:
        return (slice(None),) * p.ndim
    if len(region) > p.ndim:
        raise ValueError(f"{what}: region {region!r} has {len(region)} axes; the parameter has shape {tuple(p.shape)}")
    index = []
    for axis, bounds in enumerate(region):
        if bounds is None:
            index.append(slice(None))
            continue
        start, stop = bounds
        if not 0 <= start < stop <= p.shape[axis]:
            raise ValueError(
                f"{what}: {tuple(bounds)!r} on axis {axis} (size {p.shape[axis]}) is empty or out of range"
            )
        index.append(slice(start, stop))
    return tuple(index) + (slice(None),) * (p.ndim - len(index))


def _check_blocks(model: Model, blocks: Sequence[int], what: str) -> list[int]:
    blocks = list(blocks)
    bad = [b for b in blocks if not isinstance(b, int) or not 0 <= b < model.cfg.n_layers]
    if bad or not blocks:
        raise ValueError(
            f"{what}: blocks={blocks!r} must be a non-empty list of block indices in 0..{model.cfg.n_layers - 1}"
        )
    return blocks


@_register
@dataclass(frozen=True)
class Freeze(Surgery):
    """Freeze parameters by name or ``fnmatch`` pattern, e.g. ``("embed.W_E", "blocks.*.attn.W_V")``."""

    params: tuple[str, ...]
    kind: ClassVar[str] = "freeze"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        for name in match_params(model, self.params, "Freeze"):
            weight(model, name).requires_grad_(False)


@_register
@dataclass(frozen=True)
class ZeroBiases(Surgery):
    """Zero every bias (``b_*``) and, by default, freeze it: all linear maps become bias-free."""

    freeze: bool = True
    kind: ClassVar[str] = "zero_biases"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        for name, param in tl_parameters(model).items():
            if name.rsplit(".", 1)[-1].startswith("b_"):
                with torch.no_grad():
                    param.zero_()
                if self.freeze:
                    weight(model, name).requires_grad_(False)


INITS = ("zeros", "normal", "uniform", "torch_linear", "one_hot", "identity", "orthonormal")


@_register
@dataclass(frozen=True)
class SetWeight(Surgery):
    """Overwrite parameters with an initialisation: frozen (fixed) by default, trainable with ``freeze=False``.

    ``init``:
      - ``zeros``; ``normal`` (N(0, scale²)); ``uniform`` (U(-scale, scale));
      - ``torch_linear``: PyTorch ``nn.Linear``'s default U(-1/√fan_in, 1/√fan_in) times ``scale``, with
        ``fan_in = shape[-2]`` (TL right-multiplies: ``x @ W``);
      - ``one_hot``: item ``i`` is ``scale · e_{offset+i}``. Items are the rows of ``W_E``/``W_pos``-like
        ``[n_items, d_model]`` matrices and the columns of ``W_U`` (``[d_model, d_vocab]``);
      - ``orthonormal``: all items of all matched parameters are mutually orthonormal (times ``scale``),
        from the Q factor of one seeded Gaussian matrix; needs ``d_model >=`` the total number of items;
      - ``identity``: ``scale · I`` in the last two dims (per head for ``W_Q``/``W_K``/``W_V``/``W_O``); needs
        them square, e.g. ``d_head == d_model`` for an unfactorised ``W_QK = W_Kᵀ`` with ``W_Q = I``.

    ``region``: set only a block of each parameter, one ``(start, stop)`` or ``None`` per leading axis
    (e.g. ``((0, 1), (0, 8), (8, 16))`` puts an identity in ``W_O[0, 0:8, 8:16]``); the rest is untouched.
    """

    params: tuple[str, ...]
    init: str
    scale: float = 1.0
    offset: int = 0
    freeze: bool = True
    region: Region | None = None
    kind: ClassVar[str] = "set_weight"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        if self.init not in INITS:
            raise ValueError(f"SetWeight: init={self.init!r}; expected one of {INITS}")
        names = match_params(model, self.params, "SetWeight")
        params = tl_parameters(model)
        index = {n: region_index(params[n], self.region, f"SetWeight region of {n}") for n in names}
        targets = {n: params[n].detach()[index[n]] for n in names}  # views of the regions
        if self.init == "orthonormal":
            values = self._orthonormal(targets, generator)
        else:
            values = {n: self._single(n, t, generator) for n, t in targets.items()}
        with torch.no_grad():
            for n in names:
                params[n][index[n]] = values[n]
                weight(model, n).requires_grad_(not self.freeze)

    def _single(self, name: str, p: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        shape, dtype = p.shape, p.dtype
        if self.init == "zeros":
            return torch.zeros(shape, dtype=dtype)
        if self.init == "normal":
            return self.scale * torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
        if self.init in ("uniform", "torch_linear"):
            bound = self.scale / math.sqrt(shape[-2]) if self.init == "torch_linear" else self.scale
            if self.init == "torch_linear" and p.ndim < 2:
                raise ValueError(f"SetWeight: init='torch_linear' needs a matrix; {name} has shape {tuple(shape)}")
            u = torch.rand(shape, generator=generator, dtype=torch.float64)
            return (bound * (2 * u - 1)).to(dtype)
        if self.init == "identity":
            if p.ndim < 2 or shape[-1] != shape[-2]:
                raise ValueError(
                    f"SetWeight: init='identity' for {name} needs its last two dims equal (e.g. d_head == d_model), "
                    f"got shape {tuple(shape)}"
                )
            return (self.scale * torch.eye(shape[-1], dtype=dtype)).expand(shape).clone()
        # one_hot
        items, width, axis = _items(name, p)
        if self.offset < 0 or self.offset + items > width:
            raise ValueError(
                f"SetWeight: one_hot for {name} places {items} items at offset={self.offset}, "
                f"which does not fit in dimension {width}"
            )
        eye = torch.zeros(items, width, dtype=dtype)
        eye[torch.arange(items), self.offset + torch.arange(items)] = self.scale
        return eye if axis == 0 else eye.T.contiguous()

    def _orthonormal(self, params: dict[str, torch.Tensor], generator: torch.Generator) -> dict[str, torch.Tensor]:
        layout = {n: _items(n, p) for n, p in params.items()}
        widths = {width for _, width, _ in layout.values()}
        total = sum(items for items, _, _ in layout.values())
        if len(widths) != 1:
            raise ValueError(
                f"SetWeight: orthonormal items must share one width, got {sorted(widths)} for {list(params)}"
            )
        (width,) = widths
        if total > width:
            raise ValueError(
                f"SetWeight: {total} mutually orthonormal vectors for {list(params)} "
                f"need d_model >= {total}, got {width}"
            )
        gaussian = torch.randn(width, total, generator=generator, dtype=torch.float64)
        q, r = torch.linalg.qr(gaussian)  # q: [width, total], orthonormal columns
        q = q * torch.sign(torch.diagonal(r))  # unique (Haar) choice of signs
        values, start = {}, 0
        for n, (items, _, axis) in layout.items():
            block = self.scale * q[:, start : start + items].T  # [items, width]
            start += items
            values[n] = (block if axis == 0 else block.T).to(params[n].dtype).contiguous()
        return values


def _items(name: str, p: torch.Tensor) -> tuple[int, int, int]:
    """(number of items, vector width, item axis) of an embedding-like matrix."""
    if p.ndim != 2:
        raise ValueError(f"one_hot/orthonormal init needs a 2-D parameter; {name} has shape {tuple(p.shape)}")
    axis = 1 if name.endswith("W_U") else 0
    return p.shape[axis], p.shape[1 - axis], axis


FF_INITS = ("zeros", "normal", "uniform", "torch_linear", "identity")


@_register
@dataclass(frozen=True)
class LinearFeedForward(Surgery):
    """Replace the MLP of ``blocks`` with ``LinearFF`` (``F(x) = x @ W_F``, param ``blocks.{l}.mlp.W_F``)."""

    blocks: tuple[int, ...]
    init: str = "torch_linear"
    scale: float = 1.0
    kind: ClassVar[str] = "linear_ff"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        blocks = _check_blocks(model, self.blocks, "LinearFeedForward")
        if model.cfg.attn_only:
            raise ValueError("LinearFeedForward: cfg.attn_only=True has no FF slot; build with attn_only=False")
        if self.init not in FF_INITS:
            raise ValueError(f"LinearFeedForward: init={self.init!r}; expected one of {FF_INITS}")
        for b in blocks:
            swap_module(model, f"blocks.{b}.mlp", LinearFF(model.cfg.d_model, dtype=model.cfg.dtype))
            SetWeight((f"blocks.{b}.mlp.W_F",), self.init, scale=self.scale, freeze=False).apply(model, generator)


@_register
@dataclass(frozen=True)
class NoFeedForward(Surgery):
    """Remove the FF layer of ``blocks`` (``hook_mlp_out`` is 0 there); others keep theirs."""

    blocks: tuple[int, ...]
    kind: ClassVar[str] = "no_ff"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        blocks = _check_blocks(model, self.blocks, "NoFeedForward")
        if model.cfg.attn_only:
            raise ValueError("NoFeedForward: cfg.attn_only=True already has no FF in any block")
        for b in blocks:
            swap_module(model, f"blocks.{b}.mlp", ZeroFF())


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


ACTIVATIONS = {"square": torch.square, "identity": _identity, "relu": F.relu, "gelu": F.gelu}


@_register
@dataclass(frozen=True)
class SetActivation(Surgery):
    """Replace the MLP activation of ``blocks`` (all blocks if ``None``), e.g. ``"square"`` for σ(x) = x²."""

    fn: str
    blocks: tuple[int, ...] | None = None
    kind: ClassVar[str] = "set_activation"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        if self.fn not in ACTIVATIONS:
            raise ValueError(f"SetActivation: fn={self.fn!r}; expected one of {sorted(ACTIVATIONS)}")
        if model.cfg.attn_only:
            raise ValueError("SetActivation: cfg.attn_only=True has no MLP")
        blocks = (
            range(model.cfg.n_layers) if self.blocks is None else _check_blocks(model, self.blocks, "SetActivation")
        )
        for b in blocks:
            if mlp_activation(model, b) is None:
                raise ValueError(
                    f"SetActivation: block {b}'s FF ({type(model.blocks[b].mlp).__name__}) has no activation"
                )
            set_mlp_activation(model, b, ACTIVATIONS[self.fn])


@_register
@dataclass(frozen=True)
class PreviousTokenEmbedding(Surgery):
    """Swap in ``EmbedWithPrevious``: adds a previous-token embedding ``embed.W_E_prev`` (zeros, trainable
    until a later ``SetWeight``/``Freeze``). ``embed.W_E`` keeps its current values."""

    kind: ClassVar[str] = "previous_token_embedding"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        if model.cfg.post_embedding_ln:
            raise ValueError("PreviousTokenEmbedding: cfg.post_embedding_ln=True is not supported")
        old = model.embed.W_E
        new = EmbedWithPrevious(model.cfg.d_vocab, model.cfg.d_model, dtype=model.cfg.dtype).to(old.device)
        with torch.no_grad():
            new.W_E.copy_(old)
        new.W_E.requires_grad_(old.requires_grad)
        swap_module(model, "embed", new)


@_register
@dataclass(frozen=True)
class PermanentHook(Surgery):
    """Attach a registered permanent hook (see ``mechrecall.permanent_hooks``) with keyword ``kwargs``."""

    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    kind: ClassVar[str] = "permanent_hook"

    def __hash__(self) -> int:  # kwargs is a dict
        return hash((self.name, tuple(sorted(self.kwargs.items()))))

    def apply(self, model: Model, generator: torch.Generator) -> None:
        if self.name not in PERMANENT_HOOKS:
            raise ValueError(f"PermanentHook: unknown hook {self.name!r}; expected one of {sorted(PERMANENT_HOOKS)}")
        try:
            pairs = PERMANENT_HOOKS[self.name](model, **self.kwargs)
        except TypeError as exc:
            raise ValueError(f"PermanentHook {self.name!r}: bad kwargs {self.kwargs!r} ({exc})") from None
        for hook_name, fn in pairs:
            model.add_hook(hook_name, fn, is_permanent=True)


@_register
@dataclass(frozen=True)
class TrainableEntries(Surgery):
    """Train only a block of one parameter; its other entries keep their values exactly.

    ``slices`` holds one ``(start, stop)`` pair (or ``None`` for the whole axis) per leading axis, e.g.
    ``((0, 1), (0, 7), (0, 7))`` for ``W_K[0, 0:7, 0:7]``; several ``TrainableEntries`` on one parameter
    train the union of their blocks. Gradients outside are zeroed by a tensor hook,
    and the trainer restores those entries after every step (so weight decay and momentum can't move
    them either). The mask is kept in ``model.mechrecall_entry_masks[param]`` (True = trainable), in the
    parameter's TL layout.
    """

    param: str
    slices: Region
    kind: ClassVar[str] = "trainable_entries"

    def apply(self, model: Model, generator: torch.Generator) -> None:
        (name,) = match_params(model, (self.param,), "TrainableEntries")
        p = tl_parameter(model, name)
        index = region_index(p, self.slices, f"TrainableEntries on {name}")
        masks = getattr(model, "mechrecall_entry_masks", None)
        if masks is None:
            masks = model.mechrecall_entry_masks = {}
        param = weight(model, name)
        param.requires_grad_(True)
        if name not in masks:  # the first region of this parameter: one hook that reads the current mask
            mask = torch.zeros(param.shape, dtype=torch.bool, device=param.device)  # in the parameter's layout
            masks[name] = tl_view(model, name, mask)  # the same mask, seen in the TL layout of ``name``
            param.register_hook(lambda grad: grad * mask)
        masks[name][index] = True  # several regions of one parameter add up
