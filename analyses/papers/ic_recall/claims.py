"""The claims of ``python -m analyses.ic_recall`` (Huang, Nichani, Lee & Ge), as data (no torch).

Each row names the entry of its part's results that holds our number (``reads``, keys joined by ``/``); the
protocol evaluates the table after each part. A statement or note that carries the run's sizes or numbers is a
function of the results (``words`` / ``notes`` of :class:`~mechrecall.claims.ClaimSpec`); a number summarising
several trials names its ``[min, max]`` (``spread``) and the trial seeds (``seeds``) in the results too.
Per-config claims of the ``pattern`` part (configs B and C) and per-size claims of ``algorithm1`` (n = 7, 13)
are comprehensions; a config or size the preset does not run reads a ``{"not_applicable": why}`` entry, which
leaves its claims out of the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from mechrecall.claims import ClaimSpec, Results
from mechrecall.policy import PolicyRule, policy

Text = Callable[[Results], str]


def _config(r: Results, name: str) -> Mapping[str, Any]:
    return r["configs"][name]["config"]


def _tag(r: Results, name: str) -> str:
    c = _config(r, name)
    return f"{name}: n={c['n']}, m={c['m']}, k={c['k']}, {c['family']}, T={c['T']:g}, N={c['N']}"


# ------------------------------------------------------------------------------------------- exact
# Identities of the construction: the code against its own closed form (eq. (16), App. A, App. D, Lemma B.1, §4.1)
# or two implementations of one computation (the fast path against the TL model): class ``check``, shown apart and
# never counted as the paper reproduced. Each control is the same measurement on an input that must break it (a
# perturbed memory, a token-dependent W^KQ, one Adam step fewer). Lemma 3.1 (the memory recalls 100 %) stays the
# paper's claim. The exact Bayes ceiling (enumeration = population mean of 1/K) is a unit test
# (tests/test_ic_recall_model.py), out of this table.

PERTURBED = "the same comparison with the TL model's memory perturbed (N(0, 10⁻⁶) added to each entry of W_out)"


def _exact(sid: str, claim: str, rule: PolicyRule, where: str, control_is: str, **kw: Any) -> ClaimSpec:
    kw.setdefault("kind", "check")
    return ClaimSpec(f"exact.{sid}", claim, sid, rule, where=where, control=f"control/{sid}", control_is=control_is,
                     **kw)  # fmt: skip


FLOAT64 = policy("identity", tol=1e-10)  # float64 closed forms: rounding of sums of O(1) terms


EXACT = (
    _exact(
        "closed_form_relation_logits",
        "the TransformerLens construction's first-step logits equal eq. (16) for any W^KQ (max |difference|, float64)",
        FLOAT64,
        "eq. (16), App. B",
        PERTURBED,
    ),
    _exact(
        "closed_form_answer_logits",
        "second-step logits equal App. D's closed form (max |difference|)",
        FLOAT64,
        "App. D",
        PERTURBED,
    ),
    _exact(
        "partial_pattern_is_softmax_theta",
        "partial fine-tuning: attention from EoS is softmax(θ) for every sequence (max |difference|)",
        policy("identity", tol=1e-12),
        "§2.3",
        "the same θ written into the full-mode model (random token-dependent W^KQ)",
    ),
    _exact(
        "memory_recall",
        "the constructed MLP recalls every fact (min accuracy over (s,r)->a, (s,a)->r, (a,r)->s)",
        policy("printed_bound"),
        'Lemma 3.1 ("achieves 100% accuracy as an MLP associative memory", §3)',
        "the memory built on another relation table (relation r stores the facts of r − 1), asked this task's facts",
        paper=1.0,
        kind="paper",
    ),
    _exact(
        "readout_error",
        "read-out of φ(s)+φ(r): 4 on r(s), 2 on the other answers, 1 on subjects and relations, 0 on EoS (max "
        "|read-out − those values|; the proof of Lemma A.1 says 1 for other answers: an arithmetic slip)",
        FLOAT64,
        "App. A",
        "the same read-out with N(0, 10⁻⁶) added to each entry of the memory's V",
    ),
    _exact(
        "no_cot_answers_tie",
        "without the relation step all answer logits tie at EoS (max spread)",
        FLOAT64,
        "Lemma B.1",
        PERTURBED.replace("comparison", "spread"),
        notes=lambda r: (
            f"all answers tie, so a no-CoT argmax is a tie-break: ours (float rounding decides) gets "
            f"{r['no_cot_accuracy']:.3f} on the 36 sequences; a uniform tie-break gets 1/3 in expectation"
        ),
    ),
    _exact(
        "confusing_gap",
        "l(r*) − l(r_conf) = 2(v1 − v3)(v2 − v4) on the TL model's first-step logits (max |error|)",
        policy("identity", tol=1e-12),
        "§4.1",
        PERTURBED.replace("comparison", "gap"),
    ),
    _exact(
        "fast_path_same_parameters",
        "fast path and TL model end the same Adam steps with the same θ, ω (max |difference|, float64)",
        FLOAT64,
        "eq. (16), App. D",
        "the fast path stopped one Adam step early (other parameters) against the TL model's end",
        words=lambda r: (
            f"fast path and TL model end {r['fast_path_steps']} Adam steps with the same θ, ω "
            "(max |difference|, float64)"
        ),
    ),
)

# ----------------------------------------------------------------------------------------- pattern
# Each claim's control: the same number, aggregated the same way, on the same seeds' models at step 0 (θ0, ω0 ~
# N(0, 10⁻⁶): attention ≈ uniform); the TL-vs-fast-path comparison's control is the TL model's memory perturbed.

STEP0 = "the same seeds at step 0 (θ0, ω0 ~ N(0, 10⁻⁶): attention ≈ uniform), same aggregate over the seeds"


def _a_star_side(r: Results) -> float:
    """The midpoint of a*(T) and uniform attention's 1/6: a pair weight below it is nearer the optimum."""
    return 0.5 * (float(r["configs"]["A"]["a_star"]) + 1 / 6)


