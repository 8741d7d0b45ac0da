"""Low-rank truncation (``hooks.low_rank``, ``analyses.laser_sweep``) against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pretrained
from analyses import laser_sweep, singular_values
from hooks import MATRICES, get_matrix, low_rank, rank_for, truncate
from hooks import weights as weights_module


def _np_truncate(W: torch.Tensor, k: int) -> torch.Tensor:
    """``U[:, :k] diag(S[:k]) Vh[:k]`` from numpy's SVD in float64."""
    U, S, Vh = np.linalg.svd(W.detach().double().numpy(), full_matrices=False)
    return torch.from_numpy((U[:, :k] * S[:k]) @ Vh[:k])


def _tokens(model, batch=2, pos=10, seed=0):
    vocab = (
        model.cfg.d_vocab if getattr(model, "tokenizer", None) is None else min(model.cfg.d_vocab, len(model.tokenizer))
    )
    return torch.randint(0, vocab, (batch, pos), generator=torch.Generator().manual_seed(seed))


def test_rank_convention():
    assert rank_for(0.0, (10, 30)) == 0
    assert rank_for(1.0, (10, 30)) == 10
    assert rank_for(0.29, (100, 100)) == 29  # int(0.29 * 100) == 28 in floating point
    assert rank_for(0.01, (2048, 8192)) == 20
    for bad in (-0.1, 1.5, float("nan"), "0.5"):
        with pytest.raises(ValueError, match="expected the kept-rank fraction in"):
            rank_for(bad, (4, 4))


def test_truncate_equals_an_independent_svd(without_shape_checks):
    W = torch.randn(12, 7, generator=torch.Generator().manual_seed(0))
    for rho, k in ((0.3, 2), (0.5, 3), (0.9, 6)):
        torch.testing.assert_close(truncate(W, rho).double(), _np_truncate(W, k), rtol=0, atol=1e-5)
        assert torch.linalg.matrix_rank(truncate(W, rho).double(), atol=1e-4) == k
    assert torch.equal(truncate(W, 0.0), torch.zeros_like(W))
    assert torch.equal(truncate(W, 1.0), W)
    with pytest.raises(ValueError, match="2-D matrix"):
        truncate(torch.zeros(2, 3, 4), 0.5)


