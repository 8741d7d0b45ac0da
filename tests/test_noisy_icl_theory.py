"""Theory utilities of Chen, Bruna & Bietti (analyses/noisy_icl_theory.py): Theorem 1, App. B.3, Theorem 3 / Eq. 43,
Fig. 18 (LAM) and Table 3. Every check compares against a theory prediction or an independent computation."""

import math

import numpy as np
import pytest
import torch

from analyses.papers.distributional import theory as th

# ------------------------------------------------------------------ Theorem 1: data, closed form vs autograd


def test_theory_sampler_follows_the_generator():
    N, T, alpha, m = 16, 64, 0.3, 3000
    d = th.sample_theory_sequences(N, T, alpha, m, np.random.default_rng(1), q=3)
    z, y, ybar = d["tokens"], d["y"], d["ybar"]
    assert z.shape == (m, T) and z.min() >= 0 and z.max() <= N
    assert (z[:, -1] == 3).all()
    # targets: tau w.p. alpha, else ybar
    assert abs((y == N).mean() - alpha) < 4 * math.sqrt(alpha * (1 - alpha) / m)
    assert ((y == N) | (y == ybar)).all()
    # in context, the successor of q (positions 2..T-1) is tau or ybar, tau w.p. alpha; tau only follows q
    prev, nxt = z[:, :-2], z[:, 1:-1]
    after_q = prev == 3
    succ = nxt[after_q]
    ybar_rep = np.broadcast_to(ybar[:, None], nxt.shape)[after_q]
    assert ((succ == N) | (succ == ybar_rep)).all()
    assert abs((succ == N).mean() - alpha) < 0.03
    assert not (nxt[~after_q] == N).any()
    assert not (z[:, 0] == N).any()


@pytest.mark.parametrize("prev_token", [True, False])
def test_closed_form_one_step_matches_autograd_eq2(prev_token):
    """The count-based closed form equals one GD step of an explicit torch model of Eq. 2 (random orthonormal
    embeddings, softmax attention, W_QK/W_V/W_F from zero); W_QK gets no gradient at zero init."""
    rng = np.random.default_rng(0)
    N, T = 8, 32
    tr = th.sample_theory_sequences(N, T, 0.5, 64, rng)
    te = th.sample_theory_sequences(N, T, 0.5, 16, rng)
    cf = th.one_step_logits(tr["tokens"], tr["y"], te["tokens"], N, eta_f=1.3, eta_v=2.0, prev_token=prev_token)
    ag = th.eq2_one_step_autograd(
        tr["tokens"], tr["y"], te["tokens"], N, eta_f=1.3, eta_v=2.0, prev_token=prev_token, seed=3
    )
    assert ag["grad_qk_norm"] == 0.0
    for key in ("ff", "attn", "ff_q"):
        assert np.abs(cf[key]).max() > 1e-3  # non-trivial logits
        np.testing.assert_allclose(cf[key], ag[key], atol=1e-10, rtol=0)


def test_ff_margin_matches_multinomial_labels_and_approaches_alpha():
    """Along W_E(q) the FF margin depends only on the labels: (#tau - max_k #k)/m with multinomial counts
    (alpha on tau, (1-alpha)/N on each ordinary token). Its mean rises with m towards alpha - (1-alpha)/N."""
    N, alpha = 64, 0.5
    means = {}
    for m in (16, 256, 4096):
        r = th.one_step_margins(N, 32, alpha, m, n_trials=200 if m < 4096 else 40, n_test=8, seed=m)
        ffq = r["ff_margin_q"]
        means[m] = ffq.mean()
        counts = np.random.default_rng(99).multinomial(m, [alpha] + [(1 - alpha) / N] * N, size=20000)
        ref = (counts[:, 0] - counts[:, 1:].max(1)) / m
        se = math.sqrt(ffq.var() / len(ffq) + ref.var() / len(ref))
        assert abs(ffq.mean() - ref.mean()) < 4 * se + 1e-4, (m, ffq.mean(), ref.mean())
        assert r["ff_pred"] == alpha
    assert means[16] < means[256] < means[4096] < alpha
    assert means[16] < alpha - 0.04  # O(1/sqrt(m)) deficit at small m
    assert alpha - 2.0 / N < means[4096]  # alpha - O(1/N) at large m


