"""TransformerLens 4.x (a ``TransformerBridge``) against 3.x (a ``HookedTransformer``), timed in the same run.

    .venv/bin/python benchmarks/bench_tl_majors.py                     # ~1 min; needs .venv and .venv4
    .venv/bin/python benchmarks/bench_tl_majors.py --quick --json runs/bench_tl.json
    TL3_PYTHON=/path/python TL4_PYTHON=/path/python .venv/bin/python benchmarks/bench_tl_majors.py

One process can import only one TransformerLens, so the two majors run as two worker processes of this file
(``--worker``), one per environment (``make install`` gives ``.venv`` TL 3.9.0, ``make install VENV=.venv4
TL=4.3.0`` the other). The parent asks them for a round of timings in turn (round-robin, so background load hits
both alike) and reports, per measurement, the median over rounds of (4.x seconds / 3.x seconds): < 1 means 4.x is
faster. Each worker runs torch on one thread.

Measured, each the same computation on both majors (the same weights: ``mechrecall._tl.new_model`` draws 3.x's
initialisation on 4.x too):

- a toy training step -- forward, cross-entropy, backward and an AdamW step -- of ``build_toy_model`` models,
  batch 32 x 64 tokens: an attention-only toy, and one with MLPs and LayerNorm;
- a pretrained forward under ``torch.no_grad()``: a random-init GPT-NeoX (``pretrained.testing.tiny_checkpoint``,
  d_model 64, 2 layers) loaded with ``pretrained.load`` (TL's processing), batch 8 x 64.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (str(HERE), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)

TOYS = {
    "attention-only toy": dict(attn_only=True, normalization_type=None),
    "toy with MLP + LayerNorm": dict(attn_only=False, d_mlp=256, act_fn="relu", normalization_type="LN"),
}


def _toy_step(extra: dict[str, Any]) -> Any:
    import torch
    import torch.nn.functional as F

    from mechrecall import build_toy_model

    cfg = dict(n_layers=2, n_heads=4, d_model=64, d_head=16, d_vocab=64, n_ctx=64, **extra)
    model = build_toy_model(cfg, seed=0)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    tokens = torch.randint(0, 64, (32, 64), generator=torch.Generator().manual_seed(0))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        logits = model(tokens)
        F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()).backward()
        optimizer.step()

    return step


def _pretrained_forward(folder: Path) -> Any:
    import torch

    import pretrained
    from pretrained.testing import tiny_checkpoint

    model = pretrained.load(tiny_checkpoint(folder, "gpt_neox", d_model=64, n_layers=2, seed=0))
    tokens = torch.randint(0, model.cfg.d_vocab, (8, 64), generator=torch.Generator().manual_seed(0))

    def forward() -> None:
        with torch.no_grad():
            model(tokens)

    return forward


def worker() -> None:
    """Read one line per round from stdin; answer each with one JSON line: ``{measure: seconds}``."""
    import torch
    from timing import time_call

    from mechrecall._tl import TL_VERSION

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        fns = {f"training step, {name}": _toy_step(extra) for name, extra in TOYS.items()}
        fns["pretrained forward, GPT-NeoX"] = _pretrained_forward(Path(tmp) / "neox")
        for fn in fns.values():
            fn()  # warm-up
        print(json.dumps({"version": TL_VERSION}), flush=True)
        for line in sys.stdin:
            min_run_time = float(line)
            print(json.dumps({k: time_call(fn, min_run_time, 1).median for k, fn in fns.items()}), flush=True)


class _Worker:
    def __init__(self, python: str):
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "TRANSFORMERS_VERBOSITY": "error",
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(ROOT),
        }
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        self.version = self._read()["version"]

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the benchmark worker {self.proc.args[0]} exited (status {self.proc.wait()})")
        return json.loads(line)

    def round(self, min_run_time: float) -> dict[str, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{min_run_time}\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def interpreters() -> tuple[str, str]:
    """The Python of each major: ``$TL3_PYTHON`` / ``$TL4_PYTHON``, else ``.venv`` / ``.venv4``."""
    tl3 = os.environ.get("TL3_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
    tl4 = os.environ.get("TL4_PYTHON", str(ROOT / ".venv4" / "bin" / "python"))
    for name, python in (("TL3_PYTHON", tl3), ("TL4_PYTHON", tl4)):
        if not Path(python).is_file():
            raise FileNotFoundError(
                f"{name}={python} does not exist: install both majors (make install; make install VENV=.venv4 "
                "TL=4.3.0) or set TL3_PYTHON / TL4_PYTHON"
            )
    return tl3, tl4


def measure(quick: bool) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Per measurement: 3.x and 4.x median seconds and the median per-round ratio; and each worker's TL version."""
    rounds, min_run_time = (3, 0.2) if quick else (7, 1.0)
    workers = [_Worker(python) for python in interpreters()]
    try:
        samples = [[w.round(min_run_time) for w in workers] for _ in range(rounds)]
    finally:
        for w in workers:
            w.close()
    out = {}
    for key in samples[0][0]:
        t3, t4 = [s[0][key] for s in samples], [s[1][key] for s in samples]
        out[key] = {
            "tl3_s": statistics.median(t3),
            "tl4_s": statistics.median(t4),
            "ratio": statistics.median(b / a for a, b in zip(t3, t4)),
        }
    return out, {"tl3": workers[0].version, "tl4": workers[1].version}


def run(quick: bool) -> list[dict]:
    """The rows of ``benchmarks/run.py``: per measurement, 4.x seconds / 3.x seconds (no target)."""
    from timing import row

    try:
        results, versions = measure(quick)
    except FileNotFoundError as exc:  # one major not installed: nothing to compare, not a failure of the code
        return [row("tl_majors", "4.x / 3.x", float("nan"), note=f"not run: {exc}")]
    note = f"TransformerLens {versions['tl4']} vs {versions['tl3']}, 1 thread"
    return [row("tl_majors", f"{k}: 4.x / 3.x", v["ratio"], note=note) for k, v in results.items()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 short rounds instead of 7")
    parser.add_argument("--json", type=Path, help="write the rows and timings here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return
    try:
        results, versions = measure(args.quick)
    except FileNotFoundError as exc:
        raise SystemExit(f"bench_tl_majors: {exc}") from None
    print(f"TransformerLens {versions['tl3']} (HookedTransformer) vs {versions['tl4']} (TransformerBridge), 1 thread")
    print(f"{'measurement':40s} {'3.x ms':>9s} {'4.x ms':>9s} {'4.x / 3.x':>10s}")
    for key, v in results.items():
        print(f"{key:40s} {1e3 * v['tl3_s']:9.2f} {1e3 * v['tl4_s']:9.2f} {v['ratio']:10.2f}")
    if args.json:
        from mechrecall.io import atomic_write_json

        atomic_write_json(args.json, {"versions": versions, "results": results})


if __name__ == "__main__":
    main()
