"""Slurm through submitit (``--executor slurm``, ``pip install -e ".[slurm]"``): one job an sbatch job.

The jobs write into ``--out`` themselves, which must be on a file system the compute nodes share with the login
node (:attr:`shared_out`); submitit keeps each job's sbatch script, logs and pickled call (written by this driver,
read back by it alone) in ``folder``. ``cluster="local"`` runs the same jobs as processes of this machine through
submitit's local executor (a dry run of a cluster plan, and the tests).

On a cluster a job is done when its result file appears. Its state comes from ``sacct`` where Slurm keeps accounting,
else from ``squeue`` (said once, in :meth:`SlurmExecutor.describe`; submitit's own watcher, which asks ``sacct`` and
warns at every poll without accounting, is not used). A job that ended without a result (cancelled, preempted, its
node lost, or gone from ``squeue`` altogether), or that still runs ``minutes`` plus a margin after it started, is a
job whose worker died (:class:`JobWatch`): :func:`~mechrecall.executors.base.run_tasks` runs it once more in a new
sbatch job, then reports it failed, and the other jobs go on.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mechrecall.errors import UsageError
from mechrecall.executors.base import Executor, Failure, Task

#: Slurm job states after which the job does no more work (``squeue --states=all`` and ``sacct`` name them); every
#: other state (pending, running, completing, requeued, suspended, ...) is a job still live.
ENDED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    }
)
#: The state of a job neither ``squeue`` nor ``sacct`` knows (any more): it ended.
GONE = "GONE"

Run = Callable[..., "subprocess.CompletedProcess[str]"]


def _call(run: Run, command: Sequence[str]) -> subprocess.CompletedProcess[str] | None:
    """``command``'s completed process, or None when it could not be started or did not answer in 60 s."""
    try:
        return run(list(command), capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def _table(stdout: str) -> dict[str, str]:
    """``JOBID|STATE`` lines → ``{job id: state}`` (``CANCELLED by 1000`` → ``CANCELLED``; job steps skipped)."""
    states = {}
    for line in stdout.splitlines():
        job_id, _, state = line.strip().partition("|")
        if job_id and state and "." not in job_id:
            states[job_id] = state.split()[0].rstrip("+").upper()
    return states


def squeue_states(job_ids: Iterable[str], run: Run = subprocess.run) -> dict[str, str] | None:
    """Each job's state from ``squeue --states=all`` (a finished job stays listed for the cluster's ``MinJobAge``,
    300 s by default), :data:`GONE` for a job it does not list; None when ``squeue`` did not answer (the controller
    busy or restarting: no state is known, none is guessed)."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    command = ["squeue", "--noheader", "--states=all", "--format=%i|%T", f"--jobs={','.join(ids)}"]
    done = _call(run, command)
    if done is None:
        return None
    if done.returncode != 0:
        if "Invalid job id" in done.stderr:  # none of them is known any more
            return dict.fromkeys(ids, GONE)
        return None
    listed = _table(done.stdout)
    return {i: listed.get(i, GONE) for i in ids}


def sacct_states(job_ids: Iterable[str], run: Run = subprocess.run) -> dict[str, str] | None:
    """Each job's state from ``sacct`` (the allocations only); a job it does not list yet (just submitted) is
    left out; None when ``sacct`` did not answer."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    command = ["sacct", "--noheader", "--parsable2", "--allocations", "--format=JobID,State", f"--jobs={','.join(ids)}"]
    done = _call(run, command)
    if done is None or done.returncode != 0:
        return None
    listed = _table(done.stdout)
    return {i: listed[i] for i in ids if i in listed}


def job_states(job_ids: Iterable[str], accounting: bool, run: Run = subprocess.run) -> dict[str, str]:
    """The jobs' states: from ``sacct`` with ``accounting``, else (and for the jobs ``sacct`` does not list yet)
    from ``squeue``. A job whose state no command gave this time is left out (unknown, not lost)."""
    ids = sorted(set(job_ids))
    states: dict[str, str] = {}
    if accounting:
        states.update(sacct_states(ids, run) or {})
    rest = [i for i in ids if i not in states]
    states.update(squeue_states(rest, run) or {})
    return states


def has_accounting(run: Run = subprocess.run) -> bool:
    """Whether the cluster keeps accounting (``AccountingStorageType`` other than ``accounting_storage/none``);
    a one-line :class:`UsageError` when ``scontrol`` cannot reach the controller (before any job is submitted)."""
    done = _call(run, ["scontrol", "show", "config"])
    if done is None or done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no answer"])[0] if done is not None else "did not run"
        raise UsageError(f"--executor slurm: scontrol show config failed ({why}); is this a Slurm login node?")
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "AccountingStorageType":
            return value.strip() not in ("accounting_storage/none", "(null)", "")
    return False


@dataclass
class Watched:
    """What :class:`JobWatch` knows of one job: since when it runs, since when it ended without a result."""

    state: str = "PENDING"
    running_since: float | None = None
    ended_since: float | None = None


class JobWatch:
    """Which Slurm jobs are lost. ``seen(states)`` takes a poll's states; :meth:`lost` says why a job counts as
    died: it ended (:data:`ENDED`, or :data:`GONE`) and no result came within ``grace`` seconds (a shared file
    system may show a file late), or it still runs ``limit`` seconds after it was first seen running. ``source``:
    where the states come from (a job no longer there is "gone from" it)."""

    def __init__(
        self, limit: float, grace: float = 30.0, clock: Callable[[], float] = time.monotonic, source: str = "squeue"
    ):
        self.limit, self.grace, self.clock, self.source = limit, grace, clock, source
        self.jobs: dict[str, Watched] = {}

    def add(self, job_id: str) -> None:
        self.jobs[job_id] = Watched()

    def forget(self, job_id: str) -> None:
        self.jobs.pop(job_id, None)

    def seen(self, states: Mapping[str, str]) -> None:
        """Take the states of a poll (a job left out: unknown this time, nothing changes)."""
        now = self.clock()
        for job_id, state in states.items():
            watched = self.jobs.get(job_id)
            if watched is None:
                continue
            watched.state = state
            if state in ENDED or state == GONE:
                watched.ended_since = watched.ended_since if watched.ended_since is not None else now
                continue
            watched.ended_since = None  # live again (requeued)
            if state == "RUNNING":
                watched.running_since = watched.running_since if watched.running_since is not None else now
            elif state == "PENDING":
                watched.running_since = None  # requeued: its time limit starts again when it runs

    def lost(self, job_id: str) -> str | None:
        """Why the job counts as died, or None while it may still give a result."""
        watched, now = self.jobs[job_id], self.clock()
        if watched.ended_since is not None and now - watched.ended_since >= self.grace:
            if watched.state == GONE:
                return f"gone from {self.source} without a result"
            return f"{watched.state} without a result"
        if watched.running_since is not None and now - watched.running_since > self.limit:
            return f"still {watched.state} {now - watched.running_since:.0f} s after it started (limit and margin)"
        return None


class SlurmExecutor(Executor):
    """sbatch jobs of ``minutes`` each on ``partition``, ``gpus_per_job`` GPUs and the task's CPUs each, at most
    ``max_jobs`` at once (default: every job of the plan). On a cluster the jobs' states are read every
    ``poll_seconds``; a job counts as died ``grace_seconds`` after it ended without a result, or ``margin_seconds``
    after its time limit while still running (cancelled then)."""

    name = "slurm"
    #: How Slurm's commands run (``scontrol``, ``squeue``, ``sacct``, ``scancel``): the tests swap in a fake cluster.
    run_command: Run = staticmethod(subprocess.run)

    def __init__(
        self,
        folder: str | Path,
        partition: str | None = None,
        minutes: int = 120,
        gpus_per_job: int = 0,
        max_jobs: int | None = None,
        cluster: str | None = None,
        poll_seconds: float = 15.0,
        grace_seconds: float = 30.0,
        margin_seconds: float = 300.0,
    ):
        import submitit

        for option, value, low in (("--slurm-minutes", minutes, 1), ("--gpus-per-job", gpus_per_job, 0)):
            if value < low:
                raise UsageError(f"{option} {value}; expected >= {low}")
        if max_jobs is not None and max_jobs < 1:
            raise UsageError(f"--max-jobs {max_jobs}; expected >= 1")
        self.folder, self.max_jobs, self.poll_seconds = Path(folder), max_jobs, poll_seconds
        self.clock: Callable[[], float] = time.monotonic
        self.sleep: Callable[[float], None] = time.sleep
        self.on_cluster = (cluster or "slurm") == "slurm"
        self.accounting = has_accounting(self.run_command) if self.on_cluster else False
        self.executor = submitit.AutoExecutor(folder=self.folder / "%j", cluster=cluster or "slurm")
        params: dict[str, Any] = {"timeout_min": minutes, "name": "mechrecall"}
        if gpus_per_job:
            params["gpus_per_node"] = gpus_per_job
        if partition:
            params["slurm_partition"] = partition
        self.executor.update_parameters(**params)
        self.jobs: dict[int, Any] = {}
        self.handles = itertools.count()
        source = "sacct and squeue" if self.accounting else "squeue"
        self.watch = JobWatch(minutes * 60 + margin_seconds, grace_seconds, lambda: self.clock(), source)
        self.polled = float("-inf")

    def capacity(self) -> int:
        return self.max_jobs or 10**6

    def describe(self) -> str:
        where = f"slurm ({self.executor.cluster}): logs in {self.folder}"
        if not self.on_cluster:
            return where
        return f"{where}; job states from {'sacct' if self.accounting else 'squeue: accounting is off'}"

    def submit(self, task: Task) -> Hashable:
        # the job's name says which part it runs (squeue, sacct)
        self.executor.update_parameters(cpus_per_task=task.cpus, name=f"mechrecall:{task.id}")
        handle = next(self.handles)
        job = self.executor.submit(task.fn, *task.args)
        self.jobs[handle] = job
        if self.on_cluster:
            self.watch.add(str(job.job_id))
        return handle

    def wait(self, handles: Sequence[Hashable], timeout: float) -> list[tuple[Hashable, Any]]:
        deadline = self.clock() + timeout
        while True:
            finished = self._finished(handles)
            if finished or self.clock() >= deadline:
                return finished
            self.sleep(min(0.5, timeout))

    def _finished(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Any]]:
        """The jobs among ``handles`` with a result (each's outcome) or lost (a :class:`Failure`; the job is
        cancelled in case it still runs, or comes back requeued)."""
        if not self.on_cluster:
            done = [h for h in handles if self.jobs[h].done()]  # type: ignore[index]
            return [(h, self._outcome(self.jobs.pop(h))) for h in done]  # type: ignore[call-overload]
        with_result = {h for h in handles if self._has_result(self.jobs[h])}  # type: ignore[index]
        self._poll([h for h in handles if h not in with_result])
        finished: list[tuple[Hashable, Any]] = []
        for handle in handles:
            job = self.jobs[handle]  # type: ignore[index]
            if handle in with_result:
                outcome = self._outcome(job)
            else:
                why = self.watch.lost(str(job.job_id))
                if why is None:
                    continue
                self._cancel(job)
                outcome = Failure(f"slurm job {job.job_id}: {why}")
            self.watch.forget(str(job.job_id))
            del self.jobs[handle]  # type: ignore[arg-type]
            finished.append((handle, outcome))
        return finished

    def _cancel(self, job: Any) -> None:
        """``scancel`` the job, quietly (a job already ended makes scancel print an error)."""
        if self.on_cluster:
            _call(self.run_command, ["scancel", str(job.job_id)])
        else:
            job.cancel(check=False)

    def _poll(self, handles: Sequence[Hashable]) -> None:
        """The states of the jobs without a result, at most every ``poll_seconds``."""
        if not handles or self.clock() - self.polled < self.poll_seconds:
            return
        self.polled = self.clock()
        ids = [str(self.jobs[h].job_id) for h in handles]  # type: ignore[index]
        self.watch.seen(job_states(ids, self.accounting, self.run_command))

    @staticmethod
    def _has_result(job: Any) -> bool:
        folder = job.paths.folder
        with contextlib.suppress(OSError):  # a shared file system may cache the listing: a chmod refreshes it
            folder.chmod(folder.stat().st_mode)
        return bool(job.paths.result_pickle.exists())

    @staticmethod
    def _outcome(job: Any) -> Any:
        from submitit.core.utils import FailedJobError, UncompletedJobError

        try:
            return job.result()
        except FailedJobError as exc:  # the job raised (its traceback is in the folder): it would raise again
            lines = [line for line in str(exc).strip().splitlines() if line.strip()]
            return Failure(f"slurm job {job.job_id}: {lines[-1] if lines else exc}", died=False)
        except UncompletedJobError as exc:  # killed, preempted, timed out: no result was written
            return Failure(f"slurm job {job.job_id}: {str(exc).strip().splitlines()[0]}")
        except (OSError, EOFError, ValueError) as exc:  # a result file cut short: as if none was written
            return Failure(f"slurm job {job.job_id}: unreadable result ({type(exc).__name__}: {exc})")

    def close(self) -> None:
        for job in self.jobs.values():
            self._cancel(job)
        self.jobs = {}
