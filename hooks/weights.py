"""Temporary weight edits: replace one matrix, or its rank-k truncation (LASER), restored bit-exact on exit.

A *matrix* is named by ``(layer, kind)`` with ``kind`` one of ``MATRICES``, always seen as a 2-D
``[d_in, d_out]`` matrix in TL's right-multiplying convention (``x @ W``):

==========  ==================================================  =========================  ===================
kind        parameter(s)                                        2-D view                   LASER / HF name
==========  ==================================================  =========================  ===================
mlp_in      ``blocks.{l}.mlp.W_in`` (``W_F`` for a linear FF)   ``[d_model, d_mlp]``       ``fc_in`` / U_in
mlp_out     ``blocks.{l}.mlp.W_out`` (``W_F`` for a linear FF)  ``[d_mlp, d_model]``       ``fc_out`` / U_out
attn_q/k/v  ``blocks.{l}.attn.W_Q/W_K/W_V`` ``[h, m, d]``       ``[d_model, h*d_head]``    ``q/k/v_proj``
attn_o      ``blocks.{l}.attn.W_O`` ``[h, d, m]``               ``[h*d_head, d_model]``    ``out_proj``
attn_ov     head ``h``'s ``W_V[h] @ W_O[h]`` (rank <= d_head)     ``[d_model, d_model]``     (Chen et al. Fig 13)
==========  ==================================================  =========================  ===================

HF stores ``nn.Linear`` weights transposed (``[d_out, d_in]``); a transpose changes no singular value,
so a rank-k truncation here equals LASER's on the HF matrix. Biases are never touched.

Rank convention (LASER's ``do_low_rank`` and Chen et al.): ``rho`` is the *kept fraction*,
``k = floor(rho * min(m, n))``; ``rho = 0`` zeroes the matrix; ``k = min(m, n)`` leaves it unchanged.
LASER's CLI ``--rate r`` is ``rho = 1 - 0.1 r``. Unlike LASER (``torch.svd_lowrank``, randomized) the
SVD here is exact to float64 rounding (float64 by default), so results are deterministic: LAPACK's
(``torch.linalg.svd``) for small matrices, the Gram matrix's eigendecomposition for large ones (:func:`svd`).

Truncating a pretrained model loaded with TL processing truncates a different matrix (``fold_ln``
multiplies LayerNorm weights into ``W_in``/``W_Q``...); ``low_rank`` refuses such a model unless
``allow_processed=True`` — reload it with ``pretrained.load(name, processing="raw")``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple

import einops
import torch
from jaxtyping import Float

from mechrecall._tl import HookedTransformer
from mechrecall.checks import check_head, check_layer
from mechrecall.processing import require_raw

MATRICES = ("mlp_in", "mlp_out", "attn_q", "attn_k", "attn_v", "attn_o", "attn_ov")
_ATTN = {"attn_q": "W_Q", "attn_k": "W_K", "attn_v": "W_V", "attn_o": "W_O"}


class SVD(NamedTuple):
    """An SVD ``W = U diag(S) Vh`` (``U [m, r]``, ``S [r]``, ``Vh [r, n]``, ``r = min(m, n)``)."""

    U: torch.Tensor
    S: torch.Tensor
    Vh: torch.Tensor


def rank_for(rho: float, shape: tuple[int, ...]) -> int:
    """``floor(rho * min(m, n))`` for a 2-D ``shape``; ``rho`` must be in ``[0, 1]``.

    A ``1e-9`` tolerance keeps e.g. ``0.29 * 100`` at 29 (plain ``int()`` gives 28 in floating point).
    """
    if not isinstance(rho, (int, float)) or not 0.0 <= rho <= 1.0 or math.isnan(rho):
        raise ValueError(f"rho={rho!r}; expected the kept-rank fraction in [0, 1]")
    return math.floor(rho * min(shape[-2:]) + 1e-9)


#: ``svd(method="auto")`` takes the Gram route from this size of the short side on (a model's matrices; the
#: toys' stay on LAPACK).
GRAM_MIN = 512


def svd(
    W: Float[torch.Tensor, "m n"],
    dtype: torch.dtype = torch.float64,
    *,
    method: Literal["auto", "lapack", "gram"] = "auto",
) -> SVD:
    """Thin SVD of ``W`` computed in ``dtype`` (float64 by default), singular values in descending order.

    ``method="lapack"``: ``torch.linalg.svd``. ``method="gram"``: :func:`gram_svd`, about four times faster on a
    Pythia-1B ``W_in`` (2048 x 8192; ``benchmarks/bench_analyses.py``) and equal to LAPACK's to float64 rounding
    where a truncation reads it.
    ``"auto"``: ``"gram"`` in float64 when ``min(m, n) >= GRAM_MIN``, else ``"lapack"`` (the Gram matrix squares
    the condition number, which float32 cannot afford).
    """
    if method not in ("auto", "lapack", "gram"):
        raise ValueError(f"method={method!r}; expected 'auto', 'lapack' or 'gram'")
    A = W.detach().to(dtype)
    if method == "gram" or (method == "auto" and dtype == torch.float64 and min(A.shape) >= GRAM_MIN):
        return gram_svd(A)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    return SVD(U, S, Vh)


def gram_svd(W: Float[torch.Tensor, "m n"]) -> SVD:
    """The thin SVD from the eigendecomposition of the smaller Gram matrix (``W Wᵀ``, ``[m, m]``, for ``m <= n``).

    ``W Wᵀ = U Λ Uᵀ`` gives the left singular vectors; row ``i`` of ``Uᵀ W`` is ``σ_i v_iᵀ``, so ``S`` is its norm
    (accurate to ``eps · ||W||``, as LAPACK's) and ``Vh`` its direction (a zero row where ``σ_i = 0``; rows ``i, j``
    are orthogonal to about ``eps · σ₁² / (σ_i σ_j)``: 1e-10 for ``σ >= 1e-3 σ₁``, less below). A rank-``k``
    truncation ``U_k diag(S_k) Vh_k = U_k U_kᵀ W`` is then the projection on the top-``k`` left singular subspace,
    whose error is ``eps · σ₁² / (σ_k² − σ_{k+1}²)``: where that gap vanishes, the best rank-``k`` matrix is not
    unique, for LAPACK either. A tall ``W`` is done through ``Wᵀ``.
    """
    if W.shape[0] > W.shape[1]:
        U, S, Vh = gram_svd(W.mT)
        return SVD(Vh.mT, S, U.mT)
    _, U = torch.linalg.eigh(W @ W.mT)
    B = U.mT @ W  # [m, n]: row i = σ_i v_iᵀ
    S = torch.linalg.vector_norm(B, dim=1)
    S, order = torch.sort(S, descending=True, stable=True)
    U, B = U[:, order], B[order]
    Vh = B / torch.where(S > 0, S, torch.ones_like(S))[:, None]
    return SVD(U, S, Vh)


def from_svd(factors: SVD, k: int, like: torch.Tensor) -> Float[torch.Tensor, "m n"]:
    """``U[:, :k] diag(S[:k]) Vh[:k]``, cast to ``like``'s dtype and device (zeros for ``k = 0``)."""
    U, S, Vh = factors
    return ((U[:, :k] * S[:k]) @ Vh[:k]).to(like.dtype).to(like.device)


