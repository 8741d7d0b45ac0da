"""Models of Chen, Bruna & Bietti, "Distributional associations vs in-context reasoning" (§3, App. B, J).

**Eq. 1, the two-layer model** (``two_layer_model``; also L layers for synthetic IOI, App. J)::

    x_t  = W_E(z_t) + p_t
    h¹_t = Σ_{s≤t} softmax_s(x_tᵀ W¹_QK x_s) W¹_V x_s ;   x¹_t = x_t + h¹_t + F₁(x_t + h¹_t)
    h²_t = ... ;                                         x²_t = x¹_t + h²_t + F₂(x¹_t + h²_t)
    ξ_t  = W_U x²_t

One head per layer with ``d_head = d_model``; no LayerNorm; no biases (zeroed and frozen, so truncating
``W_in`` to rank 0 is exactly dropping the MLP); ``W_Q = I`` frozen (the authors' code has no query
matrix: ``W_QK = W_Kᵀ``), trainable ``W_K, W_V, W_O`` and FF weights with PyTorch's ``nn.Linear`` init;
frozen random ``W_E, W_pos ~ N(0, 1)`` and ``W_U ~ U(±1/√d)`` (``embed_init="torch_default"``, the authors'
code; ``"unit"``: all ``N(0, 1/d)``, for Adam). ``ff`` picks each block's feed-forward layer:
``"mlp"`` (ReLU, ``d_mlp = 4d``), ``"linear"`` (``F(x) = x W_F``, Figs 11-12) or ``"none"`` (Fig 13).

**Eq. 2, the one-layer theory model** (``theory_model``): ``x_t = W_E(z_t) + W̃_E(z_{t-1})``,
``ξ = W_U φ + W_U W_F x_T`` with ``W_QK = W_Kᵀ`` (``W_Q = I``), ``W_V`` (``W_O = I``) and ``W_F`` learned from
zero, ``W_E, W̃_E, W_U`` mutually orthonormal and frozen, no positions, attention and FF in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from mechrecall._tl import HookedTransformer
from mechrecall.builder import build_toy_model
from mechrecall.surgeries import (
    LinearFeedForward,
    NoFeedForward,
    PreviousTokenEmbedding,
    SetWeight,
    ZeroBiases,
)

FF_KINDS = ("mlp", "linear", "none")
EMBED_INITS = ("torch_default", "unit")
#: The FF variants of Figs 3/10 (mlp/mlp), 11 (mlp/linear), 12 (linear/mlp) and 13 (none/none).
FF_VARIANTS = {
    "mlp_mlp": ("mlp", "mlp"),
    "mlp_linear": ("mlp", "linear"),
    "linear_mlp": ("linear", "mlp"),
    "none": ("none", "none"),
}


def two_layer_model(
    *,
    d_vocab: int,
    n_ctx: int,
    d_model: int = 256,
    d_mlp: int | None = None,
    ff: Sequence[str] = ("mlp", "mlp"),
    embed_init: Literal["torch_default", "unit"] = "torch_default",
    use_attn_scale: bool = True,
    seed: int = 0,
) -> HookedTransformer:
    """The Eq. 1 model with ``len(ff)`` layers (2 in §3; 3-7 for synthetic IOI, App. J).

    ``ff[l]`` in ``FF_KINDS``; ``d_mlp`` defaults to ``4 * d_model`` (the authors' ``mlp_multiplier=4``).
    """
    ff = tuple(ff)
    bad = [k for k in ff if k not in FF_KINDS]
    if not ff or bad:
        raise ValueError(f"ff={ff!r}; expected one of {FF_KINDS} per layer")
    if embed_init not in EMBED_INITS:
        raise ValueError(f"embed_init={embed_init!r}; expected one of {EMBED_INITS}")
    d_mlp = 4 * d_model if d_mlp is None else d_mlp
    attn_only = all(k == "none" for k in ff)
    cfg = dict(
        n_layers=len(ff),
        n_heads=1,
        d_model=d_model,
        d_head=d_model,
        d_mlp=None if attn_only else d_mlp,
        d_vocab=d_vocab,
        n_ctx=n_ctx,
        act_fn="relu",
        normalization_type=None,
        attn_only=attn_only,
        use_attn_scale=use_attn_scale,
        positional_embedding_type="standard",
        device="cpu",
    )
    surgeries = _surgeries(ff, embed_init, 1.0 if embed_init == "torch_default" else d_model**-0.5, attn_only)
    return build_toy_model(cfg, surgeries, seed=seed)


def _surgeries(ff: tuple[str, ...], embed_init: str, scale: float, attn_only: bool) -> list[Any]:
    """Eq. 1's weights: zero biases, frozen random embeddings, ``W_Q = I``, trainable attention and FF weights."""
    surgeries = [
        ZeroBiases(),
        SetWeight(("embed.W_E", "pos_embed.W_pos"), "normal", scale=scale),
        SetWeight(("unembed.W_U",), "torch_linear")
        if embed_init == "torch_default"
        else SetWeight(("unembed.W_U",), "normal", scale=scale),
        SetWeight(("blocks.*.attn.W_Q",), "identity"),
        SetWeight(("blocks.*.attn.W_K", "blocks.*.attn.W_V", "blocks.*.attn.W_O"), "torch_linear", freeze=False),
    ]
    mlp_blocks = [l for l, k in enumerate(ff) if k == "mlp"]
    if mlp_blocks:
        surgeries.append(
            SetWeight(
                tuple(f"blocks.{l}.mlp.{w}" for l in mlp_blocks for w in ("W_in", "W_out")),
                "torch_linear",
                freeze=False,
            )
        )
    linear = tuple(l for l, k in enumerate(ff) if k == "linear")
    if linear:
        surgeries.append(LinearFeedForward(linear))
    none = tuple(l for l, k in enumerate(ff) if k == "none")
    if none and not attn_only:
        surgeries.append(NoFeedForward(none))
    return surgeries


def theory_model(*, n_tokens: int, d_model: int, n_ctx: int, seed: int = 0) -> HookedTransformer:
    """The Eq. 2 one-layer model over ``n_tokens + 1`` ids (``N`` ordinary tokens and τ = ``N``).

    Needs ``d_model >= 3 (N + 1)`` for mutually orthonormal ``W_E``, ``W̃_E`` (``embed.W_E_prev``) and
    ``W_U`` columns. Learned from zero: ``W_K`` (``W_QK = W_Kᵀ``), ``W_V`` and ``W_F`` (``blocks.0.mlp.W_F``).
    """
    d_vocab = n_tokens + 1
    if d_model < 3 * d_vocab:
        raise ValueError(f"d_model={d_model}; the theory model needs d_model >= 3 (N + 1) = {3 * d_vocab}")
    cfg = dict(
        n_layers=1,
        n_heads=1,
        d_model=d_model,
        d_head=d_model,
        d_vocab=d_vocab,
        n_ctx=n_ctx,
        d_mlp=d_model,
        act_fn="relu",
        normalization_type=None,
        use_attn_scale=False,
        parallel_attn_mlp=True,
        positional_embedding_type="standard",
        device="cpu",
    )
    surgeries = [
        ZeroBiases(),
        PreviousTokenEmbedding(),
        SetWeight(("embed.W_E", "embed.W_E_prev", "unembed.W_U"), "orthonormal"),
        SetWeight(("pos_embed.W_pos",), "zeros"),
        SetWeight(("blocks.0.attn.W_Q", "blocks.0.attn.W_O"), "identity"),
        SetWeight(("blocks.0.attn.W_K", "blocks.0.attn.W_V"), "zeros", freeze=False),
        LinearFeedForward((0,), init="zeros"),
    ]
    return build_toy_model(cfg, surgeries, seed=seed)
