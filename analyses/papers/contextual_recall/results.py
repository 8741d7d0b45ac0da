"""Typed results of the contextual-recall parts: what each part hands back and its claims read (``claims.py``).

One :class:`~mechrecall.typed.Results` model per part — :class:`ConstructionResults` (§4, App. C),
:class:`WorldRResults` (Model B / B′ on World-R, both ``world_r`` and ``world_r_absolute``), :class:`WorldGResults`
(Model A on World-G, §3) and :class:`PretrainedResults` (the extension) — with the sub-tables a claim, its notes
or a policy argument reads declared as :class:`~mechrecall.typed.Entry` models. The JSON keys are the ones
``runs.py`` / ``pretrained.py`` write (``"PT.exact"`` is the field ``pt_exact``); histories, figures' tables and
configs ride along undeclared. No torch here.
"""

from __future__ import annotations

from pydantic import Field

from mechrecall.typed import Entry, Maybe, Results

__all__ = [
    "AtInit",
    "Cascade",
    "CascadeCoef",
    "Cascades",
    "Clustering",
    "ConstructionResults",
    "FinalG",
    "FinalR",
    "PretrainedAtInit",
    "PretrainedResults",
    "Prop2Restricted",
    "RecallScores",
    "StagewiseGap",
    "UntrainedG",
    "UntrainedPretrained",
    "UntrainedR",
    "WorldGAtInit",
    "WorldGResults",
    "WorldRAtInit",
    "WorldRControl",
    "WorldRResults",
]


# ------------------------------------------------------------------------------------------------ construction


class RecallScores(Entry):
    """Construction: the four final-token metrics of one set of weights on one sequence set (§4, Fig. 1)."""

    exact: float
    attr_type: float
    subject: float
    attribute: float


class Prop2Restricted(Entry):
    """Construction: Prop. 2 with U' from 4 finetuning subjects (§4, Fig. 13); ``None`` where no query falls in
    the row's group."""

    n_ft_subjects: int
    in_u: float | None = Field(alias="acc_answer_and_a_demo_in_U'")
    not_in_u: float | None = Field(alias="acc_answer_not_in_U'")
    not_in_u_with_full_u: float | None = Field(alias="acc_answer_not_in_U'_with_U'=U")


class CascadeCoef(Entry):
    """Construction: coefficients of the weights learned in one cascade (Theorem 2 / App. C, α_1)."""

    alpha1_kq_subj_prev_token: float
    kq_subj_demo_subject_offsets_mean: float
    alpha1_predicted: float | None = None


class Cascade(Entry):
    """Construction: Theorem 2's two-step cascade in one world and setting (§4 / App. C); ``acc_step*`` keyed
    ``"<queries>@beta=<β>"``."""

    population: str
    alpha1: float | None = None
    beta_report: str = "inf"
    condition_lhs: float
    condition_rhs: int
    condition_holds: bool
    acc_step1: dict[str, float]
    acc_step2: dict[str, float]
    coef: CascadeCoef
    step0_heldout: float
    step1_heldout: float
    step2_heldout: float
    step2_collapse: Maybe[float]
    world: str | None = None
    world_note: str = Field(default="", exclude_if=lambda note: not note)  # written only where the condition surprises


class Cascades(Entry):
    """Construction: the cascade in the preset's two worlds, in Theorem 2's setting and in the sensitivity one."""

    holds: Cascade
    paper_scale: Cascade
    sensitivity_holds: Cascade
    sensitivity_paper_scale: Cascade


class ConstructionResults(Results):
    """Part ``construction``: Prop. 1-4 scored with their controls (§4, App. C) and Theorem 2's cascade."""

    prop1_pt_rel: RecallScores
    prop1_pt_rel_no_subject_head: RecallScores
    prop1_icl_rel: RecallScores
    prop2_icl_rel_all: RecallScores
    prop3_pt_rel: RecallScores
    prop3_pt_rel_no_subject_head: RecallScores
    prop2_icl_rel_heldout: RecallScores
    prop2_icl_rel_heldout_no_query_term: RecallScores
    prop4_icl_rel_heldout: RecallScores
    prop4_icl_rel_heldout_no_query_term: RecallScores
    prop2_restricted: Prop2Restricted
    cascade: Cascades


# ------------------------------------------------------------------------------------------------ trained models


class AtInit(Entry):
    """The untrained controls (``mechrecall.controls.untrained_controls``): ``init_values`` per measurement over
    the untrained ``seeds`` (never the run's own), the bar of an ``above_untrained`` rule."""

    seeds: list[int]
    init_values: dict[str, list[float]]