def test_attention_margin_matches_theorem1_constant_and_ratio_is_order_N():
    N, T, alpha, m = 32, 128, 0.5, 4096
    plain = th.one_step_margins(N, T, alpha, m, n_trials=12, n_test=64, prev_token=False, seed=1)
    prev = th.one_step_margins(N, T, alpha, m, n_trials=12, n_test=64, prev_token=True, seed=1)
    # theorem's constant eta_v * alpha_hat / N for the single-subspace input of the proof
    assert plain["attn_pred"] == pytest.approx(alpha * (1 - (1 - alpha) * plain["q_hat"].mean()) / N)
    assert abs(plain["attn_margin"].mean() / plain["attn_pred"] - 1) < 0.15
    # Eq. 2 with the previous-token embedding: both subspaces carry the counts -> about twice the margin
    assert abs(prev["attn_margin"].mean() / prev["attn_pred_eq2"] - 1) < 0.15
    assert 1.8 < prev["attn_margin"].mean() / plain["attn_margin"].mean() < 2.1
    # FF margin is Theta(1), attention Theta(1/N): ratio of order N (N/2 with prev-token)
    assert 0.7 * N < plain["ratio"] < 1.5 * N
    assert 0.35 * N < prev["ratio"] < 0.75 * N


# ------------------------------------------------------------------ App. B.3 recursion


@pytest.mark.parametrize("alpha", [0.2, 0.3, 0.5])
def test_ff_noise_recursion_converges_without_overshoot(alpha):
    N = 64
    xs = th.ff_noise_fixed_point(N, alpha)
    assert math.exp(xs) / (N + math.exp(xs)) == pytest.approx(alpha)
    eta_max = 1 / (alpha * (1 - alpha))
    for eta in (1.0, eta_max):
        xi = th.ff_noise_logit_recursion(N, alpha, eta, 400)
        assert xi[0] == 0.0 and xi.shape == (401,)
        assert abs(xi[-1] - xs) < 1e-6
        assert (np.diff(xi) >= -1e-12).all() and xi.max() <= xs + 1e-9
    # a step size well above the bound does overshoot the fixed point
    assert th.ff_noise_logit_recursion(N, alpha, 3 * eta_max, 400).max() > xs + 0.05


# ------------------------------------------------------------------ Theorem 3: Eq. 43 and GD


def test_eq42_is_gradient_flow_in_beta_coordinates():
    """Eq. 42/43 equal -dL/d(beta_1, beta_2) for W = beta_1 B_1 + beta_2 B_2 (mean-over-inputs loss), i.e. the
    Frobenius gradient flow on W rescaled by ||B_1||^2 = 4 and ||B_2||^2 = 12."""
    alpha = 0.3
    B1 = torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64)[:, None] * torch.tensor([1.0, -1.0])[None]
    B2 = torch.tensor([1.0, 1.0, -2.0], dtype=torch.float64)[:, None] * torch.tensor([1.0, 1.0])[None]
    Y = torch.tensor([[1 - alpha, 0], [0, 1 - alpha], [alpha, alpha]], dtype=torch.float64)
    for b1, b2 in [(0.0, 0.0), (0.7, -0.2), (2.0, -0.9), (-0.3, 0.4)]:
        beta = torch.tensor([b1, b2], dtype=torch.float64, requires_grad=True)
        W = beta[0] * B1 + beta[1] * B2
        loss = -(Y * torch.log_softmax(W, dim=0)).sum() / 2
        (g,) = torch.autograd.grad(loss, beta)
        d1, d2 = -g.tolist()[0], -g.tolist()[1]
        da, db = th._eq43_rhs(-2 * b1, -b1 - 3 * b2, alpha)
        assert da == pytest.approx(-2 * d1, abs=1e-12) and db == pytest.approx(-d1 - 3 * d2, abs=1e-12)


def test_theorem3_ode_asymptotes():
    alpha = 0.3
    r = th.theorem3_ode(alpha, 1e3)
    t, a, b = r["t"], r["a"], r["b"]
    assert t[-1] == pytest.approx(1e3)
    # solve_ivp against a crude small-step Euler integration on [0, 5]
    ae = be = 0.0
    h = 2e-4
    for _ in range(int(5 / h)):
        da, db = th._eq43_rhs(ae, be, alpha)
        ae, be = ae + h * da, be + h * db
    r5 = th.theorem3_ode(alpha, 5.0)
    assert abs(r5["a"][-1] - ae) < 2e-3 and abs(r5["b"][-1] - be) < 2e-3
    # tolerance convergence of the integrated path
    rf = th.theorem3_ode(alpha, 1e3, rtol=1e-7)
    assert abs(rf["a"][-1] - a[-1]) < 1e-5 and abs(rf["b"][-1] - b[-1]) < 1e-5
    # b -> log(alpha / (1 - alpha)); a has slope -1 in log t
    assert abs(b[-1] - r["b_limit"]) < 1e-3
    i2 = np.argmin(abs(t - 1e2))
    slope = (a[-1] - a[i2]) / (math.log(t[-1]) - math.log(t[i2]))
    assert abs(slope + 1) < 0.02
    # a tracks -log(K t) with K = 3.6 (1 - alpha); the paper's constant (1 - alpha)(4 - 2 alpha) leaves an offset
    assert abs(a[-1] - r["a_corrected"][-1]) < 5e-3
    assert a[-1] - r["a_paper"][-1] == pytest.approx(math.log((4 - 2 * alpha) / 3.6), abs=5e-3)


