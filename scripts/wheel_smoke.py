"""The installed wheel, used as a new user would (``scripts/wheel_smoke.sh`` runs this in the fresh venv, from a
folder outside the checkout): ``mechrecall --help``, every experiment at ``micro``, and every pretrained part on a
tiny local checkpoint written by the installed ``pretrained.testing``. Fails, naming the command and the tail of
its output, on a non-zero exit or a traceback.

    python scripts/wheel_smoke.py --venv VENV --checkout CHECKOUT --work FOLDER
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: The experiments whose micro preset runs (laser_pythia has only the paper's preset: its parts run below).
MICRO = ("noisy_icl", "contextual_recall", "ic_recall", "induction_emergence")


def check_installed(venv: Path, checkout: Path) -> None:
    """The four packages import from the venv's site-packages, not from the checkout."""
    import analyses
    import hooks
    import mechrecall
    import pretrained

    for module in (mechrecall, hooks, analyses, pretrained):
        where = Path(module.__file__ or "").resolve()
        if checkout.resolve() in where.parents or venv.resolve() not in where.parents:
            sys.exit(f"wheel smoke: {module.__name__} imports from {where}, not from the venv {venv}")


def tiny_checkpoints(work: Path) -> dict[str, Path]:
    """One tiny checkpoint (or step mirror) per pretrained part, covering its prompts' words."""
    from analyses.papers.contextual_recall.data import vocabulary
    from analyses.papers.distributional.data.prompts import prompt_vocab as laser_vocab
    from analyses.papers.ic_recall.data import prompt_vocab as facts_vocab
    from pretrained.testing import tiny_checkpoint

    root = work / "checkpoints"
    out = {
        "ic_recall": tiny_checkpoint(root / "facts", "gpt_neox", vocab=facts_vocab(), n_layers=2),
        "contextual_recall": tiny_checkpoint(root / "world", "gpt2", vocab=vocabulary(), n_ctx=128),
        "gpt2": tiny_checkpoint(root / "gpt2", "gpt2", vocab=laser_vocab(), n_layers=12),
    }
    for step, seed in ((0, 1), (1000, 2)):
        tiny_checkpoint(root / "pythia-1b" / f"step{step}", "gpt_neox", vocab=laser_vocab(), seed=seed, n_layers=4)
        tiny_checkpoint(root / "mirror" / f"step{step}", "gpt_neox", seed=seed, n_layers=2)
    out["pythia-1b"], out["mirror"] = root / "pythia-1b", root / "mirror"
    return out


def commands(work: Path, ckpt: dict[str, Path]) -> list[list[str]]:
    """Each command a user would type (after ``mechrecall``), each with its own ``--out``."""
    runs = [["--help"], *[[name, "--preset", "micro"] for name in MICRO]]
    runs += [
        ["ic_recall", "--preset", "micro", "--experiment", "pretrained", "--model", str(ckpt["ic_recall"])],
        ["contextual_recall", "--preset", "micro", "--experiment", "pretrained", "--model",
         str(ckpt["contextual_recall"])],
        ["induction_emergence", "--preset", "micro", "--experiment", "pythia", "--model", str(ckpt["mirror"])],
        ["laser_pythia", "--experiment", "factual", "factual20", "ioi", "prepositions", "sweep", "--model",
         str(ckpt["pythia-1b"]), "--checkpoints", "0,1000", "--layer", "4", "--rho", "0.25", "--n-prompts", "12"],
        ["laser_pythia", "--experiment", "gpt2-ioi", "--model", str(ckpt["gpt2"])],
    ]  # fmt: skip
    return [
        r if r == ["--help"] else [*r, "--out", str(work / f"runs{i}"), "--no-progress"] for i, r in enumerate(runs)
    ]


def run(venv: Path, args: list[str]) -> tuple[list[str], int, float, str]:
    """``mechrecall ARGS`` from the venv's console script: (args, exit status, seconds, output)."""
    start = time.perf_counter()
    proc = subprocess.run([str(venv / "bin" / "mechrecall"), *args], capture_output=True, text=True)
    return args, proc.returncode, time.perf_counter() - start, proc.stdout + proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=2, help="commands run at once (default 2)")
    a = parser.parse_args()
    check_installed(a.venv, a.checkout)
    ckpt = tiny_checkpoints(a.work)
    todo = commands(a.work, ckpt)
    failed = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for args, code, seconds, output in pool.map(lambda c: run(a.venv, c), todo):
            bad = code != 0 or "Traceback (most recent call last)" in output
            print(f"wheel smoke: {'FAIL' if bad else 'ok  '} {seconds:5.1f} s  mechrecall {' '.join(args)}", flush=True)
            if bad:
                failed.append(args)
                print("\n".join("    " + line for line in output.splitlines()[-25:]))
    if failed:
        print(f"wheel smoke: {len(failed)} of {len(todo)} commands failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
