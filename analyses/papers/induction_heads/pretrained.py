"""Beyond the paper: the same emergence on real training checkpoints (part ``pythia``): Pythia's, or the series of
the mini GPT-NeoX pretrained here (``python -m pretrained.mini``; its rows say so).

For every checkpoint of a Pythia training run (a hub name with ``--checkpoints``, or a local mirror
folder with ``step{N}/`` subfolders), ``analyses.heads.head_roles`` scores every layer x head for the
previous-token and induction roles (attention on repeated random tokens); the top heads of the last
checkpoint are then followed back through training, and the *same* estimator as for the toy runs
(``metrics.emergence_times``: first step at which a score reaches ``--pythia-threshold``) says when
they formed. Without weights here (no hub, no local mirror) the results are a ``NotRun`` marker with the reason (the
claims then read ``not run``).

The weight-based analyses (Fig 2's [E, P, OV·E, OV·P] matrices) do not apply to Pythia: it has rotary
positions (no ``W_pos``), LayerNorm and MLPs, so only the activation-based scores are used here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pretrained
from analyses.heads import head_roles
from analyses.papers.induction_heads.metrics import emergence_times
from mechrecall._tl import HookedTransformer
from mechrecall.typed import NotRun

DEFAULT_MODEL = "EleutherAI/pythia-70m"
#: Log-spaced Pythia steps (all exist on the hub as revisions ``step{N}``).
DEFAULT_CHECKPOINTS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 143000)
DEFAULT_THRESHOLD = 0.4
ROLES = ("previous_token", "induction")
TOP_K = 3

Grid = dict[str, list[list[float]]]  # role -> [layer][head] score


def local_steps(model: str) -> list[int] | None:
    """Steps of a local ``step{N}/`` mirror (None if ``model`` is not a folder)."""
    root = Path(model)
    if not root.is_dir():
        return None
    from pretrained._local import step_dirs

    return sorted(step_dirs(root))


def checkpoint_scores(
    model_name: str, steps: list[int], *, seed: int = 0, device: str | None = None, progress: bool = False
) -> tuple[dict[int, Grid], str]:
    """Every layer x head's previous-token and induction scores at each checkpoint, and whether Fig 2's weight-based
    matrices apply to the last one. Raises ``pretrained.PretrainedNotAvailableError`` without weights."""
    grids: dict[int, Grid] = {}
    weight_based = ""
    iterator: Any = steps
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(steps, desc="checkpoints", unit="ckpt")
    for step in iterator:
        model = pretrained.load(model_name, checkpoint=step, processing="raw", device=device or "cpu")
        table = head_roles(model, roles=ROLES, seed=seed)
        n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
        grid = {r: [[0.0] * n_heads for _ in range(n_layers)] for r in ROLES}
        for row in table.to_dict(orient="records"):
            grid[str(row["score"])][int(row["layer"])][int(row["head"])] = float(row["value"])
        grids[step] = grid
        if step == steps[-1]:
            weight_based = _weight_based_note(model)
        del model
    return grids, weight_based


def run_pythia(
    model_name: str,
    steps: list[int],
    threshold: float,
    *,
    seed: int = 0,
    device: str | None = None,
    progress: bool = False,
) -> dict[str, Any] | NotRun:
    """The part's results: scores per checkpoint, the top heads of the last one followed back through training,
    their emergence steps; :class:`~mechrecall.typed.NotRun` (``{"not_run": "no weights: ...", "model": ...,
    "threshold": ...}``) where the checkpoints cannot be loaded."""
    from pretrained.mini import measured_on

    head = {"model": model_name, "measured_on": measured_on(model_name), "checkpoints": steps, "threshold": threshold}
    try:
        grids, weight_based = checkpoint_scores(model_name, steps, seed=seed, device=device, progress=progress)
    except pretrained.PretrainedNotAvailableError as exc:
        return NotRun.model_validate({**head, "not_run": pretrained.no_weights(exc)})
    last = grids[steps[-1]]
    tops = {}
    for role in ROLES:
        flat = [(v, layer, h) for layer, row in enumerate(last[role]) for h, v in enumerate(row)]
        tops[role] = [(layer, h) for _, layer, h in sorted(flat, reverse=True)[:TOP_K]]
    series = {f"{role} L{l}H{h}": [grids[s][role][l][h] for s in steps] for role in ROLES for l, h in tops[role]}
    best = {role: [max(max(row) for row in grids[s][role]) for s in steps] for role in ROLES}
    every = {**series, **{f"max {r}": v for r, v in best.items()}}
    times = emergence_times(steps, every, dict.fromkeys(every, threshold))
    top_ind = f"induction L{tops['induction'][0][0]}H{tops['induction'][0][1]}"
    top_prev = f"previous_token L{tops['previous_token'][0][0]}H{tops['previous_token'][0][1]}"
    t_ind, t_prev = times[top_ind], times[top_prev]
    return {
        **head,
        "weight_based_fig2": weight_based,
        "scores": grids,
        "top_heads": tops,
        "series": series,
        "max_over_heads": best,
        "emergence_step": times,
        "top_induction": top_ind,
        "top_previous_token": top_prev,
        "induction_head_forms": series[top_ind][0] < threshold <= series[top_ind][-1],
        "previous_token_before_induction": t_ind is not None and t_prev is not None and t_prev <= t_ind,
        "final_induction_score": series[top_ind][-1],
        "control": {  # the first checkpoint (step 0 by default: the untrained model); the order reversed
            "induction_head_forms": best["induction"][0] >= threshold,  # an induction head there already
            "previous_token_before_induction": t_ind is not None and t_prev is not None and t_ind <= t_prev,
            "final_induction_score": best["induction"][0],
        },
    }


def _weight_based_note(model: HookedTransformer) -> str:
    """Whether Fig 2's weight-based matrices apply to this model, and if not, why (said in the results)."""
    from analyses.ov import NotApplicableError, interpretable_qk_matrices

    try:
        interpretable_qk_matrices(model)
    except NotApplicableError as exc:
        return f"not applicable: {exc}"
    return "applicable (learned positions, attention-only)"
