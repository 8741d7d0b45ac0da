"""Musat et al.: the emergence-time estimator, the gradient-flow ODE and the Fig 2 matrices (analyses.ov)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analyses.ov import NotApplicableError, block_of, diagonal_contrast, interpretable_basis, interpretable_qk_matrices
from analyses.papers.induction_heads import metrics as em
from analyses.papers.induction_heads.theory import asymptotic_emergence_times, integrate_three_param
from mechrecall.builder import build_toy_model

# --------------------------------------------------------------------------- estimator


def test_crossing_time_interpolates_between_measurements():
    t = [0, 10, 20, 30]
    assert em.crossing_time(t, [0.0, 0.2, 0.6, 0.9], 0.5) == pytest.approx(17.5)
    assert em.crossing_time(t, [0.0, 0.2, 0.6, 0.9], 0.5, interpolate=False) == 20
    assert em.crossing_time(t, [0.0, 0.2, 0.3, 0.4], 0.5) is None
    assert em.crossing_time(t, [0.7, 0.2, 0.3, 0.4], 0.5) == 0


def test_joint_time_is_when_the_last_series_crosses_and_all_are_past():
    t = [0, 1, 2, 3, 4]
    series = {"alpha3": [0, 0, 0.2, 0.6, 0.8], "beta2": [0, 0.3, 0.7, 0.4, 0.9], "gamma3": [0, 0.9, 1, 1, 1]}
    th = {"alpha3": 0.5, "beta2": 0.5, "gamma3": 0.5}
    times = em.emergence_times(t, series, th)
    assert times["beta2"] == pytest.approx(1.5) and times["alpha3"] == pytest.approx(2.75)
    # beta2 dips below at t=3: all three are past only at t=4 (beta2 crossing again at 3 + 0.1/0.5)
    assert em.joint_emergence_time(t, series, th) == pytest.approx(3.2)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_thresholds_outside_0_1_are_rejected_by_name(bad):
    with pytest.raises(ValueError, match=f"beta2={bad}"):
        em.emergence_times([0, 1], {"beta2": [0, 1]}, {"beta2": bad})


def test_series_with_fewer_than_two_measurements_is_an_error():
    with pytest.raises(ValueError, match="at least 2"):
        em.crossing_time([5], [0.9], 0.5)
    with pytest.raises(ValueError, match="strictly increasing"):
        em.crossing_time([0, 0], [0.1, 0.9], 0.5)


def test_series_from_trainer_rows_and_power_law_fit():
    rows = [{"step": 20, "x": 0.9}, {"step": 0, "x": 0.0}, {"step": 10, "x": 0.4}, {"step": 5}]
    times, series = em.series_from_rows(rows, ["x"])
    assert times == [0, 10, 20] and series["x"] == [0.0, 0.4, 0.9]
    ns = [4, 8, 16, 32]
    k, c = em.fit_power_law(ns, [1.7 * n**2 for n in ns])
    assert k == pytest.approx(2.0) and c == pytest.approx(1.7)
    with pytest.raises(ValueError, match="positive"):
        em.fit_power_law([4, 8], [1.0, 0.0])


# --------------------------------------------------------------------------- ODE


def test_ode_emergence_times_and_order():
    traj = integrate_three_param(8)
    T = em.emergence_times(traj.t, traj.series())
    # gradient flow of App. B.5 integrated independently (solve_ivp, rtol 1e-9): 5.543, 68.15, 116.6
    assert T["gamma3"] == pytest.approx(5.543, rel=2e-3)
    assert T["beta2"] == pytest.approx(68.15, rel=2e-3)
    assert T["alpha3"] == pytest.approx(116.6, rel=2e-3)
    assert em.joint_emergence_time(traj.t, traj.series()) == pytest.approx(T["alpha3"], rel=1e-3)
    # plateau: with α = β = 0, γ(t) = 1 − exp(−t/N) exactly, so early on γ follows it
    early = traj.t < 2
    assert traj.gamma[early] == pytest.approx(1 - torch.exp(-torch.tensor(traj.t[early]) / 8).numpy(), abs=1e-3)
    # gradient flow: the loss never increases along the path
    assert (np.diff(traj.loss) <= 1e-12).all() and traj.loss[0] == pytest.approx(1.0)
    # the grid does not depend on the integrator's tolerance (the emergence times are the grid's interpolation)
    loose = integrate_three_param(8, rtol=1e-6, atol=1e-9)
    assert em.emergence_times(loose.t, loose.series())["alpha3"] == pytest.approx(T["alpha3"], rel=1e-5)
    with pytest.raises(ValueError, match="n_pairs=1"):
        integrate_three_param(1)


def test_a_frozen_parameter_stays_at_zero_and_breaks_the_order():
    """The order claim's control: with β₂ held at 0 (no K-composition) α₃ never moves (its gradient is ∝ β₂) while γ₃
    follows its plateau; with α₃ held, β₂ still grows. The order γ₃ < β₂ < α₃ fails at every N."""
    from analyses.papers.induction_heads.runs import _in_order, ode_order_with_frozen

    no_beta = integrate_three_param(4, frozen=("beta2",))
    assert (no_beta.beta == 0).all() and (no_beta.alpha == 0).all() and no_beta.gamma[-1] > 0.9
    no_alpha = integrate_three_param(4, frozen=("alpha3",))
    assert (no_alpha.alpha == 0).all() and no_alpha.beta.max() > 0.5
    assert ode_order_with_frozen([2, 4], em.DEFINITION_1, ("beta2",)) is False
    assert ode_order_with_frozen([2, 4], em.DEFINITION_1, ()) is True
    with pytest.raises(ValueError, match="delta"):
        integrate_three_param(4, frozen=("delta",))
    times = {"T_gamma3": 1.0, "T_beta2": 2.0, "T_alpha3": 3.0}
    assert _in_order(times) and not _in_order(times, reverse=True)
    assert _in_order({"T_gamma3": 3.0, "T_beta2": 2.0, "T_alpha3": 1.0}, reverse=True)
    assert not _in_order({**times, "T_alpha3": None})


def test_closed_form_holds_on_orthonormal_codes_and_breaks_on_gaussian_ones():
    """The closed-form claim's control: the same check on Gaussian N(0, 1/D) codes (Assumption 7 broken) fails."""
    points = [(0.0, 0.0, 0.0), (0.3, 0.7, 0.9)]
    assert max(em.closed_form_gaps(points, seed=0)) < 1e-12
    assert min(em.closed_form_gaps(points, seed=0, data="gaussian")) > 1e-2


