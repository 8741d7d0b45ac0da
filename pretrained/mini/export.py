"""A TransformerLens GPT-NeoX model written as a Hugging Face ``GPTNeoXForCausalLM`` folder (Pythia's layout).

The inverse of TransformerLens 3's ``convert_neox_weights``, read from the weights by TL name (so on either TL
major): the mini model is trained as a TL model (the one trainer) and each checkpoint of its series is saved exactly
as Pythia's are, so ``pretrained.load`` and Hugging Face read it as they read Pythia. ``tests/test_mini.py`` checks
the three agree on the logits.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import einops
import torch

from mechrecall._tl import Model, tl_parameters
from mechrecall.io import atomic_directory


def hf_config(
    d_model: int, n_layers: int, n_heads: int, d_mlp: int, n_ctx: int, d_vocab: int, rotary_pct: float = 0.25
) -> Any:
    """Pythia's ``GPTNeoXConfig`` at these sizes: parallel residual, rotary on a quarter of each head (``rotary_pct``),
    untied unembedding, exact GELU, attention biases, end-of-text id 0 (BOS and EOS)."""
    from transformers import GPTNeoXConfig

    config = GPTNeoXConfig(
        vocab_size=d_vocab,
        hidden_size=d_model,
        num_hidden_layers=n_layers,
        num_attention_heads=n_heads,
        intermediate_size=d_mlp,
        max_position_embeddings=n_ctx,
        rotary_pct=rotary_pct,
        use_parallel_residual=True,
        hidden_act="gelu",
        layer_norm_eps=1e-5,
        tie_word_embeddings=False,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    config.architectures = ["GPTNeoXForCausalLM"]
    return config


def neox_state_dict(model: Model) -> dict[str, torch.Tensor]:
    """``GPTNeoXForCausalLM``'s state dict from a TL GPT-NeoX model's weights by TL name (raw weights: no fold_ln /
    centring; ``W_Q`` ``[head, d_model, d_head]`` …), on either TL major."""
    n, w = model.cfg.n_heads, tl_parameters(model)
    sd: dict[str, torch.Tensor] = {
        "gpt_neox.embed_in.weight": w["embed.W_E"],
        "gpt_neox.final_layer_norm.weight": w["ln_final.w"],
        "gpt_neox.final_layer_norm.bias": w["ln_final.b"],
        "embed_out.weight": w["unembed.W_U"].T,
    }
    for layer in range(model.cfg.n_layers):
        sd |= _neox_layer(
            {k[len(f"blocks.{layer}.") :]: v for k, v in w.items() if k.startswith(f"blocks.{layer}.")},
            f"gpt_neox.layers.{layer}.",
            n,
        )
    return {k: v.detach().cpu().contiguous().clone() for k, v in sd.items()}


def _neox_layer(w: dict[str, torch.Tensor], pre: str, n: int) -> dict[str, torch.Tensor]:
    qkv_w = torch.stack([w["attn.W_Q"], w["attn.W_K"], w["attn.W_V"]])  # [qkv, head, d_model, d_head]
    qkv_b = torch.stack([w["attn.b_Q"], w["attn.b_K"], w["attn.b_V"]])  # [qkv, head, d_head]
    return {
        pre + "input_layernorm.weight": w["ln1.w"],
        pre + "input_layernorm.bias": w["ln1.b"],
        pre + "post_attention_layernorm.weight": w["ln2.w"],
        pre + "post_attention_layernorm.bias": w["ln2.b"],
        pre + "attention.query_key_value.weight": einops.rearrange(qkv_w, "qkv i m h -> (i qkv h) m", i=n),
        pre + "attention.query_key_value.bias": einops.rearrange(qkv_b, "qkv i h -> (i qkv h)", i=n),
        pre + "attention.dense.weight": einops.rearrange(w["attn.W_O"], "i h m -> m (i h)"),
        pre + "attention.dense.bias": w["attn.b_O"],
        pre + "mlp.dense_h_to_4h.weight": w["mlp.W_in"].T,
        pre + "mlp.dense_h_to_4h.bias": w["mlp.b_in"],
        pre + "mlp.dense_4h_to_h.weight": w["mlp.W_out"].T,
        pre + "mlp.dense_4h_to_h.bias": w["mlp.b_out"],
    }


def _hf_neox(model: Model, config: Any) -> Any:
    """``GPTNeoXForCausalLM(config)`` holding ``model``'s weights."""
    from transformers import GPTNeoXForCausalLM

    if model.cfg.positional_embedding_type != "rotary" or not model.cfg.parallel_attn_mlp:
        raise ValueError("save_neox writes GPT-NeoX models: rotary positions and a parallel attention + MLP block")
    with torch.random.fork_rng(devices=[]):  # HF's init draws from the global RNG: a training run's too
        hf = GPTNeoXForCausalLM(config)
    sd = neox_state_dict(model)
    if "lm_head.weight" in hf.state_dict():  # transformers 5's name of Pythia's embed_out
        sd["lm_head.weight"] = sd.pop("embed_out.weight")
    hf.load_state_dict(sd, strict=True)
    return hf.eval()


def check_exports_as_neox(model: Model, config: Any, atol: float = 1e-4) -> None:
    """``ValueError`` in one line unless ``model`` computes the logits of the GPT-NeoX it is saved as (checked on
    one sequence before a series trains it: a TL whose model is not that GPT-NeoX would save a wrong series)."""
    tokens = torch.arange(min(model.cfg.n_ctx, 16))[None] % model.cfg.d_vocab
    with torch.no_grad():
        diff = (model(tokens) - _hf_neox(model, config)(tokens).logits).abs().max().item()
    if not diff <= atol:
        raise ValueError(
            f"the TransformerLens model is not the GPT-NeoX it would be saved as (max logit difference {diff:.2g} "
            f"> {atol:g}): its config and the Hugging Face config describe different models"
        )


def save_neox(model: Model, config: Any, tokenizer: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` as a Hugging Face folder at ``path`` (atomically; ``path`` must not exist)."""
    hf = _hf_neox(model, config)
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # "Writing model shards" for one small file is noise
    try:
        with atomic_directory(path) as tmp:
            hf.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    return Path(path)
