"""The toy-model builder: each surgery checked against an independent plain-torch computation."""

import math

import pytest
import torch

from mechrecall import (
    Freeze,
    LinearFeedForward,
    NoFeedForward,
    PermanentHook,
    PreviousTokenEmbedding,
    SetActivation,
    SetWeight,
    TrainableEntries,
    ZeroBiases,
    build_from_spec,
    build_toy_model,
    model_spec,
    trainable_parameters,
)
from mechrecall._tl import HookedTransformer, tl_grad, tl_parameter, tl_parameters, weight

D, V, T = 16, 11, 8


def chen_config(**overrides):
    """Chen, Bruna & Bietti's two-layer model (§3.1) at a tiny size."""
    cfg = dict(
        n_layers=2,
        n_heads=1,
        d_model=D,
        d_head=D,
        d_mlp=4 * D,
        d_vocab=V,
        n_ctx=T,
        act_fn="relu",
        normalization_type=None,
        dtype="float64",
    )
    cfg.update(overrides)
    return cfg


CHEN_SURGERIES = [
    ZeroBiases(),
    SetWeight(("embed.W_E", "pos_embed.W_pos"), "normal"),
    SetWeight(("unembed.W_U",), "torch_linear"),
    SetWeight(("blocks.*.attn.W_Q",), "identity"),
]


def reference_forward(model, tokens, ff=("mlp", "mlp")):
    """Seed Eq. 1 written out in plain torch from the model's weights: no W_Q, no biases."""
    x = model.embed.W_E[tokens] + model.pos_embed.W_pos[: tokens.shape[1]]
    causal = torch.ones(tokens.shape[1], tokens.shape[1], dtype=torch.bool).tril()
    for layer, kind in enumerate(ff):
        block = model.blocks[layer]
        k, v = x @ block.attn.W_K[0], x @ block.attn.W_V[0]
        scores = (x @ k.transpose(1, 2)) / math.sqrt(D)
        attn = torch.softmax(scores.masked_fill(~causal, float("-inf")), -1)
        x = x + attn @ v @ block.attn.W_O[0]
        if kind == "mlp":
            x = x + torch.relu(x @ block.mlp.W_in) @ block.mlp.W_out
        elif kind == "linear":
            x = x + x @ block.mlp.W_F
    return x @ model.unembed.W_U


@pytest.fixture
def tokens():
    return torch.randint(0, V, (3, T), generator=torch.Generator().manual_seed(0))


def test_chen_model_matches_plain_torch_equation(tokens):
    model = build_toy_model(chen_config(), CHEN_SURGERIES, seed=1)
    assert isinstance(model, HookedTransformer)
    assert torch.equal(model.blocks[0].attn.W_Q[0], torch.eye(D, dtype=torch.float64))
    for name, p in tl_parameters(model).items():
        if name.rsplit(".", 1)[-1].startswith("b_"):
            assert not weight(model, name).requires_grad and not p.any(), name
    trainable = set(trainable_parameters(model))
    assert trainable == {
        f"blocks.{l}.{w}" for l in (0, 1) for w in ("attn.W_K", "attn.W_V", "attn.W_O", "mlp.W_in", "mlp.W_out")
    }
    torch.testing.assert_close(model(tokens), reference_forward(model, tokens), rtol=0, atol=1e-10)


@pytest.mark.parametrize("ff", [("mlp", "linear"), ("linear", "mlp"), ("mlp", "none"), ("linear", "linear")])
def test_feed_forward_variants_match_reference(tokens, ff):
    surgeries = list(CHEN_SURGERIES)
    linear = tuple(i for i, kind in enumerate(ff) if kind == "linear")
    none = tuple(i for i, kind in enumerate(ff) if kind == "none")
    if linear:
        surgeries.append(LinearFeedForward(linear))
    if none:
        surgeries.append(NoFeedForward(none))
    model = build_toy_model(chen_config(), surgeries, seed=2)
    logits, cache = model.run_with_cache(tokens)
    torch.testing.assert_close(logits, reference_forward(model, tokens, ff), rtol=0, atol=1e-10)
    for layer in linear:
        # TL's MLP hook names survive the swap, and hook_post is exactly x @ W_F.
        x = cache[f"blocks.{layer}.hook_resid_mid"]
        assert torch.equal(cache[f"blocks.{layer}.mlp.hook_pre"], x)
        torch.testing.assert_close(cache[f"blocks.{layer}.hook_mlp_out"], x @ model.blocks[layer].mlp.W_F)
        assert weight(model, f"blocks.{layer}.mlp.W_F").requires_grad
    for layer in none:
        assert not cache[f"blocks.{layer}.hook_mlp_out"].any()