class FinalR(Entry):
    """World-R: the last evaluation of a training run (§4, Figs. 14, 19 / 24)."""

    step: int
    pt_exact: float = Field(alias="PT.exact")
    pt_attr_type: float = Field(alias="PT.attr_type")
    icl_seen_exact: float = Field(alias="ICL_seen.exact")
    icl_seen_attr_type: float = Field(alias="ICL_seen.attr_type")
    icl_heldout_exact: float = Field(alias="ICL_heldout.exact")
    icl_heldout_attr_type: float = Field(alias="ICL_heldout.attr_type")


class UntrainedR(Entry):
    """World-R: the untrained Model B / B′ of the run's own seed (the claims' control, §4)."""

    pt_exact: float = Field(alias="PT.exact")
    max_subject_cosine: float | None
    max_relation_cosine: float | None


class WorldRAtInit(AtInit):
    """World-R: the untrained controls (§4, Figs. 10, 14)."""

    control: UntrainedR


class WorldRControl(Entry):
    """World-R: Prop. 2's weights (U' = U) on the run's held-out ICL_rel sequences (§4)."""

    prop2_icl_heldout: float


class WorldRResults(Results):
    """Parts ``world_r`` / ``world_r_absolute``: Model B / B′ pretrained on PT_rel, finetuned on ICL_rel, and its
    head roles (§4, Figs. 9-12, 14, 19-21; App. C.3.2, Figs. 22-26)."""

    positions: str
    chance_exact: float
    after_pt: FinalR
    after_ft: FinalR
    max_subject_cosine_after_pt: float | None
    max_relation_cosine_after_pt: float | None
    at_init: WorldRAtInit
    control: WorldRControl


class FinalG(FinalR):
    """World-G: the last evaluation of a training run, with ICL+Grm at S_ft = 1 (§3, Figs. 2-4, 15)."""

    icl_grm1_heldout_exact: float = Field(alias="ICLGrm1_heldout.exact")


class StagewiseGap(Entry):
    """World-G: the largest attribute-type minus exact gap on PT during pretraining, and its step (§3.1, Fig. 2)."""

    step: int
    type_minus_exact: float


class Clustering(Entry):
    """World-G: task-vector clustering against the number of demonstrations ``t`` (§3.4, Figs. 8, 16, 17);
    ``silhouette`` keyed by site (``"L2_attn_out"``)."""

    t: list[int]
    silhouette: dict[str, list[float | None]]


class UntrainedG(Entry):
    """World-G: the untrained Model A of the run's own seed (the claims' control, §3)."""

    pt_exact: float = Field(alias="PT.exact")
    stagewise_gap: float
    silhouette_rise: float | None
    silhouette_l2_minus_l1: float | None
    steering_log_orig_over_target: float | None


class WorldGAtInit(AtInit):
    """World-G: the untrained controls (§3, Figs. 2, 8, 16)."""

    control: UntrainedG


class WorldGResults(Results):
    """Part ``world_g``: Model A pretrained on World-G, finetuned on ICL and ICL+Grm (both loss readings), task
    vectors and steering (§3, Figs. 2-4, 8, 15-18)."""

    chance_exact: float
    after_pt: FinalG
    after_ft_icl: FinalG
    after_ft_iclgrm: FinalG
    after_ft_iclgrm_attributes: FinalG
    ft_loss: str = "all"
    samples_per_ft_step: int = 0
    query_breakdown: dict[str, dict[str, float]] = Field(default_factory=dict)
    stagewise_max_gap: StagewiseGap
    clustering_ft_icl: Clustering
    silhouette_rise: float | None
    silhouette_l2_minus_l1: float | None
    steering_log_orig_over_target: float | None
    steering_target_over_orig: float | None
    steering_crossing_beta: float | None
    at_init: WorldGAtInit


# ------------------------------------------------------------------------------------------------ pretrained


class UntrainedPretrained(Entry):
    """Pretrained: the checkpoint's config randomly initialised with the run's seed (the claims' control)."""

    silhouette_rise: float | None
    steering_log_orig_over_target: float | None


class PretrainedAtInit(AtInit):
    """Pretrained: the untrained controls (the extension of §3.4, Fig. 8)."""

    control: UntrainedPretrained


class PretrainedResults(Results):
    """Part ``pretrained`` (extension, not in the paper): §3.4's task-vector clustering and steering (Fig. 8) on a
    Pythia / GPT-2 checkpoint (or the mini model, named in ``measured_on``)."""

    model: str
    measured_on: str | None = None
    silhouette_rise: float | None
    steering_log_orig_over_target: float | None
    at_init: PretrainedAtInit
