"""The parts of ``python -m analyses.induction_emergence``: short glue from the context to ``runs`` and ``figures``.

- ``demo``: the 2-layer attention-only model on periodic random tokens; its circuit (head roles, attention).
- ``exact``: the exact checks (closed form = matrix model, TL embedding = plain-torch reference in
  forward and gradients, Theorem 1's orbit residual in float64).
- ``ode``: Fig 5 from the 3-dim gradient-flow ODE (App. B.5): emergence order and t_ICL ∝ N².
- ``disentangled``: SGD on the disentangled transformer, all weights vs only α₃, β₂, γ₃ (Figs 3, 4, 15, 16).
- ``weights``: weight heatmaps during training (Figs 6–14).
- ``standard``: the §2 transformer on Task A: loss (Fig 17), head roles, the interpretable QK/OV
  matrices (Fig 2).
- ``sgd_scaling``: full training (not the ODE) at 3 values of N, several seeds: t_ICL vs N.
- ``pythia``: beyond the paper, head-role scores across Pythia checkpoints (``pretrained``).

Each part hands back its typed results (``results``: one model per part, validated from the runs' dictionaries);
its figures are drawn from those dictionaries.

The options are checked before any work by :func:`check` (the ranges by the protocol, from the entry module).
"""

from __future__ import annotations

from analyses.papers.induction_heads import figures, runs
from analyses.papers.induction_heads import results as R
from analyses.papers.induction_heads.metrics import INDUCTION_PARAMS, check_names, check_thresholds
from analyses.papers.induction_heads.presets import PRESETS, InductionPreset
from mechrecall.errors import UsageError
from mechrecall.experiment import Context, PartResult
from mechrecall.typed import NotRun, read_results

NAMES = INDUCTION_PARAMS  # alpha3, beta2, gamma3


# ------------------------------------------------------------------------------------------- options


def params(ctx: Context) -> InductionPreset:
    """The typed preset with the command line's overrides applied (the protocol's ``ctx.params``)."""
    return ctx.params if isinstance(ctx.params, InductionPreset) else PRESETS[ctx.preset]


def thresholds_of(ctx: Context) -> dict[str, float]:
    """``--thresholds a,b,g`` → ``{"alpha3": a, "beta2": b, "gamma3": g}`` (each in (0, 1))."""
    text = ctx.options.get("thresholds") or "0.5,0.5,0.5"
    try:
        values = [float(s) for s in str(text).split(",")]
    except ValueError:
        raise UsageError(f"--thresholds {text!r}; expected three numbers in (0, 1) for alpha3,beta2,gamma3") from None
    if len(values) != 3:
        raise UsageError(f"--thresholds {text!r}; expected three numbers (alpha3,beta2,gamma3)")
    try:
        return check_thresholds(dict(zip(NAMES, values)))
    except ValueError as exc:
        raise UsageError(f"--thresholds {text!r}: {exc}") from None


def train_only_of(ctx: Context) -> tuple[str, ...]:
    """``--train-only`` → the pseudo-parameters of the restricted run (default α₃, β₂, γ₃)."""
    text = ctx.options.get("train_only") or ",".join(INDUCTION_PARAMS)
    names = tuple(s.strip() for s in str(text).split(",") if s.strip())
    try:
        return tuple(check_names(names))
    except ValueError as exc:
        raise UsageError(f"--train-only {text!r}: {exc}") from None


def checkpoints_of(ctx: Context) -> list[int]:
    """``--checkpoints`` or the default: every step of a local mirror / the log-spaced Pythia list."""
    from analyses.papers.induction_heads.pretrained import DEFAULT_CHECKPOINTS, DEFAULT_MODEL, local_steps

    model = ctx.options.get("model") or DEFAULT_MODEL
    given = ctx.options.get("checkpoints")
    local = local_steps(model)
    steps = sorted(set(given)) if given else (local if local is not None else list(DEFAULT_CHECKPOINTS))
    if len(steps) < 2:
        raise UsageError(
            f"--checkpoints {','.join(map(str, steps)) or '(none)'} for --model {model}: an emergence time needs a "
            f"series of at least 2 checkpoints, got {len(steps)}"
        )
    missing = [s for s in steps if local is not None and s not in local]
    if missing:
        raise UsageError(f"--checkpoints: {model} has no step{missing[0]}/ subfolder; available steps: {local}")
    return steps


