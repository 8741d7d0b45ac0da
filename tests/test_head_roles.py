"""Head roles and OV projections: a hand-built circuit, TransformerLens' own detectors, dense references."""

from __future__ import annotations

import pytest
import torch
from handbuilt import INDUCTION_HEAD, PREV_TOKEN_HEAD, V, handbuilt_induction_model

import pretrained
from analyses import (
    attention_mass,
    copying_scores,
    full_ov_circuit,
    head_logit_lens,
    head_roles,
    head_roles_figure,
    induction_keys,
    induction_performance,
    repeated_tokens,
    self_mapping_fraction,
    top_heads,
    top_tokens,
    top_tokens_table,
)
from hooks import ablate

# --------------------------------------------------------------------------- the hand-built circuit


@pytest.fixture(scope="module")
def handbuilt():
    return handbuilt_induction_model()


def test_head_roles_find_exactly_the_handbuilt_heads(handbuilt):
    table = head_roles(handbuilt)
    assert set(table.columns) == {"layer", "head", "score", "value"}
    assert len(table) == 4 * 2 * 2
    assert top_heads(table, "previous_token", 1) == [PREV_TOKEN_HEAD]
    assert top_heads(table, "induction", 1) == [INDUCTION_HEAD]
    assert top_heads(table, "copying", 1) == [INDUCTION_HEAD]
    value = table.set_index(["layer", "head", "score"])["value"]
    assert value[(*PREV_TOKEN_HEAD, "previous_token")] > 0.99
    assert value[(*INDUCTION_HEAD, "induction")] > 0.9
    assert value[(*INDUCTION_HEAD, "copying")] == pytest.approx(1.0, abs=1e-6)  # OV circuit = identity
    others = table[(table["score"] == "induction") & ~((table["layer"] == 1) & (table["head"] == 1))]
    assert (others["value"] < 0.2).all()
    fig = head_roles_figure(table, title="roles")
    panels = [ax for ax in fig.axes if ax.get_title() in ("previous_token", "duplicate_token", "induction", "copying")]
    assert [ax.get_title() for ax in panels] == list(table["score"].unique())
    for ax in panels:  # each panel shows the table's grid, on the shared scale, with the values printed
        image = ax.images[0]
        grid = table[table["score"] == ax.get_title()].pivot(index="layer", columns="head", values="value")
        assert image.get_array().data.ravel().tolist() == pytest.approx(grid.to_numpy().ravel().tolist())
        assert image.get_clim() == ((-1.0, 1.0) if ax.get_title() == "copying" else (0.0, 1.0))
        assert [t.get_text() for t in ax.texts] == [f"{v:.2f}" for v in grid.to_numpy().ravel()]


def test_removing_the_induction_head_kills_induction(handbuilt):
    tokens, _ = repeated_tokens(handbuilt, batch=32, seed=1)
    intact = induction_performance(handbuilt, tokens)
    with ablate(handbuilt, heads=[INDUCTION_HEAD]):
        ablated = induction_performance(handbuilt, tokens)
    with ablate(handbuilt, heads=[(1, 0)]):  # the filler head: no effect on the accuracy to speak of
        filler = induction_performance(handbuilt, tokens)
    assert intact["accuracy"] > 0.7
    assert ablated["accuracy"] < 0.15  # chance is 1/32
    assert filler["accuracy"] > intact["accuracy"] - 0.1
    assert induction_performance(handbuilt, tokens) == intact


def test_ov_projection_of_the_handbuilt_heads(handbuilt):
    induction = full_ov_circuit(handbuilt, *INDUCTION_HEAD)
    torch.testing.assert_close(induction.AB, torch.eye(V))
    assert self_mapping_fraction(induction) == 1.0
    assert self_mapping_fraction(full_ov_circuit(handbuilt, *PREV_TOKEN_HEAD), k=1) < 0.2
    # Through the previous-token head the token is moved into `prev`, which the induction head's V does
    # not read: the virtual circuit W_E OV(0,0) OV(1,1) W_U is zero.
    assert full_ov_circuit(handbuilt, *INDUCTION_HEAD, through=[PREV_TOKEN_HEAD]).AB.abs().max() == 0


