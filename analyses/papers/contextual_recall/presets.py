"""Typed presets (micro / smoke / paper) of the two worlds, their training runs and the construction part.

``paper`` follows the paper's App. B.1: World-G M=256, L=8, M_1=256, M_2..8=32, S=80, N_tr=5, p_G=0.2,
Div≈0.5, Model A d=256, AdamW lr 1e-4, wd 1e-3, batch 64, 20k PT / 2k FT iterations, N_ft=16, 128 FT
subjects; World-R (§4) M=256, M_ℓ=32, S=10, N_tr=5, N_ft=5, Model B 3 heads d_h=256, AdamW lr 1e-3, cosine
PT schedule, 2k PT / 1k FT (the validation runs of Figs. 9-12). ``smoke`` is a CPU-sized reduction that keeps
the mechanisms (sizes in the package README); ``micro`` only exercises the code paths (tests).
G (grammar tokens) and the Dirichlet α are not given in the paper: G=16, α=1.

No torch here: ``--help`` and the claims table read this module.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mechrecall.presets import Preset

DIV_NORMS = ("row_mean_l1", "entry_l1", "induced_l1")
DIV_METHODS = ("interpolate", "greedy_pool")


class WorldConfigError(ValueError):
    """An inconsistent world / task configuration (raised before any training, naming the value)."""


@dataclass(frozen=True)
class WorldConfig:
    """Sizes of one world (§2 notation). ``relation_tokens=False``: World-G; ``True``: World-R.

    ``target_div=None`` keeps the raw Dirichlet draws (no Div control). ``dirichlet_alpha`` and
    ``n_grammar`` are not given in the paper (α = 1 and G = 16 by default).
    """

    n_subjects: int = 256  # M
    n_types: int = 8  # L
    n_values: tuple[int, ...] = (256,) + (32,) * 7  # M_1..M_L
    n_grammar: int = 16  # G
    grammar_len: int = 80  # S
    n_subseq: int = 5  # N_tr
    p_grammar_only: float = 0.2  # p_G (World-G only)
    dirichlet_alpha: float = 1.0
    target_div: float | None = 0.5
    div_method: str = "interpolate"
    div_norm: str = "row_mean_l1"
    relation_tokens: bool = False
    pool_size: int = 2000  # greedy_pool only
    pool_alpha: float | None = None  # greedy_pool only; default: dirichlet_alpha
    seed: int = 0

    # ---- token layout
    @property
    def value_offsets(self) -> tuple[int, ...]:
        out, off = [], self.n_subjects
        for m in self.n_values:
            out.append(off)
            off += m
        return tuple(out)

    @property
    def grammar_offset(self) -> int:
        return self.n_subjects + sum(self.n_values)

    @property
    def sep(self) -> int:
        return self.grammar_offset + self.n_grammar

    @property
    def relation_offset(self) -> int:
        return self.sep + 1

    @property
    def d_vocab(self) -> int:
        """V = M + Σ M_ℓ + G + 1 (+ L relation tokens in World-R)."""
        return self.sep + 1 + (self.n_types if self.relation_tokens else 0)

    @property
    def pt_len(self) -> int:
        """Full PT / PT_rel sequence length T = (S+3) N_tr - 1 (World-R: the input, which stops at the last
        ``[sep]``, has this length; the full training sequence one more)."""
        return (self.grammar_len + 3) * self.n_subseq - 1

    def validate(self) -> "WorldConfig":
        """Raise :class:`WorldConfigError` naming the first inconsistent value."""
        for name in ("n_subjects", "n_types", "n_grammar", "n_subseq", "grammar_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise WorldConfigError(f"{name}={v!r}; expected an integer >= 1")
        if len(self.n_values) != self.n_types:
            raise WorldConfigError(
                f"n_values has {len(self.n_values)} entries; expected one per type (n_types={self.n_types})"
            )
        for ell, m in enumerate(self.n_values):
            if not isinstance(m, int) or not 1 <= m <= self.n_subjects:
                raise WorldConfigError(
                    f"n_values[{ell}]={m!r}; expected 1 <= M_ℓ <= n_subjects={self.n_subjects} "
                    "(every value is held by at least one subject)"
                )
        if not 0.0 <= self.p_grammar_only < 1.0:
            raise WorldConfigError(f"p_grammar_only={self.p_grammar_only!r}; expected 0 <= p_G < 1")
        if not self.dirichlet_alpha > 0:
            raise WorldConfigError(f"dirichlet_alpha={self.dirichlet_alpha!r}; expected > 0")
        if self.div_method not in DIV_METHODS:
            raise WorldConfigError(f"div_method={self.div_method!r}; expected one of {DIV_METHODS}")
        if self.div_norm not in DIV_NORMS:
            raise WorldConfigError(f"div_norm={self.div_norm!r}; expected one of {DIV_NORMS}")
        if self.target_div is not None:
            top = {"row_mean_l1": 2.0, "entry_l1": 2.0 * self.n_grammar, "induced_l1": 2.0}[self.div_norm]
            if not 0 < self.target_div < top:
                raise WorldConfigError(
                    f"target_div={self.target_div!r} is unreachable under div_norm="
                    f"{self.div_norm!r}; expected 0 < Div < {top:g}"
                )
        if self.relation_tokens and self.grammar_len < 1:
            raise WorldConfigError(f"grammar_len={self.grammar_len}; World-R needs S >= 1 (the relation slot)")
        return self


@dataclass(frozen=True)
class RunG:
    """World-G + Model A: pretraining, then finetuning on ICL or ICL+Grm (§3)."""

    world: WorldConfig
    d_model: int = 256
    batch: int = 64
    pt_steps: int = 20000
    pt_lr: float = 1e-4
    ft_steps: int = 2000
    ft_lr: float = 1e-4
    weight_decay: float = 1e-3
    n_demos: int = 16  # N = N_ft
    n_finetune: int = 128
    grm_len: tuple[int, int] = (1, 5)  # S_ft ~ U{1..5} for ICL+Grm
    ft_loss: str = "all"  # loss positions of every finetuning mix (data.LOSS_READINGS; "all": the literal reading)
    n_eval: int = 1024
    pt_eval_every: int = 250
    ft_eval_every: int = 50
    checkpoint_every: int = 1000
    K: int = 50  # prompts per type for the representation analysis (Fig. 8)
    max_t: int = 16


@dataclass(frozen=True)
class RunR:
    """World-R + Model B / B′: pretraining on PT_rel, finetuning on ICL_rel with last-token loss (§4)."""

    world: WorldConfig
    d_head: int = 256
    n_heads: int = 3
    batch: int = 64
    pt_steps: int = 2000
    pt_lr: float = 1e-3
    ft_steps: int = 1000
    ft_lr: float = 1e-3
    weight_decay: float = 1e-3
    n_demos: int = 5
    n_finetune: int = 128
    n_eval: int = 512
    pt_eval_every: int = 250
    ft_eval_every: int = 50
    checkpoint_every: int = 500
    #: loss positions of pretraining on PT_rel (``data.LOSS_READINGS``): ``all`` every next token, grammar and
    #: relation targets included (the literal reading of §4's "next-token prediction objective"); ``attributes`` only
    #: the attribute after each ``[sep]`` (the one target Props. 1 and 3 are about)
    pt_loss: str = "all"


@dataclass(frozen=True)
class PerRun:
    """A size that differs between the World-G and the World-R runs (one option sets both)."""

    g: int
    r: int

    def __str__(self) -> str:
        return f"World-G {self.g}, World-R {self.r}"


def per_run(value: int | PerRun, world: str) -> int:
    """``value`` for the ``world`` (``"g"`` or ``"r"``) run: an option's single number, or the preset's own."""
    return value if isinstance(value, int) else (value.g if world == "g" else value.r)


@dataclass(frozen=True)
class CascadeWorld:
    """One World-R of Theorem 2's cascade (§4 notation)."""

    name: str
    M: int
    L: int
    U: int  # U_L = M_ℓ
    G: int
    S: int
    N_tr: int
    M_ft: int
    N_ft: int

    def world(self, seed: int) -> WorldConfig:
        return WorldConfig(
            n_subjects=self.M,
            n_types=self.L,
            n_values=(self.U,) * self.L,
            n_grammar=self.G,
            grammar_len=self.S,
            n_subseq=self.N_tr,
            p_grammar_only=0.0,
            target_div=None,
            relation_tokens=True,
            seed=seed,
        )


