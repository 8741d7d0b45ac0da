"""Loading a local Hugging Face directory (``save_pretrained`` output) as a TransformerLens model, offline.

The folder's config, tokenizer and weights are read here with Hugging Face's loaders; the adapter's
``mechrecall._tl.model_from_hf`` makes the model of them: on TL 4 ``TransformerBridge.boot_transformers`` of the
loaded model (in compatibility mode), on TL 3 as follows.

TL 3: why not ``HookedTransformer.from_pretrained(path)``: TL 3.9 rejects paths there
(``get_official_model_name`` runs unconditionally). And why not TL's lower-level
``loading.get_pretrained_model_config(path)``: its ``convert_hf_model_config``

* reads ``hf_config.n_ctx`` for GPT-2, an attribute transformers 5's ``GPT2Config`` no longer has
  (it is only present when an old config.json still carries the key), so GPT-2 directories saved by
  transformers 5 fail with ``AttributeError``;
* guesses the architecture from the *path string* (``"llama"``/``"gemma"`` substrings) before it
  reads config.json, so a folder such as ``~/llama-runs/pythia-70m`` would be mis-read;
* calls ``AutoConfig.from_pretrained`` without ``local_files_only``.

So for the architectures supported here the TL config is built directly from the HF config,
field by field the same mapping as TL's ``convert_hf_model_config`` (kept in step by a test that
compares the two), and the weights go through TL's own converters (``convert_neox_weights``,
``convert_gpt2_weights``) and ``load_and_process_state_dict``, exactly as ``from_pretrained`` does.
Everything is read with ``local_files_only=True``: no hub call, not even for the config.

Checkpoint mirrors: a directory holding subfolders ``step{N}/`` (each a ``save_pretrained`` output,
e.g. a local copy of Pythia's hub revisions ``step{N}``) is loaded with ``checkpoint=N``, and without one from
its ``final/`` subfolder when it has one (the mini series of :mod:`pretrained.mini`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from mechrecall._tl import Model, hf_rotary_pct, model_from_hf
from pretrained._names import check_step

_STEP_DIR = re.compile(r"step(\d+)")


def _tl_config_gpt2(c: Any) -> dict[str, Any]:
    if getattr(c, "add_cross_attention", False):
        raise ValueError("GPT-2 models with cross-attention (add_cross_attention=True) are not supported")
    return {
        "d_model": c.n_embd,
        "d_head": c.n_embd // c.n_head,
        "n_heads": c.n_head,
        # TL uses 4 * n_embd; n_inner is HF's override of that (None = 4 * n_embd).
        "d_mlp": getattr(c, "n_inner", None) or 4 * c.n_embd,
        "n_layers": c.n_layer,
        # TL reads c.n_ctx, which transformers 5 dropped; n_positions is the same length
        # (GPT-2 configs always had n_ctx == n_positions).
        "n_ctx": c.n_positions,
        "eps": c.layer_norm_epsilon,
        "d_vocab": c.vocab_size,
        "act_fn": c.activation_function,
        "use_attn_scale": getattr(c, "scale_attn_weights", True),
        "use_local_attn": False,
        "scale_attn_by_inverse_layer_idx": getattr(c, "scale_attn_by_inverse_layer_idx", False),
        "normalization_type": "LN",
    }


def _rope(c: Any) -> tuple[float, float]:
    """(partial rotary fraction, rotary base) from a GPT-NeoX config, transformers 4 or 5 layout."""
    params = getattr(c, "rope_parameters", None) or {}
    # transformers 5 also exposes rope_parameters as rope_scaling; 4.x has rope_scaling=None
    # unless scaled. Either way only the default rope type (Pythia's) is supported.
    for spec in (params, getattr(c, "rope_scaling", None) or {}):
        rope_type = spec.get("rope_type", spec.get("type", "default"))
        if rope_type != "default":
            raise ValueError(
                f"GPT-NeoX with rope type {rope_type!r} is not supported; only the plain rotary embedding of Pythia is"
            )
    theta = params.get("rope_theta", getattr(c, "rope_theta", getattr(c, "rotary_emb_base", 10000)))
    return hf_rotary_pct(c), float(theta)


def _tl_config_neox(c: Any) -> dict[str, Any]:
    if not getattr(c, "attention_bias", True):
        raise ValueError("GPT-NeoX without attention biases (attention_bias=False) is not supported")
    pct, theta = _rope(c)
    d_head = c.hidden_size // c.num_attention_heads
    return {
        "d_model": c.hidden_size,
        "d_head": d_head,
        "n_heads": c.num_attention_heads,
        "d_mlp": c.intermediate_size,
        "n_layers": c.num_hidden_layers,
        "n_ctx": c.max_position_embeddings,
        "eps": c.layer_norm_eps,
        "d_vocab": c.vocab_size,
        "act_fn": c.hidden_act,
        "use_attn_scale": True,
        "use_local_attn": False,
        "scale_attn_by_inverse_layer_idx": False,
        "parallel_attn_mlp": getattr(c, "use_parallel_residual", True),
        "positional_embedding_type": "rotary",
        "rotary_adjacent_pairs": False,
        "rotary_dim": round(pct * d_head),
        # TL leaves rotary_base at its default 10000 (Pythia's value); read it, to be exact.
        "rotary_base": theta,
        "normalization_type": "LN",
        "default_prepend_bos": False,
    }


#: HF architecture name -> HF-config-to-TL-config-dict function.
_CONFIG_MAPPERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "GPTNeoXForCausalLM": _tl_config_neox,
    "GPT2LMHeadModel": _tl_config_gpt2,
}
#: Architectures a local directory may hold (``config.json``'s ``architectures[0]``).
SUPPORTED_ARCHITECTURES: tuple[str, ...] = tuple(_CONFIG_MAPPERS)
_MODEL_TYPES = {"gpt_neox": "GPTNeoXForCausalLM", "gpt2": "GPT2LMHeadModel"}


def architecture_of(hf_config: Any, where: Path) -> str:
    """The supported architecture named by an HF config; ``ValueError`` naming it otherwise."""
    archs = list(getattr(hf_config, "architectures", None) or [])
    arch = archs[0] if archs else _MODEL_TYPES.get(getattr(hf_config, "model_type", ""), "")
    if arch not in _CONFIG_MAPPERS:
        named = arch or f"model_type={getattr(hf_config, 'model_type', None)!r}"
        raise ValueError(
            f"{where}: architecture {named} is not supported for local loading; "
            f"supported: {', '.join(SUPPORTED_ARCHITECTURES)} (GPT-NeoX/Pythia and GPT-2)"
        )
    return arch


def tl_config_of(hf_config: Any) -> dict[str, Any] | None:
    """The TL config fields of an HF config of a supported architecture, else ``None`` (a hub model TL loads but
    this mapping does not cover)."""
    try:
        return tl_config_dict(hf_config, architecture_of(hf_config, Path(".")))
    except ValueError:
        return None


def tl_config_dict(hf_config: Any, arch: str) -> dict[str, Any]:
    """The architecture part of a TL config dict (as TL's ``convert_hf_model_config`` would build
    it) for an HF config of a supported architecture."""
    cfg = _CONFIG_MAPPERS[arch](hf_config)
    cfg["original_architecture"] = arch
    return cfg


def step_dirs(root: Path) -> dict[int, Path]:
    """``{N: root/stepN}`` for every ``step{N}/`` subfolder holding a config.json."""
    out: dict[int, Path] = {}
    if root.is_dir():
        for child in root.iterdir():
            m = _STEP_DIR.fullmatch(child.name)
            if m and (child / "config.json").is_file():
                out[int(m.group(1))] = child
    return dict(sorted(out.items()))


def resolve_local_dir(root: Path, checkpoint: object) -> Path:
    """The ``save_pretrained`` directory to read: ``root`` itself, ``root/step{checkpoint}``, or for a mirror
    without a checkpoint its ``root/final`` (where a series keeps its last weights, as ``pretrained.mini`` does).

    ``ValueError`` if ``root`` is not a directory, if it has no config.json (and ``checkpoint``
    is not given), or if ``checkpoint`` is given and ``root/step{N}/config.json`` does not exist.
    """
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory; expected a Hugging Face save_pretrained folder")
    steps = step_dirs(root)
    if checkpoint is None:
        if (root / "config.json").is_file():
            return root
        if steps and (root / "final" / "config.json").is_file():  # a series' final weights (pretrained.mini)
            return root / "final"
        if steps:
            raise ValueError(
                f"{root} is a checkpoint mirror (step subfolders {sorted(steps)}); pass checkpoint=N to choose one"
            )
        raise ValueError(
            f"{root} has no config.json; expected the output of "
            "model.save_pretrained(dir) + tokenizer.save_pretrained(dir)"
        )
    step = check_step(checkpoint)
    if step in steps:
        return steps[step]
    if steps:
        raise ValueError(f"checkpoint={step}: {root} has no step{step}/ subfolder; available: {sorted(steps)}")
    raise ValueError(
        f"checkpoint={step} given but {root} has no step{{N}}/ subfolders. A local checkpoint "
        "mirror is a folder with one save_pretrained output per step: <dir>/step0/, <dir>/step1000/, ..."
    )


def load_local(
    path: Path,
    *,
    flags: dict[str, bool],
    dtype: torch.dtype,
    device: str | torch.device,
) -> Model:
    """Load the ``save_pretrained`` folder ``path`` fully offline (see the module docstring); the model is built by
    the adapter's ``model_from_hf`` (TL 3: TL's converters; TL 4: ``TransformerBridge.boot_transformers``)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    path = path.resolve()
    hf_config = AutoConfig.from_pretrained(path, local_files_only=True)
    arch = architecture_of(hf_config, path)

    cfg_dict = tl_config_dict(hf_config, arch)
    try:
        # add_bos_token=True, as TL loads tokenizers (to_tokens strips it on prepend_bos=False).
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, add_bos_token=True)
    except (OSError, ValueError, TypeError) as exc:
        raise OSError(
            f"{path}: could not load a tokenizer ({type(exc).__name__}: {str(exc)[:200]}); "
            "save one next to the model with tokenizer.save_pretrained(dir)"
        ) from None

    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a per-shard "Loading weights" bar for a local folder is noise
    try:
        hf_model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    hf_model.eval()
    hf_model.requires_grad_(False)
    return model_from_hf(
        hf_model, tokenizer, cfg_dict, name=str(path), flags=flags, dtype=dtype, device=device, consume=True
    )