A_STAR_WHY = (
    "Theorem 4.2 prints no a, only 'some a ≠ ¼'; ours: a nearer a*(T), the minimiser of L1 on that line from "
    "Table 2's logits, than to uniform attention's 1/6 (the midpoint)"
)


N3 = "§4.1, Theorem 4.2"
PATTERN_A = (
    ClaimSpec(
        "pattern.n3_pair_weight",
        "n = 3: v → (a, a, ½−a, ½−a, 0, 0); a (mean over seeds) vs a*(T), the minimiser of L1 on that line from "
        "Table 2's logits",
        "configs/A/pair_weight",
        policy("extension", bar=_a_star_side, upper=True, why=A_STAR_WHY),
        where=N3,
        kind="extension",
        spread="configs/A/pair_weight_spread",
        seeds="seeds",
        words=lambda r: (
            f"n = 3: v → (a, a, ½−a, ½−a, 0, 0); a (mean over seeds) vs a*(T) = "
            f"{r['configs']['A']['a_star']:.4f}, the minimiser of L1 on that line from Table 2's logits"
        ),
        notes=lambda r: f"{_tag(r, 'A')}; Adam lr {_config(r, 'A')['lr']:g}, {_config(r, 'A')['steps']} steps",
        control="configs/A/control/pair_weight",
        control_is=STEP0,
    ),
    ClaimSpec(
        "pattern.n3_within_pair",
        "n = 3: v1/v2 and v3/v4 → 1 while the pairs' weights differ (max over seeds of the within-pair score "
        "|v_s − v_a|/(v_s + v_a) over the across-pair score)",
        "configs/A/within_over_across_max",
        policy("near_zero"),
        where=f'{N3} (§4.1: "the ratios v1/v2 and v3/v4 converge to 1, while the corresponding limiting attention '
        f'scores are different")',
        spread="configs/A/within_over_across_spread",
        seeds="seeds",
        notes=lambda r: (
            f"within-pair score alone: max {r['configs']['A']['within_max']:.4f} (uniform attention has ≈ 0 too, "
            "hence the ratio: ≈ 0 when the ratios are 1 and the pairs' weights differ)"
        ),
        control="configs/A/control/within_over_across_max",
        control_is=STEP0,
    ),
    ClaimSpec(
        "pattern.n3_query_and_eos",
        "n = 3: ≈ 0 attention on s3 and EoS (max over seeds of v5 + v6)",
        "configs/A/rest_max",
        policy("near_zero"),
        where=f"{N3} (v* = (a, a, ½−a, ½−a, 0, 0))",
        spread="configs/A/rest_spread",
        seeds="seeds",
        control="configs/A/control/rest_max",
        control_is=STEP0,
    ),
    ClaimSpec(
        "pattern.n3_first_step",
        "n = 3: first-step accuracy (min over seeds; every sequence is confusing and mismatched)",
        "configs/A/first_step_min",
        policy("printed_bound"),
        paper=1.0,
        where=f'{N3} (§4: "transformers can achieve perfect accuracy on IC-recall data")',
        spread="configs/A/first_step_spread",
        seeds="seeds",
        control="configs/A/control/first_step_min",
        control_is=STEP0,
    ),
)


