"""Train and measure the noisy in-context-recall models (§3, App. B, G, J): functions returning results dicts.

config (``RunConfig``: the typed preset with the options applied, α, the data preset, the optimiser) → data
(``data.recall``) → model (``models.py``) → train (the one trainer, with the measurements of ``metrics.py`` as
eval callbacks) → a results dict holding every number a claim of ``claims.py`` reads. No claims, no figures here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Float

from analyses.papers.distributional.data.recall import (
    MULTI_TRIGGERS,
    NoisyICLConfig,
    noisy_icl_batch_fn,
    sample_noisy_icl,
    sample_synthetic_ioi,
)
from analyses.papers.distributional.metrics import (
    ff_logits,
    ff_noise_margin,
    interventions,
    ioi_counting,
    memory_recall_accuracy,
    metrics_under_interventions,
    ov_memory_matrix,
    previous_token_score,
    qk_diagonal_wins,
    qk_trigger_margin,
    qk_trigger_matching,
    recall_metrics,
    rho_sweep,
    trigger_successor_attention,
)
from analyses.papers.distributional.models import FF_VARIANTS, two_layer_model
from analyses.papers.distributional.presets import NOISY_ICL_PRESETS, NoisyICLPreset
from mechrecall._tl import HookedTransformer, load_tl_state_dict, tl_state_dict
from mechrecall.batch import Batch
from mechrecall.controls import untrained_controls
from mechrecall.trainer import TrainConfig, train
from mechrecall.typed import NotRun

Sampler = Callable[..., Batch]
History = Mapping[str, list[dict[str, Any]]]
SIZE_FIELDS = ("d_model", "seq_len", "batch", "d_mlp", "steps")  # the fields the IOI runs take from ``Preset.ioi``


@dataclass(frozen=True)
class RunConfig:
    """Everything one training run depends on: the sizes (a typed preset, options applied) and the optimiser."""

    sizes: NoisyICLPreset = NOISY_ICL_PRESETS["smoke"]
    data_preset: str = "official_code"
    alpha: float = 0.5
    seed: int = 0
    optimizer: str = "sgd"
    lr: float = 0.03
    momentum: float = 0.9
    weight_decay: float = 1e-4
    device: str | None = None

    def footer(self) -> str:
        s = self.sizes
        return (
            f"{s.steps} steps, d = {s.d_model}, T = {s.seq_len}, batch {s.batch}, d_mlp {s.d_mlp}, "
            f"α = {self.alpha}, {self.data_preset} data"
        )


def ioi_config(rc: RunConfig, given: Mapping[str, Any]) -> RunConfig:
    """The IOI runs' configuration: the preset's IOI sizes (``Preset.ioi``) unless ``given`` on the command line
    (``given``: option values by preset field, ``None`` = not given)."""
    sizes = rc.sizes.ioi
    if sizes is None:
        return rc
    chosen = {k: getattr(rc.sizes, k) if given.get(k) is not None else getattr(sizes, k) for k in SIZE_FIELDS}
    return dataclasses.replace(rc, sizes=dataclasses.replace(rc.sizes, **chosen))


def eval_steps(steps: int, sparse: bool = False) -> tuple[int, ...]:
    """Every step below 20, every 10th below 200, every 50th after. ``sparse``: every step up to 10 (the claims
    on the first steps need them), every 20th below 200, every 100th after, and the last."""
    if sparse:
        return tuple(
            s for s in range(1, steps + 1) if s <= 10 or (s < 200 and s % 20 == 0) or s % 100 == 0 or s == steps
        )
    return tuple(s for s in range(1, steps + 1) if s < 20 or (s < 200 and s % 10 == 0) or s % 50 == 0)


# ----------------------------------------------------------------------------------- one training run


def data_config(rc: RunConfig, **overrides: Any) -> NoisyICLConfig:
    """The data of a run: the data preset at the run's T and α (``overrides``: e.g. five triggers)."""
    return NoisyICLConfig.preset(rc.data_preset, seq_len=rc.sizes.seq_len, alpha=rc.alpha, **overrides)


