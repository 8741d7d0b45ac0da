"""A Ray cluster (``--executor ray``, ``pip install -e ".[ray]"``): one job a Ray task with its CPU / GPU request.

``address``: ``auto`` (the cluster this machine belongs to, started with ``ray start --head``), ``HOST:PORT`` (a
head node: a laptop, a cloud cluster, KubeRay), or ``local`` (start a private Ray on this machine for this run).
The tasks may run on other machines, so :attr:`shared_out` is false: the caller ships each task's files back to
the driver. Ray's own retries are off (``max_retries=0``): a task whose worker or node died is retried once by
:func:`~mechrecall.executors.base.run_tasks`, like on every executor.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from mechrecall.errors import UsageError
from mechrecall.executors.base import Executor, Failure, Task


def call(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """What a Ray task runs (``fn`` travels as an argument: one remote function for every job)."""
    return fn(*args)


class RayExecutor(Executor):
    """Tasks on the Ray cluster at ``address``; each asks ``cpus`` CPUs (its task's) and ``gpus_per_job`` GPUs."""

    name = "ray"
    shared_out = False

    def __init__(self, address: str = "auto", gpus_per_job: float = 0.0, node_ip_address: str | None = None):
        import ray

        if gpus_per_job < 0:
            raise UsageError(f"--gpus-per-job {gpus_per_job}; expected >= 0")
        self.address, self.gpus_per_job = address, gpus_per_job
        kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
        if node_ip_address:
            kwargs["_node_ip_address"] = node_ip_address
        if address == "local":
            kwargs["include_dashboard"] = False
        try:
            ray.init(address=None if address == "local" else address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(
                f"--address {address}: no Ray cluster there ({str(exc).splitlines()[0]}); start one with "
                "`ray start --head`, or use --address local"
            ) from None
        self.ray = ray
        self.remote = ray.remote(max_retries=0)(call)
        self.refs: dict[int, Any] = {}
        self.handles = itertools.count()

    def capacity(self) -> int:
        """How many one-CPU (or ``gpus_per_job``-GPU) tasks the cluster's nodes hold now."""
        resources = self.ray.cluster_resources()
        slots = int(resources.get("CPU", 1))
        if self.gpus_per_job:
            slots = min(slots, int(resources.get("GPU", 0) // self.gpus_per_job))
        return max(1, slots)

    def describe(self) -> str:
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        return f"ray: {self.address}, {len(nodes)} node(s), {self.capacity()} slot(s)"

    def submit(self, task: Task) -> Hashable:
        ref = self.remote.options(
            num_cpus=task.cpus, num_gpus=self.gpus_per_job or task.gpus, name=f"mechrecall:{task.id}"
        ).remote(task.fn, task.args)
        handle = next(self.handles)
        self.refs[handle] = ref
        return handle

    def wait(self, handles: Sequence[Hashable], timeout: float) -> list[tuple[Hashable, Any]]:
        by_ref = {self.refs[h]: h for h in handles}  # type: ignore[index]
        ready, _ = self.ray.wait(list(by_ref), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self.ray.wait(list(by_ref), num_returns=len(by_ref), timeout=0)
        finished = []
        for ref in ready:
            handle = by_ref[ref]
            del self.refs[handle]  # type: ignore[arg-type]
            finished.append((handle, self._outcome(ref)))
        return finished

    def _outcome(self, ref: Any) -> Any:
        from ray import exceptions

        try:
            return self.ray.get(ref)
        except exceptions.RayTaskError as exc:  # the job itself raised: running it again would raise again
            return Failure(str(exc).strip().splitlines()[-1], died=False)
        except exceptions.RayError as exc:  # its worker crashed, its node died, its result was lost
            return Failure(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}")

    def close(self) -> None:
        for ref in self.refs.values():
            self.ray.cancel(ref, force=True)
        self.refs = {}
        self.ray.shutdown()