def test_untrained_controls_measure_the_run_seed_and_set_the_bar_from_the_next_five():
    from analyses.papers.induction_heads.models import demo_model
    from mechrecall.claims import above_untrained
    from mechrecall.controls import untrained_controls

    c = untrained_controls(lambda s: demo_model(16, 16, 8, seed=s), lambda m: {"w": float(m.W_E[0, 0])}, seed=3)
    assert c["seeds"] == [4, 5, 6, 7, 8] and len(set(c["init_values"]["w"])) == 5
    own = demo_model(16, 16, 8, seed=3).W_E[0, 0].item()
    assert c["control"]["w"] == own and own not in c["init_values"]["w"]  # the control never sets its own bar
    assert c["init_values"]["w"][0] == demo_model(16, 16, 8, seed=4).W_E[0, 0].item()
    rule = above_untrained(c["init_values"]["w"])
    assert rule.lo == 2 * max(abs(v) for v in c["init_values"]["w"])


def test_diagonal_zscore_ignores_the_weights_norm_and_sees_the_diagonal():
    """Fig 2's contrasts are z-scores of their block: scaling the block (weight-norm growth) leaves them unchanged,
    a random block scores ≈ 0 (N(0, 1/n)), a dominant (sub)diagonal scores ≈ √n."""
    g = torch.Generator().manual_seed(0)
    noise = torch.randn(32, 32, generator=g, dtype=torch.float64)
    z = em.diagonal_zscore(noise, -1)
    assert abs(z) < 1.0 and em.diagonal_zscore(100 * noise, -1) == pytest.approx(z, rel=1e-12)
    sub = torch.diag(torch.ones(31, dtype=torch.float64), -1) + 0.01 * noise
    assert em.diagonal_zscore(sub, -1) > 5 and em.diagonal_zscore(sub, 0) < 0  # the subdiagonal, not the diagonal
    assert em.diagonal_zscore(1e3 * sub, -1) == pytest.approx(em.diagonal_zscore(sub, -1))
    with pytest.raises(ValueError, match="no spread"):
        em.diagonal_zscore(torch.ones(4, 4))


