"""The paper's models as builder recipes (``mechrecall.build_toy_model``) plus a plain-torch reference.

- :func:`standard_model`: the 2-layer, 1-head, attention-only transformer of §2 / App. E (no LayerNorm,
  learned positions, no weight tying). Task A places each sequence at a random offset in the 32 learned
  positions; :func:`offset_pos_hook` feeds those positions through ``hook_pos_embed`` (gradients reach
  ``W_pos``).
- :func:`build_disentangled` / :class:`DisentangledTL`: the disentangled transformer of §3.1 (eq. 1,
  App. A), embedded *exactly* in one ``HookedTransformer``: residual width 8D, ``d_head = 4D``, frozen
  identity ``W_K`` / ``W_V`` and a frozen ``W_O`` that writes the head output into empty residual slots
  (so "add" is "concatenate"), trainable ``W_Q`` slices that are the merged key–query matrices
  ``W1 = W_Q⁰[:2D, :2D]``, ``W2 = W_Q¹[:4D, :4D]``, and ``W3 = W_U`` (8D x D). Strict causal mask
  (a position never attends to itself, App. B.2) through the ``strict_causal_mask`` permanent hook;
  the first row, with no admissible key, attends to nothing (output 0).
- :func:`disentangled_forward` / :class:`DisentangledReference`: the same equations in plain torch,
  the oracle of the tests and the baseline of the benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from mechrecall._tl import HookedTransformer
from mechrecall.batch import Batch
from mechrecall.builder import build_toy_model
from mechrecall.surgeries import Freeze, PermanentHook, SetWeight, ZeroBiases

# ------------------------------------------------------------------------------------------- standard model (§2)


def standard_config(d_model: int = 2048, n_ctx: int = 32, d_vocab: int = 32) -> dict:
    """App. E: ``D = D_H = 2048``, ``N_E = N_P = 32``, 2 attention-only layers, 1 head, no LayerNorm.

    The 1/sqrt(d_head) attention scale (Vaswani et al.'s recipe, which the paper says it follows) is kept.
    """
    return dict(
        n_layers=2,
        n_heads=1,
        d_model=d_model,
        d_head=d_model,
        d_vocab=d_vocab,
        d_vocab_out=d_vocab,
        n_ctx=n_ctx,
        attn_only=True,
        normalization_type=None,
        positional_embedding_type="standard",
        default_prepend_bos=False,
        act_fn="relu",
    )


def standard_model(d_model: int = 2048, n_ctx: int = 32, d_vocab: int = 32, seed: int = 0) -> HookedTransformer:
    """The §2 model with TransformerLens' default init; biases kept (zero-init, trainable: the paper is silent)."""
    return build_toy_model(standard_config(d_model, n_ctx, d_vocab), [], seed=seed)


def offset_pos_hook(model: HookedTransformer, pos_offset: Int[Tensor, " batch"]) -> tuple[str, Callable]:
    """``("hook_pos_embed", fn)``: row ``b`` uses learned positions ``pos_offset[b] .. pos_offset[b] + L - 1``.

    The hook indexes the live ``W_pos``, so gradients flow into it (Task A's random placement, App. E).
    """
    W_pos = model.W_pos

    def positions(pos_embed: Float[Tensor, "batch pos d_model"], hook: Any) -> Float[Tensor, "batch pos d_model"]:
        L = pos_embed.shape[1]
        index = pos_offset.to(pos_embed.device)[:, None] + torch.arange(L, device=pos_embed.device)
        return W_pos[index]

    return "hook_pos_embed", positions


def standard_forward(
    model: HookedTransformer, tokens: Int[Tensor, "batch pos"], pos_offset: Int[Tensor, " batch"] | None
) -> Float[Tensor, "batch pos d_vocab_out"]:
    """Logits of the §2 model with per-row position offsets (``None``: positions ``0..L-1``)."""
    if pos_offset is None:
        return model(tokens)
    if int(pos_offset.max()) + tokens.shape[1] > model.cfg.n_ctx:
        raise ValueError(
            f"pos_offset up to {int(pos_offset.max())} + length {tokens.shape[1]} exceeds n_ctx={model.cfg.n_ctx}"
        )
    return model.run_with_hooks(tokens, fwd_hooks=[offset_pos_hook(model, pos_offset)])


def standard_loss(model: HookedTransformer, batch: Batch) -> Tensor:
    """Negative log-likelihood of the query's label at the last position (App. E)."""
    logits = standard_forward(model, batch.tokens, batch.extras.get("pos_offset"))
    return F.cross_entropy(logits[:, -1].float(), batch.targets)


# ------------------------------------------------------------------------------------------- disentangled (§3)


def disentangled_config(dim: int, n_pairs: int, dtype: str = "float32") -> dict:
    """The TL config of the embedding: residual 8D, ``d_head`` 4D, no attention scale, ``n_ctx = 2N+1``."""
    return dict(
        n_layers=2,
        n_heads=1,
        d_model=8 * dim,
        d_head=4 * dim,
        n_ctx=2 * n_pairs + 1,
        d_vocab=1,
        d_vocab_out=dim,
        attn_only=True,
        normalization_type=None,
        use_attn_scale=False,
        positional_embedding_type="standard",
        default_prepend_bos=False,
        init_weights=False,
        act_fn="relu",
        dtype=dtype,
    )


def disentangled_surgeries(dim: int, exclude_self: bool = True, init_std: float = 0.0) -> list:
    """Frozen identity plumbing + trainable ``W1`` / ``W2`` / ``W3`` (zero init, or N(0, init_std²))."""
    D = dim
    head = (0, 1)
    s = [
        ZeroBiases(),
        Freeze(("embed.W_E", "pos_embed.W_pos")),
        SetWeight(
            (
                "blocks.*.attn.W_K",
                "blocks.*.attn.W_V",
                "blocks.*.attn.W_O",
                "blocks.*.attn.W_Q",
                "unembed.W_U",
                "embed.W_E",
                "pos_embed.W_pos",
            ),
            "zeros",
        ),
        SetWeight(("blocks.0.attn.W_K", "blocks.0.attn.W_V"), "identity", region=(head, (0, 2 * D), (0, 2 * D))),
        SetWeight(("blocks.0.attn.W_O",), "identity", region=(head, (0, 2 * D), (2 * D, 4 * D))),
        SetWeight(("blocks.1.attn.W_K", "blocks.1.attn.W_V"), "identity", region=(head, (0, 4 * D), (0, 4 * D))),
        SetWeight(("blocks.1.attn.W_O",), "identity", region=(head, (0, 4 * D), (4 * D, 8 * D))),
    ]
    init = "normal" if init_std > 0 else "zeros"
    scale = init_std if init_std > 0 else 1.0
    s += [
        SetWeight(("blocks.0.attn.W_Q",), init, scale=scale, freeze=False, region=(head, (0, 2 * D), (0, 2 * D))),
        SetWeight(("blocks.1.attn.W_Q",), init, scale=scale, freeze=False, region=(head, (0, 4 * D), (0, 4 * D))),
        SetWeight(("unembed.W_U",), init, scale=scale, freeze=False),
    ]
    if exclude_self:
        s.append(PermanentHook("strict_causal_mask", {"layers": [0, 1]}))
    return s


class DisentangledTL:
    """The disentangled transformer inside a ``HookedTransformer`` (see the module docstring).

    ``.model``: the HookedTransformer; ``.W1 [2D, 2D]``, ``.W2 [4D, 4D]``, ``.W3 [8D, D]``: views of the
    trainable weights (row = query side, column = key side, as ``S = X W1 Xᵀ``); ``forward(X) -> z``.
    Hooks: ``blocks.0.attn.hook_pattern`` = T, ``blocks.1.attn.hook_pattern`` = Q,
    ``blocks.0.hook_resid_post[..., :4D]`` = U, ``blocks.1.hook_resid_post`` = V.
    """

    def __init__(self, model: HookedTransformer, dim: int, n_pairs: int):
        self.model, self.dim, self.n_pairs = model, dim, n_pairs

    @property
    def W1(self) -> Tensor:
        return self.model.blocks[0].attn.W_Q[0, : 2 * self.dim, : 2 * self.dim]

    @property
    def W2(self) -> Tensor:
        return self.model.blocks[1].attn.W_Q[0, : 4 * self.dim, : 4 * self.dim]

    @property
    def W3(self) -> Tensor:
        return self.model.W_U

    def weights(self) -> tuple[Tensor, Tensor, Tensor]:
        """Detached copies ``(W1, W2, W3)``."""
        return self.W1.detach().clone(), self.W2.detach().clone(), self.W3.detach().clone()

    def set_weights(self, W1: Float[Tensor, "d2 d2"], W2: Float[Tensor, "d4 d4"], W3: Float[Tensor, "d8 d"]) -> None:
        with torch.no_grad():
            self.W1.copy_(W1)
            self.W2.copy_(W2)
            self.W3.copy_(W3)

    def embed(self, X: Float[Tensor, "B L two_D"]) -> Float[Tensor, "B L eight_D"]:
        """The residual stream at layer 0: ``[X | 0]`` (6D empty slots for the two heads' outputs)."""
        if X.shape[-1] != 2 * self.dim:
            raise ValueError(f"X ends in {X.shape[-1]}; expected 2D = {2 * self.dim}")
        return F.pad(X, (0, 6 * self.dim)).to(self.model.cfg.dtype)

    def forward(self, X: Float[Tensor, "B L two_D"]) -> Float[Tensor, "B D"]:
        """``z = V[-1] W3`` (eq. 1)."""
        return self.model(self.embed(X), start_at_layer=0)[:, -1]

    __call__ = forward

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]


