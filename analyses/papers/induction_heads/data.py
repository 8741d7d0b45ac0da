"""The paper's three in-context-learning tasks, batched (no per-sequence Python).

- **Task A** (:func:`make_token_icl_batch`, §2.1 and App. E): the token-level task of the standard
  transformer. 16 distinct tokens out of 32 form 8 item–label pairs, one item is repeated as the
  query, the target is its label; the 17 tokens sit at a random offset inside the 32 learned positions.
- **Task B** (:func:`make_continuous_icl_batch`, §3.2, eqs. 2–5): the minimal continuous task. Row
  ``2i-1`` (1-based) is ``[a_i | p_i]``, row ``2i`` is ``[b_i | p_i M]``, the last row is ``[a_q | 0]``,
  the target is ``b_q``; ``M`` is the block swap of eq. 2.
- **Task C** (:func:`orthonormal_icl_batch`, Assumptions 7–8, App. B): items and labels orthonormal,
  positions ``{p_i, p_i M}`` orthonormal, query = the last pair (``q = N``). Needs ``N <= D/2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from mechrecall.batch import Batch


def _check_pairs(n_pairs: int) -> None:
    if not isinstance(n_pairs, int) or n_pairs < 1:
        raise ValueError(f"n_pairs={n_pairs!r}; expected an integer >= 1")


def _check_dim(dim: int) -> None:
    if not isinstance(dim, int) or dim < 2 or dim % 2:
        raise ValueError(f"dim={dim!r}; expected an even integer >= 2 (the block swap M of eq. 2 needs D even)")


def block_swap_matrix(dim: int, dtype: torch.dtype = torch.float32) -> Float[Tensor, "D D"]:
    """``M = [[0, I], [I, 0]]`` (eq. 2): symmetric, ``M² = I``, ``tr M = 0``."""
    _check_dim(dim)
    h = dim // 2
    m = torch.zeros(dim, dim, dtype=dtype)
    m[:h, h:] = torch.eye(h, dtype=dtype)
    m[h:, :h] = torch.eye(h, dtype=dtype)
    return m


# ------------------------------------------------------------------------------------------- Task A


@dataclass
class TokenICLBatch:
    """Task A. ``tokens [B, 2P+1]``, ``target [B]`` (the query's label), ``pos_offset [B]`` (first
    learned position used), ``query_index [B]`` (0-based pair index of the query)."""

    tokens: Int[Tensor, "batch seq"]
    target: Int[Tensor, " batch"]
    pos_offset: Int[Tensor, " batch"]
    query_index: Int[Tensor, " batch"]

    @property
    def label_position(self) -> Int[Tensor, " batch"]:
        """Sequence position (0-based) of the query's label: ``2q + 1``."""
        return 2 * self.query_index + 1

    def as_batch(self) -> Batch:
        """The trainer's :class:`~mechrecall.batch.Batch` (loss on the last position, offsets in extras)."""
        return Batch(self.tokens, self.target, extras={"pos_offset": self.pos_offset, "query_index": self.query_index})


def make_token_icl_batch(
    batch_size: int,
    n_pairs: int = 8,
    vocab_size: int = 32,
    block_size: int = 32,
    random_offset: bool = True,
    generator: torch.Generator | None = None,
) -> TokenICLBatch:
    """Task A (App. E): ``2P`` distinct tokens per row grouped into pairs, one item repeated as the query.

    Raises ``ValueError`` when ``2P > vocab_size`` (tokens must be distinct) or the sequence ``2P+1``
    does not fit in ``block_size`` learned positions.
    """
    _check_pairs(n_pairs)
    seq = 2 * n_pairs + 1
    if 2 * n_pairs > vocab_size:
        raise ValueError(f"n_pairs={n_pairs}: 2N = {2 * n_pairs} distinct tokens do not fit in vocab_size={vocab_size}")
    if seq > block_size:
        raise ValueError(
            f"n_pairs={n_pairs}: the sequence 2N+1 = {seq} is longer than block_size (n_ctx) = {block_size}"
        )
    g = generator
    # Distinct tokens per row: the first 2P entries of a random permutation (argsort of uniforms).
    perm = torch.rand(batch_size, vocab_size, generator=g).argsort(-1)[:, : 2 * n_pairs]
    q = torch.randint(n_pairs, (batch_size,), generator=g)
    rows = torch.arange(batch_size)
    tokens = torch.cat([perm, perm[rows, 2 * q][:, None]], dim=1)
    target = perm[rows, 2 * q + 1]
    if random_offset:
        offset = torch.randint(block_size - seq + 1, (batch_size,), generator=g)
    else:
        offset = torch.zeros(batch_size, dtype=torch.long)
    return TokenICLBatch(tokens, target, offset, q)


# ------------------------------------------------------------------------------------------- Task B / C


