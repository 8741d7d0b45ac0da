"""Contextual recall (Vasudeva et al.): pretraining stores facts, finetuning unlocks in-context recall —
``python -m analyses.contextual_recall --help``.

The paper's code lives in ``analyses/papers/contextual_recall/``; this module is its table of contents.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from analyses.papers import contextual_recall as paper
from mechrecall.experiment import Experiment, Option, Part
from mechrecall.lazy import lazy_imports

PAPER = (
    "Understanding Contextual Recall in Transformers: How Finetuning Enables In-Context Reasoning over "
    "Pretraining Knowledge (Vasudeva, Deora, Bietti, Sharan & Thrampoulidis)"
)

EXPERIMENT = Experiment(
    name="contextual_recall",
    paper=PAPER,
    package=paper.__name__,
    preset_table=lambda: paper.presets.PRESETS,
    claims=lambda: paper.claims.CLAIMS,
    summary="Synthetic worlds where pretraining teaches factual recall and finetuning on a subset of subjects "
    "unlocks contextual (in-context) recall for held-out subjects; the attention-only construction.",
    parts=(
        Part(
            "construction",
            lambda ctx: paper.parts.part_construction(ctx),
            "Prop. 1-4 weights in a HookedTransformer; Theorem 2's "
            "two-step cascade (exact population gradients where small)",
            reports=("quick", "smoke", "paper"),
            sizes=("construction_samples", "cascade"),
            minutes={"smoke": 1.0, "micro": 0.6},  # measured 28-58 s (smoke), ~35 s (micro)
            results=lambda: paper.results.ConstructionResults,
        ),
        Part(
            "world_r",
            lambda ctx: paper.parts.part_world_r(ctx),
            "Model B on World-R: PT_rel, finetune on ICL_rel, head roles, OV slices (Figs. 9-12, 19-21)",
            reports=("quick", "smoke", "paper"),
            sizes=("r.", "pt_steps.r", "ft_steps.r", "n_demos.r", "n_finetune"),
            minutes={"smoke": 1.5},
            results=lambda: paper.results.WorldRResults,
        ),
        Part(
            "world_r_absolute",
            lambda ctx: paper.parts.part_world_r_absolute(ctx),
            "Model B′ (absolute positions) (Figs. 22-26)",
            reports=("paper",),
            sizes=("r.", "pt_steps.r", "ft_steps.r", "n_demos.r", "n_finetune"),
            results=lambda: paper.results.WorldRResults,
        ),
        Part(
            "world_g",
            lambda ctx: paper.parts.part_world_g(ctx),
            "Model A on World-G: PT, finetune on ICL and ICL+Grm, task vectors, steering (Figs. 2-4, 8, 15-18)",
            reports=("smoke", "paper"),
            sizes=("g.", "pt_steps.g", "ft_steps.g", "n_demos.g", "n_finetune", "g_subjects", "g_grammar_len"),
            minutes={"smoke": 4.5},  # 3.8 before the second ICL+Grm finetuning (attribute targets): + 400 FT steps
            results=lambda: paper.results.WorldGResults,
        ),
        Part(
            "pretrained",
            lambda ctx: paper.parts.part_pretrained(ctx),
            "extension (not in the paper): task-vector geometry "
            "and steering on a Pythia / GPT-2 checkpoint with few-shot landmark/person prompts",
            reports=("quick", "smoke", "paper"),
            sizes=("pretrained_",),
            minutes={"smoke": 0.1},
            results=lambda: paper.results.PretrainedResults,
            pretrained=True,
        ),
    ),
    options=(
        Option(
            "--pt-steps",
            type=int,
            default=None,
            low=1,
            field="pt_steps",
            help="pretraining steps (default: the preset's)",
        ),
        Option(
            "--ft-steps",
            type=int,
            default=None,
            low=1,
            field="ft_steps",
            help="finetuning steps (default: the preset's)",
        ),
        Option(
            "--n-finetune",
            type=int,
            default=None,
            low=1,
            field="n_finetune",
            help="finetuning subjects (default: the preset's, 50%%)",
        ),
        Option(
            "--n-demos",
            type=int,
            default=None,
            low=1,
            field="n_demos",
            help="in-context demonstrations N_ft (default: the preset's)",
        ),
        Option(
            "--div",
            type=float,
            default=None,
            field="div",
            help="World-G target Div (row-averaged l1; default: the preset's)",
        ),
        Option(
            "--div-method",
            default=None,
            choices=("interpolate", "greedy_pool"),
            field="div_method",
            help="how World-G hits --div (default: the preset's, interpolate)",
        ),
        Option(
            "--ft-loss",
            default=None,
            choices=("all", "attributes", "last"),
            field="ft_loss",
            help="World-G: loss positions of every finetuning mix: all (the preset's; grammar targets included), "
            "attributes (attribute targets only) or last (the final answer); the world_g part also finetunes "
            "ICL+Grm at the attribute-target reading",
        ),
        Option(
            "--n-subjects",
            type=int,
            default=None,
            low=2,
            field="g_subjects",
            help="World-G subjects M (default: the preset's; the first attribute keeps one value per subject)",
        ),
        Option(
            "--grammar-len",
            type=int,
            default=None,
            low=1,
            field="g_grammar_len",
            help="World-G grammar tokens per subsequence S (default: the preset's)",
        ),
        Option("--n-ctx", type=int, default=None, low=1, help="fail unless every sequence fits this context length"),
        Option(
            "--model", default="pythia-160m", help="pretrained part: hub name or local HF dir (default %(default)s)"
        ),
        Option("--checkpoint", type=int, default=None, low=0, help="pretrained part: Pythia training step"),
    ),
    check=lambda ctx: paper.parts.check(ctx),
    report_presets={"quick": "smoke", "smoke": "smoke", "paper": "paper"},
)

main = EXPERIMENT.main

# The paper's public API (notebooks/contextual_recall.ipynb uses it), each imported on first use (mechrecall.lazy) so
# that this module and ``--help`` stay free of torch:
#   PRESETS           the micro / smoke / paper presets (``PRESETS["smoke"].run_g(seed)``: the World-G run of §3)
#   train_g           pretrain Model A on World-G PT, then finetune copies on ICL / ICL+Grm (Figs. 2-4); resumable
#   finetune_g        one more finetuning of the pretrained model (the shuffled-subject control; loss= a reading)
#   chance_exact      the exact-match chance of a uniform guess within the right attribute type
#   run_construction  §4: Prop. 1-4's weights scored with their controls, and Theorem 2's two-step cascade
#   metric_curves     Fig. 1's four final-token metrics vs training step (Figs. 2-4, 15)
#   cascade_figure    ICL_rel accuracy after the cascade's steps 0 / 1 / 2
if TYPE_CHECKING:
    from analyses.papers.contextual_recall.figures import cascade_figure, metric_curves
    from analyses.papers.contextual_recall.presets import PRESETS
    from analyses.papers.contextual_recall.runs import chance_exact, finetune_g, run_construction, train_g

__getattr__, __dir__ = lazy_imports(__name__)
__all__ = [
    "EXPERIMENT",
    "PRESETS",
    "cascade_figure",
    "chance_exact",
    "finetune_g",
    "main",
    "metric_curves",
    "run_construction",
    "train_g",
]

if __name__ == "__main__":
    sys.exit(main())
