"""Measurements on the paper's models: emergence times, the 19 pseudo-parameters, the circuit's scores.

**Emergence times** from *any* series of measurements over training (:func:`crossing_time`,
:func:`emergence_times`, :func:`joint_emergence_time`, :func:`fit_power_law`). One estimator serves every
source: an ODE trajectory, a toy run's ``history["eval"]`` rows, or the head-role scores of a list of
pretrained checkpoints. A quantity has *emerged* at the first time it reaches its threshold (Definition 1,
``T = inf{t : x(t) ≥ θ}``); a set of quantities has emerged when all of them are past their thresholds at
once (Definitions 2–3, ``t_ICL``). Between two measurements the crossing time is linearly interpolated
(``interpolate=False``: the first measured time at or past it). Thresholds must lie in (0, 1): the paper
uses ½ (Definition 1) and 0.1 for α₃ and β₂ (App. F).

**The 19-dimensional invariant subspace** of Theorem 1 (eqs. 6–8) and its 19 pseudo-parameters. Weights of
the disentangled transformer that gradient descent reaches from zero init (isotropic data)::

    W1 = [[α1 I, 0], [0, α2 I + α3 M]]                                    (2D x 2D)
    W2 = [[β1 I, 0, β2 I, 0], [0, β3 I + β4 M, 0, β5 I + β6 M],
          [β7 I, 0, β8 I, 0], [0, β9 I + β10 M, 0, β11 I + β12 M]]       (4D x 4D)
    W3 = [γ1 I | 0 | γ2 I | 0 | γ3 I | 0 | γ4 I | 0]ᵀ                      (8D x D)

Each pseudo-parameter multiplies one basis matrix ``B_k`` (I or M in one D x D block). All 19 are
mutually Frobenius-orthogonal with ``‖B_k‖² = D``, so the coefficient of ``W`` is ``c_k = ⟨W, B_k⟩ / D``
(the value of α, β, γ in eqs. 6–8; App. D's "magnitude along the component" read as this coefficient).

- :func:`pseudo_parameters`, :func:`weights_from_pseudo_parameters`, :func:`subspace_residual`;
- :func:`project_gradients_to_span`: train only a chosen subset (e.g. α₃, β₂, γ₃, Fig. 4 bottom): every
  gradient is projected on their basis matrices (a coefficient moves by ``-lr/D · ∂L/∂c``);
- :func:`symmetrized_gradient` / :func:`orbit_residual`: the exact check of Theorem 1. Its proof uses
  only sign flips, permutations and the block swap (Props. 1–3), so averaging the loss over the finite
  group (signed permutations E of the content coordinates) x (``diag(E', E')`` or ``[[0, E'], [E', 0]]``
  on the positions) makes the gradient lie in the subspace exactly, up to float64 rounding.

**The trained circuits**: the demo's induction accuracy and attention halves (:func:`induction_accuracy`,
:func:`circuit_attention`), the §2 model's Task-A scores (:func:`task_a_scores`) and Fig 2's diagonal
contrasts as z-scores of their blocks (:func:`fig2_contrasts`, :func:`diagonal_zscore`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor
from torch.utils.hooks import RemovableHandle

from analyses.heads import attention_mass, attention_patterns, head_roles, induction_keys, previous_token_keys
from analyses.ov import block_of, diagonal_contrast
from analyses.papers.induction_heads.data import (
    TokenICLBatch,
    assemble_sequences,
    block_swap_matrix,
    make_continuous_icl_batch,
)
from analyses.papers.induction_heads.models import (
    DisentangledTL,
    build_disentangled,
    disentangled_forward,
    standard_forward,
)
from analyses.papers.induction_heads.theory import closed_form_loss
from mechrecall._tl import HookedTransformer, register_grad_hook, tl_grad, tl_parameter
from mechrecall.batch import Batch

Series = Sequence[float] | np.ndarray  # measurements over time (a list, or an ODE trajectory's array)

#: Definition 1 (½ for all three) and App. F (0.1 for α₃ and β₂ "to better highlight their separation").
DEFINITION_1 = {"alpha3": 0.5, "beta2": 0.5, "gamma3": 0.5}
APPENDIX_F = {"alpha3": 0.1, "beta2": 0.1, "gamma3": 0.5}


def check_thresholds(thresholds: Mapping[str, float]) -> dict[str, float]:
    """The thresholds as floats, or ``ValueError`` naming one outside (0, 1)."""
    out = {}
    for name, value in thresholds.items():
        v = float(value)
        if not (0.0 < v < 1.0):
            raise ValueError(f"threshold {name}={value!r} is outside (0, 1)")
        out[name] = v
    if not out:
        raise ValueError("no threshold given")
    return out


def _arrays(times: Series, values: Series) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(times, dtype=float)
    x = np.asarray(values, dtype=float)
    if t.ndim != 1 or t.shape != x.shape:
        raise ValueError(f"times {t.shape} and values {x.shape} must be 1-D of the same length")
    if t.size < 2:
        raise ValueError(f"a series of {t.size} measurement(s); an emergence time needs at least 2")
    if np.any(np.diff(t) <= 0):
        raise ValueError("times must be strictly increasing")
    return t, x


def _interp(t: np.ndarray, x: np.ndarray, k: int, threshold: float, interpolate: bool) -> float:
    if k == 0 or not interpolate or x[k - 1] >= threshold:
        return float(t[k])
    frac = (threshold - x[k - 1]) / (x[k] - x[k - 1])
    return float(t[k - 1] + frac * (t[k] - t[k - 1]))


def crossing_time(times: Series, values: Series, threshold: float, *, interpolate: bool = True) -> float | None:
    """First time the series reaches ``threshold`` (``None`` if it never does)."""
    t, x = _arrays(times, values)
    hit = np.flatnonzero(x >= threshold)
    if hit.size == 0:
        return None
    return _interp(t, x, int(hit[0]), threshold, interpolate)


def emergence_times(
    times: Series,
    series: Mapping[str, Series],
    thresholds: Mapping[str, float] = DEFINITION_1,
    *,
    interpolate: bool = True,
) -> dict[str, float | None]:
    """``{name: T_name}`` for every name in ``thresholds`` (``None``: not reached within the series)."""
    thresholds = check_thresholds(thresholds)
    missing = [n for n in thresholds if n not in series]
    if missing:
        raise ValueError(f"no series for {missing}; the measurements have {sorted(series)}")
    return {n: crossing_time(times, series[n], th, interpolate=interpolate) for n, th in thresholds.items()}


def joint_emergence_time(
    times: Series,
    series: Mapping[str, Series],
    thresholds: Mapping[str, float] = DEFINITION_1,
    *,
    interpolate: bool = True,
) -> float | None:
    """Definition 3: ``t_ICL = inf{t : every series ≥ its threshold}`` (``None`` if never)."""
    thresholds = check_thresholds(thresholds)
    arrays = {n: _arrays(times, series[n]) for n in thresholds}
    t = next(iter(arrays.values()))[0]
    ok = np.all([x >= thresholds[n] for n, (_, x) in arrays.items()], axis=0)
    hit = np.flatnonzero(ok)
    if hit.size == 0:
        return None
    k = int(hit[0])
    if k == 0:
        return float(t[0])
    # The last series to cross decides; series already past their threshold at k - 1 do not.
    return max(
        _interp(t, x, k, thresholds[n], interpolate) if x[k - 1] < thresholds[n] else float(t[k - 1])
        for n, (_, x) in arrays.items()
    )


def series_from_rows(
    rows: Sequence[Mapping[str, Any]], keys: Sequence[str], time_key: str = "step"
) -> tuple[list[float], dict[str, list[float]]]:
    """``(times, {key: values})`` from rows such as a trainer's ``history["eval"]`` or one row per checkpoint."""
    rows = sorted((r for r in rows if all(k in r for k in keys)), key=lambda r: r[time_key])
    return [float(r[time_key]) for r in rows], {k: [float(r[k]) for r in rows] for k in keys}


