"""Gather every experiment's ``results.json`` into one claims list, each verdict recomputed from its rule."""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mechrecall.claims import judge_row, over_seeds, summary, summary_by_class
from mechrecall.policy import policy_problems

REPORT_SCHEMA = "mechrecall.report/1"


def _part_help(name: str) -> dict[str, str]:
    from analyses.registry import experiment

    try:
        parts = experiment(name).parts
    except KeyError:  # an experiment the registry does not know (a test's own)
        return {}
    return {p.name: p.help for p in parts}


def collect(
    out: str | Path,
    names: Sequence[str],
    records: Mapping[str, Mapping[str, Any]] | None = None,
    report_preset: str = "",
    circuits: bool = True,
    folders: Mapping[str, Sequence[str]] | None = None,
    kept: bool = True,
) -> dict[str, Any]:
    """The report's data: one section per experiment (paper, parts, figures, errors) and every claim row.

    Rows are read from ``OUT/<folder>/<name>/results.json`` as written (``folders[name]``: ``[""]``, or
    ``["seed0", "seed1", ...]`` over several seeds, merged by :func:`mechrecall.claims.over_seeds`); each verdict
    is recomputed with :func:`mechrecall.claims.judge_row` (a row whose written verdict disagrees keeps it as
    ``verdict_written``); ``rule_problems`` names every rule not computed from its policy line and the paper's
    number (:func:`mechrecall.policy.policy_problems`). ``records``: the runner's, by job key. ``circuits``: add a
    circuit view of each trained toy model (``analyses.report.circuits``). ``kept``: add the rows of the
    paper-scale runs kept in the repository (:func:`kept_rows`)."""
    out = Path(out)
    sections, rows = [], []
    for name in names:
        where = list((folders or {}).get(name) or [""])
        section, claims = _section(out, name, where, records or {}, circuits)
        rows += claims
        sections.append(section)
    return {
        "schema": REPORT_SCHEMA,
        "preset": report_preset,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "experiments": sections,
        "claims": rows,
        "summary": summary(rows),
        "by_class": summary_by_class(rows),
        "rule_problems": policy_problems(rows),
        "sweeps": collect_sweeps(out),
        "kept": kept_rows(names) if kept else [],
    }


def kept_rows(names: Sequence[str]) -> list[dict[str, Any]]:
    """The claim rows of the paper-scale runs kept in the repository (``analyses/measured/runs/``, preset
    ``paper``) for the experiments ``names``: shown beside a fresh run, never re-run
    (:mod:`analyses.report.measured`)."""
    from analyses.report.measured import kept_rows as rows_of
    from analyses.report.measured import kept_runs

    return [row for row in rows_of([r for r in kept_runs() if r["preset"] == "paper"]) if row["experiment"] in names]


