"""Every runnable experiment, in one place: its entry module and the paper package it runs.

``mechrecall <experiment> [options]`` (the console script) is ``python -m analyses.<experiment> [options]``::

    mechrecall --help                    # the experiments
    mechrecall noisy_icl --preset micro  # = python -m analyses.noisy_icl --preset micro
"""

from __future__ import annotations

import importlib
import runpy
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mechrecall.experiment import Experiment

#: experiment name -> paper package (under ``analyses/papers/``), in the report's order
EXPERIMENTS: dict[str, str] = {
    "noisy_icl": "distributional",
    "laser_pythia": "distributional",
    "contextual_recall": "contextual_recall",
    "ic_recall": "ic_recall",
    "induction_emergence": "induction_heads",
}


def experiments() -> list[str]:
    """The runnable experiments' names, in the report's order."""
    return list(EXPERIMENTS)


def experiment(name: str) -> Experiment:
    """The ``EXPERIMENT`` declared by ``analyses.<name>`` (imports only the protocol: no torch)."""
    if name not in EXPERIMENTS:
        raise KeyError(f"unknown experiment {name!r}; expected one of {', '.join(EXPERIMENTS)}")
    return importlib.import_module(f"analyses.{name}").EXPERIMENT


def main(argv: list[str] | None = None) -> int:
    """The ``mechrecall`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = (__doc__ or "") + "\nexperiments: " + ", ".join(EXPERIMENTS)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    if argv[0] not in (*EXPERIMENTS, "sweep"):  # mechrecall sweep = python -m analyses.sweep
        print(
            f"mechrecall: error: unknown experiment {argv[0]!r}; expected one of {', '.join(EXPERIMENTS)}",
            file=sys.stderr,
        )
        return 2
    sys.argv = [f"python -m analyses.{argv[0]}", *argv[1:]]
    try:
        runpy.run_module(f"analyses.{argv[0]}", run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
