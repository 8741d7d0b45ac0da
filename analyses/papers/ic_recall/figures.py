"""Figures of Huang, Nichani, Lee & Ge, rebuilt from our runs (PNG via ``analyses.plotting.subplots``).

* :func:`attention_heatmaps`: Fig 2 / Fig 4, attention from EoS (first decoding step) and from the decoded
  relation (second step), one column per setting.
* :func:`accuracy_vs_samples`: Fig 3, first-step test accuracy against the number of fine-tuning samples N
  (mean ± std over seeds), one curve per n, with each n's Bayes ceiling drawn dashed.
* :func:`head_scores_heatmap`: the extension, the pairwise score of every head of a real LM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from analyses.plotting import subplots


def position_labels(k: int, last: str = "r*") -> list[str]:
    labels = []
    for i in range(1, k + 1):
        labels += [f"s{i}", f"a{i}"]
    return [*labels, f"s{k + 1}", "EoS", last]


def attention_heatmaps(panels: Sequence[Mapping[str, Any]], title: str) -> Figure:
    """``panels``: dicts with ``label``, ``k``, ``v`` (``[2k+2]``, from EoS) and ``q`` (``[2k+3]``, from r*)."""
    fig, axes = subplots(2, len(panels), figsize=(3.6 * len(panels) + 0.6, 3.4), squeeze=False)
    for col, panel in enumerate(panels):
        k = panel["k"]
        labels = position_labels(k)
        for row, (key, name) in enumerate((("v", "from EoS (step 1)"), ("q", "from r* (step 2)"))):
            values = np.full((1, 2 * k + 3), np.nan)
            values[0, : len(panel[key])] = panel[key]
            ax = axes[row, col]
            ax.imshow(values, cmap="viridis", vmin=0, vmax=max(0.5, float(np.nanmax(values))), aspect="auto")
            for j, x in enumerate(values[0]):
                if not np.isnan(x):
                    ax.text(j, 0, f"{x:.2f}", ha="center", va="center", fontsize=7, color="w" if x < 0.3 else "k")
            ax.set_xticks(range(len(labels)), labels, fontsize=7)
            ax.set_yticks([0], [name], fontsize=7)
            if row == 0:
                ax.set_title(panel["label"], fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def accuracy_vs_samples(rows: Sequence[Mapping[str, Any]], title: str, metric: str = "acc_relation_exact") -> Figure:
    """``rows``: cell results (``n``, ``N``, ``metric``, ``bayes_ceiling_exact``); mean ± std over seeds."""
    fig, ax = subplots(figsize=(5.6, 3.6))
    for n in sorted({r["n"] for r in rows}):
        mine = [r for r in rows if r["n"] == n]
        Ns = sorted({r["N"] for r in mine})
        acc = [np.array([r[metric] for r in mine if r["N"] == N]) for N in Ns]
        line = ax.errorbar(
            Ns,
            [a.mean() for a in acc],
            yerr=[a.std() for a in acc],
            marker="o",
            ms=3,
            capsize=2,
            label=f"n = {n} (m = {mine[0]['m']})",
        )
        ceiling = float(np.mean([r["bayes_ceiling_exact"] for r in mine]))
        ax.axhline(ceiling, ls="--", lw=0.8, color=line[0].get_color())
    ax.set(xscale="log", xlabel="fine-tuning samples N", ylabel="first-step test accuracy", ylim=(0, 1.03), title=title)
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7, title="dashed: Bayes ceiling", title_fontsize=7)
    fig.tight_layout()
    return fig


def fig4_panel(settings: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """The Fig 4 heatmap panel of one pretrained-MLP run (mean attention over test prompts)."""
    k = settings.get("k", 2)
    return {
        "label": f"pretrained MLP, {k}-ICL, n={settings['n']}, m={settings['m']}, T={settings.get('T', 0.05):g}, "
        f"N={settings['N']}\n(seed {run['seed']}; mean over test prompts)",
        "k": k,
        "v": run["v_mean"],
        "q": run["q_mean"],
    }


def head_scores_heatmap(table: Sequence[Mapping[str, Any]], name: str) -> Figure:
    """Score, within, across and rest of every layer × head of ``name`` (the extension of Fig 2)."""
    import pandas as pd

    from analyses.plotting import heatmap

    long = pd.DataFrame(table).melt(
        id_vars=["layer", "head"],
        value_vars=["score", "within", "across", "rest"],
        var_name="metric",
        value_name="value",
    )
    return heatmap(long, panel="metric", title=f"pairwise attention score per head of {name} (extension of Fig 2)")
