"""The typed results of ``python -m analyses.induction_emergence``: one :class:`~mechrecall.typed.Results` model per
part, with the sub-tables its claims (values, controls, notes, words, policy arguments) read.

The JSON keys are those ``runs.py`` and ``pretrained.py`` write (a stored ``results.json`` validates); what no claim
reads by name (training histories, weight snapshots' logs, per-N rows, head-role tables, configurations) is not
declared and rides along. A number that can be NaN or ±inf (written as ``null``) is ``float | None``; a number
that may be a ``{"not_run": why}`` marker is ``Maybe[float]``. No torch here: the claims table imports it.
"""

from __future__ import annotations

from pydantic import Field

from mechrecall.typed import Entry, Maybe, Results

# ------------------------------------------------------------------------------------------- demo (extension)


class LayerDifferences(Entry):
    """Part demo: each head role's score in the layer the circuit puts it in minus in the other (≈ 0 at init)."""

    previous_token_L0_minus_L1: float
    induction_L1_minus_L0: float


class DemoMeasures(LayerDifferences):
    """Part demo: what is measured on one model (the trained one's ``final``, an untrained one's ``control``)."""

    accuracy: float


class DemoFinal(Entry):
    """Part demo: the last evaluation row of training (induction accuracy, the circuit's attention fractions)."""

    accuracy: float


class DemoAtInit(Entry):
    """Part demo: the untrained model of the run's seed (``control``) and those of the five seeds after it."""

    seeds: list[int]
    control: DemoMeasures
    init_values: dict[str, list[float]]


class DemoResults(Results):
    """Part demo (extension, not in the paper): the 2-layer attention-only model on periodic random tokens."""

    final: DemoFinal
    chance_accuracy: float
    layer_differences: LayerDifferences
    at_init: DemoAtInit


# ------------------------------------------------------------------------------------------- exact (App. A, B.3)


class OrbitCheck(Entry):
    """Part exact, Theorem 1: the off-subspace fraction of the group-symmetrised and of the plain gradient."""

    symmetrized: float
    plain: float
    orbit_sequences: int


class Orbits(Entry):
    """Part exact, Theorem 1: the orbit check with the diagonal of the attention masked (``strict``) and not."""

    strict: OrbitCheck
    standard: OrbitCheck


class ExactControl(Entry):
    """Part exact: the same identities on inputs that must break them (Gaussian codes; the plain gradient)."""

    max_closed_form_gap: float
    max_orbit_residual: float


class ExactResults(Results):
    """Part exact (App. B.3, Theorem 1): the float64 identities of the code."""

    max_closed_form_gap: float
    max_tl_gap: float
    max_orbit_residual: float
    orbit: Orbits
    control: ExactControl


# ------------------------------------------------------------------------------------------- ode (Fig 5)


class OdeControl(Entry):
    """Part ode: the same measurements where they must fail (β₂ frozen; the fit on the other phase; the smallest N)."""

    order_gamma_beta_alpha: bool
    exponent_t_icl: float
    exponent_T_gamma: float
    exponent_T_beta: float
    t_icl_over_N2_at_max: float
    t_icl_over_N2_gap: float


class OdeResults(Results):
    """Part ode (Theorem 2, Corollary 1, Fig 5): emergence order and times of the 3-parameter gradient-flow ODE."""

    ns: list[int]
    fit_ns: list[int]
    order_gamma_beta_alpha: bool
    exponent_t_icl: float
    exponent_T_gamma: float
    exponent_T_beta: float
    N_max: int
    t_icl_over_N2_at_max: float
    asymptote_over_N2: float
    t_icl_over_N2_gap: float
    control: OdeControl


# ------------------------------------------------------------------------------------------- disentangled (Figs 3, 4)


class DisentangledSummary(Entry):
    """Part disentangled (§5, Figs 3, 4): the main run's loss, its largest pseudo-parameters, the restricted run."""

    first_loss: float
    final_loss: float
    final_loss_only: float
    top3: list[str]
    #: the last logged row: ``step`` (an int), ``loss``, ``residual`` and the 19 pseudo-parameters
    coefficients: dict[str, int | float | None]
    final_over_first_loss: float
    top3_are_alpha3_beta2_gamma3: bool
    only_over_all_final_loss: float


class DisentangledControl(Entry):
    """Part disentangled: the untrained model (zero init) and the restricted run without α₃ (absent where
    ``--train-only`` has no α₃ to leave out)."""

    final_over_first_loss: float
    top3_are_alpha3_beta2_gamma3: bool
    only_over_all_final_loss: float | None = None


