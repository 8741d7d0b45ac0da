"""Tests of ``hooks``: every edit does what an independent computation says, and is undone bit-exact."""

from __future__ import annotations

import pytest
import torch

from hooks import ablate, activation_means, add_vector, low_rank, patch, position_mask


def _tokens(model, batch=3, pos=12, seed=0):
    vocab = (
        model.cfg.d_vocab if getattr(model, "tokenizer", None) is None else min(model.cfg.d_vocab, len(model.tokenizer))
    )
    return torch.randint(0, vocab, (batch, pos), generator=torch.Generator().manual_seed(seed))


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _assert_same_state(model, before):
    after = model.state_dict()
    assert before.keys() == after.keys()
    for k in before:
        assert torch.equal(before[k], after[k]), k


def _no_hooks_left(model):
    return all(not hp.fwd_hooks and not hp.bwd_hooks for hp in model.hook_dict.values())


# --------------------------------------------------------------------------- positions


def test_position_mask_forms():
    assert position_mask(None, 2, 4).all()
    assert position_mask(-1, 2, 4).tolist() == [[False, False, False, True]] * 2
    assert position_mask([0, 2], 1, 4).tolist() == [[True, False, True, False]]
    assert position_mask(slice(1, 3), 1, 4).tolist() == [[False, True, True, False]]
    assert position_mask(torch.tensor([1, 3]), 2, 4).tolist() == [
        [False, True, False, False],
        [False, False, False, True],
    ]
    with pytest.raises(ValueError, match=r"positions \[5\] out of range for a sequence of length 4"):
        position_mask(5, 2, 4)
    with pytest.raises(ValueError, match="bool positions of shape"):
        position_mask(torch.ones(3, 3, dtype=torch.bool), 2, 4)
    with pytest.raises(ValueError, match="positions='last'"):
        position_mask("last", 2, 4)


# --------------------------------------------------------------------------- ablation


@torch.no_grad()
def test_zero_ablating_last_layer_head_removes_exactly_its_direct_logit_contribution(tiny_dirs):
    """Attention-only, no LN: logits are a sum of components, so the change is ``z_h W_O^h W_U``."""
    from mechrecall.builder import build_toy_model

    model = build_toy_model(
        dict(
            n_layers=2, n_heads=3, d_model=16, d_head=4, d_vocab=20, n_ctx=16, attn_only=True, normalization_type=None
        ),
        [],
        seed=1,
    )
    tokens = _tokens(model)
    logits, cache = model.run_with_cache(tokens)
    layer, head = 1, 2
    direct = cache[f"blocks.{layer}.attn.hook_z"][:, :, head] @ model.blocks[layer].attn.W_O[head] @ model.W_U
    with ablate(model, heads=[(layer, head)]):
        ablated = model(tokens)
    torch.testing.assert_close(logits - ablated, direct, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model(tokens), logits, rtol=0, atol=0)
    assert _no_hooks_left(model)


@torch.no_grad()
def test_ablation_hits_the_right_activation_on_every_model(any_model):
    model = any_model
    tokens = _tokens(model)
    clean = model(tokens)
    with ablate(model, heads=[(0, 1)]):
        _, cache = model.run_with_cache(tokens, names_filter="blocks.0.attn.hook_z")
        z = cache["blocks.0.attn.hook_z"]
        assert (z[:, :, 1] == 0).all() and (z[:, :, 0] != 0).any()
    with ablate(model, attn_layers=[1], mlps=[0]):
        _, cache = model.run_with_cache(tokens)
        assert (cache["blocks.1.hook_attn_out"] == 0).all() and (cache["blocks.0.hook_mlp_out"] == 0).all()
        if not model.cfg.parallel_attn_mlp:
            torch.testing.assert_close(
                cache["blocks.0.hook_resid_post"], cache["blocks.0.hook_resid_mid"], rtol=0, atol=0
            )
    reference = _tokens(model, batch=5, seed=7)
    means = activation_means(model, reference, ["blocks.1.hook_mlp_out"], over="batch_pos")["blocks.1.hook_mlp_out"]
    with ablate(model, mlps=[1], mode="mean", reference=reference, positions=-1):
        _, cache = model.run_with_cache(tokens, names_filter="blocks.1.hook_mlp_out")
        out = cache["blocks.1.hook_mlp_out"]
        torch.testing.assert_close(out[:, -1], means.expand_as(out[:, -1]), rtol=0, atol=0)
    _, clean_cache = model.run_with_cache(tokens, names_filter="blocks.1.hook_mlp_out")
    torch.testing.assert_close(out[:, :-1], clean_cache["blocks.1.hook_mlp_out"][:, :-1], rtol=0, atol=0)
    torch.testing.assert_close(model(tokens), clean, rtol=0, atol=0)
    assert _no_hooks_left(model)


