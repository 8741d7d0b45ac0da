"""``pretrained.load``: one entry point for GPT-2 / Pythia models by name or from a local folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, TypeAlias

import torch

from mechrecall import _tl
from mechrecall._tl import Model
from mechrecall.processing import processing_of, require_raw  # noqa: F401  (part of pretrained's API)
from pretrained import _hub, _local, _names
from pretrained.errors import PretrainedNotAvailableError

Processing = Literal["tl", "raw"]
DTypeLike: TypeAlias = str | torch.dtype

#: Weight processing per ``processing=`` value, as keyword arguments of TL's
#: ``from_pretrained`` / ``load_and_process_state_dict``. "tl" is TL's default processing.
PROCESSING_FLAGS: dict[str, dict[str, bool]] = {
    "tl": dict(
        fold_ln=True,
        center_writing_weights=True,
        center_unembed=True,
        fold_value_biases=True,
        refactor_factored_attn_matrices=False,
    ),
    "raw": dict(
        fold_ln=False,
        center_writing_weights=False,
        center_unembed=False,
        fold_value_biases=False,
        refactor_factored_attn_matrices=False,
    ),
}

_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def resolve_dtype(dtype: DTypeLike) -> torch.dtype:
    """``"float32" | "float64" | "bfloat16" | "float16"`` or the torch dtype itself -> torch dtype."""
    if isinstance(dtype, torch.dtype) and dtype in _DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype in _DTYPES:
        return _DTYPES[dtype]
    raise ValueError(f"dtype={dtype!r} is not supported; expected one of {sorted(_DTYPES)} or the torch dtype")


def _check_processing(processing: object) -> str:
    if not isinstance(processing, str) or processing not in PROCESSING_FLAGS:
        raise ValueError(
            f"processing={processing!r} is not supported; expected 'tl' (TL's fold_ln, "
            "center_writing_weights, center_unembed, fold_value_biases) or 'raw' (weights as stored)"
        )
    return processing


def load(
    name_or_path: str | os.PathLike[str],
    *,
    checkpoint: int | None = None,
    processing: Processing = "tl",
    dtype: DTypeLike = "float32",
    device: str | torch.device = "cpu",
) -> Model:
    """Load a pretrained GPT-2 / Pythia model as a ``Model`` with ``model.tokenizer`` set.

    Args:
        name_or_path: an existing directory (checked first), or a TransformerLens model name/alias
            such as ``"gpt2"``, ``"pythia-70m"``, ``"EleutherAI/pythia-1b"``.

            * Directory: the output of ``model.save_pretrained(dir)`` + ``tokenizer.save_pretrained(dir)``
              (config.json, safetensors weights, tokenizer files), architecture GPT-NeoX or GPT-2.
              Read fully offline (``local_files_only=True`` for config, weights and tokenizer).
            * Name: loaded as TL loads it (TL 3: ``HookedTransformer.from_pretrained`` /
              ``from_pretrained_no_processing``; TL 4: the Hugging Face model booted as a
              ``TransformerBridge``), from the Hugging Face cache or the hub. With
              ``HF_HUB_OFFLINE=1`` and the model not cached, :class:`PretrainedNotAvailableError`
              is raised at once (no network attempt); an unreachable hub raises the same error.
        checkpoint: a training step. For a Pythia name, one of :data:`PYTHIA_CHECKPOINTS` (hub
            revision ``step{N}``, TL's ``checkpoint_value=N``); other names reject it. For a
            directory, loads its subfolder ``step{N}/`` (a local mirror of checkpoints, each
            subfolder a ``save_pretrained`` output); any non-negative step that exists is accepted.
        processing: ``"tl"`` (default): TL's usual processing -- fold_ln, center_writing_weights,
            center_unembed, fold_value_biases. Logits change by a per-position constant
            (center_unembed); log-probs are unchanged. ``"raw"``: the stored weights as they are
            (e.g. ``blocks[l].mlp.W_in`` is the HF up-projection, transposed to ``[d_model, d_mlp]``);
            use it for anything that edits weights (LayerNorm folding changes ``W_in``, so a
            low-rank truncation of a folded ``W_in`` is not one of the model's own ``W_in``).
        dtype: ``"float32"`` (default), ``"float64"``, ``"bfloat16"``, ``"float16"`` or a torch dtype.
        device: where the model is put (default ``"cpu"``).

    Returns:
        The model, with ``model.cfg.mechrecall_processing`` (``"tl"``/``"raw"``),
        ``model.cfg.mechrecall_source`` (``str(name_or_path)``) and
        ``model.cfg.mechrecall_checkpoint`` (the step or ``None``) recorded.

    Raises:
        ValueError: bad ``processing``/``dtype``/``checkpoint``; a name that is neither an existing
            path nor a TL model (the message lists close TL names); an unsupported architecture.
        PretrainedNotAvailableError: (an ``OSError``) a hub model that can't be had offline.
    """
    proc = _check_processing(processing)
    torch_dtype = resolve_dtype(dtype)
    flags = PROCESSING_FLAGS[proc]
    source = os.fspath(name_or_path)
    if not source.strip():
        raise ValueError("name_or_path is empty; pass a model name such as 'pythia-70m' or a directory")
    path = Path(source).expanduser()

    if path.exists():
        folder = _local.resolve_local_dir(path, checkpoint)
        step = None if checkpoint is None else _names.check_step(checkpoint)
        model = _local.load_local(folder, flags=flags, dtype=torch_dtype, device=device)
        if step is not None:  # record it the way TL records hub checkpoints
            model.cfg.from_checkpoint = True
            model.cfg.checkpoint_value = step
            model.cfg.checkpoint_label_type = "step"
    else:
        official = _names.official_name(source)
        if official is None:
            suggestions = _names.close_matches(source)
            hint = f" Did you mean: {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
            raise ValueError(
                f"{source!r} is neither an existing directory nor a TransformerLens model name.{hint} "
                "(All names: transformer_lens.supported_models.OFFICIAL_MODEL_NAMES.)"
            )
        step = _names.validate_hub_checkpoint(source, official, checkpoint)
        model = _hub.load_from_hub(source, official, checkpoint=step, flags=flags, dtype=torch_dtype, device=device)

    model.cfg.mechrecall_processing = proc
    model.cfg.mechrecall_source = source
    model.cfg.mechrecall_checkpoint = step
    model.eval()
    return model


def no_weights(error: PretrainedNotAvailableError) -> str:
    """``"no weights: <the error's first line>"``: why a measurement on a model that can't be had here was not run."""
    return f"no weights: {str(error).splitlines()[0]}"


def load_or_why(name_or_path: str | os.PathLike[str], **kwargs: Any) -> tuple[Model | None, str]:
    """``(load(name_or_path, **kwargs), "")``, or ``(None, no_weights(...))`` where the weights can't be had here
    (offline and not cached, an unreachable hub): the analyses that run on real checkpoints then report their
    claims ``not run`` with that reason instead of failing."""
    try:
        return load(name_or_path, **kwargs), ""
    except PretrainedNotAvailableError as exc:
        return None, no_weights(exc)


def untrained_like(model: Model, seed: int) -> Model:
    """A randomly initialised model of ``model``'s config and tokenizer, on its device, in eval mode: TransformerLens'
    initialisation for that config with ``cfg.seed = seed`` (the global RNG left as it was). The control of a
    measurement on pretrained weights: the same measurement without the training. A ``pretrained.mini`` series is
    built the same way, so its step-0 checkpoint is ``untrained_like(final, its seed)`` exactly.

    TL 3: a ``HookedTransformer`` of ``model.cfg``. TL 4: TL's initialisation of the TL config ``model`` was loaded
    from, written into a fresh Hugging Face model of its architecture and booted and processed as ``model`` was
    (GPT-2's tied embeddings stay tied); for a GPT-NeoX / GPT-2 model loaded by :func:`load`."""
    return _tl.untrained_like(model, seed)
