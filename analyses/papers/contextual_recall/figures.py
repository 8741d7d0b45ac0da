"""Figures of the contextual-recall paper (each titled with the figure it reproduces), via ``analyses.plotting``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from jaxtyping import Float, Int
from matplotlib.figure import Figure

from analyses.plotting import subplots

from . import metrics as M
from .data import World
from .metrics import METRICS

if TYPE_CHECKING:
    from .runs import Trained

STYLE = {"exact": "C0", "attr_type": "C1", "subject": "C2", "attribute": "C3"}


def metric_curves(history: Mapping[str, Any], panels: Sequence[tuple[str, str]], title: str, xlabel: str) -> Figure:
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


def clustering_figure(clu: Mapping[str, Any], title: str) -> Figure:
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


def steering_figure(steer: Mapping[str, Any], title: str) -> Figure:
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


def attention_figure(pattern: Float[torch.Tensor, "head q k"], tokens_labels: Sequence[str], title: str) -> Figure:
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


def cosine_figure(cos: Mapping[str, Any], title: str) -> Figure:
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


def ov_figure(
    slices: Float[torch.Tensor, "head k k"],
    heads: dict[str, int],
    names: Sequence[str],
    bounds: Sequence[int],
    title: str,
) -> Figure:
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


def cascade_figure(results: Mapping[str, Any], title: str) -> Figure:
    """Theorem 2: ICL accuracy after steps 0 / 1 / 2 in the two worlds (seen, held-out query, all held out);
    ``results``: tag -> the cascade's results (``runs.run_construction``'s ``cascade``)."""
    fig, axes = subplots(1, len(results), figsize=(5 * len(results), 3.3), squeeze=False)
    for ax, r in zip(axes[0], results.values()):
        w = r["world"]
        beta = r["beta_report"]  # "inf" (the hard-attention limit) or a number, as in the accuracy keys
        for i, split in enumerate(("seen", "heldout_query", "all_heldout")):
            ys = [r[f"acc_step{s}"][f"{split}@beta={beta}"] for s in (0, 1, 2)]
            ax.bar(np.arange(3) + 0.27 * (i - 1), ys, 0.27, label=split)
        ax.set(
            xticks=range(3),
            xticklabels=["Prop. 1 init", "after step 1", "after step 2"],
            ylim=(0, 1.05),
            ylabel=f"ICL_rel accuracy (β={'∞' if beta == 'inf' else beta})",
            title=f"{w}\nU_L(U_L+N_ft)/M_ft = {r['condition_lhs']:.2f} vs N_ft = {r['condition_rhs']}",
        )
        ax.title.set_fontsize(8)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def pretrained_figure(geo: Mapping[str, Any], name: str) -> Figure:
    """Fig. 8 (left and right) on a real model (the extension): silhouette and accuracy vs t; steering ranks."""
    fig, (a, b) = subplots(1, 2, figsize=(9, 3.3))
    a.plot(geo["t"], geo["silhouette"], marker="o", label=f"silhouette (layer {geo['layer']} attn out)")
    a.plot(geo["t"], geo["accuracy"], marker="s", label="first-token accuracy")
    a.set(xlabel="number of demonstrations t", ylabel="value", title=f"Fig. 8 (left) on {name} — extension")
    a.legend(fontsize=7)
    s = geo["steering"]
    b.plot(s["beta"], s["rank_orig"], marker="o", label="original answer")
    b.plot(s["beta"], s["rank_target"], marker="s", label="target answer")
    b.set(xlabel="β", ylabel="mean rank", yscale="log", title="Fig. 8 (right) on a real model — extension")
    b.legend(fontsize=7)
    fig.tight_layout()
    return fig


def token_labels(world: World, tokens: Int[torch.Tensor, " T"]) -> list[str]:
    """Axis labels of an attention map: ``s3``, ``a2`` (a type-2 value), ``[sep]``, ``r1``, ``g``."""
    c = world.cfg
    types = world.type_of_token()
    out = []
    for t in tokens.tolist():
        if t < c.n_subjects:
            out.append(f"s{t}")
        elif types[t] >= 0:
            out.append(f"a{int(types[t]) + 1}")
        elif t == c.sep:
            out.append("[sep]")
        elif c.relation_tokens and t >= c.relation_offset:
            out.append(f"r{t - c.relation_offset + 1}")
        else:
            out.append("g")
    return out


#: positions -> file names and titles of the World-R figures (Model B: Figs. 9-12, 19-21; Model B′: Figs. 22-26)
WORLD_R_FIGURES: dict[str, dict[str, str]] = {
    "relative": {
        "curves": "fig19_world_r_finetune.png",
        "curves_title": "Fig. 19",
        "pt_curves": "world_r_pretrain.png",
        "attn_pt": "fig09_attention_after_pt.png",
        "attn_pt_title": "Fig. 9: Model B attention after pretraining",
        "cos_pt": "fig10_head_cosines_after_pt.png",
        "cos_pt_title": "Fig. 10: head outputs vs Prop. 1 outputs",
        "attn_ft": "fig11_attention_after_ft.png",
        "attn_ft_title": "Fig. 11: Model B attention after finetuning",
        "cos_ft": "fig12_head_cosines_after_ft.png",
        "cos_ft_title": "Fig. 12: head outputs vs Prop. 2 outputs",
        "ov_pt": "fig20_ov_after_pt.png",
        "ov_ft": "fig21_ov_after_ft.png",
    },
    "absolute": {
        "curves": "fig24_world_r_abs_finetune.png",
        "curves_title": "Fig. 24",
        "pt_curves": "world_r_abs_pretrain.png",
        "attn_pt": "fig22_abs_attention_after_pt.png",
        "attn_pt_title": "Fig. 22: Model B′ attention after pretraining",
        "cos_pt": "fig23_abs_head_cosines_after_pt.png",
        "cos_pt_title": "Fig. 23: Model B′ heads vs Prop. 1 outputs",
        "attn_ft": "fig25_abs_attention_after_ft.png",
        "attn_ft_title": "Fig. 25: Model B′ attention after finetuning",
        "cos_ft": "fig26_abs_head_cosines_after_ft.png",
        "cos_ft_title": "Fig. 26: Model B′ heads vs Prop. 2 outputs",
    },
}


def world_r_figures(tr: "Trained", res: Mapping[str, Any], positions: str) -> dict[str, Figure]:
    """The World-R part's figures from its trained models and results (``runs.measure_world_r``)."""
    names = WORLD_R_FIGURES[positions]
    pt_b, icl_b = tr.evals["PT"], tr.evals["ICL_heldout"]
    ft_model = tr.models_ft["ICL"]
    panels = [
        ("ICL_seen", "seen query subjects"),
        ("ICL_heldout", "held-out query subjects"),
        ("PT", "PT_rel (forgetting)"),
    ]
    figs = {
        names["curves"]: metric_curves(
            tr.history_ft["ICL"], panels, f"{names['curves_title']}: finetuning on ICL_rel", "FT step"
        ),
        names["pt_curves"]: metric_curves(
            tr.history_pt,
            [("PT", "PT_rel"), ("ICL_heldout", "ICL_rel held-out")],
            "World-R pretraining (PT_rel and ICL_rel accuracy)",
            "PT step",
        ),
        names["attn_pt"]: attention_figure(
            M.example_attention(tr.model_pt, pt_b.tokens),
            token_labels(tr.world, pt_b.tokens[0]),
            names["attn_pt_title"],
        ),
        names["cos_pt"]: cosine_figure(res["head_cosines_after_pt"], names["cos_pt_title"]),
        names["attn_ft"]: attention_figure(
            M.example_attention(ft_model, icl_b.tokens), token_labels(tr.world, icl_b.tokens[0]), names["attn_ft_title"]
        ),
        names["cos_ft"]: cosine_figure(res["head_cosines_after_ft"], names["cos_ft_title"]),
    }
    if "ov_pt" in names:
        cos = res["head_cosines_after_pt"]["minus_U_all"]
        heads = {"subject": cos["subject_head"], "relation": cos["relation_head"]}
        ids, groups, bounds = M.ov_slice_ids(tr.world)
        for key, model, title in (
            ("ov_pt", tr.model_pt, "Fig. 20: sliced OV matrices after pretraining"),
            ("ov_ft", ft_model, "Fig. 21: sliced OV matrices after finetuning"),
        ):
            figs[names[key]] = ov_figure(M.ov_slices(model, tr.world, ids), heads, groups, bounds, title)
    return figs


