"""The paper's figures (PNG through ``analyses.plotting.subplots``; each titled with the figure it reproduces).

The plotting functions draw one figure each; the ``*_figures`` functions at the end give a part's figures
(file name -> figure) from its results and trained weights (``runs.Trained``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analyses.papers.induction_heads.metrics import INDUCTION_PARAMS, PSEUDO_PARAMS, greek
from analyses.papers.induction_heads.presets import InductionPreset
from analyses.papers.induction_heads.runs import DisentangledRun, Trained
from analyses.plotting import subplots


def _grid(ax: Axes, sizes: Sequence[int], axis: str) -> None:
    at = 0
    for size in sizes[:-1]:
        at += size
        (ax.axhline if axis == "y" else ax.axvline)(at - 0.5, color="k", lw=0.5)


def interpretable_qk_figure(
    mats: Mapping[str, dict], title: str = "Fig 2: the trained §2 transformer", center_rows: bool = True
) -> Figure:
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


def weight_heatmaps(weights: tuple[torch.Tensor, torch.Tensor, torch.Tensor], dim: int, title: str) -> Figure:
    """Figs 3, 6–14: heatmaps of W1 (2D x 2D), W2 (4D x 4D) and W3ᵀ (D x 8D), D x D block grid."""
    W1, W2, W3 = weights
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


def _trajectory_panels(ax_pp: Axes, ax_loss: Axes, history: Sequence[Mapping[str, Any]], label: str) -> None:
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


def trajectories_figure(full: Sequence[Mapping[str, Any]], three: Sequence[Mapping[str, Any]], title: str) -> Figure:
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
) -> Figure:
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


def loss_figure(history: Mapping[str, Any], title: str = "Fig 17: training loss of the §2 transformer") -> Figure:
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
    steps: Sequence[int], series: Mapping[str, Sequence[float]], emergence: Mapping[str, Any], title: str
) -> Figure:
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


def n_ticks(ax: Axes, ns: Sequence[int]) -> None:
    """Label a log x axis with the N values themselves (no minor labels)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(list(ns), [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(NullFormatter())


# ------------------------------------------------------------------------------------------- a part's figures


def demo_training_figure(history: Mapping[str, Any]) -> Figure:
    """The demo: training loss, and induction accuracy with the two halves of the circuit's attention."""
    fig, (ax_loss, ax_eval) = subplots(1, 2, figsize=(9, 3.2))
    ax_loss.plot([r["step"] for r in history["train"]], [r["loss"] for r in history["train"]], lw=0.8)
    ax_loss.set(xlabel="step", ylabel="train loss (predictable positions)", yscale="log", title="loss")
    steps = [r["step"] for r in history["eval"]]
    ax_eval.plot(steps, [r["accuracy"] for r in history["eval"]], label="induction accuracy")
    ax_eval.plot(steps, [r["attention.L0_previous_token"] for r in history["eval"]], label="L0 attn on previous token")
    ax_eval.plot(
        steps, [r["attention.L1_induction"] for r in history["eval"]], label="L1 attn after earlier occurrences"
    )
    ax_eval.set(xlabel="step", ylim=(0, 1.02), title="emergence of the induction circuit")
    ax_eval.legend(fontsize=7)
    fig.tight_layout()
    return fig


def demo_figures(trained: Trained) -> dict[str, Any]:
    """Part demo: training curves, head roles, layer 1's attention pattern (HTML)."""
    from analyses.attention_html import attention_pattern_html
    from analyses.heads import head_roles_figure

    model, test = trained.artefacts["model"], trained.artefacts["test"]
    return {
        "demo_training.png": demo_training_figure(trained.results["history"]),
        "demo_head_roles.png": head_roles_figure(trained.artefacts["roles"], title="head roles after training"),
        "demo_attention_L1.html": attention_pattern_html(model, test.tokens[:1].cpu(), layer=1),
    }


def _scaling_fig(rows: Sequence[Mapping[str, Any]], asymptote: float | None, title: str) -> Figure:
    ns = [r["N"] for r in rows]
    times = {k: [r[f"T_{k}"] for r in rows] for k in INDUCTION_PARAMS}
    return scaling_figure(ns, times, [r["t_icl"] for r in rows], asymptote, title)


def ode_figures(results: Mapping[str, Any]) -> dict[str, Figure]:
    """Part ode: Fig 5 at the run's thresholds (with the quadratic asymptote) and at App. F's."""
    th, rows = results["thresholds"], results["rows"]
    title = (
        "Fig 5: emergence time vs N (gradient-flow ODE, "
        f"thresholds α₃ {th['alpha3']}, β₂ {th['beta2']}, γ₃ {th['gamma3']})"
    )
    keys = ("T_gamma3", "T_beta2", "T_alpha3")
    rows_f = [{"N": r["N"], **{k: r[f"{k}_appF"] for k in keys}, "t_icl": r["T_alpha3_appF"]} for r in rows]
    return {
        "fig5_emergence_scaling.png": _scaling_fig(rows, results["asymptote_over_N2"], title),
        "fig5_appendixF_thresholds.png": _scaling_fig(
            rows_f, None, "Fig 5 with App. F thresholds (α₃, β₂: 0.1; γ₃: 0.5)"
        ),
    }


def disentangled_figures(runs: Mapping[str, DisentangledRun], trained: Trained) -> dict[str, Figure]:
    """Part disentangled: Figs 4 (15, 16) per run; Fig 3 and the main run's weight snapshots."""
    figures: dict[str, Figure] = {}
    for key, run in runs.items():
        full, three = trained.artefacts["trained"][key]
        fig_no = {"main": "4", "fig15": "15", "fig16": "16"}[key]
        figures[f"fig{fig_no}_pseudo_parameters.png"] = trajectories_figure(
            full.history,
            three.history,
            f"Fig {fig_no}: pseudo-parameters and loss (D={run.dim}, N={run.n_pairs}, lr {run.lr}, B={run.batch_size})",
        )
        if key != "main":
            continue
        figures["fig3_weights.png"] = weight_heatmaps(
            full.model.weights(), run.dim, f"Fig 3: weights after {run.steps} SGD steps (D={run.dim}, N={run.n_pairs})"
        )
        for step in sorted(full.snapshots):  # the emergence step by step (Figs 6–14 style), same run
            figures[f"weights_N{run.n_pairs}_step{step:04d}.png"] = weight_heatmaps(
                full.snapshots[step],
                run.dim,
                f"Figs 6–14 style: weights after {step} SGD steps "
                f"(D={run.dim}, N={run.n_pairs}, lr {run.lr}, B={run.batch_size})",
            )
    return figures


def weights_figures(p: InductionPreset, trained: Trained) -> dict[str, Figure]:
    """Part weights: Figs 6-14, the weights of each N's run at the figures' steps."""
    figures = {}
    for fig in p.weight_figures:
        snapshots = trained.artefacts["snapshots"][fig.n_pairs]
        for step, fig_no in zip(fig.steps, fig.fig_nos):
            if step in snapshots:
                figures[f"fig{fig_no}_weights_N{fig.n_pairs}_step{step}.png"] = weight_heatmaps(
                    snapshots[step],
                    p.weights_dim,
                    f"Fig {fig_no}: weights after {step} SGD steps (D={p.weights_dim}, N={fig.n_pairs})",
                )
    return figures


def standard_figures(trained: Trained) -> dict[str, Figure]:
    """Part standard: Fig 2 (the interpretable matrices) and Fig 17 (the loss)."""
    return {
        "fig2_interpretable_matrices.png": interpretable_qk_figure(trained.artefacts["matrices"]),
        "fig17_loss.png": loss_figure(trained.results["history"]),
    }


def sgd_scaling_figure(results: Mapping[str, Any]) -> Figure:
    """Fig 5 (right) from SGD: t_ICL vs N per run, and the ODE's."""
    rows, ns = results["rows"], results["ns"]
    fig, ax = subplots(1, 1, figsize=(6, 4))
    for variant, seed in sorted({(r["variant"], r["seed"]) for r in rows}):
        mine = [r for r in rows if r["seed"] == seed and r["variant"] == variant and r["t_icl"] is not None]
        label = f"full training, seed {seed}" if variant == "full" else "App. F: span of α₃, β₂, γ₃"
        ax.plot([r["N"] for r in mine], [r["t_icl"] for r in mine], marker="o", lw=0.8, alpha=0.7, label=label)
    ax.plot(list(ns), [results["ode_t_icl"][str(n)] for n in ns], "k--", marker="s", label="3-parameter ODE")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="N",
        ylabel="t_ICL (steps × η_eff)",
        title="Fig 5 (right) from SGD on the matrix model vs the ODE",
    )
    n_ticks(ax, ns)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def pythia_figure(results: Mapping[str, Any]) -> Figure:
    """Part pythia: the top heads' scores across the checkpoints."""
    return checkpoint_scores_figure(
        results["checkpoints"],
        results["series"],
        results["emergence_step"],
        f"head-role scores of the top heads across training ({Path(results['model']).name})",
    )
