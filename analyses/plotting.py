"""Tidy tables and matplotlib figures shared by every analysis.

Analyses return *tidy* ``pandas.DataFrame``s — one row per measurement, e.g. ``(layer, head, score,
value)`` — and these helpers turn them into heatmaps (one panel per score) or curves. Figures are
ordinary ``matplotlib.figure.Figure`` objects, made without pyplot (:func:`subplots`): no backend is
chosen and no pyplot state changes, so a notebook keeps its own; show one with ``display(fig)`` or save
it with ``fig.savefig``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch
from jaxtyping import Float

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def subplots(
    nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] | None = None, squeeze: bool = True, **kwargs: Any
) -> tuple[Figure, Any]:
    """``(Figure, axes)`` like ``pyplot.subplots``, on a bare ``matplotlib.figure.Figure`` (no pyplot state)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, squeeze=squeeze, **kwargs)


def layer_head_table(scores: dict[str, Float[torch.Tensor, "layer head"]]) -> pd.DataFrame:
    """``{score name: [n_layers, n_heads] tensor}`` → tidy rows ``(layer, head, score, value)``."""
    rows = []
    for name, grid in scores.items():
        grid = torch.as_tensor(grid).detach().cpu()
        if grid.ndim != 2:
            raise ValueError(f"score {name!r} has shape {tuple(grid.shape)}; expected [n_layers, n_heads]")
        for layer in range(grid.shape[0]):
            for head in range(grid.shape[1]):
                rows.append({"layer": layer, "head": head, "score": name, "value": float(grid[layer, head])})
    return pd.DataFrame(rows, columns=["layer", "head", "score", "value"])


def heatmap(
    table: pd.DataFrame,
    *,
    row: str = "layer",
    col: str = "head",
    value: str = "value",
    panel: str | None = "score",
    title: str | None = None,
    cmap: str = "viridis",
    annotate: bool | None = None,
    fmt: str = "{:.2f}",
    limits: tuple[float, float] | Mapping[Any, tuple[float, float]] | None = None,
) -> Figure:
    """One heatmap panel per distinct ``table[panel]`` value (or a single panel if ``panel`` is None).

    Rows/columns are the sorted distinct values of ``table[row]`` / ``table[col]``; cells are annotated
    with their value when the grid is small (``annotate=None``: at most 20 x 20 cells). ``limits``: the colour
    scale, one ``(vmin, vmax)`` shared by every panel or a panel name -> ``(vmin, vmax)`` mapping (panels not in
    it scale to their own data), so that scores on a common scale are compared by colour, not per panel.
    """
    for column in [row, col, value] + ([panel] if panel else []):
        if column not in table.columns:
            raise ValueError(f"column {column!r} not in the table; it has {list(table.columns)}")
    groups = list(table.groupby(panel, sort=False)) if panel else [(None, table)]
    fig, axes = subplots(1, len(groups), figsize=(3.6 * len(groups) + 0.6, 3.4), squeeze=False)
    for ax, (name, part) in zip(axes[0], groups):
        grid = part.pivot_table(index=row, columns=col, values=value, aggfunc="mean")
        lim = limits.get(name) if isinstance(limits, Mapping) else limits
        vmin, vmax = lim if lim is not None else (None, None)
        image = ax.imshow(grid.to_numpy(dtype=float), cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax)
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], rotation=90 if grid.shape[1] > 12 else 0)
        ax.set_yticks(range(grid.shape[0]), [str(r) for r in grid.index])
        ax.set(xlabel=col, ylabel=row, title=str(name) if name is not None else (title or ""))
        if annotate or (annotate is None and grid.size <= 400):
            for i in range(grid.shape[0]):
                for j in range(grid.shape[1]):
                    v = grid.iat[i, j]
                    if v == v:  # not NaN
                        shade = image.norm(v)
                        ax.text(
                            j, i, fmt.format(v), ha="center", va="center", fontsize=7, color="k" if shade > 0.6 else "w"
                        )
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if title and panel:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def curves(
    table: pd.DataFrame,
    *,
    x: str,
    y: str,
    hue: str | None = None,
    title: str | None = None,
    xscale: str = "linear",
    yscale: str = "linear",
    ylim: Sequence[float] | None = None,
) -> Figure:
    """Line plot of ``y`` against ``x``, one line per distinct ``table[hue]``."""
    for column in [x, y] + ([hue] if hue else []):
        if column not in table.columns:
            raise ValueError(f"column {column!r} not in the table; it has {list(table.columns)}")
    fig, ax = subplots(figsize=(5, 3.4))
    for name, part in table.groupby(hue, sort=False) if hue else [(None, table)]:
        part = part.sort_values(x)
        ax.plot(part[x], part[y], marker="o", ms=3, label=None if name is None else str(name))
    ax.set(xlabel=x, ylabel=y, xscale=xscale, yscale=yscale, title=title or "")
    if ylim is not None:
        ax.set_ylim(*ylim)
    if hue:
        ax.legend(fontsize=7, title=hue)
    fig.tight_layout()
    return fig
