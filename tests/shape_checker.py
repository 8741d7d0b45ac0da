"""The run-time checker the tests install (tests/conftest.py): beartype on the **array annotations only**.

``jaxtyping.install_import_hook`` wraps every function of the project's packages with
``jaxtyped(typechecker=shape_checker.check)``. ``check`` hands beartype a copy of the function whose
annotations are reduced to those that mention a jaxtyping array type (``Float[Tensor, "batch pos"]``,
``Int[Tensor, "n"] | None``, ...), so a tensor of the wrong shape or dtype fails the call, while plain
arguments still reach the library's own validation (which names the bad value in a ``ValueError``, as the
bad-input tests check).
"""

from __future__ import annotations

import functools
import types
import typing

import beartype

_CONF = beartype.BeartypeConf(is_pep484_tower=True)


def _mentions_array(hint: object) -> bool:
    if isinstance(hint, type) and hint.__module__.startswith("jaxtyping"):
        return True
    return any(_mentions_array(arg) for arg in typing.get_args(hint))


def check(fn):
    if isinstance(fn, type) or not callable(fn):
        return fn
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: leave the function as it is
        return fn
    arrays = {name: hint for name, hint in hints.items() if _mentions_array(hint)}
    if not arrays:
        return fn
    clone = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__annotations__ = arrays
    clone.__qualname__, clone.__module__ = fn.__qualname__, fn.__module__
    checked = beartype.beartype(clone, conf=_CONF)
    return functools.wraps(fn)(checked)
