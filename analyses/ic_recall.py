"""In-context factual recall through an MLP associative memory (Huang, Nichani, Lee & Ge) —
``python -m analyses.ic_recall --help``.

The paper's code lives in ``analyses/papers/ic_recall/``; this module is its table of contents.
"""

from __future__ import annotations

import sys

from mechrecall.experiment import Experiment, Option, Part, lazy_exports

PAPER = "Fine-Tuning Dynamics of In-Context Factual Recall in Transformers (Huang, Nichani, Lee & Ge)"
PKG = "analyses.papers.ic_recall"

# The paper's public API (notebooks/ic_recall.ipynb uses it): the task and its exact Bayes ceiling, the
# TransformerLens model over the Lemma 3.1 memory and its fine-tuning loss (eq. (1)), the accuracies, the
# resumable sweep of fine-tuning cells (closed-form fast path), Fig 2 / Fig 3 and the n = 3 optimum a*(T).
# Imported on first use (PEP 562: ``lazy_exports``), so that this module and ``--help`` stay free of torch.
_API = {
    "ICRecallSpec": f"{PKG}.data",  # (n, m, k, relation family, seed) of a task
    "ICRecallTask": f"{PKG}.data",  # relation table, sampling (Definition 2.1), population, bayes_ceiling()
    "build_model": f"{PKG}.models",  # the one-layer TL model with the constructed memory; mode "partial" (§2.3)
    "initial_scores": f"{PKG}.models",  # θ0, ω0 ~ N(0, std²), the seeded start that breaks the pairs' symmetry
    "set_scores": f"{PKG}.models",  # write θ, ω into the position-position block of W^KQ
    "cot_loss_fn": f"{PKG}.runs",  # eq. (1): L1 (relation at EoS) + L2 (answer, r* appended), both over T
    "Cell": f"{PKG}.presets",  # one fine-tuning run of a sweep (sizes, N, seed, optimiser settings)
    "run_cells": f"{PKG}.runs",  # run the cells not finished in a folder (one JSON each; a rerun skips them)
    "accuracy": f"{PKG}.metrics",  # first / second step, end to end, and their ceilings on a test set
    "attention_heatmaps": f"{PKG}.figures",  # Fig 2 / Fig 4: attention from EoS and from r*
    "accuracy_vs_samples": f"{PKG}.figures",  # Fig 3: first-step accuracy against N, each n's ceiling dashed
    "n3_pairwise_optimum": f"{PKG}.theory",  # a*(T) of Theorem 4.2's optimum (a, a, 1/2 - a, 1/2 - a, 0, 0), n = 3
}

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
            "Fig 4: pretrained MLP, full attention fine-tuning",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 3.0},
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
        Option("--n-ctx", type=int, default=None, low=1, help="context length of the model (default 2k+3)"),
        Option("--model", default="pythia-160m", help="pretrained part: hub name or local HF directory"),
    ),
    check=f"{PKG}.parts:check",
    # quick judges at smoke (comparable): ≈ 7.4 CPU-minutes on one core, measured with the minutes above
    report_presets={"quick": "smoke", "smoke": "smoke", "paper": "paper"},
)

main = EXPERIMENT.main

__all__ = ["EXPERIMENT", "main", *_API]
__getattr__, __dir__ = lazy_exports(__name__, _API)

if __name__ == "__main__":
    sys.exit(main())
