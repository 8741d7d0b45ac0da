"""A tiny report plan on every executor gives the claims of the local one: files shipped back from workers that do
not share ``OUT`` (in-process), Slurm through submitit's local executor, and a real two-node Ray cluster in a
network namespace of its own (loopback only) with one worker killed mid-job, whose job is retried."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from analyses.report import reproduce
from analyses.report.runner import Job, run_all
from mechrecall.executors.local import LocalExecutor

JOBS = [
    Job("contextual_recall", "micro", ("construction",)),
    Job("laser_pythia", "paper", ("factual",), offline=True),  # `not run` without Pythia's weights
    Job("induction_emergence", "micro", ("exact",)),
]
REPO = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).parent / "ray"


def claims(report: dict) -> list[tuple]:
    """Every row's experiment, id, numbers and verdict."""
    keys = ("experiment", "id", "ours", "control", "verdict")
    return sorted(tuple(json.dumps(row[k]) for k in keys) for row in report["claims"])


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    return reproduce(tmp_path_factory.mktemp("local"), jobs=JOBS, workers=2, progress=False)


class Unshared(LocalExecutor):
    """Local workers treated as if on another machine: the runner ships each job's files back."""

    shared_out = False


def test_files_shipped_back_give_the_same_report_and_files(local, tmp_path):
    report = reproduce(tmp_path, jobs=JOBS, executor=Unshared(workers=2), progress=False)
    assert claims(report) == claims(local) and len(claims(report)) > 3
    local_out = Path(local["paths"]["html"]).parents[1]
    figures = {p.relative_to(tmp_path) for p in tmp_path.rglob("*.png")}
    assert figures == {p.relative_to(local_out) for p in local_out.rglob("*.png")} and figures  # every one came back
    logs = {p.name for p in (tmp_path / "report" / "logs").iterdir()}
    assert logs == {"contextual_recall.construction.log", "laser_pythia.factual.log", "induction_emergence.exact.log"}
    progress = (tmp_path / "report" / "progress.log").read_text()
    assert progress.count(" started ") == 3 and progress.count(" done ") == 3


def test_a_shipped_job_keeps_the_parts_already_in_out_and_refuses_another_configuration(tmp_path):
    jobs = [Job("laser_pythia", "paper", (part,), offline=True) for part in ("factual", "factual20")]
    run_all(jobs[:1], tmp_path, executor=Unshared(workers=1), progress=False)
    run_all(jobs[1:], tmp_path, executor=Unshared(workers=1), progress=False)
    payload = json.loads((tmp_path / "laser_pythia" / "results.json").read_text())
    assert list(payload["parts"]) == ["factual", "factual20"]
    clash = [Job("laser_pythia", "paper", ("ioi",), offline=True, seed=1)]  # same folder, another seed
    records = run_all(clash, tmp_path, executor=Unshared(workers=1), progress=False)
    assert records["laser_pythia"]["status"] == "failed"
    assert "holds results of another configuration" in records["laser_pythia"]["error"]
    assert list(json.loads((tmp_path / "laser_pythia" / "results.json").read_text())["parts"]) == list(payload["parts"])


@pytest.mark.slow
def test_slurm_through_submitits_local_executor_gives_the_local_claims(local, tmp_path):
    pytest.importorskip("submitit")
    from mechrecall.executors import make_executor

    executor = make_executor("slurm", {"folder": tmp_path / "report" / "slurm", "cluster": "local", "minutes": 10})
    report = reproduce(tmp_path, jobs=JOBS, executor=executor, progress=False)
    assert claims(report) == claims(local)
    assert len(list((tmp_path / "report" / "slurm").glob("*/*_result.pkl"))) == len(JOBS)  # one job each


DRIVER = """
import json, os, signal, sys, threading, time
from analyses.report import reproduce
from analyses.report.runner import Job

def kill_first_worker_of(name, record):
    # a Ray worker running a task is titled ray::<task name>: kill it, once, mid-job
    while True:
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                args = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')[0].decode()
            except OSError:
                continue
            if args == f'ray::mechrecall:{name}':
                os.kill(int(pid), signal.SIGKILL)
                open(record, 'w').write(pid)
                return
        time.sleep(0.02)

jobs = [Job(*j[:3], offline=j[3]) for j in json.loads(sys.argv[3])]
threading.Thread(target=kill_first_worker_of, args=("contextual_recall:construction", sys.argv[4]), daemon=True).start()
report = reproduce(sys.argv[1], jobs=jobs, executor="ray", executor_options={"address": sys.argv[2]}, progress=False)
json.dump(report["claims"], open(os.path.join(sys.argv[1], "ray-claims.json"), "w"))
"""