# the [min, max] a Fig 2 claim shows beside its number: over the seeds, of the first-step accuracy, the second
# step, end to end minus its ceiling (entries of configs/<name>)
FIG2_SPREADS = {
    "first_step_at_ceiling": "first_step_spread",
    "second_step": "second_step_spread",
    "end_to_end_vs_ceiling": "end_to_end_spread",
}
NO_FIG2_ACCURACY = (
    "Fig 2 shows attention only and the paper prints no accuracy for it; Theorem 4.4's 0.999 needs Assumption 2.2, "
    "which Fig 2's random relations break, so ours: the Bayes ceiling of the relation set"
)
CONSISTENT_WHY = "a decoded relation the context rules out is an error at any ceiling: none on the test set"
FIG2_KIND = {"first_step_at_ceiling": "extension", "first_step_consistent": "extension",
             "end_to_end_vs_ceiling": "extension"}  # fmt: skip
FIG2_WHERE = {
    "first_step_at_ceiling": "Fig 2 (extension: the paper prints no accuracy for it)",
    "first_step_consistent": "Fig 2 (extension: the paper prints no accuracy for it)",
    "second_step": 'Fig 2, §5 ("the second decoding step consistently achieves perfect test accuracy")',
    "end_to_end_vs_ceiling": "Fig 2 (extension: the paper prints no accuracy for it)",
    "pairwise_pattern": 'Fig 2, §4.1 ("converging to a particular pairwise attention pattern", abstract)',
    "second_step_attends_query": 'Fig 2 second row, §4.3 ("attending to s_3 ... is sufficient")',
}
SECOND_STEP_AT_INIT = (
    "; at step 0 the in-context answers tie and the init noise breaks the tie, so a single seed's untrained "
    "second step is 1 when ω0 happens to be largest on s_q (≈ 1/3 of seeds): the min over the seeds fails"
)


def _fig2(name: str) -> tuple[ClaimSpec, ...]:
    """The claims of one Fig 2 config (B: the paper's Fig 2 left sizes; C: 3-ICL)."""

    def m(key: str) -> str:
        return f"configs/{name}/{key}"

    def said(text: str) -> Text:
        return lambda r: f"{_tag(r, name)}: {text}"

    def ours(r: Results, key: str) -> Any:
        return r["configs"][name][key]

    specs = [
        ("first_step_at_ceiling", "first-step accuracy at the Bayes ceiling of the relation set (max over seeds "
         "of |accuracy − ceiling|, test set)", "first_step_gap",
         policy("extension", bar=0.01, upper=True, partial=0.03, why=NO_FIG2_ACCURACY), None,
         lambda r: f"accuracy {ours(r, 'acc1_mean'):.4f} vs ceiling {ours(r, 'ceiling_mean'):.4f} (means); "
         "the paper's sizes break Assumption 2.2, so 1.0 is impossible"),
        ("first_step_consistent", "the decoded relation is always consistent with the context (min over seeds)",
         "first_step_consistent", policy("extension", bar=0.999, why=CONSISTENT_WHY), None, None),
        ("second_step", "second step perfect given the true relation (teacher-forced; min over seeds)",
         "second_step", policy("printed_bound"), 1.0, None),
        ("end_to_end_vs_ceiling", "end-to-end accuracy (own decoded relation, then the answer) minus its own "
         "ceiling E[max_a #{consistent r: r(s_q)=a}/K] (mean over seeds)", "end_to_end_vs_ceiling",
         policy("extension", bar=-0.05, partial=-0.15, why=NO_FIG2_ACCURACY), None,
         lambda r: f"end-to-end {ours(r, 'acc_final_mean'):.4f}, ceiling {ours(r, 'answer_ceiling_mean'):.4f}: "
         "it cannot reach 1 when the first step is ambiguous"),
        ("pairwise_pattern", "pairwise pattern from EoS (share of seeds with within ≤ 0.1, across ≥ 0.05, "
         "s_q + EoS ≤ 0.05)", "pairwise_share", policy("close_to_one"), None,
         lambda r: f"within {ours(r, 'within_mean'):.3f}, across {ours(r, 'across_mean'):.3f}, "
         f"rest {ours(r, 'rest_mean'):.3f} (means)"),
        ("second_step_attends_query", "step-2 attention peaks on the query subject (share of seeds)",
         "query_share", policy("close_to_one"), None, None),
    ]  # fmt: skip
    out = [
        ClaimSpec(f"pattern.{name}_{sid}", f"config {name}: {text}", m(key), rule, where=FIG2_WHERE[sid],
                  paper=paper, kind=FIG2_KIND.get(sid, "paper"),
                  words=said(text), notes=details, spread=m(FIG2_SPREADS[sid]) if sid in FIG2_SPREADS else "",
                  seeds="seeds", control=m(f"control/{key}"),
                  control_is=STEP0 + (SECOND_STEP_AT_INIT if sid == "second_step" else ""))
        for sid, text, key, rule, paper, details in specs
    ]  # fmt: skip
    return (*out, _fig2_tl_check(name))


