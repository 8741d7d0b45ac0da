"""Tests of ``analyses.task_vectors``: extraction, injection, PCA / silhouette geometry.

Injection is checked against closed forms: with no LayerNorm and zero biases, the logits are linear
in the last layer's ``resid_post`` (and in the last thing added into it: ``mlp_out``, or ``attn_out`` in an
attention-only model; not ``attn_out`` when an MLP reads it), so adding
``coeff * v`` there moves every logit by exactly ``coeff * v @ W_U``. PCA and the silhouette are
checked against data with known principal axes and a silhouette worked out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import hooks
import pretrained
from analyses.task_vectors import (
    coeff_sweep,
    inject_task_vector,
    latent_geometry,
    latent_geometry_figure,
    pca,
    residual_vectors,
    silhouette_score,
    task_vector,
)
from mechrecall import ZeroBiases, build_toy_model
from pretrained.testing import tiny_checkpoint

torch.set_num_threads(1)

LINEAR = dict(normalization_type=None, dtype="float64", d_vocab=12, n_ctx=16, d_model=16)
TOYS = {
    # 1-layer attention-only: logits = (resid_pre + attn_out) @ W_U
    "attn_only": dict(n_layers=1, n_heads=2, d_head=8, attn_only=True, **LINEAR),
    # 2 layers with MLPs: logits = blocks.1.hook_resid_post @ W_U = (resid_mid + mlp_out) @ W_U
    "mlp": dict(n_layers=2, n_heads=2, d_head=8, d_mlp=32, act_fn="relu", **LINEAR),
}


@pytest.fixture(scope="module", params=sorted(TOYS))
def toy(request):
    return build_toy_model(TOYS[request.param], [ZeroBiases()], seed=0)


@pytest.fixture(scope="module")
def mlp_toy():
    return build_toy_model(TOYS["mlp"], [ZeroBiases()], seed=0)


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Tiny random checkpoints loaded with ``pretrained.load`` (TL processing), by architecture."""
    root = tmp_path_factory.mktemp("tiny")
    return {arch: pretrained.load(str(tiny_checkpoint(root / arch, arch, seed=0))) for arch in ("gpt_neox", "gpt2")}


@pytest.fixture(scope="module")
def neox(tiny_models):
    return tiny_models["gpt_neox"]


def toy_tokens(model, batch=6, pos=7, seed=1):
    return torch.randint(1, model.cfg.d_vocab, (batch, pos), generator=torch.Generator().manual_seed(seed))


def linear_sites(model):
    """Sites of the last layer at which an added vector reaches the logits unchanged."""
    return ["resid_post", "attn_out" if model.cfg.attn_only else "mlp_out"]


# --------------------------------------------------------------------------- extraction


def test_residual_vectors_match_run_with_cache(mlp_toy):
    model, tokens = mlp_toy, toy_tokens(mlp_toy)
    _, cache = model.run_with_cache(tokens)
    for layer in range(model.cfg.n_layers):
        for site in ("resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out"):
            full = cache[f"blocks.{layer}.hook_{site}"]  # [batch, pos, d_model]
            assert torch.equal(residual_vectors(model, tokens, layer, site=site), full[:, -1])
            assert torch.equal(residual_vectors(model, tokens, layer, site=site, positions=2), full[:, 2])
            assert torch.equal(residual_vectors(model, tokens, layer, site=site, positions=-3), full[:, 4])
    # per-prompt query positions pick row i at position positions[i]
    positions = torch.tensor([0, 6, 3, -1, 2, 5])
    full = cache["blocks.1.hook_resid_pre"]
    got = residual_vectors(model, tokens, 1, positions=positions)
    for i, p in enumerate([0, 6, 3, 6, 2, 5]):
        assert torch.equal(got[i], full[i, p])
    assert not got.requires_grad


def test_task_vector_is_the_mean(mlp_toy):
    tokens = toy_tokens(mlp_toy)
    positions = torch.tensor([1, 2, 3, 4, 5, 6])
    rows = residual_vectors(mlp_toy, tokens, 1, site="resid_post", positions=positions)
    vec = task_vector(mlp_toy, tokens, 1, site="resid_post", positions=positions)
    assert vec.shape == (mlp_toy.cfg.d_model,)
    assert torch.allclose(vec, rows.sum(0) / len(rows), atol=1e-12)


# --------------------------------------------------------------------------- injection


def answer_direction(model, target: int) -> torch.Tensor:
    """Unit vector along W_U's column for ``target``: it raises that logit most per unit norm."""
    column = model.W_U[:, target].detach()
    return column / column.norm()


