"""Typed presets: one frozen dataclass per paper, one override mechanism for every experiment.

A paper declares its sizes once (``analyses/papers/<paper>/presets.py``)::

    @dataclass(frozen=True)
    class NoisyICLPreset(Preset):
        d_model: int = 64
        steps: int = 600

    PRESETS = {"micro": NoisyICLPreset(d_model=32, steps=25, comparable=False), "smoke": NoisyICLPreset(), ...}

and the experiment's options that change a size name the field they override
(``Option("--steps", type=int, low=1, field="steps")``). The protocol applies them with :func:`override`
and every claim of the run then says what differs from the named preset (:func:`describe_overrides`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

P = TypeVar("P", bound="Preset")


@dataclass(frozen=True)
class Preset:
    """Base of every paper's presets.

    ``comparable``: whether the sizes are close enough to the paper's that a claim's verdict means something
    (``micro`` presets, which only exercise the code paths, are not)."""

    comparable: bool = True

    def scale_axes(self, part: str) -> Mapping[str, float]:
        """The sizes of ``part`` along the axes that matter for it (``{"d": 192, "T": 64, "steps": 1000}``); the
        protocol puts them beside the paper preset's own on every claim of the part (``mechrecall.claims.Claim
        .scale``). A paper's preset overrides this; an exact part returns the setting it computes in."""
        return {}

    def fields(self) -> tuple[str, ...]:
        """The names of this preset's fields (``comparable`` aside)."""
        return tuple(f.name for f in dataclasses.fields(self) if f.name != "comparable")


def override(preset: P, changes: Mapping[str, Any]) -> tuple[P, dict[str, tuple[Any, Any]]]:
    """``preset`` with ``changes`` applied (``None`` values mean "the preset's"), and what differs.

    A dotted field (``"standard.d_model"``) changes a field of a nested preset dataclass.
    Returns ``(new_preset, {field: (new, preset's)})`` with only the fields whose value changed.
    Raises ``KeyError`` naming a field the preset lacks."""
    given = {k: v for k, v in changes.items() if v is not None}
    nested: dict[str, dict[str, Any]] = {}
    for key in [k for k in changes if "." in k]:
        head, _, rest = key.partition(".")
        nested.setdefault(head, {})[rest] = changes[key]
    known = {f.name for f in dataclasses.fields(preset)}
    unknown = sorted({k.partition(".")[0] for k in changes} - known)
    if unknown:
        raise KeyError(f"{type(preset).__name__} has no field(s) {unknown}; expected some of {sorted(known)}")
    diffs = {k: (v, getattr(preset, k)) for k, v in given.items() if "." not in k and v != getattr(preset, k)}
    flat = {k: v for k, v in given.items() if "." not in k}
    for head, inner in nested.items():
        flat[head], inner_diffs = override(getattr(preset, head), inner)
        diffs.update({f"{head}.{k}": v for k, v in inner_diffs.items()})
    return dataclasses.replace(preset, **flat), diffs


def describe_overrides(name: str, diffs: Mapping[str, tuple[Any, Any]]) -> str:
    """``"changed from preset smoke: steps 5 (preset 600), d_model 32 (preset 64)"``, or ``""``."""
    if not diffs:
        return ""
    return f"changed from preset {name}: " + ", ".join(f"{k} {new} (preset {old})" for k, (new, old) in diffs.items())
