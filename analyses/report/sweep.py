"""A sweep: one experiment part over a grid of its options × seeds, on the report's executor; its table and figure.

``python -m analyses.sweep EXPERIMENT:PART --grid NAME=V1,V2 [NAME=...] --seeds 0-2`` (the command line is
``analyses/sweep.py``). Each grid point and seed is one :class:`~analyses.report.runner.Job`, run like a report job
(:func:`~analyses.report.runner.run_all`: longest first, a dead worker's job retried once, files shipped back from a
Ray node) into a folder of its own, so that configurations never clash and a rerun skips what is finished::

    OUT/sweeps/<experiment>.<part>/
        <point>/seed<k>/<experiment>/results.json   # one job: <point> is d_model=32__steps=100
        logs/<point>.seed<k>.log, logs/progress.log
        table.csv     one row per point × seed: the options, the seed, each measure
        summary.csv   one row per point × measure: mean, min, max, n over the seeds (a claim: its verdicts)
        figure.png    each measure against the first grid axis, a line per value of the others, min-max band
        sweep.json    the command, grid, seeds, measures, each job's status and the paths

A measure is a claim of the part (its id, ``<part>.<name>`` or ``<name>``: our number, its control and its verdict)
or an entry of the stored ``results.json`` (keys joined by ``/``: ``final/accuracy``). Default: every claim of
the part, less those no job measured. Every value of the grid is parsed by its option's type and checked by its
range, and every point × seed by :meth:`~mechrecall.experiment.Experiment.prepare`, before any job starts. A report
in the same ``OUT`` is rewritten with the sweep under its experiment (:func:`analyses.report.refresh_sweeps`).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyses.report.runner import Job
from mechrecall.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from mechrecall.experiment import Experiment, Option

SWEEP_SCHEMA = "mechrecall.sweep/1"
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


@dataclass(frozen=True)
class Axis:
    """One option of the grid: its ``dest`` (the key of ``Experiment.run(options=...)``), its flag and values."""

    dest: str
    flag: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Measure:
    """What a sweep reads from each job: a claim (``ref``: its full id) or a results entry (``ref``: its path)."""

    name: str
    kind: str  # "claim" or "entry"
    ref: str


@dataclass
class SweepJob(Job):
    """A report job whose log lies beside its sweep: ``logs/<point>.seed<k>.log`` under the sweep's folder."""

    point: dict[str, Any] = field(default_factory=dict)

    @property
    def log(self) -> str:
        return f"logs/{self.folder.replace('/', '.')}.log"


@dataclass
class Sweep:
    """A planned sweep, every job checked: the folder its jobs, tables and figure go to (``OUT/sweeps/<name>``)."""

    experiment: str
    part: str
    preset: str
    axes: list[Axis]
    seeds: tuple[int, ...]
    measures: list[Measure]
    folder: Path
    jobs: list[SweepJob]
    named: bool = True  # the measures were named (--measure): one that no job holds is an error, not a note

    @property
    def grid(self) -> dict[str, list[Any]]:
        return {a.dest: list(a.values) for a in self.axes}


# ------------------------------------------------------------------------------------------------ the grid


def find_option(exp: Experiment, name: str) -> Option:
    """The experiment's option named ``name``: its dest (``d_model``) or flag (``--d-model``, ``d-model``)."""
    for option in exp.options:
        if name in (option.dest, *option.flags) or f"--{name}" in option.flags:
            if not option.compare:
                raise UsageError(f"--grid {name}: {option.flags[0]} does not change the numbers; nothing to sweep")
            return option
    known = ", ".join(o.dest for o in exp.options if o.compare) or "none"
    raise UsageError(f"--grid {name}: {exp.name} has no option {name!r}; expected one of {known}")


def is_list_option(option: Option) -> bool:
    """Whether one value of ``option`` is itself a list (``comma_ints``, ``nargs``): its grid values split on ``;``."""
    from mechrecall.experiment import comma_ints

    return option.kwargs.get("type") is comma_ints or option.kwargs.get("nargs") in ("+", "*")


