"""Preset sizes (micro / smoke / paper) of the two worlds and their training runs.

``paper`` follows the paper's App. B.1: World-G M=256, L=8, M_1=256, M_2..8=32, S=80, N_tr=5, p_G=0.2,
Div≈0.5, Model A d=256, AdamW lr 1e-4, wd 1e-3, batch 64, 20k PT / 2k FT iterations, N_ft=16, 128 FT
subjects; World-R (§4) M=256, M_ℓ=32, S=10, N_tr=5, N_ft=5, Model B 3 heads d_h=256, AdamW lr 1e-3, cosine
PT schedule, 2k PT / 1k FT (the validation runs of Figs. 9-12). ``smoke`` is a CPU-sized reduction that keeps
the mechanisms (sizes in the package README); ``micro`` only exercises the code paths (tests).
G (grammar tokens) and the Dirichlet α are not given in the paper: G=16, α=1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .world import WorldConfig


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


def with_seed(run, seed: int):
    """The run with its world drawn from ``seed`` too (world, split, init and data all follow the seed)."""
    return replace(run, world=replace(run.world, seed=seed))