def test_one_hot_and_orthonormal_embeddings():
    model = build_toy_model(
        dict(
            n_layers=1,
            n_heads=1,
            d_model=V + T,
            d_head=V + T,
            d_vocab=V,
            n_ctx=T,
            attn_only=True,
            normalization_type=None,
        ),
        [
            SetWeight(("embed.W_E",), "one_hot"),
            SetWeight(("pos_embed.W_pos",), "one_hot", offset=V),
            SetWeight(("unembed.W_U",), "one_hot"),
        ],
    )
    expected_e = torch.zeros(V, V + T)
    expected_e[:, :V] = torch.eye(V)
    assert torch.equal(model.W_E, expected_e)  # W_E = [I_V | 0]
    assert torch.equal(model.W_pos[:, V:], torch.eye(T)) and not model.W_pos[:, :V].any()  # W_pos = [0 | I_T]
    assert torch.equal(model.W_U, expected_e.T)  # tied: W_U = W_E^T
    assert not any(p.requires_grad for p in (model.W_E, model.W_pos, model.W_U))

    # Chen et al. Eq. 2: W_E, W̃_E and W_U mutually orthonormal (one QR).
    d = 3 * V + 2
    theory = build_toy_model(
        dict(
            n_layers=1,
            n_heads=1,
            d_model=d,
            d_head=d,
            d_vocab=V,
            n_ctx=T,
            d_mlp=d,
            act_fn="relu",
            normalization_type=None,
            dtype="float64",
        ),
        [PreviousTokenEmbedding(), SetWeight(("embed.W_E", "embed.W_E_prev", "unembed.W_U"), "orthonormal")],
        seed=5,
    )
    vectors = torch.cat([theory.embed.W_E, theory.embed.W_E_prev, theory.unembed.W_U.T])
    torch.testing.assert_close(vectors @ vectors.T, torch.eye(3 * V, dtype=torch.float64), rtol=0, atol=1e-12)


def test_previous_token_embedding_adds_shifted_embedding(tokens):
    model = build_toy_model(
        dict(n_layers=1, n_heads=1, d_model=D, d_head=D, d_vocab=V, n_ctx=T, attn_only=True, normalization_type=None),
        [PreviousTokenEmbedding(), SetWeight(("embed.W_E_prev",), "normal")],
    )
    _, cache = model.run_with_cache(tokens)
    expected = model.embed.W_E[tokens].clone()
    expected[:, 1:] += model.embed.W_E_prev[tokens[:, :-1]]
    torch.testing.assert_close(cache["hook_embed"], expected)


def test_square_activation(tokens):
    model = build_toy_model(chen_config(), [ZeroBiases(), SetActivation("square")])
    _, cache = model.run_with_cache(tokens)
    x = cache["blocks.0.hook_resid_mid"]
    torch.testing.assert_close(
        cache["blocks.0.hook_mlp_out"], (x @ model.blocks[0].mlp.W_in) ** 2 @ model.blocks[0].mlp.W_out
    )


