"""Train and measure (Huang, Nichani, Lee & Ge): every function returns numbers, never claims or figures.

* Fine-tuning: the CoT loss of eq. (1), Adam (§5's experiments) and Algorithm 1 (temperature-scaled perturbed
  gradient descent, §4); pretraining the MLP (§5, Fig 4). Every run goes through the one trainer
  (``mechrecall.trainer.train``) with a custom ``loss_fn``; the data is the full fine-tuning set D every step
  (full batch). The model is either the TransformerLens model of :mod:`.models` (any mode) or its closed-form
  partial-mode twin :class:`.models.AnalyticICRecall` (the fast path: same parameters θ, ω, same losses, same
  numbers up to float rounding).
* Sweeps: independent runs ("cells", :class:`.presets.Cell`), each a task of an executor of the core
  (:mod:`mechrecall.executors`: ``--workers`` local processes, or a Ray cluster / Slurm handed in), resumable: the
  driver writes each finished cell atomically to ``<out>/<cell.key>.json`` and a rerun skips it. Partial mode
  trains the fast path; ``full`` mode the TransformerLens model's whole W^KQ.
* The parts' runs: :func:`exact_checks`, :func:`pattern_run`, :func:`sample_complexity_run`,
  :func:`algorithm1_run`, :func:`pretrained_mlp_run` (results dictionaries; the claims table reads them).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from analyses.papers.ic_recall.data import ICRecallData, ICRecallSpec, ICRecallTask, check_temperature
from analyses.papers.ic_recall.data import check_sample_count as check_spec_samples
from analyses.papers.ic_recall.metrics import (
    accuracy,
    closed_form_check,
    cross_term_sizes,
    eos_tie_check,
    pattern_stats,
    pretrained_mlp_pattern,
    readout_check,
    tl_readout,
)
from analyses.papers.ic_recall.models import (
    AnalyticICRecall,
    build_model,
    cancel_cross_terms,
    initial_scores,
    scores,
    set_scores,
)
from analyses.papers.ic_recall.presets import Cell, Fig3, PretrainedMLP, SampleComplexity, trial_seeds
from analyses.papers.ic_recall.theory import min_samples, n3_pairwise_optimum, polylog_fit
from mechrecall._tl import HookedTransformer, load_tl_state_dict, tl_state_dict, weight
from mechrecall.batch import Batch
from mechrecall.claims import spread_of
from mechrecall.executors import Executor, Failure, Task, run_tasks
from mechrecall.executors.local import LocalExecutor
from mechrecall.io import atomic_write_json
from mechrecall.seeds import derive_seed
from mechrecall.trainer import TrainConfig, train
from mechrecall.typed import NotApplicable, NotRun

OPTIMIZERS = ("adam", "pgd")
#: the random streams of one seed: the fine-tuning samples D, the test set, Algorithm 1's perturbation ξ
TRAIN_DATA, TEST_DATA, PERTURBATION = 1, 2, 3


def stream(seed: int, which: int) -> torch.Generator:
    """The generator of one random stream (``TRAIN_DATA``, ``TEST_DATA``, ``PERTURBATION``) of ``seed``, by the
    core's derivation (:func:`mechrecall.seeds.derive_seed`), as the trainer derives its batches' seeds."""
    return torch.Generator().manual_seed(derive_seed(seed, which))


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
    g = stream(seed, PERTURBATION)
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


# ----------------------------------------------------------------------------------------- sweeps


def run_cell(cell: Cell) -> dict[str, Any]:
    """Fine-tune and evaluate one cell (module level: picklable for an executor's worker). Single-threaded torch."""
    torch.set_num_threads(1)
    started = time.perf_counter()
    task = ICRecallTask(ICRecallSpec(cell.n, cell.m, cell.k, cell.family, cell.seed))
    check_sample_count(task, cell.N)
    data = task.sample(cell.N, stream(cell.seed, TRAIN_DATA))
    test = task.population(cell.test_size, stream(cell.seed, TEST_DATA))
    model: torch.nn.Module
    if cell.mode == "partial":
        model = AnalyticICRecall(task)
    else:
        model = build_model(task.spec, cell.mode, dtype="float32", seed=cell.seed)
    cfg = FinetuneConfig(
        T=cell.T,
        optimizer=cell.optimizer,
        lr=cell.lr,
        steps=cell.steps,
        t2=cell.steps,
        perturb_std=cell.perturb_std,
        seed=cell.seed,
    )
    init = initial_scores(cell.k, cell.perturb_std if cell.optimizer == "adam" else 0.0, cell.seed)
    history = finetune(model, task, data, cfg, init=init)
    acc = accuracy(model, task, test, cell.T)
    if isinstance(model, AnalyticICRecall):
        theta, omega = model.theta.detach(), model.omega.detach()
    else:
        theta, omega = scores(model, cell.k)
    return {
        **dataclasses.asdict(cell),
        **acc,
        "bayes_ceiling_exact": task.bayes_ceiling(),
        "v": torch.softmax(theta.double(), -1).tolist(),
        "q": torch.softmax(omega.double(), -1).tolist(),
        "final_loss": history["train"][-1]["loss"] if history["train"] else None,
        "after_stage1": history.get("after_stage1"),
        "seconds": time.perf_counter() - started,
    }


def cell_task(cell: Cell) -> Task:
    """The executor's task of one cell: :func:`run_cell`; its rough cost orders the cells (longest first)."""
    cost = cell.steps * (20.0 if cell.mode != "partial" else 1.0) / 1000  # the fast path is ~20x a TL model's
    return Task(cell.key, run_cell, (cell,), seconds=cost, cpus=1)


def run_cells(
    cells: Sequence[Cell],
    out_dir: str | os.PathLike,
    *,
    workers: int = 2,
    executor: Executor | None = None,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run every cell not already finished in ``out_dir``; return (results in ``cells`` order, info).

    The cells are tasks of ``executor`` (default: ``workers`` local processes; one worker runs them here, in this
    process); each finished cell is written here as it arrives. ``info``: ``skipped`` (finished earlier), ``ran``,
    ``workers``, ``seconds`` (wall time of this call). A cell that fails is named in a ``RuntimeError`` after the
    others finished (they are kept)."""
    from tqdm.auto import tqdm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    todo: list[Cell] = []
    for cell in cells:
        path = out / f"{cell.key}.json"
        if path.is_file():
            results[cell.key] = json.loads(path.read_text())
        elif cell not in todo:
            todo.append(cell)
    skipped = len(results)
    started = time.perf_counter()
    bar = tqdm(total=len(todo), disable=not progress, desc="cells", dynamic_ncols=True)

    def finish(key: str, row: dict[str, Any]) -> None:
        atomic_write_json(out / f"{key}.json", row)
        results[key] = row
        bar.update(1)

    if executor is None and (workers == 1 or len(todo) <= 1):
        for cell in todo:
            finish(cell.key, run_cell(cell))
        capacity = 1
    else:
        capacity = _run_on(executor or LocalExecutor(workers), todo, finish)
    bar.close()
    seconds = time.perf_counter() - started
    if say and todo:
        say(f"{len(todo)} cells in {seconds:.1f} s with {capacity} worker(s); {skipped} finished earlier, skipped")
    info = {"skipped": skipped, "ran": len(todo), "workers": capacity, "seconds": seconds}
    return [results[c.key] for c in cells], info


def _run_on(executor: Executor, cells: Sequence[Cell], finish: Callable[[str, dict[str, Any]], None]) -> int:
    """Run ``cells`` as tasks of ``executor`` (closed after), ``finish`` each row as it arrives; the executor's
    capacity. Raises ``RuntimeError`` naming the first cell that failed."""

    def on_event(kind: str, task: Task | None, outcome: Any) -> None:
        if kind == "done" and task is not None:
            finish(task.id, outcome)

    with executor:
        capacity = executor.capacity()
        outcomes = run_tasks(executor, [cell_task(c) for c in cells], on_event=on_event)
    failed = {key: o for key, o in outcomes.items() if isinstance(o, Failure)}
    if failed:
        key, failure = next(iter(failed.items()))
        raise RuntimeError(f"{len(failed)} cell(s) failed; {key}: {failure.reason}")
    return capacity


@dataclass(frozen=True)
class Sweep:
    """Where and how a part runs its cells: its folder, worker processes (or another executor), a progress bar, a
    log line."""

    out: Path
    workers: int = 2
    progress: bool = False
    say: Callable[[str], None] | None = None
    executor: Executor | None = None

    def run(self, cells: Sequence[Cell]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        return run_cells(
            cells, self.out, workers=self.workers, executor=self.executor, progress=self.progress, say=self.say
        )


def spread(values: Iterable[float]) -> list[float]:
    """``[min, max]`` of a claim's number over the trials it summarises (a results entry its claim shows)."""
    return list(spread_of(list(values)))


# ----------------------------------------------------------------------------------------- exact


def fast_path_check(seed: int, steps: int) -> tuple[float, float]:
    """Train the fast path and the TL model (float64, n = 8, m = 64, N = 8) ``steps`` Adam steps from the same
    start: the max |difference| of their final θ, ω; and the same against the fast path stopped one step early
    (the control: other parameters, which the comparison must tell apart)."""
    task = ICRecallTask(ICRecallSpec(8, 64, 2, "random", seed))
    data = task.sample(8, torch.Generator().manual_seed(1))
    ft = FinetuneConfig(T=0.05, lr=1e-2, steps=steps)
    init = initial_scores(2, 1e-3, seed)
    tl = build_model(task.spec, "partial", dtype="float64", seed=seed)
    finetune(tl, task, data, ft, init=init)
    theta, omega = scores(tl, 2)
    diffs = []
    for n_steps in (steps, steps - 1):
        fast = AnalyticICRecall(task)
        finetune(fast, task, data, replace(ft, steps=n_steps), init=init)
        diffs.append(float(max((theta - fast.theta.detach()).abs().max(), (omega - fast.omega.detach()).abs().max())))
    return diffs[0], diffs[1]


def exact_checks(seed: int, with_affine: bool, fast_path_steps: int) -> dict[str, Any]:
    """The construction against its closed forms (float64) on two tasks (three ``with_affine``), the memory's
    read-out, the tie at EoS, the confusing gap, the exact Bayes ceiling, and the fast path's training."""
    specs = [ICRecallSpec(3, 6, 2, "all_bijections", seed), ICRecallSpec(8, 64, 2, "random", seed)]
    if with_affine:
        specs.append(ICRecallSpec(7, 30, 3, "affine", seed))
    g = torch.Generator().manual_seed(seed)
    rows = [closed_form_check(spec, seed, g) for spec in specs]
    readout = readout_check(specs[1], seed)
    ties = eos_tie_check(specs[0], seed, g)
    fast, fast_control = fast_path_check(seed, fast_path_steps)
    measured = {
        **_construction_measures(rows),
        "readout_error": readout["error"],
        "no_cot_answers_tie": ties["tie_spread"],
        "no_cot_accuracy": ties["no_cot_accuracy"],
        "confusing_gap": ties["gap_error"],
        "fast_path_steps": fast_path_steps,
        "fast_path_same_parameters": fast,
    }
    control = {
        **_construction_measures([r["control"] for r in rows]),
        "readout_error": readout["control_error"],
        "no_cot_answers_tie": ties["control_tie_spread"],
        "confusing_gap": ties["control_gap_error"],
        "fast_path_same_parameters": fast_control,
    }
    ceiling = {  # exact = enumerated population (a unit test checks it; kept here as a record)
        "bayes_ceiling_exact": max(
            abs(r["bayes_ceiling_exact"] - r["bayes_ceiling_population"])
            for r in rows
            if r["bayes_ceiling_population"] is not None
        )
    }
    return {"tasks": rows, "readout_values": readout["values"], **ceiling, **measured, "control": control}


def _construction_measures(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The construction's identities over the tasks (``rows``: :func:`.metrics.closed_form_check`'s, or their
    ``control`` entries): the largest closed-form differences, the smallest memory recall."""
    return {
        "closed_form_relation_logits": max(r["max_abs_diff_relation_logits"] for r in rows),
        "closed_form_answer_logits": max(r["max_abs_diff_answer_logits"] for r in rows),
        "partial_pattern_is_softmax_theta": max(r["max_abs_diff_partial_pattern"] for r in rows),
        "memory_recall": min(min(r["memory_recall"].values()) for r in rows),
    }


# --------------------------------------------------------------------------------------- pattern


def _rows_of(rows: Sequence[dict[str, Any]], cells: Sequence[Cell]) -> list[dict[str, Any]]:
    keys = {c.key for c in cells}
    fields = [f.name for f in dataclasses.fields(Cell)]
    return [r for r in rows if Cell(**{f: r[f] for f in fields}).key in keys]


def _pattern_summary(k: int, rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    stats = pattern_stats(torch.tensor([r["v"] for r in rs], dtype=torch.float64), k)
    keys = ("acc_relation_exact", "bayes_ceiling", "bayes_ceiling_exact", "acc_answer_teacher_forced")
    summary: dict[str, Any] = {key: [r[key] for r in rs] for key in keys}
    summary.update(acc_final=[r["acc_final"] for r in rs], answer_ceiling=[r["answer_ceiling"] for r in rs])
    return {**summary, **stats}


def _n3_measures(cfg: Cell, rs: Sequence[dict[str, Any]], summary: dict[str, Any], readout: dict) -> dict[str, Any]:
    """Config A (n = 3, Theorem 4.2): the pair weight a against a*(T), within-pair (alone and over the across-pair
    difference) and rest maxima, first step; the TL model against the fast path (``readout``)."""
    a = [min(r["v"][0] + r["v"][1], r["v"][2] + r["v"][3]) / 2 for r in rs]
    ratio = [w / max(x, 1e-300) for w, x in zip(summary["within"], summary["across"])]
    return {
        "config": dataclasses.asdict(cfg),
        "a_star": n3_pairwise_optimum(cfg.T),
        "pair_weight": statistics.mean(a),
        "pair_weight_spread": spread(a),
        "within_max": max(summary["within"]),
        "within_spread": spread(summary["within"]),
        "within_over_across_max": max(ratio),
        "within_over_across_spread": spread(ratio),
        "rest_max": max(summary["rest"]),
        "rest_spread": spread(summary["rest"]),
        "first_step_min": min(summary["acc_relation_exact"]),
        "first_step_spread": spread(summary["acc_relation_exact"]),
        "tl_logit_diff": readout["max_logit_diff_tl_vs_fast"],
    }


def _fig2_measures(cfg: Cell, rs: Sequence[dict[str, Any]], summary: dict[str, Any], readout: dict) -> dict:
    """Configs B, C (Fig 2): the first step against its ceiling, the second step, end to end, the pattern."""
    acc1, ceil = summary["acc_relation_exact"], summary["bayes_ceiling"]
    exact_ceil = summary["bayes_ceiling_exact"]
    qarg = [int(torch.tensor(r["q"]).argmax()) == 2 * cfg.k for r in rs]
    return {
        "config": dataclasses.asdict(cfg),
        "first_step_gap": max(abs(a - c) for a, c in zip(acc1, ceil)),
        "first_step_spread": spread(acc1),
        "acc1_mean": statistics.mean(acc1),
        "ceiling_mean": statistics.mean(ceil),
        "first_step_consistent": min(r["acc_relation_consistent"] for r in rs),
        "second_step": min(summary["acc_answer_teacher_forced"]),
        "second_step_spread": spread(summary["acc_answer_teacher_forced"]),
        "end_to_end_vs_ceiling": statistics.mean(r["acc_final"] - r["answer_ceiling"] for r in rs),
        "end_to_end_spread": spread(r["acc_final"] - r["answer_ceiling"] for r in rs),
        "acc_final_mean": statistics.mean(r["acc_final"] for r in rs),
        "answer_ceiling_mean": statistics.mean(r["answer_ceiling"] for r in rs),
        "pairwise_share": sum(summary["pairwise"]) / len(rs),
        "within_mean": statistics.mean(summary["within"]),
        "across_mean": statistics.mean(summary["across"]),
        "rest_mean": statistics.mean(summary["rest"]),
        "query_share": sum(qarg) / len(qarg),
        "ceiling_half_range": (max(exact_ceil) - min(exact_ceil)) / 2,
        "ceiling_spread": spread(exact_ceil),
        "tl_logit_diff": readout["max_logit_diff_tl_vs_fast"],
        "tl_acc": readout["acc_tl"]["acc_relation_exact"],
        "fast_acc": readout["acc_fast"]["acc_relation_exact"],
        "tl_seed": rs[0]["seed"],
        "tl_seeds": [rs[0]["seed"]],
    }


def _readout(cell: Cell, row: dict[str, Any]) -> dict[str, Any]:
    """:func:`.metrics.tl_readout` of one finished cell (its learned θ, ω, its test set)."""
    task = ICRecallTask(ICRecallSpec(cell.n, cell.m, cell.k, cell.family, cell.seed))
    theta = torch.log(torch.tensor(row["v"], dtype=torch.float64))
    omega = torch.log(torch.tensor(row["q"], dtype=torch.float64))
    test = task.population(cell.test_size, stream(cell.seed, TEST_DATA))
    return tl_readout(task, theta, omega, cell.T, test)


ABSENT_CONFIG = {
    "A": "config A is not in this preset",
    "B": "config B is not in this preset",
    "C": "config C (3-ICL) runs at --preset paper only, without --n/--m/--k/--family/--temperature/--samples",
}


def pattern_cells(configs: Mapping[str, Cell], seeds: Sequence[int]) -> list[Cell]:
    """Fig 2's cells: every config × seed, then the same at step 0 (the controls)."""
    trained = [replace(cfg, seed=s) for cfg in configs.values() for s in seeds]
    return trained + [replace(c, steps=0) for c in trained]


def pattern_run(configs: Mapping[str, Cell], seeds: Sequence[int], sweep: Sweep) -> dict[str, Any]:
    """Fig 2: partial fine-tuning (Adam) with the constructed MLP, every config × seed; per config the summary,
    the TL read-out of the first seed and the numbers its claims read (``configs/<name>``), with the same numbers
    at step 0 of the same seeds (``configs/<name>/control``: θ0, ω0 ~ N(0, perturb_std²), attention ≈ uniform)."""
    rows, info = sweep.run(pattern_cells(configs, seeds))
    results: dict[str, Any] = {"cells": rows, "sweep": info, "seeds": list(seeds), "configs": {}, "panels": []}
    for name in ("A", "B", "C"):
        if name not in configs:
            results["configs"][name] = NotApplicable(not_applicable=ABSENT_CONFIG[name])
            continue
        cfg = configs[name]
        rs = _rows_of(rows, [replace(cfg, seed=s) for s in seeds])
        at_init = _rows_of(rows, [replace(cfg, seed=s, steps=0) for s in seeds])
        label = f"{name}: n={cfg.n}, m={cfg.m}, {cfg.k}-ICL, T={cfg.T:g} (seed {seeds[0]})"
        results["panels"].append({"label": label, "k": cfg.k, "v": rs[0]["v"], "q": rs[0]["q"]})
        summary = results[f"summary_{name}"] = _pattern_summary(cfg.k, rs)
        readout = results[f"tl_readout_{name}"] = _readout(replace(cfg, seed=seeds[0]), rs[0])
        measures = _n3_measures if name == "A" else _fig2_measures
        results["configs"][name] = measures(cfg, rs, summary, readout)
        control = measures(cfg, at_init, _pattern_summary(cfg.k, at_init), readout)
        # the TL-vs-fast-path comparison's control: the TL model's memory perturbed (.metrics.perturb_memory)
        control["tl_logit_diff"] = readout["max_logit_diff_perturbed_vs_fast"]
        results["configs"][name]["control"] = control
    a = results["configs"]["A"]
    results["a_star"] = a["a_star"] if isinstance(a, dict) else None
    return results


# ---------------------------------------------------------------------------------- sample complexity


def mean_by(rows: Sequence[dict[str, Any]], metric: str = "acc_relation_exact") -> dict[int, dict[int, float]]:
    """``{n: {N: mean of metric over seeds}}``."""
    out: dict[int, dict[int, list[float]]] = {}
    for r in rows:
        out.setdefault(r["n"], {}).setdefault(r["N"], []).append(r[metric])
    return {n: {N: statistics.mean(v) for N, v in d.items()} for n, d in out.items()}


def sample_complexity_cells(cfg: SampleComplexity, seed: int) -> dict[str, list[Cell]]:
    """Fig 3's cells under ``--seed``: ``affine`` (partial mode), ``full`` (full W^KQ), ``fig3`` (random, m fixed)."""
    affine = [
        Cell(n=n, m=n * (n - 1) // 2, N=N, seed=s, family="affine", lr=cfg.lr, steps=cfg.steps)
        for n in cfg.affine_n
        for N in cfg.N
        for s in trial_seeds(cfg.seeds, seed)
    ]
    full = [
        Cell(n=n, m=n * (n - 1) // 2, N=N, seed=s, family="affine", mode="full", lr=1e-3, steps=cfg.full_steps)
        for n in cfg.full_n
        for N in cfg.full_N
        for s in trial_seeds(cfg.full_seeds, seed)
    ]
    f = cfg.fig3
    fig3 = (
        [
            Cell(n=n, m=f.m, N=N, seed=s, family="random", lr=f.lr, steps=f.steps)
            for n in f.n
            for N in f.N
            for s in trial_seeds(f.seeds, seed)
        ]
        if f is not None
        else []
    )
    return {"affine": affine, "full": full, "fig3": fig3, **_untrained_cells(affine, full, fig3)}


def _untrained_cells(affine: list[Cell], full: list[Cell], fig3: list[Cell]) -> dict[str, list[Cell]]:
    """The claims' controls: each group's cells at step 0 from the symmetric start θ = ω = 0 (the 1e-3 noise that
    breaks the symmetry for Adam would alone decide the step-0 ties: the three answers r*(s1), r*(s2), r*(s3) tie
    at uniform attention, p2(a*) = 1/3), one cell per (n, seed); ``fig3`` at N = 8 only, the N its claim reads."""

    def at_init(cells: list[Cell]) -> list[Cell]:
        N = min((x.N for x in cells), default=0)
        return list({(c.n, c.seed): replace(c, steps=0, N=N, perturb_std=0.0) for c in cells}.values())

    return {
        "untrained_affine": at_init(affine),
        "untrained_full": at_init(full),
        "untrained_fig3": at_init([c for c in fig3 if c.N == 8]),
    }


def _affine_measures(cfg: SampleComplexity, ra: list[dict], r3: list[dict]) -> dict[str, Any]:
    """Identifiable relations: accuracy at N = 8, N* per n and its ratio, the growth of n·m, the second step."""
    curve = mean_by(ra)
    at8 = {n: d.get(8) for n, d in curve.items()}
    nm = [n * (n * (n - 1) // 2) for n in cfg.affine_n]
    n_star = min_samples(curve, dict.fromkeys(curve, 0.99))
    reached = all(v is not None for v in n_star.values())
    return {
        "affine_curve": curve,
        "affine_N_star": n_star,
        "affine_N8_accuracy": min(at8.values())  # type: ignore[type-var]
        if 8 in cfg.N
        else NotApplicable(not_applicable=f"N = 8 is not among this preset's sample sizes {list(cfg.N)}"),
        "affine_N8_accuracy_spread": spread(d[8] for d in curve.values()) if 8 in cfg.N else None,
        "affine_triplet_growth": nm[-1] / nm[0],
        "affine_Nstar_ratio": n_star[max(n_star)] / n_star[min(n_star)]  # type: ignore[operator]
        if reached
        else NotRun(not_run=f"accuracy 0.99 not reached for some n: N* = {n_star}"),
        "second_step_all_cells": min(r["acc_answer_teacher_forced"] for r in ra + r3),
        "second_step_all_cells_spread": spread(r["acc_answer_teacher_forced"] for r in ra + r3),
    }


def _untrained_measures(cfg: SampleComplexity, split: Mapping[str, list[dict]]) -> dict[str, Any]:
    """The claims' controls (``control/<claim>``): the same statistics on the untrained cells (step 0, same seeds);
    for the N* growth claims, n·m's own growth (a learner whose N* grows with the stored triplets)."""
    ua, uf, u3 = split["untrained_affine"], split["untrained_full"], split["untrained_fig3"]
    nm = {n: n * (n * (n - 1) // 2) for n in cfg.full_n}
    out: dict[str, Any] = {
        "affine_N8_accuracy": min(d[min(cfg.N)] for d in mean_by(ua).values()),
        "second_step_all_cells": min(r["acc_answer_teacher_forced"] for r in ua + u3),
        "full_mode_Nstar_growth": polylog_fit(list(nm), list(nm.values()))["slope_loglog_n"] if len(nm) >= 2 else None,
    }
    if uf:
        out["full_mode_second_step"] = min(
            d[min(cfg.full_N)] for d in mean_by(uf, "acc_answer_teacher_forced").values()
        )
    if u3 and cfg.fig3 is not None:
        ceiling = {n: statistics.mean(r["bayes_ceiling_exact"] for r in u3 if r["n"] == n) for n in cfg.fig3.n}
        out["fig3_N8_at_ceiling"] = max(ceiling[n] - d[8] for n, d in mean_by(u3).items())
    return out


def _full_measures(cfg: SampleComplexity, rf: list[dict]) -> dict[str, Any]:
    """Full W^KQ fine-tuning: N* per n, its fitted growth exponent, the second step at the largest N."""
    f_star = min_samples(mean_by(rf), dict.fromkeys(mean_by(rf), 0.99))
    reached = {n: s for n, s in f_star.items() if s is not None}
    fit = polylog_fit(list(reached), list(reached.values())) if len(reached) >= 2 else None
    second = mean_by(rf, metric="acc_answer_teacher_forced")
    top = max(cfg.full_N)
    at_top = {n: d[top] for n, d in second.items()}
    return {
        "full_curve": mean_by(rf),
        "full_N_star": f_star,
        "full_second_step": second,
        "full_fit": fit,
        "full_mode_Nstar_growth": fit["slope_loglog_n"]
        if fit is not None
        else NotRun(not_run=f"N* reached for fewer than 2 values of n: {f_star}"),
        "full_top_N": top,
        "full_second_step_at_top": at_top,
        "full_mode_second_step": min(at_top.values())
        if rf
        else NotApplicable(not_applicable="no full-mode cells in this preset"),
        "full_mode_second_step_spread": spread(at_top.values()) if rf else None,
    }


def _fig3_measures(f: Fig3, r3: list[dict], seed: int) -> dict[str, Any]:
    """The paper's Fig 3 (random relations): curves, exact ceilings, spreads, the gap to the ceiling at N = 8."""
    curve3 = mean_by(r3)
    ceil3 = {n: statistics.mean(r["bayes_ceiling_exact"] for r in r3 if r["n"] == n) for n in f.n}
    std = {
        n: {N: statistics.pstdev([r["acc_relation_exact"] for r in r3 if r["n"] == n and r["N"] == N]) for N in f.N}
        for n in f.n
    }
    gap8 = max(ceil3[n] - curve3[n][8] for n in f.n)
    seeds = list(trial_seeds(f.seeds, seed))
    return {
        "fig3_curve": curve3,
        "fig3_ceiling": ceil3,
        "fig3_std": std,
        "fig3_N8_at_ceiling": gap8,
        "fig3_seeds": seeds,
    }


def sample_complexity_run(cfg: SampleComplexity, seed: int, sweep: Sweep) -> tuple[dict[str, Any], dict[str, list]]:
    """Fig 3: first-step accuracy vs N; N* against n. Returns (results, the rows of each group for the figures)."""
    groups = sample_complexity_cells(cfg, seed)
    rows, info = sweep.run([c for cells in groups.values() for c in cells])
    split, start = {}, 0
    for name, cells in groups.items():
        split[name], start = rows[start : start + len(cells)], start + len(cells)
    results: dict[str, Any] = {"cells": rows, "sweep": info, "settings": dataclasses.asdict(cfg)}
    results.update(affine_seeds=list(trial_seeds(cfg.seeds, seed)), full_seeds=list(trial_seeds(cfg.full_seeds, seed)))
    results.update(_affine_measures(cfg, split["affine"], split["fig3"]))
    results.update(_full_measures(cfg, split["full"]))
    results["control"] = _untrained_measures(cfg, split)
    if cfg.fig3 is not None and split["fig3"]:
        results.update(_fig3_measures(cfg.fig3, split["fig3"], seed))
    else:
        results["fig3_N8_at_ceiling"] = NotApplicable(
            not_applicable="the Fig 3 sweep of random relations runs at --preset paper only"
        )
    return results, split


# ------------------------------------------------------------------------------------ algorithm 1


def _stage1_order(s: Mapping[str, float]) -> bool:
    """Lemma C.1's order of the Stage-1 pattern: v1 > v2 > v5 and v3 > v4 > v5."""
    return s["v1"] > s["v2"] > s["v5"] and s["v3"] > s["v4"] > s["v5"]


def _q_peaks_on_query(s: Mapping[str, float], k: int) -> bool:
    """Whether ω (as q) is strictly largest on the query subject s_{k+1} (Lemma 4.5)."""
    return s[f"q{2 * k + 1}"] > max(s[f"q{i + 1}"] for i in range(2 * k + 3) if i != 2 * k)


def _as_trace(row: Mapping[str, Any]) -> dict[str, float]:
    """A finished cell's final v, q as a score trace (``v1``..., ``q1``...)."""
    return {**{f"v{i + 1}": x for i, x in enumerate(row["v"])}, **{f"q{i + 1}": x for i, x in enumerate(row["q"])}}


def _algorithm1_controls(base: Cell, st: Sequence[Mapping[str, float]], untrained: Sequence[dict]) -> dict:
    """The claims' controls: the Stage-1 pairs matched across roles (v1 vs v4, v2 vs v3: subject against answer,
    which Lemma C.1 orders, so Stage 1 must have moved v for "equal pairs" to say anything); the untrained model
    (θ = ω = 0, Algorithm 1's start) for the order, ω's peak and both accuracies (min / share over the seeds)."""
    init = [_as_trace(r) for r in untrained]
    return {
        "stage1_equal_pairs": max(max(abs(s["v1"] - s["v4"]), abs(s["v2"] - s["v3"])) for s in st),
        "stage1_order": sum(map(_stage1_order, init)) / len(init),
        "stage1_second_step": sum(_q_peaks_on_query(s, base.k) for s in init) / len(init),
        "first_step": min(r["acc_relation_exact"] for r in untrained),
        "second_step": min(r["acc_answer_teacher_forced"] for r in untrained),
    }


def _algorithm1_measures(base: Cell, rs: Sequence[dict[str, Any]], untrained: Sequence[dict]) -> dict[str, Any]:
    st = [r["after_stage1"] for r in rs]
    eq = [max(abs(s["v1"] - s["v3"]), abs(s["v2"] - s["v4"])) for s in st]
    order = [_stage1_order(s) for s in st]
    q_s3 = [_q_peaks_on_query(s, base.k) for s in st]
    return {
        "control": _algorithm1_controls(base, st, untrained),
        "config": dataclasses.asdict(base),
        "stage1_equal_pairs": max(eq),
        "stage1_equal_pairs_spread": spread(eq),
        "stage1_order": sum(order) / len(order),
        "stage1_second_step": sum(q_s3) / len(q_s3),
        "first_step": min(r["acc_relation_exact"] for r in rs),
        "first_step_spread": spread(r["acc_relation_exact"] for r in rs),
        "second_step": min(r["acc_answer_teacher_forced"] for r in rs),
        "second_step_spread": spread(r["acc_answer_teacher_forced"] for r in rs),
    }


def untrained_algorithm1(base: Cell, seed: int) -> Cell:
    """Algorithm 1's start as a cell: θ = ω = 0 (no perturbation), no step; its accuracies are the untrained
    model's."""
    return replace(base, seed=seed, optimizer="adam", steps=0, perturb_std=0.0)


def algorithm1_cells(bases: Sequence[Cell], seeds: Sequence[int]) -> list[Cell]:
    """Algorithm 1's cells: every base × seed, then each one's start (:func:`untrained_algorithm1`)."""
    untrained = [untrained_algorithm1(base, s) for base in bases for s in seeds]
    return [replace(base, seed=s) for base in bases for s in seeds] + untrained


def algorithm1_run(bases: Sequence[Cell], seeds: Sequence[int], sweep: Sweep, sizes: Sequence[int]) -> dict:
    """Algorithm 1 (temperature-scaled perturbed GD) on identifiable relations: Stage-1 shape and accuracies,
    per base cell (``n<n>``); each n of ``sizes`` this preset does not run is marked absent."""
    rows, info = sweep.run(algorithm1_cells(bases, seeds))
    trained = len(bases) * len(seeds)
    rows, init = rows[:trained], rows[trained:]
    results: dict[str, Any] = {"cells": rows, "untrained_cells": init, "sweep": info, "seeds": list(seeds)}
    for n in sizes:
        base = next((b for b in bases if b.n == n), None)
        results[f"n{n}"] = (
            _algorithm1_measures(base, [r for r in rows if r["n"] == n], [r for r in init if r["n"] == n])
            if base is not None
            else NotApplicable(not_applicable=f"Algorithm 1 with n = {n} runs at --preset paper only")
        )
    return results


# ---------------------------------------------------------------------------------- pretrained MLP


def _pretrained_model(
    cfg: PretrainedMLP, seed: int, progress: bool
) -> tuple[HookedTransformer, ICRecallTask, dict[str, Any]]:
    """Pretrain the whole transformer of one Fig 4 panel (AdamW, ``cfg.weight_decay``), then freeze its MLP."""
    task = ICRecallTask(ICRecallSpec(cfg.n, cfg.m, cfg.k, cfg.family, seed))
    model = build_model(task.spec, "pretrain", memory="random", dtype="float32", seed=seed)
    pc = PretrainConfig(steps=cfg.pretrain_steps, weight_decay=cfg.weight_decay, seed=seed)
    history = pretrain(model, task, pc, progress=progress)
    for name in ("blocks.0.mlp.W_in", "blocks.0.mlp.W_out"):  # fine-tuning: the MLP is frozen
        weight(model, name).requires_grad_(False)
    masks = model.mechrecall_entry_masks
    model.mechrecall_entry_masks = {k: v for k, v in masks.items() if "mlp" not in k}
    return model, task, history


def _finetuned(
    model: HookedTransformer, task: ICRecallTask, cfg: PretrainedMLP, seed: int, test: ICRecallData, progress: bool
) -> dict[str, Any]:
    """Fine-tune the whole W^KQ of ``model`` in place (Adam 1e-3, §5); its accuracies and attention pattern."""
    data = task.sample(cfg.N, stream(seed, TRAIN_DATA))
    finetune(model, task, data, FinetuneConfig(T=cfg.T, lr=1e-3, steps=cfg.steps, seed=seed), progress=progress)
    acc = accuracy(model, task, test, cfg.T)
    return {
        **acc,
        **pretrained_mlp_pattern(model, task, test),
        "first_step_vs_ceiling": acc["acc_relation_exact"] / acc["bayes_ceiling"],
    }


def pretrained_mlp_seed(cfg: PretrainedMLP, seed: int, progress: bool = False) -> dict[str, Any]:
    """Fig 4, one seed of one panel: pretrain the whole transformer on fact pairs, freeze the MLP, fine-tune the
    whole W^KQ; the recall after pretraining, the MLP's cross-term sizes, the accuracies and the attention pattern
    after fine-tuning; with ``cfg.cancel_cross_terms`` the same fine-tuning from the same start with the MLP's
    subject×subject cross terms cancelled (``cancelled``)."""
    started = time.perf_counter()
    model, task, ph = _pretrained_model(cfg, seed, progress)
    test = task.population(20_000, stream(seed, TEST_DATA))
    before = pretrained_mlp_pattern(model, task, test)  # the controls: attention as fine-tuning starts
    cancelled = (
        cancel_cross_terms(model, task.spec, task.subject_id(torch.arange(task.n))) if cfg.cancel_cross_terms else None
    )
    result: dict[str, Any] = {
        "seed": seed,
        "pretrain_recall": ph["eval"][-1]["recall"],
        "pretrain_final_loss": ph["train"][-1]["loss"],
        "cross_terms": cross_term_sizes(model, task),
        **_finetuned(model, task, cfg, seed, test, progress),
        "control": {
            "untrained_recall": ph["eval"][0]["recall"],
            "before_finetuning": before,
            "untrained_memory": accuracy(_with_untrained_memory(model, task, seed), task, test, cfg.T),
        },
    }
    if cancelled is not None:
        result["cancelled"] = {
            "cross_terms": cross_term_sizes(cancelled, task),
            **_finetuned(cancelled, task, cfg, seed, test, progress),
        }
    return {**result, "seconds": time.perf_counter() - started}


def _with_untrained_memory(model: HookedTransformer, task: ICRecallTask, seed: int) -> HookedTransformer:
    """The fine-tuned model with its pretrained MLP replaced by the untrained one (same seed): the memory removed,
    the fine-tuned attention kept."""
    swapped = build_model(task.spec, "pretrain", memory="random", dtype="float32", seed=seed)
    state = {k: v for k, v in tl_state_dict(model).items() if ".mlp." not in k}
    load_tl_state_dict(swapped, state, strict=False)
    return swapped


def _eos_extra(q: Sequence[float]) -> float:
    """Step-2 attention on EoS minus its mean on the context answers (which carry no step-2 information); q over
    s1, a1, ..., sk, ak, s_{k+1}, EoS, r* (k = (len(q) − 3) / 2)."""
    k = (len(q) - 3) // 2
    return q[2 * k + 1] - statistics.mean(q[1 : 2 * k : 2])


def _pretrained_mlp_controls(runs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The claims' controls (means over seeds): recall of the untrained model (step 0 of pretraining); the pattern
    as fine-tuning starts (pretrained W^KQ and MLP, step 0 of fine-tuning); the within- and across-pair scores of
    the crossed pairs after fine-tuning (a pattern of the true pairs is equal within them and different across
    them, and neither on the crossed ones); the true pairs' across-pair score beyond the crossed pairs' as
    fine-tuning starts; the fine-tuned attention with the untrained MLP (the memory removed)."""
    controls, mean = [r["control"] for r in runs], statistics.mean
    return {
        "pretrain_recall": mean(c["untrained_recall"] for c in controls),
        "within_pair": mean(r["within_crossed"] for r in runs),
        "across_pairs": mean(r["across_crossed"] for r in runs),
        "across_beyond_crossed": mean(
            c["before_finetuning"]["across"] - c["before_finetuning"]["across_crossed"] for c in controls
        ),
        "pair_score": mean(c["before_finetuning"]["score"] for c in controls),
        "eos_in_second_step": mean(_eos_extra(c["before_finetuning"]["q_mean"]) for c in controls),
        "first_step_vs_ceiling": mean(c["untrained_memory"]["acc_relation_exact"] for c in controls)
        / mean(r["bayes_ceiling"] for r in runs),
    }


def _panel_runs(cfg: PretrainedMLP, seeds: Sequence[int], out: Path, prefix: str, progress: bool) -> list[dict]:
    """One Fig 4 panel over ``seeds``, each finished seed kept in ``out/<prefix>seed<s>.json`` (a rerun resumes)."""
    runs = []
    for seed in seeds:
        done = out / f"{prefix}seed{seed}.json"
        if not done.is_file() or "cross_terms" not in json.loads(done.read_text()):  # a run from before them
            atomic_write_json(done, pretrained_mlp_seed(cfg, seed, progress))
        runs.append(json.loads(done.read_text()))
    return runs


def _cancelled_summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ablation: first-step accuracy / ceiling with the subject×subject cross terms cancelled, beside the
    uncancelled model's (its control), and the cross-term sizes of each (means over seeds)."""
    ratio = [r["cancelled"]["first_step_vs_ceiling"] for r in runs]
    return {
        "first_step_vs_ceiling": statistics.mean(ratio),
        "first_step_vs_ceiling_spread": spread(ratio),
        "acc_relation_exact": statistics.mean(r["cancelled"]["acc_relation_exact"] for r in runs),
        "subject_subject": statistics.mean(r["cancelled"]["cross_terms"]["subject_subject"] for r in runs),
        "uncancelled": statistics.mean(r["first_step_vs_ceiling"] for r in runs),
        "within": statistics.mean(r["cancelled"]["within"] for r in runs),
        "across": statistics.mean(r["cancelled"]["across"] for r in runs),
    }


def _panel_summary(cfg: PretrainedMLP, seeds: Sequence[int], runs: Sequence[dict]) -> dict[str, Any]:
    """The numbers one panel's claims read (means over seeds, [min, max] where a claim names one)."""
    mean = lambda key: statistics.mean(r[key] for r in runs)  # noqa: E731
    eos_extra, ratio = [_eos_extra(r["q_mean"]) for r in runs], [r["first_step_vs_ceiling"] for r in runs]
    return {
        "control": _pretrained_mlp_controls(runs),
        "runs": list(runs),
        "seeds": list(seeds),
        "settings": {k: v for k, v in dataclasses.asdict(cfg).items() if k != "right"},
        "pretrain_recall": mean("pretrain_recall"),
        "within_pair": mean("within"),
        "across_pairs": mean("across"),
        "across_beyond_crossed": statistics.mean(r["across"] - r["across_crossed"] for r in runs),
        "pair_score": mean("score"),
        "eos_in_second_step": statistics.mean(eos_extra),
        "eos_in_second_step_spread": spread(eos_extra),
        "first_step_vs_ceiling": mean("acc_relation_exact") / mean("bayes_ceiling"),
        "first_step_vs_ceiling_spread": spread(ratio),
        "acc_relation_exact": mean("acc_relation_exact"),
        "bayes_ceiling": mean("bayes_ceiling"),
        "subject_subject_cross_terms": statistics.mean(r["cross_terms"]["subject_subject"] for r in runs),
        "cancelled": _cancelled_summary(runs)
        if cfg.cancel_cross_terms
        else NotApplicable(not_applicable="this panel runs no cross-term cancellation"),
    }


def pretrained_mlp_run(cfg: PretrainedMLP, seeds: Sequence[int], out: Path, progress: bool = False) -> dict:
    """Fig 4 over ``seeds``: the left panel's numbers at the top level, the right panel's (3-ICL) under ``right``
    (:class:`~mechrecall.typed.NotApplicable` where the preset has none); each finished seed is kept (a rerun
    resumes)."""
    results = _panel_summary(cfg, seeds, _panel_runs(cfg, seeds, out, "", progress))
    if cfg.right is None:
        results["right"] = NotApplicable(not_applicable="this preset runs Fig 4's left panel only")
    else:
        right = cfg.right
        results["right"] = _panel_summary(right, seeds, _panel_runs(right, seeds, out, "right_", progress))
    return results
