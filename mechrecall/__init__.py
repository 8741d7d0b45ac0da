"""mechrecall: how transformers combine knowledge in their weights with reasoning over the context.

The core: toy-model builder (``build_toy_model`` + ``surgeries``), task generators (``tasks``), one
trainer (``train``), one checkpoint format (``save_checkpoint`` / ``load_model``) and one results format
(``write_results``). The sibling packages are reachable from here too::

    from mechrecall import analyses, hooks, pretrained
"""
from __future__ import annotations

import importlib as _importlib

from mechrecall._tl import FactoredMatrix, HookedTransformer, HookedTransformerConfig, HookPoint
from mechrecall.builder import build_from_spec, build_toy_model, make_config, model_spec, trainable_parameters
from mechrecall.checkpoint import load_model, load_weights, save_checkpoint
from mechrecall.results import Claim, write_results
from mechrecall.surgeries import (
    Freeze,
    LinearFeedForward,
    NoFeedForward,
    PermanentHook,
    PreviousTokenEmbedding,
    SetActivation,
    SetWeight,
    Surgery,
    TrainableEntries,
    ZeroBiases,
)
from mechrecall.trainer import Batch, TrainConfig, TrainResult, latest_checkpoint, train

__version__ = "0.1.0"

_SIBLINGS = ("analyses", "hooks", "pretrained")


def __getattr__(name: str):
    # `from mechrecall import analyses` (and hooks, pretrained) gives the top-level sibling package.
    if name in _SIBLINGS:
        module = _importlib.import_module(name)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'mechrecall' has no attribute {name!r}")


__all__ = [
    "Batch", "Claim", "FactoredMatrix", "Freeze", "HookPoint", "HookedTransformer", "HookedTransformerConfig",
    "LinearFeedForward", "NoFeedForward", "PermanentHook", "PreviousTokenEmbedding", "SetActivation", "SetWeight",
    "Surgery", "TrainConfig", "TrainResult", "TrainableEntries", "ZeroBiases", "build_from_spec", "build_toy_model",
    "latest_checkpoint", "load_model", "load_weights", "make_config", "model_spec", "save_checkpoint",
    "trainable_parameters", "train", "write_results",
]