def _section(
    out: Path, name: str, folders: list[str], records: Mapping[str, Mapping[str, Any]], circuits: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One experiment's section and claim rows, from its results in each of ``folders``."""
    own = [r for k, r in records.items() if k == name or k.startswith(f"{name}/")]
    failed = [r for r in own if r.get("status") == "failed"]
    section: dict[str, Any] = {
        "experiment": name,
        "paper": "",
        "preset": "",
        "seed": None,
        "status": "failed" if failed else "done",
        "error": "; ".join(r.get("error", "") for r in failed),
        "parts": {},
        "figures": [],
        "results_json": [str(Path(f) / name / "results.json") for f in folders],
        "seconds": sum(r.get("seconds") or 0 for r in own) if own else None,
    }
    if len(folders) == 1:
        section["results_json"] = section["results_json"][0]
    helps, by_seed = _part_help(name), {}
    for folder in folders:
        path = out / folder / name / "results.json"
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            section["status"] = "failed"
            section["error"] = section["error"] or f"no results: {exc}"
            continue
        config = payload.get("config", {})
        section.update(paper=payload.get("paper", ""), preset=config.get("preset", ""))
        by_seed[config.get("seed", 0)] = payload.get("claims", [])
        _add_parts(section, payload, folder, name, helps)
        if circuits and folder == folders[0]:
            from analyses.report.circuits import circuit_views

            section["figures"] += circuit_views(out, name, folder)
    section["seed"] = sorted(by_seed) if len(folders) > 1 else next(iter(by_seed), None)
    merged = over_seeds(by_seed) if len(folders) > 1 else next(iter(by_seed.values()), [])
    return section, [_rejudged(row, name) for row in merged]


def _add_parts(section: dict[str, Any], payload: Mapping[str, Any], folder: str, name: str, helps: Any) -> None:
    """Each part's status and seconds (summed over seeds; failed where any seed failed) and its figures (once)."""
    for part, info in payload.get("parts", {}).items():
        seen = section["parts"].get(part)
        failed = info.get("status") == "failed" or (seen and seen["status"] == "failed")
        section["parts"][part] = {
            "status": "failed" if failed else info.get("status"),
            "error": (seen or {}).get("error") or info.get("error", ""),
            "seconds": (seen or {}).get("seconds", 0) + (info.get("seconds") or 0),
        }
        if info.get("status") == "failed":
            section["status"] = "failed"
            section["error"] = section["error"] or f"{part}: {info.get('error', '')}"
        if seen is None:
            for figure in info.get("figures", []):
                file = str(Path(folder) / name / figure)
                section["figures"].append(
                    {"file": file, "part": part, "caption": f"part {part}: {helps.get(part, '')}"}
                )


def _rejudged(row: Mapping[str, Any], name: str) -> dict[str, Any]:
    row = dict(row)
    verdict = judge_row(row)
    if verdict != row.get("verdict"):
        row["verdict_written"] = row.get("verdict")
    row["verdict"] = verdict
    row["experiment"] = name
    return row


def collect_sweeps(out: str | Path) -> list[dict[str, Any]]:
    """Every sweep in ``OUT/sweeps/<name>/`` (``python -m analyses.sweep``), for the report's "along a scale axis"
    blocks: its experiment, part, preset, grid, seeds and command, how many jobs finished, the figure (relative to
    ``OUT``) and one row per point × measure with a value (``mean``, ``min``, ``max``, ``n`` over seeds; ``control``:
    the control's mean; ``verdicts``). A folder without a readable ``sweep.json`` or ``summary.csv`` is skipped."""
    out = Path(out)
    sweeps = []
    for path in sorted(out.glob("sweeps/*/sweep.json")):
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            with open(path.parent / "summary.csv", encoding="utf-8", newline="") as f:
                summary_rows = list(csv.DictReader(f))
        except (OSError, ValueError):
            continue
        figure = path.parent / "figure.png"
        jobs = meta.get("jobs", [])
        sweeps.append(
            {
                "name": path.parent.name,
                **{k: meta.get(k) for k in ("experiment", "part", "preset", "grid", "seeds", "command")},
                "jobs_done": sum(j.get("status") == "done" for j in jobs),
                "jobs": len(jobs),
                "figure": str(figure.relative_to(out)) if figure.exists() else "",
                "rows": _sweep_rows(meta, summary_rows),
            }
        )
    return sweeps


def _sweep_rows(meta: Mapping[str, Any], summary_rows: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
    """One row per point × measure that has a value: the grid values, the measure, ours and its control's mean."""
    axes = list(meta.get("grid") or {})
    by_key = {(tuple(r.get(a, "") for a in axes), r["measure"]): r for r in summary_rows}
    rows = []
    for (point, measure), r in by_key.items():
        if measure.endswith(".control") or not _finite(r.get("mean")):
            continue
        control = by_key.get((point, f"{measure}.control"), {})
        rows.append(
            {
                "point": dict(zip(axes, point)),
                "measure": measure,
                "mean": float(r["mean"]),
                "min": float(r["min"]),
                "max": float(r["max"]),
                "n": int(float(r["n"])),
                "control": float(control["mean"]) if _finite(control.get("mean")) else None,
                "verdicts": r.get("verdicts", ""),
            }
        )
    return rows


def _finite(text: Any) -> bool:
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False
