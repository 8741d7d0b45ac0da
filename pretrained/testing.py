"""Tiny random GPT-NeoX / GPT-2 checkpoints, built offline, for tests and examples.

:func:`tiny_checkpoint` writes what ``AutoModelForCausalLM.from_pretrained(name).save_pretrained(dir)``
plus the tokenizer's ``save_pretrained(dir)`` would write for a real model -- config.json,
model.safetensors, tokenizer files -- for a model of a few thousand parameters, so that
``pretrained.load(dir)`` and HF's own loaders can be compared without the hub.

Tokenizer: a word-level vocabulary behind GPT-2's byte-level pre-tokenizer. Every word is in
the vocabulary twice, bare (``"Madrid"``) and space-prefixed (``"ĠMadrid"``, i.e. ``" Madrid"``),
as in real GPT-2/Pythia vocabularies, so ``tokenizer(" the")`` is one token and a prompt such as
``"Madrid is located in"`` is ``["Madrid", "Ġis", "Ġlocated", "Ġin"]``. Decoding is exact
(``decode(encode(text)) == text``) for any text made of vocabulary words, single spaces and
newlines; unknown words map to ``<|endoftext|>`` (which is also BOS, EOS and UNK, id 0, as in GPT-2).
Words with punctuation ("store,", "Children's", "World-renowned") contribute the pieces the
pre-tokenizer splits them into, so any text made of vocabulary words is covered too. A paper's prompt
tables give their words (e.g. ``analyses.papers.distributional.data.prompts.prompt_vocab()``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import torch

from pretrained.loading import resolve_dtype

#: The special token (BOS = EOS = UNK), id 0.
EOT = "<|endoftext|>"

#: Default words of :func:`tiny_tokenizer`: enough for factual-recall style prompts.
DEFAULT_WORDS: tuple[str, ...] = tuple(
    """
    the The a A an An of in In is was are were be has had located capital city country river
    on at to from by for with and or not as that which who it It its his her their this This
    plays played speaks spoke language lives lived born works worked team sport famous known
    president king queen new old big small first last called named near north south east west
    Madrid Spain Spanish Paris France French Rome Italy Italian Berlin Germany German London
    England English Tokyo Japan Japanese Beijing China Chinese Moscow Russia Russian Ottawa Canada
    Cairo Egypt Athens Greece Lisbon Portugal Europe Asia Africa America
    Eiffel Tower Colosseum Seine Thames Tiber
    John Mary Alice Bob Michael Jordan Lionel Messi Marie Curie Albert Einstein Tom Anna Paul
    basketball football soccer tennis chess music science physics
    one two three
    . , ? ! : 's
    """.split()
)


def tiny_tokenizer(vocab: Iterable[str] | None = None, *, model_max_length: int = 1024, size: int | None = None) -> Any:
    """A word-level ``PreTrainedTokenizerFast`` covering ``vocab`` (default :data:`DEFAULT_WORDS`).

    Built offline with the ``tokenizers`` library: WordLevel model, ByteLevel pre-tokenizer
    (``add_prefix_space=False``) and decoder. Ids: 0 = ``<|endoftext|>``, 1 = ``"Ġ"`` (a lone
    space), 2 = ``"Ċ"`` (newline), then for each word the pieces of ``word`` and of ``" " + word``
    in order of first appearance (a word with punctuation, e.g. ``"don't"``, contributes the
    pieces the pre-tokenizer splits it into). Deterministic in ``vocab``'s order.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = list(DEFAULT_WORDS if vocab is None else vocab)
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    table: dict[str, int] = {EOT: 0, "Ġ": 1, "Ċ": 2}
    for word in words:
        if not isinstance(word, str) or not word.strip() or word != word.strip():
            raise ValueError(f"vocabulary entries must be non-empty words without surrounding spaces, got {word!r}")
        for text in (word, " " + word):
            for piece, _ in pre.pre_tokenize_str(text):
                table.setdefault(piece, len(table))
    if size is not None:
        if size < len(table):
            raise ValueError(f"size={size} is smaller than the {len(table)} pieces the words need")
        filler = (f"Ġ⟨{i}⟩" for i in range(size))
        while len(table) < size:
            table.setdefault(next(filler), len(table))
    tok = Tokenizer(models.WordLevel(table, unk_token=EOT))
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOT,
        eos_token=EOT,
        unk_token=EOT,
        clean_up_tokenization_spaces=False,  # else decode(" .") -> "." and round trips break
        model_max_length=model_max_length,
    )