#: Theorem 2's condition U_L (U_L + N_ft) / M_ft < N_ft holds (and the population is small enough to enumerate)
CASCADE_HOLDS = CascadeWorld("condition holds (M=16, L=2, U_L=2, M_ft=8, N_ft=3)", 16, 2, 2, 8, 10, 3, 8, 3)
#: the paper's §4 scale (M=256, U_L=32, M_ft=128, N_ft=5); S=16 so that T_ICL=17 <= S+2 as the theorem assumes
CASCADE_PAPER = CascadeWorld("paper §4 scale (M=256, L=8, U_L=32, M_ft=128, N_ft=5)", 256, 8, 32, 16, 16, 5, 128, 5)
#: the micro preset (tests) replaces the §4-scale world by a smaller one where the condition also fails
CASCADE_MICRO_FAIL = CascadeWorld("condition fails (M=64, L=4, U_L=8, M_ft=16, N_ft=3)", 64, 4, 8, 8, 10, 3, 16, 3)


@dataclass(frozen=True)
class ContextualRecallPreset(Preset):
    """One preset: the World-G and World-R runs, the sizes the options override (``pt_steps`` ... ``div_method``;
    a :class:`PerRun` where the two runs differ), the construction part's sample sizes and the pretrained part's."""

    g: RunG = RunG(WorldConfig())
    r: RunR = RunR(WorldConfig(relation_tokens=True))
    pt_steps: int | PerRun = 0
    ft_steps: int | PerRun = 0
    n_finetune: int | PerRun = 0
    n_demos: int | PerRun = 0
    div: float | None = None  # World-G target Div
    div_method: str = "interpolate"
    ft_loss: str = "all"  # World-G: loss positions of every finetuning mix (all / attributes / last)
    g_subjects: int | None = None  # World-G subjects M (None: the world's)
    g_grammar_len: int | None = None  # World-G grammar length S (None: the world's)
    construction_samples: int = 1024  # PT_rel / ICL_rel sequences the Prop. 1-4 weights are scored on
    cascade: tuple[CascadeWorld, CascadeWorld] = (CASCADE_HOLDS, CASCADE_PAPER)  # (condition holds, paper scale)
    cascade_mc: int = 4096  # Monte-Carlo draws of the cascade's population where it is too large to enumerate
    cascade_eval: int = 1024
    pretrained_K: int = 20  # prompts per relation
    pretrained_max_t: int = 10  # demonstrations

    def run_g(self, seed: int) -> RunG:
        """The World-G run with the options applied, its world drawn from ``seed``."""
        world = resized_world(self.g.world, self.g_subjects, self.g_grammar_len)
        world = replace(world, target_div=self.div, div_method=self.div_method, seed=seed)
        n_finetune = per_run(self.n_finetune, "g")
        if n_finetune == self.g.n_finetune and world.n_subjects != self.g.world.n_subjects:  # keep its share of M
            n_finetune = max(1, round(n_finetune * world.n_subjects / self.g.world.n_subjects))
        return replace(
            self.g,
            world=world,
            pt_steps=per_run(self.pt_steps, "g"),
            ft_steps=per_run(self.ft_steps, "g"),
            n_finetune=n_finetune,
            n_demos=per_run(self.n_demos, "g"),
            ft_loss=self.ft_loss,
        )

    def scale_axes(self, part: str) -> dict[str, float]:
        """The sizes of ``part`` along the axes the paper states (App. B.1 / B.2), beside the ``paper`` preset's.

        ``world_g`` (§3, App. B.1): subjects M, grammar length S, attribute types L, subsequences N_tr, width d,
        PT / FT iterations, batch, demonstrations N_ft, FT subjects. ``world_r`` / ``world_r_absolute`` (§4, App. B.2):
        M, S, L, N_tr, head width d_h, heads, PT / FT iterations, batch, N_ft, FT subjects. ``construction``: the
        theorem's own setting (the §4-scale cascade world's M and the sample sizes the exact statements are scored
        on: the same in the smoke and paper presets). ``pretrained``: none (an extension: the paper runs no
        pretrained checkpoint, so there is no paper size to stand beside)."""
        if part == "world_g":
            g = self.run_g(0)
            return {
                "M": g.world.n_subjects, "S": g.world.grammar_len, "L": g.world.n_types, "N_tr": g.world.n_subseq,
                "d": g.d_model, "PT steps": g.pt_steps, "FT steps": g.ft_steps, "batch": g.batch,
                "N_ft": g.n_demos, "FT subjects": g.n_finetune,
            }  # fmt: skip
        if part in ("world_r", "world_r_absolute"):
            r = self.run_r(0)
            return {
                "M": r.world.n_subjects, "S": r.world.grammar_len, "L": r.world.n_types, "N_tr": r.world.n_subseq,
                "d_h": r.d_head, "heads": r.n_heads, "PT steps": r.pt_steps, "FT steps": r.ft_steps,
                "batch": r.batch, "N_ft": r.n_demos, "FT subjects": r.n_finetune,
            }  # fmt: skip
        if part == "construction":
            return {
                "cascade M": self.cascade[1].M, "samples": self.construction_samples,
                "cascade MC draws": self.cascade_mc, "cascade eval": self.cascade_eval,
            }  # fmt: skip
        return {}

    def run_r(self, seed: int) -> RunR:
        """The World-R run with the options applied, its world drawn from ``seed``."""
        return replace(
            self.r,
            world=replace(self.r.world, seed=seed),
            pt_steps=per_run(self.pt_steps, "r"),
            ft_steps=per_run(self.ft_steps, "r"),
            n_finetune=per_run(self.n_finetune, "r"),
            n_demos=per_run(self.n_demos, "r"),
        )


