"""Distributional Associations vs In-Context Reasoning: A Study of Feed-Forward and Attention Layers
(Chen, Bruna & Bietti). Two experiments: ``python -m analyses.noisy_icl`` and ``python -m analyses.laser_pythia``.

==================  ================================================================================================
module              what it holds
==================  ================================================================================================
``presets``         typed presets of both experiments (``NOISY_ICL_PRESETS``, ``LASER_PYTHIA_PRESETS``); no torch
``data``            the noisy-ICL / synthetic-IOI / LAM generators, tiny-Shakespeare statistics, the §4 prompt tables
``models``          the two-layer model of Eq. 1 with its FF variants, the theory model of Eq. 2
``runs``            train and measure the noisy-ICL models: functions returning results dicts
``metrics``         p(ȳ), p(τ), loss under interventions, FF margin, attention on [q, ȳ] vs [q, τ], QK matching
``pretrained``      LASER on Pythia / GPT-2 checkpoints (§4): model access, one runner per part, the claims' numbers
``results``         the typed results of every part (``MainResults``, ..., ``SweepResults``) its claims read; no torch
``claims``          the claims of both experiments, as data (``NOISY_ICL_CLAIMS``, ``LASER_PYTHIA_CLAIMS``); no torch
``figures``         the figures of both experiments
``parts``           the parts of both experiments (glue: context → runs / pretrained / theory → results, figures)
``theory``          Theorem 1, App. B.3, Theorem 3 (Eq. 43 via solve_ivp), the linear associative memory of Fig 18
==================  ================================================================================================
"""

from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # each module is imported on first use (``paper.parts``): an entry module's --help imports none
    from analyses.papers.distributional import (
        claims,
        data,
        figures,
        metrics,
        models,
        parts,
        presets,
        pretrained,
        results,
        runs,
        theory,
    )

__getattr__, __dir__ = lazy_imports(__name__)
__all__ = [
    "claims",
    "data",
    "figures",
    "metrics",
    "models",
    "parts",
    "presets",
    "pretrained",
    "results",
    "runs",
    "theory",
]
