"""mechrecall: how transformers combine knowledge in their weights with reasoning over the context.

The core: toy-model builder (``build_toy_model`` + ``surgeries``), one batch type (``Batch``), one
trainer (``train``), one checkpoint format (``save_checkpoint`` / ``load_model``), claims as data
(``Claim`` + rules) and the experiment protocol (``Experiment``: shared CLI, presets, results written
as each part finishes); weights by TransformerLens name on either TL major (``tl_parameter``, ``weight``,
``tl_grad``, ``tl_state_dict``, ``load_tl_state_dict``; ``Model`` is the installed major's model class). The
sibling packages are reachable from here too::

    from mechrecall import analyses, hooks, pretrained

Names are imported on first use, so ``import mechrecall`` (and every ``--help``) stays fast.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any

__version__ = "0.1.0"

_SIBLINGS = ("analyses", "hooks", "pretrained")
_LAZY = {
    **dict.fromkeys(
        (
            "FactoredMatrix",
            "HookedTransformer",
            "HookedTransformerConfig",
            "HookPoint",
            "Model",
            "TL_MAJOR",
            "load_tl_state_dict",
            "tl_grad",
            "tl_parameter",
            "tl_parameters",
            "tl_state_dict",
            "weight",
        ),
        "mechrecall._tl",
    ),
    **dict.fromkeys(
        ("build_from_spec", "build_toy_model", "make_config", "model_spec", "trainable_parameters"),
        "mechrecall.builder",
    ),
    **dict.fromkeys(("load_model", "load_weights", "save_checkpoint"), "mechrecall.checkpoint"),
    **dict.fromkeys(("save_figure", "versions"), "mechrecall.results"),
    **dict.fromkeys(
        ("Claim", "Rule", "at_least", "at_most", "between", "near", "is_true", "not_run"), "mechrecall.claims"
    ),
    **dict.fromkeys(("Experiment", "Part", "Option", "PartResult", "Context"), "mechrecall.experiment"),
    **dict.fromkeys(("UsageError",), "mechrecall.errors"),
    **dict.fromkeys(("Batch",), "mechrecall.batch"),
    **dict.fromkeys(
        (
            "Freeze",
            "LinearFeedForward",
            "NoFeedForward",
            "PermanentHook",
            "PreviousTokenEmbedding",
            "SetActivation",
            "SetWeight",
            "Surgery",
            "TrainableEntries",
            "ZeroBiases",
        ),
        "mechrecall.surgeries",
    ),
    **dict.fromkeys(("TrainConfig", "TrainResult", "latest_checkpoint", "train"), "mechrecall.trainer"),
}


def __getattr__(name: str) -> Any:
    # `from mechrecall import analyses` (and hooks, pretrained) gives the top-level sibling package; core names
    # are imported from their module on first use.
    if name in _SIBLINGS:
        module = _importlib.import_module(name)
    elif name in _LAZY:
        module = getattr(_importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'mechrecall' has no attribute {name!r}")
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_SIBLINGS])


__all__ = sorted(_LAZY)
