"""The typed results of both experiments' parts: what each part hands back and what its claims read.

One :class:`~mechrecall.typed.Results` model per part (``noisy_icl``: :class:`MainResults`,
:class:`FFVariantsResults`, :class:`FinetuneResults`, :class:`MultiTriggerResults`, :class:`IOIResults`,
:class:`TheoryResults`; ``laser_pythia``: :class:`FactualResults`, :class:`Factual20Results`,
:class:`PythiaIOIResults`, :class:`PrepositionsResults`, :class:`GPT2IOIResults`, :class:`SweepResults`), with
:class:`~mechrecall.typed.Entry` models for the sub-tables a claim, its notes or its rule reads. The JSON keys are
those ``runs.py`` / ``theory.py`` / ``pretrained.py`` write (a key such as ``"full.p_noise"`` is a field with that
alias); everything else a part keeps (histories, sweeps, per-prompt rows) rides along undeclared. No torch here.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import Field

from mechrecall.typed import Entry, Maybe, NotRun, Results

# ----------------------------------------------------------------------------------- noisy_icl: main


class Evaluation(Entry):
    """One evaluation's test metrics, ``"<intervention>.<metric>"`` (``runs.final``): main / finetune, Figs 3, 8, 10."""

    full_p_correct: float = Field(alias="full.p_correct")
    full_p_noise: float = Field(alias="full.p_noise")
    drop_F1_p_noise: float = Field(alias="drop_F1.p_noise")
    drop_F2_p_correct: float = Field(alias="drop_F2.p_correct")
    drop_F2_p_noise: float = Field(alias="drop_F2.p_noise")


class MainReadouts(Entry):
    """main: readouts of the trained model's weights and attention (Fig 7)."""

    previous_token_score_L1: float


class MainControls(Entry):
    """main: each claim's control, keyed by the entry it controls (``runs.main_controls``; Figs 3, 4, 7, 8, 10)."""

    p_noise_full: float
    p_correct_drop_F2: float
    p_noise_drop_F2: float
    p_correct_gain_drop_F2: float
    p_noise_drop_F1: float
    first_step_ff_margin_positive: int
    attention_noise_share: float
    max_p_noise_first_10_steps: float
    previous_token_score_L1: float


class RunSizes(Entry):
    """The preset's sizes of a noisy-ICL run (``NoisyICLPreset``), as its results record them."""

    steps: int


class RunConfigRecord(Entry):
    """The configuration a noisy-ICL run records (``runs.RunConfig``)."""

    sizes: RunSizes


class MainResults(Results):
    """main: the MLP/MLP model on α = 0.5 data — Figs 3, 4 (left), 7, 8 (left), 10 (§3, App. B)."""

    alpha: float
    final: Evaluation
    readouts: MainReadouts
    first_step_ff_margin_positive: int | None
    max_p_noise_first_10_steps: float | None
    p_correct_gain_drop_F2: float
    attention_noise_share: float
    control: MainControls
    config: RunConfigRecord


# ----------------------------------------------------------------------------------- noisy_icl: ff_variants


class LossContrasts(Entry):
    """ff_variants (MLP/linear, linear/MLP): the drops' effects on the clean loss (over the full model's) and on
    p(τ) (``runs.variant_contrasts``; Figs 11, 12)."""

    drop_F2_loss_gain_rel: float
    loss_drop_F2_minus_drop_F1_rel: float
    p_noise_drop_F1_minus_full: float


class LossContrastValues(Entry):
    """ff_variants: :class:`LossContrasts` on the untrained models of the five seeds after the run's (the bar)."""

    drop_F2_loss_gain_rel: list[float]
    loss_drop_F2_minus_drop_F1_rel: list[float]
    p_noise_drop_F1_minus_full: list[float]


class LossContrastsAtInit(Entry):
    """ff_variants: the contrasts on untrained models (``mechrecall.controls.untrained_controls``; Figs 11, 12)."""

    seeds: list[int]
    control: LossContrasts
    init_values: LossContrastValues