def test_injection_moves_target_logit_by_closed_form(toy):
    model, tokens = toy, toy_tokens(toy)
    last = model.cfg.n_layers - 1
    clean_logits = model(tokens)[:, -1].detach()
    target = int(clean_logits[0].argmin())  # the least likely token of prompt 0: not already the answer
    targets = torch.full((tokens.shape[0],), target)
    v = answer_direction(model, target)
    predicted = (v @ model.W_U).detach()  # [d_vocab]: change of every logit per unit coeff
    for site in linear_sites(model):
        for coeff in (0.5, -2.0, 7.0):
            out = inject_task_vector(model, tokens, v, last, targets=targets, coeff=coeff, site=site)
            assert torch.allclose(out["delta_logit"], coeff * predicted[targets], rtol=0, atol=1e-10)
            assert torch.equal(out["logit_target_clean"], clean_logits[:, target])
            assert out["mean_delta_logit"] == pytest.approx(coeff * predicted[target].item(), abs=1e-10)
            # all logits shift by coeff * predicted, so the target probability is a closed form too
            p = (clean_logits + coeff * predicted).softmax(-1)[:, target]
            assert torch.allclose(out["p_target_injected"], p, atol=1e-12)
        assert out["accuracy_clean"][0] == 0 and out["mean_accuracy_clean"] < 1
    # with a large enough coefficient the answer direction wins every prompt
    margin = (clean_logits.max(-1).values - clean_logits[:, target]).max()
    gain = predicted[target] - predicted.masked_fill(torch.arange(len(predicted)) == target, -math.inf).max()
    assert gain > 0  # the W_U column raises its own logit most (true of these models, not of every W_U)
    coeff = float(2 * margin / gain)
    out = inject_task_vector(model, tokens, v, last, targets=targets, coeff=coeff, site="resid_post")
    assert torch.equal(out["accuracy_injected"], torch.ones(len(tokens), dtype=out["accuracy_injected"].dtype))
    assert out["mean_accuracy_injected"] == 1.0 and out["mean_p_target_injected"] > out["mean_p_target_clean"]


def test_injection_only_at_query_position(toy):
    """hooks.add_vector at the query position leaves every other position's logits bit-exact, and the
    query logits are those inject_task_vector reports."""
    model, tokens = toy, toy_tokens(toy)
    last, target = model.cfg.n_layers - 1, 3
    targets = torch.full((len(tokens),), target)
    v = answer_direction(model, target)
    name = f"blocks.{last}.hook_resid_post"
    clean = model(tokens)
    with hooks.add_vector(model, name, v, coeff=4.0, positions=-1):
        injected = model(tokens)
    assert torch.equal(injected[:, :-1], clean[:, :-1])
    assert torch.allclose(injected[:, -1] - clean[:, -1], 4.0 * (v @ model.W_U), atol=1e-10)
    out = inject_task_vector(model, tokens, v, last, targets=targets, coeff=4.0, site="resid_post")
    assert torch.equal(out["logit_target_injected"], injected[:, -1, target])
    # at layer 0's resid_pre the edit reaches later positions through attention, so where it is added
    # matters: inject_task_vector adds at the query position only
    out = inject_task_vector(model, tokens, v, 0, targets=targets, coeff=4.0, site="resid_pre")
    with hooks.add_vector(model, "blocks.0.hook_resid_pre", v, coeff=4.0, positions=-1):
        assert torch.equal(out["logit_target_injected"], model(tokens)[:, -1, target])
    with hooks.add_vector(model, "blocks.0.hook_resid_pre", v, coeff=4.0):  # every position
        everywhere = model(tokens)[:, -1, target]
    assert (out["logit_target_injected"] - everywhere).abs().max() > 1e-6
    assert torch.equal(model(tokens), clean)  # nothing left behind


