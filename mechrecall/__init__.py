"""mechrecall: how transformers combine knowledge in their weights with reasoning over the context.

The core: toy-model builder (``build_toy_model`` + ``surgeries``), one batch type (``Batch``), one
trainer (``train``; ``train_seeds``: several seeds stacked in one process), one checkpoint format
(``save_checkpoint`` / ``load_model``), claims as data (``Claim`` + rules) and the experiment protocol
(``Experiment``: shared CLI, presets, results written as each part finishes); weights by TransformerLens name
on either TL major (``tl_parameter``, ``weight``, ``tl_grad``, ``tl_state_dict``, ``load_tl_state_dict``;
``Model`` is the installed major's model class). The sibling packages are reachable from here too::

    from mechrecall import analyses, hooks, pretrained

Names are imported on first use, so ``import mechrecall`` (and every ``--help``) stays fast.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from mechrecall.lazy import lazy_imports

__version__ = "0.1.0"

if TYPE_CHECKING:  # what mypy and editors see; at run time each name is imported on first use (mechrecall.lazy)
    from mechrecall._tl import (
        TL_MAJOR,
        FactoredMatrix,
        HookedTransformer,
        HookedTransformerConfig,
        HookPoint,
        Model,
        load_tl_state_dict,
        tl_grad,
        tl_parameter,
        tl_parameters,
        tl_state_dict,
        weight,
    )
    from mechrecall.batch import Batch
    from mechrecall.builder import build_from_spec, build_toy_model, make_config, model_spec, trainable_parameters
    from mechrecall.checkpoint import load_model, load_weights, save_checkpoint
    from mechrecall.claims import Claim, Rule, at_least, at_most, between, is_true, near, not_run
    from mechrecall.errors import UsageError
    from mechrecall.experiment import Context, Experiment, Option, Part, PartResult
    from mechrecall.results import save_figure, versions
    from mechrecall.stacked import train_seeds
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
    from mechrecall.trainer import TrainConfig, TrainResult, latest_checkpoint, train
    from mechrecall.typed import Entry, Maybe, NotApplicable, NotRun, Results, read_results

_core_getattr, _core_dir = lazy_imports(__name__)
# `from mechrecall import analyses` (and hooks, pretrained) gives the top-level sibling package, looked up by name at
# run time: the core never imports a sibling (dependencies point downwards), it only hands one to a user who asks.
_SIBLINGS = ("analyses", "hooks", "pretrained")


def __getattr__(name: str) -> Any:
    if name in _SIBLINGS:
        module = _importlib.import_module(name)
        globals()[name] = module
        return module
    return _core_getattr(name)


def __dir__() -> list[str]:
    return sorted({*_core_dir(), *_SIBLINGS})


__all__ = [
    "TL_MAJOR",
    "Batch",
    "Claim",
    "Context",
    "Entry",
    "Experiment",
    "FactoredMatrix",
    "Freeze",
    "HookPoint",
    "HookedTransformer",
    "HookedTransformerConfig",
    "LinearFeedForward",
    "Maybe",
    "Model",
    "NoFeedForward",
    "NotApplicable",
    "NotRun",
    "Option",
    "Part",
    "PartResult",
    "PermanentHook",
    "PreviousTokenEmbedding",
    "Results",
    "Rule",
    "SetActivation",
    "SetWeight",
    "Surgery",
    "TrainConfig",
    "TrainResult",
    "TrainableEntries",
    "UsageError",
    "ZeroBiases",
    "at_least",
    "at_most",
    "between",
    "build_from_spec",
    "build_toy_model",
    "is_true",
    "latest_checkpoint",
    "load_model",
    "load_tl_state_dict",
    "load_weights",
    "make_config",
    "model_spec",
    "near",
    "not_run",
    "read_results",
    "save_checkpoint",
    "save_figure",
    "tl_grad",
    "tl_parameter",
    "tl_parameters",
    "tl_state_dict",
    "train",
    "train_seeds",
    "trainable_parameters",
    "versions",
    "weight",
]
