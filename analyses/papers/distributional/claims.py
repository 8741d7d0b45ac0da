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
from mechrecall.claims import ClaimSpec, Results
from mechrecall.policy import PolicyRule, policy


def _alpha(results: Results) -> float:
    """The training α of the run (the paper's number for "predicts the noise w.p. α")."""
    return float(results["alpha"])


# ----------------------------------------------------------------------------------- noisy_icl

UNTRAINED = "the untrained model (step 0, same seed)"
DROP_F1 = "F₁ dropped instead of F₂ (same trained model)"


def _first_step_partial(results: Results) -> float:
    """The partial bar of the first-step claim: ≤ 50, or the run's length if shorter ("never" is written as the
    run's steps + 1, which the partial band must not accept: at 25 steps ≤ 50 did)."""
    return float(min(50, results["config"]["sizes"]["steps"]))


def _init_values(variant: str, entry: str) -> Callable[[Results], Any]:
    """The values of ``entry`` on the untrained ``variant`` models of the 5 seeds after the run's (the bar)."""
    return lambda r: r[variant]["at_init"]["init_values"][entry]


def _above_untrained(variant: str, entry: str, what: str) -> PolicyRule:
    """A contrast (≈ 0 at init, either sign) judged against the untrained ``variant`` models of the 5 seeds after
    the run's own (whose untrained model is the claim's control)."""
    return policy("above_untrained", values=_init_values(variant, entry), what=what)


def _init_range(variant: str, entry: str) -> Callable[[Results], str]:
    def note(r: Results) -> str:
        values, seeds = r[variant]["at_init"]["init_values"][entry], r[variant]["at_init"]["seeds"]
        lo, hi = min(values), max(values)
        return f"untrained seeds {seeds[0]}–{seeds[-1]} (the run's own is the control): {lo:.2g} … {hi:.2g}"

    return note