class FFVariant(LossContrasts):
    """ff_variants: one model with an FF layer (``mlp_linear``: Fig 11, ``linear_mlp``: Fig 12)."""

    at_init: LossContrastsAtInit


class NoFFContrast(Entry):
    """ff_variants (no FF): p(ȳ) of the full model minus at ρ = 0.01 on W¹_V W¹_O (Fig 13)."""

    p_correct_full_minus_rho0_01: float = Field(alias="p_correct_full_minus_rho0.01")


class NoFFContrastValues(Entry):
    """ff_variants (no FF): :class:`NoFFContrast` on the untrained models of the five seeds after the run's."""

    p_correct_full_minus_rho0_01: list[float] = Field(alias="p_correct_full_minus_rho0.01")


class NoFFAtInit(Entry):
    """ff_variants (no FF): the contrast on untrained models (Fig 13)."""

    seeds: list[int]
    control: NoFFContrast
    init_values: NoFFContrastValues


class BestRho(Entry):
    """ff_variants (no FF): the ρ of the highest p(ȳ) in a sweep (the control's: layer 2's W²_V W²_O; Fig 13)."""

    best_rho: float


class NoFFVariant(NoFFContrast):
    """ff_variants: the model without FF layers, W¹_V W¹_O truncated (Fig 13)."""

    at_init: NoFFAtInit
    best_rho: float
    control: BestRho


class FFVariantsResults(Results):
    """ff_variants: MLP/linear, linear/MLP and no-FF models — Figs 11, 12, 13 (App. B)."""

    mlp_linear: FFVariant
    linear_mlp: FFVariant
    none: NoFFVariant


# ----------------------------------------------------------------------------------- noisy_icl: finetune, multi_trigger


class FinetuneControls(Entry):
    """finetune: the controls, the clean-pretrained model before fine-tuning (phase 2, step 0; Figs 4, 8 right)."""

    p_noise_full: float
    attention_noise_share: float


class FinetuneResults(Results):
    """finetune: clean pre-training, then noisy fine-tuning — Figs 4 (right), 8 (right), §3.2."""

    alpha: float
    phase2_final: Evaluation
    attention_noise_share: float
    control: FinetuneControls


class QKDiagonalCount(Entry):
    """multi_trigger: the number of the five triggers whose QK matching row peaks on the diagonal (Fig 9 right)."""

    qk_diagonal_count: int


class MultiTriggerResults(Results):
    """multi_trigger: five triggers Q = {1, 39, 43, 53, 58} — Fig 9 (right), App. B.4."""

    qk_diagonal_count: int
    control: QKDiagonalCount


# ----------------------------------------------------------------------------------- noisy_icl: ioi


class IOIMeasures(Entry):
    """ioi: one run's numbers the claims judge (``runs.ioi_measures``, ``runs.io_s_margin_kept``; Figs 19-20)."""

    counting_margin: float
    accuracy_gain: float
    noise_removed: float
    io_s_margin_kept: float


class IOIControls(IOIMeasures):
    """ioi: the same numbers on each claim's control (``runs.ioi_controls``; Figs 19-20, App. J)."""


class IOICounting(Entry):
    """ioi: "IO preferred over S" by IO's position among the trigger's successors, ours beside the no-counting
    baselines (``metrics.ioi_counting``; App. J)."""

    ours: float
    ours_by_position: list[float | None]
    baselines: dict[str, float]
    baselines_by_position: dict[str, list[float | None]]
    best_baseline: str


class IOIRun(Entry):
    """ioi: one synthetic-IOI run (``<optimizer>_L<n>``): its final test metrics (``"<edit>.<metric>"``), measures,
    counting and controls — Fig 19 (SGD, F_L dropped) / Fig 20 (Adam, ρ = 0.01)."""

    full_acc: float = Field(alias="full.acc")
    full_p_noise: float = Field(alias="full.p_noise")
    full_io_s_margin: float = Field(alias="full.io_s_margin")
    full_io_over_s: float = Field(alias="full.io_over_s")
    measures: IOIMeasures
    counting: IOICounting
    control: IOIControls

    def metric(self, key: str) -> float:
        """A final test metric by its key, ``"<edit>.<metric>"`` (the edit is named at run time: ``drop_F3.acc``)."""
        return float((self.model_extra or {})[key])