def test_per_prompt_positions_on_right_padded_prompts(toy):
    """Right-padded prompts with per-prompt query positions give the same result as each prompt alone
    with positions=-1, also at layer 0's resid_pre, where the injection passes through attention."""
    model = toy
    lengths = [5, 7, 3, 6]
    full = toy_tokens(model, batch=len(lengths), pos=max(lengths), seed=5)
    padded = full.clone()
    for i, n in enumerate(lengths):
        padded[i, n:] = 0  # pad token
    positions = torch.tensor(lengths) - 1
    targets = torch.tensor([1, 2, 3, 4])
    v = torch.randn(model.cfg.d_model, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    for layer, site in [(0, "resid_pre"), (model.cfg.n_layers - 1, "resid_post")]:
        vecs = residual_vectors(model, padded, layer, site=site, positions=positions)
        batch = inject_task_vector(model, padded, v, layer, targets=targets, coeff=3.0, site=site, positions=positions)
        assert batch["delta_logit"].abs().min() > 1e-6  # every prompt was actually edited
        for i, n in enumerate(lengths):
            alone = full[i : i + 1, :n]
            assert torch.allclose(vecs[i], residual_vectors(model, alone, layer, site=site)[0], atol=1e-12)
            one = inject_task_vector(model, alone, v, layer, targets=targets[i : i + 1], coeff=3.0, site=site)
            for key in ("logit_target_clean", "logit_target_injected", "p_target_injected"):
                assert torch.allclose(batch[key][i], one[key][0], atol=1e-10), (key, i)


def test_coeff_sweep_table(toy):
    model, tokens = toy, toy_tokens(toy)
    last, target = model.cfg.n_layers - 1, 5
    targets = torch.full((len(tokens),), target)
    v = answer_direction(model, target)
    coeffs = [0.0, 1.0, 5.0, 50.0]
    df = coeff_sweep(model, tokens, v, last, targets, coeffs, site="resid_post")
    assert list(df.columns) == ["coeff", "p_target", "logit_target", "accuracy", "delta_logit"]
    assert df["coeff"].tolist() == coeffs
    gain = (v @ model.W_U)[target].item()
    assert np.allclose(df["delta_logit"], [c * gain for c in coeffs], atol=1e-10)
    clean = inject_task_vector(model, tokens, v, last, targets=targets, coeff=0.0, site="resid_post")
    assert df["p_target"][0] == pytest.approx(clean["mean_p_target_clean"], abs=1e-12)
    assert df["accuracy"][0] == clean["mean_accuracy_clean"] < 1
    assert df["p_target"].is_monotonic_increasing and df["accuracy"].iloc[-1] == 1.0
    with pytest.raises(ValueError, match="coeffs is empty"):
        coeff_sweep(model, tokens, v, last, targets, [])


# --------------------------------------------------------------------------- toy and pretrained alike


@pytest.mark.parametrize("which", ["toy", "gpt_neox", "gpt2"])
def test_same_calls_on_toy_and_pretrained(which, mlp_toy, tiny_models):
    model = mlp_toy if which == "toy" else tiny_models[which]
    if which != "toy":
        prompts = [
            "Madrid is in Spain . Paris is in",
            "Rome is in Italy . Tokyo is in",
            "Cairo is in Egypt . Athens is in",
            "Lisbon is in Portugal . Berlin is in",
        ]
        tokens = model.to_tokens(prompts, prepend_bos=False)
        assert tokens.shape == (4, 8)
        targets = model.to_tokens([" France", " Japan", " Greece", " Germany"], prepend_bos=False)[:, 0]
    else:
        tokens, targets = toy_tokens(model, batch=4, pos=8), torch.tensor([1, 2, 3, 4])
    before = model(tokens)
    layer = 1
    rows = residual_vectors(model, tokens, layer, site="resid_post")
    vec = task_vector(model, tokens, layer, site="resid_post")
    assert rows.shape == (4, model.cfg.d_model) and vec.shape == (model.cfg.d_model,)

    zero = inject_task_vector(model, tokens, torch.zeros_like(vec), 0, targets=targets, coeff=3.0)
    assert torch.equal(zero["delta_logit"], torch.zeros(4, dtype=zero["delta_logit"].dtype))
    assert torch.equal(zero["p_target_injected"], zero["p_target_clean"])
    assert torch.equal(zero["accuracy_injected"], zero["accuracy_clean"])

    out = inject_task_vector(model, tokens, vec, 0, targets=targets, coeff=2.0, site="resid_pre")
    assert out["delta_logit"].abs().max() > 1e-4 and torch.isfinite(out["delta_logit"]).all()
    df = coeff_sweep(model, tokens, vec, layer, targets, [0.0, 1.0], site="mlp_out")
    assert len(df) == 2 and df["delta_logit"][0] == 0.0
    geometry = latent_geometry(rows, [0, 0, 1, 1])
    assert geometry["projected"].shape == (4, 2)
    assert geometry["silhouette"] == pytest.approx(silhouette_score(rows, torch.tensor([0, 0, 1, 1])))
    assert torch.equal(model(tokens), before)  # every hook removed: bit-exact


def test_neox_has_no_resid_mid(neox):
    tokens = torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"resid_mid.*parallel"):
        residual_vectors(neox, tokens, 0, site="resid_mid")


