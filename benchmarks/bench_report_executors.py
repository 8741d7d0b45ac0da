"""The report's wall time, how busy it keeps the cores, and the Ray executor's overhead over local processes.

    .venv/bin/python benchmarks/bench_report_executors.py            # the whole quick report, local then Ray: ~20 min
    .venv/bin/python benchmarks/bench_report_executors.py --quick    # one experiment of it: ~3 min
    .venv/bin/python benchmarks/bench_report_executors.py --preset smoke --seeds 0 --skip-ray

Runs ``python -m analyses.reproduce`` as a user would, once with ``--executor local`` and once with ``--executor
ray`` on a Ray cluster of this machine (``ray start --head`` with as many CPUs as the local workers), into fresh
folders. Both run inside a network namespace with only loopback (``unshare -n``; Ray otherwise probes a public
address for its own IP). From each run's ``OUT/report/progress.log``: the wall time (first to last event) and the
scheduling efficiency, the jobs' summed seconds / (workers × wall): 1 when no core ever waits.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import row

NAME = "report_executors"
ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
QUICK_ONLY = ("induction_emergence",)


def job_seconds(out: Path) -> float:
    """The finished jobs' seconds, summed, from ``OUT/report/progress.log``."""
    text = (out / "report" / "progress.log").read_text()
    return sum(float(s) for s in re.findall(r" (?:done|failed) \S+ in (\d+) s", text))


def run_report(executor: str, args: list[str], workers: int, out: Path) -> float:
    """Wall seconds of one report run (``ray``: on a private cluster started for it), inside ``unshare -n``."""
    command = [str(BIN / "python"), "-m", "analyses.reproduce", "--out", str(out), "--no-progress", *args]
    command += (
        ["--workers", str(workers)] if executor == "local" else ["--executor", "ray", "--address", "127.0.0.1:6381"]
    )
    script = "set -e; ip link set lo up\n"
    if executor == "ray":
        temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
        script += (
            f"trap '{BIN / 'ray'} stop --force >/dev/null 2>&1; rm -rf {temp}' EXIT\n"
            f"{BIN / 'ray'} start --head --port=6381 --node-ip-address=127.0.0.1 --num-cpus={workers} "
            f"--temp-dir={temp} --include-dashboard=false --disable-usage-stats >/dev/null\n"
        )
    script += " ".join(command) + " >/dev/null\n"
    started = time.perf_counter()
    subprocess.run(["unshare", "-n", "bash", "-c", script], cwd=ROOT, check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_ONLY)} of the quick report")
    ap.add_argument("--preset", default="quick", help="the report preset (default %(default)s)")
    ap.add_argument("--seeds", default="0", help="the report's seeds (default %(default)s)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip-ray", action="store_true", help="the local executor only")
    ap.add_argument("--keep", metavar="DIR", help="write the runs under DIR (default: a temporary folder)")
    args = ap.parse_args(argv)
    report = ["--preset", args.preset, "--seeds", args.seeds] + (["--only", *QUICK_ONLY] if args.quick else [])
    base = Path(args.keep or tempfile.mkdtemp(prefix="bench-report-"))
    results = {}
    for executor in ("local",) if args.skip_ray else ("local", "ray"):
        out = base / executor
        shutil.rmtree(out, ignore_errors=True)
        wall = run_report(executor, report, args.workers, out)
        busy = job_seconds(out) / (args.workers * wall)
        results[executor] = {"wall_s": wall, "jobs_s": job_seconds(out), "efficiency": busy}
        print(
            f"{executor}: {' '.join(report)}: {wall:.0f} s wall, jobs {job_seconds(out):.0f} s, efficiency {busy:.2f}"
        )
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return results


def run(quick: bool) -> list[dict]:
    r = main(["--quick"] if quick else [])
    local, plan = r["local"], "induction_emergence of the quick report" if quick else "the quick report"
    # the 6-minute and 0.85 targets are the whole quick report's: a one-experiment subset has none
    wall_target, busy_target = ("", "") if quick else ("<= 1", ">= 0.85")
    rows = [
        row(
            NAME,
            f"{plan}: wall / 360 s (local, 2 workers)",
            local["wall_s"] / 360,
            wall_target,
            None if quick else local["wall_s"] <= 360,
            f"{local['wall_s']:.0f} s wall",
        ),
        row(
            NAME,
            f"{plan}: job seconds / (workers x wall), local",
            local["efficiency"],
            busy_target,
            None if quick else local["efficiency"] >= 0.85,
            f"{local['jobs_s']:.0f} s of jobs",
        ),
    ]
    ray = r["ray"]
    rows.append(
        row(
            NAME,
            f"{plan}: Ray / local wall time",
            ray["wall_s"] / local["wall_s"],
            "<= 1.10",
            ray["wall_s"] <= 1.10 * local["wall_s"],
            f"Ray {ray['wall_s']:.0f} s, efficiency {ray['efficiency']:.2f}",
        )
    )
    return rows


if __name__ == "__main__":
    main()