class IOIResults(Results):
    """ioi: synthetic IOI, SGD at L = 3..7 (Fig 19) and Adam at L = 3..5 (Fig 20), App. J; a run the preset does not
    train is :class:`~mechrecall.typed.NotApplicable`, one that diverged :class:`~mechrecall.typed.NotRun`."""

    sgd_L3: Maybe[IOIRun]
    sgd_L4: Maybe[IOIRun]
    sgd_L5: Maybe[IOIRun]
    sgd_L6: Maybe[IOIRun]
    sgd_L7: Maybe[IOIRun]
    adam_L3: Maybe[IOIRun]
    adam_L4: Maybe[IOIRun]
    adam_L5: Maybe[IOIRun]


# ----------------------------------------------------------------------------------- noisy_icl: theory


class Theorem1Margins(Entry):
    """theory: Theorem 1's one-step margins at one m (``theory._theorem1_row``)."""

    ff_margin: float
    attn_pred_eq2: float
    attn_margin_rel: float
    attn_margin_rel_err: float
    ratio_rel_err: float


class Theorem1NoPrev(Entry):
    """theory: Theorem 1's attention margin without W̃_E (the proof's model), m = 8192."""

    attn_margin_rel: float


class B3Recursion(Entry):
    """theory: the noise-logit recursion of App. B.3 against its fixed point."""

    abs_final_minus_fixed_point: float
    overshoot: bool


class Theorem3Run(Entry):
    """theory: Theorem 3's gradient descent at one α (``theory._theorem3_row``)."""

    t: float
    p_noise_full: float
    rank1_exponent: float


class TheoryControls(Entry):
    """theory: each claim's control, keyed by the claim's name (``theory._theory_controls``; Theorems 1, 3,
    App. B.3, Fig 18)."""

    thm1_ff_margin: float
    thm1_attn_margin: float
    thm1_attn_margin_no_prev: float
    thm1_ratio: float
    b3_fixed_point: float
    thm3_full_p_noise_alpha0_1: float = Field(alias="thm3_full_p_noise_alpha0.1")
    thm3_rank1_rate_alpha0_1: float = Field(alias="thm3_rank1_rate_alpha0.1")
    thm3_full_p_noise_alpha0_3: float = Field(alias="thm3_full_p_noise_alpha0.3")
    thm3_rank1_rate_alpha0_3: float = Field(alias="thm3_rank1_rate_alpha0.3")
    fig18_full_d12: float
    fig18_rank2_below_full_d12: float
    fig18_full_d8: float
    fig18_rank2_below_full_d8: float


class TheoryResults(Results):
    """theory: Theorem 1, App. B.3, Theorem 3 and the linear associative memory of Fig 18 (``theory.py``)."""

    theorem1: dict[str, Theorem1Margins]  # by m ("16", ..., "8192")
    theorem1_no_prev_token_m8192: Theorem1NoPrev
    b3_recursion: B3Recursion
    theorem3_gd: dict[str, Theorem3Run]  # by α ("0.1", "0.3")
    fig18_median_pure_loss_final: dict[str, float]  # by "d<d>.<model>" (d12.full, d8.rank2, ...)
    fig18_rank2_over_full: dict[str, float]  # by "d<d>"
    control: TheoryControls


# ----------------------------------------------------------------------------------- laser_pythia


class ModelMeasures(Entry):
    """laser_pythia: the numbers one model's claims read (``pretrained.measures``); ``measured_on`` where another
    model (``pretrained.mini``) stood in for the paper's."""

    @property
    def stand_in(self) -> str | None:
        """Where the numbers were measured when another model stood in for this one (``"measured_on"``)."""
        extra: dict[str, Any] = self.model_extra or {}
        return extra.get("measured_on")


