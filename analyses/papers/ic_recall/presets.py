"""Typed presets of ``python -m analyses.ic_recall`` (no torch): every size a part reads, per preset.

* ``pattern``: the Fig 2 configs (§8-style smoke configs: A, n = 3 with all six bijections, Table 1; B, the
  paper's Fig 2 left sizes; C, 3-ICL at the paper preset) and their seeds. ``n, m, k, family, temperature,
  samples`` are config B's sizes: ``--n/--m/--k/--family/--temperature/--samples`` override them (config B is
  then rebuilt from them, config C dropped).
* ``sample_complexity``: Fig 3 (affine relations in partial mode, full-W^KQ ablation, the paper preset's
  random-relation sweep ``fig3``).
* ``algorithm1``: Algorithm 1's cells and seeds; ``pretrained_mlp``: Fig 4, both panels (the right one's m is 512
  at the paper preset, 64 at smoke), and ``pretrain_weight_decay`` its pretraining's; ``fast_path_steps``: Adam steps of
  the fast-path-vs-TL training check (``exact``); ``prompts``: few-shot prompts of the extension (``pretrained``).

A seed list is the trial seeds at ``--seed 0``; another ``--seed`` shifts them (:func:`trial_seeds`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from mechrecall.presets import Preset


@dataclass(frozen=True)
class Cell:
    """One independent fine-tuning run of the sweeps (task sizes, N, seed, mode, optimiser settings)."""

    n: int
    m: int
    N: int
    seed: int
    k: int = 2
    family: str = "random"
    mode: str = "partial"
    T: float = 0.05
    lr: float = 1e-3
    steps: int = 3000
    optimizer: str = "adam"
    test_size: int = 20_000
    perturb_std: float = 1e-3

    @property
    def key(self) -> str:
        return (
            f"{self.mode}-{self.optimizer}-{self.family}-n{self.n}-m{self.m}-k{self.k}-T{self.T:g}-lr{self.lr:g}"
            f"-s{self.steps}-N{self.N}-seed{self.seed}"
        )


def trial_seeds(seeds: tuple[int, ...], seed: int) -> tuple[int, ...]:
    """The trial seeds of a sweep under ``--seed``: ``seeds`` at 0 (today's numbers), shifted by 1000·seed."""
    return tuple(1000 * seed + s for s in seeds)


@dataclass(frozen=True)
class Fig3:
    """The paper's Fig 3 sweep: random relations, ``m`` fixed, every n × N × seed."""

    n: tuple[int, ...] = (8, 16, 32, 64)
    m: int = 64
    N: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    seeds: tuple[int, ...] = tuple(range(10))
    lr: float = 1e-3
    steps: int = 1000


@dataclass(frozen=True)
class SampleComplexity:
    """Fig 3 on identifiable (affine) relations; ``full_*``: the full-W^KQ ablation; ``fig3``: paper preset only."""

    affine_n: tuple[int, ...] = (5, 7, 11, 13)
    N: tuple[int, ...] = (1, 2, 4, 8, 16)
    seeds: tuple[int, ...] = tuple(range(5))
    lr: float = 1e-2
    steps: int = 1000
    full_n: tuple[int, ...] = (5, 7, 11)
    full_N: tuple[int, ...] = (2, 8, 32, 128)
    full_seeds: tuple[int, ...] = (0, 1)
    full_steps: int = 1000
    fig3: Fig3 | None = None
    triplet_growth_target: float = 20.0  # n·m must grow this much across affine_n (micro: 1)


@dataclass(frozen=True)
class PretrainedMLP:
    """One panel of Fig 4: pretrain the whole transformer (AdamW, ``weight_decay``), freeze the MLP, fine-tune the
    whole W^KQ (Adam 1e-3, temperature ``T``) on ``N`` prompts with ``k`` in-context pairs. ``cancel_cross_terms``:
    also fine-tune the same pretrained model with its MLP's subject×subject cross terms cancelled (the ablation);
    ``right``: Fig 4's right panel (3-ICL), run beside this one (the left)."""

    n: int = 8
    m: int = 64
    family: str = "random"
    pretrain_steps: int = 1500
    N: int = 256
    steps: int = 3000
    seeds: tuple[int, ...] = (0,)
    k: int = 2
    T: float = 0.05
    weight_decay: float = 0.1
    cancel_cross_terms: bool = True
    right: PretrainedMLP | None = None


# Fig 4 right as the paper states it: 3 in-context examples, n = 8, m = 512, T = 0.01 (paper preset); the smoke
# preset shrinks m to 64 (pretraining on 6nm = 24,576 pairs at d_model 1,067 is ~1 TFLOP a step: a GPU's job).
FIG4_RIGHT = PretrainedMLP(m=512, k=3, T=0.01, pretrain_steps=2000, cancel_cross_terms=False)


CONFIG_A = Cell(n=3, m=6, N=4, seed=0, family="all_bijections", T=0.05, lr=1e-2, steps=1000, test_size=50_000)
CONFIG_B = Cell(n=8, m=64, N=8, seed=0, family="random", T=0.05, lr=1e-2, steps=1000, test_size=50_000)
CONFIG_C = Cell(n=8, m=512, k=3, N=8, seed=0, family="random", T=0.01, lr=1e-3, steps=5000, test_size=20_000)
ALGORITHM1_N7 = Cell(n=7, m=21, N=8, seed=0, family="affine", optimizer="pgd", steps=2000)


@dataclass(frozen=True)
class ICRecallPreset(Preset):
    """The sizes of every part (defaults: smoke's)."""

    pattern: tuple[tuple[str, Cell], ...] = (("A", CONFIG_A), ("B", CONFIG_B))
    pattern_seeds: tuple[int, ...] = tuple(range(5))
    n: int = CONFIG_B.n
    m: int = CONFIG_B.m
    k: int = CONFIG_B.k
    family: str = CONFIG_B.family
    temperature: float = CONFIG_B.T
    samples: int = CONFIG_B.N
    exact_affine: bool = True  # the exact part's third task (n = 7, m = 30, k = 3, affine)
    fast_path_steps: int = 200
    sample_complexity: SampleComplexity = SampleComplexity()
    algorithm1: tuple[Cell, ...] = (ALGORITHM1_N7,)
    algorithm1_seeds: tuple[int, ...] = tuple(range(5))
    pretrained_mlp: PretrainedMLP = PretrainedMLP(right=replace(FIG4_RIGHT, m=64, pretrain_steps=1500))
    pretrain_weight_decay: float = 0.1  # Fig 4's pretraining AdamW weight decay (both panels; --pretrain-weight-decay)
    prompts: int = 120

    def scale_axes(self, part: str) -> dict[str, float]:
        """The sizes of ``part`` that the paper states (beside the ``paper`` preset's; ``mechrecall.claims.at_scale``):
        Fig 2 and Fig 4 give |S| = |A| = n = 8, |R| = m = 64 (2-ICL) and 512 (3-ICL); Fig 3 gives n ∈ {8, …, 64},
        m = 64, N up to 128 and 10 seeds. ``exact`` checks the construction (Lemma 3.1, eq. (16), App. D) on its
        tasks, the same in every comparable preset; ``algorithm1`` runs Theorem 4.4's procedure, whose text states
        no sizes (the paper preset's largest n and seed count are ours)."""
        return dict(_SCALE_AXES[part](self)) if part in _SCALE_AXES else {}


def _pattern_axes(p: ICRecallPreset) -> dict[str, float]:
    """Fig 2: config B's n, m (the left panel) and the 3-ICL panel's m (config C; 0 where the preset lacks it)."""
    c = dict(p.pattern).get("C")
    return {"n": p.n, "m": p.m, "m_3icl": c.m if c else 0, "seeds": len(p.pattern_seeds)}


def _sample_complexity_axes(p: ICRecallPreset) -> dict[str, float]:
    """Fig 3: the random-relation sweep's largest n, largest N and seed count (0 where the preset lacks it), beside
    the affine cells' largest n and seed count."""
    cfg, f = p.sample_complexity, p.sample_complexity.fig3
    return {
        "affine_n_max": max(cfg.affine_n),
        "seeds": len(cfg.seeds),
        "fig3_n_max": max(f.n) if f else 0,
        "fig3_N_max": max(f.N) if f else 0,
        "fig3_seeds": len(f.seeds) if f else 0,
    }


def _pretrained_mlp_axes(p: ICRecallPreset) -> dict[str, float]:
    """Fig 4: n and m of the left panel, m of the right (3-ICL) panel (0 where the preset lacks it), seeds."""
    cfg = p.pretrained_mlp
    return {"n": cfg.n, "m": cfg.m, "m_right": cfg.right.m if cfg.right else 0, "seeds": len(cfg.seeds)}


_SCALE_AXES: dict[str, Callable[[ICRecallPreset], dict[str, float]]] = {
    "exact": lambda p: {"tasks": 3 if p.exact_affine else 2},
    "pattern": _pattern_axes,
    "sample_complexity": _sample_complexity_axes,
    "algorithm1": lambda p: {"n_max": max(c.n for c in p.algorithm1), "seeds": len(p.algorithm1_seeds)},
    "pretrained_mlp": _pretrained_mlp_axes,
    "pretrained": lambda p: {"prompts": p.prompts},
}


SMOKE = ICRecallPreset()

PRESETS: dict[str, ICRecallPreset] = {
    "micro": ICRecallPreset(
        comparable=False,
        pattern=(("A", replace(CONFIG_A, steps=300)), ("B", replace(CONFIG_B, steps=100, test_size=4096))),
        pattern_seeds=(0, 1),
        exact_affine=False,
        fast_path_steps=20,
        sample_complexity=SampleComplexity(
            affine_n=(5, 7),
            N=(1, 8),
            seeds=(0,),
            steps=200,
            full_n=(5, 7),
            full_N=(4, 16),
            full_seeds=(0,),
            full_steps=60,
            triplet_growth_target=1.0,
        ),
        algorithm1=(replace(ALGORITHM1_N7, steps=100),),
        algorithm1_seeds=(0,),
        pretrained_mlp=PretrainedMLP(
            n=3,
            m=6,
            family="all_bijections",
            pretrain_steps=150,
            N=16,
            steps=100,
            right=PretrainedMLP(n=4, m=8, k=3, T=0.01, pretrain_steps=150, N=16, steps=100, cancel_cross_terms=False),
        ),
        prompts=24,
    ),
    "smoke": SMOKE,
    "paper": replace(  # smoke's runs, plus 3-ICL, more seeds, the Fig 3 sweep, a second Algorithm 1 size
        SMOKE,
        pattern=(("A", CONFIG_A), ("B", replace(CONFIG_B, lr=1e-3, steps=3000)), ("C", CONFIG_C)),
        pattern_seeds=tuple(range(10)),
        fast_path_steps=500,
        sample_complexity=replace(SMOKE.sample_complexity, fig3=Fig3()),
        algorithm1=(ALGORITHM1_N7, Cell(n=13, m=78, N=8, seed=0, family="affine", optimizer="pgd", steps=2000)),
        algorithm1_seeds=tuple(range(10)),
        pretrained_mlp=PretrainedMLP(pretrain_steps=2000, seeds=(0, 1), right=replace(FIG4_RIGHT, seeds=(0, 1))),
        prompts=300,
    ),
}


PATTERN_OPTIONS = ("n", "m", "k", "family", "temperature", "samples")  # the preset fields of config B


def pattern_configs(params: ICRecallPreset, custom: bool) -> dict[str, Cell]:
    """The preset's Fig 2 configs; ``custom`` (an option among ``--n/--m/--k/--family/--temperature/--samples``
    given): config B rebuilt from ``params``' sizes (on the preset's B, or smoke's at micro), config C dropped."""
    configs = dict(params.pattern)
    if not custom:
        return configs
    base = configs.get("B", CONFIG_B)
    b = replace(base, n=params.n, m=params.m, k=params.k, family=params.family, T=params.temperature, N=params.samples)
    return {"A": configs["A"], "B": b}
