"""Jobs and the loop that runs them on any executor: longest first, a dead worker's job retried once.

An :class:`Executor` runs picklable calls ``fn(*args)`` somewhere (worker processes, a Ray cluster, Slurm) and
reports how many it has room for. :func:`run_tasks` keeps that many in flight, the longest first (so the tail of
the schedule is short), and returns each task's value. A task whose worker died (killed, out of memory, its node
lost) is run once more, then reported as a :class:`Failure`; a task that raised is a failure at once (running it
again would raise again); either way the other tasks go on.
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mechrecall.errors import UsageError

#: The executors :func:`make_executor` builds, with the extra that installs each one's package.
EXECUTORS = {"local": None, "ray": "ray", "slurm": "slurm"}
_PACKAGES = {"ray": "ray", "slurm": "submitit"}


@dataclass(frozen=True)
class Task:
    """One job: ``fn(*args)`` (both picklable), its estimated ``seconds`` (the longest start first; the ETA) and
    what it asks of a worker."""

    id: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    seconds: float = 60.0
    cpus: int = 1
    gpus: float = 0.0


@dataclass(frozen=True)
class Failure:
    """A task that returned no value: its worker ``died`` (retried once), or it raised (not retried)."""

    reason: str
    died: bool = True


class Executor(ABC):
    """Runs tasks somewhere. ``submit`` returns a handle; ``wait`` returns the finished ones' outcomes (a value or a
    :class:`Failure`). ``shared_out``: whether a task writes where the driver reads (a local disk, a shared file
    system); when not, the caller ships a task's files back."""

    name: str = ""
    shared_out: bool = True

    @abstractmethod
    def capacity(self) -> int:
        """How many tasks may run at once."""

    @abstractmethod
    def submit(self, task: Task) -> Hashable: ...

    @abstractmethod
    def wait(self, handles: Sequence[Hashable], timeout: float) -> list[tuple[Hashable, Any]]:
        """The handles among ``handles`` that finished (within ``timeout`` seconds), each with its outcome."""

    @abstractmethod
    def close(self) -> None:
        """Stop what still runs and free the workers."""

    def describe(self) -> str:
        return self.name

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Event = Callable[[str, "Task | None", Any], None]


def run_tasks(
    executor: Executor, tasks: Sequence[Task], *, on_event: Event | None = None, retries: int = 1
) -> dict[str, Any]:
    """Run ``tasks`` on ``executor``, longest first, at most :meth:`Executor.capacity` at once; returns
    ``{task id: value or Failure}``. ``on_event(kind, task, info)`` hears ``started``, ``done`` (info: the value),
    ``retrying`` (info: the reason), ``failed`` (info: the :class:`Failure`) and ``tick`` (no task) once a second."""
    event = on_event or (lambda kind, task, info: None)
    queue = sorted(tasks, key=lambda t: -t.seconds)
    tries: dict[str, int] = {}
    running: dict[Hashable, Task] = {}
    outcomes: dict[str, Any] = {}
    while queue or running:
        while queue and len(running) < max(1, executor.capacity()):
            task = queue.pop(0)
            running[executor.submit(task)] = task
            event("started", task, None)
        for handle, outcome in executor.wait(list(running), timeout=1.0):
            task = running.pop(handle)
            if isinstance(outcome, Failure) and outcome.died and tries.get(task.id, 0) < retries:
                tries[task.id] = tries.get(task.id, 0) + 1
                queue.insert(0, task)  # it was among the longest waiting: it goes first again
                event("retrying", task, outcome.reason)
                continue
            outcomes[task.id] = outcome
            event("failed" if isinstance(outcome, Failure) else "done", task, outcome)
        event("tick", None, None)
    return outcomes


def check_package(name: str) -> None:
    """One line when ``name``'s package is not installed (the extras are optional)."""
    import importlib.util

    package = _PACKAGES.get(name)
    if package and importlib.util.find_spec(package) is None:
        raise UsageError(
            f"--executor {name}: the {package!r} package is not installed; "
            f'pip install -e ".[{EXECUTORS[name]}]" (or pip install {package})'
        )


def make_executor(name: str, options: Mapping[str, Any] | None = None) -> Executor:
    """The executor ``name`` (``local``, ``ray``, ``slurm``) with its ``options``; every check (the name, the
    package, the options) before any work. Options: ``workers``, ``gpus`` (local); ``address``, ``gpus_per_job``
    (ray); ``folder``, ``partition``, ``minutes``, ``gpus_per_job``, ``max_jobs``, ``cluster`` (slurm)."""
    options = dict(options or {})
    if name not in EXECUTORS:
        raise UsageError(f"--executor {name!r}; expected one of {', '.join(EXECUTORS)}")
    check_package(name)
    if name == "local":
        from mechrecall.executors.local import LocalExecutor

        return LocalExecutor(**options)
    if name == "ray":
        from mechrecall.executors.ray_cluster import RayExecutor

        return RayExecutor(**options)
    from mechrecall.executors.slurm import SlurmExecutor

    if options.get("cluster") != "local" and shutil.which("sbatch") is None:
        raise UsageError("--executor slurm: no sbatch on this machine; run on a Slurm login node (or --slurm-local)")
    return SlurmExecutor(**options)
