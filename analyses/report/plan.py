"""What each report preset runs: per experiment, the experiment's own preset and the parts.

``quick`` (the default) fits in about 15 minutes on 2 CPU cores: each paper's main figure at a laptop size
(the qualitative effect; noisy_icl's headline at its ``laptop`` preset), without the long sweeps (noisy_icl's
ff_variants / finetune, induction_emergence's disentangled / sgd_scaling, contextual_recall's world_g).
``smoke`` is the more faithful laptop run; ``paper`` runs the papers' sizes (a GPU). The parts on pretrained
models (LASER, Pythia checkpoints) are in every plan: ``quick`` and ``smoke`` never download weights unless
``--model`` names some (the workers run with ``HF_HUB_OFFLINE=1``: a local hub cache is used, else the claims say
``not run`` and why). An experiment that is not in a plan (one merged later) runs its default parts at the plan's
fallback preset.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One experiment of a plan: the experiment preset and the parts (``None``: the experiment's defaults)."""

    preset: str
    parts: tuple[str, ...] | None = None
    minutes: float = 1.0  # rough time on one core: the runner starts the longest first


REPORT_PRESETS = ("quick", "smoke", "paper")

# fmt: off
# experiment                           its preset and parts (minutes: a rough cost, for the order of the runs)
PLANS: dict[str, dict[str, Step]] = {
    "quick": {
        "noisy_icl":           Step("laptop", ("main", "theory"), minutes=8),
        "induction_emergence": Step("smoke", ("demo", "exact", "ode", "standard", "pythia"), minutes=4),
        "contextual_recall":   Step("smoke", ("construction", "world_r", "pretrained"), minutes=3),
        "ic_recall":           Step("micro", None),
        "laser_pythia":        Step("paper", ("factual",), minutes=0.1),
    },
    "smoke": {
        "noisy_icl":           Step("laptop", ("main", "ff_variants", "finetune", "multi_trigger", "ioi", "theory")),
        "induction_emergence": Step("smoke", ("demo", "exact", "ode", "disentangled", "standard", "pythia")),
        "contextual_recall":   Step("smoke", ("construction", "world_r", "world_g", "pretrained")),
        "ic_recall":           Step("smoke", None),
        "laser_pythia":        Step("paper", ("factual",)),
    },
    "paper": {
        "noisy_icl":           Step("paper", ("main", "ff_variants", "finetune", "multi_trigger", "ioi", "theory")),
        "induction_emergence": Step("paper", ("demo", "exact", "ode", "disentangled", "weights", "standard",
                                              "sgd_scaling", "pythia")),
        "contextual_recall":   Step("paper", ("construction", "world_r", "world_r_absolute", "world_g",
                                              "pretrained")),
        "ic_recall":           Step("paper", None),
        "laser_pythia":        Step("paper", ("factual", "factual20", "ioi", "prepositions", "gpt2-ioi")),
    },
}
# fmt: on
FALLBACK = {"quick": "micro", "smoke": "smoke", "paper": "paper"}


def offline(report_preset: str, model: str | None) -> bool:
    """Whether the workers must not download weights: the laptop presets without ``--model``."""
    return model is None and report_preset != "paper"


def step(report_preset: str, experiment: str) -> Step:
    """The step of ``experiment`` in the plan ``report_preset`` (the fallback for one the plan does not name)."""
    return PLANS[report_preset].get(experiment) or Step(FALLBACK[report_preset], None)
