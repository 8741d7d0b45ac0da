"""On the Emergence of Induction Heads for In-Context Learning (Musat et al.).

Runnable: ``python -m analyses.induction_emergence`` (parts demo, exact, ode, disentangled, weights, standard,
sgd_scaling, pythia).

============  ===================================================================================================
module        role
============  ===================================================================================================
presets       ``InductionPreset`` per ``--preset`` (micro, smoke, paper): the sizes of every part (no torch)
data          Tasks A (tokens, §2), B (Gaussian, eq. 5) and C (orthonormal, Assumptions 7-8), batched
models        the §2 transformer, the disentangled transformer embedded in a HookedTransformer, its plain-torch
              reference, the demo's 2-layer model
runs          training (``train_disentangled``, ``train_standard``) and one ``run_<part>`` per part (results dicts)
metrics       emergence times (Definitions 1-3), the 19 pseudo-parameters and Theorem 1's orbit check, the exact
              checks, the circuits' scores and Fig 2's contrasts
pretrained    the Pythia extension: head-role scores across checkpoints and when the top heads emerge
results       one typed results model per part (``DemoResults``, ..., ``PythiaResults``): what the claims read (no
              torch)
claims        ``CLAIMS``: the declarative claims table (no torch)
figures       Figs 2-17, the demo's and the Pythia figures
parts         the experiment's parts (glue: context -> runs -> ``PartResult``) and the option checks
theory        App. B: the 3-parameter closed-form loss and gradient, the gradient-flow ODE (``solve_ivp``),
              derived large-N constants
============  ===================================================================================================
"""

from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # each module is imported on first use (``paper.parts``): an entry module's --help imports none
    from analyses.papers.induction_heads import (
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
