"""Beyond the paper: the same emergence on real training checkpoints (part ``pythia``).

For every checkpoint of a Pythia training run (a hub name with ``--checkpoints``, or a local mirror
folder with ``step{N}/`` subfolders), ``analyses.heads.head_roles`` scores every layer x head for the
previous-token and induction roles (attention on repeated random tokens); the top heads of the last
checkpoint are then followed back through training, and the *same* estimator as for the toy runs
(``emergence.emergence_times``: first step at which a score reaches ``--pythia-threshold``) says when
they formed. Without weights here (no hub, no local mirror) the part reports ``not run`` with the reason.

The weight-based analyses (Fig 2's [E, P, OV·E, OV·P] matrices) do not apply to Pythia: it has rotary
positions (no ``W_pos``), LayerNorm and MLPs, so only the activation-based scores are used here.
"""

from __future__ import annotations

from pathlib import Path

from analyses.papers.induction_heads import emergence as em
from mechrecall.claims import at_least, is_true
from mechrecall.errors import UsageError
from mechrecall.experiment import Context, PartResult

DEFAULT_MODEL = "EleutherAI/pythia-70m"
#: Log-spaced Pythia steps (all exist on the hub as revisions ``step{N}``).
DEFAULT_CHECKPOINTS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 143000)
ROLES = ("previous_token", "induction")
TOP_K = 3


def local_steps(model: str) -> list[int] | None:
    """Steps of a local ``step{N}/`` mirror (None if ``model`` is not a folder)."""
    root = Path(model)
    if not root.is_dir():
        return None
    from pretrained._local import step_dirs

    return sorted(step_dirs(root))


def checkpoints_of(ctx: Context) -> list[int]:
    """``--checkpoints`` (comma-separated steps) or the default: every step of a local mirror / the log-spaced list."""
    model = ctx.options.get("model") or DEFAULT_MODEL
    text = ctx.options.get("checkpoints")
    if text:
        try:
            steps = sorted({int(s) for s in str(text).split(",") if s.strip()})
        except ValueError:
            raise UsageError(
                f"--checkpoints {text!r}; expected comma-separated training steps like 0,1000,143000"
            ) from None
        if steps and min(steps) < 0:
            raise UsageError(f"--checkpoints {text!r}; expected non-negative training steps")
    else:
        local = local_steps(model)
        steps = local if local is not None else list(DEFAULT_CHECKPOINTS)
    if len(steps) < 2:
        raise UsageError(
            f"--checkpoints {text or ','.join(map(str, steps)) or '(none)'} for --model {model}: an "
            f"emergence time needs a series of at least 2 checkpoints, got {len(steps)}"
        )
    local = local_steps(model)
    if local is not None:
        missing = [s for s in steps if s not in local]
        if missing:
            raise UsageError(f"--checkpoints: {model} has no step{missing[0]}/ subfolder; available steps: {local}")
    return steps


def threshold_of(ctx: Context) -> float:
    value = ctx.options.get("pythia_threshold")
    value = 0.4 if value is None else value
    try:
        return em.check_thresholds({"--pythia-threshold": value})["--pythia-threshold"]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check(ctx: Context) -> None:
    checkpoints_of(ctx)
    threshold_of(ctx)


