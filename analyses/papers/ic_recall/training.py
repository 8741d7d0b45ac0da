"""Fine-tuning on IC-recall (Huang, Nichani, Lee & Ge): the CoT loss of eq. (1), Adam (§5's experiments) and
Algorithm 1 (temperature-scaled perturbed gradient descent, §4), and pretraining the MLP (§5, Fig 4).

Every run goes through the one trainer (``mechrecall.trainer.train``) with a custom ``loss_fn``; the data
is the full fine-tuning set D every step (full batch). The model is either the TransformerLens model of
:mod:`.model` (any mode) or its closed-form partial-mode twin :class:`.model.AnalyticICRecall` (the fast
path: same parameters θ, ω, same losses, same numbers up to float rounding).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from analyses.papers.ic_recall.model import AnalyticICRecall, scores, set_scores
from analyses.papers.ic_recall.task import ICRecallData, ICRecallTask, check_temperature
from analyses.papers.ic_recall.task import check_sample_count as check_spec_samples
from mechrecall._tl import HookedTransformer
from mechrecall.batch import Batch
from mechrecall.trainer import TrainConfig, train

OPTIMIZERS = ("adam", "pgd")


@dataclass(frozen=True)
class FinetuneConfig:
    """One fine-tuning run. ``optimizer="adam"``: §5 (lr 1e-3 in the paper); ``"pgd"``: Algorithm 1 with
    η1 = c_eta1·T^1.5·ln(1/T), η2 = c_eta2·T², ξ uniform in the ball of radius c_radius·T³/ln²(1/δ)."""

    T: float = 0.05
    optimizer: str = "adam"
    lr: float = 1e-3
    steps: int = 3000
    perturb_std: float = 1e-3
    # Algorithm 1
    t1: int = 1
    t2: int = 2000
    delta: float = 0.1
    c_eta1: float = 1.0
    c_eta2: float = 1.0
    c_radius: float = 1.0
    log_every: int = 0
    seed: int = 0

    def validate(self) -> None:
        check_temperature(self.T)
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r}; expected one of {OPTIMIZERS}")
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr!r}; expected > 0")
        for name in ("steps", "t1", "t2"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected >= 0")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta={self.delta!r}; expected in (0, 1)")

    @property
    def eta1(self) -> float:
        return self.c_eta1 * self.T**1.5 * math.log(1 / self.T)

    @property
    def eta2(self) -> float:
        return self.c_eta2 * self.T**2

    @property
    def radius(self) -> float:
        return self.c_radius * self.T**3 / math.log(1 / self.delta) ** 2


def check_sample_count(task: ICRecallTask, N: int) -> None:
    """``N`` must not exceed the number of distinct sequences (a clear error naming it)."""
    check_spec_samples(task.spec, N)


def make_batch(task: ICRecallTask, data: ICRecallData, analytic: bool) -> Batch:
    """The trainer's batch: tokens, r* as targets; the analytic path's precomputed match tensors in extras."""
    extras: dict[str, Any] = {"answer": data.answer}
    if analytic:
        extras["M"] = task.matches(data).double().flatten(2)
        extras["hit"] = F.one_hot(task.rel[data.relation[:, None], data.subjects], task.n).double()
    return Batch(data.tokens, data.relation, extras=extras)


def step_logits(
    model: torch.nn.Module,
    task: ICRecallTask,
    data: ICRecallData,
    relation: torch.Tensor | None = None,
    *,
    chunk: int = 4096,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(relation logits ``[B, m]`` at EoS, answer logits ``[B, n]`` with ``relation`` (default r*) appended)."""
    if isinstance(model, AnalyticICRecall):
        return model.relation_logits(data), model.answer_logits(data, relation)
    tokens = (
        data.tokens if relation is None else torch.cat([data.tokens[:, :-1], task.relation_id(relation)[:, None]], 1)
    )
    rel, ans = [], []
    for start in range(0, len(tokens), chunk):
        logits = model(tokens[start : start + chunk].to(model.cfg.device))
        rel.append(logits[:, task.relation_pos, 2 * task.n : 2 * task.n + task.m])
        ans.append(logits[:, task.answer_pos, task.n : 2 * task.n])
    return torch.cat(rel), torch.cat(ans)


