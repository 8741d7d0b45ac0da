"""Pretraining and finetuning runs of §3 (World-G, Model A) and §4 (World-R, Model B / B′), on the one trainer.

Every run is resumable (its checkpoints live in the run folder). Metrics over training (Figs. 2-4, 15, 19,
24) are the four final-token matches of Fig. 1 on fresh, fixed evaluation sets: PT sequences (last
subsequence forced factual), ICL with query subjects seen in finetuning or held out (demonstrations from the
same pool as the query), and for World-G ICL+Grm with S_ft = 1 (Fig. 15).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import torch

from mechrecall.builder import build_from_spec, model_spec
from mechrecall.trainer import TrainConfig, train

from .configs import RunG, RunR
from .metrics import recall_metrics
from .models import build_model_a, build_model_b, world_r_ctx
from .world import (
    World,
    WorldConfigError,
    build_world,
    check_task,
    sample_icl,
    sample_icl_rel,
    sample_pt,
    sample_pt_rel,
    split_subjects,
)

EVAL_SEED = 10_000


@dataclass
class Trained:
    world: World
    ft: torch.Tensor
    heldout: torch.Tensor
    model_pt: object
    models_ft: dict
    history_pt: dict
    history_ft: dict
    evals: dict


def _copy(model):
    new = build_from_spec(model_spec(model))
    new.load_state_dict(model.state_dict())
    return new.to(model.cfg.device)


def g_ctx(run: RunG) -> int:
    """Model A's context: the longest of PT, ICL and ICL+Grm inputs."""
    c = run.world
    m = run.n_demos + 1
    return max(c.pt_len, (run.grm_len[1] + 3) * m - 1) - 1


def check_run_g(run: RunG) -> World:
    """World-G run consistency, before any training (errors name the value)."""
    world = build_world(run.world)
    ft, ho = split_subjects(world, run.n_finetune, run.world.seed)
    if len(ho) == 0:
        raise WorldConfigError(f"n_finetune={run.n_finetune} leaves no held-out subject (M={run.world.n_subjects})")
    check_task(world, n_demos=run.n_demos, pools=(ft, ho))
    return world


def check_run_r(run: RunR, n_ctx: int | None = None) -> World:
    world = build_world(run.world)
    ft, ho = split_subjects(world, run.n_finetune, run.world.seed)
    if len(ho) == 0:
        raise WorldConfigError(f"n_finetune={run.n_finetune} leaves no held-out subject (M={run.world.n_subjects})")
    check_task(world, n_demos=run.n_demos, pools=(ft, ho))
    if n_ctx is not None:
        check_task(world, n_ctx=n_ctx, seq_len=world_r_ctx(run.world, run.n_demos))
    return world


def _metric_evals(world: World, batches: dict) -> dict:
    return {name: (lambda m, b=b: recall_metrics(m, b, world)) for name, b in batches.items()}


