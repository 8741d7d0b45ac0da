"""Typed results: what a part hands back and what its claims read, checked by mypy and validated on read-back.

A paper declares one :class:`Results` model per part (``analyses/papers/<paper>/results.py``), nesting
:class:`Entry` models for its sub-tables; a claim reads its number by attribute access on that model
(``value=lambda r: r.after_pt.pt_rel``), so a misspelt field fails mypy before any training, and
``results.json`` is validated against the model when it is read back (:func:`read_results`).

Why pydantic (v2): it validates nested JSON into typed objects in one call, with a one-line error naming the
field and the value, serialises them back to the same JSON, and is already in every install (TransformerLens
depends on it through wandb); stdlib dataclasses would need a hand-written validator.

Two markers stand where a number could not be measured, with the reason:

- :class:`NotRun` (``{"not_run": why}``): the claims reading it are ``not run`` (no weights here, a fit that
  did not converge, ...);
- :class:`NotApplicable` (``{"not_applicable": why}``): the run has no such configuration (a preset without
  it), so the claims reading it are left out.

A marker absorbs attribute and item access (``marker.x[3].y is marker``), so a claim reads
``r.configs["B"].control.first_step`` through a configuration that may be :class:`NotApplicable` and gets the
marker back: mypy types the read as ``float | NotApplicable`` and still rejects a misspelt field of the model.

Fields whose JSON key is not a Python name (``"PT.exact"``) carry it as an alias; the model reads and writes the
JSON key. Entries a part keeps that no claim, note or figure reads by name (histories, per-cell tables) need not
be declared: they ride along as JSON (``extra="allow"``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "Entry",
    "Maybe",
    "NotApplicable",
    "NotRun",
    "Results",
    "ResultsError",
    "marker_of",
    "read_results",
]

_CONFIG = ConfigDict(
    frozen=True,
    extra="allow",
    validate_by_name=True,
    validate_by_alias=True,
    serialize_by_alias=True,
    ser_json_inf_nan="null",
)


class Entry(BaseModel):
    """A typed sub-table of a part's results (frozen; undeclared keys kept as JSON)."""

    model_config = _CONFIG

    def to_json(self) -> dict[str, Any]:
        """The JSON the model stands for: the keys it was read from (a defaulted field that was not there stays out),
        NaN and ±inf as ``null``."""
        return json.loads(self.model_dump_json(by_alias=True, exclude_unset=True))


class Results(Entry):
    """A part's typed results. ``schema_version``: bump it when a field changes meaning or type; a stored record of
    another version is not read back as this model (the part reruns)."""

    schema_version: ClassVar[int] = 1

    @classmethod
    def schema_id(cls) -> str:
        """``"<Class>/<version>"``, stored beside the results in ``results.json``."""
        return f"{cls.__name__}/{cls.schema_version}"


class _Marker(BaseModel):
    """A number that is not there, with the reason. Absorbs attribute and item access (returns itself), so a claim
    reads through it and gets the marker back."""

    model_config = ConfigDict(frozen=True, extra="allow", ser_json_inf_nan="null")

    @property
    def why(self) -> str:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            return super().__getattr__(name)  # type: ignore[misc]
        extra = self.__pydantic_extra__ or {}
        return extra.get(name, self)

    def __getitem__(self, key: Any) -> Any:
        return self

    def to_json(self) -> dict[str, Any]:
        return json.loads(self.model_dump_json())


class NotRun(_Marker):
    """``{"not_run": why}``: not measured here (the claims reading it are ``not run``, with ``why``)."""

    not_run: str

    @property
    def why(self) -> str:
        return self.not_run


class NotApplicable(_Marker):
    """``{"not_applicable": why}``: the run has no such configuration (the claims reading it are left out)."""

    not_applicable: str

    @property
    def why(self) -> str:
        return self.not_applicable


T = TypeVar("T")

#: a field that may hold a marker instead of its value: ``Maybe[float]``, ``Maybe[PanelResults]`` (the markers are
#: tried first, so a table with a ``not_run`` key is never read as the value)
Maybe = Annotated[NotRun | NotApplicable | T, Field(union_mode="left_to_right")]


def marker_of(value: Any) -> NotRun | NotApplicable | None:
    """``value`` itself when it is a marker, else ``None``."""
    return value if isinstance(value, (NotRun, NotApplicable)) else None


class ResultsError(ValueError):
    """A stored results record that is not the declared model: another schema version, or a field that fails
    validation (the message names it)."""


R = TypeVar("R", bound=Results)


def read_results(model: type[R], data: Any, *, schema: str | None = None) -> R | NotRun:
    """``data`` (a part's ``results`` as stored in ``results.json``, or as a part built it) validated as ``model``,
    or as :class:`NotRun` where the whole part was not run (``{"not_run": why, ...}``). ``schema``: the stored
    ``results_schema`` (``None``: not checked). :class:`ResultsError` with one line naming the first bad field."""
    if isinstance(data, (model, NotRun)):
        return data
    if schema is not None and schema != model.schema_id():
        raise ResultsError(f"results of schema {schema!r}; expected {model.schema_id()!r}")
    if isinstance(data, dict) and "not_run" in data:
        return NotRun.model_validate(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first, where = _first_error(exc)
        raise ResultsError(
            f"{model.__name__}: {where}: {first['msg']} (got {str(first.get('input'))[:80]!r}); "
            f"{exc.error_count()} error(s) in all"
        ) from None


def _first_error(exc: ValidationError) -> tuple[Any, str]:
    """The error a reader needs and its field path: inside a ``Maybe[...]`` field, the model's error rather than the
    markers' ("not_run: Field required"), with the union's member names left out of the path."""
    markers = {NotRun.__name__, NotApplicable.__name__}
    errors = exc.errors()
    first = next((e for e in errors if not markers & {str(p) for p in e["loc"]}), errors[0])
    members = _model_names(Entry)
    where = ".".join(str(p) for p in first["loc"] if str(p) not in members) or "(top)"
    return first, where


def _model_names(base: type) -> set[str]:
    """The names of ``base`` and every subclass: what pydantic puts in an error's path for a union member."""
    names = {base.__name__}
    sub: type
    for sub in base.__subclasses__():
        names |= _model_names(sub)
    return names
