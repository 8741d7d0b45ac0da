"""The toy-model builder: ``HookedTransformerConfig`` + surgeries -> ``HookedTransformer``.

    from mechrecall import build_toy_model, SetWeight, ZeroBiases
    model = build_toy_model(
        dict(n_layers=2, n_heads=1, d_model=64, d_head=64, d_mlp=256, d_vocab=66, n_ctx=64,
             act_fn="relu", normalization_type=None),
        [ZeroBiases(), SetWeight(("embed.W_E", "pos_embed.W_pos"), "normal"),
         SetWeight(("blocks.*.attn.W_Q",), "identity")],
        seed=0,
    )

The result is a plain ``HookedTransformer`` (``run_with_cache``, ``run_with_hooks`` and every TL tool
work on it). It carries its own recipe, ``model_spec(model)`` (config + surgeries + seed, JSON), from
which ``build_from_spec`` rebuilds it exactly: that recipe is what checkpoints store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import torch

from mechrecall._tl import (
    Model,
    ModelConfig,
    config_dict,
    config_fields,
    make_model_config,
    named_weights,
    new_model,
    recipe_config,
)
from mechrecall.seeds import derive_seed
from mechrecall.surgeries import Surgery, surgery_from_dict

SPEC_FORMAT = 1
_RUNTIME_CFG_KEYS = ("device", "n_devices", "n_params")  # not part of a model's identity


def make_config(cfg: ModelConfig | dict[str, Any], *, seed: int | None = None) -> ModelConfig:
    """A ``ModelConfig`` (TL 3.x's ``HookedTransformerConfig``, 4.x's ``TransformerBridgeConfig``) from a config or
    a dict of ``HookedTransformerConfig`` fields; TL's assertion failures become ``ValueError``."""
    d = _config_items(cfg)
    if isinstance(d.get("dtype"), str):
        d["dtype"] = _dtype(d["dtype"])
    if seed is not None:
        d["seed"] = seed
    for key in ("d_model", "d_head", "n_layers", "n_ctx"):
        if key not in d:
            raise ValueError(f"model config is missing {key!r} (required: d_model, d_head, n_layers, n_ctx, d_vocab)")
    for key in ("d_model", "d_head", "n_layers", "n_ctx", "n_heads", "d_vocab", "d_mlp"):
        value = d.get(key)
        auto = key in ("n_heads", "d_vocab") and value == -1  # TL infers these
        if value is not None and not auto and (not isinstance(value, int) or value < 1):
            raise ValueError(f"model config {key}={value!r}; expected a positive int")
    unknown = sorted(set(d) - config_fields())
    if unknown:
        raise ValueError(f"unknown HookedTransformerConfig fields {unknown}")
    try:
        return make_model_config(d)
    except AssertionError as exc:
        raise ValueError(f"invalid model config: {exc}") from None


def _config_items(cfg: ModelConfig | dict[str, Any]) -> dict[str, Any]:
    if isinstance(cfg, ModelConfig):
        return config_dict(cfg)
    if isinstance(cfg, dict):
        return dict(cfg)
    raise ValueError(f"cfg must be a HookedTransformerConfig or a dict, got {type(cfg).__name__}")


def cfg_to_dict(cfg: ModelConfig | dict[str, Any]) -> dict[str, Any]:
    """JSON-able dict of a config (dtype as a string; runtime-only fields dropped). A dict stays the fields it
    names, so a recipe written on one TransformerLens major rebuilds on the other."""
    d = {k: v for k, v in _config_items(cfg).items() if k not in _RUNTIME_CFG_KEYS}
    if "dtype" in d:
        d["dtype"] = str(d["dtype"]).removeprefix("torch.")
    return json.loads(json.dumps(d, default=str))


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}; expected e.g. 'float32' or 'float64'")
    return dtype


def build_toy_model(
    cfg: ModelConfig | dict[str, Any],
    surgeries: Sequence[Surgery] = (),
    *,
    seed: int | None = None,
) -> Model:
    """Build the model of ``cfg`` (``mechrecall._tl.new_model``: a ``HookedTransformer`` on TransformerLens 3.x,
    a ``TransformerBridge`` on 4.x) and apply ``surgeries`` in order.

    Args:
        cfg: the TL config (or its fields as a dict).
        surgeries: ``mechrecall.surgeries`` objects (or their ``to_dict()`` forms).
        seed: seeds TL's weight init and every surgery's random draws (surgery ``i`` uses its own
            generator seeded from ``(seed, i)``); defaults to ``cfg.seed``, else 0. Same seed -> same model.

    Raises:
        ValueError: a bad config or surgery (naming the value and what was expected), before any training.
    """
    surgeries = [surgery_from_dict(s) if isinstance(s, dict) else s for s in surgeries]
    for s in surgeries:
        if not isinstance(s, Surgery):
            raise ValueError(f"surgeries must be Surgery objects or dicts, got {type(s).__name__}")
    if seed is None:
        seed = cfg.seed if isinstance(cfg, ModelConfig) else (cfg.get("seed") if isinstance(cfg, dict) else None)
    seed = 0 if seed is None else int(seed)
    with torch.random.fork_rng(devices=[]):
        config = make_config(cfg, seed=seed)
        torch.manual_seed(seed)
        try:
            model = new_model(config)
        except (AssertionError, ValueError) as exc:  # 4.x checks parts of the config (act_fn) only here
            raise ValueError(f"invalid model config: {exc}") from None
    for index, surgery in enumerate(surgeries):
        generator = torch.Generator().manual_seed(derive_seed(seed, index))
        surgery.apply(model, generator)
    given = cfg_to_dict(cfg)
    model.mechrecall_spec = {
        "format": SPEC_FORMAT,
        "cfg": {**given, "seed": seed, "dtype": given.get("dtype", "float32")},
        "surgeries": [s.to_dict() for s in surgeries],
        "seed": seed,
    }
    return model


def model_spec(model: Model) -> dict[str, Any]:
    """The JSON recipe of a model built here (config, surgeries, seed).

    For a model not built by ``build_toy_model`` (e.g. from ``pretrained.load``) the recipe is just its
    config, with no surgeries. ``mechrecall_*`` attributes on ``model.cfg`` (such as the weight processing
    recorded by ``pretrained.load``) travel as ``cfg_extras``. The tokenizer is not part of the recipe.
    """
    spec = getattr(model, "mechrecall_spec", None)
    if spec is None:
        spec = {
            "format": SPEC_FORMAT,
            "cfg": cfg_to_dict(recipe_config(model)),
            "surgeries": [],
            "seed": model.cfg.seed,
        }
    spec = json.loads(json.dumps(spec))
    # Facts recorded on the config by mechrecall (e.g. pretrained.load's mechrecall_processing).
    extras = {k: v for k, v in vars(model.cfg).items() if k.startswith("mechrecall_")}
    if extras:
        spec["cfg_extras"] = json.loads(json.dumps(extras, default=str))
    return spec


def build_from_spec(spec: dict[str, Any]) -> Model:
    """Rebuild a model (fresh weights from its seed) from ``model_spec(model)``."""
    if spec.get("format") != SPEC_FORMAT:
        raise ValueError(f"model spec format {spec.get('format')!r}; expected {SPEC_FORMAT}")
    model = build_toy_model(spec["cfg"], spec["surgeries"], seed=spec["seed"])
    for key, value in spec.get("cfg_extras", {}).items():
        setattr(model.cfg, key, value)
    return model


def trainable_parameters(model: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """TL name -> parameter for every parameter that requires grad (``mechrecall._tl.named_weights``)."""
    return {n: p for n, p in named_weights(model).items() if p.requires_grad}
