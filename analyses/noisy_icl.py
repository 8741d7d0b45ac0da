"""Noisy in-context recall (Chen, Bruna & Bietti) — ``python -m analyses.noisy_icl --help``.

The paper's code lives in ``analyses/papers/distributional/`` (its parts in ``parts.py``, presets in
``presets.py:NOISY_ICL_PRESETS``, claims in ``claims.py:NOISY_ICL_CLAIMS``); this module is its table of contents.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from analyses.papers import distributional as paper
from mechrecall.experiment import Experiment, Option, Part
from mechrecall.lazy import lazy_imports

#: The preset fields that size the two-layer model of the main, ff_variants and multi_trigger parts (the ledger).
MODEL_SIZES = ("d_model", "seq_len", "batch", "d_mlp", "steps", "n_test")

PAPER = (
    "Distributional Associations vs In-Context Reasoning: A Study of Feed-Forward and Attention Layers "
    "(Chen, Bruna & Bietti)"
)

EXPERIMENT = Experiment(
    name="noisy_icl",
    paper=PAPER,
    summary="Feed-forward layers store the distributional noise association (trigger → τ); attention does the "
    "in-context recall (trigger → ȳ). Dropping or truncating the last FF removes the noise (§3, App. B, G, J).",
    parts=(
        Part(
            "main",
            lambda ctx: paper.parts.part_main(ctx),
            "two-layer MLP/MLP model: truncate / drop F₂, FF margin, attention (Figs 3, 4, 7, 8, 9, 10)",
            results=lambda: paper.results.MainResults,
            reports=("quick", "smoke", "paper"),
            sizes=MODEL_SIZES,
            minutes={"laptop": 8},
        ),
        Part(
            "ff_variants",
            lambda ctx: paper.parts.part_ff_variants(ctx),
            "MLP/linear, linear/MLP and no-FF models (Figs 11, 12, 13)",
            results=lambda: paper.results.FFVariantsResults,
            reports=("smoke", "paper"),
            sizes=MODEL_SIZES,
            minutes={"laptop": 20},  # three models, each about main's size
        ),
        Part(
            "finetune",
            lambda ctx: paper.parts.part_finetune(ctx),
            "clean pre-training, then noisy fine-tuning (Figs 4 right, 8 right)",
            results=lambda: paper.results.FinetuneResults,
            reports=("paper",),
            sizes=(*MODEL_SIZES, "finetune_steps"),
        ),
        Part(
            "multi_trigger",
            lambda ctx: paper.parts.part_multi_trigger(ctx),
            "five triggers (Fig 9 right)",
            results=lambda: paper.results.MultiTriggerResults,
            reports=("paper",),
            sizes=MODEL_SIZES,
        ),
        Part(
            "ioi",
            lambda ctx: paper.parts.part_ioi(ctx),
            "synthetic IOI with deeper models: accuracy, p(τ) and the IO/S margin, full vs the last MLP dropped or "
            "truncated (Figs 19, 20)",
            results=lambda: paper.results.IOIResults,
            presets=("micro", "laptop", "paper"),
            reports=("smoke", "paper"),
            sizes=("ioi", "ioi_layers", "adam_layers"),
            minutes={"laptop": 6},
        ),
        Part(
            "theory",
            lambda ctx: paper.parts.part_theory(ctx),
            "Theorem 1, App. B.3, Theorem 3, linear associative memory (Fig 18)",
            results=lambda: paper.results.TheoryResults,
            seeded=False,
            reports=("quick", "smoke", "paper"),
            sizes=("theory_full",),
            minutes={"laptop": 0.05, "smoke": 0.05},
        ),
    ),
    package=paper.__name__,
    preset_table=lambda: paper.presets.NOISY_ICL_PRESETS,
    claims=lambda: paper.claims.NOISY_ICL_CLAIMS,
    default_parts=("main",),
    presets=("micro", "smoke", "laptop", "paper"),
    preset_help={
        "micro": "d = T = 32, 25 steps: seconds; exercises every code path (not comparable to the paper)",
        "smoke": "d = T = 64, batch 64, 600 steps: a few minutes on a laptop CPU (p(ȳ | drop F₂) ≈ 0.7)",
        "laptop": "d = 192, T = 64, batch 64, d_mlp = 768, 1,000 steps: ≈ 5-9 minutes on one CPU core "
        "(the paper's headline p(ȳ | drop F₂) = 0.98; ours over seeds 0-4 in analyses/papers/distributional/"
        "README.md); ioi: Adam, L = 3 at d = 64, T = 16, batch 256, 1,000 steps (Fig 20)",
        "paper": "d = T = 256, batch 512, d_mlp = 1024, 2,000 steps (a GPU)",
    },
    options=(
        Option(
            "--data-preset",
            default="official_code",
            choices=("official_code", "paper_text"),
            help="official_code: τ = id 2, loss on repeated-trigger positions (the authors' code); paper_text: "
            "τ = appended id 65, loss on the last position (the paper's text)",
        ),
        Option(
            "--alpha",
            type=float,
            default=0.5,
            low=0.0,
            high=1.0,
            help="noise probability α for training (default %(default)s)",
        ),
        Option("--steps", type=int, default=None, low=1, field="steps", help="training steps (default: the preset's)"),
        Option(
            "--d-model", type=int, default=None, low=1, field="d_model", help="residual width d (default: the preset's)"
        ),
        Option(
            "--seq-len",
            type=int,
            default=None,
            low=1,
            field="seq_len",
            help="sequence length T (default: the preset's)",
        ),
        Option(
            "--batch", type=int, default=None, low=1, field="batch", help="training batch size (default: the preset's)"
        ),
        Option(
            "--d-mlp", type=int, default=None, low=1, field="d_mlp", help="MLP hidden width (default: the preset's)"
        ),
        Option(
            "--lr",
            type=float,
            default=0.03,
            above=0,
            help="SGD learning rate (default %(default)s; Adam runs use 3e-3)",
        ),
    ),
    check=lambda ctx: paper.parts.check(ctx),
    report_presets={"quick": "laptop", "smoke": "laptop", "paper": "paper"},
)

main = EXPERIMENT.main

# The paper's public API (notebooks/noisy_icl.ipynb uses it), each name imported from the paper package on first
# use (``from analyses.noisy_icl import train_run``; mechrecall.lazy), so that ``--help`` still imports no torch:
# the presets and one run's configuration, training (or resuming) the two-layer model of Eq. 1, its untrained
# twin (the controls), the clean-test metrics p(ȳ), p(τ) (Fig 3), the layer-2 attention on ``[q, ȳ]`` vs
# ``[q, τ]`` (Fig 4), a metric's curve over training and the figures of Figs 3 and 4.
if TYPE_CHECKING:
    from analyses.papers.distributional.figures import fig_attention, fig_truncation
    from analyses.papers.distributional.metrics import recall_metrics, trigger_successor_attention
    from analyses.papers.distributional.presets import NOISY_ICL_PRESETS
    from analyses.papers.distributional.runs import RunConfig, series, train_run, untrained_model

__getattr__, __dir__ = lazy_imports(__name__)
__all__ = [
    "EXPERIMENT",
    "NOISY_ICL_PRESETS",
    "RunConfig",
    "fig_attention",
    "fig_truncation",
    "main",
    "recall_metrics",
    "series",
    "train_run",
    "trigger_successor_attention",
    "untrained_model",
]

if __name__ == "__main__":
    sys.exit(main())