def parse_value(option: Option, text: str) -> Any:
    """``text`` as ``option`` takes it on the command line (its type, choices, a flag's true / false), range-checked."""
    import argparse

    flag, kwargs = option.flags[0], option.kwargs
    if kwargs.get("action") in ("store_true", "store_false"):
        if text.lower() not in (*_TRUE, *_FALSE):
            raise UsageError(f"--grid {option.dest}={text}: {flag} is a switch; expected true or false")
        return text.lower() in _TRUE
    convert = kwargs.get("type") or str
    try:
        value = convert(text)
    except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
        raise UsageError(f"--grid {option.dest}={text}: {flag} takes {_type_words(option)} ({exc})") from None
    if kwargs.get("nargs") in ("+", "*"):
        value = [value]
    choices = kwargs.get("choices")
    if choices is not None and value not in choices:
        raise UsageError(f"--grid {option.dest}={text}: {flag} expects one of {', '.join(map(str, choices))}")
    option.check(value)
    return value


def _type_words(option: Option) -> str:
    convert = option.kwargs.get("type")
    words = {int: "an integer", float: "a number"}
    return words[convert] if convert in words else str(getattr(convert, "__name__", "a string"))


def parse_grid(exp: Experiment, entries: Sequence[str]) -> list[Axis]:
    """``["d_model=32,64", "lr=0.01"]`` → one :class:`Axis` per entry, in order; values split on ``,`` (``;`` for
    an option that takes a list: ``ns=2,4;2,4,8``). A bad name or value is one :class:`UsageError` line."""
    axes: list[Axis] = []
    if not entries:
        raise UsageError("--grid: expected at least one NAME=V1,V2 (an option of the experiment and its values)")
    for entry in entries:
        name, eq, text = entry.partition("=")
        if not eq or not name.strip() or not text.strip():
            raise UsageError(f"--grid {entry}: expected NAME=V1,V2 (e.g. steps=50,100)")
        option = find_option(exp, name.strip())
        if any(a.dest == option.dest for a in axes):
            raise UsageError(f"--grid {entry}: {option.dest} is on the grid twice")
        sep = ";" if is_list_option(option) else ","
        values = tuple(parse_value(option, t.strip()) for t in text.split(sep) if t.strip())
        seen = [json.dumps(v) for v in values]
        if len(set(seen)) != len(seen):
            raise UsageError(f"--grid {entry}: a value is given twice")
        axes.append(Axis(option.dest, option.flags[0], values))
    return axes


