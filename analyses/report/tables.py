"""A report's claims as tables and figures, for a notebook or a script.

``source`` is anything holding claim rows: a report folder (``OUT``, holding ``report/claims.json``), the
``claims.json`` or a ``seeds.json`` (``python -m analyses.<name> --seeds 0-2``) itself, or the dict read from one
(:func:`~analyses.report.load_report`, :meth:`~mechrecall.experiment.Experiment.run_seeds`)::

    from analyses import report
    claims = report.claims_table("runs")                         # one row per claim
    claims[claims.verdict != "reproduced"]
    report.seeds_figure("runs", "noisy_icl.main.p_noise_full")   # ours and the control per seed, the rule's band
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Source = str | os.PathLike[str] | Mapping[str, Any]

#: The columns of :func:`claims_table`, in order.
COLUMNS = (
    "id",
    "experiment",
    "class",
    "where",
    "claim",
    "paper",
    "ours",
    "spread",
    "control",
    "control_is",
    "rule",
    "verdict",
    "passed",
    "seeds",
)


def claim_rows(source: Source) -> list[dict[str, Any]]:
    """The claim rows of ``source`` (see the module docstring); ``FileNotFoundError`` naming what was looked for."""
    if isinstance(source, Mapping):
        return [dict(r) for r in source["claims"]]
    path = Path(source)
    if path.is_dir():
        path = path / "report" / "claims.json" if (path / "report").is_dir() else path / "claims.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no claims here; expected OUT (a report run), a claims.json or a seeds.json")
    return [dict(r) for r in json.loads(path.read_text(encoding="utf-8"))["claims"]]


def claims_table(source: Source) -> pd.DataFrame:
    """One row per claim: its id, experiment, class, where in the paper, the statement, the paper's number, ours
    (the mean over seeds), its [min, max] over seeds, the control and what it is, the rule, the verdict, and how
    many of the seeds passed."""
    rows = claim_rows(source)
    for r in rows:
        r.setdefault("experiment", r["id"].split(".")[0])
        r["seeds"] = len(r.get("seeds") or [])
    return pd.DataFrame(rows).reindex(columns=list(COLUMNS))


def per_seed(source: Source, claim_id: str) -> pd.DataFrame:
    """``(seed, ours, control)`` of one claim, one row per seed (one row for a one-seed report)."""
    row = _row(source, claim_id)
    each = row.get("per_seed") or [{"seed": (row.get("seeds") or [0])[0], "ours": row["ours"], "control": None}]
    return pd.DataFrame([{"seed": s["seed"], "ours": _num(s["ours"]), "control": _num(s.get("control"))} for s in each])


def seeds_figure(source: Source, claim_id: str) -> Figure:
    """One claim across seeds: ours and the control per seed, the paper's number, and the band its rule accepts."""
    from analyses.plotting import subplots

    row = _row(source, claim_id)
    table = per_seed({"claims": [row]}, claim_id)
    fig, ax = subplots(figsize=(5.5, 3.4))
    spec = row.get("rule_spec") or {}
    lo, hi = spec.get("lo"), spec.get("hi")
    if spec.get("kind") in ("at_least", "at_most", "between", "near") and (lo is not None or hi is not None):
        values = [v for v in (*table.ours, *table.control, _num(row.get("paper"))) if math.isfinite(v)]
        low = lo if lo is not None else min([*values, hi]) - 0.1 * abs(hi or 1)
        high = hi if hi is not None else max([*values, lo]) + 0.1 * abs(lo or 1)
        ax.axhspan(low, high, color="tab:green", alpha=0.12, label=f"the rule: {row.get('rule', '')}"[:60])
    ax.plot(table.seed, table.ours, "o", color="tab:blue", label="ours")
    if table.control.notna().any():
        ax.plot(table.seed, table.control, "x", color="tab:gray", label=f"control: {row.get('control_is', '')}"[:60])
    if math.isfinite(_num(row.get("paper"))):
        ax.axhline(_num(row["paper"]), ls="--", color="tab:red", label="the paper")
    ax.set_xticks(list(table.seed))
    ax.set_xlabel("seed")
    ax.set_title(f"{row.get('where') or claim_id}: {claim_id.split('.', 1)[-1]} — {row.get('verdict', '')}", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def _row(source: Source, claim_id: str) -> dict[str, Any]:
    rows = {r["id"]: r for r in claim_rows(source)}
    if claim_id not in rows:
        raise KeyError(f"claim {claim_id!r} is not in this report; expected one of its {len(rows)} ids")
    return rows[claim_id]


def _num(x: Any) -> float:
    """A claim's number as a float (``True`` → 1; missing or not a number → nan)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan
