"""In-context factual recall through an MLP associative memory (Huang, Nichani, Lee & Ge) —
``python -m analyses.ic_recall --help``.

The paper's code lives in ``analyses/papers/ic_recall/``; this module is its table of contents.
"""

from __future__ import annotations

import sys

from mechrecall.experiment import Experiment, Option, Part, public_api

PAPER = "Fine-Tuning Dynamics of In-Context Factual Recall in Transformers (Huang, Nichani, Lee & Ge)"
PKG = "analyses.papers.ic_recall"

EXPERIMENT = Experiment(
    name="ic_recall",
    paper=PAPER,
    package=PKG,
    summary="A one-layer transformer with a frozen MLP associative memory learns in-context factual recall "
    "through a pairwise attention pattern, from a handful of fine-tuning samples.",
    parts=(
        Part(
            "exact",
            f"{PKG}.parts:part_exact",
            "the construction vs its closed-form logits, memory recall, ties",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.2},
        ),
        Part(
            "pattern",
            f"{PKG}.parts:part_pattern",
            "Fig 2: pairwise attention, first/second step vs ceilings",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.3},
        ),
        Part(
            "sample_complexity",
            f"{PKG}.parts:part_sample_complexity",
            "Fig 3: accuracy vs fine-tuning samples N",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 3.7},
        ),
        Part(
            "algorithm1",
            f"{PKG}.parts:part_algorithm1",
            "Algorithm 1 (perturbed GD): Stage-1 shape, accuracies",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.2},
        ),
        Part(
            "pretrained_mlp",
            f"{PKG}.parts:part_pretrained_mlp",
            "Fig 4 (both panels): pretrained MLP, full attention fine-tuning; cross terms cancelled",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 7.0},
        ),
        Part(
            "pretrained",
            f"{PKG}.parts:part_pretrained",
            "extension (not in the paper): pairwise-attention "
            "score of every head of a Pythia / GPT-2 model on few-shot fact prompts",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.1},
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
        Option("--n-ctx", type=int, default=None, low=1, help="context length of the model (default 2k+3)"),
        Option("--model", default="pythia-160m", help="pretrained part: hub name or local HF directory"),
    ),
    check=f"{PKG}.parts:check",
    # quick judges at smoke (comparable): ≈ 7.4 CPU-minutes on one core, measured with the minutes above
    report_presets={"quick": "smoke", "smoke": "smoke", "paper": "paper"},
)

main = EXPERIMENT.main

# The paper's public API (notebooks/ic_recall.ipynb uses it): the task and its exact Bayes ceiling, the
# TransformerLens model over the Lemma 3.1 memory and its fine-tuning loss (eq. (1)), the accuracies, the
# resumable sweep of fine-tuning cells (closed-form fast path), Fig 2 / Fig 3 and the n = 3 optimum a*(T).
# Each name imported on first use (``public_api``), so that this module and ``--help`` stay free of torch.
API = {
    "ICRecallSpec": f"{PKG}.data:ICRecallSpec",
    "ICRecallTask": f"{PKG}.data:ICRecallTask",
    "build_model": f"{PKG}.models:build_model",
    "initial_scores": f"{PKG}.models:initial_scores",
    "set_scores": f"{PKG}.models:set_scores",
    "cot_loss_fn": f"{PKG}.runs:cot_loss_fn",
    "Cell": f"{PKG}.presets:Cell",
    "run_cells": f"{PKG}.runs:run_cells",
    "accuracy": f"{PKG}.metrics:accuracy",
    "attention_heatmaps": f"{PKG}.figures:attention_heatmaps",
    "accuracy_vs_samples": f"{PKG}.figures:accuracy_vs_samples",
    "n3_pairwise_optimum": f"{PKG}.theory:n3_pairwise_optimum",
}
__getattr__ = public_api(__name__, API)
__all__ = ["EXPERIMENT", "main", *API]

if __name__ == "__main__":
    sys.exit(main())
