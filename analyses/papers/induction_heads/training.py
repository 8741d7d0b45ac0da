"""Training runs of the paper, all through the one trainer (``mechrecall.trainer.train``).

- :func:`train_disentangled`: SGD on the disentangled transformer (App. C/D: Gaussian data, mean-reduced
  MSE; App. F: orthonormal data, query = last pair), all weights or only a chosen set of
  pseudo-parameters (gradients projected on their span, Fig. 4 bottom). Logs all 19 pseudo-parameters
  and the off-subspace residual every ``log_every`` steps.
- :func:`train_standard`: AdamW on the §2 model, Task A (App. E), with evaluation callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from analyses.papers.induction_heads.data import make_continuous_icl_batch, make_token_icl_batch
from analyses.papers.induction_heads.models import (
    build_disentangled,
    mse,
    standard_loss,
    standard_model,
    wrap_disentangled,
)
from analyses.papers.induction_heads.subspace import (
    check_names,
    project_gradients_to_span,
    pseudo_parameters,
    subspace_residual,
)
from mechrecall.batch import Batch
from mechrecall.trainer import TrainConfig, TrainResult, train


@dataclass(frozen=True)
class DisentangledRun:
    """One SGD run of the disentangled transformer."""

    dim: int = 16
    n_pairs: int = 8
    batch_size: int = 512
    lr: float = 1.0
    steps: int = 100
    data: str = "gaussian"  # "gaussian" (eq. 5) | "orthonormal" (Assumption 7)
    query: str = "uniform"  # "uniform" (eq. 5) | "last" (Assumption 8)
    loss: str = "mean"  # "mean": F.mse_loss | "sum": ‖y − z‖² per sequence
    variance: float = 1.0  # of the Gaussian coordinates
    trainable: tuple[str, ...] | None = None  # None: every weight; else only these pseudo-parameters
    exclude_self: bool = True
    init_std: float = 0.0
    log_every: int = 5
    snapshot_steps: tuple[int, ...] = ()  # also keep the full weights at these steps (Figs. 6–14)
    seed: int = 0

    def validate(self) -> None:
        if self.data == "orthonormal" and self.n_pairs > self.dim // 2:
            raise ValueError(f"n_pairs={self.n_pairs} > dim/2 = {self.dim // 2}: orthonormal data needs D >= 2N")
        if self.trainable is not None:
            check_names(self.trainable)
        for name in ("batch_size", "steps", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected >= 1")


@dataclass
class DisentangledResult:
    model: object  # DisentangledTL
    history: list[dict]  # rows: step, loss (train, this step), 19 pseudo-parameters, residual
    train_loss: list[dict]
    snapshots: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    config: dict


def disentangled_batch_fn(run: DisentangledRun) -> Callable[[int, torch.Generator], Batch]:
    def batch_fn(step: int, gen: torch.Generator) -> Batch:
        X, y, q = make_continuous_icl_batch(
            run.batch_size, run.n_pairs, run.dim, query=run.query, dist=run.data, variance=run.variance, generator=gen
        )
        return Batch(X, y, extras={"query_index": q})

    return batch_fn


def train_disentangled(
    run: DisentangledRun, *, out_dir: str | Path | None = None, progress: bool = False, device: str | None = None
) -> DisentangledResult:
    """SGD (no momentum, no weight decay) from zero init; see :class:`DisentangledRun`."""
    run.validate()
    dtl = build_disentangled(run.dim, run.n_pairs, exclude_self=run.exclude_self, init_std=run.init_std, seed=run.seed)
    if device:
        dtl.model.to(device)
    handles = project_gradients_to_span(dtl, run.trainable) if run.trainable is not None else []
    weights_log: list[tuple] = []

    def probe(model) -> dict[str, float]:
        W = wrap_disentangled(model).weights()
        if run.snapshot_steps:
            weights_log.append(W)
        row = pseudo_parameters(*W)
        row["residual"] = subspace_residual(*W)
        return row

    tc = TrainConfig(
        steps=run.steps,
        optimizer="sgd",
        lr=run.lr,
        momentum=0.0,
        weight_decay=0.0,
        eval_every=run.log_every,
        eval_steps=tuple(run.snapshot_steps),
        seed=run.seed,
        progress=progress,
        checkpoint_every=max(run.steps // 4, 1) if out_dir else 0,
    )

    def loss_fn(model, batch: Batch) -> torch.Tensor:
        return mse(dtl.forward(batch.tokens), batch.targets, run.loss)

    try:
        result: TrainResult = train(
            dtl.model, disentangled_batch_fn(run), tc, loss_fn=loss_fn, evals={"pp": probe}, out_dir=out_dir
        )
    finally:
        for h in handles:
            h.remove()
    # The probe ran once per eval row of this invocation (the last rows, after a resume).
    logged = result.history["eval"][len(result.history["eval"]) - len(weights_log) :]
    snapshots = {r["step"]: W for r, W in zip(logged, weights_log) if r["step"] in run.snapshot_steps}
    rows = []
    train_loss = {r["step"]: r["loss"] for r in result.history["train"]}
    for r in result.history["eval"]:
        row = {"step": r["step"], "loss": train_loss.get(r["step"])}
        row.update({k.removeprefix("pp."): v for k, v in r.items() if k.startswith("pp.")})
        rows.append(row)
    return DisentangledResult(dtl, rows, result.history["train"], snapshots, asdict(run))


# ------------------------------------------------------------------------------------------- standard model


@dataclass(frozen=True)
class StandardRun:
    """App. E: AdamW(lr 1e-3, weight decay 0.01), 512 sequences per step, 300 steps, D = 2048."""

    d_model: int = 2048
    n_pairs: int = 8
    vocab: int = 32
    block: int = 32
    batch_size: int = 512
    steps: int = 300
    lr: float = 1e-3
    weight_decay: float = 0.01
    eval_every: int = 25
    seed: int = 0

    def validate(self) -> None:
        if 2 * self.n_pairs + 1 > self.block:
            raise ValueError(
                f"n_pairs={self.n_pairs}: the sequence 2N+1 = {2 * self.n_pairs + 1} is longer than "
                f"n_ctx = {self.block}"
            )
        if 2 * self.n_pairs > self.vocab:
            raise ValueError(
                f"n_pairs={self.n_pairs}: 2N = {2 * self.n_pairs} distinct tokens exceed vocab={self.vocab}"
            )


def train_standard(
    run: StandardRun,
    *,
    evals: Mapping[str, Callable] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = False,
    device: str | None = None,
) -> TrainResult:
    """Train the §2 model on Task A with random position offsets; loss on the query position only."""
    run.validate()
    model = standard_model(run.d_model, run.block, run.vocab, seed=run.seed)
    if device:
        model.to(device)

    def batch_fn(step: int, gen: torch.Generator) -> Batch:
        return make_token_icl_batch(run.batch_size, run.n_pairs, run.vocab, run.block, True, gen).as_batch()

    tc = TrainConfig(
        steps=run.steps,
        optimizer="adamw",
        lr=run.lr,
        weight_decay=run.weight_decay,
        eval_every=run.eval_every,
        seed=run.seed,
        progress=progress,
        checkpoint_every=max(run.steps // 4, 1) if out_dir else 0,
    )
    return train(model, batch_fn, tc, loss_fn=standard_loss, evals=evals, out_dir=out_dir)
