"""Train and measure: every run of ``python -m analyses.induction_emergence``, returning results dictionaries.

All training goes through the one trainer (``mechrecall.trainer.train``); no claims, no figures here.

- :func:`train_disentangled`: SGD on the disentangled transformer (App. C/D: Gaussian data, mean-reduced
  MSE; App. F: orthonormal data, query = last pair), all weights or only a chosen set of
  pseudo-parameters (gradients projected on their span, Fig. 4 bottom). Logs all 19 pseudo-parameters
  and the off-subspace residual every ``log_every`` steps.
- :func:`train_standard`: AdamW on the §2 model, Task A (App. E), with evaluation callbacks.
- One function per part: :func:`run_demo` (the 2-layer model on periodic random tokens and its circuit),
  :func:`run_exact` (closed form = matrix model, TL embedding = plain torch, Theorem 1's orbit),
  :func:`run_ode` (Fig 5 from the gradient-flow ODE), :func:`run_disentangled` (Figs 3, 4, 15, 16),
  :func:`run_weights` (Figs 6-14), :func:`run_standard` (Figs 2, 17) and :func:`run_sgd_scaling`
  (t_ICL vs N from full training). Each returns the part's results (the numbers its claims read) and, where
  figures need them, the trained weights.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from analyses.heads import head_roles
from analyses.ov import interpretable_qk_matrices
from analyses.papers.induction_heads.data import make_continuous_icl_batch, make_token_icl_batch
from analyses.papers.induction_heads.metrics import (
    APPENDIX_F,
    INDUCTION_PARAMS,
    PSEUDO_PARAMS,
    check_names,
    circuit_attention,
    closed_form_gaps,
    demo_layer_differences,
    emergence_times,
    fig2_contrasts,
    fit_power_law,
    induction_accuracy,
    joint_emergence_time,
    orbit_residual,
    project_gradients_to_span,
    pseudo_parameters,
    series_from_rows,
    standard_role_scores,
    subspace_residual,
    task_a_scores,
    tl_vs_reference,
)
from analyses.papers.induction_heads.models import (
    DisentangledTL,
    build_disentangled,
    demo_model,
    mse,
    standard_loss,
    standard_model,
    wrap_disentangled,
)
from analyses.papers.induction_heads.presets import EXTRA_TRAJECTORIES, DisentangledSizes, InductionPreset
from analyses.papers.induction_heads.theory import asymptotic_emergence_times, integrate_three_param
from mechrecall._tl import HookedTransformer
from mechrecall.batch import Batch
from mechrecall.checkpoint import load_model
from mechrecall.controls import untrained_controls
from mechrecall.sequences import induction_batch
from mechrecall.trainer import TrainConfig, TrainResult, latest_checkpoint, train
from mechrecall.typed import NotRun


@dataclass(frozen=True)
class DisentangledRun:
    """One SGD run of the disentangled transformer."""

    dim: int = 16
    n_pairs: int = 8
    batch_size: int = 512
    lr: float = 1.0
    steps: int = 100
    data: str = "gaussian"  # "gaussian" (eq. 5) | "orthonormal" (Assumption 7)
    query: str = "uniform"  # "uniform" (eq. 5) | "last" (Assumption 8)
    loss: str = "mean"  # "mean": F.mse_loss | "sum": ‖y − z‖² per sequence
    variance: float = 1.0  # of the Gaussian coordinates
    trainable: tuple[str, ...] | None = None  # None: every weight; else only these pseudo-parameters
    exclude_self: bool = True
    init_std: float = 0.0
    log_every: int = 5
    snapshot_steps: tuple[int, ...] = ()  # also keep the full weights at these steps (Figs. 6–14)
    seed: int = 0

    def validate(self) -> None:
        if self.data == "orthonormal" and self.n_pairs > self.dim // 2:
            raise ValueError(f"n_pairs={self.n_pairs} > dim/2 = {self.dim // 2}: orthonormal data needs D >= 2N")
        if self.trainable is not None:
            check_names(self.trainable)
        for name in ("batch_size", "steps", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected >= 1")


@dataclass
class DisentangledResult:
    model: DisentangledTL
    history: list[dict]  # rows: step, loss (train, this step), 19 pseudo-parameters, residual
    train_loss: list[dict]
    snapshots: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    config: dict


def disentangled_batch_fn(run: DisentangledRun) -> Callable[[int, torch.Generator], Batch]:
    def batch_fn(step: int, gen: torch.Generator) -> Batch:
        X, y, q = make_continuous_icl_batch(
            run.batch_size, run.n_pairs, run.dim, query=run.query, dist=run.data, variance=run.variance, generator=gen
        )
        return Batch(X, y, extras={"query_index": q})

    return batch_fn


def train_disentangled(
    run: DisentangledRun, *, out_dir: str | Path | None = None, progress: bool = False, device: str | None = None
) -> DisentangledResult:
    """SGD (no momentum, no weight decay) from zero init; see :class:`DisentangledRun`."""
    run.validate()
    dtl = build_disentangled(run.dim, run.n_pairs, exclude_self=run.exclude_self, init_std=run.init_std, seed=run.seed)
    if device:
        dtl.model.to(device)
    handles = project_gradients_to_span(dtl, run.trainable) if run.trainable is not None else []
    weights_log: list[tuple[Tensor, Tensor, Tensor]] = []

    def probe(model: HookedTransformer) -> dict[str, float]:
        W = wrap_disentangled(model).weights()
        if run.snapshot_steps:
            weights_log.append(W)
        row = pseudo_parameters(*W)
        row["residual"] = subspace_residual(*W)
        return row

    tc = TrainConfig(
        steps=run.steps,
        optimizer="sgd",
        lr=run.lr,
        momentum=0.0,
        weight_decay=0.0,
        eval_every=run.log_every,
        eval_steps=tuple(run.snapshot_steps),
        seed=run.seed,
        progress=progress,
        checkpoint_every=max(run.steps // 4, 1) if out_dir else 0,
    )

    def loss_fn(model: HookedTransformer, batch: Batch) -> torch.Tensor:
        return mse(dtl.forward(batch.tokens), batch.targets, run.loss)

    try:
        result: TrainResult = train(
            dtl.model, disentangled_batch_fn(run), tc, loss_fn=loss_fn, evals={"pp": probe}, out_dir=out_dir
        )
    finally:
        for h in handles:
            h.remove()
    # The probe ran once per eval row of this invocation (the last rows, after a resume).
    logged = result.history["eval"][len(result.history["eval"]) - len(weights_log) :]
    snapshots = {r["step"]: W for r, W in zip(logged, weights_log) if r["step"] in run.snapshot_steps}
    rows = []
    train_loss = {r["step"]: r["loss"] for r in result.history["train"]}
    for r in result.history["eval"]:
        row = {"step": r["step"], "loss": train_loss.get(r["step"])}
        row.update({k.removeprefix("pp."): v for k, v in r.items() if k.startswith("pp.")})
        rows.append(row)
    return DisentangledResult(dtl, rows, result.history["train"], snapshots, asdict(run))


# ------------------------------------------------------------------------------------------- standard model


@dataclass(frozen=True)
class StandardRun:
    """App. E: AdamW(lr 1e-3, weight decay 0.01), 512 sequences per step, 300 steps, D = 2048."""

    d_model: int = 2048
    n_pairs: int = 8
    vocab: int = 32
    block: int = 32
    batch_size: int = 512
    steps: int = 300
    lr: float = 1e-3
    weight_decay: float = 0.01
    eval_every: int = 25
    seed: int = 0

    def validate(self) -> None:
        if 2 * self.n_pairs + 1 > self.block:
            raise ValueError(
                f"n_pairs={self.n_pairs}: the sequence 2N+1 = {2 * self.n_pairs + 1} is longer than "
                f"n_ctx = {self.block}"
            )
        if 2 * self.n_pairs > self.vocab:
            raise ValueError(
                f"n_pairs={self.n_pairs}: 2N = {2 * self.n_pairs} distinct tokens exceed vocab={self.vocab}"
            )


def train_standard(
    run: StandardRun,
    *,
    evals: Mapping[str, Callable] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = False,
    device: str | None = None,
) -> TrainResult:
    """Train the §2 model on Task A with random position offsets; loss on the query position only."""
    run.validate()
    model = standard_model(run.d_model, run.block, run.vocab, seed=run.seed)
    if device:
        model.to(device)

    def batch_fn(step: int, gen: torch.Generator) -> Batch:
        return make_token_icl_batch(run.batch_size, run.n_pairs, run.vocab, run.block, True, gen).as_batch()

    tc = TrainConfig(
        steps=run.steps,
        optimizer="adamw",
        lr=run.lr,
        weight_decay=run.weight_decay,
        eval_every=run.eval_every,
        seed=run.seed,
        progress=progress,
        checkpoint_every=max(run.steps // 4, 1) if out_dir else 0,
    )
    return train(model, batch_fn, tc, loss_fn=standard_loss, evals=evals, out_dir=out_dir)


def _on(model: HookedTransformer, device: str | torch.device) -> HookedTransformer:
    """``model`` on ``device``, moved only where it is elsewhere (``HookedTransformer.to`` prints a line)."""
    return model if model.W_E.device == torch.device(device) else model.to(device)


# ------------------------------------------------------------------------------------------- part demo


@dataclass(frozen=True)
class DemoConfig:
    """The demo: AdamW on random token sequences that repeat with a random period (``mechrecall.sequences``)."""

    d_vocab: int = 64
    seq_len: int = 32
    d_model: int = 64
    batch_size: int = 64
    steps: int = 1000
    lr: float = 3e-3
    eval_every: int = 25
    checkpoint_every: int = 100
    seed: int = 0


@dataclass
class Trained:
    """A run's results (the numbers its claims read) and what its figures draw (models, weights, tables)."""

    results: dict[str, Any]
    artefacts: dict[str, Any] = field(default_factory=dict)