def truncate(
    W: Float[torch.Tensor, "m n"], rho: float, *, dtype: torch.dtype = torch.float64
) -> Float[torch.Tensor, "m n"]:
    """The best rank-``floor(rho * min(m, n))`` approximation of ``W`` (Eckart-Young), as a new tensor.

    ``rho = 0`` gives zeros; full rank returns an exact copy of ``W``.
    """
    if W.ndim != 2:
        raise ValueError(f"truncate expects a 2-D matrix, got shape {tuple(W.shape)}")
    k = rank_for(rho, tuple(W.shape))
    if k == min(W.shape):
        return W.detach().clone()
    if k == 0:
        return torch.zeros_like(W)
    return from_svd(svd(W, dtype), k, W)


# ------------------------------------------------------------------------------- matrix addressing


def _mlp_param(model: HookedTransformer, layer: int, name: str) -> torch.nn.Parameter:
    mlp = model.blocks[layer].mlp
    if hasattr(mlp, "W_F"):  # mechrecall.modules.LinearFF: one matrix is both "in" and "out"
        return mlp.W_F
    if not hasattr(mlp, name):
        raise ValueError(f"block {layer} has no MLP matrix {name} (attention-only or no-FF block?)")
    return getattr(mlp, name)


def _check(model: HookedTransformer, layer: int, kind: str, head: int | None) -> None:
    if kind not in MATRICES:
        raise ValueError(f"matrix={kind!r}; expected one of {MATRICES}")
    check_layer(model, layer)
    if kind == "attn_ov":
        if head is None and model.cfg.n_heads != 1:
            raise ValueError(f"matrix='attn_ov' needs head= (the model has {model.cfg.n_heads} heads)")
        if head is not None:
            check_head(model, layer, head)
    elif head is not None:
        raise ValueError(f"head= only applies to matrix='attn_ov', not {kind!r}")
    if kind.startswith("mlp") and model.cfg.attn_only:
        raise ValueError(f"matrix={kind!r}: the model is attention-only")


