"""The executors' contract on real worker processes: values come back, a task whose worker died is retried once
(and a task that raised is not), the longest start first, each local worker sees its own GPU, and the ETA is the
schedule's makespan. The report on other executors: ``test_executors_report.py``."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from mechrecall.errors import UsageError
from mechrecall.executors import Failure, Task, make_executor, run_tasks
from mechrecall.executors.local import LocalExecutor, visible_gpus
from mechrecall.executors.progress import Progress, clock, makespan


def double(x: int) -> int:
    return 2 * x


def die_once(marker: str, value: int) -> int:
    """Kills its own worker (SIGKILL: no reply, no cleanup) the first time, returns ``value`` the next."""
    if not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return value


def die_always(counter: str) -> None:
    with open(counter, "a") as f:
        f.write("x")
    os.kill(os.getpid(), signal.SIGKILL)


def raise_counted(counter: str) -> None:
    with open(counter, "a") as f:
        f.write("x")
    raise ValueError("bad input")


def gpu_after(seconds: float) -> str:
    time.sleep(seconds)
    return os.environ.get("CUDA_VISIBLE_DEVICES", "")


def record(events: list):
    return lambda kind, task, info: events.append((kind, task.id)) if task is not None else None


def test_values_retries_and_failures_on_worker_processes(tmp_path):
    events: list = []
    tasks = [
        Task("double", double, (21,)),
        Task("dies-once", die_once, (str(tmp_path / "marker"), 7)),
        Task("dies-always", die_always, (str(tmp_path / "deaths"),)),
        Task("raises", raise_counted, (str(tmp_path / "raised"),)),
    ]
    with LocalExecutor(workers=2) as executor:
        outcomes = run_tasks(executor, tasks, on_event=record(events))
    assert outcomes["double"] == 42
    assert outcomes["dies-once"] == 7  # its first worker is gone ...
    assert not _alive(int((tmp_path / "marker").read_text()))  # ... and the retry ran in a new one
    assert isinstance(outcomes["dies-always"], Failure) and outcomes["dies-always"].died
    assert "exit code -9" in outcomes["dies-always"].reason
    assert (tmp_path / "deaths").read_text() == "xx"  # retried once, then reported
    assert outcomes["raises"] == Failure("ValueError: bad input", died=False)
    assert (tmp_path / "raised").read_text() == "x"  # raising again would not help: not retried
    assert ("retrying", "dies-once") in events and ("retrying", "raises") not in events
    assert ("failed", "dies-always") in events and ("done", "double") in events


def test_the_longest_task_starts_first():
    events: list = []
    tasks = [Task(f"t{s}", double, (s,), seconds=s) for s in (1, 30, 5, 300, 2)]
    with LocalExecutor(workers=1) as executor:
        run_tasks(executor, tasks, on_event=record(events))
    assert [t for kind, t in events if kind == "started"] == ["t300", "t30", "t5", "t2", "t1"]


def test_each_local_worker_sees_its_own_gpu(tmp_path):
    pairs = [Task(f"g{i}", gpu_after, (0.5,)) for i in range(2)]  # two at once: one on each worker
    with LocalExecutor(workers=2, gpus=["3", "5"]) as executor:
        assert sorted(run_tasks(executor, pairs).values()) == ["3", "5"]
        run_tasks(executor, [Task("dies-once", die_once, (str(tmp_path / "marker"), 0))])  # a worker dies ...
        assert sorted(run_tasks(executor, pairs).values()) == ["3", "5"]  # ... its replacement has its GPU


def test_visible_gpus_reads_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,7")
    assert visible_gpus() == ["2", "7"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == []


def test_makespan_is_the_longest_first_schedule():
    assert makespan([], [5, 4, 3, 3], slots=2) == 8  # 5 + 3 | 4 + 3 ... the slot freed first takes the next
    assert makespan([10], [4, 4], slots=2) == 10  # both short ones fit beside the running one
    assert makespan([], [], slots=2) == 0
    assert makespan([2, 1], [6], slots=1) == 8  # more running than slots: the longest are the ones that count
    assert clock(75) == "1:15" and clock(3725) == "1:02:05"


def test_progress_scales_the_estimates_by_the_finished_jobs():
    now = [0.0]
    tasks = [Task("a", double, seconds=10), Task("b", double, seconds=10), Task("c", double, seconds=40)]
    display = Progress(tasks, slots=1, stream=io.StringIO(), clock_fn=lambda: now[0])
    assert display.eta() == 60
    display("started", tasks[0], None)
    now[0] = 20.0  # took twice its estimate
    display("done", tasks[0], {"status": "done"})
    assert display.scale() == 2.0 and display.eta() == 100  # (10 + 40) x 2 on one slot
    display("started", tasks[2], None)
    now[0] = 50.0
    assert display.eta() == 50 + 20  # 80 - 30 s run so far, then b's 20
    assert display.status() == "[0:50] 1/3 jobs done, 1 running, 1 queued; ETA 1:10"


def test_progress_estimates_a_job_by_the_same_part_on_another_seed():
    now = [0.0]
    tasks = [Task(f"x/seed{s}:a", double, seconds=10) for s in range(3)] + [Task("x:b", double, seconds=10)]
    display = Progress(tasks, slots=1, stream=io.StringIO(), clock_fn=lambda: now[0])
    display("started", tasks[0], None)
    now[0] = 40.0
    display("done", tasks[0], {"status": "done"})
    assert display.estimate("x/seed2:a") == 40 and display.estimate("x:b") == 40  # the same part / scaled x4
    display("started", tasks[1], None)
    display("done", tasks[1], {"status": "done"})  # 0 s this time: the median of 40 and 0
    assert display.estimate("x/seed2:a") == 20 and display.eta() == 20 + 10 * 40 / 20


def test_progress_writes_one_log_line_per_event(tmp_path):
    tasks = [Task("a", double, (1,), seconds=1), Task("b", raise_counted, (str(tmp_path / "n"),), seconds=2)]
    stream = io.StringIO()
    display = Progress(tasks, slots=1, stream=stream, log=tmp_path / "progress.log")
    with LocalExecutor(workers=1) as executor:
        run_tasks(executor, tasks, on_event=display)
    lines = (tmp_path / "progress.log").read_text().splitlines()
    assert [line.split(" ", 3)[2:3] for line in lines] == [["started"], ["failed"], ["started"], ["done"]]
    assert "b in" in lines[1] and "ValueError: bad input" in lines[1] and "1 failed" in lines[-1]
    assert "\r" not in stream.getvalue()  # not a terminal: plain lines


def test_an_unknown_executor_or_a_missing_package_is_one_line(monkeypatch):
    with pytest.raises(UsageError, match=r"--executor 'dask'; expected one of local, ray, slurm"):
        make_executor("dask")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(UsageError, match=r'the .ray. package is not installed; pip install -e "\.\[ray\]"'):
        make_executor("ray", {"address": "auto"})
    with pytest.raises(UsageError, match="--workers 0; expected >= 1"):
        make_executor("local", {"workers": 0})


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--address", "auto"], "--address is an option of --executor ray, not local"),
        (["--executor", "slurm", "--address", "h:1"], "--address is an option of --executor ray, not slurm"),
        (["--gpus-per-job", "1"], "--gpus-per-job is an option of --executor ray or slurm, not local"),
        (["--executor", "slurm"], "--executor slurm: no sbatch on this machine"),
        (["--executor", "slurm", "--gpus-per-job", "0.5"], "--gpus-per-job 0.5; expected >= 0 and whole on slurm"),
        (["--executor", "ray", "--gpus-per-job", "-1"], "--gpus-per-job -1; expected >= 0"),
    ],
)
def test_executor_options_are_checked_in_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, message):
    from analyses.reproduce import main

    if "slurm" in argv:
        pytest.importorskip("submitit")
        real = shutil.which
        monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "sbatch" else real(name, *a, **k))
    if "ray" in argv:
        pytest.importorskip("ray")
    assert main(["--out", str(tmp_path / "out"), "--only", "noisy_icl", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "noisy_icl").exists()  # nothing ran


# ------------------------------------------------------------------ Slurm: a lost job is a dead job (a fake cluster)


def completed(command, stdout="", stderr="", returncode=0):
    return subprocess.CompletedProcess(command, returncode, stdout, stderr)


def answering(stdout="", stderr="", returncode=0):
    """A fake ``subprocess.run`` whose every command answers the same."""
    return lambda command, **kwargs: completed(command, stdout, stderr, returncode)


def test_squeue_and_sacct_states_are_read_and_a_silent_controller_is_no_state():
    from mechrecall.executors.slurm import GONE, job_states, sacct_states, squeue_states

    def squeue(command, **kwargs):
        assert command[:4] == ["squeue", "--noheader", "--states=all", "--format=%i|%T"]
        return completed(command, "12|RUNNING\n13|CANCELLED\n")

    assert squeue_states(["12", "13", "14"], squeue) == {"12": "RUNNING", "13": "CANCELLED", "14": GONE}
    unknown = answering(stderr="slurm_load_jobs error: Invalid job id specified", returncode=1)
    assert squeue_states(["14"], unknown) == {"14": GONE}  # none of them listed: all ended
    silent = answering(stderr="Unable to contact slurm controller", returncode=1)
    assert squeue_states(["12"], silent) is None and job_states(["12"], False, silent) == {}  # unknown, not lost

    def sacct(command, **kwargs):
        if command[0] == "squeue":
            return squeue(command)
        assert "--allocations" in command and "--jobs=12,13" in command
        return completed(command, "12|CANCELLED by 1000\n12.batch|CANCELLED\n")

    assert sacct_states(["12", "13"], sacct) == {"12": "CANCELLED"}
    assert job_states(["12", "13"], True, sacct) == {"12": "CANCELLED", "13": "CANCELLED"}  # 13: not in sacct yet


def test_accounting_is_read_from_scontrol_and_no_controller_is_one_line():
    from mechrecall.executors.slurm import has_accounting

    assert has_accounting(answering("ClusterName = c\nAccountingStorageType   = accounting_storage/slurmdbd\n"))
    assert not has_accounting(answering("AccountingStorageType = accounting_storage/none\n"))
    down = answering(stderr="slurm_load_ctl_conf error: Unable to contact\nsecond line", returncode=1)
    with pytest.raises(UsageError, match=r"^--executor slurm: scontrol show config failed \(slurm_load_ctl_conf error"):
        has_accounting(down)


def test_a_job_watch_waits_out_the_grace_and_the_time_limit():
    from mechrecall.executors.slurm import GONE, JobWatch

    now = [0.0]
    watch = JobWatch(limit=100, grace=10, clock=lambda: now[0])
    for job_id in ("1", "2", "3"):
        watch.add(job_id)
    watch.seen({"1": "RUNNING", "2": "RUNNING", "3": "PENDING"})
    now[0] = 5
    watch.seen({"1": "CANCELLED", "2": "RUNNING"})  # 3: unknown this time
    assert watch.lost("1") is None  # a result may still show up on a shared file system
    now[0] = 15
    watch.seen({"1": "CANCELLED", "2": GONE, "3": "RUNNING"})
    assert watch.lost("1") == "CANCELLED without a result" and watch.lost("2") is None
    now[0] = 25
    assert watch.lost("2") == "gone from squeue without a result"
    watch.seen({"3": "COMPLETING"})
    now[0] = 115
    assert watch.lost("3") is None  # 100 s since it was first seen running
    watch.seen({"3": "PENDING"})  # requeued: its time starts again
    watch.seen({"3": "RUNNING"})
    now[0] = 200
    assert watch.lost("3") is None
    now[0] = 216
    assert watch.lost("3") == "still RUNNING 101 s after it started (limit and margin)"


class FakeSlurm:
    """A Slurm cluster in a dict: each job's fate by its task id, one per try (``ok``: a result after 5 s;
    ``cancelled``: CANCELLED after 5 s; ``gone``: out of squeue after 5 s; ``hang``: runs on), answering
    ``scontrol``, ``squeue``, ``sacct`` (with ``accounting``) and ``scancel``; the clock moves when the executor
    sleeps."""

    def __init__(self, folder: Path, fates: dict[str, list[str]], accounting: bool):
        self.folder, self.fates, self.accounting = folder, fates, accounting
        self.now, self.calls, self.cancelled = 0.0, [], []
        self.jobs: dict[str, dict] = {}
        self.cluster = "slurm"

    # submitit's executor
    def update_parameters(self, **params):
        self.params = params

    def submit(self, fn, *args):
        job_id = str(len(self.jobs) + 1)
        name = self.params["name"].removeprefix("mechrecall:")
        fate = self.fates[name].pop(0)
        self.jobs[job_id] = {"fate": fate, "at": self.now, "value": fn(*args)}
        return FakeJob(self.folder / job_id, job_id, self.jobs[job_id]["value"])

    def state(self, job_id):
        job, age = self.jobs[job_id], self.now - self.jobs[job_id]["at"]
        if job_id in self.cancelled and job["fate"] == "hang":
            return "CANCELLED"
        if age < 1:
            return "PENDING"
        if age < 5 or job["fate"] == "hang":
            return "RUNNING"
        if job["fate"] == "ok":
            (self.folder / job_id).mkdir(parents=True, exist_ok=True)
            (self.folder / job_id / f"{job_id}_0_result.pkl").write_text("ok")
        return {"ok": "COMPLETED", "cancelled": "CANCELLED", "gone": "GONE"}[job["fate"]]

    # the commands
    def __call__(self, command, **kwargs):
        self.calls.append(command[0])
        ids = command[-1].removeprefix("--jobs=").split(",")
        if command[0] == "scontrol":
            kind = "accounting_storage/slurmdbd" if self.accounting else "accounting_storage/none"
            return completed(command, f"AccountingStorageType = {kind}\n")
        if command[0] == "scancel":
            self.cancelled.append(command[1])
            return completed(command)
        if command[0] == "sacct" and not self.accounting:
            return completed(command, stderr="Slurm accounting storage is disabled", returncode=1)
        lines = [f"{i}|{self.state(i)}" for i in ids if self.state(i) != "GONE"]
        return completed(command, "\n".join(lines))

    def sleep(self, seconds):
        self.now += seconds
        for job_id in self.jobs:
            self.state(job_id)  # an ok job writes its result when its time comes


class FakeJob:
    def __init__(self, folder: Path, job_id: str, value):
        from types import SimpleNamespace

        self.job_id, self.value = job_id, value
        self.paths = SimpleNamespace(folder=folder, result_pickle=folder / f"{job_id}_0_result.pkl")

    def result(self):
        return self.value


@pytest.mark.parametrize("accounting", [False, True], ids=["squeue", "sacct"])
def test_a_slurm_job_that_ends_without_a_result_or_outlives_its_limit_is_retried_once(
    tmp_path, monkeypatch, caplog, capsys, accounting
):
    pytest.importorskip("submitit")
    from mechrecall.executors.slurm import SlurmExecutor

    fates = {
        "ok": ["ok"],
        "cancelled-once": ["cancelled", "ok"],
        "cancelled-twice": ["cancelled", "cancelled"],
        "gone-once": ["gone", "ok"],
        "hangs": ["hang", "hang"],
    }
    cluster = FakeSlurm(tmp_path, fates, accounting)
    monkeypatch.setattr(SlurmExecutor, "run_command", staticmethod(cluster))
    srun = tmp_path / "bin" / "srun"  # submitit's executor wants srun on PATH; the fake cluster answers every call
    srun.parent.mkdir()
    srun.write_text("#!/bin/sh\nexit 1\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{srun.parent}{os.pathsep}{os.environ['PATH']}")
    executor = SlurmExecutor(tmp_path, minutes=1, poll_seconds=2, grace_seconds=3, margin_seconds=30)
    executor.executor, executor.clock, executor.sleep = cluster, lambda: cluster.now, cluster.sleep
    states = "sacct" if accounting else "squeue: accounting is off"
    assert executor.describe().endswith(f"; job states from {states}")
    events: list = []
    tasks = [Task(name, double, (i,)) for i, name in enumerate(fates)]
    with caplog.at_level("DEBUG"):
        outcomes = run_tasks(executor, tasks, on_event=lambda kind, task, info: events.append((kind, task, info)))
    assert outcomes["ok"] == 0 and outcomes["cancelled-once"] == 2 and outcomes["gone-once"] == 6
    retried = {task.id: info for kind, task, info in events if kind == "retrying"}
    assert retried["cancelled-once"] == "slurm job 2: CANCELLED without a result"
    gone = "sacct and squeue" if accounting else "squeue"
    assert retried["gone-once"] == f"slurm job 4: gone from {gone} without a result"
    assert outcomes["cancelled-twice"] == Failure("slurm job 7: CANCELLED without a result")  # its second sbatch job
    assert outcomes["hangs"].reason.startswith("slurm job 9: still RUNNING") and outcomes["hangs"].died
    assert sorted(retried) == ["cancelled-once", "cancelled-twice", "gone-once", "hangs"]
    assert sorted(cluster.cancelled) == ["2", "3", "4", "5", "7", "9"]  # every lost job, in case it comes back
    assert 180 < cluster.now < 200  # the job that hangs: twice the limit (60 s) and the margin (30 s)
    polls = cluster.calls.count("sacct" if accounting else "squeue")
    assert polls <= cluster.now / 2 + 1  # at most every poll_seconds
    assert cluster.calls.count("sacct") == (polls if accounting else 0)
    assert not [r for r in caplog.records if r.levelname == "WARNING"] and not capsys.readouterr().err  # quiet
