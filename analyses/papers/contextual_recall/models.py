"""The paper's models as builder recipes (``HookedTransformerConfig`` + surgeries, rebuildable from checkpoints).

- **Model A** (§3, App. B.1): "a 2-layer 1-head GPT-2 type decoder-only transformer (Karpathy minGPT) with
  embedding dimension 256". The rest follows minGPT: pre-LayerNorm with a final LayerNorm, a 4x GELU MLP,
  learned absolute positions, an untied bias-free head (``b_U`` frozen at 0), no dropout (TL has none; the
  data is online and never repeats).
- **Model B** (§4, Eq. 1): one layer, attention only, 3 heads; one-hot *fixed* token embeddings and a tied
  fixed unembedding (``W_U = W_Eᵀ``); positions one-hot in an orthogonal subspace (``d = V + T``) and
  *relative*, added to the keys only (``h(p_{i-t})``, a permanent score hook); no skip connection (the output
  is the attention output only); no biases, no LayerNorm. Only ``W_Q, W_K, W_V, W_O`` train.
- **Model B′** (App. C.3.2): as B with fixed one-hot *absolute* positions (``W_pos = [0 | I_T]``), which reach
  queries, keys and values but not the logits (the unembedding reads only the token subspace).
"""

from __future__ import annotations

from mechrecall.builder import build_toy_model
from mechrecall.surgeries import PermanentHook, SetWeight, ZeroBiases

from .world import WorldConfig, WorldConfigError


def model_a_config(d_vocab: int, n_ctx: int, d_model: int = 256) -> dict:
    """Model A: 2 layers x 1 head, ``d_head = d_model``, ``d_mlp = 4 d_model``, LN, gelu_new, learned positions."""
    return dict(
        n_layers=2,
        n_heads=1,
        d_model=d_model,
        d_head=d_model,
        d_mlp=4 * d_model,
        d_vocab=d_vocab,
        d_vocab_out=d_vocab,
        n_ctx=n_ctx,
        act_fn="gelu_new",
        normalization_type="LN",
        positional_embedding_type="standard",
        attn_only=False,
        default_prepend_bos=False,
        init_mode="gpt2",
        initializer_range=0.02,
    )


def build_model_a(d_vocab: int, n_ctx: int, d_model: int = 256, seed: int = 0):
    """Model A with a bias-free head (``unembed.b_U`` zero and frozen)."""
    return build_toy_model(model_a_config(d_vocab, n_ctx, d_model), [SetWeight(("unembed.b_U",), "zeros")], seed=seed)


def model_b_config(d_vocab: int, n_ctx: int, d_head: int = 256, n_heads: int = 3, attn_scale: bool = True) -> dict:
    """Model B / B′: ``d_model = V + n_ctx`` (tokens, then positions), attention only, no LN."""
    return dict(
        n_layers=1,
        n_heads=n_heads,
        d_model=d_vocab + n_ctx,
        d_head=d_head,
        d_vocab=d_vocab,
        d_vocab_out=d_vocab,
        n_ctx=n_ctx,
        attn_only=True,
        normalization_type=None,
        positional_embedding_type="standard",
        use_attn_scale=attn_scale,
        default_prepend_bos=False,
        init_mode="gpt2",
        initializer_range=0.02,
    )


def model_b_surgeries(d_vocab: int, n_ctx: int, positions: str = "relative") -> list:
    """Fixed one-hot embeddings, tied fixed unembedding, no biases, no skip connection, and the positions."""
    if positions not in ("relative", "absolute"):
        raise WorldConfigError(f"positions={positions!r}; expected 'relative' (Model B) or 'absolute' (Model B′)")
    surgeries = [
        ZeroBiases(),
        SetWeight(("embed.W_E",), "one_hot"),  # h(v) = e_v
        SetWeight(("unembed.W_U",), "one_hot"),  # logit_v = h(v)ᵀ f
    ]
    if positions == "relative":
        surgeries += [
            SetWeight(("pos_embed.W_pos",), "zeros"),
            PermanentHook("relative_key_positions", {"layer": 0, "pos_offset": d_vocab, "n_pos": n_ctx}),
        ]
    else:
        surgeries += [SetWeight(("pos_embed.W_pos",), "one_hot", offset=d_vocab)]
    surgeries.append(PermanentHook("no_skip_connection", {"layer": 0}))
    return surgeries


def build_model_b(
    d_vocab: int,
    n_ctx: int,
    *,
    d_head: int = 256,
    n_heads: int = 3,
    positions: str = "relative",
    attn_scale: bool = True,
    seed: int = 0,
):
    """Model B (``positions="relative"``) or B′ (``"absolute"``)."""
    return build_toy_model(
        model_b_config(d_vocab, n_ctx, d_head, n_heads, attn_scale),
        model_b_surgeries(d_vocab, n_ctx, positions),
        seed=seed,
    )


def world_r_ctx(cfg: WorldConfig, n_demos: int) -> int:
    """Context of Model B: the longest input, PT_rel ((S+3)N_tr - 1) or ICL_rel (3(N_ft+1) - 1)."""
    return max(cfg.pt_len, 3 * (n_demos + 1) - 1)