# --------------------------------------------------------------------------- bad input


def test_bad_input_errors(toy, without_shape_checks):
    model, tokens = toy, toy_tokens(toy)
    n_layers, d_model = model.cfg.n_layers, model.cfg.d_model
    v, targets = torch.zeros(d_model, dtype=torch.float64), torch.zeros(len(tokens), dtype=torch.long)
    cases = [
        (dict(site="resid"), r"site='resid'; expected one of \('resid_pre'"),
        (dict(layer=n_layers), rf"layer={n_layers} is out of range; expected an int in \[0, {n_layers - 1}\]"),
        (dict(layer=-1), r"layer=-1 is out of range"),
        (dict(layer=True), r"layer=True is out of range"),
        (dict(positions=7), r"positions \[7, .*out of range for prompts of length 7; expected ints in \[-7, 6\]"),
        (dict(positions=-8), r"out of range for prompts of length 7"),
        (
            dict(positions=torch.tensor([0, 1])),
            r"positions=a tensor of shape \(2,\).*expected an int or an int tensor \[batch=6\]",
        ),
        (dict(positions=torch.zeros(6)), r"dtype torch.float32.*expected an int or an int tensor"),
        (dict(positions=torch.tensor([0, 1, 2, 3, 4, 9])), r"positions \[0, 1, 2, 3, 4, 9\] out of range"),
        (dict(positions=[0, 1, 2, 3, 4, 5]), r"positions=\[0, 1, 2, 3, 4, 5\]; expected an int or an int tensor"),
        (dict(tokens=tokens[0]), r"tokens: got shape \(7,\).*expected an int tensor \[batch, pos\]"),
        (dict(tokens=tokens.double()), r"dtype torch.float64; expected an int tensor"),
        (dict(tokens=tokens + 100), r"token ids in \[.*\]; expected ids in \[0, 11\]"),
        (dict(tokens=torch.ones(1, 17, dtype=torch.long)), r"17 positions; the model's context is n_ctx=16"),
    ]
    for change, message in cases:
        kw = dict(tokens=tokens, layer=0, site="resid_pre", positions=-1) | change
        with pytest.raises(ValueError, match=message):
            residual_vectors(model, kw.pop("tokens"), kw.pop("layer"), **kw)
        kw = dict(tokens=tokens, layer=0, site="resid_pre", positions=-1) | change
        with pytest.raises(ValueError, match=message):
            inject_task_vector(model, kw.pop("tokens"), v, kw.pop("layer"), targets=targets, **kw)
    with pytest.raises(ValueError, match=r"vector has shape \(3,\).*expected a float tensor \[d_model=16\]"):
        inject_task_vector(model, tokens, torch.zeros(3), 0, targets=targets)
    with pytest.raises(ValueError, match=r"targets has shape \(2,\).*expected an int tensor \[batch=6\]"):
        inject_task_vector(model, tokens, v, 0, targets=targets[:2])
    with pytest.raises(ValueError, match=r"targets \[.*12\]; expected token ids in \[0, 11\]"):
        inject_task_vector(model, tokens, v, 0, targets=targets + 12)
    if model.cfg.attn_only:
        for site in ("mlp_out", "resid_mid"):
            with pytest.raises(ValueError, match=f"site='{site}': an attention-only model has no MLPs"):
                residual_vectors(model, tokens, 0, site=site)


# --------------------------------------------------------------------------- geometry


