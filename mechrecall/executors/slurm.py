"""Slurm through submitit (``--executor slurm``, ``pip install -e ".[slurm]"``): one job an sbatch job.

The jobs write into ``--out`` themselves, which must be on a file system the compute nodes share with the login
node (:attr:`shared_out`); submitit keeps each job's sbatch script, logs and pickled call (written by this driver,
read back by it alone) in ``folder``. ``cluster="local"`` runs the same jobs as processes of this machine through
submitit's local executor (a dry run of a cluster plan, and the tests).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from mechrecall.errors import UsageError
from mechrecall.executors.base import Executor, Failure, Task


class SlurmExecutor(Executor):
    """sbatch jobs of ``minutes`` each on ``partition``, ``gpus_per_job`` GPUs and the task's CPUs each, at most
    ``max_jobs`` at once (an array's ``%N``; default: every job of the plan)."""

    name = "slurm"

    def __init__(
        self,
        folder: str | Path,
        partition: str | None = None,
        minutes: int = 120,
        gpus_per_job: int = 0,
        max_jobs: int | None = None,
        cluster: str | None = None,
    ):
        import submitit

        for option, value, low in (("--slurm-minutes", minutes, 1), ("--gpus-per-job", gpus_per_job, 0)):
            if value < low:
                raise UsageError(f"{option} {value}; expected >= {low}")
        if max_jobs is not None and max_jobs < 1:
            raise UsageError(f"--max-jobs {max_jobs}; expected >= 1")
        self.folder, self.max_jobs = Path(folder), max_jobs
        self.executor = submitit.AutoExecutor(folder=self.folder / "%j", cluster=cluster or "slurm")
        params: dict[str, Any] = {"timeout_min": minutes, "name": "mechrecall"}
        if gpus_per_job:
            params["gpus_per_node"] = gpus_per_job
        if partition:
            params["slurm_partition"] = partition
        self.executor.update_parameters(**params)
        self.jobs: dict[int, Any] = {}
        self.handles = itertools.count()

    def capacity(self) -> int:
        return self.max_jobs or 10**6

    def describe(self) -> str:
        return f"slurm ({self.executor.cluster}): logs in {self.folder}"

    def submit(self, task: Task) -> Hashable:
        self.executor.update_parameters(cpus_per_task=task.cpus)
        handle = next(self.handles)
        self.jobs[handle] = self.executor.submit(task.fn, *task.args)
        return handle

    def wait(self, handles: Sequence[Hashable], timeout: float) -> list[tuple[Hashable, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            done = [h for h in handles if self.jobs[h].done()]  # type: ignore[index]
            if done or time.monotonic() >= deadline:
                return [(h, self._outcome(self.jobs.pop(h))) for h in done]  # type: ignore[call-overload]
            time.sleep(min(0.5, timeout))

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

    def close(self) -> None:
        for job in self.jobs.values():
            job.cancel(check=False)
        self.jobs = {}
