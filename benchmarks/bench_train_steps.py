"""Every toy model's training step against the machine's matmul rate: the fraction of peak and the per-step overhead.

    .venv/bin/python benchmarks/bench_train_steps.py                  # every toy part at its smoke preset, ~5 min
    .venv/bin/python benchmarks/bench_train_steps.py --quick          # three parts, ~1 min
    .venv/bin/python benchmarks/bench_train_steps.py --preset paper --only noisy_icl:main   # the paper's sizes
    .venv/bin/python benchmarks/bench_train_steps.py --json runs/bench_train_steps.json

Each part runs as a user runs it (``python -m analyses.<experiment> --preset P --experiment PART --threads 1``) in
a child process under the step probe (``mechrecall.probe``, ``MECHRECALL_PROBE_FIRST=1``): its first training run
takes one warm-up step and three timed steps (the trainer's whole loop: data, forward, loss, backward, optimiser,
bookkeeping), its FLOPs per step counted by torch's FLOP counter (the matmul-like ops of forward and backward),
and the child ends there. The baseline, measured in the same run on one thread: the best of five float32
1024 x 1024 matmuls. **fraction of peak** = (FLOPs per step / seconds per step) / that rate; **overhead** =
seconds per step - FLOPs / rate, the time a step spends beyond its matmuls at the machine's rate (Python, small
kernels, optimiser, data). The issue's target: a toy's step at >= 0.7 of one core's matmul rate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUICK = ("noisy_icl:main", "induction_emergence:standard", "contextual_recall:world_r")
TARGET = 0.7


def measure(part: str, preset: str, scratch: Path) -> dict[str, Any]:
    """One part's first training run under the probe, in a child process: its probe line."""
    from analyses.report.ledger import part_command
    from mechrecall import probe

    out = scratch / part.replace(":", ".")
    file = out / "probe.jsonl"
    env = {
        **os.environ,
        probe.ENV_FILE: str(file),
        probe.ENV_FIRST: "1",
        "MPLBACKEND": "Agg",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    cmd = part_command(part, out, preset, 1, fresh=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    lines = probe.records(file)
    if not lines:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {"part": part, "error": tail[0][-200:]}
    return {"part": part, **{k: v for k, v in lines[0].items() if k != "key"}}


def toy_parts(preset: str) -> list[str]:
    """The parts of the paper plan that train a toy model at ``preset`` (a report preset's own per experiment)."""
    from analyses.report.ledger import paper_parts

    return [r.id for r in paper_parts() if r.kind == "train"]


def run(quick: bool = True, preset: str = "smoke", only: list[str] | None = None) -> list[dict[str, Any]]:
    """The benchmark's rows (``benchmarks/run.py``): per part its fraction of one core's matmul rate."""
    from analyses.report.ledger import matmul_rate
    from analyses.report.plan import step

    rate = matmul_rate(1)
    parts = only or (list(QUICK) if quick else toy_parts(preset))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-steps-") as scratch:
        for part in parts:
            experiment = part.split(":")[0]
            own = preset if preset == "paper" else step(preset, experiment).preset
            m = measure(part, own, Path(scratch))
            if "error" in m or not m.get("flops_per_step"):
                rows.append(
                    {
                        "benchmark": "train_steps",
                        "measure": f"{part} ({own}): no training step measured",
                        "ratio": None,
                        "target": "",
                        "ok": None,
                        "note": m.get("error", "no matmuls"),
                    }
                )
                continue
            frac = m["flops_per_step"] / m["seconds_per_step"] / rate
            overhead = m["seconds_per_step"] - m["flops_per_step"] / rate
            rows.append(
                {
                    "benchmark": "train_steps",
                    "measure": f"{part} ({own}): a step's FLOP/s over one core's matmul rate",
                    "ratio": round(frac, 3),
                    "target": f">= {TARGET}",
                    "ok": frac >= TARGET,
                    "note": f"{m['flops_per_step']:.3g} FLOPs in {m['seconds_per_step'] * 1e3:.1f} ms; overhead "
                    f"{overhead * 1e3:.1f} ms ({overhead / m['seconds_per_step']:.0%}); batch {m['batch']}, "
                    f"{m['params']:,} params; matmul rate {rate / 1e9:.1f} GFLOP/s",
                }
            )
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    p.add_argument(
        "--preset",
        default="smoke",
        choices=("quick", "smoke", "paper"),
        help="the report preset whose per-experiment preset each part runs at (default smoke)",
    )
    p.add_argument("--only", nargs="+", default=None, metavar="EXP:PART")
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args()
    rows = run(a.quick, a.preset, a.only)
    print("| part (preset) | fraction of peak | target | note |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['measure']} | {r['ratio']} | {r['target']} | {r['note']} |")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
