"""Gather every experiment's ``results.json`` into one claims list, each verdict recomputed from its rule."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mechrecall.claims import judge_row, summary

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
) -> dict[str, Any]:
    """The report's data: one section per experiment (paper, parts, figures, errors) and every claim row.

    Rows are read from ``OUT/<name>/results.json`` as written; each verdict is recomputed with
    :func:`mechrecall.claims.judge_row` (a row whose written verdict disagrees keeps it as ``verdict_written``).
    ``circuits``: add a circuit view of each trained toy model (``analyses.report.circuits``)."""
    out = Path(out)
    records = records or {}
    sections, rows = [], []
    for name in names:
        path = out / name / "results.json"
        record = dict(records.get(name, {}))
        section: dict[str, Any] = {
            "experiment": name,
            "paper": "",
            "preset": "",
            "seed": None,
            "status": record.get("status", "done"),
            "error": record.get("error", ""),
            "parts": {},
            "figures": [],
            "results_json": str(path.relative_to(out)),
            "seconds": record.get("seconds"),
        }
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            section["status"] = "failed"
            section["error"] = section["error"] or f"no results: {exc}"
            sections.append(section)
            continue
        helps = _part_help(name)
        config = payload.get("config", {})
        section.update(paper=payload.get("paper", ""), preset=config.get("preset", ""), seed=config.get("seed"))
        for part, info in payload.get("parts", {}).items():
            section["parts"][part] = {
                "status": info.get("status"),
                "error": info.get("error", ""),
                "seconds": info.get("seconds"),
            }
            if info.get("status") == "failed":
                section["status"] = "failed"
                section["error"] = section["error"] or f"{part}: {info.get('error', '')}"
            for figure in info.get("figures", []):
                section["figures"].append(
                    {"file": f"{name}/{figure}", "part": part, "caption": f"part {part}: {helps.get(part, '')}"}
                )
        if circuits:
            from analyses.report.circuits import circuit_views

            section["figures"] += circuit_views(out, name)
        for row in payload.get("claims", []):
            row = dict(row)
            verdict = judge_row(row)
            if verdict != row.get("verdict"):
                row["verdict_written"] = row.get("verdict")
            row["verdict"] = verdict
            row["experiment"] = name
            rows.append(row)
        sections.append(section)
    return {
        "schema": REPORT_SCHEMA,
        "preset": report_preset,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "experiments": sections,
        "claims": rows,
        "summary": summary(rows),
    }
