"""Run the jobs of a report plan on an executor (local processes, a Ray cluster, Slurm), with a progress display.

A job is one part of one experiment at one seed (``plan_jobs``); the independent units of a part's work that it
declares (``Part.tasks``: a sweep's cells) are jobs of the same executor, run first (:func:`run_part_tasks`), so
the part then finds them done. The jobs run longest first on an executor
(:mod:`mechrecall.executors`), one torch thread each, so every core stays busy until the end. Each writes into
``OUT/<experiment>/`` (``OUT/seed<N>/<experiment>/`` over several seeds, as :mod:`mechrecall.seeds` lays out); parts
of one experiment running side by side merge their records into its ``results.json`` under a lock. On an executor
whose workers do not share ``OUT`` (Ray) a job runs in a scratch folder and its files travel back to the driver's
``OUT`` (:func:`run_shipped`). A part that fails is recorded as failed and the other jobs go on; a job whose worker
died is retried once. Rerunning into the same folder skips finished parts (the experiments resume on their own).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyses.report.plan import Step, offline, step
from mechrecall.executors.base import Executor, Failure, Task, run_tasks
from mechrecall.executors.local import LocalExecutor
from mechrecall.executors.progress import Progress
from mechrecall.experiment import PartTask


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
    cpus: int = 1  # torch threads (and the executor's CPU request)
    device: str | None = None  # the experiment's --device (None: its default, the CPU)

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

    @property
    def log(self) -> str:
        """Its log file under ``OUT``: ``report/logs/noisy_icl.main.log``, ``report/logs/noisy_icl.seed3.main.log``."""
        return f"report/logs/{self.id.replace('/', '.').replace(':', '.')}.log"


def experiment_of(job: Job) -> Any:
    """The ``Experiment`` a job runs: ``job.module`` is its serialisable address, ``"module"`` (its ``EXPERIMENT``)
    or ``"module:NAME"`` (a job may be sent to another process, so it names the experiment instead of holding it)."""
    module, _, attr = job.module.partition(":")
    return getattr(importlib.import_module(module), attr or "EXPERIMENT")


def discover() -> list[str]:
    """Every runnable experiment (``analyses.registry``), in the report's order."""
    from analyses.registry import experiments

    return experiments()


def only_parts(only: Sequence[str], report_preset: str, names: Sequence[str]) -> dict[str, set[str]]:
    """``--only`` entries (``EXPERIMENT`` or ``EXPERIMENT:PART``) → experiment → its chosen parts (empty: all of
    the report preset's); a one-line :class:`UsageError` for an unknown experiment or a part the preset lacks."""
    from analyses.registry import experiment
    from mechrecall.errors import UsageError

    chosen: dict[str, set[str]] = {}
    for entry in only:
        name, _, part = entry.partition(":")
        if name not in names:
            raise UsageError(f"--only {entry}: unknown experiment; expected some of {', '.join(names)}")
        if part:
            s = step(report_preset, name)
            parts = experiment(name).select_parts(s.parts, s.preset)
            if part not in parts:
                raise UsageError(
                    f"--only {entry}: {name} has no part {part!r} in the {report_preset} report; "
                    f"expected one of {', '.join(parts)}"
                )
            if name not in chosen or chosen[name]:
                chosen.setdefault(name, set()).add(part)
        else:
            chosen[name] = set()  # the whole experiment
    return chosen


def plan_jobs(
    report_preset: str, only: Sequence[str] | None = None, model: str | None = None, seeds: Sequence[int] = (0,)
) -> list[Job]:
    """The jobs of a report preset: one per part of every discovered experiment (or ``only``) and seed, ``--model``
    passed where taken; a part that does not depend on the seed runs once
    (:meth:`~mechrecall.experiment.Experiment.seed_runs`). An experiment's own ``--workers`` (a sweep's process
    pool) is set to the job's one CPU: the report's executor is what fans the work out."""
    from analyses.registry import experiment

    names = discover()
    off = offline(report_preset, model)
    probed = paper_minutes() if report_preset == "paper" else {}
    chosen = only_parts(only or (), report_preset, names)
    if only:
        names = [n for n in names if n in chosen]
    jobs = []
    for name in names:
        s: Step = step(report_preset, name)
        options: dict[str, Any] = {}
        if model:
            for option in experiment(name).options:
                if option.dest == "model":
                    options["model"] = [model] if option.kwargs.get("nargs") else model
        exp = experiment(name)
        if any(option.dest == "workers" for option in exp.options):
            options["workers"] = 1
        runs = exp.seed_runs(seeds, exp.select_parts(s.parts, s.preset)) if len(seeds) > 1 else [(seeds[0], None)]
        for seed, parts in runs:
            folder = f"seed{seed}" if len(seeds) > 1 else ""
            for part in parts or exp.select_parts(s.parts, s.preset):
                if chosen.get(name) and part not in chosen[name]:
                    continue
                cost = probed.get(f"{name}:{part}") or next(p.cost(s.preset) for p in exp.parts if p.name == part)
                jobs.append(Job(name, s.preset, (part,), options, seed=seed, folder=folder, minutes=cost, offline=off))
    return jobs


