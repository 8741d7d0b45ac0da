"""An executor of the core for the tests: each task runs in this process as it is submitted (and is recorded)."""

from __future__ import annotations

from mechrecall.executors import Failure


class InlineExecutor:
    """An executor of the core that runs each task here as it is submitted, in order."""

    name = "inline"

    def __init__(self, shared_out: bool = True, capacity: int = 1):
        self.shared_out, self.slots, self.submitted, self.outcomes = shared_out, capacity, [], {}

    def capacity(self) -> int:
        return self.slots

    def describe(self) -> str:
        return self.name

    def submit(self, task):
        self.submitted.append(task.id)
        try:
            self.outcomes[task.id] = task.fn(*task.args)
        except Exception as exc:
            self.outcomes[task.id] = Failure(f"{type(exc).__name__}: {exc}", died=False)
        return task.id

    def wait(self, handles, timeout):
        return [(h, self.outcomes.pop(h)) for h in handles]

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
