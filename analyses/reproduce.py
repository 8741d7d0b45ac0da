"""Every paper's claims, checked, in one report — ``python -m analyses.reproduce --help``.

The logic lives in ``analyses/report/`` (plan, runner, collection, rendering); this module is its command line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from mechrecall.seeds import parse_seeds

#: The seeds each report preset runs unless --seed or --seeds says otherwise: the smoke report shows the spread.
DEFAULT_SEEDS = {"quick": (0,), "smoke": (0, 1, 2, 3, 4), "paper": (0,)}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m analyses.reproduce",
        description="Run every paper's experiments and write OUT/report/ (report.html: one self-contained page; "
        "report.md; claims.json: every claim row with its verdict).",
        epilog="A rerun into the same --out skips finished parts; a killed run resumes where it stopped.",
    )
    p.add_argument(
        "--preset",
        default="quick",
        choices=("quick", "smoke", "paper"),
        help="quick: about 11 min on 2 CPU cores; smoke: the more faithful laptop run; paper: the papers' sizes (a GPU)"
        " (default %(default)s)",
    )
    p.add_argument(
        "--only", nargs="+", metavar="NAME", default=None, help="run only these experiments (NAME) or parts (NAME:PART)"
    )
    p.add_argument("--out", default="runs", help="output folder (default %(default)s)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: the cores)")
    p.add_argument("--model", default=None, help="hub name or local folder for the pretrained-model parts")
    p.add_argument("--seed", type=int, default=None, help="seed of every experiment (default 0)")
    p.add_argument(
        "--seeds",
        type=parse_seeds,
        default=None,
        metavar="SEEDS",
        help="run every experiment for each seed (0-2 or 0,3,7): each row shows the mean, the min-max and how many "
        "seeds passed; a claim is reproduced when every seed passes, partial when at least half do (default: 0 for "
        "quick and paper, 0-4 for smoke)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    window = p.add_argument_group(
        "a GPU window",
        "with --budget: run the paper preset's longest parts that fit the budget, --lanes at once on --device, "
        "chosen by the paper-scale ledger (docs/paper-scale.md); stop the rest at the deadline (resumable), and "
        "write OUT/kept/ (finished results, to commit) and OUT/window/ (everything, to bring back)",
    )
    window.add_argument("--device", default="cpu", help="where every job runs: cpu, cuda, cuda:1 (default cpu)")
    window.add_argument("--budget", default=None, metavar="TIME", help="the window's length: 12m, 600s, 1.5h")
    window.add_argument("--lanes", type=int, default=3, help="jobs at once on the one device (default 3)")
    window.add_argument("--threads", type=int, default=1, help="torch CPU threads per job (default 1)")
    add_executor_options(p)
    p.add_argument(
        "--readme-table", action="store_true", help="print the markdown claims table of OUT/report/ and exit"
    )
    p.add_argument(
        "--claims-doc",
        metavar="FILE",
        default=None,
        help="write every claim of OUT/report/claims.json to FILE (docs/claims.md) and exit (runs nothing)",
    )
    p.add_argument(
        "--update-readme",
        metavar="FILE",
        default=None,
        help="rewrite the per-paper summary between FILE's <!-- report-summary:start/end --> markers from "
        "OUT/report/claims.json and exit (runs nothing); with --claims-doc, links to it",
    )
    return p


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """``--executor`` and each executor's options (``analyses.reproduce`` and ``analyses.sweep`` share them)."""
    run = p.add_argument_group(
        "where the jobs run",
        "one job per experiment part and seed, the longest first; a job whose worker died is retried once",
    )
    run.add_argument(
        "--executor",
        default="local",
        choices=("local", "ray", "slurm"),
        help="local: --workers processes here (each its own GPU where there are several); ray: tasks on a Ray "
        'cluster (pip install -e ".[ray]"); slurm: sbatch jobs through submitit (pip install -e ".[slurm]"; --out '
        "on a shared file system) (default %(default)s)",
    )
    run.add_argument("--address", default=None, help="ray: auto, HOST:PORT or local (default auto)")
    run.add_argument("--gpus-per-job", type=float, default=None, metavar="N", help="ray, slurm: GPUs per job")
    run.add_argument("--slurm-partition", default=None, metavar="NAME", help="slurm: the partition")
    run.add_argument(
        "--slurm-minutes",
        type=int,
        default=None,
        metavar="N",
        help="slurm: time limit per job (default 120); a job still running 5 min past it, or gone from the queue "
        "without a result, counts as died: run once more, then reported failed",
    )
    run.add_argument("--max-jobs", type=int, default=None, metavar="N", help="slurm: sbatch jobs at once")
    run.add_argument(
        "--slurm-local", action="store_true", help="slurm: run the sbatch jobs as local processes (a dry run)"
    )


