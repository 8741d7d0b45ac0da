"""One trainer for every paper's toy model.

    result = train(model, batch_fn, TrainConfig(steps=500, optimizer="sgd", lr=0.03, momentum=0.9),
                   evals={"acc": my_eval}, out_dir="runs/x")

- **Online data.** ``batch_fn(step, generator) -> Batch``; the generator is seeded from
  ``(cfg.seed, step)``, so the batch of step ``s`` is the same whether or not the run was interrupted.
- **Loss.** Cross-entropy of ``logits[b, t]`` against ``targets[b, t]`` on the positions chosen by
  ``cfg.loss_positions``: ``"last"``, ``"all"``, ``"mask"`` (the batch's ``loss_mask``), or an explicit
  tuple of positions. Targets equal to ``-100`` are ignored. Or pass ``loss_fn(model, batch) -> loss``.
- **Optimiser.** SGD (momentum), Adam or AdamW; ``param_groups`` give name patterns their own
  ``lr`` / ``weight_decay`` (e.g. Chen et al.'s separate step sizes η_f, η_v); optional grad clipping
  and a constant / cosine schedule with warm-up. Only parameters with ``requires_grad`` are trained.
- **Evaluation.** ``evals[name](model) -> float | dict`` every ``eval_every`` steps (and at each of
  ``eval_steps``, the first and the last step), in ``torch.no_grad`` and eval mode; recorded with the
  step in ``history["eval"]``; the training loss of every step is in ``history["train"]``.
- **Checkpoints.** With ``out_dir`` and ``checkpoint_every``, a checkpoint (weights, optimiser, RNG,
  history) is written atomically every k steps and at the end; ``train`` resumes from the newest one,
  and a resumed run ends with exactly the weights of an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import json
import logging
import math
import os
import shutil
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int

from mechrecall import probe as probing
from mechrecall._tl import Model, named_weights, weight, weight_layout
from mechrecall.batch import Batch
from mechrecall.checkpoint import (
    load_optimizer_state,
    load_rng_state,
    load_weights,
    read_checkpoint_meta,
    save_checkpoint,
)
from mechrecall.errors import CheckpointError
from mechrecall.io import atomic_write_json
from mechrecall.progress import progress_bar
from mechrecall.seeds import derive_seed

log = logging.getLogger(__name__)

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("constant", "cosine")
LOSS_POSITIONS = ("last", "all", "mask")


@dataclass
class TrainConfig:
    """Everything that determines a training run (JSON-serialisable; saved in checkpoints)."""

    steps: int
    optimizer: str = "adamw"
    lr: float = 1e-3
    momentum: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.0
    param_groups: tuple[dict[str, Any], ...] = ()  # ({"params": ("blocks.*.mlp.*",), "lr": 0.1}, ...)
    grad_clip: float | None = None
    schedule: str = "constant"
    warmup_steps: int = 0
    loss_positions: str | tuple[int, ...] = "last"
    eval_every: int = 0
    eval_steps: tuple[int, ...] = ()
    checkpoint_every: int = 0
    keep_checkpoints: int = 2
    seed: int = 0
    progress: bool = True
    fused: bool | None = None  # torch's fused optimiser kernel; None: on CUDA only (the CPU keeps the foreach one)
    compile: str | None = None  # torch.compile the loss (forward) with this backend, e.g. "inductor"; None: eager

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TrainConfig":
        d = dict(d)
        for key in ("betas", "eval_steps", "param_groups"):
            if key in d and isinstance(d[key], list):
                d[key] = tuple(d[key])
        if isinstance(d.get("loss_positions"), list):
            d["loss_positions"] = tuple(d["loss_positions"])
        return cls(**d)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        if not isinstance(self.steps, int) or self.steps < 0:
            raise ValueError(f"TrainConfig.steps={self.steps!r}; expected an int >= 0")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"TrainConfig.optimizer={self.optimizer!r}; expected one of {OPTIMIZERS}")
        if not self.lr > 0:
            raise ValueError(f"TrainConfig.lr={self.lr!r}; expected > 0")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"TrainConfig.schedule={self.schedule!r}; expected one of {SCHEDULES}")
        if self.compile is not None and self.compile not in torch.compiler.list_backends(exclude_tags=()):
            raise ValueError(
                f"TrainConfig.compile={self.compile!r}; expected None or a torch.compile backend "
                f"({', '.join(torch.compiler.list_backends())})"
            )
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"TrainConfig.grad_clip={self.grad_clip!r}; expected None or > 0")
        lp = self.loss_positions
        if isinstance(lp, str):
            if lp not in LOSS_POSITIONS:
                raise ValueError(
                    f"TrainConfig.loss_positions={lp!r}; expected one of {LOSS_POSITIONS} or a tuple of positions"
                )
        elif not (isinstance(lp, (tuple, list)) and lp and all(isinstance(p, int) for p in lp)):
            raise ValueError(
                f"TrainConfig.loss_positions={lp!r}; expected one of {LOSS_POSITIONS} or a non-empty tuple of ints"
            )
        for name in ("eval_every", "checkpoint_every", "warmup_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"TrainConfig.{name}={getattr(self, name)!r}; expected >= 0")
        if self.keep_checkpoints < 1:
            raise ValueError(f"TrainConfig.keep_checkpoints={self.keep_checkpoints!r}; expected >= 1")
        for group in self.param_groups:
            if "params" not in group or not group["params"]:
                raise ValueError(f"TrainConfig.param_groups entry {group!r} needs 'params' (name patterns)")
            unknown = set(group) - {"params", "lr", "weight_decay", "momentum", "betas"}
            if unknown:
                raise ValueError(f"TrainConfig.param_groups entry {group!r}: unknown keys {sorted(unknown)}")


@dataclass
class TrainResult:
    model: Model
    history: dict[str, list[dict[str, Any]]]
    step: int
    resumed_from: int | None


BatchFn = Callable[[int, torch.Generator], Batch]
LossFn = Callable[[Model, Batch], torch.Tensor]
EvalFn = Callable[[Model], float | Mapping[str, float]]


def select_positions(
    logits: Float[torch.Tensor, "batch pos d_vocab"],
    targets: torch.Tensor,
    loss_positions: str | Sequence[int],
    loss_mask: torch.Tensor | None = None,
) -> tuple[Float[torch.Tensor, "n d_vocab"], Int[torch.Tensor, " n"]]:
    """The (logits, targets) rows the loss is taken on, flattened. Shapes are checked.

    Raises:
        ValueError: targets or mask of the wrong shape, or positions outside ``[-pos, pos)``.
    """
    batch, pos = logits.shape[:2]
    if loss_positions == "last" and targets.shape == (batch,):
        return logits[:, -1], targets
    if targets.shape != (batch, pos):
        raise ValueError(
            f"targets have shape {tuple(targets.shape)}; expected [batch, pos] = {(batch, pos)}"
            + (" or [batch] with loss_positions='last'" if loss_positions == "last" else "")
        )
    if loss_positions == "last":
        return logits[:, -1], targets[:, -1]
    if loss_positions == "all":
        return logits.reshape(batch * pos, -1), targets.reshape(-1)
    if loss_positions == "mask":
        if loss_mask is None:
            raise ValueError("loss_positions='mask' but the batch has no loss_mask")
        if loss_mask.shape != (batch, pos) or loss_mask.dtype != torch.bool:
            raise ValueError(
                f"loss_mask has shape {tuple(loss_mask.shape)} and dtype {loss_mask.dtype}; "
                f"expected a bool mask of shape [batch, pos] = {(batch, pos)}"
            )
        return logits[loss_mask], targets[loss_mask]
    positions = list(loss_positions)
    bad = [p for p in positions if not -pos <= p < pos]
    if bad:
        raise ValueError(f"loss_positions {bad} are outside the sequence (length {pos})")
    index = torch.tensor(positions, device=logits.device)
    return logits[:, index].reshape(batch * len(positions), -1), targets[:, index].reshape(-1)


def next_token_loss(model: Model, batch: Batch, loss_positions: str | Sequence[int]) -> torch.Tensor:
    """Mean cross-entropy on the chosen positions (targets == -100 ignored)."""
    logits = model(batch.tokens)
    return rows_loss(*select_positions(logits, batch.targets, loss_positions, batch.loss_mask))


def rows_loss(rows: Float[torch.Tensor, "n d_vocab"], labels: Int[torch.Tensor, " n"]) -> torch.Tensor:
    """Mean cross-entropy of the rows :func:`select_positions` chose (labels == -100 ignored), in float32."""
    return F.cross_entropy(rows.float(), labels, ignore_index=-100)


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The optimiser over trainable parameters, one group per ``cfg.param_groups`` entry + the rest; torch's fused
    kernel where ``cfg.fused`` says so (``None``: on CUDA; on the CPU it is about 3x faster than the default foreach
    kernel but rounds differently, so the CPU keeps the foreach one unless asked: ``benchmarks/bench_step_kernels.py``).

    Raises:
        ValueError: a group pattern that matches no trainable parameter, or nothing to train.
    """
    trainable = [(n, p) for n, p in named_weights(model).items() if p.requires_grad]
    if not trainable:
        raise ValueError("the model has no trainable parameters (every parameter is frozen)")
    assigned: dict[str, int] = {}
    for gi, group in enumerate(cfg.param_groups):
        patterns = (group["params"],) if isinstance(group["params"], str) else tuple(group["params"])
        for pattern in patterns:
            hits = [n for n, _ in trainable if fnmatch.fnmatchcase(n, pattern)]
            if not hits:
                names = ", ".join(n for n, _ in trainable)
                raise ValueError(
                    f"param_groups[{gi}] pattern {pattern!r} matches no trainable parameter; trainable: {names}"
                )
            for n in hits:
                assigned.setdefault(n, gi)
    groups: list[dict[str, Any]] = []
    for gi, group in enumerate(cfg.param_groups):
        opts = {k: (tuple(v) if k == "betas" else v) for k, v in group.items() if k != "params"}
        groups.append({"params": [p for n, p in trainable if assigned.get(n) == gi], **opts})
    rest = [p for n, p in trainable if n not in assigned]
    if rest:
        groups.append({"params": rest})
    groups = [g for g in groups if g["params"]]
    fused = cfg.fused if cfg.fused is not None else trainable[0][1].device.type == "cuda"
    kernel = {"fused": True} if fused else {}
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay, **kernel)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(groups, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay, **kernel)
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay, **kernel)


