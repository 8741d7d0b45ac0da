"""Emergence times from *any* series of measurements over training, and the power-law fit of Fig. 5.

One estimator serves every source: an ODE trajectory, a toy run's ``history["eval"]`` rows, or the
head-role scores of a list of pretrained checkpoints. A quantity has *emerged* at the first time it
reaches its threshold (Definition 1, ``T = inf{t : x(t) ≥ θ}``); a set of quantities has emerged when all
of them are past their thresholds at once (Definitions 2–3, ``t_ICL``). Between two measurements the
crossing time is linearly interpolated (``interpolate=False``: the first measured time at or past it).

Thresholds must lie in (0, 1): the paper uses ½ (Definition 1) and 0.1 for α₃ and β₂ (App. F).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

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


def _arrays(times: Sequence[float], values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
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


def crossing_time(
    times: Sequence[float], values: Sequence[float], threshold: float, *, interpolate: bool = True
) -> float | None:
    """First time the series reaches ``threshold`` (``None`` if it never does)."""
    t, x = _arrays(times, values)
    hit = np.flatnonzero(x >= threshold)
    if hit.size == 0:
        return None
    return _interp(t, x, int(hit[0]), threshold, interpolate)


def emergence_times(
    times: Sequence[float],
    series: Mapping[str, Sequence[float]],
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
    times: Sequence[float],
    series: Mapping[str, Sequence[float]],
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
