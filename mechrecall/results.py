"""One results format for every experiment: ``results.json`` + figures in an output directory.

``results.json`` (schema ``mechrecall.results/1``)::

    {
      "schema": "mechrecall.results/1",
      "experiment": "noisy_icl",             # what produced it
      "created": "2026-11-21T14:00:00+00:00",
      "seed": 0,
      "config": {...},                       # the exact configuration that was run
      "versions": {"mechrecall": ..., "python": ..., "torch": ..., "transformer_lens": ..., ...},
      "results": {...},                      # the experiment's numbers (free-form, JSON)
      "claims": [                            # paper value beside ours, one row per claim
        {"claim": "p(ȳ | drop F2)", "ours": 0.97, "paper": 0.98, "where": "Fig. 3", "note": "..."}
      ],
      "figures": ["loss.png", "attention.html"]
    }

Everything is written atomically (temp file + rename); non-finite floats become ``null``.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

from mechrecall.io import atomic_write_bytes, atomic_write_json, atomic_write_text

RESULTS_SCHEMA = "mechrecall.results/1"
_PACKAGES = ("mechrecall", "torch", "transformer-lens", "transformers", "numpy", "safetensors", "circuitsvis")


@dataclass(frozen=True)
class Claim:
    """One reproduced number: ours beside the paper's (``paper=None`` where the paper gives none)."""

    claim: str
    ours: Any
    paper: Any = None
    where: str = ""
    note: str = ""


def versions() -> dict[str, str | None]:
    """Versions of Python and the packages that determine the numbers."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            found[name.replace("-", "_")] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name.replace("-", "_")] = None
    return found


def write_results(
    out_dir: str | os.PathLike,
    results: Mapping[str, Any],
    *,
    experiment: str,
    config: Mapping[str, Any],
    seed: int | None,
    claims: Sequence[Claim] = (),
    figures: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``results.json`` and the figures into ``out_dir``; returns the results file's path.

    Args:
        results: the experiment's numbers (nested dicts/lists; tensors and numpy values are converted).
        config: the exact configuration that produced them.
        figures: file name -> a matplotlib ``Figure`` (saved as PNG), an HTML string (``.html``) or bytes.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for name, figure in (figures or {}).items():
        save_figure(out / name, figure)
        names.append(name)
    payload = {
        "schema": RESULTS_SCHEMA,
        "experiment": experiment,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "seed": seed,
        "config": dict(config),
        "versions": versions(),
        "results": dict(results),
        "claims": [asdict(c) for c in claims],
        "figures": names,
    }
    return atomic_write_json(out / "results.json", payload)


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