MAIN = [
    ClaimSpec(
        "main.p_noise_full",
        "the full model predicts the noise token τ with probability ≈ α on clean test data",
        "final/full.p_noise",
        policy("printed"),
        paper=_alpha,
        where="Fig 3, §3",
        note='the paper: "predicts noise with probability close to α" (Fig 3: "around α = 0.5")',
        control="control/p_noise_full",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "main.p_correct_drop_F2",
        "dropping F₂ (ρ = 0) makes the model predict the in-context token ȳ",
        "final/drop_F2.p_correct",
        policy("printed"),
        paper=0.98,
        where="Fig 3, §3",
        note='the paper: "predicts the ground-truth ȳ with an almost perfect probability ≈ 0.98"',
        control="control/p_correct_drop_F2",
        control_is=DROP_F1,
    ),
    ClaimSpec(
        "main.p_noise_drop_F2",
        "dropping F₂ removes the noise token",
        "final/drop_F2.p_noise",
        policy("near_zero"),
        where="Fig 3",
        note="the paper: dropping F₂ predicts ȳ w.p. ≈ 0.98 (Fig 3 shows p(τ) ≈ 0)",
        control="control/p_noise_drop_F2",
        control_is=DROP_F1 + " (the untrained model's p(τ) ≈ 1/vocab would pass: it cannot be the control)",
    ),
    ClaimSpec(
        "main.p_correct_gain_drop_F2",
        "dropping F₂ raises p(ȳ) over the full model",
        "p_correct_gain_drop_F2",
        policy("higher_than"),
        where="Fig 3",
        control="control/p_correct_gain_drop_F2",
        control_is="the gain from dropping F₁ instead (p(ȳ | drop F₁) − p(ȳ | full))",
    ),
    ClaimSpec(
        "main.p_noise_drop_F1",
        "dropping F₁ instead does not remove the noise (p(τ | drop F₁) ≥ α/2)",
        "final/drop_F1.p_noise",
        policy(
            "extension",
            bar=lambda r: r["alpha"] / 2,
            why='the paper says "predict the noise with high probability" (App. B, Fig 10) without a number: '
            "ours, at least half the training noise level α",
        ),
        where="Fig 10, App. B",
        kind="extension",
        control="control/p_noise_drop_F1",
        control_is="F₂ dropped instead of F₁: p(τ | drop F₂)",
    ),
    ClaimSpec(
        "main.ff_margin_first_step",
        "F₂ learns the trigger → τ association within the first steps (first step with a positive FF-2 margin)",
        "first_step_ff_margin_positive",
        policy(
            "extension",
            bar=10,
            upper=True,
            partial=_first_step_partial,
            why='the paper says "FF-2 learns trigger-noise association in early steps" (Fig 3 right) without a '
            "number: ours, within the first 10 steps (partial: 50, or the run's length if shorter)",
        ),
        where="Fig 3 right, Theorem 1",
        kind="extension",
        note="partial band capped at the run's length (never = steps + 1)",
        control="control/first_step_ff_margin_positive",
        control_is=UNTRAINED + ": 0 if its FF-2 margin is already positive, else never (the run's steps + 1)",
    ),
    ClaimSpec(
        "main.attention_correct_over_noise",
        "layer-2 attention from triggers attends to [q, ȳ] and avoids [q, τ] (the share of [q, τ] in the attention "
        "mass on the two)",
        "attention_noise_share",
        policy("near_zero"),
        where="Fig 4, App. B.2",
        note='the paper: "the second-layer attention learns to attend to z = ȳ and avoid z = N + 1"; the share is '
        "1 / (1 + the former ratio [q, ȳ] / [q, τ])",
        control="control/attention_noise_share",
        control_is=UNTRAINED + " (≈ α: as many [q, ȳ] as [q, τ] keys at α = 0.5, attended alike)",
    ),
    ClaimSpec(
        "main.early_p_noise_noisy",
        "early in training the model predicts τ almost always on noisy data (max p(τ) in steps 1-10)",
        "max_p_noise_first_10_steps",
        policy("close_to_one"),
        where="Fig 8 left",
        note='the paper: "in the first few (~5) steps, the models quickly learn to predict noise with probability '
        'close to 1"',
        control="control/max_p_noise_first_10_steps",
        control_is=UNTRAINED + ": p(τ) on the same noisy data",
    ),
    ClaimSpec(
        "main.previous_token_L1",
        "layer 1 is a previous-token head (attention on the previous token)",
        "readouts/previous_token_score_L1",
        policy(
            "extension",
            bar=0.5,
            partial=0.3,
            why='the paper shows "first-layer attention attending to the previous token" (Fig 7 left) without a '
            "number: ours, the majority of layer 1's attention on the previous token (partial: 0.3)",
        ),
        where="Fig 7 left",
        kind="extension",
        control="control/previous_token_score_L1",
        control_is=UNTRAINED,
    ),
]