def matrix_params(model: HookedTransformer, layer: int, kind: str, head: int | None = None) -> list[torch.nn.Parameter]:
    """The parameter(s) that ``(layer, kind)`` lives in."""
    _check(model, layer, kind, head)
    if kind == "mlp_in":
        return [_mlp_param(model, layer, "W_in")]
    if kind == "mlp_out":
        return [_mlp_param(model, layer, "W_out")]
    attn = model.blocks[layer].attn
    if kind == "attn_ov":
        return [attn.W_V, attn.W_O]
    return [getattr(attn, _ATTN[kind])]


def get_matrix(model: HookedTransformer, layer: int, kind: str, head: int | None = None) -> Float[torch.Tensor, "m n"]:
    """The 2-D ``[d_in, d_out]`` matrix ``(layer, kind)`` (a detached copy for the attention kinds)."""
    params = matrix_params(model, layer, kind, head)
    W = params[0].detach()
    if kind.startswith("mlp"):
        return W
    if kind == "attn_ov":
        h = 0 if head is None else head
        return params[0].detach()[h] @ params[1].detach()[h]
    if kind == "attn_o":
        return einops.rearrange(W, "h d m -> (h d) m")
    return einops.rearrange(W, "h m d -> m (h d)")


@torch.no_grad()
def set_matrix(
    model: HookedTransformer,
    layer: int,
    kind: str,
    W: torch.Tensor,
    head: int | None = None,
    *,
    factors: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> None:
    """Write the 2-D matrix ``W`` into ``(layer, kind)`` in place (the inverse of ``get_matrix``).

    For ``attn_ov`` the head's ``W_V[h] [m, d_head]`` and ``W_O[h] [d_head, m]`` are replaced by
    factors ``L [m, r]``, ``R [r, m]`` (``r <= d_head``, zero-padded) with ``L R = W``: the given
    ``factors`` (e.g. ``U_k diag(S_k)`` and ``Vh_k`` of a truncation), else those of ``W``'s SVD.
    """
    params = matrix_params(model, layer, kind, head)
    expected = get_matrix(model, layer, kind, head).shape
    if tuple(W.shape) != tuple(expected):
        raise ValueError(f"new {kind} matrix has shape {tuple(W.shape)}; expected {tuple(expected)}")
    if kind.startswith("mlp"):
        params[0].copy_(W)
    elif kind == "attn_ov":
        _set_ov(params, 0 if head is None else head, W, factors)
    elif kind == "attn_o":
        params[0].copy_(einops.rearrange(W, "(h d) m -> h d m", h=model.cfg.n_heads))
    else:
        params[0].copy_(einops.rearrange(W, "m (h d) -> h m d", h=model.cfg.n_heads))


def _set_ov(params: Sequence[torch.Tensor], h: int, W: torch.Tensor, factors: Any) -> None:
    W_V, W_O = params
    d_head = W_V.shape[-1]
    if factors is None:
        U, S, Vh = svd(W)
        if S.numel() > d_head and S[d_head] > 1e-6 * S[0]:
            raise ValueError(
                f"an attn_ov matrix must have rank <= d_head={d_head} (singular value "
                f"{d_head + 1} is {S[d_head].item():.3g})"
            )
        factors = (U[:, :d_head] * S[:d_head], Vh[:d_head])
    left, right = factors
    if left.shape[-1] > d_head:  # singular directions beyond d_head must carry (numerically) nothing
        if left[:, d_head:].norm() * right[d_head:].norm() > 1e-6 * left.norm() * right.norm():
            raise ValueError(f"attn_ov factors have inner size {left.shape[-1]} with weight beyond d_head={d_head}")
        left, right = left[:, :d_head], right[:d_head]
    r = left.shape[-1]
    W_V[h].zero_()
    W_O[h].zero_()
    W_V[h][:, :r] = left.to(W_V.dtype)
    W_O[h][:r] = right.to(W_O.dtype)


# ------------------------------------------------------------------------------- context managers


@contextmanager
def restored(params: list[torch.nn.Parameter]) -> Iterator[None]:
    """Snapshot ``params`` and copy them back on exit (normal or by exception): bit-exact restoration."""
    saved = [p.detach().clone() for p in params]
    try:
        yield
    finally:
        with torch.no_grad():
            for p, s in zip(params, saved):
                p.copy_(s)


@contextmanager
def edit_matrix(
    model: HookedTransformer,
    layer: int,
    kind: str,
    W: torch.Tensor,
    *,
    head: int | None = None,
    factors: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> Iterator[HookedTransformer]:
    """Inside the block, matrix ``(layer, kind)`` is ``W``; the original parameters come back on exit."""
    with restored(matrix_params(model, layer, kind, head)):
        set_matrix(model, layer, kind, W, head, factors=factors)
        yield model


def truncation(factors: SVD, k: int, like: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """The rank-``k`` matrix from an SVD and its factors ``(U_k diag(S_k), Vh_k)`` (for ``attn_ov``)."""
    U, S, Vh = factors
    return from_svd(factors, k, like), (U[:, :k] * S[:k], Vh[:k])


@contextmanager
def low_rank(
    model: HookedTransformer,
    layer: int,
    kind: str,
    rho: float,
    *,
    head: int | None = None,
    allow_processed: bool = False,
    dtype: torch.dtype = torch.float64,
) -> Iterator[HookedTransformer]:
    """Inside the block, matrix ``(layer, kind)`` is its rank-``floor(rho * min(m, n))`` truncation.

    >>> with low_rank(model, layer=5, kind="mlp_in", rho=0.01):   # doctest: +SKIP
    ...     logits = model(tokens)

    Refuses a pretrained model loaded with TL weight processing unless ``allow_processed=True``.
    """
    _check(model, layer, kind, head)
    rank_for(rho, (1, 1))  # validate rho before any work
    if not allow_processed:
        require_raw(model, f"low_rank({kind!r}, layer={layer})")
    W = get_matrix(model, layer, kind, head)
    k = rank_for(rho, tuple(W.shape))
    if k == min(W.shape):  # full rank: nothing changes
        yield model
        return
    new, factors = truncation(svd(W, dtype), k, W)
    with edit_matrix(model, layer, kind, new, head=head, factors=factors):
        yield model
