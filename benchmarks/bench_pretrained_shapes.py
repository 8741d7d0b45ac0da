"""The pretrained parts rehearsed at the paper models' real sizes, offline: random checkpoints at the true block sizes
and vocabulary (``pretrained.testing.real_shape_checkpoint``: pythia-160m ... 2.8b, gpt2, gpt2-medium), each part
run on them as a user runs it, in a child process of its own.

    .venv/bin/python benchmarks/bench_pretrained_shapes.py                          # the default plan (below)
    .venv/bin/python benchmarks/bench_pretrained_shapes.py --shapes pythia-1b --parts sweep factual
    .venv/bin/python benchmarks/bench_pretrained_shapes.py --root /tmp/shapes --keep --json runs/shapes.json

Per (shape, part): wall seconds, CPU seconds (user + system: on a loaded machine the wall time is mostly waiting),
the peak resident memory of the child (``ru_maxrss``), and the share of the wall time spent loading
(``pretrained.load``), in SVDs (``hooks.weights.svd``) and in the laser parts' forward passes (``_tl.last_logits``
/ ``residual_before``); the rest is everything else (the other papers' parts call their models directly: their
forwards are in the rest). The checkpoints
are written under ``--root`` (default a temporary folder) and deleted after each shape unless ``--keep``.
``run(quick)`` (``benchmarks/run.py``): nothing in ``--quick`` (a row saying so: a rehearsal takes minutes);
``--full`` rehearses pythia-160m's ``factual`` and gpt2's ``gpt2-ioi``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: part -> the command after ``python -m`` (``{model}`` is the checkpoint folder, ``{out}`` a scratch folder)
PARTS: dict[str, list[str]] = {
    "factual": ["analyses.laser_pythia", "--experiment", "factual"],
    "factual20": ["analyses.laser_pythia", "--experiment", "factual20"],
    "ioi": ["analyses.laser_pythia", "--experiment", "ioi"],
    "prepositions": ["analyses.laser_pythia", "--experiment", "prepositions"],  # one checkpoint (the paper: 25)
    "gpt2-ioi": ["analyses.laser_pythia", "--experiment", "gpt2-ioi"],
    "sweep": ["analyses.laser_pythia", "--experiment", "sweep"],
    "ic_recall": ["analyses.ic_recall", "--preset", "smoke", "--experiment", "pretrained"],
    "contextual_recall": ["analyses.contextual_recall", "--preset", "smoke", "--experiment", "pretrained"],
    "induction_pythia": ["analyses.induction_emergence", "--preset", "micro", "--experiment", "pythia"],
}
#: The parts the paper runs on each model (laser_pythia), and the other papers' on the small ones.
PLAN: dict[str, tuple[str, ...]] = {
    "pythia-160m": ("factual", "factual20", "ioi", "prepositions", "sweep", "ic_recall", "contextual_recall",
                    "induction_pythia"),
    "pythia-410m": ("factual", "ioi", "prepositions"),
    "pythia-1b": ("factual", "factual20", "ioi", "prepositions", "sweep"),
    "pythia-1.4b": ("factual20", "prepositions"),
    "pythia-2.8b": ("factual20", "prepositions"),
    "gpt2": ("gpt2-ioi", "factual"),
    "gpt2-medium": ("gpt2-ioi",),
}  # fmt: skip
#: Options a part needs on a model the paper gives no setting for (the laser parts' paper layer and ρ).
NO_PAPER_SETTING = ["--layer", "6", "--rho", "0.01"]


def vocabulary() -> list[str]:
    """Every word the parts' prompts use: the three papers' prompt tables."""
    from analyses.papers.contextual_recall.data import vocabulary as world
    from analyses.papers.distributional.data.prompts import prompt_vocab as laser
    from analyses.papers.ic_recall.data import prompt_vocab as facts

    return list(dict.fromkeys([*laser(), *facts(), *world()]))


def command(part: str, shape: str, model: Path, out: Path, threads: int) -> list[str]:
    """The child's command line for one part on one checkpoint folder, its torch on ``threads`` threads."""
    args = [*PARTS[part], "--model", str(model), "--out", str(out), "--no-progress", "--threads", str(threads)]
    if part == "induction_pythia":  # a mirror of one step
        args[args.index("--model") + 1] = str(model.parent / f"{shape}-mirror")
    laser = PARTS[part][0] == "analyses.laser_pythia"
    from analyses.papers.distributional.presets import PAPER_LASER

    if laser and part not in ("prepositions", "sweep", "gpt2-ioi") and (part, shape) not in PAPER_LASER:
        args += NO_PAPER_SETTING
    return [sys.executable, str(Path(__file__).resolve()), "--child", *args]