def _fig2_tl_check(name: str) -> ClaimSpec:
    """The check of one Fig 2 config: the TransformerLens model and the fast path give the same logits."""

    def m(key: str) -> str:
        return f"configs/{name}/{key}"

    def ours(r: Results, key: str) -> Any:
        return r["configs"][name][key]

    tl = "the TransformerLens model with the learned θ, ω gives the fast path's logits (max |difference| of both "
    return ClaimSpec(
        f"pattern.{name}_tl_matches_fast_path",
        f"config {name}: {tl}steps' logits on 4096 test sequences)",
        m("tl_logit_diff"),
        FLOAT64,
        where="eq. (16), App. D",
        kind="check",
        seeds=m("tl_seeds"),
        words=lambda r: f"{_tag(r, name)}: {tl}steps' logits on 4096 test sequences, seed {ours(r, 'tl_seed')})",
        notes=lambda r: (
            f"first-step accuracy TL {ours(r, 'tl_acc'):.4f} vs fast path "
            f"{ours(r, 'fast_acc'):.4f}: exact ties between consistent relations (equal logits) are broken by "
            "float rounding, differently in the two paths"
        ),
        control=m("control/tl_logit_diff"),
        control_is=PERTURBED,
    )


# ------------------------------------------------------------------------------- sample complexity


def _settings(r: Results) -> Mapping[str, Any]:
    return r["settings"]