def test_relative_key_positions_and_no_skip_match_model_b_equation():
    """Vasudeva et al. Model B (Eq. 1): score(t, i) = (x_i + h(p_{i-t}))ᵀ W_KQ x_t, no skip connection,
    one-hot tokens, positions only on the keys; logits = h(v)ᵀ f."""
    n_pos = T
    d = V + n_pos
    model = build_toy_model(
        dict(
            n_layers=1,
            n_heads=2,
            d_model=d,
            d_head=d,
            d_vocab=V,
            n_ctx=T,
            attn_only=True,
            normalization_type=None,
            use_attn_scale=False,
            dtype="float64",
        ),
        [
            ZeroBiases(),
            SetWeight(("embed.W_E",), "one_hot"),
            SetWeight(("unembed.W_U",), "one_hot"),
            SetWeight(("pos_embed.W_pos",), "zeros"),
            SetWeight(("blocks.0.attn.W_Q", "blocks.0.attn.W_O"), "identity"),
            PermanentHook("relative_key_positions", {"layer": 0, "pos_offset": V, "n_pos": n_pos}),
            PermanentHook("no_skip_connection", {"layer": 0}),
        ],
        seed=3,
    )
    model.reset_hooks()  # permanent hooks must survive this
    tokens = torch.randint(0, V, (2, T), generator=torch.Generator().manual_seed(1))
    x = torch.eye(d, dtype=torch.float64)[tokens]  # [b, t, d] one-hot
    W_KQ, W_OV = model.blocks[0].attn.W_K, model.blocks[0].attn.W_V.transpose(1, 2)  # per head [d, d]
    f = torch.zeros(2, T, d, dtype=torch.float64)
    for h in range(2):
        for t in range(T):
            keys = x[:, : t + 1].clone()
            for i in range(t + 1):
                keys[:, i, V + n_pos - 1 + (i - t)] += 1  # h(p_{i-t})
            scores = torch.einsum("bid,de,be->bi", keys, W_KQ[h], x[:, t])
            g = (torch.softmax(scores, -1)[:, :, None] * x[:, : t + 1]).sum(1)
            f[:, t] += g @ W_OV[h].T
    torch.testing.assert_close(model(tokens), f[..., :V], rtol=0, atol=1e-10)
    # And gradients reach the positional rows of W_K through the hook.
    model(tokens).sum().backward()
    assert tl_grad(model, "blocks.0.attn.W_K")[:, V:].abs().sum() > 0


def test_strict_causal_mask():
    model = build_toy_model(
        dict(n_layers=2, n_heads=1, d_model=D, d_head=D, d_vocab=V, n_ctx=T, attn_only=True, normalization_type=None),
        [PermanentHook("strict_causal_mask", {"layers": [0, 1]})],
    )
    _, cache = model.run_with_cache(torch.arange(T)[None] % V)
    for layer in (0, 1):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0, 0]
        assert not pattern.diagonal().any()
        assert not pattern[0].any()  # the first query has no admissible key
        torch.testing.assert_close(pattern[1:].sum(-1), torch.ones(T - 1))


def test_spec_round_trip_and_determinism(tokens):
    surgeries = [
        *CHEN_SURGERIES,
        LinearFeedForward((1,)),
        PermanentHook("strict_causal_mask", {"layers": [1]}),
        TrainableEntries("blocks.0.attn.W_K", ((0, 1), (0, 4), None)),
    ]
    a = build_toy_model(chen_config(), surgeries, seed=7)
    b = build_from_spec(model_spec(a))
    assert model_spec(b) == model_spec(a)
    for (name, pa), (_, pb) in zip(tl_parameters(a).items(), tl_parameters(b).items()):
        assert torch.equal(pa, pb), name
    assert set(trainable_parameters(a)) == set(trainable_parameters(b))
    torch.testing.assert_close(a(tokens), b(tokens), rtol=0, atol=0)
    c = build_toy_model(chen_config(), surgeries, seed=8)
    assert not torch.equal(a.W_E, c.W_E)


def test_trainable_entries_mask_gradient(tokens):
    model = build_toy_model(chen_config(), [TrainableEntries("blocks.0.attn.W_K", ((0, 1), (0, 4), (2, 5)))])
    model(tokens).sum().backward()
    grad = tl_grad(model, "blocks.0.attn.W_K")
    assert grad[0, :4, 2:5].abs().sum() > 0
    grad[0, :4, 2:5] = 0
    assert not grad.any()
    assert model.mechrecall_entry_masks["blocks.0.attn.W_K"].sum() == 12


