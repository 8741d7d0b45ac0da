"""Independent fine-tuning runs ("cells") of IC-recall, run in a process pool and resumable.

A cell is one (task, N, seed, mode, optimiser settings) run: sample D (N sequences), fine-tune, evaluate on
the population (or ``test_size`` i.i.d. draws). Each finished cell is written atomically to
``<out>/<cell.key>.json``; a rerun skips every cell whose file exists, so an interrupted sweep resumes.
Partial mode trains the closed-form fast path (:class:`.model.AnalyticICRecall`); ``full`` mode trains the
TransformerLens model's whole W^KQ.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from mechrecall.io import atomic_write_json


@dataclass(frozen=True)
class Cell:
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


def run_cell(cell: Cell) -> dict:
    """Fine-tune and evaluate one cell (module level: picklable for the pool). Single-threaded torch."""
    torch.set_num_threads(1)
    from analyses.papers.ic_recall.evaluation import accuracy
    from analyses.papers.ic_recall.model import AnalyticICRecall, build_model, initial_scores, scores
    from analyses.papers.ic_recall.task import ICRecallSpec, ICRecallTask
    from analyses.papers.ic_recall.training import FinetuneConfig, check_sample_count, finetune

    started = time.perf_counter()
    task = ICRecallTask(ICRecallSpec(cell.n, cell.m, cell.k, cell.family, cell.seed))
    check_sample_count(task, cell.N)
    data = task.sample(cell.N, torch.Generator().manual_seed(1_000 * cell.seed + 7))
    test = task.population(cell.test_size, torch.Generator().manual_seed(99_991 + cell.seed))
    if cell.mode == "partial":
        model: torch.nn.Module = AnalyticICRecall(task)
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
    out = {
        **asdict(cell),
        **acc,
        "bayes_ceiling_exact": task.bayes_ceiling(),
        "v": torch.softmax(theta.double(), -1).tolist(),
        "q": torch.softmax(omega.double(), -1).tolist(),
        "final_loss": history["train"][-1]["loss"] if history["train"] else None,
        "after_stage1": history.get("after_stage1"),
        "seconds": time.perf_counter() - started,
    }
    return out


def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run_cells(
    cells: Sequence[Cell],
    out_dir: str | os.PathLike,
    *,
    workers: int = 2,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> tuple[list[dict], dict]:
    """Run every cell not already finished in ``out_dir``; return (results in ``cells`` order, info).

    ``info``: ``skipped`` (finished earlier), ``ran``, ``workers``, ``seconds`` (wall time of this call)."""
    import analyses.papers.ic_recall.evaluation
    import analyses.papers.ic_recall.training  # noqa: F401

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    todo: list[Cell] = []
    for cell in cells:
        path = out / f"{cell.key}.json"
        if path.is_file():
            results[cell.key] = json.loads(path.read_text())
        elif cell not in todo:
            todo.append(cell)
    skipped = len(results)
    started = time.perf_counter()
    from tqdm.auto import tqdm

    bar = tqdm(total=len(todo), disable=not progress, desc="cells", dynamic_ncols=True)

    def finish(cell: Cell, row: dict) -> None:
        atomic_write_json(out / f"{cell.key}.json", row)
        results[cell.key] = row
        bar.update(1)

    if workers > 1 and len(todo) > 1:
        with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
            futures = {pool.submit(run_cell, c): c for c in todo}
            for future in as_completed(futures):
                finish(futures[future], future.result())
    else:
        for cell in todo:
            finish(cell, run_cell(cell))
    bar.close()
    seconds = time.perf_counter() - started
    if say and todo:
        say(f"{len(todo)} cells in {seconds:.1f} s with {workers} worker(s); {skipped} finished earlier, skipped")
    return [results[c.key] for c in cells], {
        "skipped": skipped,
        "ran": len(todo),
        "workers": workers,
        "seconds": seconds,
    }
