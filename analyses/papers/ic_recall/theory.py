"""Exact quantities of the theory of Huang, Nichani, Lee & Ge (§4.1, App. B) used as checks.

* :func:`n3_pairwise_optimum`: for n = 3 with all six bijections (§4.1, Table 1), the minimiser a*(T) of the
  first-step loss L1 on the line v = (x, x, ½−x, ½−x, 0, 0) (Theorem 4.2's optimum has this form). Computed
  from the closed-form logits (Table 2) on the whole population (``scipy.optimize.minimize_scalar``); a*(0.05) ≈
  0.133, → 1/6 as T → 0.
  (App. B's d_j polynomials and its root (4−√6)/10 disagree with its own Table 2; the root from Table 2 is 1/6.)
* :func:`saddle_distance`: ‖v − (1/(2k), …, 1/(2k), 0, 0)‖∞, the Stage-1 saddle of Theorem 4.2.
* :func:`polylog_fit`: how the number of samples needed, N*, grows with n.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Float

from analyses.papers.ic_recall.data import ICRecallSpec, ICRecallTask
from analyses.papers.ic_recall.models import closed_form_relation_logits


def n3_first_step_loss(x: Float[torch.Tensor, "*shape"], T: float) -> Float[torch.Tensor, "*shape"]:
    """L1 at v = (x, x, ½−x, ½−x, 0, 0) on the whole n = 3 population, for a vector of ``x``."""
    task = ICRecallTask(ICRecallSpec(3, 6, 2, "all_bijections"))
    data = task.population()
    out = []
    for xi in x.double().flatten():
        v = torch.stack([xi, xi, 0.5 - xi, 0.5 - xi, xi * 0, xi * 0])
        logits = closed_form_relation_logits(v, task, data)
        out.append(F.cross_entropy(logits / T, data.relation))
    return torch.stack(out).reshape(x.shape)


def n3_pairwise_optimum(T: float, tol: float = 1e-9) -> float:
    """a*(T) = argmin_{x ∈ (0, ¼]} L1(x): a grid brackets the minimum, ``scipy.optimize.minimize_scalar``
    (bounded) refines it to ``tol``; the mirror image is ½ − a*."""
    from scipy.optimize import minimize_scalar

    if not T > 0:
        raise ValueError(f"temperature T={T!r}; expected > 0")
    grid = torch.linspace(1e-4, 0.25, 251, dtype=torch.float64)
    i = int(n3_first_step_loss(grid, T).argmin())
    bounds = (float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)]))
    loss = lambda x: float(n3_first_step_loss(torch.tensor([x], dtype=torch.float64), T))  # noqa: E731
    return float(minimize_scalar(loss, bounds=bounds, method="bounded", options={"xatol": tol}).x)


def saddle_distance(v: Float[torch.Tensor, " pos"], k: int = 2) -> float:
    """‖v − (1/(2k), …, 1/(2k), 0, 0)‖∞ (Theorem 4.2's Stage-1 saddle for k = 2: (¼, ¼, ¼, ¼, 0, 0))."""
    target = torch.cat([torch.full((2 * k,), 1 / (2 * k), dtype=torch.float64), torch.zeros(2, dtype=torch.float64)])
    return float((v.double() - target).abs().max())


def min_samples(curve: Mapping[int, Mapping[int, float]], thresholds: Mapping[int, float]) -> dict[int, int | None]:
    """N*(n): the smallest N whose mean accuracy reaches ``thresholds[n]`` (and stays there for larger N)."""
    out: dict[int, int | None] = {}
    for n, by_N in curve.items():
        Ns = sorted(by_N)
        ok = [by_N[N] >= thresholds[n] for N in Ns]
        out[n] = next((N for j, N in enumerate(Ns) if all(ok[j:])), None)
    return out


def polylog_fit(n_values: Sequence[int], N_star: Sequence[float]) -> dict[str, float]:
    """Least-squares fits of N* against log n: ``slope_log_n`` (N* ≈ a + b·log n), ``slope_loglog`` (log N*
    vs log log n: the polylog degree) and ``slope_loglog_n`` (log N* vs log n: a power law's exponent)."""
    n = np.asarray(n_values, dtype=float)
    N = np.asarray(N_star, dtype=float)
    if len(n) < 2 or np.any(N <= 0):
        raise ValueError(f"polylog_fit needs >= 2 points with N* > 0; got n={list(n_values)}, N*={list(N_star)}")
    slope = lambda x, y: float(np.polyfit(x, y, 1)[0])  # noqa: E731
    return {
        "slope_log_n": slope(np.log(n), N),
        "slope_loglog": slope(np.log(np.log(n)), np.log(N)),
        "slope_loglog_n": slope(np.log(n), np.log(N)),
    }