def _with_spectrum(S: np.ndarray, m: int, n: int, seed: int) -> torch.Tensor:
    """``U diag(S) Vᵀ`` with Haar-random orthonormal ``U [m, r]``, ``V [n, r]`` (``r = len(S)``)."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((m, len(S))))
    V, _ = np.linalg.qr(rng.standard_normal((n, len(S))))
    return torch.from_numpy((U * S) @ V.T)


def _gram_cases() -> dict[str, tuple[torch.Tensor, list[int]]]:
    """Matrices and the ranks ``k`` at which a truncation of each is unique (a gap at ``k``)."""
    g = torch.Generator().manual_seed(0)
    decades = np.logspace(0, -6, 80)  # a spectrum over six decades
    decades[40] = decades[41]  # a repeated singular value (the truncation is not unique at k = 41 only)
    deficient = np.concatenate([np.linspace(3.0, 1.0, 10), np.zeros(54)])  # rank 10 of 64
    return {
        "gaussian wide": (torch.randn(96, 400, generator=g, dtype=torch.float64), [0, 1, 5, 48, 95, 96]),
        "gaussian tall": (torch.randn(400, 96, generator=g, dtype=torch.float64), [1, 20, 96]),
        "six decades": (_with_spectrum(decades, 80, 300, seed=1), [1, 10, 40, 42, 70, 80]),
        "rank 10 of 64": (_with_spectrum(deficient, 64, 200, seed=2), [3, 10, 30, 64]),
    }


@pytest.mark.parametrize("case", list(_gram_cases()))
def test_gram_svd_equals_lapacks_where_a_truncation_reads_it(case):
    W, ranks = _gram_cases()[case]
    U, S, Vh = weights_module.gram_svd(W)
    S_np = np.linalg.svd(W.numpy(), compute_uv=False)
    scale = float(S_np[0])
    np.testing.assert_allclose(S.numpy(), S_np, rtol=0, atol=1e-12 * scale)
    assert torch.all(S[:-1] >= S[1:])
    torch.testing.assert_close(U.mT @ U, torch.eye(U.shape[1], dtype=U.dtype), rtol=0, atol=1e-10)
    kept = scale * 1e-3 < S  # Vh's rows are orthonormal to eps · σ₁² / (σ_i σ_j) (gram_svd's docstring)
    torch.testing.assert_close(Vh[kept] @ Vh[kept].mT, torch.eye(int(kept.sum()), dtype=W.dtype), rtol=0, atol=1e-9)
    factors = weights_module.SVD(U, S, Vh)
    for k in ranks:
        torch.testing.assert_close(
            weights_module.from_svd(factors, k, W), _np_truncate(W, k), rtol=0, atol=1e-10 * scale
        )


def test_svd_takes_the_gram_route_for_a_models_matrices_in_float64(monkeypatch):
    routed = []
    real = weights_module.gram_svd
    monkeypatch.setattr(weights_module, "gram_svd", lambda W: routed.append(tuple(W.shape)) or real(W))
    g = torch.Generator().manual_seed(0)
    big, small = torch.randn(512, 700, generator=g), torch.randn(96, 700, generator=g)
    weights_module.svd(big)
    weights_module.svd(small)
    weights_module.svd(big, torch.float32)  # squaring the condition number in float32: LAPACK
    weights_module.svd(small, method="gram")
    assert routed == [(512, 700), (96, 700)]
    with pytest.raises(ValueError, match="method='eig'; expected 'auto', 'lapack' or 'gram'"):
        weights_module.svd(small, method="eig")


def _attn_matrix_by_concatenation(model, layer, kind):
    """The 2-D attention matrix built head by head with torch.cat (independent of einops)."""
    attn = model.blocks[layer].attn
    if kind == "attn_o":
        return torch.cat([attn.W_O[h] for h in range(model.cfg.n_heads)], dim=0)
    W = {"attn_q": attn.W_Q, "attn_k": attn.W_K, "attn_v": attn.W_V}[kind]
    return torch.cat([W[h] for h in range(model.cfg.n_heads)], dim=1)


@pytest.mark.parametrize("kind", MATRICES)
def test_low_rank_inside_equals_truncation_and_outside_is_restored(any_model, kind):
    model = any_model
    layer, rho, head = 1, 0.4, (1 if kind == "attn_ov" else None)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    if kind.startswith("attn") and kind != "attn_ov":
        original = _attn_matrix_by_concatenation(model, layer, kind)
        torch.testing.assert_close(get_matrix(model, layer, kind), original, rtol=0, atol=0)
    elif kind == "attn_ov":
        attn = model.blocks[layer].attn
        original = attn.W_V[head].detach() @ attn.W_O[head].detach()
    else:
        original = get_matrix(model, layer, kind).clone()
    k = rank_for(rho, tuple(original.shape))
    expected = _np_truncate(original, k)
    with pytest.raises(KeyError):
        with low_rank(model, layer, kind, rho, head=head):
            if kind.startswith("attn") and kind != "attn_ov":
                inside = _attn_matrix_by_concatenation(model, layer, kind)
            else:
                inside = get_matrix(model, layer, kind, head)
            torch.testing.assert_close(inside.double(), expected, rtol=0, atol=1e-5)
            raise KeyError("an exception inside the block")
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name


@pytest.mark.parametrize(
    "arch,kind", [("gpt_neox", "mlp_in"), ("gpt_neox", "mlp_out"), ("gpt2", "mlp_in"), ("gpt2", "mlp_out")]
)
@torch.no_grad()
def test_laser_on_raw_weights_matches_truncating_the_hf_matrix(tiny_dirs, arch, kind):
    """LASER on the HF model's own weight (HF ``[out, in]`` layout), compared through the logits."""
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(tiny_dirs[arch], local_files_only=True).eval()
    model = pretrained.load(str(tiny_dirs[arch]), processing="raw")
    layer, rho = 1, 0.25
    if arch == "gpt_neox":
        name = {"mlp_in": "dense_h_to_4h", "mlp_out": "dense_4h_to_h"}[kind]
        weight = getattr(hf.gpt_neox.layers[layer].mlp, name).weight
    else:
        name = {"mlp_in": "c_fc", "mlp_out": "c_proj"}[kind]
        weight = getattr(hf.transformer.h[layer].mlp, name).weight  # Conv1D: [in, out]
    weight.copy_(_np_truncate(weight, rank_for(rho, tuple(weight.shape))).to(weight.dtype))
    tokens = _tokens(model, pos=16)
    hf_logprobs = hf(tokens).logits.log_softmax(-1)
    with low_rank(model, layer, kind, rho):
        tl_logprobs = model(tokens).log_softmax(-1)
    assert (tl_logprobs - hf_logprobs).abs().max().item() < 1e-4
    assert (model(tokens).log_softmax(-1) - hf_logprobs).abs().max().item() > 1e-3  # restored: differs again