def cot_loss_fn(task: ICRecallTask, T: float) -> Callable[[torch.nn.Module, Batch], torch.Tensor]:
    """Eq. (1): L = L1 + L2, cross-entropies of the relation-masked / answer-masked logits over T (step 2
    conditioned on the true relation r*)."""

    def loss(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        if isinstance(model, AnalyticICRecall):
            rel = model.relation_logits(None, batch.extras["M"])  # type: ignore[arg-type]
            ans = model.answer_logits(None, hit=batch.extras["hit"])  # type: ignore[arg-type]
        else:
            logits = model(batch.tokens)
            rel = logits[:, task.relation_pos, 2 * task.n : 2 * task.n + task.m]
            ans = logits[:, task.answer_pos, task.n : 2 * task.n]
        return F.cross_entropy(rel / T, batch.targets) + F.cross_entropy(ans / T, batch.extras["answer"])

    return loss


def _score_trace(model: torch.nn.Module, k: int) -> dict[str, float]:
    theta, omega = (
        (model.theta.detach(), model.omega.detach()) if isinstance(model, AnalyticICRecall) else scores(model, k)
    )
    v, q = torch.softmax(theta.double(), -1), torch.softmax(omega.double(), -1)
    return {**{f"v{i + 1}": float(x) for i, x in enumerate(v)}, **{f"q{i + 1}": float(x) for i, x in enumerate(q)}}


def finetune(
    model: torch.nn.Module,
    task: ICRecallTask,
    data: ICRecallData,
    cfg: FinetuneConfig,
    *,
    init: tuple[torch.Tensor, torch.Tensor] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Fine-tune ``model`` in place on D = ``data`` (full batch); returns the trainer's history (+ v, q traces).

    ``init``: θ0, ω0 written into the position–position block before training (Algorithm 1 starts at 0; a
    seeded perturbation of ``perturb_std`` is the default for Adam). Frozen entries never move.
    """
    cfg.validate()
    analytic = isinstance(model, AnalyticICRecall)
    if init is not None:
        if analytic:
            with torch.no_grad():
                model.theta.copy_(init[0]), model.omega.copy_(init[1])
        else:
            set_scores(model, *init)
    batch = make_batch(task, data, analytic)
    loss = cot_loss_fn(task, cfg.T)
    evals = {"attn": lambda m: _score_trace(m, task.k)} if cfg.log_every else None
    if cfg.optimizer == "adam":
        tc = TrainConfig(
            steps=cfg.steps, optimizer="adam", lr=cfg.lr, eval_every=cfg.log_every, seed=cfg.seed, progress=progress
        )
        return train(model, lambda step, gen: batch, tc, loss_fn=loss, evals=evals).history
    # Algorithm 1: stage 1 (t1 GD steps at η1), perturbation ξ ~ U(ball), stage 2 (t2 GD steps at η2).
    stage1 = TrainConfig(
        steps=cfg.t1, optimizer="sgd", lr=cfg.eta1, eval_every=cfg.log_every, seed=cfg.seed, progress=progress
    )
    h1 = train(model, lambda step, gen: batch, stage1, loss_fn=loss, evals=evals).history
    after_stage1 = _score_trace(model, task.k)
    _perturb(model, task.k, cfg.radius, cfg.seed)
    stage2 = TrainConfig(
        steps=cfg.t2, optimizer="sgd", lr=cfg.eta2, eval_every=cfg.log_every, seed=cfg.seed + 1, progress=progress
    )
    h2 = train(model, lambda step, gen: batch, stage2, loss_fn=loss, evals=evals).history
    return {"stage1": h1, "after_stage1": after_stage1, "train": h2["train"], "eval": h2["eval"]}


def _perturb(model: torch.nn.Module, k: int, radius: float, seed: int) -> None:
    """Add ξ ~ Uniform(Ball(0, radius)) jointly over (θ, ω) ∈ R^{4k+5} (Algorithm 1, stage 2)."""
    g = torch.Generator().manual_seed(15_485_863 * seed + 5)
    dim = 4 * k + 5
    direction = torch.randn(dim, generator=g, dtype=torch.float64)
    xi = direction / direction.norm() * radius * torch.rand((), generator=g, dtype=torch.float64) ** (1 / dim)
    if isinstance(model, AnalyticICRecall):
        with torch.no_grad():
            model.theta += xi[: 2 * k + 2].to(model.theta.dtype)
            model.omega += xi[2 * k + 2 :].to(model.omega.dtype)
    else:
        theta, omega = scores(model, k)
        set_scores(model, theta.double() + xi[: 2 * k + 2], omega.double() + xi[2 * k + 2 :])


@dataclass(frozen=True)
class PretrainConfig:
    """Pretraining the whole transformer on (u1, u2) -> third element of a fact (§5): full-vocabulary
    cross-entropy at temperature ``T`` read at position 1, full batch over all 6nm pairs, AdamW."""

    steps: int = 2000
    lr: float = 1e-2
    weight_decay: float = 0.1
    T: float = 1.0
    seed: int = 0


def pretrain(
    model: HookedTransformer, task: ICRecallTask, cfg: PretrainConfig, progress: bool = False
) -> dict[str, Any]:
    """Pretrain W^KQ and the MLP of a ``mode="pretrain"`` model in place; returns history with recall accuracy."""
    tokens, targets = task.pretraining_population()
    batch = Batch(tokens, targets)

    def loss(m: torch.nn.Module, b: Batch) -> torch.Tensor:
        return F.cross_entropy(m(b.tokens)[:, 1] / cfg.T, b.targets)

    def recall(m: torch.nn.Module) -> float:
        pred = m(tokens)[:, 1].argmax(-1)
        ok = pred == targets
        # (s, a) -> r: any relation mapping s to a is correct
        is_rel = (targets >= 2 * task.n) & (targets < 2 * task.n + task.m)
        s = torch.where(tokens[:, 0] < task.n, tokens[:, 0], tokens[:, 1])
        a = torch.where(tokens[:, 0] < task.n, tokens[:, 1], tokens[:, 0]) - task.n
        r_pred = (pred - 2 * task.n).clamp(0, task.m - 1)
        alt = (pred >= 2 * task.n) & (pred < 2 * task.n + task.m) & (task.rel[r_pred, s.clamp(0, task.n - 1)] == a)
        return float((torch.where(is_rel, alt, ok)).double().mean())

    tc = TrainConfig(
        steps=cfg.steps,
        optimizer="adamw",
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        eval_every=max(1, cfg.steps // 4),
        seed=cfg.seed,
        progress=progress,
    )
    return train(model, lambda step, gen: batch, tc, loss_fn=loss, evals={"recall": recall}).history
