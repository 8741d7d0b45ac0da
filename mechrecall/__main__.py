"""Command line: ``mechrecall <experiment> [options]`` runs ``python -m analyses.<experiment> [options]``.

mechrecall --help                    # the experiments found
mechrecall noisy_icl --preset micro  # = python -m analyses.noisy_icl --preset micro
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path


def experiments() -> list[str]:
    """The runnable experiments: modules beside ``analyses/__init__.py`` that declare an ``EXPERIMENT``."""
    spec = importlib.util.find_spec("analyses")
    if spec is None or not spec.submodule_search_locations:
        return []
    folder = Path(next(iter(spec.submodule_search_locations)))
    return sorted(p.stem for p in folder.glob("*.py") if "EXPERIMENT = Experiment(" in p.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    names = experiments()
    usage = __doc__ + "\nexperiments: " + ", ".join(names)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    if argv[0] not in names:
        print(f"mechrecall: error: unknown experiment {argv[0]!r}; expected one of {', '.join(names)}", file=sys.stderr)
        return 2
    sys.argv = [f"python -m analyses.{argv[0]}", *argv[1:]]
    try:
        runpy.run_module(f"analyses.{argv[0]}", run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
