"""A circuit view of any ``HookedTransformer``: heads as nodes labelled with their roles, edges between heads of
successive layers weighted by Q-, K- and V-composition scores (Elhage et al., "A Mathematical Framework for
Transformer Circuits"; TransformerLens' ``model.all_composition_scores``).

    table = composition_table(model)                 # tidy: mode, src_layer, src_head, dst_layer, dst_head, score
    fig = circuit_figure(model)                      # matplotlib Figure (no pyplot)
    strongest_edges(table, k=1)                      # e.g. [("K", (0, 0), (1, 1), 0.18)]: prev-token → induction

A composition score is ``|W_A W_B|_F / (|W_A|_F |W_B|_F)`` of the earlier head's OV circuit and the later head's
QK (Q, K) or OV (V) circuit; a head with an all-zero circuit scores 0 (TransformerLens gives NaN there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from mechrecall._tl import HookedTransformer

MODES = ("Q", "K", "V")
MODE_COLOURS = {"Q": "tab:blue", "K": "tab:red", "V": "tab:green"}
ROLE_THRESHOLDS = {"previous_token": 0.4, "duplicate_token": 0.4, "induction": 0.4, "copying": 0.5}
ROLE_LABELS = {"previous_token": "prev", "duplicate_token": "dup", "induction": "ind", "copying": "copy"}


@torch.no_grad()
def composition_table(
    model: HookedTransformer, modes: tuple[str, ...] = MODES, successive: bool = True
) -> pd.DataFrame:
    """Composition scores as tidy rows ``(mode, src_layer, src_head, dst_layer, dst_head, score)``.

    ``successive``: only edges from layer ``l`` to layer ``l + 1`` (else every earlier → later pair)."""
    rows = []
    for mode in modes:
        scores = torch.nan_to_num(model.all_composition_scores(mode).detach().float().cpu(), nan=0.0)
        n_layers, n_heads = scores.shape[:2]
        for l1 in range(n_layers):
            for l2 in range(l1 + 1, n_layers):
                if successive and l2 != l1 + 1:
                    continue
                for h1 in range(n_heads):
                    for h2 in range(n_heads):
                        rows.append((mode, l1, h1, l2, h2, float(scores[l1, h1, l2, h2])))
    return pd.DataFrame(rows, columns=["mode", "src_layer", "src_head", "dst_layer", "dst_head", "score"])


def strongest_edges(table: pd.DataFrame, k: int = 5) -> list[tuple[str, tuple[int, int], tuple[int, int], float]]:
    """The ``k`` strongest edges: ``(mode, (src_layer, src_head), (dst_layer, dst_head), score)``."""
    top = table.sort_values("score", ascending=False).head(k)
    return [
        (str(r.mode), (int(r.src_layer), int(r.src_head)), (int(r.dst_layer), int(r.dst_head)), float(r.score))
        for r in top.itertuples()
    ]


def role_labels(roles: pd.DataFrame, thresholds: dict[str, float] | None = None) -> dict[tuple[int, int], str]:
    """``{(layer, head): "prev", "ind+copy", ...}`` from an ``analyses.head_roles`` table (scores over threshold)."""
    thresholds = thresholds or ROLE_THRESHOLDS
    labels: dict[tuple[int, int], list[str]] = {}
    for r in roles.itertuples():
        key = (int(r.layer), int(r.head))
        labels.setdefault(key, [])
        if r.score in thresholds and r.value >= thresholds[r.score]:
            labels[key].append(ROLE_LABELS.get(str(r.score), str(r.score)))
    return {k: "+".join(v) for k, v in labels.items()}


def circuit_figure(
    model: HookedTransformer,
    *,
    roles: pd.DataFrame | None = None,
    table: pd.DataFrame | None = None,
    min_score: float | None = None,
    top_k: int = 12,
    title: str | None = None,
    seed: int = 0,
) -> Figure:
    """Heads as nodes (layer = row, head = column) labelled ``L{l}H{h}`` and their roles; the ``top_k`` strongest
    edges between successive layers (at least ``min_score``), coloured by mode, width by score."""
    from matplotlib.lines import Line2D

    from analyses.plotting import subplots

    if roles is None:
        from analyses.heads import head_roles

        roles = head_roles(model, seed=seed)
    if table is None:
        table = composition_table(model)
    labels = role_labels(roles)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    fig, ax = subplots(figsize=(max(4.0, 1.3 * n_heads + 1.5), max(3.0, 1.4 * n_layers + 1.0)))
    edges = table[table["score"] >= (min_score or 0.0)].sort_values("score", ascending=False).head(top_k)
    top = float(edges["score"].max()) if len(edges) else 1.0
    offsets = {"Q": -0.12, "K": 0.0, "V": 0.12}
    for r in edges.itertuples():
        if r.score <= 0.05 * top:  # a hair-thin edge says nothing
            continue
        dx = offsets.get(str(r.mode), 0.0)
        ax.annotate(
            "",
            xy=(r.dst_head + dx, r.dst_layer - 0.17),
            xytext=(r.src_head + dx, r.src_layer + 0.17),
            arrowprops=dict(
                arrowstyle="-|>",
                color=MODE_COLOURS.get(str(r.mode), "k"),
                lw=0.5 + 4.5 * r.score / top,
                alpha=0.35 + 0.65 * r.score / top,
                shrinkA=0,
                shrinkB=0,
            ),
        )
        f = {"Q": 0.4, "K": 0.55, "V": 0.7}.get(str(r.mode), 0.5)  # staggered: parallel edges keep their labels apart
        ax.text(
            (1 - f) * r.src_head + f * r.dst_head + dx + 0.04,
            (1 - f) * r.src_layer + f * r.dst_layer,
            f"{r.mode} {r.score:.2f}",
            fontsize=7,
            color=MODE_COLOURS.get(str(r.mode), "k"),
        )
    for layer in range(n_layers):
        for head in range(n_heads):
            role = labels.get((layer, head), "")
            ax.scatter([head], [layer], s=900, color="#fde3a7" if role else "#eeeeee", edgecolor="0.3", zorder=3)
            ax.text(head, layer, f"L{layer}H{head}\n{role}", ha="center", va="center", fontsize=7, zorder=4)
    ax.set_xlim(-0.7, n_heads - 0.3)
    ax.set_ylim(-0.7, n_layers - 0.3)
    ax.set_xticks(range(n_heads))
    ax.set_yticks(range(n_layers))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    handles = [Line2D([], [], color=c, lw=2, label=f"{m}-composition") for m, c in MODE_COLOURS.items()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    ax.set_title(title or "Head circuit: roles and composition between successive layers", fontsize=9)
    return fig


def circuit(model: HookedTransformer, **kwargs: Any) -> tuple[pd.DataFrame, Figure]:
    """``(composition_table(model), circuit_figure(model, ...))``."""
    table = composition_table(model)
    return table, circuit_figure(model, table=table, **kwargs)