def evaluator(
    model: HookedTransformer,
    data: NoisyICLConfig,
    rc: RunConfig,
    sampler: Sampler = sample_noisy_icl,
    rhos: Sequence[float] = (0.1, 0.2),
) -> tuple[Callable[[HookedTransformer], dict[str, float]], Batch, Batch]:
    """The eval callback: metrics under every intervention on clean data, FF margin, attention, p(τ) on noisy data."""

    def gen(k: int) -> torch.Generator:  # fixed test sets
        return torch.Generator().manual_seed(10_000 + 100 * rc.seed + k)

    clean = sampler(data, rc.sizes.n_test, gen(0), alpha=0.0).to(model.cfg.device)
    noisy = sampler(data, rc.sizes.n_test, gen(1)).to(model.cfg.device)
    edits = interventions(model, rhos)
    noise = data.tau

    def evaluate(m: HookedTransformer) -> dict[str, float]:
        row = metrics_under_interventions(m, clean, noise, edits)
        row["noisy.p_noise"] = recall_metrics(m, noisy, noise)["p_noise"]
        if m.cfg.n_layers >= 2:
            attention = trigger_successor_attention(m, noisy, layer=m.cfg.n_layers - 1)
            row.update({f"attn_last.{k}": v for k, v in attention.items()})
        if any(k.startswith("drop_F") for k in edits):
            row["ff_margin"] = ff_noise_margin(m, noise, data.triggers)
        return row

    return evaluate, clean, noisy


