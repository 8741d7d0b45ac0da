"""The 3-parameter model of §6 / App. B: closed-form loss, its gradient, and the gradient-flow ODE.

With orthonormal inputs (Assumption 7), the query = the last pair (Assumption 8), the strict causal
mask and ``W1 = α B_{α3}``, ``W2 = β B_{β2}``, ``W3 = γ B_{γ3}``, the loss is deterministic (App. B.3–B.4)::

    G = e^α + 2N − 2,  F = 2N − 1,  s = exp(β e^α / G),  r = s + F
    L(α, β, γ; N) = γ² (s² + F) / r² − 2γ s / r + 1

Gradient flow from zero (Assumptions 5–6) gives Theorem 2: ``T_γ < T_β < T_α``, ``T_γ = Θ(N)``,
``T_β, T_α = Θ(N²)``, hence ``t_ICL = Θ(N²)`` (Corollary 1, Fig. 5).

Note: App. B.1's summary labels the first phase ``T_α = T₁``; the main text (Theorem 2) and the
proofs of B.6–B.8 give ``T_γ = T₁``, ``T_β = T₁ + T₂``, ``T_α = T₁ + T₂ + T₃``, which is what the ODE shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import solve_ivp

PARAMS = ("alpha3", "beta2", "gamma3")  # the order of the ODE's state vector


def _check_n(n_pairs: int) -> None:
    if not isinstance(n_pairs, (int, np.integer)) or n_pairs < 2:
        raise ValueError(f"n_pairs={n_pairs!r}; expected an integer >= 2 (for N = 1, dα/dt = 0: α never emerges)")


def closed_form_loss(alpha: ArrayLike, beta: ArrayLike, gamma: ArrayLike, n_pairs: int) -> Any:
    """App. B.3: the per-sequence loss ``‖y − z‖²`` of the 3-parameter model (numpy broadcasting)."""
    G = np.exp(alpha) + 2 * n_pairs - 2
    F = 2 * n_pairs - 1
    s = np.exp(beta * np.exp(alpha) / G)
    r = s + F
    return gamma**2 * (s**2 + F) / r**2 - 2 * gamma * s / r + 1


def closed_form_grad(alpha: ArrayLike, beta: ArrayLike, gamma: ArrayLike, n_pairs: int) -> tuple[Any, Any, Any]:
    """App. B.4: ``(∂L/∂α, ∂L/∂β, ∂L/∂γ)``."""
    ea = np.exp(alpha)
    G = ea + 2 * n_pairs - 2
    F = 2 * n_pairs - 1
    s = np.exp(beta * ea / G)
    r = s + F
    common = gamma**2 * (s - 1) / r**3 - gamma / r**2
    d_alpha = 4 * beta * (n_pairs - 1) * F * s * ea / G**2 * common
    d_beta = 2 * F * s * ea / G * common
    d_gamma = 2 * gamma * (s**2 + F) / r**2 - 2 * s / r
    return d_alpha, d_beta, d_gamma


@dataclass
class Trajectory:
    """Gradient-flow (or gradient-descent) path of (α, β, γ): arrays over time ``t``."""

    n_pairs: int
    t: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    loss: np.ndarray

    def series(self) -> dict[str, np.ndarray]:
        """``{"alpha3": α(t), "beta2": β(t), "gamma3": γ(t)}`` for :func:`~.emergence.emergence_times`."""
        return {"alpha3": self.alpha, "beta2": self.beta, "gamma3": self.gamma}


def integrate_three_param(
    n_pairs: int,
    t_max: float | None = None,
    *,
    dt: float | None = None,
    stop_at: float | None = 0.5,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    frozen: Sequence[str] = (),
) -> Trajectory:
    """Integrate the gradient flow ``dθ/dt = −∇L(θ)`` from ``α = β = γ = 0`` (App. B.5) with
    ``scipy.integrate.solve_ivp`` (DOP853, tolerances ``rtol`` / ``atol``).

    The path is read on a grid of step ``dt`` (default ``N / 50``: 50 points per plateau time scale N of γ;
    the α/β phase evolves on the slower scale N²), the resolution at which :func:`~.metrics.emergence_times`
    interpolates. The run ends at ``t_max`` (default ``8 N² + 10``) or, with ``stop_at``, 5 % of the time after
    α, β and γ are all ``>= stop_at`` (a terminal event of the integrator). ``frozen``: parameters held at 0
    (``"alpha3"``, ``"beta2"``, ``"gamma3"``; their derivative is set to 0), e.g. β₂ to remove the K-composition.
    """
    _check_n(n_pairs)
    t_max = float(t_max if t_max is not None else 8 * n_pairs**2 + 10)
    dt = float(dt if dt is not None else n_pairs / 50)
    if not dt > 0:
        raise ValueError(f"dt={dt!r}; expected > 0")

    unknown = sorted(set(frozen) - set(PARAMS))
    if unknown:
        raise ValueError(f"frozen={unknown}; expected some of {', '.join(PARAMS)}")
    moving = np.array([name not in frozen for name in PARAMS], dtype=float)

    def flow(_t: float, th: np.ndarray) -> np.ndarray:
        return -np.asarray(closed_form_grad(th[0], th[1], th[2], n_pairs)) * moving

    def all_past(_t: float, th: np.ndarray) -> float:
        return float(th.min() - (stop_at if stop_at is not None else np.inf))

    all_past.direction = 1  # type: ignore[attr-defined]
    all_past.terminal = True  # type: ignore[attr-defined]
    options = dict(method="DOP853", dense_output=True, rtol=rtol, atol=atol)
    sol = solve_ivp(flow, (0.0, t_max), np.zeros(3), events=all_past if stop_at is not None else None, **options)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed for N={n_pairs}: {sol.message}")
    t_end, dense = t_max, sol.sol
    if stop_at is not None and sol.t_events[0].size:  # go on for 5 % of the time after every parameter is past it
        t_stop = float(sol.t_events[0][0])
        t_end = min(t_max, 1.05 * t_stop)
        tail = solve_ivp(flow, (t_stop, t_end), sol.y_events[0][0], **options)
        dense = _joined(sol.sol, tail.sol, t_stop)
    t = dt * np.arange(math.floor(t_end / dt + 1e-9) + 1)
    th = dense(t)
    return Trajectory(n_pairs, t, th[0], th[1], th[2], closed_form_loss(th[0], th[1], th[2], n_pairs))


def _joined(
    first: Callable[[np.ndarray], np.ndarray], second: Callable[[np.ndarray], np.ndarray], at: float
) -> Callable[[np.ndarray], np.ndarray]:
    """One dense solution from two consecutive ones (``first`` up to ``at``, ``second`` after it)."""

    def dense(t: np.ndarray) -> np.ndarray:
        return np.where(t <= at, first(np.minimum(t, at)), second(np.maximum(t, at)))

    return dense


def asymptotic_emergence_times(n_pairs: int, thresholds: dict[str, float] | None = None) -> dict[str, float]:
    """Leading-order emergence times (derived from App. B.5's ODE, not stated in the paper).

    Plateau ``γ(t) = 1 − e^{−t/N}`` gives ``T_γ(θ) ≈ −N ln(1 − θ)``; with γ ≈ 1 and ``τ = t / 2N²``,
    ``dβ/dτ = e^α``, ``dα/dτ = β e^α`` give ``α = β²/2``, ``T_β(θ) ≈ √(2π) N² erf(θ/√2)``,
    ``T_α(θ) ≈ √(2π) N² erf(√θ)``.
    """
    th = {"alpha3": 0.5, "beta2": 0.5, "gamma3": 0.5, **(thresholds or {})}
    n = float(n_pairs)
    return {
        "gamma3": -n * math.log(1 - th["gamma3"]),
        "beta2": math.sqrt(2 * math.pi) * n * n * math.erf(th["beta2"] / math.sqrt(2)),
        "alpha3": math.sqrt(2 * math.pi) * n * n * math.erf(math.sqrt(th["alpha3"])),
    }
