"""Index checks shared by every analysis and hook, with one message style:
``layer=9 is out of range; expected an int in [0, 1] (the model has 2 layers)``."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any


def _cfg(model_or_cfg: Any) -> Any:
    return getattr(model_or_cfg, "cfg", model_or_cfg)


def check_index(name: str, value: Any, size: int, what: str = "") -> int:
    """``value`` as an int if it indexes ``size`` items; else ``ValueError`` naming it and the valid range."""
    try:
        index = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        index = None
    if index is None or not 0 <= index < size:
        raise ValueError(
            f"{name}={value!r} is out of range; expected an int in [0, {size - 1}]" + (f" ({what})" if what else "")
        )
    return index


def check_layer(model_or_cfg: Any, layer: Any, name: str = "layer") -> int:
    """A block index of the model."""
    n = _cfg(model_or_cfg).n_layers
    return check_index(name, layer, n, f"the model has {n} layers")


def check_layers(model_or_cfg: Any, layers: Iterable[Any]) -> list[int]:
    return [check_layer(model_or_cfg, layer) for layer in layers]


def check_head(model_or_cfg: Any, layer: Any, head: Any) -> tuple[int, int]:
    """A (layer, head) pair of the model."""
    n = _cfg(model_or_cfg).n_heads
    return check_layer(model_or_cfg, layer), check_index("head", head, n, f"the model has {n} heads per layer")


def check_heads(model_or_cfg: Any, heads: Iterable[tuple[Any, Any]]) -> list[tuple[int, int]]:
    return [check_head(model_or_cfg, layer, head) for layer, head in heads]
