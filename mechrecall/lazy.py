"""The one lazy-import pattern of the project: real imports under ``TYPE_CHECKING``, served on first use (PEP 562).

A module that exports names it must not import yet (torch would make ``--help`` slow) writes its imports once,
as ordinary imports, in an ``if TYPE_CHECKING:`` block, and asks this module for its ``__getattr__``::

    from typing import TYPE_CHECKING

    from mechrecall.lazy import lazy_imports

    if TYPE_CHECKING:  # what mypy and editors see; at run time each name is imported on first use
        from mypaper import parts, runs
        from mypaper.runs import train_run

    __getattr__, __dir__ = lazy_imports(__name__)
    __all__ = ["parts", "runs", "train_run"]

mypy checks every name (a misspelt one fails ``mypy``), go-to-definition follows it, and at run time
``module.train_run`` imports ``mypaper.runs`` the first time it is asked for (then keeps it
as a module attribute). The block is the table: :func:`type_checking_imports` reads it from the module's source
the first time a lazy name is asked for, so no second list of names can drift from it.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

#: name -> (module, attribute); attribute ``None``: the name is the module itself (``import x as name``)
Table = dict[str, tuple[str, "str | None"]]


def lazy_imports(module: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``module`` (its ``__name__``): each name that an ``if TYPE_CHECKING:``
    import of the module binds is imported on first use; any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        table = _table(module)
        if name not in table:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = resolve(*table[name])
        setattr(sys.modules[module], name, value)  # the next access is an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[module]), *_table(module)})

    return __getattr__, __dir__


def resolve(module: str, attribute: str | None) -> Any:
    """``module`` itself (``attribute`` ``None``), its attribute, or its submodule of that name (imported now)."""
    owner = importlib.import_module(module)
    if attribute is None:
        return owner
    if attribute in vars(owner):  # an attribute, or a submodule imported before
        return vars(owner)[attribute]
    try:
        return importlib.import_module(f"{module}.{attribute}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{module}.{attribute}":  # the submodule exists but an import inside it failed
            raise
    return getattr(owner, attribute)  # a name that module itself serves lazily


@cache
def _table(module: str) -> Table:
    source = sys.modules[module].__file__
    if source is None:
        raise ImportError(f"{module}: no source file to read its TYPE_CHECKING imports from")
    return type_checking_imports(Path(source).read_text(encoding="utf-8"), module)


def type_checking_imports(source: str, module: str) -> Table:
    """The names bound by the imports of ``source``'s top-level ``if TYPE_CHECKING:`` blocks, each with the module
    (relative imports resolved against ``module``, the source's own name) and attribute it comes from."""
    table: Table = {}
    package = module if _is_package_source(module) else module.rpartition(".")[0]
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom):
                origin = _absolute(stmt.module or "", stmt.level, package)
                table.update({a.asname or a.name: (origin, a.name) for a in stmt.names})
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:  # `import x.y` binds x; `import x.y as z` binds z to x.y
                    name = a.asname or a.name.partition(".")[0]
                    table[name] = (a.name if a.asname else name, None)
    return table


def _is_package_source(module: str) -> bool:
    loaded = sys.modules.get(module)
    return loaded is not None and "__path__" in vars(loaded)  # not hasattr: that would ask our __getattr__


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(name: str, level: int, package: str) -> str:
    """The absolute module of ``from <level dots><name> import ...`` written in ``package``."""
    if level == 0:
        return name
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{name}" if name else base