FIG3_THM = "Fig 3, Theorem 4.1"
UNTRAINED = "the untrained model (its initial θ, ω: step 0, same seeds and cells)"
UNTRAINED_FULL = "the untrained model (its initial W^KQ: step 0, same seeds and n)"
FIG3_WHY = (
    "Fig 3 plots the accuracies (no number in the text) and says 'only 8 samples'; random relations break "
    "Assumption 2.2, so ours: the Bayes ceiling at N = 8, within 0.01"
)
SAMPLE_COMPLEXITY = (
    ClaimSpec(
        "sample_complexity.affine_N8_accuracy",
        "identifiable (affine) relations: first-step accuracy at N = 8 for every n tried (min over n of the seed mean)",
        "affine_N8_accuracy",
        policy("printed_bound"),
        paper=0.999,
        where='Fig 3, Theorem 4.4 ("accuracy at least 0.999 for the first decoding step")',
        spread="affine_N8_accuracy_spread",
        seeds="affine_seeds",
        words=lambda r: (
            "identifiable (affine) relations: first-step accuracy at N = 8 for every n in "
            f"{list(_settings(r)['affine_n'])} (min over n of the seed mean)"
        ),
        notes=lambda r: (
            f"partial mode, Adam lr {_settings(r)['lr']:g}, {_settings(r)['steps']} steps, "
            f'T = 0.05; "only 8 samples" (§5); N* (0.99) by n = {r["affine_N_star"]} (no claim: the N grid starts '
            "at 1, where N* sits, so a ratio of N* across n cannot show growth)"
        ),
        control="control/affine_N8_accuracy",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "sample_complexity.second_step_all_cells",
        "the second step is perfect in every partial-mode cell (min teacher-forced accuracy)",
        "second_step_all_cells",
        policy("printed_bound"),
        paper=1.0,
        where='Fig 3, §5 ("the second decoding step consistently achieves perfect test accuracy")',
        spread="second_step_all_cells_spread",
        seeds="affine_seeds",
        control="control/second_step_all_cells",
        control_is=UNTRAINED,
    ),
    ClaimSpec(
        "sample_complexity.full_mode_second_step",
        "full W^KQ fine-tuning: the second step is perfect too (min over n of the teacher-forced accuracy at the "
        "largest N)",
        "full_mode_second_step",
        policy("printed_bound"),
        paper=1.0,
        where='§5 ("consistently achieves perfect test accuracy"); the paper\'s setting fine-tunes the partial matrix',
        kind="ablation",
        spread="full_mode_second_step_spread",
        seeds="full_seeds",
        words=lambda r: (
            "full W^KQ fine-tuning: the second step is perfect too (min over n of the teacher-forced "
            f"accuracy at N = {r['full_top_N']})"
        ),
        notes=lambda r: (
            f"by n: {r['full_second_step_at_top']}; token-specific attention memorises the small D; first-step N* "
            f"(0.99) by n = {r['full_N_star']} (no claim: on the ×4 N grid N* sits on one grid point for every n, so "
            "a fitted exponent of N* in n reads 0 whatever the sample complexity)"
        ),
        control="control/full_mode_second_step",
        control_is=UNTRAINED_FULL,
    ),
    ClaimSpec(
        "sample_complexity.fig3_N8_at_ceiling",
        "random relations: at N = 8 the first step reaches the Bayes ceiling (max over n of ceiling − mean accuracy)",
        "fig3_N8_at_ceiling",
        policy("extension", bar=0.01, upper=True, partial=0.05, why=FIG3_WHY),
        where="Fig 3 (extension: the text prints no accuracy for random relations)",
        kind="extension",
        seeds="fig3_seeds",
        words=lambda r: (
            f"random relations, m = {_settings(r)['fig3']['m']}, n in {list(_settings(r)['fig3']['n'])}: "
            "at N = 8 the first step reaches the Bayes ceiling (max over n of ceiling − mean accuracy)"
        ),
        notes=lambda r: (
            f"Adam lr {_settings(r)['fig3']['lr']:g}, {_settings(r)['fig3']['steps']} steps, partial mode, T = 0.05"
        ),
        control="control/fig3_N8_at_ceiling",
        control_is=UNTRAINED,
    ),
)

# ------------------------------------------------------------------------------------- algorithm 1

ALGORITHM1_SIZES = (7, 13)  # the presets' Algorithm 1 cells (13: paper only)
ALGORITHM1_SPREADS = ("stage1_equal_pairs", "first_step", "second_step")  # with [min, max] over the seeds


def _cell_T(n: int) -> Callable[[Results], float]:
    """The temperature T of the Algorithm 1 cell of size ``n``."""
    return lambda r: float(r[f"n{n}"]["config"]["T"])


def _t_squared(n: int) -> Callable[[Results], float]:
    """Lemma C.1's |v1 − v3| = o(T²): the bound T² at the cell's T."""
    return lambda r: _cell_T(n)(r) ** 2


def _lemma_4_5(n: int) -> Callable[[Results], float]:
    """Lemma 4.5's second-step accuracy 1 − o(exp(−1/√T)): the bound 1 − exp(−1/√T) at the cell's T."""
    return lambda r: 1.0 - math.exp(-1.0 / math.sqrt(_cell_T(n)(r)))