def run_demo(c: DemoConfig, out_dir: Path, root: Path, *, device: str | None = None, progress: bool = False) -> Trained:
    """Train the demo model (resuming its checkpoints in ``out_dir``), reload the last checkpoint, score the heads."""
    model = demo_model(c.d_model, c.d_vocab, c.seq_len, seed=c.seed)
    if device:
        model.to(device)
    test = induction_batch(512, c.seq_len, c.d_vocab, torch.Generator().manual_seed(10_000 + c.seed))
    test = test.to(model.cfg.device)
    tc = TrainConfig(
        steps=c.steps,
        optimizer="adamw",
        lr=c.lr,
        loss_positions="mask",
        eval_every=c.eval_every,
        checkpoint_every=c.checkpoint_every,
        seed=c.seed,
        progress=progress,
    )
    started = time.perf_counter()
    result = train(
        model,
        lambda step, gen: induction_batch(c.batch_size, c.seq_len, c.d_vocab, gen),
        tc,
        evals={"accuracy": lambda m: induction_accuracy(m, test), "attention": lambda m: circuit_attention(m, test)},
        out_dir=out_dir,
    )
    seconds = time.perf_counter() - started
    checkpoint = latest_checkpoint(out_dir)
    assert checkpoint is not None  # the trainer wrote one (checkpoint_every <= steps)
    reloaded = load_model(checkpoint).to(model.cfg.device)
    roles = head_roles(model, seed=c.seed)
    results = {
        "config": asdict(c),
        "final": result.history["eval"][-1],
        "steps_to_90pct_accuracy": next((r["step"] for r in result.history["eval"] if r["accuracy"] >= 0.9), None),
        "chance_accuracy": 1 / c.d_vocab,
        "reloaded_checkpoint_accuracy": induction_accuracy(reloaded, test),
        "train_seconds_this_invocation": seconds,
        "resumed_from_step": result.resumed_from,
        "checkpoint": str(checkpoint.relative_to(root)),
        "head_roles": roles.to_dict(orient="records"),
        "layer_differences": demo_layer_differences(roles),  # the role's score in its layer minus in the other
        "at_init": untrained_controls(
            lambda s: _on(demo_model(c.d_model, c.d_vocab, c.seq_len, seed=s), model.cfg.device),
            lambda m: {"accuracy": induction_accuracy(m, test), **demo_layer_differences(head_roles(m, seed=c.seed))},
            c.seed,
        ),
        "history": result.history,
    }
    return Trained(results, {"model": model, "roles": roles, "test": test})