# --------------------------------------------------------------------------- against TransformerLens' detectors


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
def test_attention_mass_agrees_with_tl_head_detector(tiny_dirs, arch):
    from transformer_lens.head_detector import detect_head

    model = pretrained.load(str(tiny_dirs[arch]), processing="tl")
    text = "Paris is in France . Paris is in France . Madrid is located in Spain"
    tokens = model.to_tokens(text)
    for name, keys_fn in (
        ("previous_token_head", None),
        ("duplicate_token_head", None),
        ("induction_head", induction_keys),
    ):
        theirs = detect_head(model, text, name)
        from transformer_lens import head_detector

        pattern = getattr(head_detector, f"get_{name}_detection_pattern")(tokens.cpu()).bool()
        if keys_fn is not None:  # our key masks are TL's templates
            assert torch.equal(keys_fn(tokens)[0], pattern)
        ours = attention_mass(model, tokens, pattern[None])
        torch.testing.assert_close(ours, theirs.to(ours.dtype), rtol=1e-5, atol=1e-6)


def test_attention_mass_a_to_b_by_hand():
    """Keys given per prompt ([batch, k]) and a query subset, against a loop over the cached pattern."""
    from mechrecall.builder import build_toy_model

    model = build_toy_model(
        dict(n_layers=2, n_heads=3, d_model=12, d_head=4, d_vocab=10, n_ctx=8, attn_only=True), [], seed=4
    )
    tokens = torch.randint(0, 10, (4, 8), generator=torch.Generator().manual_seed(0))
    keys = torch.zeros(4, 8, dtype=torch.bool)
    keys[:, [1, 3]] = True
    queries = torch.zeros(4, 8, dtype=torch.bool)
    queries[:, -1] = True
    queries[0, 5] = True
    _, cache = model.run_with_cache(tokens)
    expected = torch.zeros(2, 3)
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]
        picked = [(b, q) for b in range(4) for q in range(8) if queries[b, q]]
        for head in range(3):
            expected[layer, head] = sum(pattern[b, head, q, [1, 3]].sum() for b, q in picked) / len(picked)
    torch.testing.assert_close(attention_mass(model, tokens, keys, queries), expected)
    with pytest.raises(ValueError, match="keys has shape"):
        attention_mass(model, tokens, torch.ones(3, 8, dtype=torch.bool))


# --------------------------------------------------------------------------- every model, same calls


def test_head_roles_run_on_every_model(any_model):
    table = head_roles(any_model, seed=3)
    n = any_model.cfg.n_layers * any_model.cfg.n_heads
    assert len(table) == 4 * n
    attention = table[table["score"] != "copying"]["value"]
    assert ((attention >= 0) & (attention <= 1 + 1e-6)).all()
    copying = table[table["score"] == "copying"]["value"]
    assert ((copying >= -1 - 1e-6) & (copying <= 1 + 1e-6)).all()
    perf = induction_performance(any_model)
    tokens, offset = repeated_tokens(any_model, seed=0)  # the same prompts, scored by hand
    half = (tokens.shape[1] - offset) // 2
    with torch.no_grad():
        logprobs = any_model(tokens)[:, offset + half : -1].log_softmax(-1)
    target = tokens[:, offset + half + 1 :]
    assert perf["accuracy"] == pytest.approx((logprobs.argmax(-1) == target).float().mean().item())
    assert perf["loss"] == pytest.approx(-logprobs.gather(-1, target[..., None]).mean().item(), rel=1e-5)
    with pytest.raises(ValueError, match="unknown role"):
        head_roles(any_model, roles=["induction", "successor"])


def test_repeated_tokens_use_the_model_vocabulary_and_bos(any_model):
    tokens, offset = repeated_tokens(any_model, batch=3, half_len=5)
    half = tokens[:, offset:]
    assert torch.equal(half[:, :5], half[:, 5:])
    vocab = any_model.cfg.d_vocab if any_model.tokenizer is None else len(any_model.tokenizer)
    assert half.max() < vocab
    if offset:
        assert (tokens[:, 0] == any_model.tokenizer.bos_token_id).all()
    with pytest.raises(ValueError, match="half_len=1000"):
        repeated_tokens(any_model, half_len=1000)


