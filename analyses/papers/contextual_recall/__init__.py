"""Understanding Contextual Recall in Transformers: How Finetuning Enables In-Context Reasoning over Pretraining
Knowledge (Vasudeva, Deora, Bietti, Sharan & Thrampoulidis) — ``python -m analyses.contextual_recall``.

==============  ==================================================================================================
module          role
==============  ==================================================================================================
presets.py      typed presets (World-G / World-R sizes, the runs, the cascade worlds); no torch
data.py         the two worlds and their samplers (PT, ICL, ICL+Grm, PT_rel, ICL_rel), §3.4 prompt prefixes,
                the natural-language prompts of the pretrained extension
models.py       Model A, Model B / B′ (builder recipes) and the §4 construction (Prop. 1-4) in a HookedTransformer
runs.py         train (World-G, World-R) and measure; the construction part's measurements; seed spread
metrics.py      the four final-token metrics, task-vector clustering, steering, head roles, OV slices
theory.py       Theorem 2's two-step cascade and its closed forms (condition, α_1)
pretrained.py   the extension on Pythia / GPT-2: task-vector geometry and steering
results.py      the typed results of each part (what its claims read; no torch)
claims.py       the claims table (no torch)
figures.py      the paper's figures
parts.py        the experiment's parts (glue) and the option check
==============  ==================================================================================================
"""

from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # each module is imported on first use (``paper.parts``): an entry module's --help imports none
    from analyses.papers.contextual_recall import (
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