def _algorithm1(n: int) -> tuple[ClaimSpec, ...]:
    def said(text: str) -> Text:
        def words(r: Results) -> str:
            c = r[f"n{n}"]["config"]
            return f"n={c['n']}, m={c['m']} affine, N={c['N']}, T={c['T']:g}, t2={c['steps']}: {text}"

        return words

    specs: list[tuple[str, str, PolicyRule, str, float | None]] = [
        ("stage1_equal_pairs", "after Stage 1, v1 ≈ v3 and v2 ≈ v4 (max over seeds of max |v1 − v3|, |v2 − v4|)",
         policy("stated_bound", bound=_t_squared(n), upper=True, says="|v1 − v3| = o(T²), Lemma C.1"),
         'Lemma C.1 ("|v1 − v3| = o(T²)")', None),
        ("stage1_order", "after Stage 1, v1 > v2 > v5 and v3 > v4 > v5 (share of seeds)", policy("close_to_one"),
         "Lemma C.1 (v ≈ (1/6 + α, 1/6, 1/6 + α, 1/6, 1/6 − 2α, 1/6) with probability ≥ 1 − δ/3)", None),
        ("stage1_second_step", "one GD step makes ω largest on s3 (share of seeds)", policy("close_to_one"),
         'Lemma 4.5 ("after Stage 1 ... accuracy 1 − o(exp(−1/√T))"), §4.3 ("attending to s_3")', None),
        ("first_step", "first-step accuracy after Algorithm 1 (min over seeds)", policy("printed_bound"),
         'Theorem 4.4 ("accuracy at least 0.999 for the first decoding step")', 0.999),
        ("second_step", "second-step accuracy (min over seeds)",
         policy("stated_bound", bound=_lemma_4_5(n), says="accuracy 1 − o(exp(−1/√T)), Lemma 4.5"),
         'Lemma 4.5 ("accuracy 1 − o(exp(−1/√T))")', None),
    ]  # fmt: skip
    return tuple(
        ClaimSpec(f"algorithm1.n{n}_{sid}", f"n={n}: {text}", f"n{n}/{sid}", rule, where=where, paper=paper,
                  words=said(text),
                  spread=f"n{n}/{sid}_spread" if sid in ALGORITHM1_SPREADS else "", seeds="seeds",
                  control=f"n{n}/control/{sid}", control_is=ALGORITHM1_CONTROLS.get(sid, ALGORITHM1_START))
        for sid, text, rule, where, paper in specs
    )  # fmt: skip


ALGORITHM1_START = "the untrained model: Algorithm 1's start θ = ω = 0 (no step, no perturbation), same seeds"
ALGORITHM1_CONTROLS = {
    "stage1_equal_pairs": "the same Stage-1 difference across roles (v1 vs v4, v2 vs v3: subject vs answer, which "
    "Lemma C.1 orders, ≈ α): Stage 1 must move v more than the bound",
}


# ---------------------------------------------------------------------------------- pretrained MLP


def _panel(r: Results, prefix: str) -> Mapping[str, Any]:
    return r["right"] if prefix else r


def _fig4(text: str, prefix: str = "") -> Text:
    def words(r: Results) -> str:
        s = _settings(_panel(r, prefix))
        side = "Fig 4 right" if prefix else "Fig 4 left"
        return (
            f"{side} ({s.get('k', 2)}-ICL, n={s['n']}, m={s['m']}, T={s.get('T', 0.05):g}, N={s['N']}), full W^KQ "
            f"fine-tuning: {text}"
        )

    return words


def _fig4_rows(prefix: str) -> tuple[tuple[str, str, PolicyRule], ...]:
    """Fig 4's statements: "such fine-tuned transformer also exhibits the pairwise attention pattern" (equal within
    pairs, different across: §4.1's words) and "attention weight for the second decoding step ... is also assigned
    to the EoS token" (§5). Each score is a fraction (a difference of two attention shares over their sum, or of two
    attention probabilities), so the policy's words apply to it directly."""
    return (
        ("pair_score", "step-1 attention forms the pairwise pattern (mean pairwise score (1 − within)·across·"
         "(1 − rest) over test prompts)", policy("higher_than")),
        ("within_pair", "step-1 attention equal within pairs (mean within-pair score |v_s − v_a|/(v_s + v_a) over "
         "test prompts)", policy("near_zero")),
        ("across_pairs", "step-1 attention differs across pairs (mean across-pair score: the difference of the "
         "pairs' shares of their attention)", policy("higher_than")),
        ("eos_in_second_step", "step-2 attention also goes to EoS (q_EoS minus the mean q on the context answers, "
         "which carry no step-2 information)", policy("higher_than")),
    )  # fmt: skip


