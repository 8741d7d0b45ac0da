"""One progress display for every loop: a tqdm bar on a terminal or in a Jupyter notebook (a widget), nothing when
output goes to a file or pipe (a log then gets the experiment's own one-line messages instead of a line per step)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any


def progress_bar(
    iterable: Iterable[Any] | None = None, *, enabled: bool = True, log_every: float | None = None, **kwargs: Any
) -> Any:
    """``tqdm(iterable, **kwargs)``, disabled unless ``enabled`` and stderr is a terminal or a notebook's.

    ``log_every`` (seconds): where no bar can be drawn (output to a file or pipe) but ``enabled``, a loop that runs
    for minutes still says how far it is: one line to stderr at most every ``log_every`` seconds, with the count,
    the time so far and an ETA (:class:`LogLines`)."""
    from tqdm.auto import tqdm

    shown = enabled and (sys.stderr.isatty() or in_notebook())
    if enabled and not shown and log_every is not None:
        return LogLines(iterable, total=kwargs.get("total"), desc=kwargs.get("desc", ""), every=log_every)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("mininterval", 0.5)
    return tqdm(iterable, disable=not shown, **kwargs)


class LogLines:
    """tqdm's ``update`` / ``set_postfix_str`` / ``close`` and iteration, written as plain lines to a log:
    ``LASER sweep: 12/176 (7%), 1:03 so far, ETA 14:20 (layer 8 mlp_in)`` at most every ``every`` seconds."""

    def __init__(
        self, iterable: Iterable[Any] | None, *, total: int | None, desc: str, every: float, clock: Any = time.monotonic
    ):
        self.iterable, self.desc, self.every, self.clock = iterable, desc, every, clock
        self.total = total if total is not None else len(iterable) if hasattr(iterable, "__len__") else None  # type: ignore[arg-type]
        self.n, self.postfix = 0, ""
        self.start = self.last = clock()

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update(1)

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        """What the loop does now (e.g. the SVD before a matrix's evaluations); a line if one is due."""
        self.postfix = text
        self._maybe_say()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._maybe_say()

    def _maybe_say(self) -> None:
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            print(self.line(now), file=sys.stderr, flush=True)

    def line(self, now: float) -> str:
        from mechrecall.executors.progress import clock

        elapsed = now - self.start
        text = f"{self.desc}: {self.n}" + (f"/{self.total}" if self.total else "")
        if self.total:
            text += f" ({100 * self.n / self.total:.0f}%)"
        text += f", {clock(elapsed)} so far"
        if self.total and 0 < self.n < self.total:
            text += f", ETA {clock(elapsed / self.n * (self.total - self.n))}"
        return text + (f" ({self.postfix})" if self.postfix else "")

    def close(self) -> None:
        if self.n and self.clock() - self.start >= self.every:  # a loop that logged: say it ended
            print(self.line(self.clock()), file=sys.stderr, flush=True)


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (its stderr is no terminal, but a bar renders there)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"
