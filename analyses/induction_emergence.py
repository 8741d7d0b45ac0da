"""Emergence of induction heads (Musat et al.) — ``python -m analyses.induction_emergence --help``.

The paper's code lives in ``analyses/papers/induction_heads/``; this module is its table of contents.
"""

from __future__ import annotations

import sys

from mechrecall.experiment import Experiment, Option, Part

PAPER = "On the Emergence of Induction Heads for In-Context Learning (Musat et al.)"
PKG = "analyses.papers.induction_heads"

EXPERIMENT = Experiment(
    name="induction_emergence",
    paper=PAPER,
    summary="A 2-layer attention-only transformer forms a previous-token head and an induction head.",
    parts=(
        Part("demo", f"{PKG}.demo:part_demo", "train the 2-layer attention-only model on periodic random tokens; "
             "head roles, attention HTML"),
    ),
    options=(Option("--steps", type=int, default=None, help="training steps of the demo (default: the preset's)"),),
    check=f"{PKG}.demo:check",
)

main = EXPERIMENT.main

if __name__ == "__main__":
    sys.exit(main())