@pytest.mark.parametrize(
    "cfg, surgeries, message",
    [
        (chen_config(d_head=4, n_heads=4), [SetWeight(("blocks.*.attn.W_Q",), "identity")], "d_head == d_model"),
        (chen_config(), [Freeze(("blocks.0.attn.W_nope",))], "W_nope"),
        (chen_config(), [SetWeight(("embed.W_E",), "sparkly")], "sparkly"),
        (chen_config(), [LinearFeedForward((2,))], "blocks=[2]"),
        (chen_config(attn_only=True), [LinearFeedForward((0,))], "attn_only"),
        (chen_config(), [LinearFeedForward((0,)), SetActivation("square", (0,))], "has no activation"),
        (chen_config(), [PermanentHook("no_such_hook")], "no_such_hook"),
        (chen_config(), [PermanentHook("no_skip_connection", {"layer": 5})], "layer=5"),
        (chen_config(), [SetWeight(("embed.W_E", "unembed.W_U"), "orthonormal")], "d_model >= 22"),
        (chen_config(), [SetWeight(("embed.W_E",), "one_hot", offset=10)], "offset=10"),
        (chen_config(), [TrainableEntries("blocks.0.attn.W_K", ((0, 2),))], "(0, 2)"),
        (chen_config(act_fn="sparkle"), [], "invalid model config"),
        (chen_config(n_ctx=0), [], "n_ctx=0"),
        (dict(chen_config(), d_modle=3), [], "d_modle"),
        (chen_config(), [{"kind": "teleport"}], "teleport"),
    ],
)
def test_bad_input_raises_value_error_naming_it(cfg, surgeries, message):
    with pytest.raises(ValueError, match=None) as info:
        build_toy_model(cfg, surgeries)
    assert message in str(info.value)


def test_theory_model_of_chen_eq2():
    """Chen et al. Eq. 2: x_t = W_E(z_t) + W̃_E(z_{t-1}); ξ = W_U φ + W_U W_F x_T, with φ the attention output
    of the last position, W_QK and W_V single matrices, W_E, W̃_E, W_U mutually orthonormal (so the direct
    path W_U x_T is exactly 0), and F reading x_T in parallel with attention."""
    n_tokens, d = 6, 24
    model = build_toy_model(
        dict(
            n_layers=1,
            n_heads=1,
            d_model=d,
            d_head=d,
            d_mlp=d,
            d_vocab=n_tokens,
            n_ctx=T,
            act_fn="relu",
            normalization_type=None,
            use_attn_scale=False,
            parallel_attn_mlp=True,
            dtype="float64",
        ),
        [
            ZeroBiases(),
            PreviousTokenEmbedding(),
            SetWeight(("embed.W_E", "embed.W_E_prev", "unembed.W_U"), "orthonormal"),
            SetWeight(("pos_embed.W_pos",), "zeros"),
            SetWeight(("blocks.0.attn.W_Q", "blocks.0.attn.W_O"), "identity"),
            SetWeight(("blocks.0.attn.W_K", "blocks.0.attn.W_V"), "zeros", freeze=False),
            LinearFeedForward((0,), init="zeros"),
        ],
        seed=4,
    )
    assert set(trainable_parameters(model)) == {"blocks.0.attn.W_K", "blocks.0.attn.W_V", "blocks.0.mlp.W_F"}
    zero_init_logits = model(torch.randint(0, n_tokens, (2, T), generator=torch.Generator().manual_seed(1)))
    torch.testing.assert_close(zero_init_logits, torch.zeros_like(zero_init_logits), rtol=0, atol=1e-12)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name in trainable_parameters(model):
            tl_parameter(model, name).copy_(
                torch.randn(tl_parameter(model, name).shape, generator=g, dtype=torch.float64)
            )
    tokens = torch.randint(0, n_tokens, (3, T), generator=g)
    x = model.embed.W_E[tokens].clone()
    x[:, 1:] += model.embed.W_E_prev[tokens[:, :-1]]
    x_T = x[:, -1]
    W_K, W_V, W_F = model.blocks[0].attn.W_K[0], model.blocks[0].attn.W_V[0], model.blocks[0].mlp.W_F
    alpha = torch.softmax(torch.einsum("bd,btd->bt", x_T, x @ W_K), -1)
    phi = torch.einsum("bt,btd->bd", alpha, x @ W_V)
    xi = phi @ model.unembed.W_U + (x_T @ W_F) @ model.unembed.W_U
    torch.testing.assert_close(model(tokens)[:, -1], xi, rtol=0, atol=1e-10)


def disentangled_reference(X, W1, W2, W3):
    """Musat et al. eq. 1 (strict causal mask), written from the paper, in plain torch."""

    def causal_softmax(S):
        allowed = torch.ones(S.shape[-1], S.shape[-1], dtype=torch.bool).tril(-1)
        return torch.nan_to_num(torch.softmax(S.masked_fill(~allowed, float("-inf")), -1), nan=0.0)

    U = torch.cat([X, causal_softmax(X @ W1 @ X.transpose(1, 2)) @ X], -1)
    V = torch.cat([U, causal_softmax(U @ W2 @ U.transpose(1, 2)) @ U], -1)
    return V[:, -1] @ W3