def _init_value(name: str, shape: tuple[int, ...], gen: torch.Generator, *, d_model: int, d_mlp: int) -> torch.Tensor:
    """The seeded random value of one parameter (float32), by its Hugging Face name; see :func:`_init_`."""
    if any(k in name for k in ("layernorm", "layer_norm", ".ln_")):
        if name.endswith("weight"):
            return 0.5 + torch.rand(shape, generator=gen)
        return 0.2 * torch.randn(shape, generator=gen)
    if name.endswith("bias"):
        return 0.1 * torch.randn(shape, generator=gen)
    if name.endswith(("embed_in.weight", "wte.weight")):
        std = 0.35 if name.endswith("wte.weight") else 1.0
        return std * torch.randn(shape, generator=gen)
    if name.endswith("wpe.weight"):
        return 0.3 * torch.randn(shape, generator=gen)
    fan_in = d_mlp if any(k in name for k in ("dense_4h_to_h", "mlp.c_proj")) else d_model
    return torch.randn(shape, generator=gen) / math.sqrt(fan_in)


def _init_(model: torch.nn.Module, *, seed: int, d_model: int, d_mlp: int) -> None:
    """Overwrite every parameter with seeded random values (independent of HF's init scheme).

    LayerNorm weights ~ U(0.5, 1.5) and biases ~ N(0, 0.2^2), so folding them (TL's fold_ln) is
    far from a no-op; all other biases ~ N(0, 0.1^2) (so value-bias folding matters too); token
    embeddings ~ N(0, 1) (GPT-2's tied ones N(0, 0.35^2)), position embeddings ~ N(0, 0.3^2),
    matrices ~ N(0, 1/fan_in), which keeps logits O(1) so log-probs are far from uniform.
    """
    gen = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        with torch.no_grad():
            p.copy_(_init_value(name, tuple(p.shape), gen, d_model=d_model, d_mlp=d_mlp))