_BEFORE = "the same model as fine-tuning starts (pretrained W^KQ and MLP, step 0 of fine-tuning, same seeds)"
_FIG4_CONTROLS = {
    "pair_score": _BEFORE,
    "within_pair": "the same score on the crossed pairs (s_i with a_{i+1}, cyclically) of the fine-tuned model: "
    "equal weights within the true pairs only",
    "across_pairs": _BEFORE,
    "eos_in_second_step": _BEFORE,
    "first_step_vs_ceiling": "the fine-tuned attention with the untrained MLP (the pretrained memory removed)",
}


def _pretrain_note(r: Results) -> str:
    s = _settings(r)
    return f"AdamW lr 1e-2, weight decay {s.get('weight_decay', 0.1):g}, {s['pretrain_steps']} full-batch steps, T = 1"


def _cross_term_note(prefix: str) -> Callable[[Results], str]:
    def note(r: Results) -> str:
        p = _panel(r, prefix)
        text = (
            f"ours over seeds {[round(x, 3) for x in p['first_step_vs_ceiling_spread']]} ([min, max]); "
            f"pretraining weight decay {_settings(p).get('weight_decay', 0.1):g}; the MLP's subject×subject cross "
            f"terms on the relation logits = {p['subject_subject_cross_terms']:.3f} × the subject×answer ones"
        )
        c = p.get("cancelled", {})
        if "first_step_vs_ceiling" in c:
            text += f"; with them cancelled: {c['first_step_vs_ceiling']:.3f} (pretrained_mlp.cancelled_cross_terms)"
        return text

    return note


def _fig4_panel_claims(prefix: str) -> tuple[ClaimSpec, ...]:
    at = "right/" if prefix else ""
    rows = tuple(
        ClaimSpec(f"pretrained_mlp.{prefix}{sid}", text, f"{at}{sid}", rule, where="Fig 4, §5",
                  words=_fig4(text, prefix), seeds=f"{at}seeds",
                  spread=f"{at}eos_in_second_step_spread" if sid == "eos_in_second_step" else "",
                  control=f"{at}control/{sid}", control_is=_FIG4_CONTROLS[sid])
        for sid, text, rule in _fig4_rows(prefix)
    )  # fmt: skip
    text = "extension: first-step accuracy / Bayes ceiling (the paper gives no accuracy for Fig 4)"
    extension = ClaimSpec(
        f"pretrained_mlp.{prefix}first_step_vs_ceiling", text, f"{at}first_step_vs_ceiling",
        policy("extension", bar=0.95, partial=0.5, why=CEILING_WHY), where="Fig 4 (extension: ours)",
        kind="extension", words=_fig4(text, prefix),
        notes=_cross_term_note(prefix), seeds=f"{at}seeds", spread=f"{at}first_step_vs_ceiling_spread",
        control=f"{at}control/first_step_vs_ceiling", control_is=_FIG4_CONTROLS["first_step_vs_ceiling"],
    )  # fmt: skip
    return (*rows, extension)


CEILING_WHY = "the paper gives no accuracy for Fig 4; ours: the first step within 5 % of the Bayes ceiling"
CANCELLED_WHY = (
    "ours: the cross terms as the whole cause of the gap, so cancelling them must reach the ceiling as the "
    "uncancelled extension's bar (0.95) asks; no partial band (the uncancelled model, the control, sits at its 0.5)"
)


CANCELLED = ClaimSpec(
    "pretrained_mlp.cancelled_cross_terms",
    "ablation: with the pretrained MLP's subject×subject cross terms cancelled, fine-tuning reaches the Bayes ceiling "
    "(first-step accuracy / ceiling): the cross terms as the cause of the gap",
    "cancelled/first_step_vs_ceiling",
    policy("extension", bar=0.95, why=CANCELLED_WHY),
    where="Fig 4 (ablation: ours)",
    kind="extension",
    words=_fig4(
        "ablation: first-step accuracy / Bayes ceiling with the MLP's subject×subject cross terms 2·c_s·c_s'·B(s, s') "
        "cancelled exactly (two frozen neurons per subject pair), same pretrained start"
    ),
    notes=lambda r: (
        f"cross terms after cancelling {r['cancelled']['subject_subject']:.1e} (before "
        f"{r['subject_subject_cross_terms']:.3f}); over seeds "
        f"{[round(x, 3) for x in r['cancelled']['first_step_vs_ceiling_spread']]} ([min, max])"
    ),
    seeds="seeds",
    spread="cancelled/first_step_vs_ceiling_spread",
    control="cancelled/uncancelled",
    control_is="the same pretrained model fine-tuned with its cross terms in place (the uncancelled model)",
)