def train_g(run: RunG, seed: int, out: Path, *, device=None, progress=False, finetune=("ICL", "ICLGrm")) -> Trained:
    """Pretrain Model A on PT, then finetune copies on ICL and/or ICL+Grm over the finetuning subjects."""
    world = check_run_g(run)
    ft, ho = split_subjects(world, run.n_finetune, seed)
    n_ctx = g_ctx(run)
    model = build_model_a(world.V, n_ctx, run.d_model, seed=seed)
    if device:
        model.to(device)
    eg = torch.Generator().manual_seed(EVAL_SEED + seed)
    N = run.n_demos
    batches = {
        "PT": sample_pt(world, run.n_eval, eg, force_last_factual=True),
        "ICL_seen": sample_icl(world, run.n_eval, N, eg, demo_subjects=ft),
        "ICL_heldout": sample_icl(world, run.n_eval, N, eg, demo_subjects=ho),
        "ICLGrm1_seen": sample_icl(world, run.n_eval, N, eg, demo_subjects=ft, grammar_len=1),
        "ICLGrm1_heldout": sample_icl(world, run.n_eval, N, eg, demo_subjects=ho, grammar_len=1),
    }
    evals = _metric_evals(world, batches)
    no_decay = (
        {"params": ("embed.W_E", "pos_embed.W_pos", "blocks.*.ln*", "ln_final.*", "*.b_*"), "weight_decay": 0.0},
    )  # minGPT's decay groups
    tc = TrainConfig(
        steps=run.pt_steps,
        optimizer="adamw",
        lr=run.pt_lr,
        betas=(0.9, 0.95),
        weight_decay=run.weight_decay,
        param_groups=no_decay,
        grad_clip=1.0,
        loss_positions="mask",
        eval_every=run.pt_eval_every,
        checkpoint_every=run.checkpoint_every,
        seed=seed,
        progress=progress,
    )
    res = train(model, lambda step, gen: sample_pt(world, run.batch, gen), tc, evals=evals, out_dir=out / "pt")
    models_ft, hist_ft = {}, {}
    for kind in finetune:
        m = _copy(model)
        grm = 0 if kind == "ICL" else run.grm_len
        tcf = replace(tc, steps=run.ft_steps, lr=run.ft_lr, eval_every=run.ft_eval_every, seed=seed + 1)
        r = train(
            m,
            lambda step, gen, grm=grm: sample_icl(world, run.batch, N, gen, demo_subjects=ft, grammar_len=grm),
            tcf,
            evals=evals,
            out_dir=out / f"ft_{kind}",
        )
        models_ft[kind], hist_ft[kind] = m, r.history
    return Trained(world, ft, ho, model, models_ft, res.history, hist_ft, batches)


def train_r(run: RunR, seed: int, out: Path, *, positions: str = "relative", device=None, progress=False) -> Trained:
    """Pretrain Model B (or B′) on PT_rel (all positions, cosine lr), then finetune a copy on ICL_rel over the
    finetuning subjects with the last-token loss (constant lr)."""
    world = check_run_r(run)
    ft, ho = split_subjects(world, run.n_finetune, seed)
    n_ctx = world_r_ctx(run.world, run.n_demos)
    model = build_model_b(world.V, n_ctx, d_head=run.d_head, n_heads=run.n_heads, positions=positions, seed=seed)
    if device:
        model.to(device)
    eg = torch.Generator().manual_seed(EVAL_SEED + seed)
    N = run.n_demos
    batches = {
        "PT": sample_pt_rel(world, run.n_eval, eg),
        "ICL_seen": sample_icl_rel(world, run.n_eval, N, eg, demo_subjects=ft),
        "ICL_heldout": sample_icl_rel(world, run.n_eval, N, eg, demo_subjects=ho),
    }
    evals = _metric_evals(world, batches)
    tc = TrainConfig(
        steps=run.pt_steps,
        optimizer="adamw",
        lr=run.pt_lr,
        weight_decay=run.weight_decay,
        schedule="cosine",
        loss_positions="mask",
        eval_every=run.pt_eval_every,
        checkpoint_every=run.checkpoint_every,
        seed=seed,
        progress=progress,
    )
    res = train(model, lambda step, gen: sample_pt_rel(world, run.batch, gen), tc, evals=evals, out_dir=out / "pt")
    m = _copy(model)
    tcf = replace(
        tc, steps=run.ft_steps, lr=run.ft_lr, schedule="constant", eval_every=run.ft_eval_every, seed=seed + 1
    )  # fine-tuning: the same recipe at a constant learning rate
    r = train(
        m,
        lambda step, gen: sample_icl_rel(world, run.batch, N, gen, demo_subjects=ft),
        tcf,
        evals=evals,
        out_dir=out / "ft_ICL",
    )
    return Trained(world, ft, ho, model, {"ICL": m}, res.history, {"ICL": r.history}, batches)


def final(history: dict) -> dict:
    return history["eval"][-1]


def first_step(history: dict, key: str, level: float) -> int | None:
    """First eval step where ``key`` reaches ``level`` (None if never)."""
    return next((row["step"] for row in history["eval"] if row.get(key, -1) >= level), None)