FF_VARIANTS = [
    ClaimSpec(
        "ff_variants.mlp_linear_drop_F2_helps",
        "MLP/linear: dropping F₂ lowers the clean loss ((full minus dropped) / full)",
        "mlp_linear/drop_F2_loss_gain_rel",
        _above_untrained("mlp_linear", "drop_F2_loss_gain_rel", "(full − dropped) / full"),
        where="Fig 11, App. B",
        note='the paper: "dropping F_1 and F_2 both improve the correct prediction"; the loss change over the full '
        "model's own loss (it was in nats: not comparable with earlier reports)",
        notes=_init_range("mlp_linear", "drop_F2_loss_gain_rel"),
        control="mlp_linear/at_init/control/drop_F2_loss_gain_rel",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.mlp_linear_drop_F1_better",
        "MLP/linear: dropping F₁ gives a lower clean loss than dropping F₂ ((loss drop F₂ minus loss drop F₁) / full)",
        "mlp_linear/loss_drop_F2_minus_drop_F1_rel",
        _above_untrained("mlp_linear", "loss_drop_F2_minus_drop_F1_rel", "(drop F₂ − drop F₁) / full"),
        where="Fig 11, App. B",
        note='the paper: "dropping F_1 is better with lower test loss"; over the full model\'s own loss (it was in '
        "nats: not comparable with earlier reports)",
        notes=_init_range("mlp_linear", "loss_drop_F2_minus_drop_F1_rel"),
        control="mlp_linear/at_init/control/loss_drop_F2_minus_drop_F1_rel",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.linear_mlp_drop_F2_helps",
        "linear/MLP: dropping F₂ lowers the clean loss ((full minus dropped) / full)",
        "linear_mlp/drop_F2_loss_gain_rel",
        _above_untrained("linear_mlp", "drop_F2_loss_gain_rel", "(full − dropped) / full"),
        where="Fig 12, App. B",
        note='the paper: "dropping F_2 improves the correct prediction"; over the full model\'s own loss (it was in '
        "nats: not comparable with earlier reports)",
        notes=_init_range("linear_mlp", "drop_F2_loss_gain_rel"),
        control="linear_mlp/at_init/control/drop_F2_loss_gain_rel",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.linear_mlp_drop_F1_more_noise",
        "linear/MLP: dropping F₁ gives more noise (p(τ | drop F₁) minus p(τ | full))",
        "linear_mlp/p_noise_drop_F1_minus_full",
        policy("higher_than"),
        where="Fig 12, App. B",
        note='the paper: "dropping F_1 makes the model predict noise more" (a difference of two probabilities)',
        notes=_init_range("linear_mlp", "p_noise_drop_F1_minus_full"),
        control="linear_mlp/at_init/control/p_noise_drop_F1_minus_full",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "ff_variants.no_ff_best_rho",
        "no-FF model: a small-rank truncation of W¹_V W¹_O helps (the ρ with the highest p(ȳ))",
        "none/best_rho",
        policy("printed"),
        paper=0.05,
        where="Fig 13",
        note='the paper: "it turns out the best ρ = 0.05 improves the model\'s prediction a little"',
        control="none/control/best_rho",
        control_is="the same sweep on layer 2's W²_V W²_O (the in-context copy, not the noise store; Fig 7 right)",
    ),
    ClaimSpec(
        "ff_variants.no_ff_rho0.01_hurts",
        "no-FF model: ρ = 0.01 destroys performance (p(ȳ) of the full model minus at ρ = 0.01)",
        "none/p_correct_full_minus_rho0.01",
        policy("higher_than"),
        where="Fig 13, App. B",
        note='the paper: "a smaller ρ = 0.01 destroys the model\'s performance" (a difference of two probabilities)',
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
        policy("printed"),
        paper=_alpha,
        where="Fig 8 right",
        note='the paper: "the models learn to predict noise with probability nearly 0.5"',
        control="control/p_noise_full",
        control_is=PHASE1,
    ),
    ClaimSpec(
        "finetune.attention_correct_over_noise",
        "after fine-tuning, layer-2 attention avoids [q, τ] (the share of [q, τ] in the attention mass on [q, ȳ] "
        "and [q, τ])",
        "attention_noise_share",
        policy("near_zero"),
        where="Fig 4 right, §3.2",
        note='the paper: "after being fine-tuned on noise data, the attention becomes only focused on the correct '
        'tokens"',
        control="control/attention_noise_share",
        control_is=PHASE1 + ", on the same noisy data",
    ),
]

MULTI_TRIGGER = [
    ClaimSpec(
        "multi_trigger.qk_diagonal_triggers",
        "with five triggers, each trigger's QK matching row peaks on the diagonal (number of the 5 triggers)",
        "qk_diagonal_count",
        policy("printed_bound"),
        paper=5,
        where="Fig 9 right, App. B.4",
        note='the paper: "in both cases, the logits only have large values when i = j = q" (every trigger)',
        control="control/qk_diagonal_count",
        control_is=UNTRAINED,
    )
]


