"""The paper's figures (PNG through ``analyses.plotting.subplots``; each titled with the figure it reproduces)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from analyses.papers.induction_heads.subspace import INDUCTION_PARAMS, PSEUDO_PARAMS, greek
from analyses.plotting import subplots


def _grid(ax, sizes: Sequence[int], axis: str) -> None:
    at = 0
    for size in sizes[:-1]:
        at += size
        (ax.axhline if axis == "y" else ax.axvline)(at - 0.5, color="k", lw=0.5)


def interpretable_qk_figure(
    mats: Mapping[str, dict], title: str = "Fig 2: the trained §2 transformer", center_rows: bool = True
):
    """Fig 2: layer-0 and layer-1 QK matrices and the output matrix in the [E, P, OV·E, OV·P, ...] basis.

    ``center_rows``: QK panels show each row minus its mean within each key block (softmax-invariant per block).
    """
    names = [k for k in mats if k.startswith("L")] + ["OUT"]
    fig, axes = subplots(1, len(names), figsize=(4.2 * len(names), 4.4))
    for ax, name in zip(np.atleast_1d(axes), names):
        entry = mats[name]
        m = entry["matrix"].detach().cpu().float().numpy()
        sizes = [s for _, s in entry["blocks"]]
        if name != "OUT" and center_rows:  # a per-query constant does not change the softmax: remove it per block
            cuts = np.cumsum([0, *sizes])
            m = np.concatenate([m[:, a:b] - m[:, a:b].mean(1, keepdims=True) for a, b in itertools.pairwise(cuts)], 1)
        lim = float(np.abs(m).max()) or 1.0
        ax.imshow(m, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
        _grid(ax, sizes, "y")
        centers = np.cumsum([0, *sizes[:-1]]) + np.array(sizes) / 2 - 0.5
        ax.set_yticks(centers, [n for n, _ in entry["blocks"]], fontsize=7)
        if name != "OUT":
            _grid(ax, sizes, "x")
            ax.set_xticks(centers, [n for n, _ in entry["blocks"]], fontsize=7, rotation=90)
            ax.set(title=f"{name} QK (rows: query, cols: key)" + (", row-centred" if center_rows else ""))
        else:
            ax.set(title="output W_U (cols: vocabulary)", xlabel="output token")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def weight_heatmaps(W1: torch.Tensor, W2: torch.Tensor, W3: torch.Tensor, dim: int, title: str):
    """Figs 3, 6–14: heatmaps of W1 (2D x 2D), W2 (4D x 4D) and W3ᵀ (D x 8D), D x D block grid."""
    fig, axes = subplots(1, 3, figsize=(13, 4.2), gridspec_kw={"width_ratios": [2, 4, 8]})
    for ax, W, name in zip(axes, (W1, W2, W3.T), ("W1", "W2", "W3ᵀ")):
        m = W.detach().cpu().float().numpy()
        lim = float(np.abs(m).max()) or 1.0
        ax.imshow(m, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        _grid(ax, [dim] * (m.shape[0] // dim), "y")
        _grid(ax, [dim] * (m.shape[1] // dim), "x")
        ax.set(title=f"{name} {tuple(m.shape)}", xticks=[], yticks=[])
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _trajectory_panels(ax_pp, ax_loss, history: Sequence[Mapping], label: str) -> None:
    steps = [r["step"] for r in history]
    for name in PSEUDO_PARAMS:
        bold = name in INDUCTION_PARAMS
        ax_pp.plot(
            steps,
            [r[name] for r in history],
            lw=2.0 if bold else 0.7,
            alpha=1.0 if bold else 0.6,
            label=greek(name) if bold else None,
        )
    ax_pp.set(xlabel="SGD step", ylabel="pseudo-parameter c_k", title=f"{label}: 19 pseudo-parameters")
    ax_pp.legend(fontsize=7)
    rows = [r for r in history if r.get("loss") is not None]
    ax_loss.plot([r["step"] for r in rows], [r["loss"] for r in rows])
    ax_loss.set(xlabel="SGD step", ylabel="training MSE", yscale="log", title=f"{label}: loss")


def trajectories_figure(full: Sequence[Mapping], three: Sequence[Mapping], title: str):
    """Figs 4, 15, 16: top, training every weight; bottom, only α₃, β₂, γ₃ (gradients projected)."""
    fig, axes = subplots(2, 2, figsize=(10, 7))
    _trajectory_panels(axes[0, 0], axes[0, 1], full, "all weights")
    _trajectory_panels(axes[1, 0], axes[1, 1], three, "only α₃, β₂, γ₃")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def scaling_figure(
    ns: Sequence[int],
    times: Mapping[str, Sequence[float]],
    t_icl: Sequence[float],
    asymptote: float | None,
    title: str = "Fig 5: emergence time vs N",
):
    """Fig 5. Left: T_α₃, T_β₂, T_γ₃ vs N (log-log). Right: t_ICL vs N and ``c N²``."""
    fig, (ax_l, ax_r) = subplots(1, 2, figsize=(10, 4))
    for name in ("gamma3", "beta2", "alpha3"):
        ax_l.plot(ns, times[name], marker="o", label=f"T_{greek(name)}")
    ax_l.set(
        xscale="log",
        yscale="log",
        xlabel="N (pairs in context)",
        ylabel="emergence time (gradient-flow t)",
        title="per parameter",
    )
    ax_l.legend()
    ax_r.plot(ns, t_icl, marker="o", label="t_ICL")
    if asymptote is not None:
        grid = np.geomspace(min(ns), max(ns), 50)
        ax_r.plot(grid, asymptote * grid**2, "--", label=f"{asymptote:.3g} N²")
    ax_r.set(xscale="log", yscale="log", xlabel="N", ylabel="t_ICL", title="time to in-context learning")
    ax_r.legend()
    for ax in (ax_l, ax_r):
        n_ticks(ax, ns)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def loss_figure(history: Mapping, title: str = "Fig 17: training loss of the §2 transformer"):
    """Fig 17: NLL at the query vs step, and the eval scores."""
    fig, (ax_l, ax_r) = subplots(1, 2, figsize=(10, 3.6))
    ax_l.plot([r["step"] for r in history["train"]], [r["loss"] for r in history["train"]], lw=0.8)
    ax_l.axhline(np.log(32), ls=":", c="gray", label="ln 32 (chance)")
    ax_l.axhline(np.log(8), ls="--", c="gray", label="ln 8 (one of the 8 labels)")
    ax_l.set(xlabel="step", ylabel="NLL of the query's label", title="training loss")
    ax_l.legend(fontsize=7)
    ev = history["eval"]
    for key in [k for k in (ev[0] if ev else {}) if k != "step"]:
        ax_r.plot([r["step"] for r in ev], [r[key] for r in ev], label=key)
    ax_r.set(xlabel="step", ylim=(-0.02, 1.02), title="held-out scores")
    ax_r.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def checkpoint_scores_figure(
    steps: Sequence[int], series: Mapping[str, Sequence[float]], emergence: Mapping, title: str
):
    """Extension: head-role scores of the top heads vs training step (log x; step 0 drawn at 0.5)."""
    fig, ax = subplots(1, 1, figsize=(7, 4))
    x = [max(s, 0.5) for s in steps]
    for name, values in series.items():
        ax.plot(x, values, marker="o", ms=3, label=name)
        t = emergence.get(name)
        if t is not None:
            ax.axvline(max(t, 0.5), ls=":", lw=0.8)
    ax.set(xscale="log", xlabel="training step (checkpoint)", ylabel="attention score", ylim=(-0.02, 1.02), title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def n_ticks(ax, ns: Sequence[int]) -> None:
    """Label a log x axis with the N values themselves (no minor labels)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(list(ns), [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(NullFormatter())