def pythia_threshold_of(ctx: Context) -> float:
    """``--pythia-threshold`` (default 0.4), in the open interval (0, 1)."""
    value = ctx.options.get("pythia_threshold")
    try:
        return check_thresholds({"--pythia-threshold": 0.4 if value is None else value})["--pythia-threshold"]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_sgd_ns(ns: tuple[int, ...], dim: int) -> None:
    """Orthonormal data needs N <= D/2; a power law needs >= 2 values of N."""
    bad = [n for n in ns if n > dim // 2]
    if bad:
        raise UsageError(
            f"--sgd-ns {','.join(map(str, ns))}: N={bad[0]} is outside 2..D/2 = {dim // 2} "
            f"(orthonormal data needs D >= 2N; D = {dim} in this preset)"
        )
    if len(ns) < 2:
        raise UsageError(f"--sgd-ns {','.join(map(str, ns))}: a power law needs >= 2 values of N")


def check(ctx: Context) -> None:
    """What the declared ranges cannot say, before any work (a ``UsageError`` naming the bad value)."""
    p = params(ctx)
    thresholds_of(ctx)
    train_only_of(ctx)
    if "ode_ns" in ctx.overrides and len(p.ode_ns) < 2:
        raise UsageError(f"--ns {','.join(map(str, p.ode_ns))}: expected >= 2 values of N, each >= 2")
    if "sgd_ns" in ctx.overrides:
        check_sgd_ns(p.sgd_ns, p.sgd_dim)
    if "pythia" in ctx.parts:
        checkpoints_of(ctx)
        pythia_threshold_of(ctx)


# ------------------------------------------------------------------------------------------- parts


def part_demo(ctx: Context) -> PartResult:
    """The foundation demo: train the 2-layer attention-only model on periodic random tokens, find its circuit."""
    c = runs.DemoConfig(steps=params(ctx).demo_steps, seed=ctx.seed)
    trained = runs.run_demo(c, ctx.run_dir("demo"), ctx.out, device=ctx.device, progress=ctx.progress)
    final = trained.results["final"]
    ctx.say(
        f"induction accuracy {final['accuracy']:.3f} (chance {1 / c.d_vocab:.3f}); L0 previous-token attention "
        f"{final['attention.L0_previous_token']:.2f}, L1 induction attention {final['attention.L1_induction']:.2f}"
    )
    footer = f"{c.steps} steps, d_model {c.d_model}, vocabulary {c.d_vocab}"
    return PartResult(read_results(R.DemoResults, trained.results), figures.demo_figures(trained), footer=footer)


def part_exact(ctx: Context) -> PartResult:
    """The exact checks: closed form vs matrix model, TL vs reference (forward, gradients), Theorem 1 orbit."""
    r = runs.run_exact(ctx.seed)
    ctx.say(
        f"closed form {r['max_closed_form_gap']:.1e}, TL vs reference {r['max_tl_gap']:.1e}, "
        f"orbit residual {r['max_orbit_residual']:.1e}"
    )
    return PartResult(read_results(R.ExactResults, r))


def part_ode(ctx: Context) -> PartResult:
    """Fig 5 from the gradient-flow ODE of the 3-parameter model."""
    p = params(ctx)
    ns = p.ode_ns
    fit_ns = list(ns[-3:]) if "ode_ns" in ctx.overrides else [n for n in p.ode_fit_ns if n in ns]
    r = runs.run_ode(ns, fit_ns, thresholds_of(ctx))
    ctx.say(f"t_ICL exponent {r['exponent_t_icl']:.3f} on N={fit_ns}; order γ<β<α: {r['order_gamma_beta_alpha']}")
    return PartResult(read_results(R.OdeResults, r), figures.ode_figures(r))


def part_disentangled(ctx: Context) -> PartResult:
    """Figs 3 and 4 (and 15, 16 in the paper preset): SGD on all weights vs only the chosen pseudo-parameters."""
    p = params(ctx)
    plan = runs.disentangled_runs(p.disentangled, p.extra_trajectories, ctx.seed)
    trained = runs.run_disentangled(
        plan, train_only_of(ctx), thresholds_of(ctx), ctx.run_dir, device=ctx.device, progress=ctx.progress
    )
    s = trained.results["summary"]
    ctx.say(
        f"loss {s['first_loss']:.3f} -> {s['final_loss']:.3f}; top 3 {s['top3']}; "
        f"only-run loss {s['final_loss_only']:.3f}"
    )
    return PartResult(read_results(R.DisentangledResults, trained.results), figures.disentangled_figures(plan, trained))


def part_weights(ctx: Context) -> PartResult:
    """Figs 6–14: the weights after a few numbers of SGD steps (D = 16, lr 1, B = 512, App. C)."""
    p = params(ctx)
    trained = runs.run_weights(p, ctx.seed, ctx.run_dir, device=ctx.device, progress=ctx.progress)
    return PartResult(read_results(R.WeightsResults, trained.results), figures.weights_figures(p, trained))


def part_standard(ctx: Context) -> PartResult:
    """Figs 2 and 17: the 2-layer attention-only transformer on Task A; head roles; interpretable matrices."""
    p = params(ctx)
    sizes = p.standard
    run = runs.StandardRun(
        d_model=sizes.d_model,
        batch_size=sizes.batch_size,
        steps=sizes.steps,
        eval_every=sizes.eval_every,
        lr=sizes.lr,
        n_pairs=p.standard_n_pairs,
        seed=ctx.seed,
    )
    trained = runs.run_standard(run, ctx.run_dir("standard"), device=ctx.device, progress=ctx.progress)
    final, roles = trained.results["final"], trained.results["role_scores"]
    ctx.say(
        f"test NLL {final['test_loss']:.3f}, query->label attention {final['L1_query_to_label']:.2f}, "
        f"prev-token L0 {roles['L0_previous_token']:.2f}, induction L1 {roles['L1_induction']:.2f}"
    )
    return PartResult(read_results(R.StandardResults, trained.results), figures.standard_figures(trained))


def part_sgd_scaling(ctx: Context) -> PartResult:
    """t_ICL vs N from SGD on the matrix model (orthonormal data, query = last pair, ‖y − z‖²): App. F's protocol
    (gradients projected on α₃, β₂, γ₃) and full training of every weight, several seeds."""
    p = params(ctx)
    seeds = [ctx.seed + k for k in range(p.sgd_seeds)]
    r = runs.run_sgd_scaling(p, seeds, thresholds_of(ctx), ctx.run_dir, device=ctx.device, progress=ctx.progress)
    ctx.say(
        f"full-training exponents {[f'{k:.2f}' for k in r['exponents']['full']]}, App. F protocol "
        f"{[f'{k:.2f}' for k in r['exponents']['appendixF_span']]}, ODE {r['ode_exponent_same_ns']:.2f}"
    )
    return PartResult(read_results(R.SgdScalingResults, r), {"fig5_full_training.png": figures.sgd_scaling_figure(r)})


def part_pythia(ctx: Context) -> PartResult:
    """Head-role scores across checkpoints and the emergence step of the top induction / previous-token heads."""
    from analyses.papers.induction_heads.pretrained import DEFAULT_MODEL, run_pythia

    model = ctx.options.get("model") or DEFAULT_MODEL
    threshold = pythia_threshold_of(ctx)
    r = run_pythia(model, checkpoints_of(ctx), threshold, seed=ctx.seed, device=ctx.device, progress=ctx.progress)
    if isinstance(r, NotRun):
        ctx.say(f"pythia: not run ({r.why})")
        return PartResult(r)
    ind, prev = r["top_induction"], r["top_previous_token"]
    t_ind, t_prev = r["emergence_step"][ind], r["emergence_step"][prev]
    ctx.say(f"{ind} emerges at step {t_ind}, {prev} at step {t_prev} (threshold {threshold})")
    return PartResult(read_results(R.PythiaResults, r), {"pythia_head_roles_vs_step.png": figures.pythia_figure(r)})