def assemble_sequences(
    a: Float[Tensor, "B N D"], b: Float[Tensor, "B N D"], p: Float[Tensor, "B N D"], q: Int[Tensor, " B"]
) -> tuple[Float[Tensor, "B L two_D"], Float[Tensor, "B D"]]:
    """``X`` of eqs. 3–4 from items, labels, positional codes and the query index (0-based).

    Rows ``2i`` / ``2i+1`` (0-based) are ``[a_i | p_i]`` / ``[b_i | p_i M]``; the last row is ``[a_q | 0]``.
    Returns ``(X [B, 2N+1, 2D], y = b_q [B, D])``.
    """
    B, N, D = a.shape
    h = D // 2
    pm = torch.cat([p[..., h:], p[..., :h]], -1)  # p M (M swaps the halves)
    items = torch.cat([a, p], -1)
    labels = torch.cat([b, pm], -1)
    pairs = torch.stack([items, labels], dim=2).reshape(B, 2 * N, 2 * D)
    rows = torch.arange(B)
    query = torch.cat([a[rows, q], torch.zeros(B, D, dtype=a.dtype)], -1)
    return torch.cat([pairs, query[:, None]], dim=1), b[rows, q]


def make_continuous_icl_batch(
    batch_size: int,
    n_pairs: int,
    dim: int,
    query: str = "uniform",
    dist: str = "gaussian",
    variance: float = 1.0,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[Float[Tensor, "B L two_D"], Float[Tensor, "B D"], Int[Tensor, " B"]]:
    """Task B (eq. 5): i.i.d. ``N(0, variance)`` items, labels and positions; or Task C with ``dist="orthonormal"``.

    ``query``: ``"uniform"`` (q ~ Unif{1..N}, eq. 5) or ``"last"`` (q = N, Assumption 8).
    Returns ``(X [B, 2N+1, 2D], y [B, D], q [B])`` with ``q`` 0-based.
    """
    _check_pairs(n_pairs)
    _check_dim(dim)
    if query not in ("uniform", "last"):
        raise ValueError(f"query={query!r}; expected 'uniform' or 'last'")
    if dist not in ("gaussian", "orthonormal"):
        raise ValueError(f"dist={dist!r}; expected 'gaussian' or 'orthonormal'")
    g = generator
    if query == "uniform":
        q = torch.randint(n_pairs, (batch_size,), generator=g)
    else:
        q = torch.full((batch_size,), n_pairs - 1, dtype=torch.long)
    if dist == "gaussian":
        if not variance > 0:
            raise ValueError(f"variance={variance!r}; expected > 0")
        a, b, p = (
            variance**0.5 * torch.randn(batch_size, n_pairs, dim, generator=g, dtype=torch.float64) for _ in range(3)
        )
    else:
        a, b, p = _orthonormal_codes(batch_size, n_pairs, dim, g)
    X, y = assemble_sequences(a, b, p, q)
    return X.to(dtype), y.to(dtype), q


def _haar(batch: int, n: int, g: torch.Generator | None) -> Float[Tensor, "B n n"]:
    """Batched Haar-orthogonal matrices (QR of Gaussians with the sign fix)."""
    z = torch.randn(batch, n, n, generator=g, dtype=torch.float64)
    qm, r = torch.linalg.qr(z)
    return qm * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))[:, None, :]


def _orthonormal_codes(
    batch: int, n_pairs: int, dim: int, g: torch.Generator | None
) -> tuple[Float[Tensor, "B N D"], Float[Tensor, "B N D"], Float[Tensor, "B N D"]]:
    """Assumption 7: ``a_i = Q[i]``, ``b_i = Q[N+i]`` (Q Haar on O(D)); ``p_i = [R[i] | 0]`` (R Haar on O(D/2)),
    so ``p_i M = [0 | R[i]]`` and ``{p_i, p_i M}`` is orthonormal. Needs ``N <= D/2``."""
    if n_pairs > dim // 2:
        raise ValueError(f"n_pairs={n_pairs} > dim/2 = {dim // 2}: orthonormal data (Assumption 7) needs D >= 2N")
    Q = _haar(batch, dim, g)
    R = _haar(batch, dim // 2, g)
    a, b = Q[:, :n_pairs], Q[:, n_pairs : 2 * n_pairs]
    p = torch.cat([R[:, :n_pairs], torch.zeros(batch, n_pairs, dim // 2, dtype=torch.float64)], -1)
    return a, b, p


def orthonormal_icl_batch(
    batch_size: int,
    n_pairs: int,
    dim: int,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[Float[Tensor, "B L two_D"], Float[Tensor, "B D"]]:
    """Task C (Assumptions 7–8): orthonormal items/labels and positions, query = the last pair. ``(X, y)``."""
    X, y, _ = make_continuous_icl_batch(
        batch_size, n_pairs, dim, query="last", dist="orthonormal", generator=generator, dtype=dtype
    )
    return X, y
