"""Musat et al.: tasks, models and the exact checks (closed form, TL embedding, Theorem 1's orbit)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analyses.papers.induction_heads.data import (
    block_swap_matrix,
    make_continuous_icl_batch,
    make_token_icl_batch,
    orthonormal_icl_batch,
)
from analyses.papers.induction_heads.metrics import (
    PSEUDO_PARAMS,
    basis_matrix,
    orbit_residual,
    project_gradients_to_span,
    pseudo_parameters,
    subspace_residual,
    weights_from_pseudo_parameters,
)
from analyses.papers.induction_heads.models import (
    build_disentangled,
    disentangled_forward,
    offset_pos_hook,
    standard_forward,
    standard_model,
)
from analyses.papers.induction_heads.theory import closed_form_grad, closed_form_loss
from mechrecall._tl import tl_grad
from mechrecall.builder import trainable_parameters

# --------------------------------------------------------------------------- tasks


def test_token_icl_batch_is_the_appendix_E_task():
    b = make_token_icl_batch(256, generator=torch.Generator().manual_seed(0))
    assert b.tokens.shape == (256, 17)
    pairs = b.tokens[:, :16]
    assert all(len(set(row.tolist())) == 16 for row in pairs)  # 16 distinct tokens per row
    rows = torch.arange(256)
    assert torch.equal(b.tokens[:, -1], pairs[rows, 2 * b.query_index])  # the query repeats an item
    assert torch.equal(b.target, pairs[rows, 2 * b.query_index + 1])  # its label is the target
    assert b.pos_offset.min() >= 0 and b.pos_offset.max() <= 15 and len(set(b.pos_offset.tolist())) > 8
    assert set(b.query_index.tolist()) == set(range(8))


@pytest.mark.parametrize(
    "kwargs, message", [(dict(n_pairs=16), r"2N\+1 = 33"), (dict(n_pairs=9, vocab_size=16), "2N = 18")]
)
def test_token_icl_batch_rejects_sequences_that_do_not_fit(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_token_icl_batch(4, **kwargs)


def test_block_swap_matrix():
    M = block_swap_matrix(6)
    assert torch.equal(M, M.T) and torch.equal(M @ M, torch.eye(6)) and M.trace() == 0
    assert torch.equal(torch.arange(6.0) @ M, torch.tensor([3.0, 4, 5, 0, 1, 2]))
    with pytest.raises(ValueError, match="dim=5"):
        block_swap_matrix(5)


def test_continuous_batch_layout_eqs_3_4():
    X, y, q = make_continuous_icl_batch(5, 3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert X.shape == (5, 7, 8) and y.shape == (5, 4)
    M = block_swap_matrix(4, torch.float64)
    items, labels = X[:, 0:6:2], X[:, 1:6:2]
    torch.testing.assert_close(labels[..., 4:], items[..., 4:] @ M)  # label position code = p M
    assert torch.equal(X[:, -1, 4:], torch.zeros(5, 4))  # the query has no positional code
    rows = torch.arange(5)
    torch.testing.assert_close(X[:, -1, :4], items[rows, q, :4])
    torch.testing.assert_close(y, labels[rows, q, :4])


def test_orthonormal_batch_meets_assumption_7_and_rejects_N_above_D_over_2():
    X, y = orthonormal_icl_batch(3, 4, 8, torch.Generator().manual_seed(0), dtype=torch.float64)
    a, b = X[:, 0:8:2, :8], X[:, 1:8:2, :8]
    p, pm = X[:, 0:8:2, 8:], X[:, 1:8:2, 8:]
    content, pos = torch.cat([a, b], 1), torch.cat([p, pm], 1)
    eye = torch.eye(8, dtype=torch.float64).expand(3, 8, 8)
    torch.testing.assert_close(content @ content.transpose(1, 2), eye)
    torch.testing.assert_close(pos @ pos.transpose(1, 2), eye)
    torch.testing.assert_close(y, b[:, -1])  # q = N: the target is the last label
    with pytest.raises(ValueError, match="n_pairs=5 > dim/2 = 4"):
        orthonormal_icl_batch(2, 5, 8)


# --------------------------------------------------------------------------- models


@pytest.mark.parametrize("exclude_self", [True, False])
def test_tl_embedding_equals_plain_torch_forward_and_gradients(exclude_self):
    D, N = 4, 3
    dtl = build_disentangled(D, N, exclude_self=exclude_self, dtype="float64")
    assert sorted(trainable_parameters(dtl.model)) == [
        "blocks.0.attn.W_Q",
        "blocks.1.attn.W_Q",
        "unembed.W_U",
    ]
    g = torch.Generator().manual_seed(3)
    W = [
        torch.randn(2 * D, 2 * D, generator=g, dtype=torch.float64),
        torch.randn(4 * D, 4 * D, generator=g, dtype=torch.float64),
        torch.randn(8 * D, D, generator=g, dtype=torch.float64),
    ]
    dtl.set_weights(*W)
    X, y, _ = make_continuous_icl_batch(6, N, D, generator=g, dtype=torch.float64)
    z = dtl(X)
    ref = [w.clone().requires_grad_(True) for w in W]
    zr = disentangled_forward(X, *ref, exclude_self=exclude_self)
    torch.testing.assert_close(z, zr, rtol=0, atol=1e-12)
    (z - y).pow(2).sum().backward()
    (zr - y).pow(2).sum().backward()
    gq0, gq1 = tl_grad(dtl.model, "blocks.0.attn.W_Q")[0], tl_grad(dtl.model, "blocks.1.attn.W_Q")[0]
    torch.testing.assert_close(gq0[: 2 * D, : 2 * D], ref[0].grad, rtol=0, atol=1e-11)
    torch.testing.assert_close(gq1[: 4 * D, : 4 * D], ref[1].grad, rtol=0, atol=1e-11)
    torch.testing.assert_close(tl_grad(dtl.model, "unembed.W_U"), ref[2].grad, rtol=0, atol=1e-11)
    # entries of W_Q outside the W1 / W2 slices never get a gradient (no masking needed)
    assert gq0[2 * D :].abs().max() == 0 and gq0[:, 2 * D :].abs().max() == 0 and gq1[4 * D :].abs().max() == 0
    if exclude_self:  # the first row attends to nothing: strict mask, zero output
        _, cache = dtl.model.run_with_cache(dtl.embed(X), start_at_layer=0)
        assert cache["blocks.0.attn.hook_pattern"][:, 0, 0].abs().max() == 0
        assert torch.diagonal(cache["blocks.1.attn.hook_pattern"][:, 0], dim1=-2, dim2=-1).abs().max() == 0


def test_random_offset_positions_use_the_shifted_W_pos_and_train_it():
    model = standard_model(16, seed=0)
    b = make_token_icl_batch(4, generator=torch.Generator().manual_seed(0))
    logits = standard_forward(model, b.tokens, b.pos_offset)
    for row in range(4):  # by hand: row r embeds tokens + W_pos[offset_r + t]
        o = int(b.pos_offset[row])
        resid = model.W_E[b.tokens[row]] + model.W_pos[o : o + 17]
        ref = model(resid[None], start_at_layer=0)
        torch.testing.assert_close(logits[row], ref[0], rtol=1e-5, atol=1e-5)
    logits[:, -1].sum().backward()
    used = torch.zeros(32, dtype=torch.bool)
    for o in b.pos_offset.tolist():
        used[o : o + 17] = True
    grad_rows = tl_grad(model, "pos_embed.W_pos").abs().sum(-1) > 0
    assert torch.equal(grad_rows, used)
    name, _ = offset_pos_hook(model, b.pos_offset)
    assert name == "hook_pos_embed"


# --------------------------------------------------------------------------- 19-dim subspace


def test_pseudo_parameter_basis_is_orthogonal_and_round_trips():
    D = 6
    flat = {n: basis_matrix(n, D, torch.float64) for n in PSEUDO_PARAMS}
    for a in PSEUDO_PARAMS:
        for b in PSEUDO_PARAMS:
            if flat[a].shape == flat[b].shape:
                assert float((flat[a] * flat[b]).sum()) == (D if a == b else 0)
    coeffs = {n: float(i) - 9.0 for i, n in enumerate(PSEUDO_PARAMS)}
    W = weights_from_pseudo_parameters(coeffs, D, torch.float64)
    assert pseudo_parameters(*W) == pytest.approx(coeffs, abs=1e-12)
    assert subspace_residual(*W) == pytest.approx(0.0, abs=1e-12)
    # eq. 6 by hand: W1 = [[α1 I, 0], [0, α2 I + α3 M]]
    M = block_swap_matrix(D, torch.float64)
    expected = coeffs["alpha2"] * torch.eye(D, dtype=torch.float64) + coeffs["alpha3"] * M
    torch.testing.assert_close(W[0][D:, D:], expected)
    off = torch.zeros_like(W[0])
    off[0, D] = 1.0  # a content->position entry: orthogonal to the whole subspace
    assert subspace_residual(off, torch.zeros_like(W[1]), torch.zeros_like(W[2])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="delta1"):
        weights_from_pseudo_parameters({"delta1": 1.0}, D)


def test_theorem1_orbit_residual_is_exact_in_float64():
    res = orbit_residual(dim=4, n_pairs=2, n_base=4, seed=0)
    assert res["orbit_sequences"] == 4 * 384 * 16
    assert res["symmetrized"] < 1e-10  # the symmetrised gradient lies in the 19-dim subspace
    assert res["plain"] > 0.5  # ... while 4 plain sequences do not


# --------------------------------------------------------------------------- 3-parameter model


@pytest.mark.parametrize("abg", [(0.0, 0.0, 0.0), (0.3, 0.7, 0.9), (1.5, 3.0, 1.1), (-0.4, 2.0, 0.5)])
def test_closed_form_loss_equals_the_matrix_model(abg):
    D, N = 16, 4
    X, y = orthonormal_icl_batch(16, N, D, torch.Generator().manual_seed(0), dtype=torch.float64)
    W = weights_from_pseudo_parameters(dict(zip(("alpha3", "beta2", "gamma3"), abg)), D, torch.float64)
    per_seq = (disentangled_forward(X, *W) - y).pow(2).sum(-1)
    assert per_seq.numpy() == pytest.approx(np.full(16, closed_form_loss(*abg, N)), abs=1e-12)


def test_closed_form_gradient_matches_finite_differences():
    x = np.array([0.4, 1.3, 0.8])
    for n in (2, 5, 17):
        g = closed_form_grad(*x, n)
        for i in range(3):
            e = np.zeros(3)
            e[i] = 1e-6
            fd = (closed_form_loss(*(x + e), n) - closed_form_loss(*(x - e), n)) / 2e-6
            assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-10)


def test_projected_sgd_step_moves_exactly_the_three_coefficients_by_the_closed_form_gradient():
    """App. F's protocol: a full-matrix SGD step with the gradient projected on span{α₃, β₂, γ₃} changes the
    coefficients by −lr/D · ∂L/∂c of the closed form (orthonormal data: the loss is the same for every sample)."""
    D, N, lr = 8, 3, 2.0
    dtl = build_disentangled(D, N, dtype="float64")
    start = {"alpha3": 0.2, "beta2": 0.5, "gamma3": 0.7}
    dtl.set_weights(*weights_from_pseudo_parameters(start, D, torch.float64))
    handles = project_gradients_to_span(dtl, ("alpha3", "beta2", "gamma3"))
    X, y = orthonormal_icl_batch(4, N, D, torch.Generator().manual_seed(0), dtype=torch.float64)
    opt = torch.optim.SGD(dtl.trainable_parameters(), lr=lr)
    (dtl(X) - y).pow(2).sum(-1).mean().backward()
    opt.step()
    for h in handles:
        h.remove()
    after = pseudo_parameters(*dtl.weights())
    grad = dict(zip(("alpha3", "beta2", "gamma3"), closed_form_grad(*start.values(), N)))
    for name in PSEUDO_PARAMS:
        expected = start.get(name, 0.0) - lr / D * grad.get(name, 0.0)
        assert after[name] == pytest.approx(expected, abs=1e-12), name
    assert subspace_residual(*dtl.weights()) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="delta"):
        project_gradients_to_span(dtl, ("alpha3", "delta"))


def test_closed_form_at_zero_is_one_and_plateau_is_one_minus_one_over_2N():
    assert closed_form_loss(0.0, 0.0, 0.0, 7) == pytest.approx(1.0)
    assert closed_form_loss(0.0, 0.0, 1.0, 7) == pytest.approx(1 - 1 / 14)
    assert math.isfinite(closed_form_loss(3.0, 20.0, 1.0, 2))