def test_low_rank_refuses_tl_processed_weights(tiny_dirs):
    model = pretrained.load(str(tiny_dirs["gpt_neox"]), processing="tl")
    with pytest.raises(ValueError, match="processing='raw'"):
        with low_rank(model, 0, "mlp_in", 0.5):
            pass
    with pytest.raises(ValueError, match="processing='raw'"):
        laser_sweep(model, lambda m: 0.0, rhos=[0.5])
    with low_rank(model, 0, "mlp_in", 0.5, allow_processed=True):
        pass


def test_low_rank_bad_input(any_model):
    with pytest.raises(ValueError, match="matrix='fc_in'"):
        with low_rank(any_model, 0, "fc_in", 0.5):
            pass
    with pytest.raises(ValueError, match="layer=7 is out of range"):
        with low_rank(any_model, 7, "mlp_in", 0.5):
            pass
    with pytest.raises(ValueError, match="needs head="):
        with low_rank(any_model, 0, "attn_ov", 0.5):
            pass
    with pytest.raises(ValueError, match="rho=2"):
        with low_rank(any_model, 0, "mlp_in", 2):
            pass


# --------------------------------------------------------------------------- sweeps


@torch.no_grad()
def test_sweep_computes_one_svd_per_matrix_and_matches_single_truncations(any_model, monkeypatch):
    model = any_model
    tokens = _tokens(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    calls = []
    real_svd = weights_module.svd
    monkeypatch.setattr(
        weights_module, "svd", lambda W, dtype=torch.float64: calls.append(W.shape) or real_svd(W, dtype)
    )

    def metric(m):
        logprobs = m(tokens).log_softmax(-1)
        return {
            "logprob": logprobs[:, -1, 0].mean().item(),
            "entropy": -(logprobs.exp() * logprobs).sum(-1).mean().item(),
        }

    rhos = [0.0, 0.1, 0.5, 1.0]
    result = laser_sweep(model, metric, matrices=["mlp_in", "attn_v", "attn_ov"], rhos=rhos, heads=[0])
    n_matrices = model.cfg.n_layers * 3
    assert result.n_svd == n_matrices == len(calls)
    assert len(result.table) == n_matrices * len(rhos) * 2
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name
    monkeypatch.setattr(weights_module, "svd", real_svd)
    for layer, kind, rho in [(0, "mlp_in", 0.1), (1, "attn_v", 0.5), (1, "mlp_in", 0.0)]:
        with low_rank(model, layer, kind, rho):
            expected = metric(model)["logprob"]
        row = result.table.query("layer == @layer and matrix == @kind and rho == @rho and metric == 'logprob'")
        assert row["value"].item() == pytest.approx(expected, abs=1e-5)
    full = result.table.query("rho == 1.0 and metric == 'entropy'")["value"]
    assert (full == result.baseline["entropy"]).all()
    best = result.best("logprob")
    assert best["value"] == result.table.query("metric == 'logprob'")["value"].max()
    fig = result.figure("entropy")
    image = fig.axes[0].images[0]  # panel "mlp_in" (matrices in table order): layers x rho, the entropy values
    grid = result.table.query("metric == 'entropy' and matrix == @fig.axes[0].get_title()").pivot_table(
        index="layer", columns="rho", values="value"
    )
    assert image.get_array().data.ravel().tolist() == pytest.approx(grid.to_numpy().ravel().tolist())


def test_sweep_restores_weights_when_the_metric_raises(any_model):
    before = {k: v.clone() for k, v in any_model.state_dict().items()}
    calls = []

    def metric(m):
        calls.append(1)
        if len(calls) == 3:
            raise ArithmeticError("metric failed")
        return 0.0

    with pytest.raises(ArithmeticError):
        laser_sweep(any_model, metric, matrices=["mlp_out"], rhos=[0.0, 0.5])
    for name, value in any_model.state_dict().items():
        assert torch.equal(value, before[name]), name


def test_sweep_checks_everything_before_work(any_model):
    calls = []
    with pytest.raises(ValueError, match="matrices="):
        laser_sweep(any_model, lambda m: calls.append(1) or 0.0, matrices=["W_in"])
    with pytest.raises(ValueError, match="rho=-1"):
        laser_sweep(any_model, lambda m: calls.append(1) or 0.0, rhos=[0.5, -1.0])
    with pytest.raises(ValueError, match="layer=5"):
        laser_sweep(any_model, lambda m: calls.append(1) or 0.0, layers=[5])
    assert calls == []


def test_singular_values_match_numpy(any_model):
    W = get_matrix(any_model, 0, "mlp_out")
    np.testing.assert_allclose(
        singular_values(any_model, 0, "mlp_out").numpy(),
        np.linalg.svd(W.double().numpy(), compute_uv=False),
        rtol=1e-10,
        atol=1e-12,
    )