class DisentangledResults(Results):
    """Part disentangled (§5, Figs 3, 4, 15, 16): SGD on all weights vs only α₃, β₂, γ₃; the runs' histories ride
    along under their keys (``main``, ``fig15``, ``fig16``)."""

    summary: DisentangledSummary
    control: DisentangledControl


# ------------------------------------------------------------------------------------------- weights (Figs 6-14)


class WeightsResults(Results):
    """Part weights (App. C, Figs 6-14): one run per N (``N2``, ``N4``, ...: configuration and history); no claim
    reads it."""


# ------------------------------------------------------------------------------------------- standard (§2, Figs 2, 17)


class StandardFinal(Entry):
    """Part standard (Fig 17, §2.3): held-out NLL of the query's label and layer 1's query-to-label attention."""

    test_loss: float
    L1_query_to_label: float


class RoleScores(Entry):
    """Part standard (Fig 2): previous-token and induction scores per layer (``analyses.heads.head_roles``)."""

    L0_previous_token: float
    L0_induction: float
    L1_previous_token: float
    L1_induction: float


class RoleDifferences(Entry):
    """Part standard (Fig 2): each role's score in its layer minus in the other, and the smaller of the two."""

    previous_token_L0_minus_L1: float
    induction_L1_minus_L0: float
    smaller_layer_difference: float


class Fig2Contrasts(Entry):
    """Part standard (Fig 2, §2.3): z-scored diagonal contrasts of the interpretable QK / OV matrices."""

    previous_position: float
    induction: float
    copy_: float = Field(alias="copy")  # ``copy`` is a method of every model


class StandardMeasures(StandardFinal, RoleScores, RoleDifferences, Fig2Contrasts):
    """Part standard: every measurement on one untrained model (held-out scores, head roles, Fig 2's contrasts)."""


class StandardAtInit(Entry):
    """Part standard: the untrained model of the run's seed (``control``) and each measurement on those of the five
    seeds after it (``init_values``, keyed by measurement: the bar of a contrast)."""

    seeds: list[int]
    control: StandardMeasures
    init_values: dict[str, list[float]]


class StandardResults(Results):
    """Part standard (§2, Figs 2, 17): the 2-layer attention-only transformer on Task A."""

    final: StandardFinal
    role_scores: RoleScores
    role_differences: RoleDifferences
    fig2_contrasts: Fig2Contrasts
    at_init: StandardAtInit


# ------------------------------------------------------------------------------------------- sgd_scaling (App. F)


class SgdScalingControl(Entry):
    """Part sgd_scaling: the same fits on T_γ (Θ(N)) and the reversed order, on the same runs."""

    mean_exponent_full: float | None
    exponent_appendixF: float | None
    order_fraction_full: float | None


class SgdScalingResults(Results):
    """Part sgd_scaling (Corollary 1, App. F, Fig 5): fitted exponent of t_ICL on N from full SGD training and App.
    F's protocol; ``mean_exponent_full`` is ``{"not_run": why}`` where t_ICL was not reached."""

    dim: int
    batch_size: int
    ns: list[int]
    seeds: list[int]
    eta_eff: float
    ode_exponent_same_ns: float
    mean_exponent_full: Maybe[float]
    spread_exponent_full: list[float] | None
    exponent_appendixF: float | None
    appendixF_max_gap_to_ode: float | None
    full_max_loss: float | None
    order_fraction_full: float | None
    control: SgdScalingControl


# ------------------------------------------------------------------------------------------- pythia (extension)


class PythiaControl(Entry):
    """Part pythia: the first checkpoint (step 0 by default: untrained) and the order reversed."""

    induction_head_forms: bool
    previous_token_before_induction: bool
    final_induction_score: float


class PythiaResults(Results):
    """Part pythia (extension, not in the paper: Olsson et al. 2022's phase change on Pythia checkpoints); without
    weights the whole part is ``{"not_run": why, ...}``."""

    model: str
    measured_on: str | None = None
    checkpoints: list[int]
    threshold: float
    top_induction: str
    top_previous_token: str
    #: each top head's score per checkpoint, keyed ``"<role> L<layer>H<head>"``
    series: dict[str, list[float]]
    #: the step each series first reaches the threshold (interpolated; ``None``: never)
    emergence_step: dict[str, float | None]
    induction_head_forms: bool
    previous_token_before_induction: bool
    final_induction_score: float
    control: PythiaControl
