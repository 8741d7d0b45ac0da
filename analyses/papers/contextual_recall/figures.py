"""Figures of the contextual-recall paper (each titled with the figure it reproduces), via ``analyses.plotting``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analyses.plotting import subplots

from .metrics import METRICS

STYLE = {"exact": "C0", "attr_type": "C1", "subject": "C2", "attribute": "C3"}


def metric_curves(history: dict, panels: Sequence[tuple[str, str]], title: str, xlabel: str):
    """One panel per ``(eval set, panel title)``: the four metrics of Fig. 1 vs step."""
    fig, axes = subplots(1, len(panels), figsize=(4.2 * len(panels), 3.3), squeeze=False)
    rows = history["eval"]
    steps = [r["step"] for r in rows]
    for ax, (name, sub) in zip(axes[0], panels):
        for m in METRICS:
            ax.plot(steps, [r[f"{name}.{m}"] for r in rows], color=STYLE[m], label=m, marker="o", ms=2)
        ax.set(xlabel=xlabel, ylabel="accuracy", ylim=(-0.02, 1.02), title=sub)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def clustering_figure(clu: dict, title: str):
    """Fig. 8 left + Fig. 16: accuracy and silhouette vs t; and C̄^t insets at three t (Fig. 17)."""
    ts = clu["t"]
    shown = [t for t in (0, 2, 10) if t in clu["similarity"]] or list(clu["similarity"])[:3]
    if len(shown) < 3:
        shown = [ts[0], ts[len(ts) // 2], ts[-1]]
    fig, axes = subplots(1, 2 + len(shown), figsize=(4 * (2 + len(shown)), 3.3), squeeze=False)
    ax = axes[0][0]
    ax.plot(ts, clu["accuracy"], marker="o", label="ICL held-out exact")
    ax.plot(ts, clu["silhouette"]["L2_attn_out"], marker="s", label="silhouette (layer-2 attn)")
    ax.set(xlabel="number of demonstrations t", ylabel="value", title="Fig. 8 (left): accuracy and S̄^t")
    ax.legend(fontsize=7)
    ax = axes[0][1]
    for name, ys in clu["silhouette"].items():
        ax.plot(ts, ys, marker="o", ms=2, label=name)
    ax.set(xlabel="number of demonstrations t", ylabel="cosine silhouette", title="Fig. 16: silhouette by layer")
    ax.legend(fontsize=6)
    for ax, t in zip(axes[0][2:], shown):
        im = ax.imshow(np.array(clu["similarity"][t]), vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set(title=f"Fig. 17: C̄^t at t={t}", xlabel="attribute type ℓ'", ylabel="attribute type ℓ")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def steering_figure(steer: dict, title: str):
    """Fig. 8 right (mean ranks vs β) and Fig. 18 (target rank per target type)."""
    fig, (a, b) = subplots(1, 2, figsize=(9, 3.3))
    a.plot(steer["beta"], steer["rank_orig"], marker="o", label="original attribute")
    a.plot(steer["beta"], steer["rank_target"], marker="s", label="target attribute")
    a.set(xlabel="β", ylabel="mean rank", yscale="log", title="Fig. 8 (right): steering")
    a.legend(fontsize=7)
    for e, ys in steer["rank_target_by_type"].items():
        b.plot(steer["beta"], ys, marker="o", ms=2, label=f"target type {e}")
    b.set(xlabel="β", ylabel="mean rank of target", yscale="log", title="Fig. 18: per target type")
    b.legend(fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def attention_figure(pattern, tokens_labels: Sequence[str], title: str):
    """Figs. 9/11/22/25: one attention heatmap (query x key) per head."""
    H = pattern.shape[0]
    fig, axes = subplots(1, H, figsize=(4 * H, 3.8), squeeze=False)
    for h, ax in enumerate(axes[0]):
        ax.imshow(pattern[h].numpy(), cmap="viridis", vmin=0, vmax=1)
        n = len(tokens_labels)
        ax.set_xticks(range(n), tokens_labels, rotation=90, fontsize=5)
        ax.set_yticks(range(n), tokens_labels, fontsize=5)
        ax.set(title=f"head {h}", xlabel="key", ylabel="query")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def cosine_figure(cos: dict, title: str):
    """Figs. 10/12/23/26: per head cos(f_h, f_subj) and cos(f_h, f_rel), full space and with U_all projected out."""
    fig, axes = subplots(1, 2, figsize=(9, 3.2))
    for ax, tag in zip(axes, ("full", "minus_U_all")):
        c = cos[tag]
        H = len(c["subject"])
        x = np.arange(H)
        ax.bar(x - 0.2, c["subject"], 0.4, label="cos(f_h, f_subj)")
        ax.bar(x + 0.2, c["relation"], 0.4, label="cos(f_h, f_rel)")
        ax.set(
            xticks=x,
            xlabel="head",
            ylabel="mean cosine",
            ylim=(-1, 1),
            title="full space" if tag == "full" else "U_all projected out",
        )
        ax.axhline(0, color="k", lw=0.5)
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def ov_figure(slices, heads: dict[str, int], names: Sequence[str], bounds: Sequence[int], title: str):
    """Figs. 20-21: sliced OV matrices of the subject and relation heads."""
    fig, axes = subplots(1, len(heads), figsize=(4.6 * len(heads), 4.2), squeeze=False)
    for ax, (role, h) in zip(axes[0], heads.items()):
        m = slices[h].numpy()
        lim = max(abs(m).max(), 1e-9)
        im = ax.imshow(m, cmap="RdBu_r", vmin=-lim, vmax=lim)
        for b in bounds[:-1]:
            ax.axhline(b - 0.5, color="k", lw=0.5)
            ax.axvline(b - 0.5, color="k", lw=0.5)
        centers = [(a + b) / 2 - 0.5 for a, b in zip([0, *list(bounds[:-1])], bounds)]
        ax.set_xticks(centers, names, rotation=45, fontsize=6)
        ax.set_yticks(centers, names, fontsize=6)
        ax.set(title=f"{role} head (head {h})", xlabel="input token", ylabel="output token")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def cascade_figure(results: dict, title: str):
    """Theorem 2: ICL accuracy after steps 0 / 1 / 2 in the two worlds (seen, held-out query, all held out)."""
    worlds = list(results)
    fig, axes = subplots(1, len(worlds), figsize=(5 * len(worlds), 3.3), squeeze=False)
    for ax, w in zip(axes[0], worlds):
        r = results[w]
        beta = r["beta_report"]
        for i, split in enumerate(("seen", "heldout_query", "all_heldout")):
            ys = [r[f"acc_step{s}"][f"{split}@beta={beta:g}"] for s in (0, 1, 2)]
            ax.bar(np.arange(3) + 0.27 * (i - 1), ys, 0.27, label=split)
        ax.set(
            xticks=range(3),
            xticklabels=["Prop. 1 init", "after step 1", "after step 2"],
            ylim=(0, 1.05),
            ylabel=f"ICL_rel accuracy (β={beta:g})",
            title=f"{w}\nU_L(U_L+N_ft)/M_ft = {r['condition_lhs']:.2f} vs N_ft = {r['condition_rhs']}",
        )
        ax.title.set_fontsize(8)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
