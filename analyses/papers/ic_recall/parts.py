"""The parts of ``python -m analyses.ic_recall`` (Huang, Nichani, Lee & Ge, "Fine-Tuning Dynamics of In-Context
Factual Recall in Transformers"): each ``part_*(ctx) -> PartResult``, glue over :mod:`.runs` and :mod:`.figures`
(its results validated as the part's typed model, :mod:`.results`, which the claims table, :mod:`.claims`, reads).

* ``exact``: the construction equals the closed-form logits (eq. (16), App. D), the memory recalls 100%
  (Lemma 3.1), all answers tie at EoS (Lemma B.1), the confusing-relation gap (§4.1), the exact Bayes ceiling,
  the fast path trains to the TL model's parameters.
* ``pattern``: Fig 2, the pairwise attention pattern, first / second step accuracy against their ceilings.
* ``sample_complexity``: Fig 3, accuracy against the number of fine-tuning samples N.
* ``algorithm1``: Algorithm 1 (perturbed GD), Stage-1 shape (Lemma C.1) and the second step (Lemma 4.5).
* ``pretrained_mlp``: Fig 4 (both panels), pretraining the whole transformer, then fine-tuning the whole W^KQ; the
  left panel again with the MLP's subject×subject cross terms cancelled (the ablation).
* ``pretrained`` (extension, not in the paper): the pairwise-attention score for every head of a real LM.

The sweeps' trial seeds are the preset's at ``--seed 0`` and shift with ``--seed`` (:func:`.presets.trial_seeds`).
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from analyses.papers.ic_recall import results as R
from analyses.papers.ic_recall.presets import (
    PATTERN_OPTIONS,
    ICRecallPreset,
    PretrainedMLP,
    pattern_configs,
    trial_seeds,
)
from mechrecall.errors import UsageError
from mechrecall.experiment import Context, PartResult, PartTask
from mechrecall.io import to_jsonable
from mechrecall.typed import NotRun, Results, read_results

if TYPE_CHECKING:
    from analyses.papers.ic_recall.runs import Sweep


M = TypeVar("M", bound=Results)


def _params(ctx: Context[ICRecallPreset]) -> ICRecallPreset:
    return ctx.params


def _typed(model: type[M], results: Any) -> M | NotRun:
    """A part's results as ``results.json`` stores them (:func:`mechrecall.io.to_jsonable`: string keys, lists,
    NaN as null), validated as ``model``: its claims read the same typed results in the run as read back."""
    return read_results(model, to_jsonable(results))


def _custom(ctx: Context) -> bool:
    """Whether an option among ``--n/--m/--k/--family/--temperature/--samples`` was given (config B rebuilt)."""
    return any(ctx.options.get(k) is not None for k in PATTERN_OPTIONS)


def _sweep(ctx: Context) -> Sweep:
    from analyses.papers.ic_recall.runs import Sweep

    return Sweep(
        ctx.run_dir(ctx.part), workers=int(ctx.options.get("workers") or 2), progress=ctx.progress, say=ctx.say
    )


def cell_tasks(ctx: Context) -> list[PartTask]:
    """The cells ``ctx.part`` (pattern, sample_complexity or algorithm1) runs, as tasks an executor may run before
    the part (the report's): each one's result lands where the part's sweep looks for it."""
    from analyses.papers.ic_recall import runs

    p = _params(ctx)
    if ctx.part == "pattern":
        cells = runs.pattern_cells(pattern_configs(p, _custom(ctx)), trial_seeds(p.pattern_seeds, ctx.seed))
    elif ctx.part == "algorithm1":
        cells = runs.algorithm1_cells(p.algorithm1, trial_seeds(p.algorithm1_seeds, ctx.seed))
    else:
        groups = runs.sample_complexity_cells(p.sample_complexity, ctx.seed)
        cells = [c for group in groups.values() for c in group]
    folder = ctx.run_dir(ctx.part)
    unique = list(dict.fromkeys(cells))
    return [PartTask(c.key, folder / f"{c.key}.json", runs.run_cell, (c,), runs.cell_task(c).seconds) for c in unique]


def check(ctx: Context) -> None:
    """Every pattern config (options applied) checked before any work (a one-line error naming the value)."""
    from analyses.papers.ic_recall.data import ICRecallSpec, check_sample_count, check_temperature

    try:
        for cell in pattern_configs(_params(ctx), _custom(ctx)).values():
            spec = ICRecallSpec(cell.n, cell.m, cell.k, cell.family, 0)
            spec.validate()
            check_temperature(cell.T)
            check_sample_count(spec, cell.N)
    except ValueError as exc:
        raise UsageError(_option_message(str(exc))) from None


def _option_message(text: str) -> str:
    for word, flag in (
        ("temperature T=", "--temperature: "),
        ("N=", "--samples: "),
        ("relation family", "--family: "),
        ("n=", "--n/--m/--k: "),
        ("k=", "--k: "),
        ("m=", "--m: "),
    ):
        if word in text:
            return flag + text
    return text


def part_exact(ctx: Context) -> PartResult:
    """The construction against its closed forms (float64), on three tasks (two at micro)."""
    from analyses.papers.ic_recall.runs import exact_checks

    p = _params(ctx)
    results = exact_checks(ctx.seed, p.exact_affine, p.fast_path_steps)
    ctx.say(
        f"closed form: {results['closed_form_relation_logits']:.1e} / {results['closed_form_answer_logits']:.1e}; "
        f"memory recall {results['memory_recall']:.3f}; ceiling n=8, m=64: "
        f"{results['tasks'][1]['bayes_ceiling_exact']:.4f}"
    )
    return PartResult(_typed(R.ExactResults, results))


def part_pattern(ctx: Context) -> PartResult:
    """Fig 2: partial fine-tuning (Adam) with the constructed MLP; pairwise pattern and both decoding steps."""
    from analyses.papers.ic_recall.figures import attention_heatmaps
    from analyses.papers.ic_recall.runs import pattern_run

    p = _params(ctx)
    configs = pattern_configs(p, _custom(ctx))
    results = pattern_run(configs, trial_seeds(p.pattern_seeds, ctx.seed), _sweep(ctx))
    title = "Fig 2 (Huang et al.): attention at convergence, constructed MLP, partial fine-tuning"
    summaries = {n: results[f"summary_{n}"] for n in configs}
    ctx.say(
        "; ".join(
            f"{n}: acc1 {statistics.mean(s['acc_relation_exact']):.3f} "
            f"(ceiling {statistics.mean(s['bayes_ceiling']):.3f}), acc2 {min(s['acc_answer_teacher_forced']):.3f}"
            for n, s in summaries.items()
        )
    )
    figures = {"fig2_pairwise_attention.png": attention_heatmaps(results["panels"], title)}
    return PartResult(_typed(R.PatternResults, results), figures)


def part_sample_complexity(ctx: Context) -> PartResult:
    """Fig 3: first-step accuracy vs N; the samples needed N* against n (identifiable affine relations; full mode)."""
    from analyses.papers.ic_recall.figures import accuracy_vs_samples
    from analyses.papers.ic_recall.runs import sample_complexity_run

    cfg = _params(ctx).sample_complexity
    results, rows = sample_complexity_run(cfg, ctx.seed, _sweep(ctx))
    name = "fig3_affine_accuracy_vs_N.png"
    figures = {
        name: accuracy_vs_samples(
            rows["affine"], "Fig 3 (Huang et al.): first step, affine relations (Assumption 2.2 holds)"
        )
    }
    if rows["full"]:
        title = "Fig 3 (Huang et al.) ablation: full W^KQ fine-tuning, affine relations"
        figures["fig3_full_mode_accuracy_vs_N.png"] = accuracy_vs_samples(rows["full"], title)
    if rows["fig3"] and cfg.fig3 is not None:
        title = f"Fig 3 (Huang et al.): first step, random relations, m = {cfg.fig3.m}, {len(cfg.fig3.seeds)} seeds"
        figures["fig3_accuracy_vs_N.png"] = accuracy_vs_samples(rows["fig3"], title)
    at8 = {n: d.get(8) for n, d in results["affine_curve"].items()}
    ctx.say(
        f"affine N=8 accuracy by n: {at8}; N* = {results['affine_N_star']}; full-mode N* = {results['full_N_star']}"
    )
    return PartResult(_typed(R.SampleComplexityResults, results), figures)


def part_algorithm1(ctx: Context) -> PartResult:
    """Algorithm 1 (temperature-scaled perturbed GD) on identifiable relations: Stage-1 shape and accuracies."""
    from analyses.papers.ic_recall.claims import ALGORITHM1_SIZES
    from analyses.papers.ic_recall.runs import algorithm1_run

    p = _params(ctx)
    results = algorithm1_run(p.algorithm1, trial_seeds(p.algorithm1_seeds, ctx.seed), _sweep(ctx), ALGORITHM1_SIZES)
    keys = ("stage1_equal_pairs", "stage1_order", "stage1_second_step", "first_step", "second_step")
    ctx.say("Algorithm 1: " + "; ".join(f"n{c.n}_{k} = {results[f'n{c.n}'][k]}" for c in p.algorithm1 for k in keys))
    return PartResult(_typed(R.Algorithm1Results, results))


def _fig4_config(p: ICRecallPreset) -> PretrainedMLP:
    """The preset's Fig 4 panels with ``--pretrain-weight-decay`` (``pretrain_weight_decay``) applied to both."""
    cfg, wd = p.pretrained_mlp, p.pretrain_weight_decay
    right = replace(cfg.right, weight_decay=wd) if cfg.right is not None else None
    return replace(cfg, weight_decay=wd, right=right)


def part_pretrained_mlp(ctx: Context) -> PartResult:
    """Fig 4, both panels: pretrain the whole transformer on fact pairs, freeze the MLP, fine-tune the whole W^KQ;
    the left panel again with the MLP's subject×subject cross terms cancelled."""
    from analyses.papers.ic_recall.figures import attention_heatmaps, fig4_panel
    from analyses.papers.ic_recall.runs import pretrained_mlp_run

    cfg = _fig4_config(_params(ctx))
    r = pretrained_mlp_run(cfg, trial_seeds(cfg.seeds, ctx.seed), ctx.run_dir("pretrained_mlp"), ctx.progress)
    panels = [fig4_panel(r["settings"], r["runs"][0])]
    if isinstance(r["right"], dict):  # else: NotApplicable (a preset without the right panel)
        panels.append(fig4_panel(r["right"]["settings"], r["right"]["runs"][0]))
    title = "Fig 4 (Huang et al.): pretrained MLP, full attention fine-tuning (left: 2-ICL, right: 3-ICL)"
    cancelled = r["cancelled"]["first_step_vs_ceiling"] if isinstance(r["cancelled"], dict) else None
    right = r["right"]["first_step_vs_ceiling"] if isinstance(r["right"], dict) else "not run"
    ctx.say(
        f"pretrained MLP: recall {r['pretrain_recall']:.3f}; acc1 {r['acc_relation_exact']:.3f} "
        f"(ceiling {r['bayes_ceiling']:.3f}); within {r['within_pair']:.3f}, across {r['across_pairs']:.3f}; "
        f"s×s cross terms {r['subject_subject_cross_terms']:.3f}; acc1/ceiling {r['first_step_vs_ceiling']:.3f}, "
        f"cancelled {cancelled}; right: {right}"
    )
    figures = {"fig4_pretrained_mlp_attention.png": attention_heatmaps(panels, title)}
    return PartResult(_typed(R.PretrainedMLPResults, r), figures)


def part_pretrained(ctx: Context) -> PartResult:
    """Extension: score every head of ``--model`` with the pairwise-attention score (not run, with the reason,
    without weights)."""
    from analyses.papers.ic_recall.pretrained import score_heads

    name = ctx.options.get("model") or "pythia-160m"
    results = score_heads(name, _params(ctx).prompts, ctx.seed)
    if isinstance(results, NotRun):
        ctx.say(f"pretrained: not run ({results.why})")
        return PartResult(results)
    from analyses.papers.ic_recall.figures import head_scores_heatmap

    best = results["best_head"]
    ctx.say(f"pretrained {name}: best head L{best['layer']}H{best['head']} score {best['score']:.3f}")
    figures = {"pretrained_head_pair_scores.png": head_scores_heatmap(results["table"], name)}
    return PartResult(_typed(R.PretrainedResults, results), figures)
