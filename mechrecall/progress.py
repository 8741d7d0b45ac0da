"""One progress display for every loop: a tqdm bar on a terminal or in a Jupyter notebook (a widget), nothing when
output goes to a file or pipe (a log then gets the experiment's own one-line messages instead of a line per step)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any


def progress_bar(iterable: Iterable[Any] | None = None, *, enabled: bool = True, **kwargs: Any) -> Any:
    """``tqdm(iterable, **kwargs)``, disabled unless ``enabled`` and stderr is a terminal or a notebook's."""
    from tqdm.auto import tqdm

    shown = enabled and (sys.stderr.isatty() or in_notebook())
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("mininterval", 0.5)
    return tqdm(iterable, disable=not shown, **kwargs)


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (its stderr is no terminal, but a bar renders there)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"
