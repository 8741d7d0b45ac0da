"""``--help`` time of every runnable experiment, as a fresh process, against a bare interpreter start.

    .venv/bin/python benchmarks/bench_help.py            # 5 rounds, ~15 s
    .venv/bin/python benchmarks/bench_help.py --quick    # 3 rounds, ~10 s
    .venv/bin/python benchmarks/bench_help.py --json runs/bench_help.json

The experiments are the ones ``mechrecall`` finds (``analyses.registry.experiments()``: the modules beside
``analyses/__init__.py`` that declare an ``EXPERIMENT``), so a new one is benchmarked without editing this
file. Each candidate is one subprocess, the output discarded: ``python -c pass`` (the baseline: interpreter
start-up and ``site``) and ``python -m analyses.<name> --help`` for every experiment, with the same
interpreter (``sys.executable``), the repository root as working directory and on ``PYTHONPATH``.

Timing: ``timing.compare`` (``torch.utils.benchmark.Timer``): one warm-up run each (it must exit 0), then
``--repeats`` rounds in which the candidates take turns (round-robin); in a round Timer runs a command
twice (once to estimate, once timed). Reported: median wall seconds per run and the ratio to ``python -c
pass`` (median of the per-round ratios). Target: every ``--help`` within 1 s wall (an experiment module
only declares its parts; the heavy imports happen when a part runs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from timing import compare, row

from analyses.registry import experiments
from mechrecall.io import atomic_write_json

NAME = "help"
TARGET_S = 1.0
ROOT = Path(__file__).resolve().parent.parent


def command(args: list[str]):
    """A function that runs ``python *args`` from the repository root and checks that it exits 0."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))

    def fn() -> None:
        done = subprocess.run(
            [sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        if done.returncode:
            raise RuntimeError(f"python {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-500:]}")

    return fn


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="3 rounds instead of 5")
    p.add_argument("--repeats", type=int, default=None, help="rounds (median over them)")
    p.add_argument("--json", metavar="PATH", help="also write the numbers to PATH (atomically)")
    args = p.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    names = [*experiments(), "reproduce"]  # the report's command too
    fns = {"python -c pass": command(["-c", "pass"])}
    fns.update({f"python -m analyses.{n} --help": command(["-m", f"analyses.{n}", "--help"]) for n in names})
    fns["python -m pretrained.mini --help"] = command(["-m", "pretrained.mini", "--help"])  # the mini pretraining
    c = compare(fns, "python -c pass", repeats, min_run_time=0.0)
    print(
        f"--help of {len(names)} experiments ({', '.join(names)}), {sys.executable}; median of {repeats} rounds; "
        f"target <= {TARGET_S:.0f} s each"
    )
    print(f"{'command':<48} {'s':>7} {'ratio':>7}")
    for cmd, s in c.seconds.items():
        flag = "" if cmd == c.baseline or s <= TARGET_S else "  ! above target"
        print(f"{cmd:<48} {s:>7.3f} {c.ratios[cmd]:>6.1f}x{flag}")
    rows = [
        row(
            NAME,
            f"`{cmd.removeprefix('python -m ')}` / `python -c pass` wall time",
            c.ratios[cmd],
            f"<= {TARGET_S:.0f} s wall",
            c.seconds[cmd] <= TARGET_S,
            f"{c.seconds[cmd]:.2f} s vs {c.seconds[c.baseline]:.2f} s",
        )
        for cmd in fns
        if cmd != c.baseline
    ]
    out = dict(experiments=names, repeats=repeats, seconds=c.seconds, ratios=c.ratios, samples=c.samples, rows=rows)
    if args.json:
        atomic_write_json(args.json, out)
        print(f"wrote {args.json}")
    return out


def run(quick: bool) -> list[dict]:
    """The rows of one run: per experiment its ``--help`` time, as a ratio to ``python -c pass``."""
    return main(["--quick"] if quick else [])["rows"]


if __name__ == "__main__":
    main(sys.argv[1:])
