"""The figures of both experiments (matplotlib through ``analyses.plotting.subplots``, HTML) from results,
histories and trained models. Nothing here trains or judges.

noisy_icl: Figs 3, 4, 7-13 (``fig_truncation``, ``fig_drops``, ``fig_attention``, ``fig_readouts``,
``fig_noise_fraction``, ``fig_matrix``), 18 (``fig18_lam``), 19-20 (``fig_ioi``). laser_pythia: Fig 5, Table 1,
Figs 14-17 (``laser_figures``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch
from jaxtyping import Float

from analyses.papers.distributional.data.prompts import GPT2_IOI_TOKENS, MADRID
from analyses.papers.distributional.metrics import ff_logits, ov_memory_matrix
from analyses.papers.distributional.pretrained import model_key, slug
from analyses.papers.distributional.runs import History, ioi_edit, series
from analyses.plotting import subplots
from mechrecall._tl import HookedTransformer, get_act_name
from mechrecall.batch import Batch

Figure = Any  # a matplotlib Figure (matplotlib is imported lazily by analyses.plotting)

# ----------------------------------------------------------------------------------- noisy_icl


def curve_label(key: str) -> str:
    """A curve's legend label: ``F2_rho0.2`` → ``F₂ at ρ = 0.2``; ``drop_F2`` → ``drop F₂ (ρ = 0)``;
    ``OV1_rho0.05`` → ``W¹_V W¹_O at ρ = 0.05``."""
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    if key == "full":
        return "full model (ρ = 1)"
    if key.startswith("drop_F"):
        return f"drop F{key[6:].translate(sub)} (ρ = 0)"
    name, _, rho = key.partition("_rho")
    name = "W¹_V W¹_O" if name == "OV1" else name.translate(sub)
    return f"{name} at ρ = {rho}"


def fig_truncation(history: History, which: str, title: str) -> Figure:
    """Fig 3 / Fig 13: p(ȳ), p(τ), clean loss for the full model and each truncation; FF margin."""
    names = {k.removeprefix("test.").rsplit(".", 1)[0] for k in history["eval"][-1] if k.endswith(".p_correct")}
    keys = sorted((n for n in names if n in ("full", "drop_F2") or n.startswith(f"{which}_")), key=_curve_order)
    panels = [("p_correct", "p(ȳ)"), ("p_noise", "p(τ)"), ("loss", "clean test loss")]
    margin = "test.ff_margin" in history["eval"][-1]
    fig, axes = subplots(1, len(panels) + margin, figsize=(4 * (len(panels) + margin), 3.2))
    for ax, (metric, label) in zip(axes, panels):
        for key in keys:
            steps, values = series(history, f"{key}.{metric}")
            ax.plot(steps, values, label=curve_label(key))
        ax.set(xlabel="step", ylabel=label, xscale="symlog", xlim=(0, None))
    axes[0].legend(fontsize=7)
    if margin:
        steps, values = series(history, "ff_margin")
        axes[-1].plot(steps, values, color="k", label="F₂ logit of τ minus the largest other")
        axes[-1].axhline(0, color="grey", lw=0.5, label="zero: no preference for τ")
        axes[-1].set(xlabel="step", ylabel="FF-2 noise margin", xscale="symlog", xlim=(0, None))
        axes[-1].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _curve_order(name: str) -> float:
    """Full model first, then truncations by decreasing ρ, then the dropped layer (ρ = 0)."""
    if name == "full":
        return -2.0
    if "_rho" in name:
        return -float(name.rsplit("_rho", 1)[1])
    return 0.0


def fig_drops(history: History, title: str) -> Figure:
    fig, axes = subplots(1, 3, figsize=(12, 3.2))
    for ax, metric in zip(axes, ("p_correct", "p_noise", "loss")):
        for key in ("full", "drop_F1", "drop_F2"):
            steps, values = series(history, f"{key}.{metric}")
            ax.plot(steps, values, label=curve_label(key))
        ax.set(
            xlabel="step",
            ylabel={"p_correct": "p(ȳ)", "p_noise": "p(τ)", "loss": "clean test loss"}[metric],
            xscale="symlog",
        )
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def fig_noise_fraction(history: History, title: str) -> Figure:
    steps, values = series(history, "noisy.p_noise")
    fig, ax = subplots(figsize=(5, 3.2))
    ax.plot(steps, values, label="p(τ)")
    ax.plot(steps, [1 - v for v in values], label="p(non-noise tokens)")
    ax.set(xlabel="step", ylabel="probability mass (α = 0.5 data)", xscale="symlog", ylim=(0, 1), title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@torch.no_grad()
def fig_attention(model: HookedTransformer, noisy: Batch, data: Any, figure_name: str) -> Figure:
    """Fig 4: layer-2 attention of the last trigger query of one noisy sequence over key positions."""
    index = int(torch.argmax((noisy.extras["trigger_successor"] & noisy.extras["noise"]).sum(-1)))
    tokens = noisy.tokens[index : index + 1]
    assert noisy.loss_mask is not None  # a noisy-ICL batch always has one
    query = int(noisy.loss_mask[index].nonzero().max())
    hook = get_act_name("pattern", model.cfg.n_layers - 1)
    _, cache = model.run_with_cache(tokens, names_filter=hook)
    pattern = cache[hook][0, 0, query, : query + 1].float().cpu()
    succ = noisy.extras["trigger_successor"][index, : query + 1].cpu()
    noise = noisy.extras["noise"][index, : query + 1].cpu()
    fig, ax = subplots(figsize=(8, 3))
    ax.bar(range(query + 1), pattern, color="lightgrey", width=1.0)
    positions = torch.arange(query + 1)
    ax.bar(positions[succ & ~noise], pattern[succ & ~noise], color="tab:green", width=1.0, label="[q, ȳ]")
    ax.bar(positions[succ & noise], pattern[succ & noise], color="tab:red", width=1.0, label="[q, τ]")
    # mark where each kind of key sits, whatever attention it got
    ax.scatter(
        positions[succ & ~noise], torch.full(((succ & ~noise).sum(),), -0.03), marker="^", color="tab:green", s=14
    )
    ax.scatter(positions[succ & noise], torch.full(((succ & noise).sum(),), -0.03), marker="x", color="tab:red", s=14)
    ax.set(
        xlabel="key position",
        ylabel="attention",
        title=f"{figure_name}: layer-2 attention of the trigger query at position {query}",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@torch.no_grad()
def fig_readouts(model: HookedTransformer, noisy: Batch, data: Any) -> Figure:
    """Fig 7: layer-1 attention (previous-token head), ⟨F₂(W_E(i)), W_U(j)⟩, ⟨W²_V W_E(i), W_U(j)⟩."""
    hook = get_act_name("pattern", 0)
    _, cache = model.run_with_cache(noisy.tokens[:1], names_filter=hook)
    n = min(40, noisy.tokens.shape[1])
    matrices = [
        (cache[hook][0, 0, :n, :n].float().cpu(), "layer-1 attention", "key", "query"),
        (ff_logits(model, 1).cpu(), "⟨F₂(W_E(i)), W_U(j)⟩", "output j", "input i"),
        (ov_memory_matrix(model, 1).cpu(), "⟨W²_O W²_V W_E(i), W_U(j)⟩", "output j", "input i"),
    ]
    fig, axes = subplots(1, 3, figsize=(13, 4))
    for ax, (matrix, title, xlabel, ylabel) in zip(axes, matrices):
        image = ax.imshow(matrix, cmap="viridis", aspect="auto")
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        fig.colorbar(image, ax=ax, fraction=0.046)
    axes[1].axvline(data.tau, color="r", lw=0.6)
    fig.suptitle(f"Fig 7: layer-1 attention and the value / FF read-outs (noise token τ = {data.tau})")
    fig.tight_layout()
    return fig


def fig_matrix(matrix: Float[torch.Tensor, "rows cols"], title: str, xlabel: str, ylabel: str) -> Figure:
    fig, ax = subplots(figsize=(5, 4.2))
    image = ax.imshow(matrix.cpu(), cmap="viridis", aspect="auto")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def fig_ioi(histories: Mapping[int, History], optimizer: str) -> Figure:
    """Figs 19-20: clean test loss and accuracy, full vs edited last MLP; a third panel (ours, not in the paper)
    the IO/S logit margin, which the edit should leave where it is."""
    fig, axes = subplots(1, 3, figsize=(14, 3.4))
    metrics = ("loss", "acc", "io_s_margin")
    for n_layers, history in histories.items():
        key = ioi_edit(optimizer, n_layers)
        for ax, metric in zip(axes, metrics):
            (line,) = ax.plot(*series(history, f"full.{metric}"), label=f"L = {n_layers}, full model")
            ax.plot(
                *series(history, f"{key}.{metric}"),
                ls="--",
                color=line.get_color(),
                label=f"L = {n_layers}, {curve_label(key)}",
            )
    for ax, metric in zip(axes, ("clean test loss", "accuracy", "logit(IO) − logit(S)")):
        ax.set(xlabel="step", ylabel=metric, xscale="symlog")
    axes[2].axhline(0.0, color="grey", lw=0.5)
    axes[2].set_title("IO/S margin (IO follows q once, S twice)", fontsize=8)
    axes[1].legend(fontsize=6)
    fig.suptitle(f"Fig {19 if optimizer == 'sgd' else 20}: synthetic IOI ({optimizer})")
    fig.tight_layout()
    return fig


def fig_ioi_counting(results: Mapping[str, Mapping[str, Any]]) -> Figure:
    """App. J's counting, by position (ours, not a paper figure): "IO preferred over S" with IO the 1st / 2nd /
    3rd successor of the trigger, ours beside each no-counting baseline on the same test set (``metrics.ioi_counting``;
    ``results``: the runs' results by run id, those with a ``counting`` entry)."""
    runs = {k: v["counting"] for k, v in results.items() if isinstance(v, Mapping) and "counting" in v}
    fig, axes = subplots(1, max(1, len(runs)), figsize=(5.5 * max(1, len(runs)), 3.6), squeeze=False)
    for ax, (run_id, c) in zip(axes[0], runs.items()):
        series_ = {"ours": c["ours_by_position"], **c["baselines_by_position"]}
        width = 0.8 / len(series_)
        for i, (name, values) in enumerate(series_.items()):
            xs = [k + (i - (len(series_) - 1) / 2) * width for k in range(3)]
            ys = [float("nan") if v is None else v for v in values]
            best = " (best)" if name == c["best_baseline"] else ""
            ax.bar(xs, ys, width, label=f"{name}{best}", color="black" if name == "ours" else None)
        ax.set(xticks=range(3), xticklabels=["IO 1st", "IO 2nd", "IO 3rd"], ylim=(0, 1.05), title=run_id)
        ax.set_ylabel("IO preferred over S")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("App. J (Figs 19-20's task): counting by where IO sits among the trigger's successors")
    fig.tight_layout()
    return fig


def fig18_lam(df: pd.DataFrame, value: str = "pure_loss", models: Sequence[str] | None = None) -> Figure:
    """Fig. 18: one panel per ``d``; median (line) and 25-75 % band over seeds of ``value`` vs GD step (log x).

    ``df`` as returned by ``lam_train`` / ``lam_fig18``. Returns a ``matplotlib.figure.Figure`` (Agg backend).
    """
    ds = sorted(df["d"].unique(), reverse=True)
    models = (
        list(models)
        if models is not None
        else sorted(df["model"].unique(), key=lambda s: (s == "full", int(s[4:]) if s.startswith("rank") else 0))
    )
    fig, axes = subplots(1, len(ds), figsize=(5.5 * len(ds), 4), squeeze=False)
    for ax, d in zip(axes[0], ds):
        sub = df[(df["d"] == d) & (df["step"] > 0)]
        for model in models:
            g = sub[sub["model"] == model].groupby("step")[value]
            med, lo, hi = g.median(), g.quantile(0.25), g.quantile(0.75)
            (line,) = ax.plot(med.index, med.values, label=model, lw=1.6, ls="--" if model == "full" else "-")
            ax.fill_between(med.index, lo.values, hi.values, color=line.get_color(), alpha=0.2)
        n_seeds = sub["seed"].nunique()
        alpha = sub["alpha"].iloc[0] if len(sub) else float("nan")
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="GD step",
            ylabel=value.replace("_", "-"),
            title=f"n={sub['n'].iloc[0] if len(sub) else '?'}, alpha={alpha}, d={d} ({n_seeds} seeds)",
        )
        ax.axhline(-math.log(1 - alpha), color="grey", lw=0.8, ls=":")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------- laser_pythia