def points(axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, the first axis outermost: ``[{dest: value, ...}, ...]``."""
    return [dict(zip([a.dest for a in axes], combo)) for combo in itertools.product(*(a.values for a in axes))]


def value_slug(value: Any) -> str:
    """A value in a folder name: ``32``, ``0.001``, ``true``, ``2-4-8`` (a list), other characters ``-``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "-".join(value_slug(v) for v in value)
    return re.sub(r"[^A-Za-z0-9._+-]", "-", repr(value) if isinstance(value, float) else str(value))


def slug(point: Mapping[str, Any]) -> str:
    """A grid point's folder: ``d_model=32__steps=100`` (the axes in grid order)."""
    return "__".join(f"{dest}={value_slug(value)}" for dest, value in point.items())


# ------------------------------------------------------------------------------------------------ the plan


def resolve_measures(exp: Experiment, part: str, names: Sequence[str] | None) -> list[Measure]:
    """Each name as a claim of ``part`` (full id, ``<part>.<name>`` or ``<name>``) or else a results entry; none:
    every claim of the part (a part without claims needs ``--measure``)."""
    claims = {s.id.split(".", 1)[1]: f"{exp.name}.{s.id}" for s in exp.claim_table() if s.part == part}
    if not names:
        if not claims:
            raise UsageError(f"{exp.name}:{part} has no claims; name what to measure with --measure ENTRY")
        return [Measure(n, "claim", ref) for n, ref in claims.items()]
    measures: list[Measure] = []
    for name in names:
        short = name.removeprefix(f"{exp.name}.").removeprefix(f"{part}.")
        if short in claims:
            measures.append(Measure(short, "claim", claims[short]))
        elif name.startswith((f"{exp.name}.", f"{part}.")):
            raise UsageError(f"--measure {name}: no claim of that id; {part}'s claims: {', '.join(claims) or 'none'}")
        else:
            measures.append(Measure(name, "entry", name.strip("/")))
    if len({m.name for m in measures}) != len(measures):
        raise UsageError(f"--measure {' '.join(names)}: a measure is named twice")
    return measures


def plan_sweep(
    out: str | os.PathLike,
    target: str,
    grid: Sequence[str],
    seeds: Sequence[int] = (0,),
    *,
    preset: str | None = None,
    measures: Sequence[str] | None = None,
    name: str | None = None,
) -> Sweep:
    """The sweep of ``target`` (``EXPERIMENT:PART``) over ``grid`` × ``seeds``, every job checked
    (:meth:`~mechrecall.experiment.Experiment.prepare`) before any work; a bad input is one :class:`UsageError`."""
    from analyses.registry import experiment, experiments

    exp_name, _, part = target.partition(":")
    if exp_name not in experiments() or not part:
        raise UsageError(f"{target}: expected EXPERIMENT:PART with EXPERIMENT one of {', '.join(experiments())}")
    exp = experiment(exp_name)
    preset = preset or exp.default_preset
    if preset not in exp.presets:
        raise UsageError(f"--preset {preset!r}; expected one of {', '.join(exp.presets)}")
    exp.select_parts([part], preset)  # an unknown part, or one its preset lacks: one line
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise UsageError(f"--seeds {list(seeds)}; expected distinct seeds >= 0")
    if name is not None and (not name or "/" in name or "\\" in name or name in (".", "..")):
        raise UsageError(f"--name {name!r}; expected one folder name under OUT/sweeps/ (no '/')")
    axes = parse_grid(exp, grid)
    folder = Path(out) / "sweeps" / (name or f"{exp.name}.{part}")
    chosen = resolve_measures(exp, part, measures)
    sweep = Sweep(exp.name, part, preset, axes, tuple(seeds), chosen, folder, [], named=bool(measures))
    sweep.jobs = _jobs(exp, sweep)
    return sweep


def _jobs(exp: Experiment, sweep: Sweep) -> list[SweepJob]:
    """One job per point × seed, each prepared (options, ranges, seed, folder) and its folder's past config checked."""
    fixed = {"workers": 1} if any(o.dest == "workers" for o in exp.options) else {}  # the executor fans out
    cost = next(p.cost(sweep.preset) for p in exp.parts if p.name == sweep.part)
    jobs, slugs = [], set()
    for point in points(sweep.axes):
        where = slug(point)
        if where in slugs:
            raise UsageError(f"--grid: two points share the folder {where}; give distinct values")
        slugs.add(where)
        for seed in sweep.seeds:
            options, folder = {**fixed, **point}, f"{where}/seed{seed}"
            job = SweepJob(exp.name, sweep.preset, (sweep.part,), options, minutes=cost, seed=seed, folder=folder)
            job.point = dict(point)
            _, config = exp.prepare(
                sweep.folder / job.folder, preset=sweep.preset, parts=[sweep.part], seed=seed, options=job.options
            )
            _check_past(sweep.folder / job.folder / exp.name / "results.json", config)
            jobs.append(job)
    return jobs


def _check_past(path: Path, config: Mapping[str, Any]) -> None:
    """One line when ``path`` holds results of another configuration (another preset or fixed option)."""
    try:
        old = json.loads(path.read_text(encoding="utf-8")).get("config", {})
    except (OSError, ValueError):
        return
    new = json.loads(json.dumps(config, default=list))
    diffs = [
        f"{k}: {old.get(k)!r} there, {new.get(k)!r} now"
        for k in sorted(set(old) | set(new))
        if old.get(k) != new.get(k)
    ]
    if diffs:
        raise UsageError(
            f"{path.parent.parent} holds a run of another configuration ({'; '.join(diffs)}); "
            "use --name for a sweep folder of its own, or --fresh"
        )


# ------------------------------------------------------------------------------------------------ running


def run_sweep(
    sweep: Sweep,
    *,
    executor: Any = None,
    executor_options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: bool = True,
    fresh: bool = False,
    command: str = "",
) -> dict[str, Any]:
    """Run the sweep's jobs on ``executor`` (a name, ``local`` / ``ray`` / ``slurm``, built with
    ``executor_options``; default ``workers`` local processes), then write its table, summary, figure and
    ``sweep.json``; returns ``sweep.json``'s content with ``table`` and ``summary`` (DataFrames)."""
    from analyses.report.runner import run_all

    if fresh and sweep.folder.exists():
        shutil.rmtree(sweep.folder)
    if isinstance(executor, str):
        from mechrecall.executors import make_executor

        executor = make_executor(executor, executor_options)
    records = run_all(sweep.jobs, sweep.folder, workers=workers, progress=progress, executor=executor, log_dir="logs")
    result = write_sweep(sweep, records, command)
    from analyses.report import refresh_sweeps

    report = refresh_sweeps(sweep.folder.parent.parent)  # a report in the same OUT now shows this sweep
    if report is not None:
        result["paths"] = {**result["paths"], "report": str(report["md"])}
    return result


def write_sweep(sweep: Sweep, records: Mapping[str, Mapping[str, Any]], command: str = "") -> dict[str, Any]:
    """``table.csv``, ``summary.csv``, ``figure.png`` and ``sweep.json`` in the sweep's folder, from its jobs."""
    from mechrecall.io import atomic_write_json, atomic_write_text
    from mechrecall.results import save_figure

    table, rules, missing = sweep_table(sweep)
    if not sweep.named:  # the default, every claim of the part: those no job measured are left out of the figure
        sweep = replace(sweep, measures=[m for m in sweep.measures if m.name not in missing] or sweep.measures)
    summary = summarise(sweep, table)
    paths = {k: sweep.folder / f for k, f in (("table", "table.csv"), ("summary", "summary.csv"))}
    atomic_write_text(paths["table"], table.to_csv(index=False))
    atomic_write_text(paths["summary"], summary.to_csv(index=False))
    paths["figure"] = sweep.folder / "figure.png"
    save_figure(paths["figure"], sweep_figure(sweep, summary, rules))
    jobs = [
        {"point": j.point, "seed": j.seed, "folder": j.folder, **_job_record(records.get(j.key, {}))}
        for j in sweep.jobs
    ]
    payload = {
        "schema": SWEEP_SCHEMA,
        "command": command,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "experiment": sweep.experiment,
        "part": sweep.part,
        "preset": sweep.preset,
        "grid": sweep.grid,
        "seeds": list(sweep.seeds),
        "measures": [{"name": m.name, "kind": m.kind, "reads": m.ref} for m in sweep.measures],
        "missing": missing,
        "measures_named": sweep.named,
        "jobs": jobs,
        "paths": {k: str(p) for k, p in paths.items()},
    }
    atomic_write_json(sweep.folder / "sweep.json", payload)
    return {**payload, "table": table, "summary": summary, "failed": [j for j in jobs if j["status"] != "done"]}


def _job_record(record: Mapping[str, Any]) -> dict[str, Any]:
    kept = any(str(s).startswith("done earlier") for s in (record.get("parts") or {}).values())
    return {
        "status": record.get("status", "failed"),
        "error": record.get("error", ""),
        "seconds": record.get("seconds"),
        "kept": kept,
    }


# ------------------------------------------------------------------------------------------------ the tables


def measure_values(payload: Mapping[str, Any], part: str, measure: Measure) -> tuple[dict[str, Any], str]:
    """The columns ``measure`` gives one job (``{name: value}``; a claim also ``name.control``,
    ``name.verdict``), and why a value is missing (``""`` when none is)."""
    from mechrecall.claims import judge_row, lookup

    record = payload.get("parts", {}).get(part, {})
    if measure.kind == "entry":
        value, why = lookup(record.get("results", {}), measure.ref)
        return {measure.name: _scalar(value)}, why + _entries_near(record.get("results", {}), measure.ref)
    row = next((r for r in record.get("claims", []) if r.get("id") == measure.ref), None)
    columns = dict.fromkeys((measure.name, f"{measure.name}.control", f"{measure.name}.verdict"))
    if row is None:
        return columns, f"no row {measure.ref} in the part's claims"
    columns.update({measure.name: _scalar(row.get("ours")), f"{measure.name}.control": _scalar(row.get("control"))})
    columns[f"{measure.name}.verdict"] = judge_row(row)
    return columns, ""


def _entries_near(results: Any, path: str) -> str:
    """Where ``path`` leaves ``results``: the keys there (``"; entries under final: accuracy, step"``)."""
    node, walked = results, list[str]()
    for key in path.split("/"):
        if not isinstance(node, Mapping) or key not in node:
            break
        node, walked = node[key], [*walked, key]
    if not isinstance(node, Mapping) or len(walked) == len(path.split("/")):
        return ""
    where = "/".join(walked) or "the top"
    keys = list(node)
    return f"; entries at {where}: {', '.join(keys[:15])}" + (", ..." if len(keys) > 15 else "")


def _scalar(value: Any) -> Any:
    """A number (a bool as 0 / 1) or short text for the table; ``None`` for a list or mapping."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return None


def sweep_table(sweep: Sweep) -> tuple[pd.DataFrame, dict[str, Any], dict[str, str]]:
    """One row per point × seed (the options, seed, status, each measure, the job's ``results.json``); the rule
    spec of each claim measure (for the figure); and each measure missing from every job with why."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    rules: dict[str, Any] = {}
    why: dict[str, str] = {}
    for job in sweep.jobs:
        path = Path(job.folder) / sweep.experiment / "results.json"
        row: dict[str, Any] = {**{a.dest: _cell(job.point[a.dest]) for a in sweep.axes}, "seed": job.seed}
        try:
            payload = json.loads((sweep.folder / path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            payload = {}
        row["status"] = payload.get("parts", {}).get(sweep.part, {}).get("status", "not run")
        for measure in sweep.measures:
            columns, missing = measure_values(payload, sweep.part, measure)
            row.update(columns)
            if missing and row["status"] == "done":
                why.setdefault(measure.name, missing)
            rules.setdefault(measure.name, _rule_spec(payload, sweep.part, measure))
        rows.append({**row, "results": str(path)})
    table = pd.DataFrame(rows)
    found = {m.name for m in sweep.measures if table[m.name].notna().any()}
    return table, rules, {name: w for name, w in why.items() if name not in found}


def _rule_spec(payload: Mapping[str, Any], part: str, measure: Measure) -> Any:
    claims = payload.get("parts", {}).get(part, {}).get("claims", [])
    return next((r.get("rule_spec") for r in claims if r.get("id") == measure.ref), None)


def _cell(value: Any) -> Any:
    """A grid value in a table cell: a list as ``2,4,8``."""
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value


def numeric_columns(sweep: Sweep) -> list[str]:
    """The measured numbers: each entry, each claim's ours and control."""
    names: list[str] = []
    for m in sweep.measures:
        names += [m.name] + ([f"{m.name}.control"] if m.kind == "claim" else [])
    return names


def summarise(sweep: Sweep, table: pd.DataFrame) -> pd.DataFrame:
    """One row per point × measured number: ``mean``, ``min``, ``max`` and ``n`` over the seeds that have a finite
    value, and for a claim ``verdicts`` (``reproduced 2/3; partial 1/3``)."""
    import pandas as pd

    dests = [a.dest for a in sweep.axes]
    rows = []
    for key, group in table.groupby(dests, sort=False, dropna=False):
        point = dict(zip(dests, key if isinstance(key, tuple) else (key,)))
        for column in numeric_columns(sweep):
            values = [float(v) for v in pd.to_numeric(group[column], errors="coerce") if math.isfinite(v)]
            verdict = column + ".verdict"
            verdicts = group[verdict].value_counts(dropna=True) if verdict in group else {}
            rows.append(
                {
                    **point,
                    "measure": column,
                    "mean": sum(values) / len(values) if values else math.nan,
                    "min": min(values, default=math.nan),
                    "max": max(values, default=math.nan),
                    "n": len(values),
                    "verdicts": "; ".join(f"{v} {c}/{len(group)}" for v, c in dict(verdicts).items()),
                }
            )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ the figure


def sweep_figure(sweep: Sweep, summary: pd.DataFrame, rules: Mapping[str, Any] | None = None) -> Figure:
    """A panel per measure: its mean over seeds against the first grid axis, one line per value of the other axes,
    the min-max band over seeds shaded; a claim's control dashed in the line's colour and its rule's bounds dotted."""
    from analyses.plotting import subplots

    names = [m.name for m in sweep.measures]
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = subplots(nrows, ncols, figsize=(4.3 * ncols, 3.2 * nrows + 0.5), squeeze=False)
    for i, name in enumerate(names):
        ax = axes[i // ncols][i % ncols]
        _panel(ax, sweep, summary, name, (rules or {}).get(name))
    for j in range(len(names), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    axes[0][0].legend(fontsize=7, title=", ".join(a.dest for a in sweep.axes[1:]) or None)
    grid = " × ".join(f"{a.dest} {_values_words(a.values)}" for a in sweep.axes)
    fig.suptitle(
        f"sweep of {sweep.experiment}:{sweep.part} ({sweep.preset} preset) over {grid}; "
        f"seeds {', '.join(map(str, sweep.seeds))}: mean, min-max band",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def _values_words(values: Sequence[Any]) -> str:
    return "{" + ", ".join(str(_cell(v)) for v in values) + "}"


def series(sweep: Sweep) -> list[dict[str, Any]]:
    """The figure's lines: every combination of the values of the axes after the first (one line if none)."""
    return points(sweep.axes[1:])


def _panel(ax: Any, sweep: Sweep, summary: pd.DataFrame, name: str, rule: Any) -> None:
    first = sweep.axes[0]
    cells = [_cell(v) for v in first.values]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in cells)
    xs = [float(v) for v in cells] if numeric else list(range(len(cells)))
    for k, line in enumerate(series(sweep)):
        label = ", ".join(f"{d}={_cell(v)}" for d, v in line.items()) or "mean over seeds"
        for column, style in ((name, "-"), (f"{name}.control", "--")):
            picked = summary[summary["measure"] == column]
            for dest, value in line.items():
                picked = picked[picked[dest] == _cell(value)]
            if picked.empty:
                continue
            by_x = {row[first.dest]: row for _, row in picked.iterrows()}
            ys = [by_x[c]["mean"] if c in by_x else math.nan for c in cells]
            color = f"C{k % 10}"
            if style == "-":
                lo = [by_x[c]["min"] if c in by_x else math.nan for c in cells]
                hi = [by_x[c]["max"] if c in by_x else math.nan for c in cells]
                ax.fill_between(xs, lo, hi, color=color, alpha=0.2, linewidth=0)
                ax.plot(xs, ys, style, color=color, marker="o", ms=3, label=label)
            else:
                ax.plot(xs, ys, style, color=color, lw=1, label=f"_control {label}")
    for bound in ("lo", "hi") if isinstance(rule, Mapping) else ():
        if rule.get(bound) is not None:
            ax.axhline(rule[bound], color="0.5", ls=":", lw=1, label=f"_rule {bound}")
    if numeric and min(xs) > 0 and max(xs) / min(xs) >= 50:
        ax.set_xscale("log")
    if not numeric or len(xs) <= 8:
        ax.set_xticks(xs, [str(c) for c in cells], rotation=20 if not numeric and len(cells) > 3 else 0)
    if not ax.get_lines() or all(math.isnan(y) for line in ax.get_lines() for y in line.get_ydata()):
        ax.text(0.5, 0.5, "no value in any job", ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xlabel(first.dest)
    controlled = not summary[summary["measure"] == f"{name}.control"].dropna(subset=["mean"]).empty
    ax.set_title(name + (" (dashed: its control)" if controlled else ""), fontsize=8)