def resized_world(world: WorldConfig, subjects: int | None, grammar_len: int | None) -> WorldConfig:
    """``world`` with ``subjects`` subjects M and grammar length S (None: its own). The first attribute keeps one
    value per subject where it had one (M_1 = M, as in the paper's World-G); the others keep their M_ℓ, at most M."""
    if subjects is not None:
        first, *rest = world.n_values
        first = subjects if first == world.n_subjects else min(first, subjects)
        world = replace(world, n_subjects=subjects, n_values=(first, *(min(m, subjects) for m in rest)))
    return world if grammar_len is None else replace(world, grammar_len=grammar_len)


def _both(g: int, r: int) -> int | PerRun:
    return g if g == r else PerRun(g, r)


def _preset(g: RunG, r: RunR, **kwargs: Any) -> ContextualRecallPreset:
    """The preset of runs ``g`` and ``r``: the overridable sizes are read from the runs (one source)."""
    return ContextualRecallPreset(
        g=g,
        r=r,
        pt_steps=_both(g.pt_steps, r.pt_steps),
        ft_steps=_both(g.ft_steps, r.ft_steps),
        n_finetune=_both(g.n_finetune, r.n_finetune),
        n_demos=_both(g.n_demos, r.n_demos),
        div=g.world.target_div,
        div_method=g.world.div_method,
        ft_loss=g.ft_loss,
        **kwargs,
    )