def child(argv: list[str]) -> int:
    """Run ``python -m argv[0] argv[1:]`` with the loading, SVD and forward time measured; print them as JSON."""
    import runpy

    import hooks.weights
    import mechrecall._tl
    import pretrained
    import pretrained.loading
    from analyses.papers.distributional import pretrained as laser

    spent = {"load_s": 0.0, "svd_s": 0.0, "forward_s": 0.0}
    counts = {"svd": 0, "forward": 0}

    def timed(fn: Any, key: str, count: str | None = None) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start
                if count:
                    counts[count] += 1

        return wrapper

    pretrained.load = pretrained.loading.load = timed(pretrained.loading.load, "load_s")  # load_or_why's too
    hooks.weights.svd = timed(hooks.weights.svd, "svd_s", "svd")
    for name in ("last_logits", "residual_before"):
        wrapped = timed(getattr(mechrecall._tl, name), "forward_s", "forward" if name == "last_logits" else None)
        setattr(laser, name, wrapped)
    sys.argv = [f"python -m {argv[0]}", *argv[1:]]
    start = time.perf_counter()
    code = 0
    try:
        runpy.run_module(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    spent["wall_s"] = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    spent.update(peak_gb=usage.ru_maxrss / 1e6, cpu_s=usage.ru_utime + usage.ru_stime)  # Linux: ru_maxrss in KB
    print("BENCH " + json.dumps({**spent, **counts, "exit": code}), flush=True)
    return 0


def run_child(cmd: list[str], threads: int) -> dict[str, Any]:
    """Run one child; its JSON, peak memory and CPU seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    output = proc.stdout
    lines = [line for line in output.splitlines() if line.startswith("BENCH ")]
    result: dict[str, Any] = json.loads(lines[-1][6:]) if lines else {"exit": proc.returncode}
    result.setdefault("peak_gb", 0.0)
    result.setdefault("cpu_s", 0.0)
    result["process_s"] = time.perf_counter() - start
    if not lines or result.get("exit"):
        result["error"] = output.strip().splitlines()[-1] if output.strip() else f"exit {proc.returncode}"
    return result


def rehearse(shapes: list[str], parts: list[str] | None, root: Path, threads: int, keep: bool) -> list[dict]:
    """Write each shape's checkpoint, run its parts, delete it (unless ``keep``)."""
    from pretrained.testing import n_params, real_shape_checkpoint

    rows = []
    words = vocabulary()
    for shape in shapes:
        folder = root / shape
        start = time.perf_counter()
        if not (folder / "config.json").is_file():
            real_shape_checkpoint(folder, shape, vocab=words)
        write_s = time.perf_counter() - start
        mirror = root / f"{shape}-mirror"
        if not mirror.exists():
            mirror.mkdir()
            (mirror / "step143000").symlink_to(folder.resolve())
        size_gb = sum(f.stat().st_size for f in folder.glob("*.safetensors")) / 1e9
        for part in parts or PLAN[shape]:
            with tempfile.TemporaryDirectory() as out:
                r = run_child(command(part, shape, folder, Path(out), threads), threads)
            r.update(shape=shape, part=part, params_m=n_params(shape) / 1e6, disk_gb=size_gb, write_s=write_s)
            r["load_avg"] = os.getloadavg()[0]
            rows.append(r)
            print(format_row(r), flush=True)
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(mirror, ignore_errors=True)
    return rows


def format_row(r: dict[str, Any]) -> str:
    wall = r.get("wall_s", r["process_s"])
    share = {k: 100 * r.get(f"{k}_s", 0.0) / wall if wall else 0.0 for k in ("load", "svd", "forward")}
    rest = 100 - sum(share.values())
    text = (
        f"| {r['shape']} | {r['part']} | {r['process_s']:.0f} | {r['cpu_s']:.0f} | {r['peak_gb']:.1f} | "
        f"{share['load']:.0f}% | {share['svd']:.0f}% | {share['forward']:.0f}% | {rest:.0f}% | "
        f"{r.get('load_avg', 0):.1f} |"
    )
    return text + (f" FAILED: {r['error']}" if "error" in r else "")


HEADER = (
    "| shape | part | wall s | CPU s | peak GB | loading | SVDs | forwards | rest | load avg |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def run(quick: bool = True) -> list[dict]:
    """``benchmarks/run.py``'s rows: peak memory over the checkpoint's size, per rehearsed part (``--full`` only)."""
    sys.path[:0] = [str(HERE)]
    from timing import row

    if quick:
        return [row("pretrained_shapes", "not run in --quick (minutes per model): run the file itself", float("nan"))]
    rows = []
    with tempfile.TemporaryDirectory() as root:
        rows += rehearse(["pythia-160m"], ["factual"], Path(root), threads=1, keep=False)
        rows += rehearse(["gpt2"], ["gpt2-ioi"], Path(root), threads=1, keep=False)
    return [
        row(
            "pretrained_shapes",
            f"{r['shape']} {r['part']}: peak memory / checkpoint size",
            r["peak_gb"] / r["disk_gb"],
            note=f"{r['process_s']:.0f} s wall, {r['cpu_s']:.0f} s CPU",
        )
        for r in rows
    ]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    from pretrained.testing import REAL_SHAPES

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=list(PLAN), choices=list(REAL_SHAPES))
    p.add_argument("--parts", nargs="+", default=None, choices=list(PARTS), help="default: the plan's per shape")
    p.add_argument("--root", type=Path, default=None, help="where the checkpoints go (default: a temporary folder)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--keep", action="store_true", help="keep the checkpoints")
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args()
    print(HEADER, flush=True)
    if a.root is None:
        with tempfile.TemporaryDirectory() as root:
            rows = rehearse(a.shapes, a.parts, Path(root), a.threads, a.keep)
    else:
        a.root.mkdir(parents=True, exist_ok=True)
        rows = rehearse(a.shapes, a.parts, a.root, a.threads, a.keep)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    for path in (str(HERE), str(ROOT)):
        if path not in sys.path:
            sys.path.insert(0, path)
    sys.exit(main())
