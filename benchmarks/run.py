"""Run every benchmark and print one table of their rows (ratios measured in the same run).

    .venv/bin/python benchmarks/run.py                      # --quick (the default): ~1 min
    .venv/bin/python benchmarks/run.py --full               # the full sizes of every benchmark: ~20 min under load
    .venv/bin/python benchmarks/run.py --only help analyses --json runs/bench.json
    .venv/bin/python benchmarks/run.py --verbose            # also each benchmark's own detailed tables

A benchmark is a ``benchmarks/bench_<name>.py`` that exposes ``run(quick: bool) -> list[dict]``; its rows
have the keys ``benchmark``, ``measure`` (what is compared, in words), ``ratio``, ``target`` (in words, ""
when none), ``ok`` (``None`` when no target) and ``note``. A benchmark that raises becomes one failed row
with its error, and the others still run. Exit status: 1 when a benchmark raised, else 0 (a missed target
is reported, not an error: the numbers depend on the machine).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
for path in (str(HERE), str(HERE.parent)):  # ``import timing`` and the repository's packages
    if path not in sys.path:
        sys.path.insert(0, path)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from timing import row  # noqa: E402

from mechrecall.io import atomic_write_json  # noqa: E402

ERROR = "(the benchmark raised)"


def discover() -> dict[str, Path]:
    """``{name: path}`` of every ``bench_<name>.py`` beside this file, sorted by name."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("bench_*.py"))}


def load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_one(name: str, path: Path, quick: bool, verbose: bool) -> list[dict]:
    """The rows of one benchmark; its detailed output is shown only with ``verbose``; an error is a failed row."""
    out = contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO())
    try:
        with out:
            module = load(name, path)
            if not callable(getattr(module, "run", None)):
                return []
            rows = module.run(quick)
        if not rows:
            raise RuntimeError("run() returned no rows")
        return rows
    except Exception as exc:
        if verbose:
            traceback.print_exc()
        return [row(name, ERROR, float("nan"), "runs", False, f"{type(exc).__name__}: {exc}")]


def print_table(rows: list[dict]) -> None:
    """benchmark, measure, ratio, target, ok (yes / NO / - when no target), note; long measures are cut."""
    width = min(90, max([len(r["measure"]) for r in rows] + [7]))
    print(f"{'benchmark':<20} {'measure':<{width}} {'ratio':>8}  {'target':<12} {'ok':<3}  note")
    for r in rows:
        ok = {True: "yes", False: "NO", None: "-"}[r["ok"]]
        measure = r["measure"] if len(r["measure"]) <= width else r["measure"][: width - 3] + "..."
        note = r["note"] if r["measure"] != ERROR else ""  # errors are printed in full below the table
        print(f"{r['benchmark']:<20} {measure:<{width}} {r['ratio']:>7.2f}x  {r['target']:<12} {ok:<3}  {note}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", default=True, help="small sizes, ~1 min (the default)")
    mode.add_argument("--full", action="store_true", help="every benchmark's full sizes")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these benchmarks (bench_NAME.py)")
    p.add_argument("--json", metavar="PATH", help="also write the rows to PATH (atomically)")
    p.add_argument("--verbose", action="store_true", help="also print each benchmark's detailed output")
    args = p.parse_args(argv)
    quick = not args.full
    found = discover()
    unknown = sorted(set(args.only or ()) - set(found))
    if unknown:
        p.error(f"unknown benchmark(s) {', '.join(unknown)}; found {', '.join(found)}")
    selected = {n: found[n] for n in (args.only or found)}

    import torch

    print(
        f"benchmarks ({'quick' if quick else 'full'}): {', '.join(selected)}; torch {torch.__version__} "
        f"(1 thread: each benchmark's default), {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    started, rows, seconds = time.perf_counter(), [], {}
    for name, path in selected.items():
        t = time.perf_counter()
        rows += run_one(name, path, quick, args.verbose)
        seconds[name] = time.perf_counter() - t
        print(f"  {name}: {seconds[name]:.1f} s", flush=True)
    total = time.perf_counter() - started
    print()
    print_table(rows)
    errors = [r for r in rows if r["measure"] == ERROR]
    for r in errors:
        print(f"error in {r['benchmark']}: {r['note']}")
    counts = {label: sum(r["ok"] is value for r in rows) for label, value in (("ok", True), ("missed", False))}
    no_target = sum(r["ok"] is None for r in rows)
    print(
        f"\noverall: {len(rows)} rows from {len(selected)} benchmarks: {counts['ok']} met their target, "
        f"{counts['missed'] - len(errors)} missed, {no_target} without a target, {len(errors)} benchmark(s) raised; "
        f"{total:.0f} s"
    )
    if args.json:
        atomic_write_json(
            args.json,
            dict(
                quick=quick,
                torch=torch.__version__,
                python=platform.python_version(),
                cpus=os.cpu_count(),
                seconds=seconds,
                total_s=total,
                rows=rows,
            ),
        )
        print(f"wrote {args.json}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
