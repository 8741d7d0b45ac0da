"""Emergence of induction heads (Musat et al.) — ``python -m analyses.induction_emergence --help``.

The paper's code lives in ``analyses/papers/induction_heads/``; this module is its table of contents.
"""

from __future__ import annotations

import sys

from mechrecall.experiment import Experiment, Option, Part, comma_ints, public_api

PAPER = "On the Emergence of Induction Heads for In-Context Learning (Musat et al.)"
PKG = "analyses.papers.induction_heads"
X = f"{PKG}.parts"

EXPERIMENT = Experiment(
    name="induction_emergence",
    paper=PAPER,
    package=PKG,
    summary="How induction heads form: a 19-dim invariant subspace, 3 pseudo-parameters, t_ICL ∝ N².",
    parts=(
        Part(
            "demo",
            f"{X}:part_demo",
            "train the 2-layer attention-only model on periodic random tokens; head roles, attention HTML",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.3},
        ),
        Part(
            "exact",
            f"{X}:part_exact",
            "exact checks: closed form = matrix model, TL embedding = plain torch "
            "(forward, gradients), Theorem 1 orbit residual (float64)",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.05},
        ),
        Part(
            "ode",
            f"{X}:part_ode",
            "Fig 5 from the 3-parameter gradient-flow ODE: order γ<β<α, t_ICL ∝ N²",
            seeded=False,
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.05},
        ),
        Part(
            "disentangled",
            f"{X}:part_disentangled",
            "Figs 3, 4 (15, 16): SGD on the disentangled transformer, all weights vs only α₃, β₂, γ₃",
            reports=("smoke", "paper"),
            minutes={"smoke": 0.8},
        ),
        Part(
            "weights",
            f"{X}:part_weights",
            "Figs 6-14: weight heatmaps after the paper's numbers of steps "
            "(smoke: the disentangled part's snapshots instead)",
            presets=("micro", "paper"),
            reports=("paper",),
        ),
        Part(
            "standard",
            f"{X}:part_standard",
            "Figs 2, 17: the §2 transformer on the token ICL task; head roles, interpretable QK/OV matrices",
            reports=("quick", "smoke", "paper"),
            minutes={"smoke": 0.7},
        ),
        Part(
            "sgd_scaling",
            f"{X}:part_sgd_scaling",
            "t_ICL vs N from full SGD training at 3 N, several seeds (smoke: <= 15 min on 2 cores)",
            reports=("paper",),
        ),
        Part(
            "pythia",
            f"{X}:part_pythia",
            "beyond the paper: head-role scores across Pythia checkpoints and "
            "when induction heads form (--model, --checkpoints)",
            reports=("quick", "smoke", "paper"),
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
    check=f"{X}:check",
    epilog="sgd_scaling is not in the default parts: run it with --experiment sgd_scaling.",
    report_presets={"quick": "smoke", "smoke": "smoke", "paper": "paper"},
)

main = EXPERIMENT.main

# The paper's public API (notebooks/induction_emergence.ipynb uses it): the §2 model's run and task (Task A), its
# held-out scores, Figs 2 and 17; the disentangled transformer's SGD run (Figs 3-4: the 19 pseudo-parameters);
# Fig 5 from the 3-parameter gradient-flow ODE. Each name imported on first use, so that ``--help``
# and the report's planning stay free of torch.
API = {
    "StandardRun": f"{PKG}.runs:StandardRun",
    "train_standard": f"{PKG}.runs:train_standard",
    "DisentangledRun": f"{PKG}.runs:DisentangledRun",
    "train_disentangled": f"{PKG}.runs:train_disentangled",
    "run_ode": f"{PKG}.runs:run_ode",
    "make_token_icl_batch": f"{PKG}.data:make_token_icl_batch",
    "task_a_scores": f"{PKG}.metrics:task_a_scores",
    "interpretable_qk_figure": f"{PKG}.figures:interpretable_qk_figure",
    "loss_figure": f"{PKG}.figures:loss_figure",
    "trajectories_figure": f"{PKG}.figures:trajectories_figure",
    "ode_figures": f"{PKG}.figures:ode_figures",
}
__getattr__ = public_api(__name__, API)
__all__ = ["EXPERIMENT", "main", *API]

if __name__ == "__main__":
    sys.exit(main())
