"""Emergence of induction heads (Musat et al.) — ``python -m analyses.induction_emergence --help``.

The paper's code lives in ``analyses/papers/induction_heads/``; this module is its table of contents.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from analyses.papers import induction_heads as paper
from mechrecall.experiment import Experiment, Option, Part, comma_ints
from mechrecall.lazy import lazy_imports

PAPER = "On the Emergence of Induction Heads for In-Context Learning (Musat et al.)"

EXPERIMENT = Experiment(
    name="induction_emergence",
    paper=PAPER,
    package=paper.__name__,
    preset_table=lambda: paper.presets.PRESETS,
    claims=lambda: paper.claims.CLAIMS,
    summary="How induction heads form: a 19-dim invariant subspace, 3 pseudo-parameters, t_ICL ∝ N².",
    parts=(
        Part(
            "demo",
            lambda ctx: paper.parts.part_demo(ctx),
            "train the 2-layer attention-only model on periodic random tokens; head roles, attention HTML",
            results=lambda: paper.results.DemoResults,
            reports=("quick", "smoke", "paper"),
            sizes=("demo_steps",),
            minutes={"smoke": 0.3},
        ),
        Part(
            "exact",
            lambda ctx: paper.parts.part_exact(ctx),
            "exact checks: closed form = matrix model, TL embedding = plain torch "
            "(forward, gradients), Theorem 1 orbit residual (float64)",
            results=lambda: paper.results.ExactResults,
            reports=("quick", "smoke", "paper"),
            sizes=(),
            minutes={"smoke": 0.05},
        ),
        Part(
            "ode",
            lambda ctx: paper.parts.part_ode(ctx),
            "Fig 5 from the 3-parameter gradient-flow ODE: order γ<β<α, t_ICL ∝ N²",
            results=lambda: paper.results.OdeResults,
            seeded=False,
            reports=("quick", "smoke", "paper"),
            sizes=("ode_",),
            minutes={"smoke": 0.05},
        ),
        Part(
            "disentangled",
            lambda ctx: paper.parts.part_disentangled(ctx),
            "Figs 3, 4 (15, 16): SGD on the disentangled transformer, all weights vs only α₃, β₂, γ₃",
            results=lambda: paper.results.DisentangledResults,
            reports=("smoke", "paper"),
            sizes=("disentangled.",),
            minutes={"smoke": 0.8},
        ),
        Part(
            "weights",
            lambda ctx: paper.parts.part_weights(ctx),
            "Figs 6-14: weight heatmaps after the paper's numbers of steps "
            "(smoke: the disentangled part's snapshots instead)",
            results=lambda: paper.results.WeightsResults,
            presets=("micro", "paper"),
            reports=("paper",),
            sizes=("weights_", "weight_figures"),
        ),
        Part(
            "standard",
            lambda ctx: paper.parts.part_standard(ctx),
            "Figs 2, 17: the §2 transformer on the token ICL task; head roles, interpretable QK/OV matrices",
            results=lambda: paper.results.StandardResults,
            reports=("quick", "smoke", "paper"),
            sizes=("standard.", "standard_n_pairs"),
            minutes={"smoke": 0.7},
        ),
        Part(
            "sgd_scaling",
            lambda ctx: paper.parts.part_sgd_scaling(ctx),
            "t_ICL vs N from full SGD training at 3 N, several seeds (smoke: <= 15 min on 2 cores)",
            results=lambda: paper.results.SgdScalingResults,
            reports=("paper",),
            sizes=("sgd_",),
        ),
        Part(
            "pythia",
            lambda ctx: paper.parts.part_pythia(ctx),
            "beyond the paper: head-role scores across Pythia checkpoints and "
            "when induction heads form (--model, --checkpoints)",
            results=lambda: paper.results.PythiaResults,
            pretrained=True,
            reports=("quick", "smoke", "paper"),
            sizes=(),
            minutes={"smoke": 0.1},  # seconds without --model; on a mini series about a minute
        ),
    ),
    default_parts=("demo", "exact", "ode", "disentangled", "weights", "standard", "pythia"),
    options=(
        Option(
            "--steps",
            type=int,
            default=None,
            low=1,
            field="demo_steps",
            help="training steps of the demo (default: the preset's)",
        ),
        Option(
            "--n-pairs",
            type=int,
            default=None,
            low=1,
            high=15,
            field="standard_n_pairs",
            help="item-label pairs of the token task (part standard; default 8; 2N+1 must fit in n_ctx = 32)",
        ),
        Option(
            "--d-model",
            type=int,
            default=None,
            low=1,
            field="standard.d_model",
            help="width D = D_H of the §2 model (part standard; App. E: 2048)",
        ),
        Option(
            "--batch",
            type=int,
            default=None,
            low=1,
            field="standard.batch_size",
            help="sequences per step (part standard; App. E: 512)",
        ),
        Option(
            "--standard-steps",
            type=int,
            default=None,
            low=1,
            field="standard.steps",
            help="AdamW steps (part standard; App. E: 300)",
        ),
        Option(
            "--lr",
            type=float,
            default=None,
            above=0,
            field="standard.lr",
            help="AdamW learning rate (part standard; App. E: 1e-3)",
        ),
        Option(
            "--ns",
            type=comma_ints,
            default=None,
            low=2,
            field="ode_ns",
            help="N values of the ODE (part ode), e.g. 2,4,8,16,32,64",
        ),
        Option(
            "--sgd-ns",
            type=comma_ints,
            default=None,
            low=2,
            field="sgd_ns",
            help="N values of full training (part sgd_scaling; N <= D/2)",
        ),
        Option(
            "--thresholds",
            default=None,
            help="emergence thresholds alpha3,beta2,gamma3, each in (0, 1) "
            "(default 0.5,0.5,0.5: Definition 1; App. F uses 0.1,0.1,0.5)",
        ),
        Option(
            "--train-only",
            default=None,
            help="pseudo-parameters of the restricted run (part disentangled; default alpha3,beta2,gamma3)",
        ),
        Option(
            "--model",
            default=None,
            help="part pythia: a hub name or a local folder with step{N}/ subfolders (default EleutherAI/pythia-70m)",
        ),
        Option(
            "--checkpoints",
            type=comma_ints,
            default=None,
            low=0,
            help="part pythia: training steps, e.g. 0,1000,143000 (default: every "
            "step of a local mirror, or 19 log-spaced Pythia steps)",
        ),
        Option(
            "--pythia-threshold",
            type=float,
            default=None,
            help="part pythia: score at which a head has emerged, in (0, 1) (default 0.4)",
        ),
    ),
    check=lambda ctx: paper.parts.check(ctx),
    epilog="sgd_scaling is not in the default parts: run it with --experiment sgd_scaling.",
    report_presets={"quick": "smoke", "smoke": "smoke", "paper": "paper"},
)

main = EXPERIMENT.main

# The paper's public API (notebooks/induction_emergence.ipynb uses it): the §2 model's run and task (Task A), its
# held-out scores, Figs 2 and 17; the disentangled transformer's SGD run (Figs 3-4: the 19 pseudo-parameters);
# Fig 5 from the 3-parameter gradient-flow ODE. Each name imported on first use, so that ``--help``
# and the report's planning stay free of torch.
if TYPE_CHECKING:
    from analyses.papers.induction_heads.data import make_token_icl_batch
    from analyses.papers.induction_heads.figures import (
        interpretable_qk_figure,
        loss_figure,
        ode_figures,
        trajectories_figure,
    )
    from analyses.papers.induction_heads.metrics import task_a_scores
    from analyses.papers.induction_heads.runs import (
        DisentangledRun,
        StandardRun,
        run_ode,
        train_disentangled,
        train_standard,
    )

__getattr__, __dir__ = lazy_imports(__name__)
__all__ = [
    "EXPERIMENT",
    "DisentangledRun",
    "StandardRun",
    "interpretable_qk_figure",
    "loss_figure",
    "main",
    "make_token_icl_batch",
    "ode_figures",
    "run_ode",
    "task_a_scores",
    "train_disentangled",
    "train_standard",
    "trajectories_figure",
]

if __name__ == "__main__":
    sys.exit(main())