def test_large_N_constants_match_the_derived_asymptotics():
    n = 64
    traj = integrate_three_param(n)
    T = em.emergence_times(traj.t, traj.series())
    asym = asymptotic_emergence_times(n)
    assert T["gamma3"] / n == pytest.approx(math.log(2), rel=1e-2)
    assert T["alpha3"] / asym["alpha3"] == pytest.approx(1.0, abs=0.02)
    assert T["beta2"] / asym["beta2"] == pytest.approx(1.0, abs=0.03)


# --------------------------------------------------------------------------- Fig 2 matrices (analyses.ov)


def _attn_only(pos="standard", n_layers=2):
    cfg = dict(
        n_layers=n_layers,
        n_heads=1,
        d_model=12,
        d_head=12,
        d_vocab=5,
        n_ctx=6,
        attn_only=True,
        normalization_type=None,
        positional_embedding_type=pos,
    )
    if pos == "rotary":
        cfg["rotary_dim"] = 4
    return build_toy_model(cfg, [], seed=0)


def test_interpretable_matrices_are_the_products_in_the_basis():
    model = _attn_only()
    mats = interpretable_qk_matrices(model)
    E, P = model.W_E, model.W_pos
    a0, a1 = model.blocks[0].attn, model.blocks[1].attn
    OV0, OV1 = a0.W_V[0] @ a0.W_O[0], a1.W_V[0] @ a1.W_O[0]
    S0 = torch.cat([E, P])
    S1 = torch.cat([E, P, E @ OV0, P @ OV0])
    S2 = torch.cat([S1, S1 @ OV1])
    torch.testing.assert_close(mats["L0"]["matrix"], S0 @ a0.W_Q[0] @ a0.W_K[0].T @ S0.T)
    torch.testing.assert_close(mats["L1"]["matrix"], S1 @ a1.W_Q[0] @ a1.W_K[0].T @ S1.T)
    torch.testing.assert_close(mats["OUT"]["matrix"], S2 @ model.W_U)
    assert [n for n, _ in mats["OUT"]["blocks"]] == [
        "E",
        "P",
        "OV0·E",
        "OV0·P",
        "OV1·E",
        "OV1·P",
        "OV1·OV0·E",
        "OV1·OV0·P",
    ]
    torch.testing.assert_close(block_of(mats["L1"], "E", "OV0·P"), (E @ a1.W_Q[0]) @ (P @ OV0 @ a1.W_K[0]).T)
    names = [n for n, _ in interpretable_basis(model)]
    assert names[:4] == ["E", "P", "OV0·E", "OV0·P"]


def test_diagonal_contrast_on_hand_built_matrices():
    m = torch.zeros(4, 4)
    m[1, 0] = m[2, 1] = m[3, 2] = 3.0  # a previous-position pattern: subdiagonal
    assert diagonal_contrast(m, -1) == pytest.approx(3.0)
    assert diagonal_contrast(m, 0) == pytest.approx(-9.0 / 12)
    assert diagonal_contrast(torch.eye(3) * 2 + 1, 0) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="offset=5"):
        diagonal_contrast(m, 5)


def test_weight_analysis_says_it_does_not_apply_to_rotary_models():
    with pytest.raises(NotApplicableError, match="rotary"):
        interpretable_qk_matrices(_attn_only("rotary"))
