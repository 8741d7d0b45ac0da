"""The sizes of ``python -m analyses.induction_emergence``, one typed preset per ``--preset`` (no torch here).

``--steps`` overrides ``demo_steps``, ``--n-pairs`` ``standard_n_pairs``, ``--ns`` ``ode_ns`` and ``--sgd-ns``
``sgd_ns`` (the protocol applies them and notes the change on every claim of the run).
"""

from __future__ import annotations

from dataclasses import dataclass

from mechrecall.presets import Preset


@dataclass(frozen=True)
class DisentangledSizes:
    """App. C (Fig 3) / App. D (Fig 4): SGD from zero init, mean-reduced MSE on Gaussian data."""

    dim: int
    n_pairs: int
    batch_size: int
    steps: int
    log_every: int
    lr: float = 1.0


@dataclass(frozen=True)
class WeightFigure:
    """Figs 6-14 (App. C): the weights of one run after ``steps`` SGD steps, drawn as figures ``fig_nos``."""

    n_pairs: int
    steps: tuple[int, ...]
    fig_nos: tuple[int, ...]


@dataclass(frozen=True)
class StandardSizes:
    """App. E: AdamW lr 1e-3, weight decay 0.01 (the paper's D = 2048, B = 512, 300 steps)."""

    d_model: int
    batch_size: int
    steps: int
    eval_every: int
    lr: float = 1e-3


@dataclass(frozen=True)
class InductionPreset(Preset):
    """Every size of the experiment's parts at one preset."""

    demo_steps: int = 1000  # part demo: AdamW steps of the 2-layer model on periodic random tokens
    ode_ns: tuple[int, ...] = (2, 4, 8, 16, 32, 64)  # part ode: the N values of Fig 5
    ode_fit_ns: tuple[int, ...] = (16, 32, 64)  # ... and those the exponent is fitted on (the issue: {16, 32, 64})
    disentangled: DisentangledSizes = DisentangledSizes(dim=16, n_pairs=8, batch_size=512, steps=100, log_every=5)
    extra_trajectories: bool = False  # Figs 15 (D = 16, N = 32) and 16 (D = 32, N = 8)
    weights_dim: int = 16
    weights_batch_size: int = 512
    weight_figures: tuple[WeightFigure, ...] = (WeightFigure(4, (100, 200, 400), (6, 7, 8)),)
    standard: StandardSizes = StandardSizes(d_model=128, batch_size=256, steps=600, eval_every=50)
    standard_n_pairs: int = 8  # Task A's item-label pairs (2N+1 must fit in n_ctx = 32)
    sgd_dim: int = 32  # part sgd_scaling: orthonormal data (Task C), query = last pair, ‖y − z‖²
    sgd_ns: tuple[int, ...] = (4, 8, 16)
    sgd_seeds: int = 5
    sgd_batch_size: int = 64

    def scale_axes(self, part: str) -> dict[str, float]:
        """The sizes of ``part`` along the axes the paper states for it (the ``paper`` preset holds the paper's):
        App. E for ``standard`` (D, B, steps, N pairs), App. D for ``disentangled`` (D, N, B), App. C for ``weights``
        (D, B, largest N and step of Figs 6-14), App. F for ``sgd_scaling`` (D, B); the largest N of the Fig 5 ODE;
        ``exact``: the fixed setting the identities compute in (the same in every preset); ``demo``: its steps
        (an extension: the paper preset's are ours); ``pythia``: none (the sizes are the checkpoints')."""
        axes: dict[str, dict[str, float]] = {
            "demo": {"steps": self.demo_steps},
            "exact": {"closed_form_D": 16, "closed_form_N": 4, "orbit_D": 4, "orbit_N": 2},
            "ode": {"N_max": max(self.ode_ns)},
            "disentangled": {
                "D": self.disentangled.dim,
                "N": self.disentangled.n_pairs,
                "batch": self.disentangled.batch_size,
            },
            "weights": {
                "D": self.weights_dim,
                "batch": self.weights_batch_size,
                "N_max": max(f.n_pairs for f in self.weight_figures),
                "steps_max": max(max(f.steps) for f in self.weight_figures),
            },
            "standard": {
                "d_model": self.standard.d_model,
                "batch": self.standard.batch_size,
                "steps": self.standard.steps,
                "N": self.standard_n_pairs,
            },
            "sgd_scaling": {"D": self.sgd_dim, "batch": self.sgd_batch_size},
        }
        return axes.get(part, {})


#: Figs 15 (caption: D = 16, N = 32) and 16 (D = 32, N = 8): the paper preset only.
EXTRA_TRAJECTORIES = {"fig15": dict(dim=16, n_pairs=32), "fig16": dict(dim=32, n_pairs=8)}

PRESETS: dict[str, InductionPreset] = {
    "micro": InductionPreset(
        comparable=False,
        demo_steps=150,
        ode_ns=(2, 4, 8, 16),
        ode_fit_ns=(4, 8, 16),  # the three largest it has
        disentangled=DisentangledSizes(dim=8, n_pairs=4, batch_size=256, steps=60, log_every=3),  # past t_ICL
        weights_dim=8,
        weights_batch_size=64,
        weight_figures=(WeightFigure(2, (5, 10, 20), (6, 7, 8)),),
        standard=StandardSizes(d_model=32, batch_size=64, steps=30, eval_every=10),
        sgd_dim=8,
        sgd_ns=(2, 3, 4),
        sgd_seeds=1,
        sgd_batch_size=16,
    ),
    "smoke": InductionPreset(),
    "paper": InductionPreset(
        demo_steps=3000,
        ode_ns=(2, 4, 8, 16, 32, 64, 128),
        ode_fit_ns=(16, 32, 64, 128),
        disentangled=DisentangledSizes(dim=32, n_pairs=16, batch_size=256, steps=600, log_every=10),
        extra_trajectories=True,
        weight_figures=(
            WeightFigure(4, (100, 200, 400), (6, 7, 8)),
            WeightFigure(8, (200, 400, 800), (9, 10, 11)),
            WeightFigure(16, (250, 500, 1000), (12, 13, 14)),
        ),
        standard=StandardSizes(d_model=2048, batch_size=512, steps=300, eval_every=25),
        sgd_dim=256,  # App. F: D = 256, B = 64
        sgd_ns=(4, 8, 16, 32),
    ),
}