@pytest.mark.slow
def test_a_two_node_ray_cluster_in_its_own_network_namespace_retries_a_killed_worker(local, tmp_path):
    """``ray start --head`` and a second node joining it, inside ``unshare -n`` with only loopback up (Ray left alone
    probes a public address for its own IP); the report's driver in the same namespace."""
    pytest.importorskip("ray")
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("needs unshare -n (a network namespace of the test's own)")
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    jobs = json.dumps([[j.name, j.preset, list(j.parts or ()), j.offline] for j in JOBS])
    (tmp_path / "driver.py").write_text(DRIVER)
    common = "--node-ip-address=127.0.0.1 --num-cpus=1 --disable-usage-stats"
    script = textwrap.dedent(f"""
        set -e
        ip link set lo up
        trap '{RAY} stop --force >/dev/null 2>&1' EXIT
        {RAY} start --head --port=6380 --temp-dir={temp} --include-dashboard=false {common} >/dev/null
        {RAY} start --address=127.0.0.1:6380 {common} >/dev/null
        test "$(ip -o link show up | wc -l)" = 1  # loopback only
        {sys.executable} {tmp_path / "driver.py"} {tmp_path / "out"} 127.0.0.1:6380 '{jobs}' {tmp_path / "killed"}
    """)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    try:
        done = subprocess.run(
            ["unshare", "-n", "bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "killed").read_text().isdigit()  # a worker was killed mid-job ...
    progress = (tmp_path / "out" / "report" / "progress.log").read_text()
    assert "retrying contextual_recall:construction: WorkerCrashedError" in progress  # ... its job retried ...
    ray_claims = json.loads((tmp_path / "out" / "ray-claims.json").read_text())
    assert claims({"claims": ray_claims}) == claims(local)  # ... and the report is the local one
    assert "ray: 127.0.0.1:6380, 2 node(s), 2 slot(s)" in progress


SLURM_DRIVER = """
import json, subprocess, sys, threading, time
from pathlib import Path
from analyses.reproduce import executor_options_of, parser
from analyses.report import reproduce
from analyses.report.runner import Job

def cancel_mid_job(name, times, folder, record):
    # scancel the sbatch job running <name>, `times` times, each 0.5 s after submitit began loading the call
    cancelled = []
    while len(cancelled) < times:
        running = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-n", f"mechrecall:{name}", "-o", "%i"],
                                 capture_output=True, text=True).stdout.split()
        for job_id in running:
            log = folder / job_id / f"{job_id}_0_log.out"
            if job_id not in cancelled and log.exists() and "Loading pickle" in log.read_text():
                time.sleep(0.5)
                subprocess.run(["scancel", job_id], check=True)
                cancelled.append(job_id)
        time.sleep(0.1)
    record.write_text(",".join(cancelled))

def run(out, jobs, name, times):
    args = parser().parse_args(["--out", out, "--executor", "slurm", "--slurm-partition", "debug",
                                "--slurm-minutes", "10"])
    options = {**executor_options_of(args), "poll_seconds": 1, "grace_seconds": 2}
    killer = threading.Thread(target=cancel_mid_job, args=(name, times, Path(options["folder"]),
                              Path(out) / "cancelled"), daemon=True)
    killer.start()
    report = reproduce(out, jobs=jobs, executor="slurm", executor_options=options)
    json.dump(report["claims"], open(Path(out) / "slurm-claims.json", "w"))

jobs = [Job(*j[:3], offline=j[3]) for j in json.loads(sys.argv[2])]
run(sys.argv[1] + "/once", jobs, "contextual_recall:construction", 1)
run(sys.argv[1] + "/twice", [j for j in jobs if j.name != "contextual_recall"], "induction_emergence:exact", 2)
"""
SLURM_TOOLS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "ip", "unshare")


@pytest.mark.slow
@pytest.mark.slurm
def test_a_one_node_slurm_cluster_retries_a_cancelled_job_once_then_reports_it_failed(local, tmp_path):
    """``scripts/slurm_one_node.sh`` (munged, slurmctld, slurmd; accounting off) inside ``unshare -n`` runs the plan
    through ``--executor slurm``: one job ``scancel``-ed mid-run is retried in a new sbatch job and the claims are
    the local ones; in a second plan one job cancelled twice is reported failed and the other completes. No poll
    prints a warning; the states' source is said once per run."""
    pytest.importorskip("submitit")
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (apt-get install munge slurmctld slurmd slurm-client iproute2)")
    if subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("needs unshare -n (a network namespace of the test's own)")
    jobs = json.dumps([[j.name, j.preset, list(j.parts or ()), j.offline] for j in JOBS])
    (tmp_path / "driver.py").write_text(SLURM_DRIVER)
    command = [sys.executable, str(tmp_path / "driver.py"), str(tmp_path), jobs]
    temp = tempfile.mkdtemp(prefix="slurm", dir="/tmp")  # the munge socket's path must stay short
    try:
        done = subprocess.run(
            ["unshare", "-n", str(REPO / "scripts" / "slurm_one_node.sh"), "--kill-wait", "1", "--", *command],
            cwd=REPO,
            env={**os.environ, "TMPDIR": temp},
            capture_output=True,
            text=True,
            timeout=400,
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    once, twice = tmp_path / "once", tmp_path / "twice"
    progress = (once / "report" / "progress.log").read_text()
    (cancelled,) = (once / "cancelled").read_text().split(",")  # one sbatch job cancelled mid-run ...
    assert f"retrying contextual_recall:construction: slurm job {cancelled}: CANCELLED without a result" in progress
    slurm_claims = json.loads((once / "slurm-claims.json").read_text())
    assert claims({"claims": slurm_claims}) == claims(local)  # ... the claims are the local ones
    assert len(list((once / "report" / "slurm").glob("*/*_submitted.pkl"))) == len(JOBS) + 1  # its retry: a new job
    progress = (twice / "report" / "progress.log").read_text()
    first, second = (twice / "cancelled").read_text().split(",")
    assert f"retrying induction_emergence:exact: slurm job {first}: CANCELLED" in progress
    assert "failed induction_emergence:exact in " in progress and f"slurm job {second}: CANCELLED" in progress
    rows = json.loads((twice / "slurm-claims.json").read_text())
    assert claims({"claims": [r for r in rows if r["experiment"] == "laser_pythia"]}) == claims(
        {"claims": [r for r in local["claims"] if r["experiment"] == "laser_pythia"]}
    )  # the other job completed
    assert "job states from squeue: accounting is off" in progress
    assert "WARNING" not in done.stderr and "Bypassing" not in done.stderr  # no poll warns
    assert done.stderr.count("accounting is off") == 2  # said once per run