def fit_power_law(ns: Sequence[float], times: Sequence[float]) -> tuple[float, float]:
    """Least squares on ``log t = k log N + log c``: ``(exponent k, prefactor c)``."""
    n = np.asarray(ns, dtype=float)
    t = np.asarray(times, dtype=float)
    if n.size < 2 or n.shape != t.shape:
        raise ValueError(f"need >= 2 (N, t) pairs of equal length, got {n.size} and {t.size}")
    if np.any(n <= 0) or np.any(~np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"a power law needs positive N and finite positive times; got N={n.tolist()}, t={t.tolist()}")
    k, logc = np.polyfit(np.log(n), np.log(t), 1)
    return float(k), float(math.exp(logc))


# ------------------------------------------------------------------------------------------- the 19-dim subspace

#: (matrix 1|2|3, block row, block column, "I"|"M"), blocks of size D; rows = query side, columns = key side.
LAYOUT: dict[str, tuple[int, int, int, str]] = {
    "alpha1": (1, 0, 0, "I"),
    "alpha2": (1, 1, 1, "I"),
    "alpha3": (1, 1, 1, "M"),
    "beta1": (2, 0, 0, "I"),
    "beta2": (2, 0, 2, "I"),
    "beta3": (2, 1, 1, "I"),
    "beta4": (2, 1, 1, "M"),
    "beta5": (2, 1, 3, "I"),
    "beta6": (2, 1, 3, "M"),
    "beta7": (2, 2, 0, "I"),
    "beta8": (2, 2, 2, "I"),
    "beta9": (2, 3, 1, "I"),
    "beta10": (2, 3, 1, "M"),
    "beta11": (2, 3, 3, "I"),
    "beta12": (2, 3, 3, "M"),
    "gamma1": (3, 0, 0, "I"),
    "gamma2": (3, 2, 0, "I"),
    "gamma3": (3, 4, 0, "I"),
    "gamma4": (3, 6, 0, "I"),
}
PSEUDO_PARAMS: tuple[str, ...] = tuple(LAYOUT)
#: The three that carry the induction head (Fig. 1, §5): previous-token, K-composition, copy.
INDUCTION_PARAMS: tuple[str, ...] = ("alpha3", "beta2", "gamma3")
SHAPES = {1: (2, 2), 2: (4, 4), 3: (8, 1)}  # in blocks of D


