"""The typed results of ``python -m analyses.ic_recall`` (Huang, Nichani, Lee & Ge): one model per part, with the
sub-tables its claims (:mod:`.claims`) read, under the JSON keys :mod:`.runs` writes (no torch here).

A measurement and its control share one model where the control is the same measurement on the claim's control
input (``ExactChecks``, ``N3Measures``, ``Fig2Measures``, ``Algorithm1Measures``, ``Fig4Measures``): the
measured entry extends it with ``control`` of that model, so one read function (``lambda m: m.second_step``)
gives a claim's number and its control. A configuration a preset does not run (config C, Algorithm 1 at n = 13,
Fig 4's right panel, the cross-term ablation, Fig 3's random sweep) is a
:class:`~mechrecall.typed.NotApplicable` (``Maybe[...]``). Per-cell rows, curves, histories, read-outs and
figure panels are not declared: they ride along as JSON.
"""

from __future__ import annotations

from mechrecall.typed import Entry, Maybe, Results

__all__ = [
    "Algorithm1Cell",
    "Algorithm1Measures",
    "Algorithm1Results",
    "BestHead",
    "CancelledCrossTerms",
    "CellConfig",
    "ExactChecks",
    "ExactResults",
    "Fig2Config",
    "Fig2Measures",
    "Fig3Settings",
    "Fig4Measures",
    "Fig4Panel",
    "Fig4Settings",
    "N3Config",
    "N3Measures",
    "PatternConfigs",
    "PatternResults",
    "PretrainedControl",
    "PretrainedMLPResults",
    "PretrainedResults",
    "SampleComplexityControl",
    "SampleComplexityResults",
    "SampleComplexitySettings",
]


# ------------------------------------------------------------------------------------------- exact


class ExactChecks(Entry):
    """exact: the construction's identities (eq. (16), App. A, App. D, Lemma B.1, §4.1) and Lemma 3.1's recall."""

    closed_form_relation_logits: float
    closed_form_answer_logits: float
    partial_pattern_is_softmax_theta: float
    memory_recall: float
    readout_error: float
    no_cot_answers_tie: float
    confusing_gap: float
    fast_path_same_parameters: float


class ExactResults(ExactChecks, Results):
    """exact: the identities, the no-CoT tie-break's accuracy, the fast path's step count; ``control``: the same
    checks on inputs that must break them (Lemma 3.1, eq. (16), App. D)."""

    no_cot_accuracy: float
    fast_path_steps: int
    control: ExactChecks


# ----------------------------------------------------------------------------------------- pattern


class CellConfig(Entry):
    """A sweep cell's sizes and optimiser (:class:`.presets.Cell` as JSON), read by the statements (Fig 2, Alg. 1)."""

    n: int
    m: int
    N: int
    k: int
    family: str
    T: float
    lr: float
    steps: int


class N3Measures(Entry):
    """pattern, config A (n = 3, §4.1, Theorem 4.2): the pair weight a, the pattern's scores, the first step."""

    pair_weight: float
    within_max: float
    within_over_across_max: float
    rest_max: float
    first_step_min: float


class N3Config(N3Measures):
    """pattern, config A (Theorem 4.2): the measures over the seeds, their spreads, a*(T), and the same at step 0."""

    config: CellConfig
    a_star: float
    pair_weight_spread: list[float]
    within_over_across_spread: list[float]
    rest_spread: list[float]
    first_step_spread: list[float]
    control: N3Measures


class Fig2Measures(Entry):
    """pattern, configs B and C (Fig 2): both decoding steps against their ceilings, the pairwise pattern, the TL
    model against the fast path."""

    first_step_gap: float
    first_step_consistent: float
    second_step: float
    end_to_end_vs_ceiling: float
    pairwise_share: float
    query_share: float
    tl_logit_diff: float


class Fig2Config(Fig2Measures):
    """pattern, config B or C (Fig 2): the measures, their means and spreads over the seeds, the TL read-out's seed
    and accuracies, and the same at step 0 (``control``)."""

    config: CellConfig
    first_step_spread: list[float]
    second_step_spread: list[float]
    end_to_end_spread: list[float]
    acc1_mean: float
    ceiling_mean: float
    acc_final_mean: float
    answer_ceiling_mean: float
    within_mean: float
    across_mean: float
    rest_mean: float
    tl_acc: float
    fast_acc: float
    tl_seed: int
    tl_seeds: list[int]
    control: Fig2Measures


class PatternConfigs(Entry):
    """pattern (Fig 2, §4.1): config A (n = 3), B (Fig 2 left), C (3-ICL, paper preset only)."""

    A: Maybe[N3Config]
    B: Maybe[Fig2Config]
    C: Maybe[Fig2Config]


class PatternResults(Results):
    """pattern (Fig 2, Theorem 4.2): the trial seeds and each config's numbers."""

    seeds: list[int]
    configs: PatternConfigs


# ------------------------------------------------------------------------------- sample complexity


class Fig3Settings(Entry):
    """sample_complexity: the paper's Fig 3 sweep (random relations, m fixed; paper preset only)."""

    n: list[int]
    m: int
    lr: float
    steps: int


class SampleComplexitySettings(Entry):
    """sample_complexity (Fig 3): the affine cells' n, optimiser, and the random-relation sweep where it runs."""

    affine_n: list[int]
    lr: float
    steps: int
    fig3: Fig3Settings | None


