"""A circuit view (``analyses.circuit``) of every trained toy model an experiment left behind: the newest
checkpoint of each training run under ``OUT/<experiment>/runs/`` (rebuilt by ``mechrecall.checkpoint.load_model``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_HEADS = 64  # a larger model's view is unreadable; skip it


def circuit_views(out: str | Path, name: str, folder: str = "") -> list[dict[str, Any]]:
    """Draw ``OUT/report/circuits/<experiment>/<run>.png`` for each run under ``OUT/<folder>/<experiment>/runs/``
    (``folder``: ``seed0`` over several seeds); returns figure entries for the report."""
    from analyses.circuit import circuit_figure, strongest_edges
    from mechrecall.checkpoint import load_model
    from mechrecall.results import save_figure

    out = Path(out)
    figures = []
    runs = out / folder / name / "runs"
    for latest in sorted(runs.glob("**/checkpoints/latest.json")):
        run = latest.parent.parent.relative_to(runs).as_posix()
        try:
            step = json.loads(latest.read_text())["name"]
            model = load_model(latest.parent / step)
            if model.cfg.n_layers * model.cfg.n_heads > MAX_HEADS or model.cfg.n_layers < 2:
                continue
            from analyses.circuit import composition_table

            table = composition_table(model)
            fig = circuit_figure(model, table=table, title=f"{name} · {run} · {step}")
            file = f"report/circuits/{name}/{run.replace('/', '__')}.png"
            save_figure(out / file, fig)
        except Exception as exc:  # a model the generic view cannot read: say so, never fail the report
            figures.append({"file": "", "part": run, "caption": f"no circuit view of run {run}: {exc}"})
            continue
        mode, src, dst, score = strongest_edges(table, k=1)[0]
        figures.append(
            {
                "file": file,
                "part": run,
                "caption": f"circuit view of the trained model of run {run} ({step}): heads with their roles, "
                f"Q/K/V-composition between successive layers; strongest edge L{src[0]}H{src[1]} → "
                f"L{dst[0]}H{dst[1]} by {mode}-composition ({score:.2f})",
            }
        )
    return figures