# ------------------------------------------------------------------------------------------- part exact

#: (α₃, β₂, γ₃) points of the closed-form check (App. B.3).
EXACT_POINTS = [(0.0, 0.0, 0.0), (0.3, 0.7, 0.9), (1.5, 3.0, 1.1), (-0.4, 2.0, 0.5)]


def run_exact(seed: int) -> dict[str, Any]:
    """The exact checks, float64: closed form vs matrix model (D = 16, N = 4), TL embedding vs plain torch in
    forward and gradients (D = 4, N = 3, both masks), Theorem 1's orbit residual (D = 4, N = 2)."""
    gaps = closed_form_gaps(EXACT_POINTS, seed)
    gaussian = closed_form_gaps(EXACT_POINTS, seed, data="gaussian")
    tl = {"strict" if ex else "standard": tl_vs_reference(seed + 1, ex) for ex in (True, False)}
    orbit = {
        m: orbit_residual(dim=4, n_pairs=2, n_base=4, seed=seed, exclude_self=(m == "strict"))
        for m in ("strict", "standard")
    }
    return {
        "closed_form_vs_matrix_max_abs": gaps,
        "points": EXACT_POINTS,
        "tl_vs_reference": tl,
        "orbit": orbit,
        "max_closed_form_gap": max(gaps),
        "max_tl_gap": max(max(v["forward"], v["grad"]) for v in tl.values()),
        "max_tl_grad_outside_slices": max(v["grad_outside_slices"] for v in tl.values()),
        "max_orbit_residual": max(o["symmetrized"] for o in orbit.values()),
        "control": {  # the same measurements on inputs that must break them
            "max_closed_form_gap": max(gaussian),  # Gaussian codes, not orthonormal (Assumption 7 broken)
            "max_orbit_residual": min(o["plain"] for o in orbit.values()),  # the gradient not symmetrised
        },
    }