class SampleComplexityControl(Entry):
    """sample_complexity (Fig 3): the claims' numbers on the untrained cells (step 0, same seeds); a group the
    preset does not run has none."""

    affine_N8_accuracy: float
    second_step_all_cells: float
    full_mode_second_step: float | None = None
    fig3_N8_at_ceiling: float | None = None


class SampleComplexityResults(Results):
    """sample_complexity (Fig 3, Theorem 4.1): accuracy at N = 8, N* by n, the second step (partial and full
    W^KQ fine-tuning), the gap to the Bayes ceiling of the random-relation sweep."""

    settings: SampleComplexitySettings
    affine_seeds: list[int]
    full_seeds: list[int]
    affine_N8_accuracy: Maybe[float]
    affine_N8_accuracy_spread: list[float] | None
    affine_N_star: dict[int, int | None]
    second_step_all_cells: float
    second_step_all_cells_spread: list[float]
    full_N_star: dict[int, int | None]
    full_top_N: int
    full_second_step_at_top: dict[int, float]
    full_mode_second_step: Maybe[float]
    full_mode_second_step_spread: list[float] | None
    fig3_N8_at_ceiling: Maybe[float]
    fig3_seeds: list[int] | None = None  # only where the Fig 3 sweep runs
    control: SampleComplexityControl


# ------------------------------------------------------------------------------------- algorithm 1


class Algorithm1Measures(Entry):
    """algorithm1 (Lemma C.1, Lemma 4.5, Theorem 4.4): the Stage-1 shape and both decoding steps' accuracies."""

    stage1_equal_pairs: float
    stage1_order: float
    stage1_second_step: float
    first_step: float
    second_step: float


class Algorithm1Cell(Algorithm1Measures):
    """algorithm1, one size n (Algorithm 1): the measures, their spreads over the seeds, the cell's sizes, and the
    untrained model's (``control``)."""

    config: CellConfig
    stage1_equal_pairs_spread: list[float]
    first_step_spread: list[float]
    second_step_spread: list[float]
    control: Algorithm1Measures


class Algorithm1Results(Results):
    """algorithm1 (Algorithm 1, Theorem 4.4): the trial seeds; n = 7 (every preset) and n = 13 (paper preset)."""

    seeds: list[int]
    n7: Maybe[Algorithm1Cell]
    n13: Maybe[Algorithm1Cell]


# ---------------------------------------------------------------------------------- pretrained MLP


class Fig4Settings(Entry):
    """pretrained_mlp, one Fig 4 panel: its sizes and pretraining (defaults: records written before k, T and the
    weight decay were stored)."""

    n: int
    m: int
    N: int
    pretrain_steps: int
    k: int = 2
    T: float = 0.05
    weight_decay: float = 0.1


class Fig4Measures(Entry):
    """pretrained_mlp, one Fig 4 panel (§5): pretraining recall, the step-1 pattern, step 2 on EoS, the first step
    against the Bayes ceiling (means over seeds)."""

    pretrain_recall: float
    within_pair: float
    across_pairs: float
    across_beyond_crossed: float
    pair_score: float
    eos_in_second_step: float
    first_step_vs_ceiling: float


class CancelledCrossTerms(Entry):
    """pretrained_mlp, Fig 4 left (the ablation): fine-tuning with the MLP's subject×subject cross terms cancelled,
    beside the uncancelled model's ratio."""

    first_step_vs_ceiling: float
    first_step_vs_ceiling_spread: list[float]
    subject_subject: float
    uncancelled: float


class Fig4Panel(Fig4Measures):
    """pretrained_mlp, one Fig 4 panel: the measures, spreads, seeds, settings, the MLP's cross terms, the ablation,
    and the claims' controls (``control``)."""

    seeds: list[int]
    settings: Fig4Settings
    eos_in_second_step_spread: list[float]
    first_step_vs_ceiling_spread: list[float]
    subject_subject_cross_terms: float
    cancelled: Maybe[CancelledCrossTerms]
    control: Fig4Measures


class PretrainedMLPResults(Fig4Panel, Results):
    """pretrained_mlp (Fig 4, §5): the left panel (2-ICL) at the top level, the right panel (3-ICL) under ``right``."""

    # 3: across_beyond_crossed (the true pairs' across-pair score minus the crossed pairs'), the across claim's value;
    # 2: control.across_pairs is the crossed pairs' score (1: the model as fine-tuning starts)
    schema_version = 3

    right: Maybe[Fig4Panel]


# ---------------------------------------------------------------------- pretrained LMs (extension)


class BestHead(Entry):
    """pretrained (extension): the head with the highest mean pairwise score, and its parts."""

    layer: int
    head: int
    score: float
    within: float
    across: float
    rest: float


class PretrainedControl(Entry):
    """pretrained (extension): the same scores on the untrained model (random init, or the series' step 0)."""

    best_head_score: float
    best_pairwise_share: float


class PretrainedResults(Results):
    """pretrained (extension, not in the paper): every head of a Pythia / GPT-2 model scored on fact prompts."""

    model: str
    measured_on: str | None = None  # how a report names the model (records before it: ``model``)
    best_head: BestHead
    best_pairwise_share: float
    control: PretrainedControl