#: Finding 3's curves: (results key of the history, label, colour); the label's ``{loss}`` is the run's ``ft_loss``
FINDING3_CURVES = (
    ("history_ft_icl", "FT on ICL (loss: {loss})", "C0"),
    ("history_ft_iclgrm", "FT on ICL+Grm (loss: {loss})", "C3"),
    ("history_ft_iclgrm_attributes", "FT on ICL+Grm (loss: attributes)", "C2"),
)
BREAKDOWN_STYLE = {"attribute": "C2", "right_type": "C1", "grammar": "C3", "other": "0.6"}


def finding3_figure(results: Sequence[Mapping[str, Any]], title: str = "") -> Figure:
    """Fig. 4's layout over one or more seeds' World-G results: ICL exact match on held-out query subjects vs
    finetuning samples for FT on ICL and FT on ICL+Grm under both loss readings (thin: each seed; thick: their
    mean), and what the models answer at those queries (mean shares over seeds, :data:`metrics.BREAKDOWN`)."""
    fig, (ax, bx) = subplots(1, 2, figsize=(10.5, 3.6))
    loss = results[0]["ft_loss"]
    for key, label, colour in FINDING3_CURVES:
        curves = [[row["ICL_heldout.exact"] for row in r[key]] for r in results]
        x = [row["step"] * results[0]["samples_per_ft_step"] for row in results[0][key]]
        for c in curves:
            ax.plot(x, c, color=colour, lw=0.6, alpha=0.5)
        ax.plot(x, np.mean(curves, 0), color=colour, lw=2, label=label.format(loss=loss))
    ax.axhline(results[0]["chance_exact"], color="k", ls=":", lw=1, label="chance (right type)")
    ax.set(xlabel="finetuning samples", ylabel="ICL exact, held-out subjects", ylim=(-0.02, 1.02))
    ax.legend(fontsize=7)
    names = list(results[0]["query_breakdown"])
    bottom = np.zeros(len(names))
    for cls, colour in BREAKDOWN_STYLE.items():
        share = np.array([np.mean([r["query_breakdown"][n][cls] for r in results]) for n in names])
        bx.bar(range(len(names)), share, bottom=bottom, color=colour, label=cls)
        bottom += share
    ticks = {"pretrained": "before FT", "ft_icl": f"FT ICL\n({loss})", "ft_iclgrm": f"FT ICL+Grm\n({loss})"}
    ticks["ft_iclgrm_attributes"] = "FT ICL+Grm\n(attributes)"
    bx.set_xticks(range(len(names)), [ticks.get(n, n) for n in names], fontsize=7)
    bx.set(ylabel="share of answers at the held-out query", ylim=(0, 1), title=f"after finetuning (loss: {loss})")
    bx.legend(fontsize=7)
    seeds = f"{len(results)} seed{'s' if len(results) > 1 else ''}"
    fig.suptitle(title or f"Fig. 4: sample efficiency of FT on ICL+Grm vs ICL, both loss readings ({seeds})")
    fig.tight_layout()
    return fig


