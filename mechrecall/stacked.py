"""Several seeds of one toy model trained in one process, their weights stacked on a leading seed axis.

    results = train_seeds([build(seed=s) for s in (0, 1, 2)], batch_fn, [replace(cfg, seed=s) for s in (0, 1, 2)])

A toy model is too small to fill a GPU (or to amortise Python's per-step cost on a CPU), so S seeds run as one
model: each weight ``W`` becomes ``W_stacked`` of shape ``[S, *W.shape]``, the forward pass and the loss are
``torch.func.vmap``-ed over the seed axis (``torch.func.functional_call`` puts seed ``s``'s slice where the
model's weight was), and one optimiser steps every seed at once -- SGD, Adam and AdamW are elementwise, so
seed ``s``'s slice takes exactly the update it would take alone. Gradient clipping is per seed (each seed's own
global norm). Seed ``s``'s data are ``batch_fn(step, generator)`` with the generator seeded from
``(cfgs[s].seed, step)``, as in :func:`mechrecall.trainer.train`.

Each seed computes what its own :func:`~mechrecall.trainer.train` run computes, the same operations in the
same order, but through batched kernels. In ``tests/test_stacked.py`` (d_model 16; AdamW, SGD with clipping and
a cosine schedule, Adam with groups; 12 steps) every seed's losses, gradient norms, evaluations and final weights
equal its own run's bit for bit on the CPU. That is not guaranteed everywhere: TransformerLens 3.x's MLP computes
``b_in + x @ W_in`` as one ``torch.addmm`` (the bias added inside the GEMM), which ``vmap`` runs as a batched
product and a separate add, and from d_model 64 (batch 32) the two round differently: most weights ~1e-8 apart
after a few steps, ``b_K`` up to 2e-4 (its gradient is rounding noise that Adam rescales;
``benchmarks/bench_stacked_seeds.py`` reports the gap). At d_model 256 an attention-only model's batched products
round differently too. A custom ``loss_fn``, vmapped whole, may round its value's last bit differently. On a
GPU all agree to the kernels' rounding.

Not here (use :func:`~mechrecall.trainer.train` per seed): checkpoints and resumption, ``loss_positions="mask"``
(a data-dependent shape ``vmap`` cannot batch), gradient hooks other than frozen entries', TransformerLens 4.x
(:func:`mechrecall._tl.check_stackable`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch
from torch.func import functional_call, vmap

from mechrecall._tl import Model, check_stackable, weight, weight_layout
from mechrecall.batch import Batch
from mechrecall.trainer import (
    BatchFn,
    EvalFn,
    LossFn,
    TrainConfig,
    TrainResult,
    build_optimizer,
    draw_batch,
    eval_row,
    lr_factor,
    rows_loss,
    select_positions,
)


def train_seeds(
    models: Sequence[Model],
    batch_fn: BatchFn,
    cfgs: Sequence[TrainConfig],
    *,
    loss_fn: LossFn | None = None,
    evals: Mapping[str, EvalFn] | None = None,
) -> list[TrainResult]:
    """Train ``models[s]`` with ``cfgs[s]`` for every seed ``s`` at once; see the module docstring.

    The models share one architecture and the configs differ only in ``seed``. Each model ends with its
    trained weights, and each :class:`TrainResult` holds its own history (``train`` rows: loss, grad_norm, lr;
    ``eval`` rows from ``evals[name](models[s])``).

    Raises:
        ValueError: before any work, naming what differs between the seeds or what is not supported stacked.
    """
    _check(models, cfgs)
    cfg = cfgs[0]
    evals = dict(evals or {})
    stacked = _stack(models)
    optimizer = build_optimizer(stacked, cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(cfg, step))
    masks = _entry_masks(stacked, models[0])
    losses_of = _seed_losses(stacked, loss_fn, cfg)
    device = next(stacked.parameters()).device
    histories: list[dict[str, list[dict[str, Any]]]] = [{"train": [], "eval": []} for _ in models]

    def batches(step: int) -> tuple[dict[str, Any], Batch]:
        return _stack_batches([draw_batch(batch_fn, c.seed, step) for c in cfgs], device)

    with torch.no_grad():  # the data against the loss, before any update
        data, like = batches(0) if cfg.steps else ({}, None)
        if like is not None:
            losses_of(_params(stacked), data, like)
    _evaluate(stacked, models, evals, histories, 0)
    stacked.train()
    for step in range(cfg.steps):
        lr = optimizer.param_groups[0]["lr"]
        data, like = batches(step)
        optimizer.zero_grad(set_to_none=True)
        losses = losses_of(_params(stacked), data, like)
        losses.sum().backward()  # d(sum)/d(loss_s) = 1: each seed's gradients are its own
        norms = _update(optimizer, scheduler, masks, cfg.grad_clip, len(models))
        for s, (loss, norm) in enumerate(torch.stack([losses.detach(), norms]).T.tolist()):
            if loss != loss or abs(loss) == float("inf"):
                raise FloatingPointError(f"seed {cfgs[s].seed}: training loss is {loss} at step {step}")
            histories[s]["train"].append({"step": step + 1, "loss": loss, "grad_norm": norm, "lr": lr})
        done = step + 1
        if done == cfg.steps or done in cfg.eval_steps or (cfg.eval_every and done % cfg.eval_every == 0):
            _evaluate(stacked, models, evals, histories, done)
    _unstack(stacked, models)
    return [TrainResult(model=m, history=h, step=cfg.steps, resumed_from=None) for m, h in zip(models, histories)]


def _check(models: Sequence[Model], cfgs: Sequence[TrainConfig]) -> None:
    if not models or len(models) != len(cfgs):
        raise ValueError(f"train_seeds needs one TrainConfig per model; got {len(models)} models, {len(cfgs)} configs")
    check_stackable(models[0])
    cfgs[0].validate()
    for c in cfgs[1:]:
        if replace(c, seed=cfgs[0].seed) != cfgs[0]:
            a, b = cfgs[0].to_dict(), c.to_dict()
            diff = [k for k in a if k != "seed" and a[k] != b[k]]
            raise ValueError(f"train_seeds: the configs differ in {diff}; stacked seeds may differ only in seed")
    if cfgs[0].loss_positions == "mask":
        raise ValueError("train_seeds: loss_positions='mask' cannot be stacked (vmap); use train() per seed")
    if cfgs[0].compile is not None:
        raise ValueError(f"train_seeds: TrainConfig.compile={cfgs[0].compile!r} is not stacked; use train() per seed")
    shapes = {n: p.shape for n, p in models[0].named_parameters()}
    for i, m in enumerate(models[1:], 1):
        other = {n: p.shape for n, p in m.named_parameters()}
        if other != shapes:
            raise ValueError(f"train_seeds: model {i} has other weights than model 0; stack one architecture")
    masked = {id(p) for p in _entry_masks(models[0], models[0])}
    hooked = [n for n, p in models[0].named_parameters() if p._backward_hooks and id(p) not in masked]
    if hooked:
        raise ValueError(f"train_seeds: {hooked[0]} has a gradient hook that cannot be stacked; use train() per seed")


def _stack(models: Sequence[Model]) -> Model:
    """A copy of ``models[0]`` whose every parameter is the seeds' weights stacked, ``[S, *shape]``."""
    stacked = copy.deepcopy(models[0])
    made: dict[int, torch.nn.Parameter] = {}  # a weight under several names (tied, or a TL 4.x alias): one stack
    for name, param in list(stacked.named_parameters(remove_duplicate=False)):
        if id(param) not in made:
            seeds = torch.stack([m.get_parameter(name).detach() for m in models])
            made[id(param)] = torch.nn.Parameter(seeds, requires_grad=param.requires_grad)
        owner, leaf = _owner(stacked, name)
        setattr(owner, leaf, made[id(param)])
    return stacked