def tiny_checkpoint(
    path: str | os.PathLike[str],
    arch: Literal["gpt_neox", "gpt2"] = "gpt_neox",
    *,
    vocab: Iterable[str] | None = None,
    seed: int = 0,
    d_model: int = 32,
    n_layers: int = 2,
    n_heads: int = 4,
    d_mlp: int | None = None,
    n_ctx: int = 64,
    dtype: str | torch.dtype = torch.float32,
) -> Path:
    """Write a tiny random HF causal LM and its tokenizer to ``path`` (created); return ``Path(path)``.

    Args:
        path: output folder (``save_pretrained`` layout: config.json, model.safetensors, tokenizer files).
        arch: ``"gpt_neox"`` (Pythia-like: parallel residual, rotary on a quarter of each head
            (``rotary_pct=0.25`` for the default ``d_head=8``), untied unembedding) or ``"gpt2"``
            (learned positions, tied embeddings; config.json also carries ``n_ctx`` like GPT-2's own).
        vocab: words the tokenizer covers (see :func:`tiny_tokenizer`); default :data:`DEFAULT_WORDS`.
        seed: all weights are a deterministic function of ``seed`` (and the sizes).
        d_model, n_layers, n_heads, n_ctx: sizes; ``d_mlp`` defaults to ``4 * d_model``.
        dtype: dtype the weights are saved in.
    """
    from transformers import GPT2Config, GPT2LMHeadModel, GPTNeoXForCausalLM

    from pretrained.mini.export import hf_config

    torch_dtype = resolve_dtype(dtype)
    if arch not in ("gpt_neox", "gpt2"):
        raise ValueError(f"arch={arch!r} is not supported; expected 'gpt_neox' or 'gpt2'")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
    d_mlp = d_mlp or 4 * d_model
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_tokenizer(vocab, model_max_length=n_ctx)
    n_vocab = len(tokenizer)
    common = dict(bos_token_id=0, eos_token_id=0, pad_token_id=None)

    if arch == "gpt_neox":
        d_head = d_model // n_heads
        rotary_dim = 2 * max(1, d_head // 8)  # even and exact: HF truncates, TL rounds
        config = hf_config(d_model, n_layers, n_heads, d_mlp, n_ctx, n_vocab, rotary_pct=rotary_dim / d_head)
        model_cls = GPTNeoXForCausalLM
    else:  # gpt2
        config = GPT2Config(
            vocab_size=n_vocab,
            n_embd=d_model,
            n_layer=n_layers,
            n_head=n_heads,
            n_inner=d_mlp,
            n_positions=n_ctx,
            n_ctx=n_ctx,  # GPT-2's own config.json has it; transformers 5 keeps it as an extra key
            activation_function="gelu_new",
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            **common,
        )
        model_cls = GPT2LMHeadModel

    with torch.random.fork_rng(devices=[]):  # HF's own init draws from the global RNG
        torch.manual_seed(seed)
        model = model_cls(config)
    _init_(model, seed=seed, d_model=d_model, d_mlp=d_mlp)
    model.config.architectures = [model_cls.__name__]
    model.to(torch_dtype).eval()
    model.save_pretrained(out)  # safetensors (the default, and the only format in transformers 5)
    tokenizer.save_pretrained(out)
    return out


# ------------------------------------------------------------------------------- the paper models' real shapes

#: The block sizes of the paper's models (their Hugging Face configs): layers, d_model, heads, d_mlp, the
#: embedding's rows (``d_vocab``), the tokenizer's size and the context. Pythia: rotary on a quarter of each head,
#: parallel residual, untied unembedding; GPT-2: learned positions, tied embeddings.
REAL_SHAPES: dict[str, dict[str, Any]] = {
    "pythia-160m": dict(arch="gpt_neox", n_layers=12, d_model=768, n_heads=12, d_mlp=3072),
    "pythia-410m": dict(arch="gpt_neox", n_layers=24, d_model=1024, n_heads=16, d_mlp=4096),
    "pythia-1b": dict(arch="gpt_neox", n_layers=16, d_model=2048, n_heads=8, d_mlp=8192),
    "pythia-1.4b": dict(arch="gpt_neox", n_layers=24, d_model=2048, n_heads=16, d_mlp=8192),
    "pythia-2.8b": dict(arch="gpt_neox", n_layers=32, d_model=2560, n_heads=32, d_mlp=10240),
    "gpt2": dict(arch="gpt2", n_layers=12, d_model=768, n_heads=12, d_mlp=3072),
    "gpt2-medium": dict(arch="gpt2", n_layers=24, d_model=1024, n_heads=16, d_mlp=4096),
}
for _shape in REAL_SHAPES.values():
    if _shape["arch"] == "gpt_neox":  # Pythia's embedding is padded to 50304 rows; its tokenizer has 50277 entries
        _shape.update(d_vocab=50304, n_tokenizer=50277, n_ctx=2048)
    else:
        _shape.update(d_vocab=50257, n_tokenizer=50257, n_ctx=1024)


def n_params(shape: str) -> int:
    """The parameter count of a :data:`REAL_SHAPES` model (GPT-2's tied unembedding counted once)."""
    return sum(math.prod(s) for s in _parameter_shapes(_real_config(_shape_of(shape))[0]).values())


def _shape_of(shape: str) -> dict[str, Any]:
    if shape not in REAL_SHAPES:
        raise ValueError(f"shape={shape!r} is not one of the paper's models; expected one of {sorted(REAL_SHAPES)}")
    return REAL_SHAPES[shape]


def _real_config(s: dict[str, Any]) -> tuple[Any, type]:
    """The Hugging Face config and model class of a :data:`REAL_SHAPES` entry."""
    from transformers import GPT2Config, GPT2LMHeadModel, GPTNeoXForCausalLM

    from pretrained.mini.export import hf_config

    if s["arch"] == "gpt_neox":
        config = hf_config(s["d_model"], s["n_layers"], s["n_heads"], s["d_mlp"], s["n_ctx"], s["d_vocab"], 0.25)
        return config, GPTNeoXForCausalLM
    config = GPT2Config(
        vocab_size=s["d_vocab"],
        n_embd=s["d_model"],
        n_layer=s["n_layers"],
        n_head=s["n_heads"],
        n_inner=s["d_mlp"],
        n_positions=s["n_ctx"],
        n_ctx=s["n_ctx"],
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    config.architectures = ["GPT2LMHeadModel"]
    return config, GPT2LMHeadModel


def _parameter_shapes(config: Any) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape as ``save_pretrained`` writes them (tied ones once), built on the meta
    device: no memory is allocated."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def real_shape_checkpoint(
    path: str | os.PathLike[str],
    shape: str,
    *,
    vocab: Iterable[str] | None = None,
    seed: int = 0,
    dtype: str | torch.dtype = torch.float32,
    shard_bytes: int = 1 << 30,
) -> Path:
    """Write a random model at the real shape of one of the paper's models (:data:`REAL_SHAPES`, e.g.
    ``"pythia-1b"``) to ``path``, offline, in the ``save_pretrained`` layout; return ``Path(path)``.

    Name the folder as the model (``.../pythia-1b``) and the paper's parts take their settings for it. The weights
    are drawn as :func:`tiny_checkpoint`'s (same rules, one seeded generator per tensor) and written tensor by tensor
    into safetensors shards of about ``shard_bytes`` with their index (``model.safetensors.index.json``), so memory
    stays near one shard whatever the model's size. The tokenizer is :func:`tiny_tokenizer` of ``vocab`` padded to
    the real tokenizer's size (Pythia 50277, GPT-2 50257); the embedding has the real rows (50304, 50257).
    """
    import json

    from safetensors.torch import save_file

    s = _shape_of(shape)
    torch_dtype = resolve_dtype(dtype)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    config, _ = _real_config(s)
    shapes = _parameter_shapes(config)
    size = torch.tensor([], dtype=torch_dtype).element_size()
    shards: list[list[str]] = [[]]
    used = 0
    for name, shp in shapes.items():
        nbytes = math.prod(shp) * size
        if shards[-1] and used + nbytes > shard_bytes:
            shards.append([])
            used = 0
        shards[-1].append(name)
        used += nbytes
    files = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    for index, (file, names) in enumerate(zip(files, shards)):
        tensors = {}
        for offset, name in enumerate(names):
            gen = torch.Generator().manual_seed(seed * 1_000_003 + 1009 * index + offset)
            value = _init_value(name, shapes[name], gen, d_model=s["d_model"], d_mlp=s["d_mlp"])
            tensors[name] = value.to(torch_dtype).contiguous()
        save_file(tensors, str(out / file), metadata={"format": "pt"})
        del tensors
    weight_map = {name: file for file, names in zip(files, shards) for name in names}
    total = sum(math.prod(shp) for shp in shapes.values()) * size
    index_json = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index_json, indent=2) + "\n")
    config.dtype = torch_dtype
    config.save_pretrained(out)
    tiny_tokenizer(vocab, model_max_length=s["n_ctx"], size=s["n_tokenizer"]).save_pretrained(out)
    return out