def paper_minutes() -> dict[str, float]:
    """Each part's estimated minutes at the paper preset on one core, from this machine's probe in the ledger
    (``analyses/measured/probe/cpu.json``; a lower bound where the probe stopped): the longest start first."""
    from analyses.report.ledger import load_probes

    parts = load_probes().get("cpu", {}).get("parts", [])
    return {p["part"]: (p.get("estimate_s") or p.get("estimate_at_least_s") or 60.0) / 60 for p in parts}


def run_job(job: Job, out: str, threads: int = 1) -> dict[str, Any]:
    """Run one experiment part by part (in a worker); its output goes to ``OUT/``:attr:`Job.log`.

    Returns ``{name, seed, status: done|failed, error, seconds, parts: {part: status}}``; never raises."""
    started = time.perf_counter()
    log = Path(out) / job.log
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
            experiment = experiment_of(job)
            parts = experiment.select_parts(job.parts, job.preset)
            for part in parts:
                try:
                    experiment.run(
                        Path(out) / job.folder,
                        preset=job.preset,
                        parts=[part],
                        seed=job.seed,
                        options=job.options,
                        device=job.device,
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
    experiment = experiment_of(job)
    return experiment.finished(out / job.folder, preset=job.preset, parts=job.parts, seed=job.seed, options=job.options)


def results_file(job: Job) -> str:
    """The job's experiment's results under ``OUT``: ``noisy_icl/results.json``, ``seed3/noisy_icl/results.json``."""
    return str(Path(job.folder) / job.name / "results.json")


def run_shipped(job: Job, inputs: Mapping[str, bytes], threads: int = 1) -> dict[str, Any]:
    """:func:`run_job` in a scratch folder of the worker's machine, seeded with ``inputs`` (the driver's
    ``results.json`` of the experiment: a configuration clash is caught as on a shared disk); returns the record and
    every file the job wrote, ``{"record": ..., "files": {path under OUT: bytes}}``, for :func:`receive`."""
    scratch = Path(tempfile.mkdtemp(prefix="mechrecall-job-"))
    try:
        for name, data in inputs.items():
            (scratch / name).parent.mkdir(parents=True, exist_ok=True)
            (scratch / name).write_bytes(data)
        record = run_job(job, str(scratch), threads)
        files = {
            str(path.relative_to(scratch)): path.read_bytes()
            for path in sorted(scratch.rglob("*"))
            if path.is_file() and not path.name.startswith(".")  # lock files and half-written temporaries
        }
        return {"record": record, "files": files}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def receive(out: Path, job: Job, shipped: Mapping[str, Any]) -> dict[str, Any]:
    """Write a shipped job's files into ``out`` (each atomically; its log appended; the experiment's
    ``results.json`` merged part by part under the lock, as a job on a shared disk writes it); its record."""
    from mechrecall.io import atomic_write_bytes

    results = results_file(job)
    for name, data in shipped["files"].items():
        if name == results:
            continue
        if name == job.log:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            with open(out / name, "ab") as f:
                f.write(data)
        else:
            atomic_write_bytes(out / name, data)
    if results in shipped["files"]:
        payload = json.loads(shipped["files"][results])
        experiment = experiment_of(job)
        for part in job.parts or payload.get("parts", {}):
            if part in payload.get("parts", {}):
                experiment.write_part(out / job.folder / job.name, payload, part)
    return shipped["record"]


def measured_seconds(out: Path) -> dict[tuple[str, str, str], float]:
    """``{(experiment, preset, part): seconds}``: the median time of each part that some ``results.json`` under
    ``out`` (any seed) records as done; a better cost than the declared one for the jobs still to run."""
    import statistics

    times: dict[tuple[str, str, str], list[float]] = {}
    for path in [*out.glob("*/results.json"), *out.glob("seed*/*/results.json")]:
        try:
            payload = json.loads(path.read_text())
            preset = payload["config"]["preset"]
            for part, record in payload["parts"].items():
                if record.get("status") == "done" and record.get("seconds", 0) > 1:  # not a resumed instant
                    times.setdefault((payload["experiment"], preset, part), []).append(float(record["seconds"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return {key: statistics.median(seconds) for key, seconds in times.items()}


def make_task(job: Job, out: Path, shared: bool, seconds: float | None = None, files: Sequence[Path] = ()) -> Task:
    """The executor's task for ``job``: :func:`run_job` into ``out``, or :func:`run_shipped` with its inputs (its
    ``results.json`` and ``files``, the results of its part's tasks); its cost ``seconds`` (default: the part's
    declared minutes)."""
    cost = job.minutes * 60 if seconds is None else seconds
    if shared:
        return Task(job.id, run_job, (job, str(out), job.cpus), cost, job.cpus)
    paths = [out / results_file(job), *files]
    inputs = {str(p.relative_to(out)): p.read_bytes() for p in paths if p.is_file()}
    return Task(job.id, run_shipped, (job, inputs, job.cpus), cost, job.cpus)


def part_tasks(out: Path, jobs: Sequence[Job]) -> dict[str, list[PartTask]]:
    """``{job id: the unfinished tasks its part declares}`` (``Part.tasks``); a job whose configuration is refused
    has none here (the job itself records why)."""
    from mechrecall.errors import UsageError

    found: dict[str, list[PartTask]] = {}
    for job in jobs:
        experiment = experiment_of(job)
        for part in job.parts or ():
            try:
                tasks = experiment.part_tasks(
                    out / job.folder, preset=job.preset, part=part, seed=job.seed, options=job.options
                )
            except UsageError:
                continue
            found.setdefault(job.id, []).extend(tasks)
    return found


def run_part_tasks(executor: Executor, tasks: Mapping[str, Sequence[PartTask]], display: Progress) -> None:
    """Run every job's part tasks on ``executor`` (longest first), writing each value to its file here as it
    arrives (so a worker need not share the disk); a task that fails is left to its part, which runs it again."""
    from mechrecall.io import atomic_write_json

    units = {f"{job_id}/{t.id}": t for job_id, ts in tasks.items() for t in ts}

    def finish(kind: str, task: Task | None, outcome: Any) -> None:
        if kind == "done" and task is not None:
            units[task.id].path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(units[task.id].path, outcome)
        display(kind, task, outcome)

    run_tasks(executor, [Task(i, t.fn, t.args, t.seconds) for i, t in units.items()], on_event=finish)


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


def run_all(
    jobs: Sequence[Job],
    out: str | os.PathLike,
    *,
    workers: int = 1,
    progress: bool = True,
    executor: Executor | None = None,
    log_dir: str = "report",
) -> dict[str, dict[str, Any]]:
    """Run ``jobs`` on ``executor`` (default: ``workers`` local processes), longest first (by the time the same part
    took on another seed in ``out`` where it did, else by its declared cost), skipping the finished ones; returns the
    records merged per experiment run (:func:`merge_records`, by :attr:`Job.key`). Every job event is a line of
    ``OUT/<log_dir>/progress.log`` (``OUT/report/progress.log``)."""
    out = Path(out)
    (out / log_dir).mkdir(parents=True, exist_ok=True)
    records: dict[str, dict[str, Any]] = {}
    todo = []
    for job in jobs:
        if finished(out, job):
            records[job.id] = {"name": job.name, "seed": job.seed, "status": "done", "error": "", "seconds": 0.0}
            records[job.id]["parts"] = dict.fromkeys(job.parts or (), "done earlier, kept")
        else:
            todo.append(job)
    by_id = {job.id: job for job in todo}
    executor = executor or LocalExecutor(workers)
    shared = executor.shared_out

    def finish(kind: str, task: Task | None, outcome: Any) -> None:
        if kind in ("done", "failed") and task is not None:  # a shipped job's files land as soon as it ends
            job = by_id[task.id]
            if isinstance(outcome, Failure):
                records[job.id] = {
                    "name": job.name,
                    "seed": job.seed,
                    "status": "failed",
                    "error": f"worker: {outcome.reason}",
                    "parts": dict.fromkeys(job.parts or (), "failed"),
                }
            else:
                records[job.id] = outcome if shared else receive(out, job, outcome)
            outcome = records[job.id]
        display(kind, task, outcome)

    with contextlib.ExitStack() as stack:
        stack.enter_context(executor)
        measured = measured_seconds(out)
        declared = part_tasks(out, todo)
        if any(declared.values()):
            units = [Task(f"{i}/{t.id}", t.fn, t.args, t.seconds) for i, ts in declared.items() for t in ts]
            first = Progress(units, executor.capacity(), log=out / log_dir / "progress.log", enabled=progress)
            first.event(f"{len(units)} part task(s) (sweep cells) first; {executor.describe()}")
            try:
                run_part_tasks(executor, declared, first)
            finally:
                first.close()
        tasks = [
            make_task(
                job,
                out,
                shared,
                measured.get((job.name, job.preset, (job.parts or ("",))[0])),
                [t.path for t in declared.get(job.id, ())],
            )
            for job in todo
        ]
        display = Progress(tasks, executor.capacity(), log=out / log_dir / "progress.log", enabled=progress)
        display.event(f"{len(todo)} job(s) to run, {len(jobs) - len(todo)} finished earlier; {executor.describe()}")
        stack.callback(display.close)
        run_tasks(executor, tasks, on_event=finish)
    return merge_records(jobs, records)


def job_table(jobs: Sequence[Job]) -> list[Mapping[str, Any]]:
    return [
        {"experiment": j.name, "seed": j.seed, "preset": j.preset, "parts": list(j.parts or ()), "options": j.options}
        for j in jobs
    ]
