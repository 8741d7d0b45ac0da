"""Worker processes on this machine (``--executor local``, the default).

Each worker is a spawned process that runs one task at a time, sent to it over a pipe; a worker that dies (killed,
out of memory) loses only the task it held, which :func:`~mechrecall.executors.base.run_tasks` retries, and a new
worker takes its place. On a machine with GPUs each worker sees its own (``CUDA_VISIBLE_DEVICES``); a worker exits
by itself when the driver is gone (a driver killed outright runs no cleanup).
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Hashable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from mechrecall.errors import UsageError
from mechrecall.executors.base import Executor, Failure, Task


def visible_gpus() -> list[str]:
    """This machine's GPUs as ``CUDA_VISIBLE_DEVICES`` ids: that variable's own list when set, else one id per line of
    ``nvidia-smi -L`` (none without the NVIDIA driver). Asks no torch: the driver stays light."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        found = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(found.stdout.splitlines()) if line.startswith("GPU ")]


def watch_parent(parent: int, every: float = 1.0) -> None:
    """Exit when ``parent`` is gone; otherwise a worker of a driver killed outright (SIGTERM, SIGKILL) would go on
    writing into ``OUT`` beside the rerun that resumes it."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="watch-parent").start()


def serve(conn: Connection, env: dict[str, str], parent: int) -> None:
    """A worker's loop: ``(fn, args)`` in, ``("ok", value)`` or ``("error", reason)`` out, until ``None``."""
    os.environ.update(env)  # before the task imports torch: CUDA_VISIBLE_DEVICES is read once
    watch_parent(parent)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        fn, args = message
        try:
            reply = ("ok", fn(*args))
        except BaseException as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(reply)


class Worker:
    """One spawned worker process and the driver's end of its pipe."""

    def __init__(self, context: Any, env: dict[str, str], slot: int):
        self.conn, child = context.Pipe()
        self.env, self.slot = env, slot
        self.process = context.Process(target=serve, args=(child, env, os.getpid()), daemon=True)
        self.process.start()
        child.close()

    def outcome(self) -> Any:
        """The reply of a worker whose pipe or process signalled: its value, or a :class:`Failure`."""
        try:
            if self.conn.poll():
                kind, value = self.conn.recv()
                return value if kind == "ok" else Failure(value, died=False)
        except (EOFError, OSError):
            pass
        self.process.join(timeout=5)
        return Failure(f"worker {self.process.pid} died (exit code {self.process.exitcode})")

    def stop(self, now: bool = False) -> None:
        if now:
            self.process.kill()
        else:
            with contextlib.suppress(OSError):
                self.conn.send(None)
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class LocalExecutor(Executor):
    """``workers`` spawned processes on this machine; ``gpus`` (ids such as ``["0", "1"]``): worker *i* sees GPU
    ``gpus[i % len(gpus)]`` alone, so with as many workers as GPUs each has its own."""

    name = "local"

    def __init__(self, workers: int = 1, gpus: Sequence[str] = ()):
        if workers < 1:
            raise UsageError(f"--workers {workers}; expected >= 1")
        self.workers, self.gpus = workers, [str(g) for g in gpus]
        self.context = multiprocessing.get_context("spawn")
        self.idle: list[Worker] = []
        self.busy: dict[int, Worker] = {}
        self.free = list(range(workers))  # the slots without a worker: a slot's GPU is gpus[slot % len(gpus)]
        self.handles = itertools.count()

    def capacity(self) -> int:
        return self.workers

    def describe(self) -> str:
        gpus = f", GPUs {','.join(self.gpus)}" if self.gpus else ""
        return f"local: {self.workers} worker process(es){gpus}"

    def _worker(self) -> Worker:
        if self.idle:
            return self.idle.pop()
        slot = self.free.pop(0)
        env = {"CUDA_VISIBLE_DEVICES": self.gpus[slot % len(self.gpus)]} if self.gpus else {}
        return Worker(self.context, env, slot)

    def submit(self, task: Task) -> Hashable:
        worker = self._worker()
        handle = next(self.handles)
        self.busy[handle] = worker
        with contextlib.suppress(OSError):  # a worker already gone: wait() reports it
            worker.conn.send((task.fn, task.args))
        return handle

    def wait(self, handles: Sequence[Hashable], timeout: float) -> list[tuple[Hashable, Any]]:
        watched: dict[Any, int] = {}
        for handle in handles:
            worker = self.busy[handle]  # type: ignore[index]
            watched[worker.conn] = watched[worker.process.sentinel] = handle  # type: ignore[assignment]
        finished: list[tuple[Hashable, Any]] = []
        for handle in dict.fromkeys(watched[r] for r in wait(list(watched), timeout)):
            worker = self.busy.pop(handle)
            outcome = worker.outcome()
            if (isinstance(outcome, Failure) and outcome.died) or not worker.process.is_alive():
                worker.stop(now=True)  # (a worker that replied, then died, takes no next task)
                self.free.append(worker.slot)
            else:
                self.idle.append(worker)
            finished.append((handle, outcome))
        return finished

    def close(self) -> None:
        for worker in self.idle:
            worker.stop()
        for worker in self.busy.values():
            worker.stop(now=True)
        self.idle, self.busy = [], {}