# ------------------------------------------------------------------------------------------- part ode (Fig 5)

NAMES = INDUCTION_PARAMS  # alpha3, beta2, gamma3


def ode_row(n: int, thresholds: Mapping[str, float]) -> dict[str, Any]:
    """The emergence times of one N from the gradient-flow ODE (``thresholds`` and App. F's)."""
    traj = integrate_three_param(n, stop_at=max(thresholds.values()))
    times = emergence_times(traj.t, traj.series(), thresholds)
    appf = emergence_times(traj.t, traj.series(), APPENDIX_F)
    return {
        "N": n,
        **{f"T_{k}": v for k, v in times.items()},
        "t_icl": joint_emergence_time(traj.t, traj.series(), thresholds),
        **{f"T_{k}_appF": v for k, v in appf.items()},
        "asymptotic": asymptotic_emergence_times(n, dict(thresholds)),
    }


def run_ode(ns: Sequence[int], fit_ns: Sequence[int], thresholds: Mapping[str, float]) -> dict[str, Any]:
    """Fig 5: emergence times per N, the order γ₃ < β₂ < α₃, exponents fitted on ``fit_ns``, t_ICL / N²."""
    rows = [ode_row(n, thresholds) for n in ns]
    by_n = {r["N"]: r for r in rows}
    fits = {k: fit_power_law(fit_ns, [by_n[n][k] for n in fit_ns]) for k in ("t_icl", "T_gamma3", "T_beta2")}
    n_max = max(ns)
    asymptote = asymptotic_emergence_times(n_max, dict(thresholds))["alpha3"] / n_max**2
    return {
        "thresholds": dict(thresholds),
        "ns": list(ns),
        "fit_ns": list(fit_ns),
        "rows": rows,
        "order_gamma_beta_alpha": all(_in_order(r) for r in rows),
        "exponent_t_icl": fits["t_icl"][0],
        "prefactor_t_icl": fits["t_icl"][1],
        "exponent_T_gamma": fits["T_gamma3"][0],
        "exponent_T_beta": fits["T_beta2"][0],
        "N_max": n_max,
        "t_icl_over_N2_at_max": by_n[n_max]["t_icl"] / n_max**2,
        "asymptote_over_N2": asymptote,
        "t_icl_over_N2_gap": abs(by_n[n_max]["t_icl"] / n_max**2 / asymptote - 1),
        "control": {  # the same measurements where they must fail
            "order_gamma_beta_alpha": ode_order_with_frozen(ns, thresholds, ("beta2",)),  # no K-composition
            "exponent_t_icl": fits["T_gamma3"][0],  # the first phase, Θ(N): the fit must tell N from N²
            "exponent_T_gamma": fits["T_beta2"][0],
            "exponent_T_beta": fits["T_gamma3"][0],
            "t_icl_over_N2_at_max": by_n[min(ns)]["t_icl"] / min(ns) ** 2,  # far from the large-N limit
            "t_icl_over_N2_gap": abs(by_n[min(ns)]["t_icl"] / min(ns) ** 2 / asymptote - 1),
        },
    }