def check_names(names: Iterable[str]) -> list[str]:
    """The names, or ``ValueError`` naming the unknown ones."""
    names = list(names)
    unknown = [n for n in names if n not in LAYOUT]
    if unknown:
        raise ValueError(f"unknown pseudo-parameter(s) {unknown}; expected some of {', '.join(PSEUDO_PARAMS)}")
    if not names:
        raise ValueError("no pseudo-parameter given; expected some of " + ", ".join(PSEUDO_PARAMS))
    return names


def greek(name: str) -> str:
    """``alpha3`` -> ``α₃`` (figure labels)."""
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    for word, letter in (("alpha", "α"), ("beta", "β"), ("gamma", "γ")):
        if name.startswith(word):
            return letter + name[len(word) :].translate(sub)
    return name


def basis_matrix(name: str, dim: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """``B_k`` for one pseudo-parameter, full size (``[2D, 2D]``, ``[4D, 4D]`` or ``[8D, D]``)."""
    ((matrix, r, c, kind),) = [LAYOUT[n] for n in check_names([name])]
    rows, cols = SHAPES[matrix]
    out = torch.zeros(rows * dim, cols * dim, dtype=dtype)
    block = torch.eye(dim, dtype=dtype) if kind == "I" else block_swap_matrix(dim, dtype)
    out[r * dim : (r + 1) * dim, c * dim : (c + 1) * dim] = block
    return out


def pseudo_parameter_basis(dim: int, dtype: torch.dtype = torch.float32) -> dict[str, tuple[int, Tensor]]:
    """``{name: (matrix index 1|2|3, B_k)}`` for all 19."""
    return {n: (LAYOUT[n][0], basis_matrix(n, dim, dtype)) for n in PSEUDO_PARAMS}


def _block(W: Tensor, dim: int, r: int, c: int) -> Tensor:
    return W[..., r * dim : (r + 1) * dim, c * dim : (c + 1) * dim]


def coefficient(W: Tensor, name: str, dim: int) -> Tensor:
    # (no jaxtyping shapes: called per pseudo-parameter in every projected gradient step and every probe)
    """``c_k = ⟨W^{(m_k)}, B_k⟩ / D`` for the matrix ``W`` that ``name`` lives in (batched over leading dims)."""
    _, r, c, kind = LAYOUT[name]
    block = _block(W, dim, r, c)
    if kind == "I":
        return torch.diagonal(block, dim1=-2, dim2=-1).sum(-1) / dim
    h = dim // 2  # ⟨A, M⟩ = sum of the two off-diagonal half-blocks' diagonals
    return (
        torch.diagonal(block[..., :h, h:], dim1=-2, dim2=-1).sum(-1)
        + torch.diagonal(block[..., h:, :h], dim1=-2, dim2=-1).sum(-1)
    ) / dim


def pseudo_parameters(
    W1: Float[Tensor, "d2 d2"], W2: Float[Tensor, "d4 d4"], W3: Float[Tensor, "d8 d"]
) -> dict[str, float]:
    """All 19 coefficients ``c_k`` of the weights (eqs. 6–8)."""
    dim = W3.shape[-1]
    mats = {1: W1.detach(), 2: W2.detach(), 3: W3.detach()}
    return {n: float(coefficient(mats[LAYOUT[n][0]], n, dim)) for n in PSEUDO_PARAMS}


def weights_from_pseudo_parameters(
    coeffs: Mapping[str, float], dim: int, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Tensor, Tensor]:
    """``(W1, W2, W3) = Σ_k c_k B_k`` (names not given are 0)."""
    check_names(coeffs) if coeffs else None
    mats = {m: torch.zeros(r * dim, c * dim, dtype=dtype) for m, (r, c) in SHAPES.items()}
    for name, value in coeffs.items():
        mats[LAYOUT[name][0]] += float(value) * basis_matrix(name, dim, dtype)
    return mats[1], mats[2], mats[3]


def project(
    W1: Float[Tensor, "d2 d2"],
    W2: Float[Tensor, "d4 d4"],
    W3: Float[Tensor, "d8 d"],
    keep: Sequence[str] = PSEUDO_PARAMS,
) -> tuple[Float[Tensor, "d2 d2"], Float[Tensor, "d4 d4"], Float[Tensor, "d8 d"]]:
    """``Π(W) = Σ_{k in keep} c_k(W) B_k``, per matrix."""
    dim = W3.shape[-1]
    mats = (W1, W2, W3)
    out = [torch.zeros_like(W) for W in mats]
    for name in check_names(keep):
        m = LAYOUT[name][0]
        out[m - 1] = out[m - 1] + coefficient(mats[m - 1], name, dim) * basis_matrix(name, dim, W3.dtype).to(W3.device)
    return out[0], out[1], out[2]


def subspace_residual(
    W1: Float[Tensor, "d2 d2"],
    W2: Float[Tensor, "d4 d4"],
    W3: Float[Tensor, "d8 d"],
    keep: Sequence[str] = PSEUDO_PARAMS,
) -> float:
    """``sqrt(Σ_m ‖W − Π(W)‖² / Σ_m ‖W‖²)`` (0 for zero weights)."""
    mats = [W.detach() for W in (W1, W2, W3)]
    proj = project(mats[0], mats[1], mats[2], keep=keep)
    off = [float((W - P).pow(2).sum()) for W, P in zip(mats, proj)]
    tot = [float(W.pow(2).sum()) for W in mats]
    return (sum(off) / sum(tot)) ** 0.5 if sum(tot) > 0 else 0.0


def project_gradients_to_span(model: DisentangledTL, keep: Sequence[str]) -> list[RemovableHandle]:
    """Gradient hooks on a :class:`~analyses.papers.induction_heads.models.DisentangledTL`: each step then
    moves only the coefficients of ``keep`` (SGD from zero init stays exactly in their span).

    Returns the hook handles (``handle.remove()`` undoes it).
    """
    keep = check_names(keep)
    dim = model.dim
    tl = model.model
    params = {
        1: ("blocks.0.attn.W_Q", (0, slice(0, 2 * dim), slice(0, 2 * dim))),
        2: ("blocks.1.attn.W_Q", (0, slice(0, 4 * dim), slice(0, 4 * dim))),
        3: ("unembed.W_U", (slice(None), slice(None))),
    }
    handles = []
    for m, (param_name, index) in params.items():
        param = tl_parameter(tl, param_name)
        names = [n for n in keep if LAYOUT[n][0] == m]
        basis = [basis_matrix(n, dim, param.dtype).to(param.device) for n in names]

        def hook(
            grad: Tensor, names: list[str] = names, basis: list[Tensor] = basis, index: tuple[Any, ...] = index
        ) -> Tensor:
            out = torch.zeros_like(grad)
            sub = grad[index]
            acc = torch.zeros_like(sub)
            for n, B in zip(names, basis):
                acc = acc + coefficient(sub, n, dim) * B
            out[index] = acc
            return out

        handles.append(register_grad_hook(tl, param_name, hook))
    return handles


# ------------------------------------------------------------------------------------------- the exact orbit test


def signed_permutations(n: int, dtype: torch.dtype = torch.float64) -> Float[Tensor, "G n n"]:
    """All ``2ⁿ n!`` signed permutation matrices ``[G, n, n]`` (the hyperoctahedral group B_n)."""
    perms = torch.tensor(list(itertools.permutations(range(n))))
    signs = torch.tensor(list(itertools.product((1.0, -1.0), repeat=n)), dtype=dtype)
    P = torch.eye(n, dtype=dtype)[perms]  # [n!, n, n]
    return (P[:, None] * signs[None, :, None, :]).reshape(-1, n, n)


def position_group(dim: int, dtype: torch.dtype = torch.float64) -> Float[Tensor, "G D D"]:
    """``{diag(E, E), [[0, E], [E, 0]] : E ∈ B_{D/2}}`` (acting on positional codes; commutes with M)."""
    E = signed_permutations(dim // 2, dtype)
    Z = torch.zeros_like(E)
    diag = torch.cat([torch.cat([E, Z], -1), torch.cat([Z, E], -1)], -2)
    swap = torch.cat([torch.cat([Z, E], -1), torch.cat([E, Z], -1)], -2)
    return torch.cat([diag, swap])


def orbit_batch(
    a: Float[Tensor, "B N D"], b: Float[Tensor, "B N D"], p: Float[Tensor, "B N D"], q: Int[Tensor, " B"]
) -> tuple[Float[Tensor, "S L d2"], Float[Tensor, "S D"]]:
    """Every base sequence under every group element: ``a' = aE, b' = bE, p' = pF`` (label code ``p'M``)."""
    dim = a.shape[-1]
    E = signed_permutations(dim, a.dtype)
    F = position_group(dim, a.dtype)
    B0, N, _ = a.shape
    g1, g2 = E.shape[0], F.shape[0]
    a2 = torch.einsum("bnd,gde->gbne", a, E)[:, None].expand(g1, g2, B0, N, dim).reshape(-1, N, dim)
    b2 = torch.einsum("bnd,gde->gbne", b, E)[:, None].expand(g1, g2, B0, N, dim).reshape(-1, N, dim)
    p2 = torch.einsum("bnd,gde->gbne", p, F)[None].expand(g1, g2, B0, N, dim).reshape(-1, N, dim)
    q2 = q[None, None].expand(g1, g2, B0).reshape(-1)
    return assemble_sequences(a2, b2, p2, q2)


def symmetrized_gradient(
    W1: Float[Tensor, "d2 d2"],
    W2: Float[Tensor, "d4 d4"],
    W3: Float[Tensor, "d8 d"],
    a: Float[Tensor, "B N D"],
    b: Float[Tensor, "B N D"],
    p: Float[Tensor, "B N D"],
    q: Int[Tensor, " B"],
    exclude_self: bool = True,
) -> tuple[Tensor, Tensor, Tensor]:
    """Gradient of the loss ``‖y − z‖²`` averaged over the group orbit of the base sequences (float64)."""

    X, y = orbit_batch(a, b, p, q)
    Ws = [W.detach().clone().to(torch.float64).requires_grad_(True) for W in (W1, W2, W3)]
    loss = (disentangled_forward(X, Ws[0], Ws[1], Ws[2], exclude_self=exclude_self) - y).pow(2).sum(-1).mean()
    loss.backward()
    return Ws[0].grad, Ws[1].grad, Ws[2].grad


def orbit_residual(
    dim: int = 4, n_pairs: int = 2, n_base: int = 4, seed: int = 0, exclude_self: bool = True, scale: float = 0.5
) -> dict[str, float]:
    """Theorem 1, exactly: at a random point of the 19-dim subspace, the off-subspace fraction of the
    symmetrised gradient (≈ 1e-16) next to that of the plain gradient of the same base sequences."""
    g = torch.Generator().manual_seed(seed)
    coeffs = {n: scale * float(torch.randn(1, generator=g, dtype=torch.float64)) for n in PSEUDO_PARAMS}
    W = weights_from_pseudo_parameters(coeffs, dim, torch.float64)
    a, b, p = (torch.randn(n_base, n_pairs, dim, generator=g, dtype=torch.float64) for _ in range(3))
    q = torch.randint(n_pairs, (n_base,), generator=g)
    sym = symmetrized_gradient(*W, a, b, p, q, exclude_self)
    X, y = assemble_sequences(a, b, p, q)
    Ws = [w.clone().requires_grad_(True) for w in W]
    (disentangled_forward(X, Ws[0], Ws[1], Ws[2], exclude_self=exclude_self) - y).pow(2).sum(-1).mean().backward()
    n_seq = n_base * signed_permutations(dim).shape[0] * position_group(dim).shape[0]
    return {
        "symmetrized": subspace_residual(*sym),
        "plain": subspace_residual(*(w.grad for w in Ws)),
        "orbit_sequences": n_seq,
    }


# ------------------------------------------------------------------------------------------- exact checks


def closed_form_gaps(
    points: Sequence[tuple[float, float, float]], seed: int, dim: int = 16, n_pairs: int = 4, data: str = "orthonormal"
) -> list[float]:
    """App. B.3: max |closed-form loss − matrix-model loss| per (α₃, β₂, γ₃) point (query = the last pair, float64).
    ``data="orthonormal"``: Assumption 7, where the closed form holds; ``"gaussian"``: i.i.d. N(0, 1/D) codes (unit
    norm on average, not orthonormal), the perturbed input that must break it (the claim's control)."""

    g = torch.Generator().manual_seed(seed)
    X, y, _ = make_continuous_icl_batch(
        32, n_pairs, dim, query="last", dist=data, variance=1 / dim, generator=g, dtype=torch.float64
    )
    gaps = []
    for a, b, g in points:
        W = weights_from_pseudo_parameters({"alpha3": a, "beta2": b, "gamma3": g}, dim, torch.float64)
        per_seq = (disentangled_forward(X, *W) - y).pow(2).sum(-1)
        gaps.append(float((per_seq - closed_form_loss(a, b, g, n_pairs)).abs().max()))
    return gaps


def tl_vs_reference(seed: int, exclude_self: bool, dim: int = 4, n_pairs: int = 3) -> dict[str, float]:
    """The HookedTransformer embedding vs the plain-torch equations at random weights (float64): max |difference|
    of the forward and of the gradients, and the largest gradient outside the W_Q slices (should be 0)."""

    D = dim
    g = torch.Generator().manual_seed(seed)
    dtl = build_disentangled(D, n_pairs, exclude_self=exclude_self, dtype="float64")
    shapes = ((2 * D, 2 * D), (4 * D, 4 * D), (8 * D, D))
    W1, W2, W3 = (torch.randn(*shape, generator=g, dtype=torch.float64) for shape in shapes)
    dtl.set_weights(W1, W2, W3)
    X, y, _ = make_continuous_icl_batch(6, n_pairs, D, generator=g, dtype=torch.float64)
    z = dtl(X)
    ((z - y) ** 2).sum(-1).mean().backward()
    ref = [w.clone().requires_grad_(True) for w in (W1, W2, W3)]
    zr = disentangled_forward(X, ref[0], ref[1], ref[2], exclude_self=exclude_self)
    ((zr - y) ** 2).sum(-1).mean().backward()
    q0, q1 = (tl_grad(dtl.model, f"blocks.{i}.attn.W_Q") for i in (0, 1))
    w_u = tl_grad(dtl.model, "unembed.W_U")
    assert q0 is not None and q1 is not None and w_u is not None
    inside = [q0[0, : 2 * D, : 2 * D], q1[0, : 4 * D, : 4 * D], w_u]
    outside = max(
        float(q0[0, 2 * D :].abs().max()), float(q0[0, :, 2 * D :].abs().max()), float(q1[0, 4 * D :].abs().max())
    )
    return {
        "forward": float((z - zr).detach().abs().max()),
        "grad": max(float((a - b.grad).abs().max()) for a, b in zip(inside, ref) if b.grad is not None),
        "grad_outside_slices": outside,
    }


# ------------------------------------------------------------------------------------------- trained circuits


def induction_accuracy(model: HookedTransformer, test: Batch) -> float:
    """Top-1 accuracy on the predictable (second-half) positions of repeated random tokens."""
    from mechrecall.trainer import select_positions

    rows, labels = select_positions(model(test.tokens), test.targets, "mask", test.loss_mask)
    return (rows.argmax(-1) == labels).float().mean().item()


def circuit_attention(model: HookedTransformer, test: Batch) -> dict[str, float]:
    """The two halves of an induction circuit, read from the attention patterns (``analyses.heads``).

    ``L0_previous_token``: layer-0 attention from each query ``t >= 1`` to key ``t - 1``.
    ``L1_induction``: layer-1 attention, from the predictable queries, on the keys ``j <= t`` whose
    previous token equals the query's token (the tokens that followed earlier occurrences of it).
    """

    tokens = test.tokens
    patterns = attention_patterns(model, tokens)
    after_first = torch.ones_like(tokens, dtype=torch.bool)
    after_first[:, 0] = False
    prev = attention_mass(model, tokens, previous_token_keys(tokens), after_first, patterns=patterns)
    induction = attention_mass(model, tokens, induction_keys(tokens), test.loss_mask, patterns=patterns)
    return {"L0_previous_token": prev[0, 0].item(), "L1_induction": induction[1, 0].item()}


def task_a_scores(test: TokenICLBatch, device: str) -> Callable[[HookedTransformer], dict[str, float]]:
    """The §2 model's held-out scores on Task A: NLL and accuracy of the query's label, and layer 1's attention
    from the query to that label (read at position offset 0, one of the training offsets, by ``analyses.heads``)."""

    tokens0 = test.tokens.to(device)
    label_keys = torch.zeros_like(tokens0, dtype=torch.bool)
    label_keys[torch.arange(len(tokens0)), test.label_position.to(device)] = True
    last = torch.zeros_like(label_keys)
    last[:, -1] = True

    @torch.no_grad()
    def scores(model: HookedTransformer) -> dict[str, float]:
        logits = standard_forward(model, test.tokens.to(device), test.pos_offset.to(device))[:, -1]
        target = test.target.to(device)
        qa = attention_mass(model, tokens0, label_keys, last)
        return {
            "test_loss": float(torch.nn.functional.cross_entropy(logits.float(), target)),
            "accuracy": float((logits.argmax(-1) == target).float().mean()),
            "L1_query_to_label": float(qa[1, 0]),
        }

    return scores


def diagonal_zscore(mat: Any, offset: int = 0) -> float:
    """``(mean(diagonal at offset) − mean(every other entry)) / std(every entry)``: the diagonal contrast
    (``analyses.ov.diagonal_contrast``) in units of the block's own spread, so that growth of the weights' norm alone
    does not raise it (scaling the block scales both). ≈ N(0, 1/n) for a random n-diagonal block."""
    block = torch.as_tensor(mat, dtype=torch.float64)
    scale = float(block.std())
    if not scale > 0:
        raise ValueError("diagonal_zscore: the block's entries have no spread")
    return diagonal_contrast(block, offset) / scale


def fig2_contrasts(mats: Mapping[str, Any]) -> dict[str, float]:
    """Fig 2 (§2.2)'s three patterns as z-scored diagonal contrasts of the interpretable matrices
    (:func:`diagonal_zscore` of ``analyses.ov`` blocks): layer 0's P–P subdiagonal (previous position), layer 1's E vs
    OV0·E diagonal (induction), the output's OV1·E diagonal (copying)."""

    return {
        "previous_position": diagonal_zscore(block_of(mats["L0"], "P", "P"), -1),
        "induction": diagonal_zscore(block_of(mats["L1"], "E", "OV0·E"), 0),
        "copy": diagonal_zscore(block_of(mats["OUT"], "OV1·E"), 0),
    }


def demo_layer_differences(roles: Any) -> dict[str, float]:
    """The demo's head roles (a ``head_roles`` table of the 1-head, 2-layer model) as two contrasts: each role's
    score in the layer the circuit puts it in minus its score in the other layer (≈ 0, either sign, at init)."""
    score = {(int(r["layer"]), str(r["score"])): float(r["value"]) for r in roles.to_dict(orient="records")}
    return {
        "previous_token_L0_minus_L1": score[(0, "previous_token")] - score[(1, "previous_token")],
        "induction_L1_minus_L0": score[(1, "induction")] - score[(0, "induction")],
    }


def standard_role_scores(model: HookedTransformer, seed: int) -> dict[str, float]:
    """The §2 model's previous-token and induction scores per layer (``analyses.heads.head_roles`` on repeated
    random tokens of ``seed``), each role's layer contrast, and the smaller of the two contrasts (> 0 when both roles
    sit in their layers)."""
    roles = head_roles(model, roles=("previous_token", "induction"), seed=seed)
    score = {(int(r["layer"]), str(r["score"])): float(r["value"]) for r in roles.to_dict(orient="records")}
    scores = {f"L{layer}_{role}": score[(layer, role)] for layer in (0, 1) for role in ("previous_token", "induction")}
    diffs = demo_layer_differences(roles)
    return {**scores, **diffs, "smaller_layer_difference": min(diffs.values())}