def test_theorem3_gd_full_predicts_noise_rank1_decays_like_inverse_sqrt_t():
    alpha = 0.3
    g = th.theorem3_gd(alpha, lr=0.5, steps=20_000, n_log=40)
    assert g["p_noise_full"][-1] == pytest.approx(alpha, abs=2e-3)
    assert g["p_correct_full"][-1] == pytest.approx(1 - alpha, abs=2e-3)
    t, p1 = g["t"], g["p_noise_rank1"]
    idx = [np.argmin(abs(t - x)) for x in (1e2, 1e3, 1e4)]
    scaled = np.sqrt(t[idx]) * p1[idx]
    assert scaled.max() / scaled.min() < 1.25  # sqrt(t) * P roughly constant over two decades
    slope = math.log(p1[idx[2]] / p1[idx[1]]) / math.log(t[idx[2]] / t[idx[1]])
    assert -0.55 < slope < -0.45
    assert scaled[-1] == pytest.approx(1 / math.sqrt(g["K"]), rel=0.04)  # K = 0.75 (1 - alpha) for GD on W
    assert g["p_correct_rank1"][-1] > 0.98
    # independent implementation: the d-dimensional LAM with orthonormal embeddings and zero init
    df = th.lam_train(2, 7, alpha, 0.5, 2000, ranks=(1,), init="zero", embeddings="orthonormal", seed=5, log_every=1000)
    g2 = th.theorem3_gd(alpha, lr=0.5, steps=2000, n_log=20)
    end = df[df["step"] == 2000].set_index("model")["pure_loss"]
    assert end["rank1"] == pytest.approx(-math.log(g2["p_correct_rank1"][-1]), rel=1e-6)
    assert end["full"] == pytest.approx(-math.log(g2["p_correct_full"][-1]), rel=1e-6)


# ------------------------------------------------------------------ Fig. 18 (LAM with random embeddings)


def test_lam_rank2_beats_full_rank1_fails():
    alpha = 0.03
    df = th.lam_fig18(ds=(12, 8), seeds=range(6), steps=1500, log_every=100)
    assert set(df["model"]) == {"full", "rank1", "rank2", "rank3", "rank4"}
    end = df[df["step"] == 1500].groupby(["d", "model"])["pure_loss"].median()
    entropy = -(1 - alpha) * math.log(1 - alpha) - alpha * math.log(alpha)
    for d in (12, 8):
        full = end[(d, "full")]
        assert abs(full / -math.log(1 - alpha) - 1) < 0.1  # full model predicts the correct token w.p. ~1 - alpha
        assert end[(d, "rank2")] < 0.7 * full  # dropping the noise direction removes the noise
        assert end[(d, "rank1")] > 10 * full  # rank 1 cannot hold three associations
        assert abs(end[(d, "rank3")] / full - 1) < 0.1
        noisy = df[(df["d"] == d) & (df["model"] == "full")].groupby("step")["noisy_loss"].median()
        assert noisy.iloc[-1] < noisy.iloc[0] and noisy.min() >= entropy - 1e-9
    from analyses.papers.distributional.figures import fig18_lam

    fig = fig18_lam(df)
    assert len(fig.axes) == 2 and all(ax.get_xscale() == "log" for ax in fig.axes)
    assert len(fig.axes[0].lines) >= 5


# ------------------------------------------------------------------ Table 3 (Lemma D.2) and its (j, j) typo


def test_table3_monte_carlo_and_jj_typo():
    N, T, alpha = 20, 200, 0.3
    df = th.lemma_d2_moments_mc(N, T, alpha, m=20000, seed=0).set_index("case")
    jj = df.loc["(j,j)"]
    assert abs(jj["mu_mc"] - jj["mu_table"]) < abs(jj["mu_mc"] - jj["mu_printed"]) / 3
    for case in ("(N+1,N+1)", "(N+1,q)", "(N+1,k)"):  # the Theta(1/N) entries that drive Theorem 1
        assert abs(df.loc[case, "mu_mc"] / df.loc[case, "mu_table"] - 1) < 0.2
    big = df[df["N2_mu_table"].abs() > 0.25]
    assert (np.sign(big["mu_mc"]) == np.sign(big["mu_table"])).all()