def test_pca_recovers_known_axes_and_variance(without_shape_checks):
    n, d = 200, 6
    gen = torch.Generator().manual_seed(0)
    basis, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))  # columns: true axes
    # coordinates with exactly orthogonal, centred columns of known norms sigma_i * sqrt(n)
    raw = torch.randn(n, d, generator=gen, dtype=torch.float64)
    coords, _ = torch.linalg.qr(raw - raw.mean(0))
    sigma = torch.tensor([5.0, 3.0, 2.0, 1.0, 0.5, 0.1], dtype=torch.float64)
    coords = coords * sigma * math.sqrt(n)
    points = coords @ basis.T + torch.arange(d, dtype=torch.float64)  # plus an offset (PCA centres)

    projected, components, ratio = pca(points, n_components=3)
    assert projected.shape == (n, 3) and components.shape == (3, d) and ratio.shape == (3,)
    cos = components @ basis[:, :3]  # [3, 3]: |diagonal| = 1, off-diagonal 0
    assert torch.allclose(cos.abs(), torch.eye(3, dtype=torch.float64), atol=1e-10)
    assert torch.allclose(ratio, sigma[:3] ** 2 / (sigma**2).sum(), atol=1e-12)
    assert torch.allclose(projected.abs(), coords[:, :3].abs(), atol=1e-8)
    assert torch.allclose(components @ components.T, torch.eye(3, dtype=torch.float64), atol=1e-12)
    # sign convention: each component's largest-|.| entry is positive
    assert (components.gather(1, components.abs().argmax(1, keepdim=True)) > 0).all()
    assert torch.equal(pca(-points, 3)[1], components)  # independent of the data's sign
    assert pca(points, d)[2].sum().item() == pytest.approx(1.0, abs=1e-12)
    for bad in (0, d + 1):
        with pytest.raises(ValueError, match=rf"n_components={bad}; expected an int in \[1, min\(n, d\)={d}\]"):
            pca(points, bad)
    with pytest.raises(ValueError, match=r"expected \[n, d\]"):
        pca(points[0])
    with pytest.raises(ValueError, match="identical"):
        pca(torch.ones(5, 3))


def test_silhouette_hand_computed():
    points = torch.tensor([[0.0], [1.0], [4.0], [6.0]])
    labels = [0, 0, 1, 1]
    # s = (b - a) / max(a, b); a = mean distance within own cluster, b = to the other cluster
    s0 = (mean([4, 6]) - 1) / max(1, mean([4, 6]))  # x=0: a=|0-1|, b=mean(|0-4|, |0-6|)
    s1 = (mean([3, 5]) - 1) / max(1, mean([3, 5]))  # x=1
    s2 = (mean([4, 3]) - 2) / max(2, mean([4, 3]))  # x=4: a=|4-6|
    s3 = (mean([6, 5]) - 2) / max(2, mean([6, 5]))  # x=6
    assert silhouette_score(points, labels) == pytest.approx((s0 + s1 + s2 + s3) / 4, abs=1e-12)
    assert silhouette_score(points, np.array(["a", "a", "b", "b"])) == pytest.approx((s0 + s1 + s2 + s3) / 4, abs=1e-12)
    # a singleton cluster scores 0, as in scikit-learn: points 0, 1 | 5
    three = torch.tensor([[0.0], [1.0], [5.0]])
    expected = ((5 - 1) / 5 + (4 - 1) / 4 + 0.0) / 3
    assert silhouette_score(three, torch.tensor([7, 7, 2])) == pytest.approx(expected, abs=1e-12)


def mean(xs):
    return sum(xs) / len(xs)


def clusters(k=3, per=30, d=8, spread=50.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centres = spread * torch.eye(d)[:k]
    points = torch.cat([c + torch.randn(per, d, generator=gen) for c in centres])
    return points, torch.arange(k).repeat_interleave(per)


def test_silhouette_separated_and_scrambled():
    points, labels = clusters()
    assert silhouette_score(points, labels) > 0.9
    scrambled = labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(1))]
    assert abs(silhouette_score(points, scrambled)) < 0.1
    with pytest.raises(ValueError, match=r"1 distinct value\(s\) for 90 points; expected 2 <= #labels <= n - 1 = 89"):
        silhouette_score(points, torch.zeros(90))
    with pytest.raises(ValueError, match=r"90 distinct value\(s\) for 90 points"):
        silhouette_score(points, torch.arange(90))
    with pytest.raises(ValueError, match=r"labels has shape \(89,\); expected one label per point, shape \(90,\)"):
        silhouette_score(points, labels[:-1])


def test_latent_geometry_and_figure():
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    points, labels = clusters()
    result = latent_geometry(points, labels)
    assert result["projected"].shape == (90, 2) and result["components"].shape == (2, 8)
    assert result["silhouette"] > 0.9 and result["silhouette_pca"] > 0.9
    assert result["explained_variance_ratio"].sum() > 0.8  # 3 centres span a 2-D plane
    fig = latent_geometry_figure(result, labels, ["copy", "reverse", "count"])
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["copy", "reverse", "count"]
    assert ax.get_xlabel().startswith("PC1") and len(ax.collections) == 3
    plt.close(fig)
    with pytest.raises(ValueError, match="k >= 2"):
        latent_geometry_figure(latent_geometry(points, labels, n_components=1), labels)
