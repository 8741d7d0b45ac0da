"""Run the jobs of a report plan in worker processes, one torch thread each, with a progress display.

A job is one part of one experiment at one seed (``plan_jobs``): the jobs run in a ``ProcessPoolExecutor``,
longest first (each part's declared cost), so every core stays busy until the end. Each writes into
``OUT/<experiment>/`` (``OUT/seed<N>/<experiment>/`` over several seeds, as :mod:`mechrecall.seeds` lays out); parts
of one experiment running side by side merge their records into its ``results.json`` under a lock. A part that
fails is recorded as failed and the other jobs go on; the records are merged per experiment (and seed) for the
report. Rerunning into the same folder skips finished parts (the experiments resume on their own).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import multiprocessing
import os
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyses.report.plan import Step, offline, step


@dataclass
class Job:
    """One experiment to run: its name, preset, parts and options (``module``: where its ``EXPERIMENT`` is), the
    seed and the folder under ``OUT`` it writes to (``""``: ``OUT`` itself; ``seed3`` over several seeds)."""

    name: str
    preset: str
    parts: tuple[str, ...] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    module: str = ""
    offline: bool = False  # HF_HUB_OFFLINE=1 in the worker: use a local hub cache, never download
    minutes: float = 1.0  # rough cost: the longest jobs start first
    seed: int = 0
    folder: str = ""

    def __post_init__(self) -> None:
        self.module = self.module or f"analyses.{self.name}"

    @property
    def key(self) -> str:
        """The experiment run the job belongs to, the key of the merged records: ``noisy_icl``, or
        ``noisy_icl/seed3``."""
        return f"{self.name}/{self.folder}" if self.folder else self.name

    @property
    def id(self) -> str:
        """The job itself: ``noisy_icl:main``, ``noisy_icl/seed3:main`` (the key alone for a job of several parts)."""
        return f"{self.key}:{self.parts[0]}" if self.parts and len(self.parts) == 1 else self.key


def discover() -> list[str]:
    """Every runnable experiment (``analyses.registry``), in the report's order."""
    from analyses.registry import experiments

    return experiments()


def plan_jobs(
    report_preset: str, only: Sequence[str] | None = None, model: str | None = None, seeds: Sequence[int] = (0,)
) -> list[Job]:
    """The jobs of a report preset: one per part of every discovered experiment (or ``only``) and seed, ``--model``
    passed where taken; a part that does not depend on the seed runs once
    (:meth:`~mechrecall.experiment.Experiment.seed_runs`)."""
    from analyses.registry import experiment
    from mechrecall.errors import UsageError

    names = discover()
    off = offline(report_preset, model)
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise UsageError(f"--only {' '.join(unknown)}: unknown experiment; expected some of {', '.join(names)}")
        names = [n for n in names if n in only]
    jobs = []
    for name in names:
        s: Step = step(report_preset, name)
        options: dict[str, Any] = {}
        if model:
            for option in experiment(name).options:
                if option.dest == "model":
                    options["model"] = [model] if option.kwargs.get("nargs") else model
        exp = experiment(name)
        runs = exp.seed_runs(seeds, exp.select_parts(s.parts, s.preset)) if len(seeds) > 1 else [(seeds[0], None)]
        for seed, parts in runs:
            folder = f"seed{seed}" if len(seeds) > 1 else ""
            for part in parts or exp.select_parts(s.parts, s.preset):
                cost = next(p.cost(s.preset) for p in exp.parts if p.name == part)
                jobs.append(Job(name, s.preset, (part,), options, seed=seed, folder=folder, minutes=cost, offline=off))
    return jobs


def run_job(job: Job, out: str, threads: int = 1) -> dict[str, Any]:
    """Run one experiment part by part (in a worker); its output goes to ``OUT/report/logs/<key>.log``.

    Returns ``{name, seed, status: done|failed, error, seconds, parts: {part: status}}``; never raises."""
    started = time.perf_counter()
    log = Path(out) / "report" / "logs" / f"{job.key.replace('/', '.')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"name": job.name, "seed": job.seed, "status": "done", "error": "", "parts": {}}
    with (
        open(log, "a", encoding="utf-8") as stream,
        contextlib.redirect_stdout(stream),
        contextlib.redirect_stderr(stream),
    ):
        try:
            if job.offline:
                os.environ["HF_HUB_OFFLINE"] = "1"
            import torch

            torch.set_num_threads(threads)
            module, _, attr = job.module.partition(":")
            experiment = getattr(importlib.import_module(module), attr or "EXPERIMENT")
            parts = experiment.select_parts(job.parts, job.preset)
            for part in parts:
                try:
                    experiment.run(
                        Path(out) / job.folder,
                        preset=job.preset,
                        parts=[part],
                        seed=job.seed,
                        options=job.options,
                        threads=threads,
                    )
                    record["parts"][part] = "done"
                except Exception as exc:  # recorded in results.json (a part) or here (a usage error)
                    traceback.print_exc()
                    record["parts"][part] = "failed"
                    record["status"] = "failed"
                    record["error"] = record["error"] or f"{part}: {type(exc).__name__}: {exc}"
                    if type(exc).__name__ == "UsageError":  # the configuration is wrong: no part can run
                        break
        except Exception as exc:
            traceback.print_exc()
            record.update(status="failed", error=f"{type(exc).__name__}: {exc}")
    record["seconds"] = time.perf_counter() - started
    return record