def _unstack(stacked: Model, models: Sequence[Model]) -> None:
    """Each seed's slice of the stacked weights, written back into its own model."""
    with torch.no_grad():
        for name, param in stacked.named_parameters():
            for s, m in enumerate(models):
                m.get_parameter(name).copy_(param[s])


def _owner(model: torch.nn.Module, name: str) -> tuple[torch.nn.Module, str]:
    path, _, leaf = name.rpartition(".")
    return (model.get_submodule(path) if path else model), leaf


def _params(stacked: Model) -> dict[str, torch.Tensor]:
    return dict(stacked.named_parameters())


def _entry_masks(stacked: Model, model: Model) -> dict[torch.Tensor, torch.Tensor]:
    """Frozen entries (``mechrecall_entry_masks``, the same for every seed) of the stacked weights."""
    masks = getattr(model, "mechrecall_entry_masks", None) or {}
    return {weight(stacked, n): weight_layout(model, n, m) for n, m in masks.items()}


class _WithLoss(torch.nn.Module):
    """``model`` under a name, so that ``functional_call`` can swap its weights while ``fn`` computes the loss."""

    def __init__(self, model: Model, fn: Any):
        super().__init__()
        self.model, self.fn = model, fn

    def forward(self, batch: Batch) -> torch.Tensor:
        return self.fn(self.model, batch)


SeedLosses = Callable[[dict[str, torch.Tensor], dict[str, Any], Batch], torch.Tensor]


