"""Seeds: one derivation for every random stream (:func:`derive_seed`); several seeds of one run: which seeds
(``--seeds 0-4``), where each seed's results go, the claims over them.

A single seed writes ``OUT/<experiment>/results.json`` as always. Several seeds write each seed's run to
``OUT/seed<N>/<experiment>/results.json`` (a run of its own: resumable, its config checked) and the claims over
the seeds, each row with its mean, [min, max] and how many seeds passed (:func:`mechrecall.claims.over_seeds`),
to ``OUT/<experiment>/seeds.json``. A part that does not depend on the seed (an exact computation) runs once,
at seed 0, in ``OUT/seed0/``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

SEEDS_SCHEMA = "mechrecall.seeds/1"


def derive_seed(*parts: int) -> int:
    """A 63-bit seed derived from integers (e.g. ``(seed, step)``, ``(seed, stream)``) with no collisions between
    parts: the one way the library and the papers turn a run's seed into the seed of one random stream."""
    import numpy as np  # here, not at the top: the protocol imports this module and --help stays fast

    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, dtype=np.uint64)[0] >> 1)


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0-4"`` -> ``(0, 1, 2, 3, 4)``; ``"0,3,7"`` -> ``(0, 3, 7)``; ``"5"`` -> ``(5,)`` (the argparse type of
    ``--seeds``): distinct seeds >= 0, in the order given."""
    seeds: list[int] = []
    try:
        for item in (t.strip() for t in text.split(",")):
            first, dash, last = item.partition("-")
            lo, hi = int(first), int(last) if dash else int(first)
            if lo < 0 or hi < lo:
                raise ValueError
            seeds += [s for s in range(lo, hi + 1) if s not in seeds]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}; expected seeds >= 0 like 0-4 or 0,3,7") from None
    return tuple(seeds)


def seed_out(out: str | Path, seed: int, seeds: tuple[int, ...]) -> Path:
    """Where seed ``seed`` of a run over ``seeds`` writes: ``out`` itself for one seed, else ``out/seed<N>``."""
    return Path(out) if len(seeds) == 1 else Path(out) / f"seed{seed}"