def test_ablation_bad_input(any_model):
    with pytest.raises(
        ValueError, match=r"layer=9 is out of range; expected an int in \[0, 1\] \(the model has 2 layers\)"
    ):
        with ablate(any_model, heads=[(9, 0)]):
            pass
    with pytest.raises(ValueError, match="needs reference="):
        with ablate(any_model, mlps=[0], mode="mean"):
            pass
    with pytest.raises(ValueError, match="nothing to ablate"):
        with ablate(any_model):
            pass
    with pytest.raises(ValueError, match="mode='max'"):
        with ablate(any_model, mlps=[0], mode="max"):
            pass


def test_mlp_ablation_on_attention_only_model_names_the_missing_hook():
    from mechrecall.builder import build_toy_model

    model = build_toy_model(dict(n_layers=1, n_heads=1, d_model=8, d_head=8, d_vocab=10, n_ctx=8, attn_only=True), [])
    with pytest.raises(ValueError, match=r"blocks.0.hook_mlp_out.*attention-only"):
        with ablate(model, mlps=[0]):
            pass


# --------------------------------------------------------------------------- patching


@torch.no_grad()
def test_patching_the_whole_residual_reproduces_the_source_run(any_model):
    model = any_model
    clean, corrupt = _tokens(model, seed=1), _tokens(model, seed=2)
    source_logits, source_cache = model.run_with_cache(corrupt)
    clean_logits = model(clean)
    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
    with patch(model, source_cache, [last]):
        torch.testing.assert_close(model(clean), source_logits, rtol=0, atol=0)
    # One position only: the other positions keep the clean run's logits (causal model, last layer).
    with patch(model, source_cache, [last], positions=-1):
        patched = model(clean)
    torch.testing.assert_close(patched[:, -1], source_logits[:, -1], rtol=0, atol=0)
    torch.testing.assert_close(patched[:, :-1], clean_logits[:, :-1], rtol=0, atol=0)
    torch.testing.assert_close(model(clean), clean_logits, rtol=0, atol=0)


@torch.no_grad()
def test_patching_one_head_changes_only_that_head():
    from mechrecall.builder import build_toy_model

    model = build_toy_model(
        dict(
            n_layers=1, n_heads=3, d_model=12, d_head=4, d_vocab=16, n_ctx=10, attn_only=True, normalization_type=None
        ),
        [],
        seed=3,
    )
    clean, corrupt = _tokens(model, pos=8, seed=1), _tokens(model, pos=8, seed=2)
    clean_logits, clean_cache = model.run_with_cache(clean)
    _, source_cache = model.run_with_cache(corrupt)
    name = "blocks.0.attn.hook_z"
    with patch(model, source_cache, [name], heads=[1]):
        patched = model(clean)
    delta = (source_cache[name][:, :, 1] - clean_cache[name][:, :, 1]) @ model.blocks[0].attn.W_O[1] @ model.W_U
    torch.testing.assert_close(patched - clean_logits, delta, rtol=1e-5, atol=1e-5)
    _, z_only = model.run_with_cache(corrupt, names_filter=name)
    with pytest.raises(ValueError, match="source_cache has no activation"):
        with patch(model, z_only, ["blocks.0.hook_resid_pre"]):
            pass


# --------------------------------------------------------------------------- adding a vector


@torch.no_grad()
def test_add_vector_at_the_last_residual_shifts_logits_linearly():
    from mechrecall.builder import build_toy_model

    model = build_toy_model(
        dict(n_layers=2, n_heads=1, d_model=8, d_head=8, d_vocab=12, n_ctx=8, attn_only=True, normalization_type=None),
        [],
        seed=0,
    )
    tokens = _tokens(model, pos=6)
    clean = model(tokens)
    v = torch.randn(8, generator=torch.Generator().manual_seed(5))
    with add_vector(model, "blocks.1.hook_resid_post", v, coeff=2.5, positions=[1, 4]):
        steered = model(tokens)
    expected = torch.zeros_like(clean)
    expected[:, [1, 4]] = 2.5 * (v @ model.W_U)
    torch.testing.assert_close(steered - clean, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- nesting and exceptions


@torch.no_grad()
def test_nested_edits_compose_and_undo_bit_exact_even_when_the_body_raises(any_model):
    model = any_model
    tokens = _tokens(model)
    before_state, before_logits = _state(model), model(tokens)
    with ablate(model, heads=[(0, 0)]):
        only_ablated = model(tokens)
    with pytest.raises(RuntimeError, match="boom"):
        with ablate(model, heads=[(0, 0)]):
            with low_rank(model, 1, "mlp_in", 0.25):
                with add_vector(model, "blocks.1.hook_resid_pre", torch.ones(model.cfg.d_model), positions=-1):
                    all_three = model(tokens)
                with ablate(model, mlps=[1]):
                    model(tokens)
                both = model(tokens)
                assert not torch.equal(both, all_three)
                raise RuntimeError("boom")
    assert not torch.equal(both, only_ablated)
    _assert_same_state(model, before_state)
    assert _no_hooks_left(model)
    torch.testing.assert_close(model(tokens), before_logits, rtol=0, atol=0)