def _seed_losses(stacked: Model, loss_fn: LossFn | None, cfg: TrainConfig) -> SeedLosses:
    """``(stacked weights, stacked batch tensors, the rest of the batch) -> [S]``: each seed's loss.

    The default loss vmaps the forward pass and the choice of positions, then takes each seed's cross-entropy
    with the kernel ``train`` uses (a reduction batched by ``vmap`` may round differently in the last bit). A
    custom ``loss_fn`` is vmapped whole: its reductions are batched, so its value agrees to that rounding.
    """
    if loss_fn is None:

        def rows(params: dict[str, torch.Tensor], data: dict[str, Any], like: Batch) -> tuple[torch.Tensor, ...]:
            batch = _batch(data, like)
            logits = functional_call(stacked, params, (batch.tokens,))
            return select_positions(logits, batch.targets, cfg.loss_positions, batch.loss_mask)

        def default(params: dict[str, torch.Tensor], data: dict[str, Any], like: Batch) -> torch.Tensor:
            chosen, labels = vmap(rows, in_dims=(0, 0, None))(params, data, like)
            return torch.stack([rows_loss(chosen[s], labels[s]) for s in range(len(chosen))])

        return default
    wrapped = _WithLoss(stacked, loss_fn)

    def custom(params: dict[str, torch.Tensor], data: dict[str, Any], like: Batch) -> torch.Tensor:
        return functional_call(wrapped, {f"model.{n}": p for n, p in params.items()}, (_batch(data, like),))

    return vmap(custom, in_dims=(0, 0, None))


def _batch(data: dict[str, Any], like: Batch) -> Batch:
    """One seed's batch: its tensors from ``data`` (under ``vmap``), everything else from ``like``."""
    batch = copy.copy(like)
    batch.tokens, batch.targets, batch.loss_mask = data["tokens"], data["targets"], data.get("loss_mask")
    batch.extras = {**like.extras, **data["extras"]}
    return batch


def _stack_batches(batches: Sequence[Batch], device: torch.device) -> tuple[dict[str, Any], Batch]:
    """The seeds' batches as one pytree of ``[S, ...]`` tensors (vmapped) and seed 0's batch for the rest."""
    first = batches[0]

    def stack(get: Any) -> torch.Tensor:
        return torch.stack([get(b) for b in batches]).to(device)

    data: dict[str, Any] = {"tokens": stack(lambda b: b.tokens), "targets": stack(lambda b: b.targets)}
    if first.loss_mask is not None:
        data["loss_mask"] = stack(lambda b: b.loss_mask)
    data["extras"] = {
        k: stack(lambda b, k=k: b.extras[k]) for k, v in first.extras.items() if isinstance(v, torch.Tensor)
    }
    return data, first


def _update(
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    masks: Mapping[torch.Tensor, torch.Tensor],
    max_norm: float | None,
    seeds: int,
) -> torch.Tensor:
    """``trainer._update`` on the stacked weights: frozen entries masked and restored on every seed's slice, each
    seed clipped by its own norm, one optimiser and schedule step; each seed's gradient norm, ``[S]``."""
    for p, m in masks.items():
        p.grad.mul_(m)  # the frozen entries' gradient hook (TrainableEntries)
    norms = _clip(optimizer, max_norm, seeds)
    kept = {p: p.detach()[:, ~m].clone() for p, m in masks.items()}
    optimizer.step()
    with torch.no_grad():
        for p, values in kept.items():
            p[:, ~masks[p]] = values
    scheduler.step()
    return norms


def _clip(optimizer: torch.optim.Optimizer, max_norm: float | None, seeds: int) -> torch.Tensor:
    """Each seed's gradient norm before clipping, ``[S]``; with ``max_norm``, each seed's gradients scaled as
    ``torch.nn.utils.clip_grad_norm_`` scales one model's (the same operations, on that seed's slices)."""
    grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    norms = []
    for s in range(seeds):
        own = [g[s] for g in grads]
        if max_norm is None:
            norms.append(torch.linalg.vector_norm(torch.stack([g.norm() for g in own])) if own else torch.zeros(()))
            continue
        total = torch.nn.utils.get_total_norm(own)
        coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in own:
            g.mul_(coef)
        norms.append(total)
    return torch.stack(norms)


def _evaluate(
    stacked: Model,
    models: Sequence[Model],
    evals: Mapping[str, EvalFn],
    histories: list[dict[str, list[dict[str, Any]]]],
    step: int,
) -> None:
    """``evals`` on each seed's own model, its slice of the stacked weights copied in (as ``train`` evaluates)."""
    if evals:
        _unstack(stacked, models)
        for model, history in zip(models, histories):
            history["eval"].append(eval_row(model, evals, step))


__all__ = ["train_seeds"]