def world_g_figures(tr: "Trained", res: Mapping[str, Any]) -> dict[str, Figure]:
    """The World-G part's figures (Figs. 2-4, 8, 15-18) from its training histories and results."""
    seen_held = [("ICL_seen", "seen query subjects"), ("ICL_heldout", "held-out query subjects")]
    ft_icl, ft_grm = {"eval": res["history_ft_icl"]}, {"eval": res["history_ft_iclgrm"]}
    loss = f"loss: {res['ft_loss']}"
    return {
        "fig02_pretraining.png": metric_curves(
            tr.history_pt,
            [("PT", "PT sequences (held-out)"), ("ICL_heldout", "ICL sequences")],
            "Fig. 2: pretraining on PT (World-G, Model A)",
            "PT step",
        ),
        "fig03_finetune_icl.png": metric_curves(ft_icl, seen_held, f"Fig. 3: finetuning on ICL ({loss})", "FT step"),
        "fig04_finetune_iclgrm.png": metric_curves(
            ft_grm, seen_held, f"Fig. 4: finetuning on ICL+Grm ({loss}), evaluated on ICL", "FT step"
        ),
        "fig04_sample_efficiency.png": finding3_figure([res]),
        "fig15_iclgrm_vs_icl.png": metric_curves(
            ft_grm,
            [("ICLGrm1_heldout", "ICL+Grm (S_ft=1), held-out"), ("ICL_heldout", "ICL, held-out")],
            f"Fig. 15: finetuning on ICL+Grm ({loss}) — ICL+Grm vs ICL",
            "FT step",
        ),
        "fig08_16_17_clustering.png": clustering_figure(
            res["clustering_ft_icl"], "Figs. 8, 16, 17 (model finetuned on ICL)"
        ),
        "fig08_18_steering.png": steering_figure(
            res["steering_ft_icl"], "Figs. 8 (right), 18: steering with task vectors"
        ),
    }