def write_docs(out: str, claims_doc: str | None, readme: str | None) -> int:
    """``--claims-doc`` / ``--update-readme``: the documents generated from an existing report."""
    from analyses.report import update_readme, write_claims_doc

    prog = parser().prog
    try:
        if claims_doc:
            command = f"{prog} --claims-doc {claims_doc}"  # as a user types it: the report in runs/ (make docs)
            print(f"wrote {write_claims_doc(out, claims_doc, regenerate=command)}")
        if readme:
            print(f"updated {update_readme(out, readme, claims_doc)}")
    except FileNotFoundError as exc:
        missing = f"no report in {out}/report/; run it first" if "claims.json" in str(exc) else str(exc)
        print(f"{prog}: error: {missing}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"{prog}: error: {readme}: {exc}", file=sys.stderr)
        return 2
    return 0


#: The options each executor takes (the others are refused with it).
EXECUTOR_OPTIONS = {
    "local": (),
    "ray": ("address", "gpus_per_job"),
    "slurm": ("gpus_per_job", "slurm_partition", "slurm_minutes", "max_jobs", "slurm_local"),
}


def executor_options_of(args: argparse.Namespace, slurm_folder: str | None = None) -> dict[str, Any]:
    """The ``--executor``'s options from the command line; an option of another executor is one line. Slurm's
    scripts and logs go to ``slurm_folder`` (default ``OUT/report/slurm``)."""
    from mechrecall.errors import UsageError
    from mechrecall.executors.base import check_package

    given = {k for ks in EXECUTOR_OPTIONS.values() for k in ks if getattr(args, k) not in (None, False)}
    foreign = sorted(given - set(EXECUTOR_OPTIONS[args.executor]))
    if foreign:
        flag = "--" + foreign[0].replace("_", "-")
        raise UsageError(f"{flag} is an option of --executor {_owner(foreign[0])}, not {args.executor}")
    check_package(args.executor)
    gpus = args.gpus_per_job
    if gpus is not None and (gpus < 0 or (args.executor == "slurm" and gpus != int(gpus))):
        whole = " and whole on slurm" if args.executor == "slurm" else ""
        raise UsageError(f"--gpus-per-job {gpus:g}; expected >= 0{whole}")
    if args.executor == "local":
        from mechrecall.executors.local import visible_gpus

        return {"workers": args.workers, "gpus": visible_gpus()}
    if args.executor == "ray":
        return {"address": args.address or "auto", "gpus_per_job": args.gpus_per_job or 0.0}
    return {
        "folder": slurm_folder or os.path.join(args.out, "report", "slurm"),
        "partition": args.slurm_partition,
        "minutes": 120 if args.slurm_minutes is None else args.slurm_minutes,
        "gpus_per_job": int(args.gpus_per_job or 0),
        "max_jobs": args.max_jobs,
        "cluster": "local" if args.slurm_local else None,
    }


def _owner(option: str) -> str:
    return " or ".join(name for name, options in EXECUTOR_OPTIONS.items() if option in options)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from analyses.report import readme_table, reproduce
    from mechrecall.errors import UsageError

    if args.readme_table:
        try:
            print(readme_table(args.out))
        except FileNotFoundError:
            print(f"{parser().prog}: error: no report in {args.out}/report/; run it first", file=sys.stderr)
            return 2
        return 0
    if args.claims_doc or args.update_readme:
        return write_docs(args.out, args.claims_doc, args.update_readme)
    if args.workers < 1:
        print(f"{parser().prog}: error: --workers {args.workers}; expected >= 1", file=sys.stderr)
        return 2
    try:
        executor_options = executor_options_of(args)
    except UsageError as exc:
        print(f"{parser().prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.seeds is not None and args.seed is not None:
        print(f"{parser().prog}: error: --seed {args.seed} with --seeds; expected one of them", file=sys.stderr)
        return 2
    seeds = args.seeds or ((args.seed,) if args.seed is not None else DEFAULT_SEEDS[args.preset])
    if min(seeds) < 0:
        print(f"{parser().prog}: error: --seed {args.seed}; expected an integer >= 0", file=sys.stderr)
        return 2
    if args.budget is not None:
        return gpu_window(args, seeds)
    try:
        report = reproduce(
            args.out,
            preset=args.preset,
            only=args.only,
            workers=args.workers,
            model=args.model,
            seeds=seeds,
            progress=not args.no_progress,
            executor=args.executor,
            executor_options=executor_options,
        )
    except UsageError as exc:
        print(f"{parser().prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"\n{parser().prog}: interrupted; finished parts are kept under {args.out}/. "
            "Rerun the same command to resume.",
            file=sys.stderr,
        )
        return 130
    from analyses.report.render import headline

    print(headline(report["claims"]))
    print(f"wrote {report['paths']['html']}, {report['paths']['md']}, {report['paths']['claims']}")
    failed = [r["name"] for r in report["records"].values() if r["status"] != "done"]
    if failed:
        print(f"failed: {', '.join(failed)} (see their sections and {args.out}/report/logs/)", file=sys.stderr)
    return 1 if failed else 0


def gpu_window(args: argparse.Namespace, seeds: Sequence[int]) -> int:
    """``--budget``: one window's jobs, chosen by the ledger (:mod:`analyses.report.window`)."""
    from pathlib import Path

    from analyses.report import ledger, measured, window
    from mechrecall.errors import UsageError

    prog = parser().prog
    try:
        budget = window.parse_budget(args.budget)
        if args.preset != "paper":
            raise UsageError(f"--budget with --preset {args.preset}; expected --preset paper")
        if len(seeds) != 1:
            raise UsageError(f"--budget with seeds {list(seeds)}; expected one seed per window")
        if args.lanes < 1 or args.threads < 1:
            raise UsageError(f"--lanes {args.lanes} / --threads {args.threads}; expected >= 1")
        from mechrecall.experiment import check_device

        check_device(args.device)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    picks = window.plan(args.device, budget, args.lanes, seeds[0], args.only)
    for p in picks:
        ends = "finishes" if p.finishes else "runs to the deadline (resumable)"
        print(f"lane {p.lane}: {p.part} (est. {ledger.duration(p.seconds)}; {ends})")
    outcome = window.run_window(args.out, picks, budget, args.device, seeds[0], args.threads)
    for part, o in outcome.items():
        print(f"{part}: {o['status']} after {ledger.duration(o['seconds'])}")
    out = Path(args.out)
    if any(o["status"] == "done" for o in outcome.values()):
        print(f"kept {measured.keep(out / 'window', device=args.device, runs=out / 'kept')}")
    print(f"bring back {out / 'kept'} (commit under analyses/measured/runs/) and {out / 'window'} (resumes)")
    return 0 if all(o["status"] != "failed" for o in outcome.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