def _train_config(rc: RunConfig, steps: int, progress: bool) -> TrainConfig:
    return TrainConfig(
        steps=steps,
        optimizer=rc.optimizer,
        lr=rc.lr if rc.optimizer == "sgd" else 3e-3,
        momentum=rc.momentum,
        weight_decay=rc.weight_decay,
        betas=(0.9, 0.99),
        loss_positions="mask",
        eval_steps=eval_steps(steps, rc.sizes.sparse_evals),
        checkpoint_every=max(1, steps // 4),
        keep_checkpoints=1,
        seed=rc.seed,
        progress=progress,
    )


def train_run(
    run_dir: Path,
    rc: RunConfig,
    *,
    ff: Sequence[str] = ("mlp", "mlp"),
    data: NoisyICLConfig | None = None,
    sampler: Sampler = sample_noisy_icl,
    steps: int | None = None,
    init_from: HookedTransformer | None = None,
    rhos: Sequence[float] = (0.1, 0.2),
    progress: bool = True,
) -> dict[str, Any]:
    """Train one model (resuming from ``run_dir``) and return its model, history and test batches."""
    data = data or data_config(rc)
    s = rc.sizes
    model = untrained_model(rc, data, ff)
    if init_from is not None:
        load_tl_state_dict(model, tl_state_dict(init_from))
    evaluate, clean, noisy = evaluator(model, data, rc, sampler, rhos)
    tc = _train_config(rc, steps or s.steps, progress)
    # drawn on the model's device (the CPU draws with the trainer's generator itself: same numbers as before)
    device = next(model.parameters()).device
    batch_fn = noisy_icl_batch_fn(
        data,
        s.batch,
        device=None if device.type == "cpu" else device,
        task="recall" if sampler is sample_noisy_icl else "ioi",
    )
    started = time.perf_counter()
    result = train(model, batch_fn, tc, evals={"test": evaluate}, out_dir=run_dir)
    return {
        "model": model,
        "history": result.history,
        "clean": clean,
        "noisy": noisy,
        "data": data,
        "seconds": time.perf_counter() - started,
        "resumed_from": result.resumed_from,
    }


def series(history: History, key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of the test metric ``key`` over training."""
    rows = [r for r in history["eval"] if f"test.{key}" in r]
    return [r["step"] for r in rows], [r[f"test.{key}"] for r in rows]


def final(history: History) -> dict[str, float]:
    """The last evaluation's test metrics (``test.`` dropped)."""
    return {k.removeprefix("test."): v for k, v in history["eval"][-1].items() if k != "step"}


def first_step(history: History, key: str, predicate: Callable[[float], bool]) -> int | None:
    """The first step (> 0) where ``predicate(test metric key)`` holds, or ``None``."""
    steps, values = series(history, key)
    return next((s for s, v in zip(steps, values) if s > 0 and predicate(v)), None)


def attention_ratio(last: Mapping[str, float]) -> float:
    """Layer-2 attention mass on ``[q, ȳ]`` over that on ``[q, τ]`` (Fig 4)."""
    return last["attn_last.on_correct"] / max(last["attn_last.on_noise"], 1e-9)


def attention_noise_share(last: Mapping[str, float]) -> float:
    """Layer-2 attention mass on ``[q, τ]`` over that on ``[q, ȳ]`` and ``[q, τ]`` together (Fig 4: attention
    "avoids" the noise, §3.2 "only focused on the correct tokens"): ``1 / (1 + attention_ratio)``, ≈ 0 when the
    noise is avoided, ≈ α when both kinds of key are attended alike."""
    on_correct, on_noise = last["attn_last.on_correct"], last["attn_last.on_noise"]
    return on_noise / max(on_correct + on_noise, 1e-9)


# ----------------------------------------------------------------------------------- the parts' measurements


def measure_main(run: Mapping[str, Any], rc: RunConfig) -> dict[str, Any]:
    """Figs 3, 4, 7, 8 (left), 9 (left), 10: the MLP/MLP model's numbers after training."""
    model, history, data, noisy = run["model"], run["history"], run["data"], run["noisy"]
    last = final(history)
    readouts = {
        "previous_token_score_L1": previous_token_score(model, noisy.tokens),
        "ov_L2_recall_accuracy_excluding_noise": memory_recall_accuracy(ov_memory_matrix(model, 1), [data.tau]),
        "ff2_argmax_is_noise_for_trigger": bool(ff_logits(model, 1, data.triggers).argmax(-1).eq(data.tau).all()),
        "qk_trigger_diag_minus_row_max": qk_trigger_margin(qk_trigger_matching(model), data.triggers[0]),
    }
    early = [v for s, v in zip(*series(history, "noisy.p_noise")) if 0 < s <= 10]
    return {
        "alpha": rc.alpha,
        "final": last,
        "readouts": readouts,
        "first_step_ff_margin_positive": first_step(history, "ff_margin", lambda v: v > 0),
        "max_p_noise_first_10_steps": max(early) if early else None,
        "p_correct_gain_drop_F2": last["drop_F2.p_correct"] - last["full.p_correct"],
        "attention_ratio": attention_ratio(last),
        "attention_noise_share": attention_noise_share(last),
        "control": main_controls(run, rc),
        "seconds": run["seconds"],
        "resumed_from": run["resumed_from"],
        "config": {**dataclasses.asdict(rc), "sizes": dataclasses.asdict(rc.sizes)},
    }


def untrained_model(
    rc: RunConfig, data: NoisyICLConfig, ff: Sequence[str] = ("mlp", "mlp"), seed: int | None = None
) -> HookedTransformer:
    """The model ``train_run`` starts from (step 0) for ``seed`` (default the run's): the claims' controls."""
    s = rc.sizes
    model = two_layer_model(
        d_vocab=data.d_vocab,
        n_ctx=s.seq_len,
        d_model=s.d_model,
        d_mlp=s.d_mlp,
        ff=ff,
        embed_init="torch_default" if rc.optimizer == "sgd" else "unit",
        seed=rc.seed if seed is None else seed,
    )
    return model.to(rc.device) if rc.device else model


def at_step(history: History, step: int) -> dict[str, float]:
    """The test metrics of the evaluation at ``step`` (``test.`` dropped); step 0 is the untrained model."""
    row = next(r for r in history["eval"] if r["step"] == step)
    return {k.removeprefix("test."): v for k, v in row.items() if k != "step"}


def main_controls(run: Mapping[str, Any], rc: RunConfig) -> dict[str, float]:
    """The main claims' controls, one per claim (keyed by the entry it controls): F₁ dropped instead of F₂ for
    the drop claims (and F₂ for "dropping F₁ keeps τ"); the untrained model (the run's step-0 evaluation) for p(τ),
    the attention ratio, early p(τ) and the FF-2 margin (its first positive step: 0 if positive at init, else
    never, written as the run's steps + 1); the previous-token score of the same seed's untrained model."""
    last, init = final(run["history"]), at_step(run["history"], 0)
    untrained = untrained_model(rc, run["data"])
    return {
        "p_noise_full": init["full.p_noise"],
        "p_correct_drop_F2": last["drop_F1.p_correct"],
        "p_noise_drop_F2": last["drop_F1.p_noise"],
        "p_correct_gain_drop_F2": last["drop_F1.p_correct"] - last["full.p_correct"],
        "p_noise_drop_F1": last["drop_F2.p_noise"],
        "first_step_ff_margin_positive": 0 if init["ff_margin"] > 0 else rc.sizes.steps + 1,
        "attention_ratio": attention_ratio(init),
        "attention_noise_share": attention_noise_share(init),
        "max_p_noise_first_10_steps": init["noisy.p_noise"],
        "previous_token_score_L1": previous_token_score(untrained, run["noisy"].tokens),
    }


#: Figs 11-13: the FF variants beside the MLP/MLP model.
FF_VARIANT_FIGURES = {"mlp_linear": "Fig 11", "linear_mlp": "Fig 12", "none": "Fig 13"}


def train_ff_variant(run_dir: Path, rc: RunConfig, variant: str, progress: bool) -> tuple[dict[str, Any], Any]:
    """Figs 11-13: one FF variant trained; its results (the drops' effects; ``at_init``: the run's own untrained
    model, the control, and the five untrained models of the seeds after the run's, the bar) and the run."""
    rhos = (0.01, 0.05) if variant == "none" else (0.1, 0.2)
    run = train_run(run_dir, rc, ff=FF_VARIANTS[variant], progress=progress, rhos=rhos)
    last = final(run["history"])
    out: dict[str, Any] = {"final": last, "seconds": run["seconds"], **variant_contrasts(last)}
    out["at_init"] = variant_at_init(run, rc, variant, rhos)
    if variant == "none":
        sweep = rho_sweep(run["model"], run["clean"], run["data"].tau, "attn_ov")
        out["ov1_rho_sweep"] = sweep
        out["best_rho"] = max(sweep, key=lambda r: r["p_correct"])["rho"]
        # the control: the same sweep on layer 2's W_V W_O, the in-context copy (Fig 7 right), not the noise store
        control = rho_sweep(run["model"], run["clean"], run["data"].tau, "attn_ov", layer=1)
        out["ov2_rho_sweep"] = control
        out["control"] = {"best_rho": max(control, key=lambda r: r["p_correct"])["rho"]}
    return out, run


def variant_contrasts(last: Mapping[str, float]) -> dict[str, float]:
    """Figs 11-13's contrasts from one evaluation's metrics (≈ 0 at init, either sign): the no-FF model's p(ȳ)
    lost at ρ = 0.01, else the drops' effects on the clean loss (in nats, and ``_rel``: over the full model's own
    clean loss, the numbers the claims judge) and on p(τ)."""
    if "OV1_rho0.01.p_correct" in last:
        return {"p_correct_full_minus_rho0.01": last["full.p_correct"] - last["OV1_rho0.01.p_correct"]}
    full = max(abs(last["full.loss"]), 1e-12)
    return {
        "drop_F2_loss_gain": last["full.loss"] - last["drop_F2.loss"],
        "loss_drop_F2_minus_drop_F1": last["drop_F2.loss"] - last["drop_F1.loss"],
        # the loss contrasts normalised by the full model's own clean loss (a relative change, unit-free)
        "drop_F2_loss_gain_rel": (last["full.loss"] - last["drop_F2.loss"]) / full,
        "loss_drop_F2_minus_drop_F1_rel": (last["drop_F2.loss"] - last["drop_F1.loss"]) / full,
        "p_noise_drop_F1_minus_full": last["drop_F1.p_noise"] - last["full.p_noise"],
    }


def variant_at_init(run: Mapping[str, Any], rc: RunConfig, variant: str, rhos: Sequence[float]) -> dict[str, Any]:
    """:func:`variant_contrasts` on the run's own untrained model (the control) and on those of the five seeds after
    the run's (the bar of ``above_untrained``; ``mechrecall.controls.untrained_controls``)."""
    data, clean = run["data"], run["clean"]

    def measure(m: HookedTransformer) -> dict[str, float]:
        return variant_contrasts(metrics_under_interventions(m, clean, data.tau, interventions(m, rhos)))

    return untrained_controls(lambda s: untrained_model(rc, data, FF_VARIANTS[variant], s), measure, rc.seed)


def train_finetune(runs: Callable[[str], Path], rc: RunConfig, progress: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Figs 4 (right), 8 (right): clean pre-training, then fine-tuning every weight on noisy data."""
    steps = rc.sizes.finetune_steps
    pre = train_run(runs("finetune_phase1_clean"), dataclasses.replace(rc, alpha=0.0), steps=steps, progress=progress)
    fine = train_run(
        runs("finetune_phase2_noisy"), rc, data=data_config(rc), steps=steps, init_from=pre["model"], progress=progress
    )
    history = fine["history"]
    step1 = next(r for r in history["eval"] if r["step"] == 1)
    last, before = final(history), at_step(history, 0)
    results = {
        "alpha": rc.alpha,
        "phase1_final": final(pre["history"]),
        "phase2_final": last,
        "phase2_step1_attention": {k: step1.get(f"test.attn_last.{k}") for k in ("on_correct", "on_noise")},
        "attention_ratio": attention_ratio(last),
        "attention_noise_share": attention_noise_share(last),
        # the controls: the clean-pretrained model before any fine-tuning step (phase 2's step-0 evaluation)
        "control": {
            "p_noise_full": before["full.p_noise"],
            "attention_ratio": attention_ratio(before),
            "attention_noise_share": attention_noise_share(before),
        },
    }
    return results, fine


def train_multi_trigger(
    run_dir: Path, rc: RunConfig, progress: bool
) -> tuple[dict[str, Any], Float[torch.Tensor, "d_vocab d_vocab"]]:
    """Fig 9 (right): five triggers; the QK matching is diagonal on each of them. Returns results and the matrix."""
    run = train_run(run_dir, rc, data=data_config(rc, triggers=MULTI_TRIGGERS), progress=progress)
    qk = qk_trigger_matching(run["model"])
    diag, off = qk_diagonal_wins(qk, MULTI_TRIGGERS)
    results = {
        "final": final(run["history"]),
        "qk_diag_triggers": diag.tolist(),
        "qk_max_offdiag_trigger_rows": off.tolist(),
        "qk_diagonal_count": int((diag > off).sum()),
        "control": {"qk_diagonal_count": untrained_diagonal_count(rc, run["data"])},
    }
    return results, qk


def untrained_diagonal_count(rc: RunConfig, data: NoisyICLConfig) -> int:
    """The control of Fig 9 (right): the number of triggers whose QK row peaks on the diagonal, untrained model."""
    with torch.no_grad():
        diag, off = qk_diagonal_wins(qk_trigger_matching(untrained_model(rc, data)), MULTI_TRIGGERS)
    return int((diag > off).sum())


def ioi_run_id(optimizer: str, n_layers: int) -> str:
    return f"{optimizer}_L{n_layers}"


def ioi_edit(optimizer: str, n_layers: int) -> str:
    """The edit of the last MLP a run of Figs 19 (SGD: dropped) / 20 (Adam: ρ = 0.01) reads."""
    return f"drop_F{n_layers}" if optimizer == "sgd" else f"F{n_layers}_rho0.01"


def ioi_measures(last: Mapping[str, float], optimizer: str, n_layers: int) -> dict[str, float]:
    """Figs 19-20's numbers of one IOI run: accuracy gain, noise removed, IO/S margin kept."""
    key = ioi_edit(optimizer, n_layers)
    return {
        "accuracy_gain": last[f"{key}.acc"] - last["full.acc"],
        "noise_removed": last[f"{key}.p_noise"] / max(last["full.p_noise"], 1e-12),
        "io_s_margin_change": last[f"{key}.io_s_margin"] - last["full.io_s_margin"],
    }


def ioi_controls(run: Mapping[str, Any], optimizer: str, n_layers: int) -> dict[str, float]:
    """The controls of one IOI run's claims, measured on its clean test set without training anything:

    ``io_over_s``: the untrained model's (step 0 of the same run; no claim reads it: the counting claim's control
    is the best no-counting baseline, ``metrics.ioi_counting``); ``accuracy_gain``: the run's
    edit applied to the first MLP (F₁) instead of the last; ``noise_removed``: the run's edit on the untrained
    model (step 0: no τ association to remove); ``io_s_margin_change``: the IO/S margin with every attention
    layer's output zeroed (no in-context information reaches the last position) minus the full model's (the scale
    of ``io_s_margin_kept``); ``io_s_margin_change_first_mlp``: the run's edit on the first MLP instead of the
    last, its IO/S margin minus the full model's (``io_s_margin_kept``'s control). Also,
    not a claim's control: ``noise_removed_first_mlp``, p(τ) with F₁ edited over the full model's."""
    from hooks import ablate, low_rank

    model, clean, tau = run["model"], run["clean"], run["data"].tau
    start, last, key = run["history"]["eval"][0], final(run["history"]), ioi_edit(optimizer, n_layers)
    if start["step"] != 0:
        raise ValueError(f"the IOI run's first evaluation is at step {start['step']}; its control needs step 0")
    rho = 0.0 if optimizer == "sgd" else 0.01
    with low_rank(model, 0, "mlp_in", rho):
        first = recall_metrics(model, clean, tau)
    with ablate(model, attn_layers=range(n_layers)):
        no_attention = recall_metrics(model, clean, tau)
    return {
        "io_over_s": start["test.full.io_over_s"],
        "accuracy_gain": first["acc"] - last["full.acc"],
        "noise_removed": start[f"test.{key}.p_noise"] / max(start["test.full.p_noise"], 1e-12),
        "noise_removed_first_mlp": first["p_noise"] / max(last["full.p_noise"], 1e-12),
        "io_s_margin_change": no_attention["io_s_margin"] - last["full.io_s_margin"],
        "io_s_margin_change_first_mlp": first["io_s_margin"] - last["full.io_s_margin"],
    }


def io_s_margin_kept(measures: Mapping[str, float], control: Mapping[str, float]) -> tuple[float, float]:
    """The IO/S margin change normalised by the margin the in-context reasoning carries: (|the last MLP's edit's
    change| / |the change of zeroing every attention layer|, the same for the edit on the first MLP instead, the
    claim's control). In logits the change was judged against a bar of a quarter of the attention change, a bar
    that was 0.004 logits where the in-context margin was small; the ratio has a scale of its own (1: the edit
    moves the margin as much as removing attention)."""
    scale = max(abs(control["io_s_margin_change"]), 1e-12)
    return abs(measures["io_s_margin_change"]) / scale, abs(control["io_s_margin_change_first_mlp"]) / scale


def train_ioi(
    runs: Callable[[str], Path], rc: RunConfig, optimizer: str, n_layers: int, progress: bool
) -> tuple[dict[str, Any] | NotRun, History | None]:
    """One synthetic-IOI run (App. J); a diverging one (Adam at L = 5 "fails to converge") is ``not run``
    (:class:`~mechrecall.typed.NotRun`, with the error under ``diverged``). Its
    claims' controls (``ioi_controls``) under ``control``; under ``counting``, "IO preferred over S" by where IO
    sits among the trigger's successors, beside the no-counting baselines on the same test set
    (``metrics.ioi_counting``), whose best is the counting claim's control."""
    try:
        run = train_run(
            runs(f"ioi_{ioi_run_id(optimizer, n_layers)}"),
            dataclasses.replace(rc, optimizer=optimizer),
            ff=("mlp",) * n_layers,
            sampler=sample_synthetic_ioi,
            rhos=(0.01,),
            progress=progress,
        )
    except FloatingPointError as exc:
        return NotRun.model_validate({"not_run": f"training diverged: {exc}", "diverged": str(exc)}), None
    last = final(run["history"])
    counting = ioi_counting(run["model"], run["clean"])  # ours and the no-counting baselines, on the same test set
    measures = {**ioi_measures(last, optimizer, n_layers), "counting_margin": counting["margin"]}
    control = {**ioi_controls(run, optimizer, n_layers), "counting_margin": counting["control"]}
    measures["io_s_margin_kept"], control["io_s_margin_kept"] = io_s_margin_kept(measures, control)
    return {**last, "measures": measures, "counting": counting, "control": control}, run["history"]
