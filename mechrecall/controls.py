"""The claims' controls measured on untrained models (``mechrecall.claims``: a rule its control passes is vacuous).

A contrast between two scores is ≈ 0 at initialisation, with either sign; the claim about it is judged against its
at-init distribution (``mechrecall.claims.above_untrained``) over the run's seed and the next ``INIT_SEEDS - 1``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from mechrecall._tl import HookedTransformer

#: untrained seeds whose values set the bar of a contrast (``above_untrained``): the run's seed and the next four
INIT_SEEDS = 5


def untrained_controls(
    build: Callable[[int], HookedTransformer],
    measure: Callable[[HookedTransformer], Mapping[str, float]],
    seed: int,
    n_seeds: int = INIT_SEEDS,
) -> dict[str, Any]:
    """The claims' controls: ``measure`` on the untrained models ``build(s)`` of seeds ``seed .. seed + n_seeds - 1``.
    ``control``: the run's own seed (step 0 of the trained model); ``init_values``: each measurement over the seeds,
    the values a contrast must clear (``mechrecall.claims.above_untrained``)."""
    seeds = [seed + k for k in range(n_seeds)]
    with torch.no_grad():
        values = [dict(measure(build(s))) for s in seeds]
    return {"seeds": seeds, "control": values[0], "init_values": {k: [v[k] for v in values] for k in values[0]}}