def build_disentangled(
    dim: int,
    n_pairs: int,
    *,
    exclude_self: bool = True,
    init_std: float = 0.0,
    seed: int = 0,
    dtype: str = "float32",
) -> DisentangledTL:
    """The disentangled transformer of §3.1 for ``D = dim`` and ``N = n_pairs`` (28 D² trainable numbers)."""
    if not isinstance(dim, int) or dim < 2 or dim % 2:
        raise ValueError(f"dim={dim!r}; expected an even integer >= 2")
    if not isinstance(n_pairs, int) or n_pairs < 1:
        raise ValueError(f"n_pairs={n_pairs!r}; expected an integer >= 1")
    model = build_toy_model(
        disentangled_config(dim, n_pairs, dtype), disentangled_surgeries(dim, exclude_self, init_std), seed=seed
    )
    return DisentangledTL(model, dim, n_pairs)


def wrap_disentangled(model: HookedTransformer) -> DisentangledTL:
    """:class:`DisentangledTL` around a model rebuilt from a checkpoint (dims read from its config)."""
    return DisentangledTL(model, model.cfg.d_model // 8, (model.cfg.n_ctx - 1) // 2)


def mse(z: Float[Tensor, "B D"], y: Float[Tensor, "B D"], reduction: str = "mean") -> Float[Tensor, ""]:
    """``"mean"``: ``F.mse_loss`` (mean over batch and D); ``"sum"``: ``‖y − z‖²`` (the paper's L), mean over batch."""
    if reduction == "mean":
        return F.mse_loss(z, y)
    if reduction == "sum":
        return (z - y).pow(2).sum(-1).mean()
    raise ValueError(f"loss reduction={reduction!r}; expected 'mean' or 'sum'")


# ------------------------------------------------------------------------------------------- plain-torch reference


def causal_softmax(S: Float[Tensor, "B L L"], exclude_self: bool = True) -> Float[Tensor, "B L L"]:
    """Row softmax under the causal mask (strict with ``exclude_self``); an all-masked row is 0."""
    L = S.shape[-1]
    allowed = torch.ones(L, L, dtype=torch.bool, device=S.device).tril(-1 if exclude_self else 0)
    return torch.nan_to_num(torch.softmax(S.masked_fill(~allowed, float("-inf")), -1), nan=0.0)


def disentangled_forward(
    X: Float[Tensor, "B L d2"],
    W1: Float[Tensor, "d2 d2"],
    W2: Float[Tensor, "d4 d4"],
    W3: Float[Tensor, "d8 d"],
    exclude_self: bool = True,
) -> Float[Tensor, "B D"]:
    """Eq. 1 with App. A's names: ``U = [X | σ(X W1 Xᵀ) X]``, ``V = [U | σ(U W2 Uᵀ) U]``, ``z = V[-1] W3``."""
    T = causal_softmax(X @ W1 @ X.transpose(1, 2), exclude_self)
    U = torch.cat([X, T @ X], -1)
    Q = causal_softmax(U @ W2 @ U.transpose(1, 2), exclude_self)
    V = torch.cat([U, Q @ U], -1)
    return V[:, -1] @ W3


class DisentangledReference(nn.Module):
    """``disentangled_forward`` with ``W1``, ``W2``, ``W3`` as parameters (zero init)."""

    def __init__(self, dim: int, exclude_self: bool = True, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.dim, self.exclude_self = dim, exclude_self
        self.W1 = nn.Parameter(torch.zeros(2 * dim, 2 * dim, dtype=dtype))
        self.W2 = nn.Parameter(torch.zeros(4 * dim, 4 * dim, dtype=dtype))
        self.W3 = nn.Parameter(torch.zeros(8 * dim, dim, dtype=dtype))

    def forward(self, X: Float[Tensor, "B L d2"]) -> Float[Tensor, "B D"]:
        return disentangled_forward(X, self.W1, self.W2, self.W3, self.exclude_self)


# ------------------------------------------------------------------------------------------- the demo's model


def demo_config(d_model: int = 64, d_vocab: int = 64, seq_len: int = 32) -> dict:
    """The demo's 2-layer, 1-head, attention-only, LayerNorm-free model (biases zeroed by the builder recipe)."""
    return dict(
        n_layers=2,
        n_heads=1,
        d_model=d_model,
        d_head=d_model,
        d_vocab=d_vocab,
        n_ctx=seq_len,
        attn_only=True,
        normalization_type=None,
    )


def demo_model(d_model: int = 64, d_vocab: int = 64, seq_len: int = 32, seed: int = 0) -> HookedTransformer:
    """:func:`demo_config` built with zero, frozen biases (``ZeroBiases``)."""
    return build_toy_model(demo_config(d_model, d_vocab, seq_len), [ZeroBiases()], seed=seed)
