"""The claims' controls measured on untrained models (``mechrecall.claims``: a rule its control passes is vacuous).

A contrast between two scores is ≈ 0 at initialisation, with either sign; the claim about it is judged against its
at-init distribution (``mechrecall.claims.above_untrained``) over ``INIT_SEEDS`` untrained models of seeds *other* than
the run's own (the next ``INIT_SEEDS``), while the run's own untrained model stays the claim's control: a bar that
its control helped to set could never be cleared by the control, so the vacuity check could never fire.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from mechrecall._tl import HookedTransformer

#: untrained seeds whose values set the bar of a contrast (``above_untrained``): the five after the run's seed
INIT_SEEDS = 5


def untrained_controls(
    build: Callable[[int], HookedTransformer],
    measure: Callable[[HookedTransformer], Mapping[str, float]],
    seed: int,
    n_seeds: int = INIT_SEEDS,
) -> dict[str, Any]:
    """The claims' controls: ``measure`` on the untrained models ``build(s)``.

    ``control``: the run's own seed (step 0 of the trained model); ``init_values``: each measurement on the untrained
    models of seeds ``seed + 1 .. seed + n_seeds`` (``seeds``), the values a contrast must clear
    (``mechrecall.claims.above_untrained``) — never the control's own seed, so the control can fail the bar."""
    seeds = [seed + k for k in range(1, n_seeds + 1)]
    with torch.no_grad():
        own = dict(measure(build(seed)))
        values = [dict(measure(build(s))) for s in seeds]
    return {"seeds": seeds, "control": own, "init_values": {k: [v[k] for v in values] for k in own}}
