"""The main job: run every paper's experiments and write one report (``python -m analyses.reproduce``).

==========  =============================================================================================
module      what it holds
==========  =============================================================================================
``plan``    per report preset (quick / smoke / paper): each experiment's preset and parts, as a table
``runner``  one job per part and seed on an executor (local processes, Ray, Slurm), longest first; progress
``collect`` every ``results.json`` → one claims list (verdicts recomputed) and the report's sections
``render``  ``report.md``, the self-contained ``report.html``; the README's summary and ``docs/claims.md``
``tables``  a report's claims as a table (``claims_table``), one claim per seed (``per_seed``, ``seeds_figure``)
``sweep``   one part over a grid of its options x seeds on the same executors: its table, summary and figure
==========  =============================================================================================
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # the tables' names, imported on first use (pandas stays out of --help; mechrecall.lazy)
    from analyses.report.tables import claim_rows, claims_table, per_seed, seeds_figure

__getattr__, __dir__ = lazy_imports(__name__)
__all__ = [
    "claim_rows",
    "claims_table",
    "load_report",
    "per_seed",
    "readme_table",
    "refresh_sweeps",
    "reproduce",
    "seeds_figure",
    "update_readme",
    "write_claims_doc",
]


def reproduce(
    out: str | os.PathLike = "runs",
    *,
    preset: str = "quick",
    only: Sequence[str] | None = None,
    workers: int = 1,
    model: str | None = None,
    seeds: Sequence[int] = (0,),
    progress: bool = True,
    jobs: Sequence[Any] | None = None,
    executor: Any = None,
    executor_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the plan (or ``jobs``) for every seed on ``executor`` (:mod:`mechrecall.executors`; default ``workers``
        local processes; a name, ``local`` / ``ray`` / ``slurm``, is built with ``executor_options`` once the plan is
    checked), then write ``OUT/report/{claims.json, report.md, report.html}``.

        Over several ``seeds`` each row holds the mean over seeds, their [min, max], each seed's numbers and how many
        passed (:func:`mechrecall.claims.over_seeds`). Returns the report (``claims.json``'s content) with ``paths``
        and ``records`` (each job's outcome)."""
    from analyses.report.collect import collect
    from analyses.report.plan import REPORT_PRESETS
    from analyses.report.render import write_report
    from analyses.report.runner import plan_jobs, run_all
    from mechrecall.errors import UsageError
    from mechrecall.experiment import check_out_folder

    if preset not in REPORT_PRESETS:
        raise UsageError(f"--preset {preset!r}; expected one of {', '.join(REPORT_PRESETS)}")
    if not seeds or min(seeds) < 0:
        raise UsageError(f"--seeds {list(seeds)}; expected seeds >= 0")
    out = Path(out)
    check_out_folder(out, "report")  # before any experiment runs: an --out that is a file, or not writable
    jobs = list(jobs) if jobs is not None else plan_jobs(preset, only, model, tuple(seeds))
    if isinstance(executor, str):
        from mechrecall.executors import make_executor

        executor = make_executor(executor, executor_options)
    records = run_all(jobs, out, workers=workers, progress=progress, executor=executor)
    names = list(dict.fromkeys(j.name for j in jobs))
    folders = {n: list(dict.fromkeys(j.folder for j in jobs if j.name == n)) for n in names}
    report = collect(out, names, records, preset, folders=folders)
    report["seeds"] = list(seeds)
    paths = write_report(report, out)
    return {**report, "paths": {k: str(v) for k, v in paths.items()}, "records": records}


def load_report(out: str | os.PathLike = "runs") -> dict[str, Any]:
    """The report in ``OUT/report/claims.json`` (``FileNotFoundError`` when there is none)."""
    import json

    return json.loads((Path(out) / "report" / "claims.json").read_text(encoding="utf-8"))


def refresh_sweeps(out: str | os.PathLike = "runs") -> dict[str, Path] | None:
    """Rewrite the report in ``OUT/report/`` with the sweeps now in ``OUT/sweeps/`` (a sweep run after the report
    shows up in it); ``None`` when ``OUT`` has no report. Its claims are kept as they are."""
    from analyses.report.collect import collect_sweeps
    from analyses.report.render import write_report

    try:
        report = load_report(out)
    except (OSError, ValueError):
        return None
    report["sweeps"] = collect_sweeps(Path(out))
    return write_report(report, Path(out))


def readme_table(out: str | os.PathLike = "runs") -> str:
    """The markdown claims table of the report in ``OUT/report/claims.json``, one table for every experiment."""
    from analyses.report.render import claims_table_md

    return claims_table_md(load_report(out)["claims"], experiment_column=True)


def write_claims_doc(out: str | os.PathLike, path: str | os.PathLike, regenerate: str = "") -> Path:
    """Write the full claims table of ``OUT/report/claims.json`` to ``path`` (e.g. ``docs/claims.md``), with each
    sweep of the report along a scale axis; their figures are copied beside it (``docs/sweeps/<name>.png``)."""
    from analyses.report.render import claims_doc_md
    from mechrecall.io import atomic_write_bytes, atomic_write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    report = load_report(out)
    figures = {}
    for sweep in report.get("sweeps", []):
        source = Path(out) / sweep["figure"] if sweep.get("figure") else None
        if source is not None and source.is_file():
            target = path.parent / "sweeps" / f"{sweep['name']}.png"
            target.parent.mkdir(exist_ok=True)
            atomic_write_bytes(target, source.read_bytes())
            figures[sweep["name"]] = f"sweeps/{sweep['name']}.png"
    atomic_write_text(path, claims_doc_md(report, regenerate, figures) + "\n")
    return path


def update_readme(
    out: str | os.PathLike, readme: str | os.PathLike, claims_doc: str | os.PathLike | None = None
) -> Path:
    """Rewrite, in place, the block between ``<!-- report-summary:start -->`` and ``<!-- report-summary:end -->``
    of ``readme`` with the per-paper summary of ``OUT/report/claims.json``; the rest of the file is kept.

    ``claims_doc``: the full table the summary links to (default ``docs/claims.md`` beside the README, linked when
    it exists). Raises ``ValueError`` when the markers are missing."""
    from analyses.report.render import replace_block, summary_md
    from mechrecall.io import atomic_write_text

    readme = Path(readme)
    doc = Path(claims_doc) if claims_doc is not None else readme.parent / "docs" / "claims.md"
    link = os.path.relpath(doc, readme.parent).replace(os.sep, "/") if claims_doc is not None or doc.exists() else None
    text = replace_block(readme.read_text(encoding="utf-8"), summary_md(load_report(out), link))
    atomic_write_text(readme, text)
    return readme
