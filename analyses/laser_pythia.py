"""LASER on Pythia / GPT-2 (Chen, Bruna & Bietti, §4) — ``python -m analyses.laser_pythia --help``.

The paper's code lives in ``analyses/papers/distributional/`` (the work on the checkpoints in ``pretrained.py``,
presets in ``presets.py:LASER_PYTHIA_PRESETS``, claims in ``claims.py:LASER_PYTHIA_CLAIMS``); this module is its
table of contents.
"""

from __future__ import annotations

import sys

from analyses.papers import distributional as paper
from mechrecall.experiment import Experiment, Option, Part

PAPER = (
    "Distributional Associations vs In-Context Reasoning: A Study of Feed-Forward and Attention Layers "
    "(Chen, Bruna & Bietti)"
)

EXPERIMENT = Experiment(
    name="laser_pythia",
    paper=PAPER,
    threads=None,  # a real model's forwards and SVDs: every core by default
    summary="Truncating one late MLP matrix of a pretrained model to a tiny rank (LASER) removes the generic ' the' "
    "that feed-forward layers predict from distributional statistics and lets the in-context answer win "
    "(§4.1, App. C, I). Every truncation edits raw (unprocessed) weights and is undone bit-exact.",
    parts=(
        Part(
            "factual",
            lambda ctx: paper.parts.part_laser(ctx),
            "'Madrid is located in' → ' Spain' on Pythia-1B (Table 1, Fig 5 right)",
            results=lambda: paper.results.FactualResults,
            seeded=False,
            reports=("quick", "smoke", "paper"),
            pretrained=True,
            minutes={"paper": 0.1},
        ),
        Part(
            "factual20",
            lambda ctx: paper.parts.part_laser(ctx),
            "the 20 factual prompts of Table 5 on Pythia-1B/1.4B/2.8B (Fig 16)",
            results=lambda: paper.results.Factual20Results,
            seeded=False,
            reports=("paper",),
            pretrained=True,
        ),
        Part(
            "ioi",
            lambda ctx: paper.parts.part_laser(ctx),
            "100 IOI prompts on Pythia-410M and 1B (Figs 5 left, 15)",
            results=lambda: paper.results.PythiaIOIResults,
            reports=("paper",),
            pretrained=True,
        ),
        Part(
            "prepositions",
            lambda ctx: paper.parts.part_laser(ctx),
            "rank of ' the' after prepositions across training (Fig 14)",
            results=lambda: paper.results.PrepositionsResults,
            seeded=False,
            reports=("paper",),
            pretrained=True,
        ),
        Part(
            "gpt2-ioi",
            lambda ctx: paper.parts.part_laser(ctx),
            "GPT-2 small IOI, layers 9-12 over a ρ grid (Fig 17)",
            results=lambda: paper.results.GPT2IOIResults,
            seeded=False,
            reports=("paper",),
            pretrained=True,
        ),
        Part(
            "sweep",
            lambda ctx: paper.parts.part_laser(ctx),
            "LASER search over late layers x {W_in, W_out} x ρ on --prompts",
            results=lambda: paper.results.SweepResults,
            seeded=False,
            reports=(),
            pretrained=True,
        ),
    ),
    package=paper.__name__,
    preset_table=lambda: paper.presets.LASER_PYTHIA_PRESETS,
    claims=lambda: paper.claims.LASER_PYTHIA_CLAIMS,
    default_parts=("factual",),
    presets=("paper",),
    default_preset="paper",
    preset_help={
        "paper": "the paper's models, prompts, layers and ρ (needs Pythia / GPT-2 weights: a hub cache or --model DIR)"
    },
    options=(
        Option(
            "--model",
            nargs="+",
            default=None,
            help="TL names (pythia-1b, gpt2, ...) or local Hugging Face "
            "directories; default: the paper's models for each part",
        ),
        Option(
            "--checkpoints",
            default="final",
            help="'final' (default), 'paper' (25 log-spaced Pythia steps) or steps like 0,1000,143000",
        ),
        Option(
            "--layer",
            type=int,
            default=None,
            low=1,
            help="paper layer, 1-indexed (TL block = layer - 1); default: the paper's for each part and model",
        ),
        Option(
            "--rho",
            type=float,
            default=None,
            low=0.0,
            high=1.0,
            help="kept rank fraction for LASER; default: the paper's",
        ),
        Option(
            "--matrix", default="mlp_in", choices=("mlp_in", "mlp_out"), help="matrix to truncate (default %(default)s)"
        ),
        Option("--prompts", default=None, help='JSON lines of {"prompt": ..., "answer": ...} for the sweep part'),
        Option(
            "--n-prompts",
            type=int,
            default=None,
            low=1,
            field="n_prompts",
            help="IOI prompts (default: the preset's, 100)",
        ),
        Option(
            "--prepend-bos",
            action="store_true",
            default=False,
            help="prepend BOS (default off, as the paper's Hugging Face code does)",
        ),
        Option("--dtype", default="float32", choices=("float32", "float64", "bfloat16", "float16")),
    ),
    check=lambda ctx: paper.pretrained.check(ctx),
    epilog="--seed is the seed of the IOI prompt draw (the ioi part; the others do not depend on it).",
    report_presets={"quick": "paper", "smoke": "paper", "paper": "paper"},
)

main = EXPERIMENT.main

if __name__ == "__main__":
    sys.exit(main())
