"""What each report preset runs, asked of the experiments themselves.

Each experiment declares, per report preset (``quick``, ``smoke``, ``paper``), its own preset
(``Experiment.report_presets``) and which of its parts the report runs (``Part.reports``) with their rough cost
(``Part.minutes``: the runner starts the longest part first). ``quick`` takes about 11 minutes on 2 CPU cores:
each paper's main figure at a laptop size, without the long sweeps; ``smoke`` is the more faithful laptop run;
``paper`` runs the papers' sizes (a GPU). The parts on pretrained models are in every plan: ``quick`` and
``smoke`` never download weights unless ``--model`` names some (the workers run with ``HF_HUB_OFFLINE=1``: a local
hub cache is used, else the claims say ``not run`` and why). An experiment that declares no preset for a report
preset runs its default parts at the fallback preset.
"""

from __future__ import annotations

from dataclasses import dataclass

REPORT_PRESETS = ("quick", "smoke", "paper")
FALLBACK = {"quick": "micro", "smoke": "smoke", "paper": "paper"}


@dataclass(frozen=True)
class Step:
    """One experiment of a plan: the experiment preset and the parts (``None``: the experiment's defaults)."""

    preset: str
    parts: tuple[str, ...] | None = None


def offline(report_preset: str, model: str | None) -> bool:
    """Whether the workers must not download weights: the laptop presets without ``--model``."""
    return model is None and report_preset != "paper"


def step(report_preset: str, experiment: str) -> Step:
    """The step of ``experiment`` in the plan ``report_preset``, from the experiment's own declarations."""
    from analyses.registry import experiment as lookup

    exp = lookup(experiment)
    if report_preset not in exp.report_presets:
        preset = FALLBACK[report_preset]
        return Step(preset, None)
    preset = exp.report_presets[report_preset]
    parts = tuple(
        p.name for p in exp.parts if report_preset in p.reports and (p.presets is None or preset in p.presets)
    )
    return Step(preset, parts)
