"""A sweep of one experiment part over a grid of its options × seeds — ``python -m analyses.sweep --help``.

The logic lives in ``analyses/report/sweep.py``; this module is its command line::

    python -m analyses.sweep noisy_icl:main --preset micro --grid steps=10,20 d_model=16,32 --seeds 0-1
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence

from mechrecall.seeds import parse_seeds

PROG = "python -m analyses.sweep"


def parser() -> argparse.ArgumentParser:
    from analyses.reproduce import add_executor_options

    p = argparse.ArgumentParser(
        prog=PROG,
        description="Run one experiment part for every point of a grid over its options and every seed, one job "
        "each on the report's executor, into OUT/sweeps/<experiment>.<part>/<point>/seed<k>/; then write there "
        "table.csv (a row per point and seed), summary.csv (mean, min, max, n over seeds), figure.png (each "
        "measure against the first grid axis, a line per value of the others) and sweep.json. A report in OUT "
        "(python -m analyses.reproduce --out OUT) is rewritten to show the sweep under its experiment.",
        epilog="Every value is parsed and range-checked by its option, and every job prepared, before any work. "
        "A rerun resumes: finished jobs are skipped (a grid that adds values runs only the new points).",
    )
    p.add_argument("target", metavar="EXPERIMENT:PART", help="the part to sweep, e.g. noisy_icl:main")
    p.add_argument(
        "--grid",
        nargs="+",
        required=True,
        metavar="NAME=V1,V2",
        help="an option (its name, d_model, or flag, --d-model) and its values; several: the product. An option "
        "that takes a list separates its values with ';' (ns='2,4;2,4,8'); one value fixes an option",
    )
    p.add_argument("--seeds", type=parse_seeds, default=(0,), metavar="SEEDS", help="0-2 or 0,3,7 (default 0)")
    p.add_argument("--preset", default=None, help="the experiment's preset (default: its default)")
    p.add_argument(
        "--measure",
        nargs="+",
        default=None,
        metavar="M",
        help="a claim of the part (its id or name: our number, its control, its verdict) or a results entry "
        "(keys joined by '/': final/accuracy) (default: every claim of the part)",
    )
    p.add_argument("--out", default="runs", help="output folder (default %(default)s)")
    p.add_argument("--name", default=None, help="the sweep's folder under OUT/sweeps/ (default EXPERIMENT.PART)")
    p.add_argument("--fresh", action="store_true", help="delete the sweep's folder first instead of resuming it")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local worker processes (default: cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    add_executor_options(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    from analyses.report.sweep import plan_sweep, run_sweep
    from analyses.reproduce import executor_options_of
    from mechrecall.errors import UsageError

    try:
        if args.workers < 1:
            raise UsageError(f"--workers {args.workers}; expected >= 1")
        sweep = plan_sweep(
            args.out, args.target, args.grid, args.seeds, preset=args.preset, measures=args.measure, name=args.name
        )
        options = executor_options_of(args, slurm_folder=str(sweep.folder / "slurm"))
        result = run_sweep(
            sweep,
            executor=args.executor,
            executor_options=options,
            workers=args.workers,
            progress=not args.no_progress,
            fresh=args.fresh,
            command=shlex.join([*PROG.split(), *argv]),
        )
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; finished jobs are kept. Rerun the same command to resume.", file=sys.stderr)
        return 130
    return report(result)


def report(result: dict) -> int:
    """Print the summary and the paths; 1 when a job failed, 2 when a measure is in no job's results."""
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_rows", 60, "display.max_columns", 20):
        print(result["summary"].to_string(index=False))
    print(f"wrote {', '.join(result['paths'].values())}")
    for job in result["failed"]:
        print(f"failed: {job['folder']}: {job['error']} (see its log)", file=sys.stderr)
    named, missing = result["measures_named"], result["missing"]
    for name, why in missing.items() if named else ():
        print(f"{PROG}: error: --measure {name}: {why} (in every job; the jobs are kept)", file=sys.stderr)
    if missing and not named:
        names = ", ".join(missing)
        print(f"note: {len(missing)} claim(s) of the part have no value in any job, left out: {names}", file=sys.stderr)
    return 2 if missing and named else 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