def ode_order_with_frozen(ns: Sequence[int], thresholds: Mapping[str, float], frozen: Sequence[str]) -> bool:
    """Whether γ₃ < β₂ < α₃ at every N of the ODE with ``frozen`` held at 0 (e.g. β₂: the K-composition removed)."""
    orders = []
    for n in ns:
        traj = integrate_three_param(n, stop_at=max(thresholds.values()), frozen=frozen)
        times = emergence_times(traj.t, traj.series(), thresholds)
        orders.append(_in_order({f"T_{k}": v for k, v in times.items()}))
    return all(orders)


# ------------------------------------------------------------------------------------------- part disentangled


def disentangled_runs(sizes: DisentangledSizes, extra: bool, seed: int) -> dict[str, DisentangledRun]:
    """The main run (with weight snapshots at a quarter, half and all of its steps) and, with ``extra``, those of
    Figs 15 and 16."""
    base = DisentangledRun(
        dim=sizes.dim,
        n_pairs=sizes.n_pairs,
        batch_size=sizes.batch_size,
        lr=sizes.lr,
        steps=sizes.steps,
        log_every=sizes.log_every,
        seed=seed,
    )
    base = replace(base, snapshot_steps=(base.steps // 4, base.steps // 2, base.steps))
    runs = {"main": base}
    if extra:
        runs.update({k: replace(base, dim=v["dim"], n_pairs=v["n_pairs"]) for k, v in EXTRA_TRAJECTORIES.items()})
    return runs


def run_disentangled(
    runs: Mapping[str, DisentangledRun],
    only: Sequence[str],
    thresholds: Mapping[str, float],
    run_dir: Callable[[str], Path],
    *,
    device: str | None = None,
    progress: bool = False,
) -> Trained:
    """SGD on every weight and on only ``only`` for each run; the main run's summary (loss, top pseudo-parameters,
    what stays exactly zero, emergence steps)."""
    results: dict[str, Any] = {}
    trained: dict[str, tuple[DisentangledResult, DisentangledResult]] = {}
    for key, run in runs.items():
        full = train_disentangled(run, out_dir=run_dir(f"disentangled_{key}_full"), progress=progress, device=device)
        three = train_disentangled(
            replace(run, trainable=tuple(only)),
            out_dir=run_dir(f"disentangled_{key}_only"),
            progress=progress,
            device=device,
        )
        results[key] = {
            "config": asdict(run),
            "trainable_only": list(only),
            "full": full.history,
            "only": three.history,
        }
        trained[key] = (full, three)
    results["summary"] = disentangled_summary(*trained["main"], only, thresholds)
    results["control"] = disentangled_controls(runs["main"], trained["main"], only, run_dir, device, progress)
    return Trained(results, {"trained": trained})


def disentangled_controls(
    run: DisentangledRun,
    trained: tuple[DisentangledResult, DisentangledResult],
    only: Sequence[str],
    run_dir: Callable[[str], Path],
    device: str | None,
    progress: bool,
) -> dict[str, Any]:
    """The claims' controls: the untrained model (zero init, step 0) and the restricted run without α₃ (no
    previous-token head: the mechanism the restricted run keeps, removed)."""
    full = trained[0]
    at_init = full.history[0]
    top3 = _top3(at_init)
    out: dict[str, Any] = {
        "final_over_first_loss": 1.0,  # the untrained model's loss is the first loss
        "top3_are_alpha3_beta2_gamma3": top3 is not None and set(top3) == set(INDUCTION_PARAMS),
    }
    without = tuple(n for n in only if n != "alpha3")
    if without and len(without) < len(only):
        res = train_disentangled(
            replace(run, trainable=without, snapshot_steps=()),
            out_dir=run_dir("disentangled_main_only_without_alpha3"),
            progress=progress,
            device=device,
        )
        out["only_over_all_final_loss"] = res.history[-1]["loss"] / max(full.history[-1]["loss"], 1e-12)
        out["trainable_without_alpha3"] = list(without)
    return out


def _top3(row: Mapping[str, float]) -> list[str] | None:
    """The three pseudo-parameters of largest |c| (``None`` where fewer than three are nonzero: no top three)."""
    top3 = sorted(PSEUDO_PARAMS, key=lambda n: -abs(row[n]))[:3]
    return top3 if all(row[n] != 0 for n in top3) else None


def disentangled_summary(
    full: DisentangledResult, three: DisentangledResult, only: Sequence[str], thresholds: Mapping[str, float]
) -> dict[str, Any]:
    """The numbers of Figs 3, 4: loss drop, the three largest |pseudo-parameters|, β₃..β₆, the restricted run."""
    last, last3 = full.history[-1], three.history[-1]
    top3 = _top3(last) or []
    loss0 = full.train_loss[0]["loss"]
    emergence = {}
    for label, res in (("full", full), ("only", three)):
        steps, series = series_from_rows(res.history, NAMES)
        for th_name, th in (("thresholds", thresholds), ("appendixF", APPENDIX_F)):
            emergence[f"{label}.{th_name}"] = {
                **emergence_times(steps, series, th),
                "t_icl": joint_emergence_time(steps, series, th),
            }
    return {
        "first_loss": loss0,
        "final_loss": last["loss"],
        "final_loss_only": last3["loss"],
        "top3": top3,
        "final_residual": last["residual"],
        "coefficients": last,
        "emergence_steps": emergence,
        "final_over_first_loss": last["loss"] / loss0,
        "top3_are_alpha3_beta2_gamma3": len(top3) == 3 and set(top3) == set(INDUCTION_PARAMS),
        "max_abs_beta3_to_beta6": max(abs(last[n]) for n in ("beta3", "beta4", "beta5", "beta6")),
        "only_run_max_abs_others": max(abs(last3[n]) for n in PSEUDO_PARAMS if n not in only),
        "only_over_all_final_loss": last3["loss"] / max(last["loss"], 1e-12),
    }


# ------------------------------------------------------------------------------------------- part weights


def run_weights(
    p: InductionPreset, seed: int, run_dir: Callable[[str], Path], *, device: str | None = None, progress: bool = False
) -> Trained:
    """Figs 6-14: one run per N of the preset, with its weights kept at the figures' steps (App. C)."""
    results: dict[str, Any] = {}
    snapshots: dict[int, dict[int, tuple[Tensor, Tensor, Tensor]]] = {}
    for fig in p.weight_figures:
        steps = max(fig.steps)
        run = DisentangledRun(
            dim=p.weights_dim,
            n_pairs=fig.n_pairs,
            batch_size=p.weights_batch_size,
            lr=1.0,
            steps=steps,
            log_every=steps // 20,
            snapshot_steps=fig.steps,
            seed=seed,
        )
        res = train_disentangled(run, out_dir=run_dir(f"weights_N{fig.n_pairs}"), progress=progress, device=device)
        results[f"N{fig.n_pairs}"] = {"config": asdict(run), "history": res.history}
        snapshots[fig.n_pairs] = res.snapshots
    return Trained(results, {"snapshots": snapshots})


# ------------------------------------------------------------------------------------------- part standard (§2)


def run_standard(run: StandardRun, out_dir: Path, *, device: str | None = None, progress: bool = False) -> Trained:
    """Train the §2 model on Task A; held-out scores, head roles and Fig 2's z-scored contrasts, and the same
    measurements on the untrained model of the run's seed (the claims' control) and on those of the five seeds after
    it (the bar of a contrast, ``mechrecall.controls.untrained_controls``)."""
    test = make_token_icl_batch(
        512, run.n_pairs, run.vocab, run.block, True, torch.Generator().manual_seed(10_000 + run.seed)
    )
    started = time.perf_counter()
    scores = task_a_scores(test, device or "cpu")
    result = train_standard(run, evals={"eval": scores}, out_dir=out_dir, progress=progress, device=device)
    seconds = time.perf_counter() - started
    model = result.model
    roles = head_roles(model, roles=("previous_token", "induction"), seed=run.seed)
    mats = interpretable_qk_matrices(model)
    role_scores = standard_role_scores(model, run.seed)

    def measure(m: HookedTransformer) -> dict[str, float]:
        return {**scores(m), **standard_role_scores(m, run.seed), **fig2_contrasts(interpretable_qk_matrices(m))}

    at_init = untrained_controls(
        lambda s: _on(standard_model(run.d_model, run.block, run.vocab, seed=s), device or "cpu"), measure, run.seed
    )
    return Trained(
        {
            "config": asdict(run),
            "final": {k.removeprefix("eval."): v for k, v in result.history["eval"][-1].items()},
            "head_roles": roles.to_dict(orient="records"),
            "role_scores": {k: v for k, v in role_scores.items() if k.startswith("L")},
            "role_differences": {k: v for k, v in role_scores.items() if not k.startswith("L")},
            "fig2_contrasts": fig2_contrasts(mats),
            "at_init": at_init,
            "history": result.history,
            "train_seconds_this_invocation": seconds,
            "resumed_from_step": result.resumed_from,
        },
        {"matrices": mats},
    )


# ------------------------------------------------------------------------------------------- part sgd_scaling

#: Coefficient step λ/D of App. F (λ = 100, D = 256): the full-matrix SGD lr is η·D.
ETA_EFF = 100 / 256
VARIANTS = ("appendixF_span", "full")


def train_until_icl(
    run: DisentangledRun,
    thresholds: Mapping[str, float],
    out_dir: Path,
    max_time: float,
    *,
    device: str | None = None,
    progress: bool = False,
) -> tuple[DisentangledResult, list[float], dict[str, list[float]], float | None]:
    """Train in chunks (each call resumes the previous checkpoint) until t_ICL is reached or ``max_time``."""
    eta = run.lr / run.dim
    steps = max(10, math.ceil(0.5 * run.n_pairs**2 / eta))
    while True:
        res = train_disentangled(replace(run, steps=steps), out_dir=out_dir, progress=progress, device=device)
        times = [r["step"] * eta for r in res.history]
        series = {k: [r[k] for r in res.history] for k in NAMES}
        t_icl = joint_emergence_time(times, series, thresholds)
        if t_icl is not None or steps * eta >= max_time:
            return res, times, series, t_icl
        steps = min(math.ceil(steps * 1.6), math.ceil(max_time / eta))


def sgd_scaling_row(
    run: DisentangledRun,
    variant: str,
    t_ode: float,
    thresholds: Mapping[str, float],
    out_dir: Path,
    *,
    device: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """One (variant, seed, N): trained until t_ICL (or 4x the ODE's), its emergence times and losses."""
    res, times, series, t_icl = train_until_icl(run, thresholds, out_dir, 4 * t_ode, device=device, progress=progress)
    last = res.history[-1]
    return {
        "variant": variant,
        "seed": run.seed,
        "N": run.n_pairs,
        "steps": last["step"],
        **{f"T_{k}": v for k, v in emergence_times(times, series, thresholds).items()},
        "t_icl": t_icl,
        "t_icl_ode": t_ode,
        "final_loss": last["loss"],
        "max_loss": max(r["loss"] for r in res.train_loss),
        "final_residual": last["residual"],
        "final_coefficients": {k: last[k] for k in PSEUDO_PARAMS},
    }


def ode_t_icl(n: int, thresholds: Mapping[str, float]) -> float:
    """t_ICL of the gradient-flow ODE at ``N = n``."""
    traj = integrate_three_param(n, stop_at=max(thresholds.values()))
    t_icl = joint_emergence_time(traj.t, traj.series(), thresholds)
    if t_icl is None:
        raise RuntimeError(f"the ODE did not reach t_ICL at N={n} within its time span")
    return t_icl


def run_sgd_scaling(
    p: InductionPreset,
    seeds: Sequence[int],
    thresholds: Mapping[str, float],
    run_dir: Callable[[str], Path],
    *,
    device: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """t_ICL vs N from SGD on the matrix model (orthonormal data, query = last pair, ‖y − z‖²).

    Two protocols: App. F's (gradients projected on span{α₃, β₂, γ₃}; the loss is then the same for every
    orthonormal sample, so one run per N, batch 8) and full training of every weight, one run per seed."""
    ns, lr = p.sgd_ns, ETA_EFF * p.sgd_dim
    ode = {n: ode_t_icl(n, thresholds) for n in ns}
    rows = []
    for variant in VARIANTS:
        span = variant == "appendixF_span"
        for seed in seeds[:1] if span else seeds:
            for n in ns:
                run = DisentangledRun(
                    dim=p.sgd_dim,
                    n_pairs=n,
                    batch_size=8 if span else p.sgd_batch_size,
                    lr=lr,
                    steps=1,
                    data="orthonormal",
                    query="last",
                    loss="sum",
                    log_every=1,
                    trainable=INDUCTION_PARAMS if span else None,
                    seed=seed,
                )
                out = run_dir(f"sgd_scaling_{variant}_N{n}_seed{seed}")
                rows.append(sgd_scaling_row(run, variant, ode[n], thresholds, out, device=device, progress=progress))
    return sgd_scaling_summary(rows, p, seeds, thresholds, ode, lr)


def sgd_scaling_summary(
    rows: list[dict[str, Any]],
    p: InductionPreset,
    seeds: Sequence[int],
    thresholds: Mapping[str, float],
    ode: Mapping[int, float],
    lr: float,
) -> dict[str, Any]:
    """Per seed and variant the fitted exponent of t_ICL on N, the order γ₃ < β₂ < α₃, the App. F protocol's gap to
    the ODE; the numbers the claims read."""
    ns = list(p.sgd_ns)
    exps: dict[str, list[float]] = {v: [] for v in VARIANTS}
    gamma_exps: dict[str, list[float]] = {v: [] for v in VARIANTS}  # the controls: T_γ is Θ(N), not N²
    orders: list[bool] = []
    reversed_orders: list[bool] = []
    for variant in VARIANTS:
        for seed in seeds:
            mine = [r for r in rows if r["seed"] == seed and r["variant"] == variant]
            for key, out in (("t_icl", exps), ("T_gamma3", gamma_exps)):
                if mine and all(r[key] is not None for r in mine):
                    out[variant].append(fit_power_law([r["N"] for r in mine], [r[key] for r in mine])[0])
            if variant == "full" and mine:
                orders.append(all(_in_order(r) for r in mine))
                reversed_orders.append(all(_in_order(r, reverse=True) for r in mine))
    span = [r for r in rows if r["variant"] == "appendixF_span"]
    full_rows = [r for r in rows if r["variant"] == "full"]
    full_k = exps["full"]
    not_reached = NotRun(not_run="t_ICL was not reached within 4x the ODE's time for some N")
    return {
        "dim": p.sgd_dim,
        "batch_size": p.sgd_batch_size,
        "ns": ns,
        "seeds": list(seeds),
        "thresholds": dict(thresholds),
        "eta_eff": ETA_EFF,
        "lr": lr,
        "rows": rows,
        "exponents": exps,
        "ode_exponent_same_ns": fit_power_law(ns, [ode[n] for n in ns])[0],
        "ode_t_icl": {str(n): ode[n] for n in ns},
        "mean_exponent_full": statistics.fmean(full_k) if full_k else not_reached,
        "spread_exponent_full": [min(full_k), max(full_k)] if full_k else None,
        "exponent_appendixF": exps["appendixF_span"][0] if exps["appendixF_span"] else None,
        "appendixF_max_gap_to_ode": max(
            abs(r["t_icl"] / r["t_icl_ode"] - 1) if r["t_icl"] else float("inf") for r in span
        ),
        "full_max_loss": max(r["max_loss"] for r in full_rows) if full_rows else float("nan"),
        "order_fraction_full": sum(orders) / len(orders) if orders else None,
        "control": {
            "mean_exponent_full": statistics.fmean(gamma_exps["full"]) if gamma_exps["full"] else None,
            "exponent_appendixF": gamma_exps["appendixF_span"][0] if gamma_exps["appendixF_span"] else None,
            "order_fraction_full": sum(reversed_orders) / len(reversed_orders) if reversed_orders else None,
        },
    }


def _in_order(r: Mapping[str, Any], reverse: bool = False) -> bool:
    """Whether ``T_gamma3 < T_beta2 < T_alpha3`` (``reverse``: ``T_alpha3 < T_beta2 < T_gamma3``), all reached."""
    times = (r["T_gamma3"], r["T_beta2"], r["T_alpha3"])
    if None in times:
        return False
    first, second, third = reversed(times) if reverse else times
    return first < second < third
