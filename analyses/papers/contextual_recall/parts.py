"""Parts of ``python -m analyses.contextual_recall`` (each ``part(ctx) -> PartResult``: glue over ``runs``,
``figures`` and ``pretrained``) and the check of the options against the worlds, before any training."""

from __future__ import annotations

import time

from mechrecall.errors import UsageError
from mechrecall.experiment import Context, PartResult
from mechrecall.typed import NotRun, read_results

from . import results as R
from .presets import ContextualRecallPreset, WorldConfigError


def _params(ctx: Context[ContextualRecallPreset]) -> ContextualRecallPreset:
    return ctx.params


def check(ctx: Context) -> None:
    """Every world config the chosen parts train, checked before any training (one-line errors naming the value)."""
    from .models import world_r_ctx
    from .runs import check_run_g, check_run_r, g_ctx

    n_ctx = ctx.options.get("n_ctx")
    try:
        if "world_g" in ctx.parts:
            rg = _params(ctx).run_g(ctx.seed)
            check_run_g(rg)
            if n_ctx is not None and g_ctx(rg) > n_ctx:
                raise WorldConfigError(
                    f"--n-ctx {n_ctx}: the longest World-G input has {g_ctx(rg)} tokens (sequence longer than n_ctx)"
                )
        if {"world_r", "world_r_absolute"} & set(ctx.parts):
            rr = _params(ctx).run_r(ctx.seed)
            check_run_r(rr)
            need = world_r_ctx(rr.world, rr.n_demos)
            if n_ctx is not None and need > n_ctx:
                raise WorldConfigError(
                    f"--n-ctx {n_ctx}: the longest World-R input has {need} tokens (sequence longer than n_ctx)"
                )
    except WorldConfigError as exc:
        raise UsageError(str(exc)) from None


def part_construction(ctx: Context) -> PartResult:
    """§4 constructions (Prop. 1-4) loaded into a HookedTransformer, and Theorem 2's two-step cascade."""
    from . import figures as F
    from .runs import run_construction

    res = run_construction(_params(ctx), ctx.seed)
    figs = {
        "construction_cascade.png": F.cascade_figure(res["cascade"], "Theorem 2: two-step cascade from Prop. 1 weights")
    }
    ctx.say(
        f"Prop. 1 PT {res['prop1_pt_rel']['exact']:.3f} / ICL {res['prop1_icl_rel']['exact']:.3f}; Prop. 2 "
        f"held-out ICL {res['prop2_icl_rel_heldout']['exact']:.3f}"
    )
    return PartResult(read_results(R.ConstructionResults, res), figs)


def _world_r(ctx: Context, positions: str) -> PartResult:
    from . import figures as F
    from .runs import measure_world_r, train_r

    run = _params(ctx).run_r(ctx.seed)
    started = time.perf_counter()
    tr = train_r(run, ctx.seed, ctx.run_dir(ctx.part), positions=positions, device=ctx.device, progress=ctx.progress)
    res = measure_world_r(tr, run, positions, time.perf_counter() - started, ctx.seed)
    pt, ft = res["after_pt"], res["after_ft"]
    ctx.say(
        f"{ctx.part}: PT_rel {pt['PT.exact']:.3f}; ICL held-out after PT {pt['ICL_heldout.exact']:.3f}, after FT "
        f"{ft['ICL_heldout.exact']:.3f} (seen {ft['ICL_seen.exact']:.3f}); {res['train_seconds']:.0f} s"
    )
    return PartResult(read_results(R.WorldRResults, res), F.world_r_figures(tr, res, positions))


def part_world_r(ctx: Context) -> PartResult:
    """Model B on World-R: pretraining, finetuning on ICL_rel, head roles (Figs. 9-12, 19-21)."""
    return _world_r(ctx, "relative")


def part_world_r_absolute(ctx: Context) -> PartResult:
    """Model B′ (absolute one-hot positions) on World-R (Figs. 22-26)."""
    return _world_r(ctx, "absolute")


def part_world_g(ctx: Context) -> PartResult:
    """Model A on World-G: pretraining (Fig. 2), finetuning on ICL (Fig. 3) and ICL+Grm (Figs. 4, 15), task
    vectors (Figs. 8, 16, 17) and steering (Figs. 8 right, 18)."""
    from . import figures as F
    from .runs import measure_world_g, train_g

    run = _params(ctx).run_g(ctx.seed)
    started = time.perf_counter()
    out = ctx.run_dir("world_g")
    tr = train_g(run, ctx.seed, out, device=ctx.device, progress=ctx.progress, iclgrm_losses=("attributes",))
    res = measure_world_g(tr, run, ctx.seed, time.perf_counter() - started)
    gap = res["stagewise_max_gap"]
    ctx.say(
        f"world_g: PT exact {res['after_pt']['PT.exact']:.3f}, max type-exact gap {gap['type_minus_exact']:.2f} at "
        f"step {gap['step']}; ICL held-out after PT {res['after_pt']['ICL_heldout.exact']:.3f}, after FT-ICL "
        f"{res['after_ft_icl']['ICL_heldout.exact']:.3f}, after FT-ICL+Grm "
        f"{res['after_ft_iclgrm']['ICL_heldout.exact']:.3f} (loss: {run.ft_loss}), "
        f"{res['after_ft_iclgrm_attributes']['ICL_heldout.exact']:.3f} (loss: attributes); "
        f"{res['train_seconds']:.0f} s"
    )
    return PartResult(read_results(R.WorldGResults, res), F.world_g_figures(tr, res))


def part_pretrained(ctx: Context) -> PartResult:
    """Extension (not in the paper): task-vector geometry and steering on a Pythia / GPT-2 checkpoint."""
    from . import figures as F
    from .pretrained import run_pretrained

    p = _params(ctx)
    name = ctx.options.get("model") or "pythia-160m"
    res = run_pretrained(name, ctx.options.get("checkpoint"), p.pretrained_K, p.pretrained_max_t, ctx.seed, ctx.device)
    if isinstance(res, NotRun):
        ctx.say(f"pretrained: not run ({res.why})")
        return PartResult(res)
    ctx.say(
        f"pretrained ({name}): silhouette t=0 {res['silhouette'][0]:.3f} -> t={res['t'][-1]} "
        f"{res['silhouette'][-1]:.3f}; accuracy {res['accuracy'][0]:.2f} -> {res['accuracy'][-1]:.2f}"
    )
    figs = {"pretrained_task_vectors.png": F.pretrained_figure(res, name)}
    return PartResult(read_results(R.PretrainedResults, res), figs)