M = TypeVar("M", bound=ModelMeasures)


class LaserResults(Results, Generic[M]):
    """laser_pythia: what every part holds — the models run and, per paper model (its slug), its measures (a model
    whose weights are not here: :class:`~mechrecall.typed.NotRun`; a paper model not among ``--model``:
    :class:`~mechrecall.typed.NotApplicable`)."""

    models: list[str]
    measures: dict[str, Maybe[M]]


class FactualControls(Entry):
    """factual: the controls (LASER model; no in-context cue; ' Spain''s own ratio; no rank reduction)."""

    ratio_full: float
    ratio_laser: float
    p_the_drop: float
    p_answer_gain: float


class FactualMeasures(FactualControls, ModelMeasures):
    """factual: 'Madrid is located in' on Pythia-1B — Table 1, Fig 5 (right), §4.1."""

    control: FactualControls


class FactualResults(LaserResults[FactualMeasures]):
    """factual: Table 1, Fig 5 (right)."""


class Factual20Controls(Entry):
    """factual20: the controls (the answers' ratio; no rank reduction)."""

    p_the_drop: float
    answer_over_the_gain: float


class Factual20Measures(Factual20Controls, ModelMeasures):
    """factual20: the 20 factual prompts of Table 5 — Fig 16, App. C.3."""

    control: Factual20Controls


class Factual20Results(LaserResults[Factual20Measures]):
    """factual20: Fig 16, App. C.3."""


class PythiaIOIControls(Entry):
    """laser_pythia ioi: the controls (the prompts without the IO; no rank reduction)."""

    ratio_full: float
    ratio_gain: float


class PythiaIOIMeasures(PythiaIOIControls, ModelMeasures):
    """laser_pythia ioi: P(IO)/P(the) before and after LASER — Figs 5 (left), 15."""

    control: PythiaIOIControls


class PythiaIOIResults(LaserResults[PythiaIOIMeasures]):
    """laser_pythia ioi: 100 IOI prompts on Pythia-410M and 1B, Figs 5 (left), 15."""


#: Why the prepositions claim (and its control) is not run with a single checkpoint.
TWO_CHECKPOINTS = "needs --checkpoints with at least two training steps"


class PrepositionsControls(Entry):
    """prepositions: the control, the first checkpoint where the IO name's mean rank is ≤ 5."""

    first_step_the_top5: int


class PrepositionsMeasures(ModelMeasures):
    """prepositions: the first checkpoint where ' the' has mean rank ≤ 5 after a preposition — Fig 14, App. C.1
    (``control`` is absent where fewer than two checkpoints ran)."""

    first_step_the_top5: Maybe[int]
    control: Maybe[PrepositionsControls] = NotRun(not_run=TWO_CHECKPOINTS)


class PrepositionsResults(LaserResults[PrepositionsMeasures]):
    """prepositions: the rank of ' the' across training, Fig 14."""


class GPT2IOIControls(Entry):
    """gpt2-ioi: the controls (the fraction for ' Mary'; the top-4 count without the names). ``None``: the layer is
    not in the model."""

    layer9_the_lower: float | None
    layer10_the_lower: float | None
    layer11_the_lower: float | None
    top4_match: int


class GPT2IOIMeasures(GPT2IOIControls, ModelMeasures):
    """gpt2-ioi: GPT-2 small IOI, layers 9-11 over a ρ grid — Fig 17, App. I."""

    control: GPT2IOIControls


class GPT2IOIResults(LaserResults[GPT2IOIMeasures]):
    """gpt2-ioi: Fig 17."""


class SweepGain(Entry):
    """sweep: the best LASER's mean P(answer)/P(the) over the full model's (the control's: no rank reduction)."""

    best_gain: float


class SweepMeasures(SweepGain, ModelMeasures):
    """sweep: LASER over late layers x {W_in, W_out} x ρ (§4, App. C.2)."""

    control: SweepGain


class SweepResults(LaserResults[SweepMeasures]):
    """sweep: the LASER search, §4, App. C.2."""
