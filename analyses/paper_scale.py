"""The papers' own sizes: probe what each part costs, keep the results that ran, write the ledger —
``python -m analyses.paper_scale --help``.

    python -m analyses.paper_scale --probe                    # time every part's paper preset here (~30 min)
    python -m analyses.paper_scale --keep runs/paper --device cpu   # commit a finished run's results
    python -m analyses.paper_scale --in-flight runs/paper2 --device cpu   # what a run still going has done so far
    python -m analyses.paper_scale --ledger docs/paper-scale.md --update-readme README.md   # render the ledger

The logic lives in ``analyses/report/ledger.py`` (probe, estimates, the ledger) and
``analyses/report/measured.py`` (kept results); a GPU window is ``python -m analyses.reproduce --preset paper
--device cuda --budget 12m``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m analyses.paper_scale",
        description="The paper-scale ledger: every part at the papers' sizes, its cost here and on a GPU, and "
        "whether it has run.",
    )
    do = p.add_mutually_exclusive_group(required=True)
    do.add_argument(
        "--probe",
        action="store_true",
        help="time every training part's paper preset on this machine "
        "(a few steps per run) into analyses/measured/probe/DEVICE.json; a rerun keeps probed parts "
        "but those named by --only",
    )
    do.add_argument(
        "--keep",
        metavar="OUT",
        help="copy the results of the report in OUT (its results.json files, "
        "no weights) into analyses/measured/ with their provenance",
    )
    do.add_argument("--ledger", metavar="FILE", help="write the ledger (docs/paper-scale.md) and exit")
    do.add_argument(
        "--in-flight",
        nargs="+",
        metavar="OUT",
        help="record what the paper-preset reports in OUT (still running) have started and finished, per part and "
        "seed, into analyses/measured/running.json: the ledger's status 'running'",
    )
    p.add_argument(
        "--update-readme",
        metavar="FILE",
        default=None,
        help="--ledger: also rewrite FILE's "
        "<!-- paper-scale:start/end --> block (the coverage line and a link to the ledger)",
    )
    p.add_argument("--device", default="cpu", help="the device the probe or the kept run used (default cpu)")
    p.add_argument("--only", nargs="+", metavar="EXP[:PART]", default=None, help="--probe, --keep: only these parts")
    p.add_argument("--timeout", type=float, default=600.0, help="--probe: seconds per part (default 600)")
    p.add_argument("--workers", type=int, default=2, help="--probe: parts probed at once (default 2)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    prog = parser().prog
    if args.workers < 1 or args.timeout <= 0:
        print(
            f"{prog}: error: --workers {args.workers} / --timeout {args.timeout}; expected >= 1 / > 0", file=sys.stderr
        )
        return 2
    from analyses.report import ledger, measured

    if args.ledger:
        print(f"wrote {measured.write_ledger(args.ledger)}")
        if args.update_readme:
            try:
                print(f"updated {measured.update_readme(args.update_readme, args.ledger)}")
            except (OSError, ValueError) as exc:
                print(f"{prog}: error: {args.update_readme}: {exc}", file=sys.stderr)
                return 2
        return 0
    if args.in_flight:
        try:
            print(f"wrote {measured.record_in_flight(args.in_flight, args.device)}")
        except FileNotFoundError as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.keep:
        try:
            print(f"kept {measured.keep(args.keep, device=args.device, only=args.only)}")
        except (FileNotFoundError, ValueError) as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
        return 0
    refs = ledger.paper_parts()
    if args.only:
        known = {r.id for r in refs} | {r.experiment for r in refs}
        bad = [o for o in args.only if o not in known]
        if bad:
            print(
                f"{prog}: error: --only {bad[0]}; expected an experiment or EXP:PART of the paper plan", file=sys.stderr
            )
            return 2
        refs = [r for r in refs if r.id in args.only or r.experiment in args.only]
    path = ledger.PROBES / f"{args.device}.json"
    redo = [r.id for r in refs] if args.only else []
    ledger.probe_all(path, refs, workers=args.workers, timeout=args.timeout, device=args.device, redo=redo)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