WORLD_G = {
    "paper": WorldConfig(),
    "smoke": WorldConfig(
        n_subjects=32,
        n_types=4,
        n_values=(32, 8, 8, 8),
        n_grammar=8,
        grammar_len=24,
        n_subseq=3,
        p_grammar_only=0.2,
        target_div=None,
    ),
    "micro": WorldConfig(
        n_subjects=16,
        n_types=3,
        n_values=(16, 4, 4),
        n_grammar=6,
        grammar_len=4,
        n_subseq=2,
        p_grammar_only=0.2,
        target_div=0.4,
    ),
}

WORLD_R = {
    "paper": WorldConfig(
        n_subjects=256,
        n_types=8,
        n_values=(32,) * 8,
        n_grammar=16,
        grammar_len=10,
        n_subseq=5,
        p_grammar_only=0.0,
        target_div=None,
        relation_tokens=True,
    ),
    "smoke": WorldConfig(
        n_subjects=64,
        n_types=4,
        n_values=(8,) * 4,
        n_grammar=8,
        grammar_len=6,
        n_subseq=3,
        p_grammar_only=0.0,
        target_div=None,
        relation_tokens=True,
    ),
    "micro": WorldConfig(
        n_subjects=16,
        n_types=2,
        n_values=(4, 4),
        n_grammar=4,
        grammar_len=3,
        n_subseq=2,
        p_grammar_only=0.0,
        target_div=None,
        relation_tokens=True,
    ),
}