def finished(out: Path, job: Job) -> bool:
    """Whether ``OUT/<name>/results.json`` already holds every planned part, done, with this configuration (the
    experiment's own check, :meth:`~mechrecall.experiment.Experiment.finished`); then no worker is started for it."""
    if not job.parts:
        return False
    experiment = importlib.import_module(job.module.partition(":")[0]).EXPERIMENT
    return experiment.finished(out / job.folder, preset=job.preset, parts=job.parts, seed=job.seed, options=job.options)


class Progress:
    """How many jobs are done, which are running, which failed; one line per change (each job's own output is in
    ``OUT/report/logs/``)."""

    def __init__(self, jobs: Sequence[Job], enabled: bool = True, stream: io.TextIOBase | None = None):
        self.jobs, self.enabled = list(jobs), enabled
        self.stream = stream or sys.stderr
        self.state = {j.id: "waiting" for j in jobs}
        self.started = time.perf_counter()
        self._last = ""

    def set(self, job_id: str, state: str) -> None:
        self.state[job_id] = state
        self.show()

    def show(self) -> None:
        if not self.enabled:
            return
        done = [k for k, v in self.state.items() if v.startswith("done")]
        running = [k for k, v in self.state.items() if v == "running"]
        failed = [k for k, v in self.state.items() if v.startswith("failed")]
        line = f"{len(done)}/{len(self.state)} jobs done; running: {', '.join(running) or '-'}"
        line += f"; failed: {', '.join(failed)}" if failed else ""
        if line != self._last:
            self._last = line
            print(f"[reproduce {time.perf_counter() - self.started:6.0f} s] {line}", file=self.stream, flush=True)


def merge_records(jobs: Sequence[Job], by_id: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The jobs' records merged per experiment run (:attr:`Job.key`): its parts, total seconds, failed if any job
    failed (with every error)."""
    out: dict[str, dict[str, Any]] = {}
    for job in jobs:
        record = by_id[job.id]
        merged = out.setdefault(
            job.key, {"name": job.name, "seed": job.seed, "status": "done", "error": "", "seconds": 0.0, "parts": {}}
        )
        merged["parts"].update(record.get("parts") or dict.fromkeys(job.parts or (), record["status"]))
        merged["seconds"] += record.get("seconds") or 0.0
        if record["status"] != "done":
            merged["status"] = "failed"
            merged["error"] = "; ".join(e for e in (merged["error"], record.get("error", "")) if e)
    return out


def watch_parent(parent: int, every: float = 1.0) -> None:
    """A worker's initializer: exit when ``parent`` (the report's process) is gone. A parent killed outright
    (SIGTERM, SIGKILL) runs no cleanup; without this its workers would go on writing into ``OUT`` beside the rerun
    that resumes it."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="watch-parent").start()


def run_all(
    jobs: Sequence[Job], out: str | os.PathLike, *, workers: int = 1, progress: bool = True
) -> dict[str, dict[str, Any]]:
    """Run ``jobs`` on ``workers`` processes (spawned, one torch thread each), longest first; returns the records
    merged per experiment run (:func:`merge_records`, by :attr:`Job.key`)."""
    out = Path(out)
    (out / "report").mkdir(parents=True, exist_ok=True)
    display = Progress(jobs, progress)
    records: dict[str, dict[str, Any]] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=max(1, workers), mp_context=context, initializer=watch_parent, initargs=(os.getpid(),)
    ) as pool:
        futures: dict[Future, Job] = {}
        for job in sorted(jobs, key=lambda j: -j.minutes):  # longest first: the pool's tail is short
            if finished(out, job):
                records[job.id] = {"name": job.name, "seed": job.seed, "status": "done", "error": "", "seconds": 0.0}
                records[job.id]["parts"] = dict.fromkeys(job.parts or (), "done earlier, kept")
                display.state[job.id] = "done earlier, kept"
                continue
            futures[pool.submit(run_job, job, str(out))] = job
        running = set(futures)
        # a worker takes jobs in order: the first `workers` pending ones are the running ones
        while running:
            pending = [futures[f] for f in futures if f in running]  # in submission order
            for job in pending[: max(1, workers)]:
                if display.state[job.id] == "waiting":
                    display.state[job.id] = "running"
            display.show()
            done, running = wait(running, timeout=2.0, return_when=FIRST_COMPLETED)
            for future in done:
                job = futures[future]
                try:
                    records[job.id] = future.result()
                except Exception as exc:  # the worker died (e.g. killed for memory)
                    records[job.id] = {
                        "name": job.name,
                        "seed": job.seed,
                        "status": "failed",
                        "error": f"worker: {exc}",
                        "parts": dict.fromkeys(job.parts or (), "failed"),
                    }
                record = records[job.id]
                display.set(job.id, f"{record['status']} ({record.get('seconds', 0):.0f} s)")
    return merge_records(jobs, records)


def job_table(jobs: Sequence[Job]) -> list[Mapping[str, Any]]:
    return [
        {"experiment": j.name, "seed": j.seed, "preset": j.preset, "parts": list(j.parts or ()), "options": j.options}
        for j in jobs
    ]
