"""The main job: run every paper's experiments and write one report (``python -m analyses.reproduce``).

==========  =============================================================================================
module      what it holds
==========  =============================================================================================
``plan``    per report preset (quick / smoke / paper): each experiment's preset and parts, as a table
``runner``  experiments in worker processes (one torch thread each), part by part, with a progress display
``collect`` every ``results.json`` → one claims list (verdicts recomputed) and the report's sections
``render``  ``report.md``, the self-contained ``report.html``, the markdown claims table
==========  =============================================================================================
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def reproduce(
    out: str | os.PathLike = "runs",
    *,
    preset: str = "quick",
    only: Sequence[str] | None = None,
    workers: int = 1,
    model: str | None = None,
    seed: int = 0,
    progress: bool = True,
    jobs: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Run the plan (or ``jobs``), then write ``OUT/report/{claims.json, report.md, report.html}``.

    Returns the report (``claims.json``'s content) with ``paths`` and ``records`` (each worker's outcome)."""
    from analyses.report.collect import collect
    from analyses.report.plan import REPORT_PRESETS
    from analyses.report.render import write_report
    from analyses.report.runner import plan_jobs, run_all
    from mechrecall.errors import UsageError
    from mechrecall.experiment import check_out_folder

    if preset not in REPORT_PRESETS:
        raise UsageError(f"--preset {preset!r}; expected one of {', '.join(REPORT_PRESETS)}")
    out = Path(out)
    check_out_folder(out, "report")  # before any experiment runs: an --out that is a file, or not writable
    jobs = list(jobs) if jobs is not None else plan_jobs(preset, only, model, seed)
    records = run_all(jobs, out, workers=workers, seed=seed, progress=progress)
    report = collect(out, [j.name for j in jobs], records, preset)
    paths = write_report(report, out)
    return {**report, "paths": {k: str(v) for k, v in paths.items()}, "records": records}


def readme_table(out: str | os.PathLike = "runs") -> str:
    """The markdown claims table of the report in ``OUT/report/claims.json`` (for the README)."""
    import json

    from analyses.report.render import claims_table_md

    report = json.loads((Path(out) / "report" / "claims.json").read_text(encoding="utf-8"))
    return claims_table_md(report["claims"], experiment_column=True)
