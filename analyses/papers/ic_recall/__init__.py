"""Fine-Tuning Dynamics of In-Context Factual Recall in Transformers (Ruomin Huang, Eshaan Nichani, Jason D. Lee,
Rong Ge): ``python -m analyses.ic_recall``. See README.md.

============== =====================================================================================================
module         holds
============== =====================================================================================================
presets.py     typed presets (``ICRecallPreset``, ``PRESETS``), the sweep cell ``Cell``, trial seeds under --seed
data.py        the task (vocabulary, relation families, sampling, population, ceilings, sequence types) and the
               extension's few-shot fact prompts (``facts.json``)
models.py      the one-layer TransformerLens model (builder recipe, ``ICRecallWeights``), the Lemma 3.1 memory,
               the closed-form logits (eq. (16), App. D) and the fast path ``AnalyticICRecall``
runs.py        fine-tuning (Adam, Algorithm 1), pretraining, the resumable process-pool sweep and each part's run
metrics.py     accuracies and ceilings, the construction's exact checks, attention-pattern readings
pretrained.py  the extension: every head of a Pythia / GPT-2 model scored on few-shot fact prompts
results.py     the typed results of each part (``ExactResults``, ``PatternResults``, ...): what the claims read
claims.py      ``CLAIMS``: the declarative claims table, each row a function of its part's typed results
figures.py     Fig 2 / Fig 4 heatmaps, Fig 3 accuracy vs N, the extension's per-head heatmap
parts.py       the experiment's parts: glue from the context to runs and figures; the option check
theory.py      a*(T) of the n = 3 optimum, the Stage-1 saddle distance, N*(n) and its fits
============== =====================================================================================================
"""

from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # each module is imported on first use (``paper.parts``): an entry module's --help imports none
    from analyses.papers.ic_recall import (
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
