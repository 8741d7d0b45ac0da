"""What every results file carries besides the numbers: package versions, and figures saved atomically.

The results format itself (``results.json``, schema ``mechrecall.results/2``) is written by the experiment
protocol, :mod:`mechrecall.experiment`, part by part.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from mechrecall.io import atomic_write_bytes, atomic_write_text

_PACKAGES = ("mechrecall", "torch", "transformer-lens", "transformers", "numpy", "safetensors", "circuitsvis")


def versions() -> dict[str, str | None]:
    """Versions of Python and the packages that determine the numbers, and the source's git commit
    (:func:`source_commit`)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            found[name.replace("-", "_")] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name.replace("-", "_")] = None
    found["commit"] = source_commit()
    return found


def source_commit() -> str | None:
    """``git describe --always --dirty`` of the checkout this package runs from (``None`` for an installed
    wheel, or where git is missing): which code made a results file."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def save_figure(path: str | os.PathLike, figure: Any, *, dpi: int = 120) -> Path:
    """Save a matplotlib figure (PNG), an HTML string or raw bytes to ``path`` atomically.

    A figure made through pyplot is not closed here: pyplot's state belongs to the caller."""
    path = Path(path)
    if isinstance(figure, bytes):
        return atomic_write_bytes(path, figure)
    if isinstance(figure, str):
        return atomic_write_text(path, figure)
    if hasattr(figure, "savefig"):
        import io

        buffer = io.BytesIO()
        figure.savefig(buffer, format=path.suffix.lstrip(".") or "png", dpi=dpi, bbox_inches="tight")
        return atomic_write_bytes(path, buffer.getvalue())
    raise TypeError(f"cannot save a {type(figure).__name__} as a figure; expected a matplotlib Figure, str or bytes")
