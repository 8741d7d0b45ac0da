"""The report's "along a scale axis" blocks: each sweep in ``OUT/sweeps/`` (``python -m analyses.sweep``) under
its experiment — what was swept, the command, one row per grid point × measure (mean over seeds, [min, max], the
control's mean and the verdicts) and the sweep's figure. The rows come from the report's ``sweeps``
(:func:`analyses.report.collect.collect_sweeps`); Markdown here, the HTML page in :mod:`analyses.report.render`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

COLUMNS = ("measure", "ours: mean [min, max] (seeds)", "control (mean)", "verdicts")


def _num(x: Any) -> str:
    return "—" if x is None else f"{x:.4g}"


def _values(values: Sequence[Any]) -> str:
    return "{" + ", ".join(",".join(map(str, v)) if isinstance(v, list) else str(v) for v in values) + "}"


def title(sweep: Mapping[str, Any]) -> str:
    """``noisy_icl:ioi (laptop preset) over steps {1000, 3000}; seeds 0, 1, 2``."""
    grid = " × ".join(f"{k} {_values(v)}" for k, v in (sweep.get("grid") or {}).items())
    seeds = ", ".join(map(str, sweep.get("seeds") or []))
    return f"{sweep['experiment']}:{sweep['part']} ({sweep.get('preset') or '?'} preset) over {grid}; seeds {seeds}"


def header(sweep: Mapping[str, Any]) -> list[str]:
    """The table's header: the grid's options, then :data:`COLUMNS`."""
    return [*(sweep.get("grid") or {}), *COLUMNS]


def cells(sweep: Mapping[str, Any]) -> list[list[str]]:
    """The table's rows: per grid point × measure its values, ours over seeds, the control's mean, the verdicts."""
    out = []
    for row in sweep.get("rows", []):
        ours = f"{_num(row['mean'])} [{_num(row['min'])}, {_num(row['max'])}] ({row['n']})"
        point = [str(v) for v in row["point"].values()]
        out.append([*point, row["measure"], ours, _num(row.get("control")), row.get("verdicts") or "—"])
    return out


#: options of a recorded command that say where and how it ran on one machine, not what it computes
MACHINE_OPTIONS = {"--out": True, "--workers": True, "--no-progress": False, "--threads": True}


def user_command(command: str) -> str:
    """A recorded command as a user types it: without the options that named the machine it ran on (its output
    folder, worker count, progress display), which a reader's own run sets for itself (``--out`` defaults to
    ``runs``)."""
    words, out = command.split(), []
    skip = 0
    for word in words:
        if skip:
            skip -= 1
            continue
        name = word.split("=", 1)[0]
        if name in MACHINE_OPTIONS:
            skip = int(MACHINE_OPTIONS[name] and "=" not in word)
            continue
        out.append(word)
    return " ".join(out)


def jobs_line(sweep: Mapping[str, Any]) -> str:
    command = f"`{user_command(sweep['command'])}`" if sweep.get("command") else "(command not recorded)"
    done = f"{sweep.get('jobs_done', 0)} of {sweep.get('jobs', 0)} jobs done"
    return f"{command}: {done} (folder `sweeps/{sweep['name']}/`)."


def sweep_md(sweep: Mapping[str, Any], figure_link: str | None) -> list[str]:
    """One sweep's Markdown lines: a heading, the command, the table and (``figure_link``) the figure."""
    head = header(sweep)
    lines = [f"#### Along a scale axis: {title(sweep)}", "", jobs_line(sweep), ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells(sweep)]
    if figure_link:
        lines += ["", f"![sweep {sweep['name']}]({figure_link})", "", f"*{title(sweep)}: mean, min-max band*"]
    return [*lines, ""]


def of_experiment(report: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    """The report's sweeps of experiment ``name``."""
    return [s for s in report.get("sweeps", []) if s.get("experiment") == name]


def elsewhere(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The report's sweeps of experiments the report has no section for."""
    names = {s["experiment"] for s in report.get("experiments", [])}
    return [s for s in report.get("sweeps", []) if s.get("experiment") not in names]