def test_disentangled_transformer_of_musat_et_al():
    """The concatenated (2D -> 4D -> 8D) residual stream as frozen identity blocks in one 8D-wide model;
    only the W_Q blocks (W1, W2) and W_U (W3) train."""
    Dm, N = 3, 3
    L = 2 * N + 1
    model = build_toy_model(
        dict(
            n_layers=2,
            n_heads=1,
            d_model=8 * Dm,
            d_head=4 * Dm,
            n_ctx=L,
            d_vocab=1,
            d_vocab_out=Dm,
            attn_only=True,
            normalization_type=None,
            use_attn_scale=False,
            dtype="float64",
        ),
        [
            SetWeight(("*",), "zeros"),
            SetWeight(
                ("blocks.0.attn.W_K", "blocks.0.attn.W_V"), "identity", region=((0, 1), (0, 2 * Dm), (0, 2 * Dm))
            ),
            SetWeight(("blocks.0.attn.W_O",), "identity", region=((0, 1), (0, 2 * Dm), (2 * Dm, 4 * Dm))),
            SetWeight(
                ("blocks.1.attn.W_K", "blocks.1.attn.W_V"), "identity", region=((0, 1), (0, 4 * Dm), (0, 4 * Dm))
            ),
            SetWeight(("blocks.1.attn.W_O",), "identity", region=((0, 1), (0, 4 * Dm), (4 * Dm, 8 * Dm))),
            TrainableEntries("blocks.0.attn.W_Q", ((0, 1), (0, 2 * Dm), (0, 2 * Dm))),
            TrainableEntries("blocks.1.attn.W_Q", ((0, 1), (0, 4 * Dm), (0, 4 * Dm))),
            SetWeight(("unembed.W_U",), "normal", freeze=False),
            PermanentHook("strict_causal_mask", {"layers": [0, 1]}),
        ],
    )
    assert set(trainable_parameters(model)) == {"blocks.0.attn.W_Q", "blocks.1.attn.W_Q", "unembed.W_U"}
    g = torch.Generator().manual_seed(0)
    W1 = torch.randn(2 * Dm, 2 * Dm, generator=g, dtype=torch.float64)
    W2 = torch.randn(4 * Dm, 4 * Dm, generator=g, dtype=torch.float64)
    with torch.no_grad():
        model.blocks[0].attn.W_Q[0, : 2 * Dm, : 2 * Dm] = W1
        model.blocks[1].attn.W_Q[0, : 4 * Dm, : 4 * Dm] = W2
    X = torch.randn(4, L, 2 * Dm, generator=g, dtype=torch.float64)
    resid = torch.cat([X, torch.zeros(4, L, 6 * Dm, dtype=torch.float64)], -1)
    z = model(resid, start_at_layer=0)[:, -1]
    torch.testing.assert_close(z, disentangled_reference(X, W1, W2, model.unembed.W_U), rtol=0, atol=1e-10)
    z.sum().backward()
    grad = tl_grad(model, "blocks.1.attn.W_Q")
    assert (
        grad[0, : 4 * Dm, : 4 * Dm].abs().sum() > 0 and not grad[0, 4 * Dm :].any() and not grad[0, :, 4 * Dm :].any()
    )


def test_several_trainable_regions_add_up():
    model = build_toy_model(
        chen_config(),
        [
            TrainableEntries("blocks.0.attn.W_K", ((0, 1), (0, 7), (5, 6))),
            TrainableEntries("blocks.0.attn.W_K", ((0, 1), (0, 7), (6, 7))),
        ],
    )
    mask = model.mechrecall_entry_masks["blocks.0.attn.W_K"]
    assert mask.sum() == 14 and mask[0, :7, 5:7].all()
    model(torch.zeros(1, T, dtype=torch.long)).sum().backward()
    assert not tl_grad(model, "blocks.0.attn.W_K")[~mask].any()


def test_a_misspelt_weight_name_is_one_line_naming_the_right_one():
    model = build_toy_model(chen_config())
    with pytest.raises(ValueError, match=r"'blocks.0.attn.W_q'.*'blocks.0.attn.W_Q'"):
        tl_parameter(model, "blocks.0.attn.W_q")