#: the World-R of the construction part (the smoke World-R sizes at every preset; its seed is --seed)
CONSTRUCTION_WORLD = WORLD_R["smoke"]

RUN_G = {
    "paper": RunG(WORLD_G["paper"]),
    "smoke": RunG(
        WORLD_G["smoke"],
        d_model=64,
        batch=32,
        pt_steps=2000,
        pt_lr=2e-3,
        ft_steps=400,
        ft_lr=1e-3,
        n_demos=8,
        n_finetune=16,
        n_eval=512,
        pt_eval_every=250,
        ft_eval_every=100,
        checkpoint_every=500,
        K=50,
        max_t=8,
    ),
    "micro": RunG(
        WORLD_G["micro"],
        d_model=16,
        batch=8,
        pt_steps=6,
        pt_lr=2e-3,
        ft_steps=4,
        ft_lr=1e-3,
        n_demos=3,
        n_finetune=8,
        n_eval=16,
        pt_eval_every=3,
        ft_eval_every=2,
        checkpoint_every=3,
        K=4,
        max_t=3,
    ),
}

RUN_R = {
    "paper": RunR(WORLD_R["paper"]),
    "smoke": RunR(
        WORLD_R["smoke"],
        d_head=64,
        pt_steps=3000,
        pt_lr=3e-3,
        ft_steps=600,
        ft_lr=3e-3,
        n_demos=5,
        n_finetune=32,
        n_eval=512,
        pt_eval_every=250,
        ft_eval_every=100,
        checkpoint_every=500,
    ),
    "micro": RunR(
        WORLD_R["micro"],
        d_head=8,
        batch=8,
        pt_steps=6,
        pt_lr=3e-3,
        ft_steps=4,
        ft_lr=3e-3,
        n_demos=2,
        n_finetune=8,
        n_eval=16,
        pt_eval_every=3,
        ft_eval_every=2,
        checkpoint_every=3,
    ),
}

PRESETS = {
    "paper": _preset(RUN_G["paper"], RUN_R["paper"]),
    "smoke": _preset(RUN_G["smoke"], RUN_R["smoke"], pretrained_K=10, pretrained_max_t=8),
    "micro": _preset(
        RUN_G["micro"],
        RUN_R["micro"],
        comparable=False,
        construction_samples=256,
        cascade=(CASCADE_HOLDS, CASCADE_MICRO_FAIL),
        cascade_mc=256,
        cascade_eval=256,
        pretrained_K=2,
        pretrained_max_t=2,
    ),
}