Rows = Mapping[str, Mapping[str, Any]]  # checkpoint -> row of one model


def _steps(rows: Rows) -> list[tuple[int, Any]]:
    return sorted(((int(k), v) for k, v in rows.items() if k != "final"), key=lambda kv: kv[0])


def fig5_across_training(part: str, name: str, rows: Rows) -> Figure | None:
    """Fig 5: P(answer) / P(the) (factual) or P(IO), P(S), P(the) (IOI), full vs LASER, across checkpoints."""
    steps = _steps(rows)
    if len(steps) < 2:
        return None
    keys = {
        "factual": [("p_answer", "P(Spain)"), ("p_the", "P(the)")],
        "ioi": [("mean_p_io", "P(IO)"), ("mean_p_s", "P(S)"), ("mean_p_the", "P(the)")],
    }[part]
    fig, ax = subplots(figsize=(6, 3.6))
    for key, label in keys:
        for variant, style in (("full", "-"), ("laser", "--")):
            ax.plot(
                [max(s, 0.5) for s, _ in steps],
                [r[variant][key] for _, r in steps],
                style,
                marker="o",
                ms=3,
                label=f"{label}, {'full model' if variant == 'full' else 'LASER'}",
            )
    ax.set(
        xscale="log",
        xlabel="training step (0 plotted at 0.5)",
        ylabel="probability",
        title=f"Fig 5 ({'right' if part == 'factual' else 'left'}): {model_key(name)}, {part} across training",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def table1_top5(name: str, row: Mapping[str, Any]) -> Figure:
    """Table 1: the top-5 next tokens after 'Madrid is located in', full model vs LASER."""
    fig, axes = subplots(1, 2, figsize=(8, 3))
    for ax, variant in zip(axes, ("full", "laser")):
        top = row[variant]["top5"]
        ax.barh([t["token"] for t in top][::-1], [t["p"] for t in top][::-1])
        ax.set(title=f"{variant}: top-5 after '{MADRID.prompt}'", xlabel="probability")
    fig.suptitle(f"Table 1: {model_key(name)}, full model vs LASER")
    fig.tight_layout()
    return fig


def fig_boxes(part: str, results: Mapping[str, Rows]) -> Figure:
    """Figs 15 (IOI) and 16 (20 factual prompts): per-prompt probabilities, full vs LASER, one panel per model."""
    keys = ("p_io", "p_s", "p_the") if part == "ioi" else ("p_answer", "p_the")
    names = list(results)
    fig, axes = subplots(1, len(names), figsize=(4.5 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        row = list(results[name].values())[-1]
        data, labels = [], []
        for key in keys:
            for variant in ("full", "laser"):
                values = row[variant][key] if part == "ioi" else [p[key] for p in row[variant]["per_prompt"]]
                data.append(values)
                labels.append(f"P({key.removeprefix('p_')})\n{'full' if variant == 'full' else 'LASER'}")
        ax.boxplot(data)
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
        ax.set(title=model_key(name), ylabel="probability")
    fig.suptitle(f"Fig {15 if part == 'ioi' else 16}: {part}, full model vs LASER")
    fig.tight_layout()
    return fig


def fig14_prepositions(results: Mapping[str, Rows]) -> Figure:
    """Fig 14: mean rank of ' the' after prepositions and preposition-final sentences across training."""
    fig, axes = subplots(1, 2, figsize=(9, 3.4))
    for ax, label in zip(axes, ("raw_prepositions", "sentences")):
        for name, rows in results.items():
            steps = _steps(rows)
            if steps:
                xs = [max(s, 0.5) for s, _ in steps]
                ax.plot(xs, [r[label]["mean_rank_the"] for _, r in steps], marker="o", ms=3, label=name)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="training step",
            ylabel="mean rank of ' the'",
            title=label.replace("_", " "),
        )
        ax.legend(fontsize=7)
    fig.suptitle("Fig 14: rank of ' the' after prepositions across training")
    fig.tight_layout()
    return fig


def fig17_gpt2(name: str, row: Mapping[str, Any]) -> Figure:
    """Fig 17: GPT-2 small, P(next token) vs ρ for LASER on each late layer's W_in."""
    layers = sorted({r["paper_layer"] for r in row["sweep"]})
    fig, axes = subplots(1, len(layers), figsize=(3.6 * len(layers), 3.2), squeeze=False)
    for ax, layer in zip(axes[0], layers):
        for word in GPT2_IOI_TOKENS:
            pts = sorted(
                (r["rho"], r["value"]) for r in row["sweep"] if r["paper_layer"] == layer and r["metric"] == word
            )
            ax.plot(*zip(*pts), marker="o", ms=3, label=word)
        ax.set(xlabel="ρ (kept rank fraction)", ylabel="probability", title=f"layer {layer} W_in")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Fig 17: {model_key(name)}, LASER on W_in, P(next token) vs ρ")
    fig.tight_layout()
    return fig


def laser_figures(part: str, results: Mapping[str, Rows]) -> dict[str, Figure]:
    """The figures of one laser_pythia part (none when no model ran)."""
    results = {name: rows for name, rows in results.items() if rows}
    figs: dict[str, Figure] = {}
    if not results:
        return figs
    if part in ("factual", "ioi"):
        for name, rows in results.items():
            fig = fig5_across_training(part, name, rows)
            if fig is not None:
                figs[f"fig5_{part}_{slug(name)}.png"] = fig
    if part == "factual":
        figs.update({f"table1_{slug(n)}.png": table1_top5(n, list(r.values())[-1]) for n, r in results.items()})
    if part in ("ioi", "factual20"):
        figs[f"fig{15 if part == 'ioi' else 16}_{part}.png"] = fig_boxes(part, results)
    if part == "prepositions":
        figs["fig14_prepositions.png"] = fig14_prepositions(results)
    if part == "gpt2-ioi":
        figs.update({f"fig17_{slug(n)}.png": fig17_gpt2(n, list(r.values())[-1]) for n, r in results.items()})
    return figs