def part_pythia(ctx: Context) -> PartResult:
    """Head-role scores across checkpoints and the emergence step of the top induction / previous-token heads."""
    import pretrained
    from analyses.heads import head_roles

    model_name = ctx.options.get("model") or DEFAULT_MODEL
    steps = checkpoints_of(ctx)
    threshold = threshold_of(ctx)
    where = "extension (not in the paper): Olsson et al. 2022's phase change, on Pythia checkpoints"
    claim_specs = [
        (
            "induction_head_forms",
            "an induction head forms during training: its score is below the threshold at the "
            "first checkpoint and above it at the last",
            is_true(),
        ),
        (
            "previous_token_before_induction",
            "the top previous-token head reaches the threshold no later than the top "
            "induction head (K-composition needs it)",
            is_true(),
        ),
        ("final_induction_score", "induction score of the top head at the last checkpoint", at_least(threshold)),
    ]
    grids: dict[int, dict[str, list[list[float]]]] = {}
    try:
        iterator = steps
        if ctx.progress:
            from tqdm.auto import tqdm

            iterator = tqdm(steps, desc="checkpoints", unit="ckpt")
        for step in iterator:
            model = pretrained.load(model_name, checkpoint=step, processing="raw", device=ctx.device or "cpu")
            table = head_roles(model, roles=ROLES, seed=ctx.seed)
            n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
            grid = {r: [[0.0] * n_heads for _ in range(n_layers)] for r in ROLES}
            for row in table.to_dict(orient="records"):
                grid[row["score"]][int(row["layer"])][int(row["head"])] = float(row["value"])
            grids[step] = grid
            if step == steps[-1]:
                weight_based = _weight_based_note(model)
            del model
    except pretrained.PretrainedNotAvailableError as exc:
        reason = f"no weights: {exc}".splitlines()[0]
        ctx.say(f"pythia: not run ({reason})")
        claims = [
            ctx.claim("pythia", name, text, None, rule, where=where, reason=reason) for name, text, rule in claim_specs
        ]
        return PartResult({"model": model_name, "checkpoints": steps, "not_run": reason}, claims, {})

    last = grids[steps[-1]]
    tops = {}
    for role in ROLES:
        flat = [(v, l, h) for l, row in enumerate(last[role]) for h, v in enumerate(row)]
        tops[role] = [(l, h) for _, l, h in sorted(flat, reverse=True)[:TOP_K]]
    series = {f"{role} L{l}H{h}": [grids[s][role][l][h] for s in steps] for role in ROLES for l, h in tops[role]}
    best = {role: [max(max(row) for row in grids[s][role]) for s in steps] for role in ROLES}
    times = em.emergence_times(
        steps,
        {**series, **{f"max {r}": v for r, v in best.items()}},
        dict.fromkeys(list(series) + [f"max {r}" for r in ROLES], threshold),
    )
    top_ind = f"induction L{tops['induction'][0][0]}H{tops['induction'][0][1]}"
    top_prev = f"previous_token L{tops['previous_token'][0][0]}H{tops['previous_token'][0][1]}"
    t_ind, t_prev = times[top_ind], times[top_prev]
    forms = series[top_ind][0] < threshold <= series[top_ind][-1]
    order = t_ind is not None and t_prev is not None and t_prev <= t_ind
    results = {
        "model": model_name,
        "checkpoints": steps,
        "threshold": threshold,
        "weight_based_fig2": weight_based,
        "scores": grids,
        "top_heads": tops,
        "series": series,
        "max_over_heads": best,
        "emergence_step": times,
    }
    values = {
        "induction_head_forms": forms,
        "previous_token_before_induction": order,
        "final_induction_score": series[top_ind][-1],
    }
    notes = {
        "induction_head_forms": f"{top_ind}: {series[top_ind][0]:.3f} at step {steps[0]}, "
        f"{series[top_ind][-1]:.3f} at step {steps[-1]}; emerges at step {t_ind}",
        "previous_token_before_induction": f"{top_prev} at step {t_prev}, {top_ind} at step {t_ind}",
        "final_induction_score": f"threshold {threshold}",
    }
    claims = [
        ctx.claim("pythia", name, text, values[name], rule, where=where, note=notes[name])
        for name, text, rule in claim_specs
    ]
    from analyses.papers.induction_heads.figures import checkpoint_scores_figure

    fig = checkpoint_scores_figure(
        steps, series, times, f"head-role scores of the top heads across training ({Path(model_name).name})"
    )
    ctx.say(f"{top_ind} emerges at step {t_ind}, {top_prev} at step {t_prev} (threshold {threshold})")
    return PartResult(results, claims, {"pythia_head_roles_vs_step.png": fig})


def _weight_based_note(model) -> str:
    """Whether Fig 2's weight-based matrices apply to this model, and if not, why (said in the results)."""
    from analyses.ov import NotApplicableError, interpretable_qk_matrices

    try:
        interpretable_qk_matrices(model)
    except NotApplicableError as exc:
        return f"not applicable: {exc}"
    return "applicable (learned positions, attention-only)"