def lr_factor(cfg: TrainConfig, step: int) -> float:
    """Multiplier of every group's base lr at ``step`` (0-based): linear warm-up, then constant/cosine."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "cosine":
        span = max(1, cfg.steps - cfg.warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - cfg.warmup_steps) / span)))
    return 1.0


def _comparable(cfg: TrainConfig) -> dict[str, Any]:
    # Fields that may change between an interrupted run and its resumption.
    d = cfg.to_dict()
    for key in ("steps", "progress", "checkpoint_every", "keep_checkpoints", "eval_every", "eval_steps"):
        d.pop(key)
    if cfg.schedule == "constant":
        return d
    d["steps"] = cfg.steps  # a cosine schedule depends on the total
    return d


def _checkpoint_dir(out_dir: Path) -> Path:
    return out_dir / "checkpoints"


def latest_checkpoint(out_dir: str | os.PathLike) -> Path | None:
    """The newest checkpoint written by ``train`` into ``out_dir`` (``checkpoints/latest.json``), or None."""
    candidates = checkpoint_candidates(out_dir)
    return candidates[0] if candidates else None


def checkpoint_candidates(out_dir: str | os.PathLike) -> list[Path]:
    """Every checkpoint folder in ``out_dir/checkpoints``, newest first: the one ``latest.json`` names (when it
    is readable), then the ``step-*`` folders by decreasing step."""
    root = _checkpoint_dir(Path(out_dir))
    if not root.is_dir():
        return []
    steps = sorted((p for p in root.glob("step-*") if p.is_dir()), key=lambda p: p.name, reverse=True)
    pointer = root / "latest.json"
    try:
        named = root / json.loads(pointer.read_text())["name"]
    except (OSError, ValueError, KeyError, TypeError):
        named = None
    if named is not None and named.is_dir():
        steps = [named, *(p for p in steps if p != named)]
    elif pointer.exists():
        log.warning("%s is unreadable or names a missing checkpoint; looking for the newest intact one", pointer)
    return steps


def _resume(
    out: Path, model: Model, optimizer: torch.optim.Optimizer, cfg: TrainConfig
) -> tuple[dict[str, list[dict[str, Any]]], int] | None:
    """Load the newest intact checkpoint in ``out`` into ``model`` / ``optimizer`` / the RNG: ``(history, step)``.

    A damaged checkpoint (truncated or missing file, unreadable JSON) is skipped with a warning naming it, in
    favour of the next older one; when every checkpoint is damaged, :class:`CheckpointError` says what to delete.
    A checkpoint of another model or training config is an error, never skipped.
    """
    candidates = checkpoint_candidates(out)
    damaged: list[str] = []
    for ckpt in candidates:
        try:
            meta = read_checkpoint_meta(ckpt)
            saved_cfg = TrainConfig.from_dict(meta["state"]["train_config"])
        except (CheckpointError, FileNotFoundError, KeyError, TypeError) as exc:
            damaged.append(f"{ckpt.name}: {exc}")
            continue
        if _comparable(saved_cfg) != _comparable(cfg):
            a, b = _comparable(saved_cfg), _comparable(cfg)
            diffs = [
                f"{k}: {a.get(k)!r} (checkpoint) vs {b.get(k)!r}"
                for k in sorted(set(a) | set(b))
                if a.get(k) != b.get(k)
            ]
            raise ValueError(f"cannot resume from {ckpt}: the training config differs: " + "; ".join(diffs))
        if meta["step"] > cfg.steps:
            raise ValueError(f"checkpoint {ckpt} is at step {meta['step']}, beyond TrainConfig.steps={cfg.steps}")
        try:
            load_weights(model, ckpt, check_seed=False)
            load_optimizer_state(optimizer, ckpt)
            load_rng_state(ckpt)
        except CheckpointError as exc:
            damaged.append(f"{ckpt.name}: {exc}")
            continue
        if damaged:
            log.warning("skipped damaged checkpoint(s) %s; resuming from %s", "; ".join(damaged), ckpt)
        log.info("resuming %s from step %d", out, meta["step"])
        return meta["state"]["history"], meta["step"]
    if damaged:
        raise CheckpointError(
            f"no intact checkpoint in {_checkpoint_dir(out)} ({damaged[0]}); delete that folder to train from step 0"
        )
    return None


def train(
    model: Model,
    batch_fn: BatchFn,
    cfg: TrainConfig,
    *,
    loss_fn: LossFn | None = None,
    evals: Mapping[str, EvalFn] | None = None,
    out_dir: str | os.PathLike | None = None,
    resume: bool = True,
) -> TrainResult:
    """Train ``model`` in place for ``cfg.steps`` steps; see the module docstring.

    Everything is validated before the first optimiser step: the config, the parameter groups, and the
    first batch against the loss positions (``ValueError`` naming the bad value). With ``out_dir`` and
    ``resume=True``, an existing checkpoint there must belong to the same model and training config.
    """
    cfg.validate()
    evals = dict(evals or {})
    out = Path(out_dir) if out_dir is not None else None
    if cfg.checkpoint_every and out is None:
        raise ValueError("TrainConfig.checkpoint_every > 0 needs an out_dir to write checkpoints into")
    optimizer = build_optimizer(model, cfg)
    masks = getattr(model, "mechrecall_entry_masks", None) or {}
    entry_masks = {weight(model, n): weight_layout(model, n, m) for n, m in masks.items()}
    history: dict[str, list[dict[str, Any]]] = {"train": [], "eval": []}
    start, resumed_from = 0, None

    # torch's LambdaLR keeps every group's lr at base × lr_factor(cfg, step) (warm-up, then constant / cosine).
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(cfg, step))
    if out is not None and resume and (resumed := _resume(out, model, optimizer, cfg)) is not None:
        history, start = resumed
        resumed_from = start
        scheduler.last_epoch = start - 1
        with warnings.catch_warnings():  # no optimizer.step() in this process yet: expected here
            warnings.simplefilter("ignore", UserWarning)
            scheduler.step()

    def compute_loss(batch: Batch) -> torch.Tensor:
        if loss_fn is not None:
            return loss_fn(model, batch)
        return next_token_loss(model, batch, cfg.loss_positions)

    # Compiled (cfg.compile): the forward and loss as one graph; the first call compiles (and so is slow).
    loss_of = compute_loss if cfg.compile is None else torch.compile(compute_loss, backend=cfg.compile)

    def forward_backward(batch: Batch, fn: Callable[[Batch], torch.Tensor] = loss_of) -> torch.Tensor:
        loss = fn(batch)
        loss.backward()
        return loss

    device = next(model.parameters()).device

    def batch_at(step: int) -> Batch:
        return draw_batch(batch_fn, cfg.seed, step).to(device)

    def run_evals(step: int) -> None:
        if evals and not (history["eval"] and history["eval"][-1]["step"] == step):
            history["eval"].append(eval_row(model, evals, step))

    def should_eval(step: int) -> bool:
        return step in (0, cfg.steps) or step in cfg.eval_steps or bool(cfg.eval_every and step % cfg.eval_every == 0)

    # Validate the data against the loss before any update (also the shape checks of select_positions).
    first_shape: tuple[int, ...] = ()
    if start < cfg.steps:
        with torch.no_grad():
            first = batch_at(start)
            first_shape = tuple(first.tokens.shape)
            compute_loss(first)

    probe = probing.active()  # MECHRECALL_PROBE: time a few steps only (mechrecall.probe)
    began = probing.clock(device)
    if start == 0:
        run_evals(0)
    eval_seconds = probing.clock(device) - began
    stop = cfg.steps
    if probe is not None:
        key = probe.shape_key(model, first_shape, cfg.to_dict())
        stop = probe.stop_at(start, cfg.steps, key)
    model.train()
    bar = progress_bar(total=cfg.steps, initial=start, enabled=cfg.progress, desc="train")
    readback = _Readback(history, bar, every=1 if device.type == "cpu" else SYNC_EVERY)
    for step in range(start, stop):
        tick = probing.clock(device) if probe is not None else 0.0
        lr = optimizer.param_groups[0]["lr"]
        batch = batch_at(step)
        optimizer.zero_grad(set_to_none=True)
        if probe is not None and step == start:  # the warm-up step: count its FLOPs on an eager pass first
            probe.flops = probing.count_flops(functools.partial(forward_backward, batch, compute_loss))[1]
            optimizer.zero_grad(set_to_none=True)
        loss = forward_backward(batch)
        grad_norm = _update(optimizer, scheduler, cfg, entry_masks)
        readback.add(step, loss, grad_norm, lr)
        done = step + 1
        if probe is not None:
            readback.flush()
            probe.step(probing.clock(device) - tick)
            if evals and eval_seconds < probing.SERIES_EVAL_S:  # a part may read a series of evaluations
                run_evals(done)
            continue
        if should_eval(done):
            readback.flush()
            run_evals(done)
        if out is not None and cfg.checkpoint_every and (done % cfg.checkpoint_every == 0 or done == cfg.steps):
            readback.flush()
            _write_checkpoint(out, model, optimizer, done, cfg, history)
    readback.flush()
    bar.close()
    if probe is not None:
        if out is not None and cfg.checkpoint_every:  # a part may read the run's last checkpoint
            _write_checkpoint(out, model, optimizer, stop, cfg, history)
        n_evals = len({s for s in range(start, cfg.steps + 1) if should_eval(s)}) if evals else 0
        extra = {
            "spent": probing.clock(device) - began,
            "params": sum(p.numel() for p in model.parameters()),
            "batch": list(first_shape),
            "device": str(device),
            "threads": torch.get_num_threads(),
        }
        probe.write(out.name if out is not None else "train", key, cfg.steps, n_evals, eval_seconds, extra)
        return TrainResult(model=model, history=history, step=stop, resumed_from=resumed_from)
    if cfg.steps == start and start > 0:
        run_evals(start)
    return TrainResult(model=model, history=history, step=cfg.steps, resumed_from=resumed_from)


def draw_batch(batch_fn: BatchFn, seed: int, step: int) -> Batch:
    """The batch of ``step``: ``batch_fn(step, generator)``, the generator seeded from ``(seed, step)`` and on the CPU
    (the same numbers on any device; move it to the model's device after)."""
    batch = batch_fn(step, torch.Generator().manual_seed(derive_seed(seed, step)))
    if not isinstance(batch, Batch):
        raise ValueError(f"batch_fn must return a mechrecall.trainer.Batch, got {type(batch).__name__}")
    return batch


def eval_row(model: Model, evals: Mapping[str, EvalFn], step: int) -> dict[str, Any]:
    """``{"step": step, name: value, ...}``: each ``evals[name](model)`` in eval mode and ``no_grad`` (a dict
    value gives ``name.key`` entries); the model's train/eval mode is restored."""
    was_training = model.training
    model.eval()
    row: dict[str, Any] = {"step": step}
    with torch.no_grad():
        for name, fn in evals.items():
            value = fn(model)
            if isinstance(value, Mapping):
                row.update({f"{name}.{k}": float(v) for k, v in value.items()})
            else:
                row[name] = float(value)
    model.train(was_training)
    return row


#: On a GPU, each step's loss and gradient norm are read back to the host together every this many steps (or
#: every second), not one wait per step; on the CPU there is nothing to wait for and each step is read at once.
SYNC_EVERY = 25


class _Readback:
    """The training history's per-step rows, read from the device in groups (:data:`SYNC_EVERY`): the same
    numbers as one ``.item()`` per step without stalling the device's queue each step. A non-finite loss raises
    ``FloatingPointError`` naming its step when its group is read, before any evaluation or checkpoint."""

    def __init__(self, history: dict[str, list[dict[str, Any]]], bar: Any, every: int, seconds: float = 1.0):
        self.history, self.bar, self.every, self.seconds = history, bar, every, seconds
        self.rows: list[tuple[int, torch.Tensor, torch.Tensor, float]] = []
        self.last = time.monotonic()

    def add(self, step: int, loss: torch.Tensor, grad_norm: torch.Tensor, lr: float) -> None:
        self.rows.append((step, loss.detach(), grad_norm.detach(), lr))
        if len(self.rows) >= self.every or time.monotonic() - self.last > self.seconds:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        values = torch.stack([torch.stack([l.float(), g.float().to(l.device)]) for _, l, g, _ in self.rows]).tolist()
        rows, self.rows, self.last = self.rows, [], time.monotonic()
        for (step, _, _, lr), (loss, norm) in zip(rows, values):
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss is {loss} at step {step}; lower the learning rate")
            self.history["train"].append({"step": step + 1, "loss": loss, "grad_norm": norm, "lr": lr})
        self.bar.update(len(rows))
        self.bar.set_postfix(loss=f"{loss:.4f}")


def _update(
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    cfg: TrainConfig,
    entry_masks: Mapping[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """Clip (``cfg.grad_clip``), step the optimiser and the schedule, restore the frozen entries; the gradient's
    norm before clipping (a tensor on the device: read back later, :class:`_Readback`)."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    if cfg.grad_clip is not None:
        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
    else:
        norms = [p.grad.norm() for p in params if p.grad is not None]
        grad_norm = torch.linalg.vector_norm(torch.stack(norms)) if norms else torch.zeros(())
    kept = {p: p.detach()[~m].clone() for p, m in entry_masks.items()}
    optimizer.step()
    with torch.no_grad():
        for p, values in kept.items():
            p[~entry_masks[p]] = values
    scheduler.step()
    return grad_norm


def _write_checkpoint(
    out: Path, model: Model, optimizer: torch.optim.Optimizer, step: int, cfg: TrainConfig, history: dict
) -> Path:
    root = _checkpoint_dir(out)
    name = f"step-{step:08d}"
    path = root / name
    if path.exists():  # re-running a finished step (e.g. after a crash between write and pointer update)
        shutil.rmtree(path)
    save_checkpoint(
        path, model, optimizer=optimizer, step=step, state={"train_config": cfg.to_dict(), "history": history}
    )
    atomic_write_json(root / "latest.json", {"name": name, "step": step})
    kept = sorted(p for p in root.glob("step-*") if p.is_dir())
    for old in kept[: -cfg.keep_checkpoints]:
        shutil.rmtree(old, ignore_errors=True)
    return path


__all__ = [
    "Batch",
    "TrainConfig",
    "TrainResult",
    "build_optimizer",
    "latest_checkpoint",
    "lr_factor",
    "next_token_loss",
    "select_positions",
    "train",
]