@torch.no_grad()
def test_copying_score_from_dense_eigenvalues(any_model):
    W_E, W_U = any_model.W_E.double(), any_model.W_U.double()
    scores = copying_scores(any_model)
    for layer, head in [(0, 0), (1, any_model.cfg.n_heads - 1)]:
        attn = any_model.blocks[layer].attn
        dense = W_E @ attn.W_V[head].double() @ attn.W_O[head].double() @ W_U  # [vocab, vocab]
        eig = torch.linalg.eigvals(dense[:, : dense.shape[0]])
        expected = eig.real.sum() / eig.abs().sum()
        assert scores[layer, head].item() == pytest.approx(expected.item(), abs=1e-4)


@torch.no_grad()
def test_ov_circuit_and_top_tokens_against_dense_products(any_model):
    model = any_model
    circuit = full_ov_circuit(model, 1, 0)
    a0, a1 = model.blocks[0].attn, model.blocks[1].attn
    dense = model.W_E @ a1.W_V[0] @ a1.W_O[0] @ model.W_U
    torch.testing.assert_close(circuit.AB, dense, rtol=1e-4, atol=1e-5)
    virtual = full_ov_circuit(model, 1, 0, through=[(0, 1)])
    torch.testing.assert_close(
        virtual.AB, model.W_E @ a0.W_V[1] @ a0.W_O[1] @ a1.W_V[0] @ a1.W_O[0] @ model.W_U, rtol=1e-4, atol=1e-5
    )
    direction = torch.randn(3, model.cfg.d_model, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(
        full_ov_circuit(model, 1, 0, source=direction).AB,
        direction @ a1.W_V[0] @ a1.W_O[0] @ model.W_U,
        rtol=1e-4,
        atol=1e-5,
    )
    assert full_ov_circuit(model).shape == (
        model.cfg.n_layers,
        model.cfg.n_heads,
        model.cfg.d_vocab,
        model.cfg.d_vocab_out,
    )
    values, indices = top_tokens(circuit, k=3, inputs=[0, 5, 7], chunk=2)
    ref_values, ref_indices = dense[[0, 5, 7]].topk(3, dim=-1)
    torch.testing.assert_close(values, ref_values, rtol=1e-4, atol=1e-5)
    assert torch.equal(indices, ref_indices)
    frac = (dense.argmax(-1)[: dense.shape[0]] == torch.arange(dense.shape[0])).float().mean().item()
    assert self_mapping_fraction(circuit) == pytest.approx(frac)
    table = top_tokens_table(model, circuit, k=2, inputs=[1, 2])
    assert list(table["rank"]) == [1, 2, 1, 2]
    assert list(table["output_id"]) == dense[[1, 2]].topk(2).indices.flatten().tolist()
    with pytest.raises(ValueError, match="through="):
        full_ov_circuit(model, 1, 0, through=[(1, 1)])
    with pytest.raises(ValueError, match="input ids must be in"):
        top_tokens(circuit, inputs=[model.cfg.d_vocab])


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
@torch.no_grad()
def test_head_logit_lens_matches_tl_stack_head_results(tiny_dirs, arch):
    """On TL-processed weights, TL's own decomposition: ``cache.stack_head_results(apply_ln=True) @ W_U``."""
    model = pretrained.load(str(tiny_dirs[arch]), processing="tl")
    model.set_use_attn_result(True)
    tokens = model.to_tokens(["Paris is in France", "Madrid is located in Spain"])[:, :5]
    _, cache = model.run_with_cache(tokens)
    stacked, labels = cache.stack_head_results(layer=-1, pos_slice=-1, apply_ln=True, return_labels=True)
    index = labels.index("L1H2")
    expected = stacked[index] @ model.W_U  # [batch, d_vocab]
    torch.testing.assert_close(head_logit_lens(model, tokens, 1, 2, positions=-1), expected, rtol=1e-4, atol=1e-5)


@torch.no_grad()
def test_head_logit_lens_without_layernorm_is_z_wo_wu(handbuilt):
    tokens, _ = repeated_tokens(handbuilt, batch=2, seed=0)
    _, cache = handbuilt.run_with_cache(tokens)
    z = cache["blocks.1.attn.hook_z"][:, :, 1]
    expected = (z @ handbuilt.blocks[1].attn.W_O[1] @ handbuilt.W_U)[:, [3, 7]].reshape(-1, V)
    torch.testing.assert_close(head_logit_lens(handbuilt, tokens, 1, 1, positions=[3, 7]), expected)
