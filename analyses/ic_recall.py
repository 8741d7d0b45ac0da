"""In-context factual recall through an MLP associative memory (Huang, Nichani, Lee & Ge) —
``python -m analyses.ic_recall --help``.

The paper's code lives in ``analyses/papers/ic_recall/``; this module is its table of contents.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from analyses.papers import ic_recall as paper
from mechrecall.experiment import Experiment, Option, Part
from mechrecall.lazy import lazy_imports

PAPER = "Fine-Tuning Dynamics of In-Context Factual Recall in Transformers (Huang, Nichani, Lee & Ge)"

EXPERIMENT = Experiment(
    name="ic_recall",
    paper=PAPER,
    package=paper.__name__,
    preset_table=lambda: paper.presets.PRESETS,
    claims=lambda: paper.claims.CLAIMS,
    summary="A one-layer transformer with a frozen MLP associative memory learns in-context factual recall "
    "through a pairwise attention pattern, from a handful of fine-tuning samples.",
    parts=(
        Part(
            "exact",
            lambda ctx: paper.parts.part_exact(ctx),
            "the construction vs its closed-form logits, memory recall, ties",
            reports=("quick", "smoke", "paper"),
            sizes=("n", "m", "k"),
            minutes={"smoke": 0.2},
            results=lambda: paper.results.ExactResults,
        ),
        Part(
            "pattern",
            lambda ctx: paper.parts.part_pattern(ctx),
            "Fig 2: pairwise attention, first/second step vs ceilings",
            reports=("quick", "smoke", "paper"),
            sizes=("pattern",),
            minutes={"smoke": 0.3},
            results=lambda: paper.results.PatternResults,
            tasks=lambda ctx: paper.parts.cell_tasks(ctx),
        ),
        Part(
            "sample_complexity",
            lambda ctx: paper.parts.part_sample_complexity(ctx),
            "Fig 3: accuracy vs fine-tuning samples N",
            reports=("quick", "smoke", "paper"),
            sizes=("sample_complexity",),
            minutes={"smoke": 3.7},
            results=lambda: paper.results.SampleComplexityResults,
            tasks=lambda ctx: paper.parts.cell_tasks(ctx),
            trials=True,  # its own trial seeds (5 at smoke) × 36 cells: run once in a multi-seed report
        ),
        Part(
            "algorithm1",
            lambda ctx: paper.parts.part_algorithm1(ctx),
            "Algorithm 1 (perturbed GD): Stage-1 shape, accuracies",
            reports=("quick", "smoke", "paper"),
            sizes=("algorithm1",),
            minutes={"smoke": 0.2},
            results=lambda: paper.results.Algorithm1Results,
            tasks=lambda ctx: paper.parts.cell_tasks(ctx),
        ),
        Part(
            "pretrained_mlp",
            lambda ctx: paper.parts.part_pretrained_mlp(ctx),
            "Fig 4 (both panels): pretrained MLP, full attention fine-tuning; cross terms cancelled",
            reports=("quick", "smoke", "paper"),
            sizes=("pretrained_mlp", "pretrain_weight_decay"),
            minutes={"smoke": 7.0},
            results=lambda: paper.results.PretrainedMLPResults,
        ),
        Part(
            "pretrained",
            lambda ctx: paper.parts.part_pretrained(ctx),
            "extension (not in the paper): pairwise-attention "
            "score of every head of a Pythia / GPT-2 model on few-shot fact prompts",
            reports=("quick", "smoke", "paper"),
            sizes=("prompts",),
            minutes={"smoke": 0.1},
            results=lambda: paper.results.PretrainedResults,
            pretrained=True,
        ),
    ),
    options=(
        Option(
            "--workers", type=int, default=2, low=1, compare=False, help="worker processes for the sweeps (default 2)"
        ),
        Option("--n", type=int, default=None, low=1, field="n", help="pattern part, config B: subjects = answers"),
        Option("--m", type=int, default=None, low=1, field="m", help="pattern part, config B: relations"),
        Option("--k", type=int, default=None, low=1, field="k", help="pattern part, config B: in-context pairs"),
        Option(
            "--family",
            default=None,
            field="family",
            help="pattern part, config B: relation family (random, all_bijections, affine)",
        ),
        Option(
            "--temperature",
            type=float,
            default=None,
            above=0,
            field="temperature",
            help="pattern part, config B: decoding temperature T (> 0)",
        ),
        Option(
            "--samples",
            type=int,
            default=None,
            low=1,
            field="samples",
            help="pattern part, config B: fine-tuning samples N",
        ),
        Option(
            "--pretrain-weight-decay",
            type=float,
            default=None,
            low=0,
            field="pretrain_weight_decay",
            help="pretrained_mlp part (Fig 4): AdamW weight decay of the pretraining (default: the preset's, 0.1)",
        ),
        Option("--model", default="pythia-160m", help="pretrained part: hub name or local HF directory"),
    ),
    check=lambda ctx: paper.parts.check(ctx),
    # quick judges at smoke (comparable): ≈ 7.4 CPU-minutes on one core, measured with the minutes above
    report_presets={"quick": "smoke", "smoke": "smoke", "paper": "paper"},
)

main = EXPERIMENT.main

# The paper's public API (notebooks/ic_recall.ipynb uses it): the task and its exact Bayes ceiling, the
# TransformerLens model over the Lemma 3.1 memory and its fine-tuning loss (eq. (1)), the accuracies, the
# resumable sweep of fine-tuning cells (closed-form fast path), Fig 2 / Fig 3 and the n = 3 optimum a*(T).
# Each name imported on first use (mechrecall.lazy), so that this module and ``--help`` stay free of torch.
if TYPE_CHECKING:
    from analyses.papers.ic_recall.data import ICRecallSpec, ICRecallTask
    from analyses.papers.ic_recall.figures import accuracy_vs_samples, attention_heatmaps
    from analyses.papers.ic_recall.metrics import accuracy
    from analyses.papers.ic_recall.models import build_model, initial_scores, set_scores
    from analyses.papers.ic_recall.presets import Cell
    from analyses.papers.ic_recall.runs import cot_loss_fn, run_cells
    from analyses.papers.ic_recall.theory import n3_pairwise_optimum

__getattr__, __dir__ = lazy_imports(__name__)
__all__ = [
    "EXPERIMENT",
    "Cell",
    "ICRecallSpec",
    "ICRecallTask",
    "accuracy",
    "accuracy_vs_samples",
    "attention_heatmaps",
    "build_model",
    "cot_loss_fn",
    "initial_scores",
    "main",
    "n3_pairwise_optimum",
    "run_cells",
    "set_scores",
]

if __name__ == "__main__":
    sys.exit(main())