PRETRAIN_WHY = "the paper prints no pretraining accuracy; Fig 4 presumes a memory that stores the facts: ≥ 0.99"

PRETRAINED_MLP = (
    ClaimSpec(
        "pretrained_mlp.pretrain_recall",
        "pretraining stores every fact (recall of the third element, mean)",
        "pretrain_recall",
        policy("extension", bar=0.99, why=PRETRAIN_WHY),
        where="§5 (pretraining data; extension: the paper prints no pretraining accuracy)",
        kind="extension",
        notes=_pretrain_note,
        seeds="seeds",
        control="control/pretrain_recall",
        control_is="the untrained model (step 0 of pretraining, same seeds)",
    ),
    *_fig4_panel_claims(""),
    CANCELLED,
    ClaimSpec(
        "pretrained_mlp.right_pretrain_recall",
        "Fig 4 right's pretraining stores every fact (recall of the third element, mean)",
        "right/pretrain_recall",
        policy("extension", bar=0.99, why=PRETRAIN_WHY),
        where="§5 (pretraining data; extension: the paper prints no pretraining accuracy)",
        kind="extension",
        notes=lambda r: _pretrain_note(r["right"]),
        seeds="right/seeds",
        control="right/control/pretrain_recall",
        control_is="the untrained model (step 0 of pretraining, same seeds)",
    ),
    *_fig4_panel_claims("right_"),
)

# ---------------------------------------------------------------------- pretrained LMs (extension)


def _best(r: Results) -> Mapping[str, Any]:
    return r["best_head"]


RANDOM_INIT = (
    "the untrained model, same prompts: a randomly initialised model of the same config (TransformerLens init, the "
    "run's seed), or a checkpoint series' step 0 (the mini model of pretrained.mini)"
)
PRETRAINED = (
    ClaimSpec(
        "pretrained.best_head_pairwise_share",
        "extension: the best head of the model attends pairwise from the final ':'",
        "best_pairwise_share",
        policy("extension", bar=0.5, partial=0.2, why="a pairwise head on most prompts (half); partial on a fifth"),
        where="extension",
        kind="extension",
        words=lambda r: (
            f"extension: the best head of {r.get('measured_on', r['model'])} attends pairwise from the final ':' "
            "(share of prompts passing within ≤ 0.1, across ≥ 0.05, query + ':' ≤ 0.05)"
        ),
        notes=lambda r: f"head L{_best(r)['layer']}H{_best(r)['head']} has the highest score",
        control="control/best_pairwise_share",
        control_is=RANDOM_INIT,
    ),
    ClaimSpec(
        "pretrained.best_head_score",
        "extension: the highest mean pairwise score over heads of the model",
        "best_head/score",
        policy(
            "extension", bar=0.2, why="a clear pairwise head, below the ≈ 0.33 of Fig 2's converged pattern (config B)"
        ),
        where="extension",
        kind="extension",
        words=lambda r: f"extension: the highest mean pairwise score over heads of {r.get('measured_on', r['model'])}",
        notes=lambda r: (
            f"L{_best(r)['layer']}H{_best(r)['head']}: within {_best(r)['within']:.3f}, "
            f"across {_best(r)['across']:.3f}, rest {_best(r)['rest']:.3f}"
        ),
        control="control/best_head_score",
        control_is=RANDOM_INIT,
    ),
)

CLAIMS: tuple[ClaimSpec, ...] = (
    *EXACT,
    *PATTERN_A,
    *_fig2("B"),
    *_fig2("C"),
    *SAMPLE_COMPLEXITY,
    *(spec for n in ALGORITHM1_SIZES for spec in _algorithm1(n)),
    *PRETRAINED_MLP,
    *PRETRAINED,
)
