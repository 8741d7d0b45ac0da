"""Checkpoints: one directory of safetensors + JSON, written atomically, loaded without unpickling.

Layout of a checkpoint directory::

    model.safetensors      the model's weights by TransformerLens name (``mechrecall._tl.tl_state_dict``): a file
                           either TransformerLens major loads
    optimizer.safetensors  optimizer tensors, keys "state.{param_index}.{name}" (only if saved with one)
    rng.safetensors        torch's global RNG state (uint8), for exact resumption
    checkpoint.json        {"format", "model_spec" (config + surgeries + seed), "step",
                            "optimizer": {"class", "param_groups", "scalars"}, "state": {...caller's JSON}}

``model_spec`` is the builder's recipe (``mechrecall.builder.model_spec``), so ``load_model(path)``
rebuilds the exact architecture (surgeries and permanent hooks included) before loading the weights,
and ``load_weights(model, path)`` refuses a checkpoint written for a different model.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from mechrecall._tl import Model, load_tl_state_dict, tl_state_dict
from mechrecall.builder import build_from_spec, model_spec
from mechrecall.errors import CheckpointError
from mechrecall.io import atomic_directory, atomic_write_json

CHECKPOINT_FORMAT = 1
_JSON = "checkpoint.json"


def _tensors_for_saving(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # safetensors wants contiguous, non-shared CPU storage.
    return {k: v.detach().to("cpu").contiguous().clone() for k, v in tensors.items()}


def save_checkpoint(
    path: str | os.PathLike,
    model: Model,
    *,
    optimizer: torch.optim.Optimizer | None = None,
    step: int | None = None,
    state: dict[str, Any] | None = None,
    save_rng: bool = True,
) -> Path:
    """Write a checkpoint directory at ``path`` (which must not exist) atomically.

    Args:
        model: any ``Model``; its recipe is ``model_spec(model)``.
        optimizer: saved (tensors + JSON structure) if given.
        step: the training step the weights correspond to.
        state: extra JSON-able data (e.g. the trainer's config and metrics history).
    """
    path = Path(path)
    meta: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "model_spec": model_spec(model),
        "step": step,
        "state": state or {},
    }
    with atomic_directory(path) as tmp:
        save_file(_tensors_for_saving(tl_state_dict(model)), str(tmp / "model.safetensors"))
        if optimizer is not None:
            tensors, meta["optimizer"] = _flatten_optimizer(optimizer)
            save_file(_tensors_for_saving(tensors), str(tmp / "optimizer.safetensors"))
        if save_rng:
            save_file({"torch": torch.get_rng_state()}, str(tmp / "rng.safetensors"))
        atomic_write_json(tmp / _JSON, meta)
    return path


def read_tensors(file: Path) -> dict[str, torch.Tensor]:
    """A checkpoint's safetensors file; :class:`CheckpointError` naming the file when it is missing or unreadable."""
    if not file.is_file():
        raise CheckpointError(f"{file} is missing: the checkpoint {file.parent} is incomplete")
    try:
        return load_file(str(file))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{file} is unreadable ({exc}); the checkpoint {file.parent} is damaged") from exc


def read_checkpoint_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The checkpoint's JSON (format-checked); :class:`CheckpointError` naming the file when it is unreadable."""
    path = Path(path)
    meta_file = path / _JSON
    if not meta_file.is_file():
        raise FileNotFoundError(f"{path} is not a mechrecall checkpoint (no {_JSON})")
    try:
        meta = json.loads(meta_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{meta_file} is unreadable ({exc}); the checkpoint {path} is damaged") from exc
    if not isinstance(meta, dict):
        raise CheckpointError(f"{meta_file} is not a JSON object; the checkpoint {path} is damaged")
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: checkpoint format {meta.get('format')!r}; expected {CHECKPOINT_FORMAT}")
    return meta


def load_model(path: str | os.PathLike) -> Model:
    """Rebuild the model recorded in a checkpoint and load its weights."""
    meta = read_checkpoint_meta(path)
    model = build_from_spec(meta["model_spec"])
    load_tl_state_dict(model, read_tensors(Path(path) / "model.safetensors"))
    return model


def spec_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Human-readable differences between two model specs (empty if the same model)."""
    diffs = []
    for key in sorted(set(a["cfg"]) | set(b["cfg"])):
        if key != "seed" and a["cfg"].get(key) != b["cfg"].get(key):  # the seed is compared below
            diffs.append(f"cfg.{key}: {a['cfg'].get(key)!r} vs {b['cfg'].get(key)!r}")
    if a["surgeries"] != b["surgeries"]:
        diffs.append(f"surgeries: {a['surgeries']!r} vs {b['surgeries']!r}")
    if a.get("seed") != b.get("seed"):
        diffs.append(f"seed: {a.get('seed')!r} vs {b.get('seed')!r}")
    return diffs


def load_weights(model: Model, path: str | os.PathLike, *, check_seed: bool = False) -> dict[str, Any]:
    """Load a checkpoint's weights into ``model`` after checking it was written for the same model.

    Raises:
        ValueError: the checkpoint's config or surgeries differ from ``model``'s (listing each difference).
    Returns:
        the checkpoint's JSON metadata.
    """
    meta = read_checkpoint_meta(path)
    ours, theirs = model_spec(model), meta["model_spec"]
    diffs = [d for d in spec_differences(theirs, ours) if check_seed or not d.startswith("seed")]
    if diffs:
        raise ValueError(
            f"checkpoint {path} was written for a different model (checkpoint vs this model): " + "; ".join(diffs)
        )
    load_tl_state_dict(model, read_tensors(Path(path) / "model.safetensors"))
    return meta


def load_optimizer_state(optimizer: torch.optim.Optimizer, path: str | os.PathLike) -> None:
    """Restore an optimizer saved by ``save_checkpoint`` (same parameter order required)."""
    meta = read_checkpoint_meta(path)
    if "optimizer" not in meta:
        raise ValueError(f"checkpoint {path} holds no optimizer state")
    info = meta["optimizer"]
    if info["class"] != type(optimizer).__name__:
        raise ValueError(
            f"checkpoint {path} holds a {info['class']} state; the optimizer is a {type(optimizer).__name__}"
        )
    tensors = read_tensors(Path(path) / "optimizer.safetensors")
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        _, index, name = key.split(".", 2)
        state.setdefault(int(index), {})[name] = value
    for index, scalars in info["scalars"].items():
        state.setdefault(int(index), {}).update(scalars)
    # JSON turned tuples (e.g. Adam's betas) into lists; every list but "params" was a tuple.
    groups = [
        {k: (tuple(v) if isinstance(v, list) and k != "params" else v) for k, v in g.items()}
        for g in info["param_groups"]
    ]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def load_rng_state(path: str | os.PathLike) -> None:
    """Restore torch's global RNG state saved with a checkpoint (if any)."""
    rng_file = Path(path) / "rng.safetensors"
    if rng_file.is_file():
        torch.set_rng_state(read_tensors(rng_file)["torch"])


def _flatten_optimizer(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, entries in sd["state"].items():
        for name, value in entries.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{index}.{name}"] = value
            else:
                scalars.setdefault(str(index), {})[name] = value
    groups = json.loads(json.dumps(sd["param_groups"], default=lambda v: list(v) if isinstance(v, tuple) else str(v)))
    return tensors, {"class": type(optimizer).__name__, "param_groups": groups, "scalars": scalars}