#: The counting claim's bar (an extension: App. J says only that the task "requires counting"): strictly above the
#: best no-counting baseline (``metrics.IOI_BASELINES``, the one of highest mean) at each position of IO among the
#: trigger's successors. ``metrics.counting_summary`` shows no baseline can pass it (the best one's margin is 0). The
#: former rule, IO over S on ≥ 0.9 of sequences, was ours too, and "the name seen less often anywhere in the
#: context" already scores 0.925 on it at T = 16.
COUNTING_BAR = 1e-9
COUNTING_RULE = policy(
    "extension",
    bar=COUNTING_BAR,
    why='App. J says only that the task "requires counting": above the best no-counting baseline at every '
    "position of IO",
)
COUNTING_CONTROL = (
    "the no-counting baselines on the same test set (most recent / first successor of the trigger, a coin flip "
    "between the two names, successors copied in proportion, the name seen less often in the context): the "
    "highest of their margins"
)
POSITIONS = ("1st", "2nd", "3rd")

#: The IO/S margin kept (an extension): |the edit's change| / |the change of zeroing every attention layer| ≤ 0.25
#: (partial 0.5). It was judged in logits within a quarter of the attention change, a bar of 0.004 logits where the
#: in-context margin was small (laptop, seed 0): the change is now normalised by that scale.
MARGIN_KEPT_BAR, MARGIN_KEPT_PARTIAL = 0.25, 0.5
MARGIN_KEPT_RULE = policy(
    "extension",
    bar=MARGIN_KEPT_BAR,
    upper=True,
    partial=MARGIN_KEPT_PARTIAL,
    why="the paper gives no number for the IO/S margin: the edit moves it by at most a quarter of what removing "
    "every attention layer moves it",
)


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
    "io_s_margin_kept": "the same edit on the first MLP (F₁) instead of the last, its |change| over the same scale "
    "(every attention layer's output zeroed: the margin the in-context reasoning carries, removed)",
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
            policy("higher_than"),
            where=f"{fig}, App. J",
            **_ioi_control(entry, "accuracy_gain"),
            note='the paper: the edit "consistently improves the test accuracies" (a difference of two accuracies)',
            notes=lambda r: f"full {f(r)['full.acc']:.3f}, edited {f(r)[f'{key}.acc']:.3f}",
        ),
        ClaimSpec(
            f"ioi.{entry}_noise_removed",
            f"{run}: {edit} the last MLP removes most of τ (p(τ) edited / full)",
            f"{entry}/measures/noise_removed",
            policy("ratio_below"),
            where=f"{fig}, §3",
            **_ioi_control(entry, "noise_removed"),
            notes=lambda r: f"p(τ) full {f(r)['full.p_noise']:.3f}, edited {f(r)[f'{key}.p_noise']:.3f}",
        ),
        ClaimSpec(
            f"ioi.{entry}_io_s_margin_kept",
            f"{run}: {edit} the last MLP leaves the IO/S logit margin (the in-context counting) where it was "
            "(|edited minus full| over |attention zeroed minus full|)",
            f"{entry}/measures/io_s_margin_kept",
            MARGIN_KEPT_RULE,
            where=f"{fig}, §3",
            kind="extension",
            **_ioi_control(entry, "io_s_margin_kept"),
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
    """Theorem 3's rank-1 claim, naming the last step of the fit (t = 10⁴ quick, 10⁵ at the paper preset)."""

    def words(r: Results) -> str:
        return (
            f"Theorem 3 (α = {a}): the rank-1 truncation's P(noise) decays as Θ(t^-1/2) (exponent of P in t, "
            f"fitted over t in [{r['theorem3_gd'][a]['t'] / 10:.0f}, {r['theorem3_gd'][a]['t']:.0f}])"
        )

    return words


def _fig18_full(results: Results) -> float:
    """−log(1 − α) at Fig 18's printed α = 0.03: the pure-label loss of a model predicting the noise w.p. α."""
    return -math.log(1 - 0.03)


THEORY = [
    ClaimSpec(
        "theory.thm1_ff_margin",
        "Theorem 1: FF noise margin after one step is η_f α − O(1/N) (m = 8192, N = 64, T = 256, α = 0.5)",
        "theorem1/8192/ff_margin",
        policy("printed"),
        paper=0.5,
        where="Theorem 1",
        note="Theorem 1 prints Δ(ξ_ff) ≈ η_f · α: 0.5 at η_f = 1, α = 0.5",
        control="control/thm1_ff_margin",
        control_is="the same step on data with α = 0.25 (the margin must follow α: η_f α = 0.25)",
    ),
    ClaimSpec(
        "theory.thm1_attn_margin",
        "Theorem 1, Eq. 2 with W̃_E: the attention margin after one step against the package's closed form (W̃_E "
        "doubles the proof's constant), |ours / closed form − 1|",
        "theorem1/8192/attn_margin_rel_err",
        policy("identity", tol=0.1),
        where="Theorem 1",
        kind="check",
        note="a check: the code's one GD step against its own closed form (Monte Carlo over the trials, hence the "
        "tolerance 0.1); against the theorem's printed η_v α̂ / N ours is ≈ 2× (the doubling); the theorem's own "
        "statement is theory.thm1_attn_margin_no_prev",
        notes=lambda r: (
            f"closed form {r['theorem1']['8192']['attn_pred_eq2']:.4g}; ours / closed form "
            f"{r['theorem1']['8192']['attn_margin_rel']:.4g}"
        ),
        control="control/thm1_attn_margin",
        control_is="the same step on data without noise (α = 0: the noise removed), |margin / the α = 0.5 closed "
        "form − 1|",
    ),
    ClaimSpec(
        "theory.thm1_attn_margin_no_prev",
        "Theorem 1: attention margin η_v α̂ / N without W̃_E (the proof's model), ours over the printed form",
        "theorem1_no_prev_token_m8192/attn_margin_rel",
        policy("printed"),
        paper=1.0,
        where="Theorem 1",
        note="Theorem 1 prints Δ(ξ_att) ≈ (η_v / N) · α̂; the paper's number is that form, ours over it is 1",
        control="control/thm1_attn_margin_no_prev",
        control_is="the same step on data without noise (α = 0: the noise removed, the margin must vanish), over "
        "the same α = 0.5 form",
    ),
    ClaimSpec(
        "theory.thm1_ratio",
        "Theorem 1, Eq. 2 with W̃_E: the FF / attention margin ratio against the package's closed form N/2, "
        "|ratio / (N/2) − 1|",
        "theorem1/8192/ratio_rel_err",
        policy("identity", tol=0.15),
        where="Theorem 1",
        kind="check",
        note="a check: the code's margins against its own closed forms (Monte Carlo, hence the tolerance 0.15); "
        "the paper's 'order N' follows from theory.thm1_ff_margin and theory.thm1_attn_margin_no_prev",
        control="control/thm1_ratio",
        control_is="the same ratio without W̃_E (≈ N: the attention margin halves), |ratio / (N/2) − 1|",
    ),
    ClaimSpec(
        "theory.b3_fixed_point",
        "App. B.3: the noise logit recursion reaches its fixed point log N + log(α/(1−α)) (η = 1, α = 0.3, 300 "
        "steps; |ours minus the fixed point|)",
        "b3_recursion/abs_final_minus_fixed_point",
        policy("identity", tol=1e-10),
        where="App. B.3",
        kind="check",
        note="a check: the recursion against its own closed-form fixed point (float64)",
        control="control/b3_fixed_point",
        control_is="the recursion run at α = 0.2, |minus α = 0.3's fixed point|",
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
                policy("printed"),
                paper=float(a),
                where="Theorem 3",
                note='the paper: "the full model always predicts noise w.p. α"',
                control=f"control/thm3_full_p_noise_alpha{a}",
                control_is="the rank-1 truncation's P(noise) at the same step (the noise removed)",
            ),
            ClaimSpec(
                f"theory.thm3_rank1_rate_alpha{a}",
                f"Theorem 3 (α = {a}): the rank-1 truncation's P(noise) decays as Θ(t^-1/2) (exponent of P in t, "
                "fitted over the last decade of t)",
                f"theorem3_gd/{a}/rank1_exponent",
                policy("theta"),
                paper=-0.5,
                where="Theorem 3",
                words=_rank1_claim(a),
                note="Theorem 3 prints P(i, N + 1; W⁽¹⁾) = Θ(t^-1/2); it was √t · P relative to our constant (not "
                "comparable with earlier reports)",
                control=f"control/thm3_rank1_rate_alpha{a}",
                control_is="the full model's fitted exponent of P(noise) (P → α: exponent → 0)",
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
                policy("printed"),
                paper=_fig18_full,
                where="Fig 18, Theorem 3",
                note="the paper prints α = 0.03 and that the full model predicts noise w.p. α (Theorem 3): its "
                "pure-label loss −log(1 − α)",
                control=f"control/fig18_full_d{d}",
                control_is="the rank-2 truncation's pure-label loss (the noise direction cut)",
            ),
            ClaimSpec(
                f"theory.fig18_rank2_below_full_d{d}",
                f"Fig 18 (d = {d}): the rank-2 truncation's pure-label loss is clearly below the full model's "
                "(ratio rank-2 / full)",
                f"fig18_rank2_over_full/d{d}",
                policy("ratio_below"),
                where="Fig 18",
                note='the paper: "rank-2 models are very likely to have significantly lower pure-label loss than '
                'full models"',
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
NO_RANK_REDUCTION = "the model without its rank reduction (full / full = 1)"
_GAIN_NOTE = "control: no rank reduction (1)"
#: The pythia-1b IOI ratios of Fig 5 (left) as printed: "improves from 2.3× to 12.3×".
FIG5_IOI_FULL, FIG5_IOI_LASER = 2.3, 12.3


def _measured_on(model: str) -> Callable[[Results], str]:
    """The row's note when another model stood in for ``model`` (the mini model of ``pretrained.mini``)."""

    def note(r: Results) -> str:
        m = r.get("measures", {}).get(model, {})
        return f"measured on {m['measured_on']}" if "measured_on" in m else ""

    return note


#: One row of :func:`_model_specs`: (name, words, the policy rule (or a function of the model giving it), where,
#: control_is, extra ClaimSpec fields (or a function of the model giving them)).
Row = tuple[str, str, PolicyRule | Callable[[str], PolicyRule], str, str, Any]


def _model_specs(part: str, rows: list[Row]) -> list[ClaimSpec]:
    """One claim per (paper model of ``part``, row): id ``<part>.<model>.<name>``, read from
    ``measures/<model>/<name>``, its control from ``measures/<model>/control/<name>``."""
    return [
        ClaimSpec(
            f"{part}.{model}.{name}",
            f"{model}: {text}",
            f"measures/{model}/{name}",
            rule if isinstance(rule, PolicyRule) else rule(model),
            where=where,
            control=f"measures/{model}/control/{name}",
            control_is=control_is,
            notes=_measured_on(model),
            **(extra(model) if callable(extra) else extra),
        )
        for model in _MODELS[part]
        for name, text, rule, where, control_is, extra in rows
    ]


def _ioi_full_rule(model: str) -> PolicyRule:
    """Fig 5 (left) prints pythia-1b's ratio (2.3×); for pythia-410m (Fig 15) the paper gives no number."""
    if model == "pythia-1b":
        return policy("printed")
    return policy(
        "extension",
        bar=1.0,
        why="Fig 15 shows pythia-410m's [IO] above 'the' without a number: ours, a ratio above 1",
    )


def _ioi_gain_rule(model: str) -> PolicyRule:
    """Fig 5 (left) prints pythia-1b's gain (2.3× → 12.3×); for pythia-410m, the words of Fig 15."""
    return policy("printed") if model == "pythia-1b" else policy("ratio_above")


LASER_PYTHIA_CLAIMS: tuple[ClaimSpec, ...] = (
    *_model_specs(
        "factual",
        [
            (
                "ratio_full",
                "the full model prefers the generic ' the' to ' Spain' (P(Spain)/P(the))",
                policy("printed"),
                "Table 1, Fig 5 right, §4.1",
                "the same model after LASER (the late MLP's distributional association removed)",
                {"paper": 0.16, "note": "§4.1 prints 0.16× (at 14K steps; Table 1: 0.079 / 0.499 = 0.158)"},
            ),
            (
                "ratio_laser",
                "after LASER ' Spain' wins over ' the' (P(Spain)/P(the))",
                policy("printed"),
                "Table 1, Fig 5 right, §4.1",
                "the LASER model on the prompt without its in-context cue ('It is located in', answer ' Spain')",
                {"paper": 11.3, "note": "§4.1 prints 11.3× (at 14K steps; Table 1: 0.300 / 0.027 = 11.1)"},
            ),
            (
                "p_the_drop",
                "LASER removes most of P(the) (LASER / full)",
                policy("printed"),
                "Table 1",
                "the same ratio for the in-context answer ' Spain' (LASER must not lower every word)",
                {"paper": TABLE1_P_THE_DROP, "note": "Table 1 prints P(the) 0.499 → 0.027"},
            ),
            (
                "p_answer_gain",
                "LASER raises P(Spain) (LASER / full)",
                policy("printed"),
                "Table 1",
                NO_RANK_REDUCTION,
                {"paper": TABLE1_P_SPAIN_GAIN, "note": "Table 1 prints P(Spain) 0.079 → 0.300; " + _GAIN_NOTE},
            ),
        ],
    ),
    *_model_specs(
        "factual20",
        [
            (
                "p_the_drop",
                "LASER significantly lowers P(the) on the 20 factual prompts (mean, LASER / full)",
                policy("ratio_below"),
                "Fig 16, App. C.3",
                "the same ratio for the answers (mean P(answer), LASER / full: LASER must not lower every word)",
                {"note": 'the paper: "LASER significantly lowers the probability of predicting “the”"'},
            ),
            (
                "answer_over_the_gain",
                "LASER raises P(answer)/P(the) (ratio of means, LASER / full)",
                policy("ratio_above"),
                "Fig 16, App. C.3",
                NO_RANK_REDUCTION,
                {
                    "note": 'the paper: "LASER turns out to significantly decrease the probability of "the" against '
                    'the correct tokens"; ' + _GAIN_NOTE
                },
            ),
        ],
    ),
    *_model_specs(
        "ioi",
        [
            (
                "ratio_full",
                "the full model already prefers the IO name to ' the' (P(IO)/P(the))",
                _ioi_full_rule,
                "Fig 5 left, Fig 15",
                "the full model on the same prompts with the IO replaced in the context by another name (the answer "
                "no longer in the context)",
                lambda m: (
                    {"paper": FIG5_IOI_FULL if m == "pythia-1b" else None}
                    | ({} if m == "pythia-1b" else {"kind": "extension"})
                ),
            ),
            (
                "ratio_gain",
                "LASER raises P(IO)/P(the) several-fold (LASER / full)",
                _ioi_gain_rule,
                "Fig 5 left, Fig 15",
                NO_RANK_REDUCTION,
                lambda m: {
                    "paper": round(FIG5_IOI_LASER / FIG5_IOI_FULL, 2) if m == "pythia-1b" else None,
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
                policy("printed"),
                "Fig 14, App. C.1",
                "the same first step for the in-context answer: the IO name's mean rank on the IOI prompts (§4.1: "
                "preferred after ~2,000 steps); the last checkpoint + 1 when it never gets there",
                {
                    "paper": 10,
                    "note": 'the paper: "“the” becomes one of top predictions around 10 steps"; Pythia\'s early '
                    "checkpoints are 1, 2, 4, 8, 16, …: 8 is partial, 16 a miss",
                },
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
                    policy("printed_bound"),
                    "Fig 17",
                    "the same fraction for the in-context answer ' Mary' (LASER must not lower every word)",
                    {"paper": 1.0},
                )
                for l in (9, 10, 11)
            ],
            (
                "top4_match",
                "the full model's top-4 next tokens are Mary, them, the, John (how many match)",
                policy("printed_bound"),
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
                policy(
                    "extension",
                    bar=2.0,
                    partial=1.5,
                    why="the paper searches LASER's layer and ρ (§4, App. C.2) but prints no number for the best "
                    "gain: ours, a doubling (partial 1.5)",
                ),
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
