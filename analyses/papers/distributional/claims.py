"""The claims of both experiments, as data (no torch here): each reads one entry of its part's results.

``NOISY_ICL_CLAIMS`` (``python -m analyses.noisy_icl``) and ``LASER_PYTHIA_CLAIMS`` (``python -m
analyses.laser_pythia``). Rules that depend on the training α read it from the results (``"alpha"``); a claim
whose note quotes a measured number (the closed form beside ours, an IOI run's accuracies) declares ``notes``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from analyses.papers.distributional.presets import PAPER_MODELS
from mechrecall.claims import ClaimSpec, Results, Rule, above_untrained, at_least, at_most, between, near


def _alpha_band(results: Results) -> Rule:
    alpha = results["alpha"]
    return between(alpha - 0.1, alpha + 0.1, partial=(alpha - 0.2, alpha + 0.2))


def _alpha(results: Results) -> float:
    return float(results["alpha"])


# ----------------------------------------------------------------------------------- noisy_icl

UNTRAINED = "the untrained model (step 0, same seed)"
DROP_F1 = "F₁ dropped instead of F₂ (same trained model)"


def _first_step_rule(results: Results) -> Rule:
    """≤ 10 (partial: ≤ 50, or the run's length if shorter): "never" is written as the run's steps + 1, which the
    partial band must not accept (at 25 steps ≤ 50 did)."""
    return at_most(10, partial=min(50, results["config"]["sizes"]["steps"]))


def _above_untrained(variant: str, entry: str, what: str) -> Callable[[Results], Rule]:
    """A contrast (≈ 0 at init, either sign) judged against the untrained ``variant`` models of ≥ 5 seeds."""
    return lambda r: above_untrained(r[variant]["at_init"]["init_values"][entry], what=what)


def _init_range(variant: str, entry: str) -> Callable[[Results], str]:
    def note(r: Results) -> str:
        values, seeds = r[variant]["at_init"]["init_values"][entry], r[variant]["at_init"]["seeds"]
        return f"untrained seeds {seeds[0]}–{seeds[-1]}: {min(values):.2g} … {max(values):.2g}"

    return note


MAIN = [
    ClaimSpec(
        "main.p_noise_full",
        "the full model predicts the noise token τ with probability ≈ α on clean test data",
        "final/full.p_noise",
        _alpha_band,
        paper=_alpha,
        where="Fig 3",
        note="the paper states ≈ α",
        control="control/p_noise_full",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "main.p_correct_drop_F2",
        "dropping F₂ (ρ = 0) makes the model predict the in-context token ȳ",
        "final/drop_F2.p_correct",
        at_least(0.9, partial=0.6),
        paper=0.98,
        where="Fig 3, §3",
        control="control/p_correct_drop_F2",
        control_is=DROP_F1,
    ),
    ClaimSpec(
        "main.p_noise_drop_F2",
        "dropping F₂ removes the noise token",
        "final/drop_F2.p_noise",
        at_most(0.05, partial=0.1),
        paper=0.0,
        where="Fig 3",
        control="control/p_noise_drop_F2",
        control_is=DROP_F1 + " (the untrained model's p(τ) ≈ 1/vocab would pass: it cannot be the control)",
    ),
    ClaimSpec(
        "main.p_correct_gain_drop_F2",
        "dropping F₂ raises p(ȳ) over the full model",
        "p_correct_gain_drop_F2",
        at_least(0.3, partial=0.1),
        where="Fig 3",
        control="control/p_correct_gain_drop_F2",
        control_is="the gain from dropping F₁ instead (p(ȳ | drop F₁) − p(ȳ | full))",
    ),
    ClaimSpec(
        "main.p_noise_drop_F1",
        "dropping F₁ instead does not remove the noise (p(τ | drop F₁) ≥ α/2)",
        "final/drop_F1.p_noise",
        lambda r: at_least(r["alpha"] / 2),
        where="Fig 10",
        control="control/p_noise_drop_F1",
        control_is="F₂ dropped instead of F₁: p(τ | drop F₂)",
    ),
    ClaimSpec(
        "main.ff_margin_first_step",
        "F₂ learns the trigger → τ association within the first steps (first step with a positive FF-2 margin)",
        "first_step_ff_margin_positive",
        _first_step_rule,
        where="Fig 3 right, Theorem 1",
        note="partial band capped at the run's length (never = steps + 1)",
        control="control/first_step_ff_margin_positive",
        control_is=UNTRAINED + ": 0 if its FF-2 margin is already positive, else never (the run's steps + 1)",
    ),
    ClaimSpec(
        "main.attention_correct_over_noise",
        "layer-2 attention from triggers attends to [q, ȳ] and avoids [q, τ] (ratio of attention masses)",
        "attention_ratio",
        at_least(3.0, partial=1.5),
        where="Fig 4",
        control="control/attention_ratio",
        control_is=UNTRAINED + " (≈ (1 − α)/α: as many [q, ȳ] as [q, τ] keys at α = 0.5)",
    ),
    ClaimSpec(
        "main.early_p_noise_noisy",
        "early in training the model predicts τ almost always on noisy data (max p(τ) in steps 1-10)",
        "max_p_noise_first_10_steps",
        at_least(0.8, partial=0.6),
        paper=1.0,
        where="Fig 8 left",
        control="control/max_p_noise_first_10_steps",
        control_is=UNTRAINED + ": p(τ) on the same noisy data",
    ),
    ClaimSpec(
        "main.previous_token_L1",
        "layer 1 is a previous-token head (attention on the previous token)",
        "readouts/previous_token_score_L1",
        at_least(0.5, partial=0.3),
        where="Fig 7 left",
        control="control/previous_token_score_L1",
        control_is=UNTRAINED,
    ),
]

FF_VARIANTS = [
    ClaimSpec(
        "ff_variants.mlp_linear_drop_F2_helps",
        "MLP/linear: dropping F₂ lowers the clean loss (full minus dropped)",
        "mlp_linear/drop_F2_loss_gain",
        _above_untrained("mlp_linear", "drop_F2_loss_gain", "full − dropped"),
        where="Fig 11",
        notes=_init_range("mlp_linear", "drop_F2_loss_gain"),
        control="mlp_linear/at_init/control/drop_F2_loss_gain",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.mlp_linear_drop_F1_better",
        "MLP/linear: dropping F₁ gives a lower clean loss than dropping F₂ (loss drop F₂ minus loss drop F₁)",
        "mlp_linear/loss_drop_F2_minus_drop_F1",
        _above_untrained("mlp_linear", "loss_drop_F2_minus_drop_F1", "drop F₂ − drop F₁"),
        where="Fig 11",
        notes=_init_range("mlp_linear", "loss_drop_F2_minus_drop_F1"),
        control="mlp_linear/at_init/control/loss_drop_F2_minus_drop_F1",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.linear_mlp_drop_F2_helps",
        "linear/MLP: dropping F₂ lowers the clean loss (full minus dropped)",
        "linear_mlp/drop_F2_loss_gain",
        _above_untrained("linear_mlp", "drop_F2_loss_gain", "full − dropped"),
        where="Fig 12",
        notes=_init_range("linear_mlp", "drop_F2_loss_gain"),
        control="linear_mlp/at_init/control/drop_F2_loss_gain",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.linear_mlp_drop_F1_more_noise",
        "linear/MLP: dropping F₁ gives more noise (p(τ | drop F₁) minus p(τ | full))",
        "linear_mlp/p_noise_drop_F1_minus_full",
        _above_untrained("linear_mlp", "p_noise_drop_F1_minus_full", "drop F₁ − full"),
        where="Fig 12",
        notes=_init_range("linear_mlp", "p_noise_drop_F1_minus_full"),
        control="linear_mlp/at_init/control/p_noise_drop_F1_minus_full",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.no_ff_best_rho",
        "no-FF model: a small-rank truncation of W¹_V W¹_O helps (the ρ with the highest p(ȳ))",
        "none/best_rho",
        between(0.02, 0.1),
        paper=0.05,
        where="Fig 13",
        control="none/control/best_rho",
        control_is="the same sweep on layer 2's W²_V W²_O (the in-context copy, not the noise store; Fig 7 right)",
    ),
    ClaimSpec(
        "ff_variants.no_ff_rho0.01_hurts",
        "no-FF model: ρ = 0.01 destroys performance (p(ȳ) of the full model minus at ρ = 0.01)",
        "none/p_correct_full_minus_rho0.01",
        _above_untrained("none", "p_correct_full_minus_rho0.01", "full − ρ = 0.01"),
        where="Fig 13",
        notes=_init_range("none", "p_correct_full_minus_rho0.01"),
        control="none/at_init/control/p_correct_full_minus_rho0.01",
        control_is=UNTRAINED,
    ),
]

PHASE1 = "the clean-pretrained model before fine-tuning (phase 2, step 0)"

FINETUNE = [
    ClaimSpec(
        "finetune.p_noise_full",
        "after noisy fine-tuning the full model predicts τ with probability ≈ α",
        "phase2_final/full.p_noise",
        _alpha_band,
        paper=_alpha,
        where="Fig 8 right",
        control="control/p_noise_full",
        control_is=PHASE1,
    ),
    ClaimSpec(
        "finetune.attention_correct_over_noise",
        "after fine-tuning, layer-2 attention still prefers [q, ȳ] over [q, τ] (ratio of attention masses)",
        "attention_ratio",
        at_least(3.0, partial=1.5),
        where="Fig 4 right",
        control="control/attention_ratio",
        control_is=PHASE1 + ", on the same noisy data",
    ),
]

MULTI_TRIGGER = [
    ClaimSpec(
        "multi_trigger.qk_diagonal_triggers",
        "with five triggers, each trigger's QK matching row peaks on the diagonal (number of the 5 triggers)",
        "qk_diagonal_count",
        at_least(5, partial=3),
        paper=5,
        where="Fig 9 right",
        control="control/qk_diagonal_count",
        control_is=UNTRAINED,
    )
]


#: The partial band of the IOI accuracy gains: half-way from no change to the reproduced bar 0.05 (it was ≥ 0).
ACCURACY_GAIN_PARTIAL = 0.025


def _margin_kept(removed: float | None) -> Rule:
    """The IO/S margin kept: the edit's change within a quarter (partial: half) of ``removed``, the change that
    zeroing every attention layer makes (the margin the in-context reasoning carries; ``None``: not measured). It
    was ±0.25 logits (partial ±0.5), which the attention-zeroed control passes where the in-context margin is
    below it (laptop, seed 0: 0.016 of a 0.205 margin)."""
    tol = abs(removed) if removed is not None else 0.0
    shown = f"±{0.25 * tol:.4g}" if removed is not None else "a quarter of the change"
    words = f"within {shown}: a quarter of what zeroing every attention layer changes (partial: half)"
    return near(0.0, 0.25 * tol, partial_tol=0.5 * tol, words=words)


#: The counting rule: strictly above the best no-counting baseline (``metrics.IOI_BASELINES``, the one of highest
#: mean) at each position of IO among the trigger's successors. ``metrics.counting_summary`` shows no baseline can
#: pass it (the best one's margin is 0). Not a number the paper gave: App. J says only that the task "requires
#: counting"; the former rule, IO over S on ≥ 0.9 of sequences, was ours, and "the name seen less often anywhere
#: in the context" already scores 0.925 on it at T = 16.
COUNTING_RULE = at_least(1e-9, words="> 0: above the best no-counting baseline at every position of IO")
COUNTING_CONTROL = (
    "the no-counting baselines on the same test set (most recent / first successor of the trigger, a coin flip "
    "between the two names, successors copied in proportion, the name seen less often in the context): the "
    "highest of their margins"
)
POSITIONS = ("1st", "2nd", "3rd")


def _counting_note(c: Results) -> str:
    """IO over S by IO's position, ours beside the best baseline, and every baseline's overall fraction."""

    def fmt(xs: Any) -> str:
        return " / ".join("—" if x is None else f"{x:.2f}" for x in xs)

    others, best = ", ".join(f"{k} {v:.3f}" for k, v in c["baselines"].items()), c["best_baseline"]
    return (
        f"IO preferred over S with IO the {'/'.join(POSITIONS)} successor: ours {fmt(c['ours_by_position'])} "
        f"(all {c['ours']:.3f}), best baseline ({best}) {fmt(c['baselines_by_position'][best])}; "
        f"baselines overall: {others}"
    )


#: What each IOI claim's control is (``runs.ioi_controls`` measures them; none needs training).
IOI_CONTROLS = {
    "accuracy_gain": "the same edit on the first MLP (F₁) instead of the last",
    "noise_removed": "the same edit on the untrained model (step 0 of the same run: no τ association yet)",
    "io_s_margin_change": "every attention layer's output zeroed instead of the MLP edited (no in-context "
    "information reaches the last position: the margin the in-context reasoning carries, removed)",
}


def _ioi_control(entry: str, name: str) -> dict[str, Any]:
    return {"control": f"{entry}/control/{name}", "control_is": IOI_CONTROLS[name]}


def _ioi_claims(optimizer: str, n_layers: int) -> list[ClaimSpec]:
    """Figs 19-20's claims for one IOI run (results entry ``<optimizer>_L<n>``)."""
    key = f"drop_F{n_layers}" if optimizer == "sgd" else f"F{n_layers}_rho0.01"
    fig = "Fig 19" if optimizer == "sgd" else "Fig 20"
    edit = "dropping" if optimizer == "sgd" else "truncating (ρ = 0.01)"
    run, entry = f"IOI, {optimizer}, L = {n_layers}", f"{optimizer}_L{n_layers}"

    def f(results: Results) -> Any:
        return results[entry]

    return [
        ClaimSpec(
            f"ioi.{entry}_counts",
            f"{run}: the trained model counts — it prefers IO (which follows the trigger once) to S (twice) more "
            "often than the best no-counting baseline, wherever IO sits among the trigger's three successors "
            "(ours minus that baseline, at the worst of the three positions)",
            f"{entry}/measures/counting_margin",
            COUNTING_RULE,
            where='App. J ("this task also requires counting"; the paper gives no number)',
            kind="extension",
            control=f"{entry}/control/counting_margin",
            control_is=COUNTING_CONTROL,
            notes=lambda r: _counting_note(f(r)["counting"]),
        ),
        ClaimSpec(
            f"ioi.{entry}_accuracy_gain",
            f"{run}: {edit} the last MLP raises accuracy (edited minus full)",
            f"{entry}/measures/accuracy_gain",
            at_least(0.05, partial=ACCURACY_GAIN_PARTIAL),
            where=fig,
            **_ioi_control(entry, "accuracy_gain"),
            note=f"partial from {ACCURACY_GAIN_PARTIAL} (it was from 0, which an edit that changes nothing passes)",
            notes=lambda r: f"full {f(r)['full.acc']:.3f}, edited {f(r)[f'{key}.acc']:.3f}",
        ),
        ClaimSpec(
            f"ioi.{entry}_noise_removed",
            f"{run}: {edit} the last MLP removes most of τ (p(τ) edited / full)",
            f"{entry}/measures/noise_removed",
            at_most(0.5, partial=0.8),
            where=f"{fig}, §3",
            **_ioi_control(entry, "noise_removed"),
            notes=lambda r: f"p(τ) full {f(r)['full.p_noise']:.3f}, edited {f(r)[f'{key}.p_noise']:.3f}",
        ),
        ClaimSpec(
            f"ioi.{entry}_io_s_margin_kept",
            f"{run}: {edit} the last MLP leaves the IO/S logit margin (the in-context counting) where it was "
            "(edited minus full, in logits)",
            f"{entry}/measures/io_s_margin_change",
            lambda r: _margin_kept(f(r).get("control", {}).get("io_s_margin_change")),
            where=f"{fig}, §3",
            kind="extension",
            **_ioi_control(entry, "io_s_margin_change"),
            notes=lambda r: (
                f"margin full {f(r)['full.io_s_margin']:.3f}, edited {f(r)[f'{key}.io_s_margin']:.3f}; IO preferred "
                f"to S on {f(r)['full.io_over_s']:.2f} of the sequences (full), {f(r)[f'{key}.io_over_s']:.2f} "
                "(edited)"
            ),
        ),
    ]


#: Every IOI run any preset trains: SGD at L = 3..7 (Fig 19), Adam at L = 3..5 (Fig 20).
IOI = [c for opt, layers in (("sgd", range(3, 8)), ("adam", range(3, 6))) for n in layers for c in _ioi_claims(opt, n)]


def _rank1_claim(a: str) -> Callable[[Results], str]:
    """Theorem 3's rank-1 claim, naming the step it was read at (10⁴ quick, 10⁵ at the paper preset)."""

    def words(r: Results) -> str:
        return (
            f"Theorem 3 (α = {a}): the rank-1 truncation's P(noise) decays as t^-1/2 (√t · P at t = "
            f"{r['theorem3_gd'][a]['t']:.0f}, relative to the predicted constant)"
        )

    return words


#: Fig 18's full-model partial band: half of −log(1 − α), so that a loss of 0 (no noise) is not partial.
FIG18_FULL_PARTIAL = 0.015

THEORY = [
    ClaimSpec(
        "theory.thm1_ff_margin",
        "Theorem 1: FF noise margin after one step is η_f α − O(1/N) (m = 8192, N = 64, T = 256, α = 0.5)",
        "theorem1/8192/ff_margin",
        near(0.5, 0.05, partial_tol=0.1),
        paper=0.5,
        where="Theorem 1",
        control="control/thm1_ff_margin",
        control_is="the same step on data with α = 0.25 (the margin must follow α: η_f α = 0.25)",
    ),
    ClaimSpec(
        "theory.thm1_attn_margin",
        "Theorem 1: attention margin after one step (Eq. 2 with W̃_E, which doubles the proof's constant), "
        "relative to the closed form",
        "theorem1/8192/attn_margin_rel",
        near(1.0, 0.1, partial_tol=0.25),
        where="Theorem 1",
        control="control/thm1_attn_margin",
        control_is="the same margin relative to the proof's closed form without W̃_E (half of Eq. 2's)",
        notes=lambda r: f"closed form {r['theorem1']['8192']['attn_pred_eq2']:.4g}",
    ),
    ClaimSpec(
        "theory.thm1_attn_margin_no_prev",
        "Theorem 1: attention margin η_v α̂ / N without W̃_E, relative to the closed form",
        "theorem1_no_prev_token_m8192/attn_margin_rel",
        near(1.0, 0.1, partial_tol=0.25),
        where="Theorem 1",
        control="control/thm1_attn_margin_no_prev",
        control_is="the same margin relative to Eq. 2's closed form with W̃_E (twice the proof's), same test set",
    ),
    ClaimSpec(
        "theory.thm1_ratio",
        "Theorem 1: the FF margin is order N larger than the attention margin (ratio / (N/2))",
        "theorem1/8192/ratio_rel",
        near(1.0, 0.15, partial_tol=0.5),
        where="Theorem 1",
        control="control/thm1_ratio",
        control_is="the same ratio without W̃_E (≈ N: the attention margin halves)",
    ),
    ClaimSpec(
        "theory.b3_fixed_point",
        "App. B.3: the noise logit converges to log N + log(α/(1−α)) (η = 1, α = 0.3, 300 steps; ours minus the "
        "fixed point)",
        "b3_recursion/final_minus_fixed_point",
        near(0.0, 0.05, partial_tol=0.2),
        where="App. B.3",
        control="control/b3_fixed_point",
        control_is="the recursion run at α = 0.2, minus α = 0.3's fixed point",
        notes=lambda r: "no overshoot" if not r["b3_recursion"]["overshoot"] else "overshoots the fixed point",
    ),
    *[
        spec
        for a in ("0.1", "0.3")
        for spec in (
            ClaimSpec(
                f"theory.thm3_full_p_noise_alpha{a}",
                f"Theorem 3 (α = {a}): the full model predicts the noise with probability α",
                f"theorem3_gd/{a}/p_noise_full",
                near(float(a), 0.02, partial_tol=0.05),
                paper=float(a),
                where="Theorem 3",
                control=f"control/thm3_full_p_noise_alpha{a}",
                control_is="the rank-1 truncation's P(noise) at the same step (the noise removed)",
            ),
            ClaimSpec(
                f"theory.thm3_rank1_rate_alpha{a}",
                f"Theorem 3 (α = {a}): the rank-1 truncation's P(noise) decays as t^-1/2 (√t · P at the last step, "
                "relative to the predicted constant)",
                f"theorem3_gd/{a}/rank1_rate_rel",
                near(1.0, 0.1, partial_tol=0.3),
                where="Theorem 3",
                words=_rank1_claim(a),
                control=f"control/thm3_rank1_rate_alpha{a}",
                control_is="the full model's √t · P(noise) relative to the same constant (P → α: grows as √t)",
            ),
        )
    ],
    *[
        spec
        for d in (12, 8)
        for spec in (
            ClaimSpec(
                f"theory.fig18_full_d{d}",
                f"Fig 18 (d = {d}): the full linear associative memory's pure-label loss is ≈ −log(1 − α) (α = 0.03)",
                f"fig18_median_pure_loss_final/d{d}.full",
                near(-math.log(0.97), 0.01, partial_tol=FIG18_FULL_PARTIAL),
                paper=-math.log(0.97),
                where="Fig 18",
                control=f"control/fig18_full_d{d}",
                control_is="the rank-2 truncation's pure-label loss (the noise direction cut)",
                note=f"partial within ±{FIG18_FULL_PARTIAL} (it was ±0.03, which takes in a loss of 0: no noise)",
            ),
            ClaimSpec(
                f"theory.fig18_rank2_below_full_d{d}",
                f"Fig 18 (d = {d}): the rank-2 truncation's pure-label loss is clearly below the full model's "
                "(ratio rank-2 / full)",
                f"fig18_rank2_over_full/d{d}",
                at_most(0.5, partial=0.9),
                where="Fig 18",
                control=f"control/fig18_rank2_below_full_d{d}",
                control_is="the rank-3 truncation over the full model (a truncation that keeps the noise direction)",
            ),
        )
    ],
]

NOISY_ICL_CLAIMS: tuple[ClaimSpec, ...] = (*MAIN, *FF_VARIANTS, *FINETUNE, *MULTI_TRIGGER, *IOI, *THEORY)


# ----------------------------------------------------------------------------------- laser_pythia

#: The models each part's claims are about: the paper's (``presets.PAPER_MODELS``).
_MODELS = PAPER_MODELS
#: Table 1: P(the) and P(Spain) after LASER over the full model's (``data.prompts.TABLE1_PROBS``, rounded as quoted).
TABLE1_P_THE_DROP = 0.0541
TABLE1_P_SPAIN_GAIN = 3.797
#: The partial band of every "LASER raises X (LASER / full)" claim: ≥ 1.5 (half-way from no change to the reproduced
#: band's doubling). It was ≥ 1, which the model without its rank reduction (exactly 1) passes: vacuous.
GAIN_PARTIAL = 1.5
NO_RANK_REDUCTION = "the model without its rank reduction (full / full = 1)"
_GAIN_NOTE = "control: no rank reduction (1); partial from 1.5 (it was from 1, which no change passes)"


def _measured_on(model: str) -> Callable[[Results], str]:
    """The row's note when another model stood in for ``model`` (the mini model of ``pretrained.mini``)."""

    def note(r: Results) -> str:
        m = r.get("measures", {}).get(model, {})
        return f"measured on {m['measured_on']}" if "measured_on" in m else ""

    return note


def _model_specs(part: str, rows: list[tuple[str, str, Rule, str, str, Any]]) -> list[ClaimSpec]:
    """One claim per (paper model of ``part``, row ``(name, words, rule, where, control_is, extra)``): id
    ``<part>.<model>.<name>``, read from ``measures/<model>/<name>``, its control from
    ``measures/<model>/control/<name>``."""
    return [
        ClaimSpec(
            f"{part}.{model}.{name}",
            f"{model}: {text}",
            f"measures/{model}/{name}",
            rule,
            where=where,
            control=f"measures/{model}/control/{name}",
            control_is=control_is,
            notes=_measured_on(model),
            **(extra(model) if callable(extra) else extra),
        )
        for model in _MODELS[part]
        for name, text, rule, where, control_is, extra in rows
    ]


LASER_PYTHIA_CLAIMS: tuple[ClaimSpec, ...] = (
    *_model_specs(
        "factual",
        [
            (
                "ratio_full",
                "the full model prefers the generic ' the' to ' Spain' (P(Spain)/P(the))",
                at_most(1.0),
                "Table 1, Fig 5 right",
                "the same model after LASER (the late MLP's distributional association removed)",
                {"paper": 0.16},
            ),
            (
                "ratio_laser",
                "after LASER ' Spain' wins over ' the' (P(Spain)/P(the))",
                at_least(2.0, partial=1.0),
                "Table 1, Fig 5 right",
                "the LASER model on the prompt without its in-context cue ('It is located in', answer ' Spain')",
                {"paper": 11.3},
            ),
            (
                "p_the_drop",
                "LASER removes most of P(the) (LASER / full)",
                at_most(0.2, partial=0.5),
                "Table 1",
                "the same ratio for the in-context answer ' Spain' (LASER must not lower every word)",
                {"paper": TABLE1_P_THE_DROP},
            ),
            (
                "p_answer_gain",
                "LASER raises P(Spain) (LASER / full)",
                at_least(2.0, partial=GAIN_PARTIAL),
                "Table 1",
                NO_RANK_REDUCTION,
                {"paper": TABLE1_P_SPAIN_GAIN, "note": _GAIN_NOTE},
            ),
        ],
    ),
    *_model_specs(
        "factual20",
        [
            (
                "p_the_drop",
                "LASER significantly lowers P(the) on the 20 factual prompts (mean, LASER / full)",
                at_most(0.5, partial=0.9),
                "Fig 16",
                "the same ratio for the answers (mean P(answer), LASER / full: LASER must not lower every word)",
                {},
            ),
            (
                "answer_over_the_gain",
                "LASER raises P(answer)/P(the) (ratio of means, LASER / full)",
                at_least(2.0, partial=GAIN_PARTIAL),
                "Fig 16",
                NO_RANK_REDUCTION,
                {"note": _GAIN_NOTE},
            ),
        ],
    ),
    *_model_specs(
        "ioi",
        [
            (
                "ratio_full",
                "the full model already prefers the IO name to ' the' (P(IO)/P(the))",
                at_least(1.0),
                "Fig 5 left",
                "the full model on the same prompts with the IO replaced in the context by another name (the answer "
                "no longer in the context)",
                lambda m: {"paper": 2.3 if m == "pythia-1b" else None},
            ),
            (
                "ratio_gain",
                "LASER raises P(IO)/P(the) several-fold (LASER / full)",
                at_least(2.0, partial=GAIN_PARTIAL),
                "Fig 5 left",
                NO_RANK_REDUCTION,
                lambda m: {
                    "paper": round(12.3 / 2.3, 2) if m == "pythia-1b" else None,
                    "note": "the paper reads its ratios at '14K steps', probably the final checkpoint; " + _GAIN_NOTE,
                },
            ),
        ],
    ),
    *_model_specs(
        "prepositions",
        [
            (
                "first_step_the_top5",
                "' the' is among the top predictions after a preposition early in training (first checkpoint with "
                "mean rank ≤ 5)",
                at_most(64, partial=512),
                "Fig 14",
                "the same first step for the in-context answer: the IO name's mean rank on the IOI prompts (§4.1: "
                "preferred after ~2,000 steps); the last checkpoint + 1 when it never gets there",
                {"paper": 10},
            )
        ],
    ),
    *_model_specs(
        "gpt2-ioi",
        [
            *[
                (
                    f"layer{l}_the_lower",
                    f"LASER on layer {l}'s W_in lowers P(the) for ρ in [0.1, 0.8] (fraction of the ρ grid)",
                    at_least(0.8, partial=0.5),
                    "Fig 17",
                    "the same fraction for the in-context answer ' Mary' (LASER must not lower every word)",
                    {"paper": 1.0},
                )
                for l in (9, 10, 11)
            ],
            (
                "top4_match",
                "the full model's top-4 next tokens are Mary, them, the, John (how many match)",
                at_least(4, partial=3),
                "Fig 17",
                "the same count on the prompt with both names taken out of the context ('When they went to a "
                "store, he gave a drink to')",
                {"paper": 4},
            ),
        ],
    ),
    *_model_specs(
        "sweep",
        [
            (
                "best_gain",
                "a LASER search over late layers finds a truncation that raises mean P(answer)/P(the) (best / full)",
                at_least(2.0, partial=GAIN_PARTIAL),
                "§4, App. C.2",
                NO_RANK_REDUCTION,
                {
                    "kind": "extension",
                    "note": _GAIN_NOTE + "; a search's best is biased upward (a random 3-layer model's reached 1.78)",
                },
            )
        ],
    ),
)
