"""Results kept in the repository: finished paper-scale runs, their provenance, and the ledger that shows them.

A kept run is ``analyses/measured/runs/<preset>-<device>-<date>/``: ``provenance.json`` (commit, preset, seeds,
device, machine, date, each part's wall time) and each experiment's ``results.json`` as the run wrote it
(``seed<k>/<experiment>/results.json``; small, no weights, no figures). The report renders them beside a fresh
run (:func:`kept_rows`: every claim of the parts that ran, merged over seeds and judged again from its rule), and
the ledger (:func:`ledger_md`) lists every part of the paper plan with its cost and what has run.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analyses.report import ledger
from mechrecall import probe
from mechrecall.claims import judge_row, label, over_seeds
from mechrecall.io import atomic_write_json

RUNS = ledger.MEASURED / "runs"
#: ``progress.log`` lines of a report's jobs: ``started noisy_icl/seed0:main;`` / ``done noisy_icl/seed0:main in 9 s;``
#: (a sweep cell, ``...:part/cell``, is not a part's job).
_JOB = re.compile(r"^\S+ \S+ (started|done) (\w+)/seed(\d+):(\w+)(?=;| in )", re.MULTILINE)


def running_path() -> Path:
    """``analyses/measured/running.json``: the paper-preset runs in flight when it was written (``--in-flight``)."""
    return ledger.MEASURED / "running.json"


def in_flight(outs: Sequence[str | Path], device: str) -> list[dict[str, Any]]:
    """Per part that the reports in ``outs`` have started: the seeds started and the seeds done, from each report's
    ``report/progress.log`` (jobs not yet started are not in it).

    Raises:
        FileNotFoundError: an ``OUT`` without ``report/progress.log`` (not the ``--out`` of ``analyses.reproduce``).
    """
    entries = []
    for out in map(Path, outs):
        log = out / "report" / "progress.log"
        if not log.is_file():
            raise FileNotFoundError(f"{out}: no report/progress.log; expected the --out of analyses.reproduce")
        seeds: dict[str, dict[str, set[int]]] = {}
        for event, experiment, seed, part in _JOB.findall(log.read_text()):
            seeds.setdefault(f"{experiment}:{part}", {"started": set(), "done": set()})[event].add(int(seed))
        for part, s in seeds.items():
            entries.append(
                {"part": part, "device": device, "out": out.name, "seeds_started": sorted(s["started"]),
                 "seeds_done": sorted(s["done"])}
            )  # fmt: skip
    return entries


def record_in_flight(outs: Sequence[str | Path], device: str) -> Path:
    """Write :func:`in_flight` of ``outs`` (as of now) to :func:`running_path`, for the ledger's *status*."""
    path = running_path()
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    atomic_write_json(path, {"as_of": now, "machine": ledger.machine(), "parts": in_flight(outs, device)})
    return path


def _running() -> tuple[str, dict[str, dict[str, Any]]]:
    path = running_path()
    if not path.is_file():
        return "", {}
    data = json.loads(path.read_text())
    return data["as_of"], {e["part"]: e for e in data["parts"]}


def _results(out: Path) -> list[tuple[str, Path]]:
    """``(folder, path)`` of every ``results.json`` of a report's ``OUT`` (``seed3`` or ``""``)."""
    found = []
    for path in sorted(out.glob("*/results.json")) + sorted(out.glob("seed*/*/results.json")):
        folder = path.parent.parent.relative_to(out).as_posix()
        found.append(("" if folder == "." else folder, path))
    return found


def keep(
    out: str | Path,
    device: str = "cpu",
    runs: Path | None = None,
    name: str | None = None,
    only: Sequence[str] | None = None,
) -> Path:
    """Copy the ``results.json`` of every experiment in the report folder ``out`` into ``runs/<name>/`` with a
    ``provenance.json`` (the machine keeping it; the commit is the one the results were made by, their
    ``versions.commit``); ``name`` defaults to ``<preset>-<device>-<date>`` (``-2``, ``-3`` … where that is
    taken). Parts that did not finish are left out (a rerun of the same command resumes them), and with ``only``
    (``EXP`` or ``EXP:PART``) every part not named (one kept before, say)."""
    out = Path(out)
    found = _results(out)
    if not found:
        raise FileNotFoundError(f"{out}: no <experiment>/results.json or seed<k>/<experiment>/results.json there")
    payloads = [(folder, json.loads(path.read_text(encoding="utf-8"))) for folder, path in found]
    presets = {p["config"]["preset"] for _, p in payloads}
    if len(presets) != 1:
        raise ValueError(f"{out}: results of presets {sorted(presets)}; expected one preset per kept run")
    preset = presets.pop()
    date = _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    target = (runs or RUNS) / (name or f"{preset}-{device}-{date}")
    if name is None:  # another run kept the same day: a folder of its own
        stem, n = target.name, 2
        while target.exists():
            target, n = target.with_name(f"{stem}-{n}"), n + 1
    parts: dict[str, dict[str, Any]] = {}
    for folder, payload in payloads:
        exp = payload["experiment"]
        done = {
            k: v
            for k, v in payload["parts"].items()
            if v.get("status") == "done" and (not only or exp in only or f"{exp}:{k}" in only)
        }
        if not done:
            continue
        kept = {**payload, "parts": {k: {**v, "figures": []} for k, v in done.items()}, "figures": []}
        dest = target / folder / payload["experiment"] / "results.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(dest, kept)
        for part, info in done.items():
            fresh = {"seeds": [], "seconds": [], "changed": _changed(payload)}
            entry = parts.setdefault(f"{payload['experiment']}:{part}", fresh)
            entry["seeds"].append(payload["config"]["seed"])
            entry["seconds"].append(round(float(info.get("seconds") or 0.0), 1))
    commits = sorted({str(p.get("versions", {}).get("commit")) for _, p in payloads})
    if not parts:
        raise FileNotFoundError(f"{out}: no finished part" + (f" among {', '.join(only)}" if only else ""))
    provenance = {
        "preset": preset,
        "device": device,
        "machine": {**ledger.machine(), "commit": ", ".join(commits)},
        "source": str(out),
        "seeds": sorted({s for p in parts.values() for s in p["seeds"]}),
        "parts": parts,
    }
    atomic_write_json(target / "provenance.json", provenance)
    return target


def _changed(payload: Mapping[str, Any]) -> list[str]:
    """The preset fields a run changed (an option with a field, ``--set``) as ``field=value``: not the paper's sizes."""
    from analyses.registry import experiment
    from mechrecall.errors import UsageError

    config = payload["config"]
    try:
        diffs = experiment(payload["experiment"]).overrides(config["preset"], config.get("options") or {})
    except UsageError as exc:  # results of an option this code does not know: not to be kept as if at full size
        raise ValueError(f"{payload['experiment']} (seed {config.get('seed')}): {exc}") from None
    return [f"{k}={json.dumps(new)}" for k, (new, _) in sorted(diffs.items())]


def kept_runs(runs: Path | None = None) -> list[dict[str, Any]]:
    """Every kept run (default under :data:`RUNS`): its provenance, its name and folder."""
    out = []
    for path in sorted((runs or RUNS).glob("*/provenance.json")):
        out.append({**json.loads(path.read_text(encoding="utf-8")), "name": path.parent.name, "folder": path.parent})
    return out


def kept_rows(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The claim rows of the kept runs' parts that finished: one row per claim and setting of its part (the
    paper's sizes, or each set of changed fields), merged over the seeds of every run that kept it and judged
    again. Where two runs kept the same seed of a part, the later one's (by the date it was kept) stands."""
    groups: dict[tuple[str, tuple[str, ...]], dict[int, dict[str, Mapping[str, Any]]]] = {}
    sources: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}
    for run in sorted(runs, key=lambda r: (r["machine"]["date"], r["name"])):
        for path in sorted(Path(run["folder"]).glob("**/results.json")):
            payload = json.loads(path.read_text(encoding="utf-8"))
            name, seed = payload["experiment"], payload["config"]["seed"]
            for claim in payload.get("claims", []):
                part = f"{name}:{claim['id'].split('.')[1]}"
                entry = run["parts"].get(part)
                if entry is None:  # a part that did not finish, or was not kept from this run
                    continue
                key = (part, tuple(entry.get("changed", [])))
                groups.setdefault(key, {}).setdefault(seed, {})[claim["id"]] = claim
                sources.setdefault(key, {})[run["name"]] = run["device"]
    rows = []
    for key, by_seed in sorted(groups.items(), key=lambda kv: bool(kv[0][1])):  # the paper's sizes first
        names = sources[key]
        for row in over_seeds({seed: list(claims.values()) for seed, claims in by_seed.items()}):
            rows.append(
                {
                    **row,
                    "verdict": judge_row(row),
                    "experiment": key[0].split(":")[0],
                    "part": key[0],
                    "changed": list(key[1]),
                    "kept": ", ".join(names),
                    "device": ", ".join(sorted(set(names.values()))),
                }
            )
    return rows


def _verdicts(rows: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[label(row)] = counts.get(label(row), 0) + 1
    return "; ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "—"


def _claims_cell(claims: Sequence[Mapping[str, Any]]) -> str:
    """The paper's claims' verdicts, then the extensions', ablations' and checks' (the code against its closed
    form: not a reproduction)."""
    paper = [c for c in claims if c.get("class", "paper") == "paper"]
    cells = [_verdicts(paper)] if paper else []
    for kind in ("extension", "ablation", "check"):
        rows = [c for c in claims if c.get("class") == kind]
        if rows:
            cells.append(f"{kind}s: {_verdicts(rows)}")
    return "; ".join(cells) or "—"


def _sizes(ref: ledger.PartRef, here: str, changed: Sequence[str] = ()) -> str:
    if changed:  # kept only with some fields changed (--set, an option): those are the largest run here
        from analyses.registry import experiment

        paper = ledger.flat(experiment(ref.experiment).preset_values()["paper"])
        pairs = [c.split("=", 1) for c in changed]
        return "the paper's but " + ", ".join(f"{k} {_v(paper.get(k))} ({v})" for k, v in pairs)
    diffs = ledger.size_differences(ref.experiment, here, ref.sizes)
    if not diffs:
        return "the paper's" if here == "paper" or ref.sizes == () else "the paper's (no size differs)"
    text = ", ".join(f"{k} {_v(p)} ({_v(o)})" for k, p, o in diffs[:5])
    return text + (f", +{len(diffs) - 5} more" if len(diffs) > 5 else "")


def _v(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(map(str, value[:4])) + (",…" if len(value) > 4 else "") + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _smoke_preset(experiment: str) -> str:
    from analyses.report.plan import step

    return step("smoke", experiment).preset


def ledger_rows() -> list[dict[str, Any]]:
    """One row per part of the paper plan: its probe here and on any GPU, the kept runs at the paper preset."""
    probes = ledger.load_probes()
    runs = [r for r in kept_runs() if r["preset"] == "paper"]
    rows = []
    for ref in ledger.paper_parts():
        probed = {
            dev: next((p for p in pr.get("parts", []) if p["part"] == ref.id), None) for dev, pr in probes.items()
        }
        kept = [r for r in runs if ref.id in r["parts"]]
        claims = [c for c in kept_rows(kept) if c["part"] == ref.id]
        rows.append(
            {
                "ref": ref,
                "probes": probed,
                "kept": kept,
                "claims": claims,
                "here": "paper" if kept else _smoke_preset(ref.experiment),
            }
        )
        if full_size_seeds(rows[-1]):  # the verdicts at the paper's own sizes, not a run's with a field changed
            rows[-1]["changed"], rows[-1]["claims"] = [], [c for c in claims if not c["changed"]]
        else:
            rows[-1]["changed"] = sorted({c for r in kept for c in r["parts"][ref.id].get("changed", [])})
    return rows


def _cost_cells(row: Mapping[str, Any], peak: float) -> list[str]:
    cpu = row["probes"].get("cpu")
    if row["ref"].kind == "pretrained":
        return ["—", "—", "—", "—", "see *At Pythia's sizes* (README)"]
    if not cpu:
        return ["—", "—", "—", "—", "not probed"]
    main = ledger.main_run(cpu["runs"])
    if main is None:
        return ["— (no training)", "—", "—", "—", ledger._hours(cpu)]
    steps = sum(r["steps"] for r in cpu["runs"])
    flops, seconds = main["flops_per_step"], main["seconds_per_step"]
    frac = f"{flops / seconds / peak:.2f}" if flops and seconds else "—"
    return [
        f"{flops:.3g}" if flops else "— (not counted)",
        f"{steps:,} ({len(cpu['runs'])} runs)",
        f"{seconds:.3g}",
        frac,
        ledger._hours(cpu),
    ]


def _gpu_cell(row: Mapping[str, Any], peak: float) -> str:
    gpu_kept = [r for r in row["kept"] if r["device"] != "cpu"]
    if gpu_kept:
        seconds = max(
            sum(r["parts"][row["ref"].id]["seconds"]) / len(r["parts"][row["ref"].id]["seconds"]) for r in gpu_kept
        )
        return f"{ledger.duration(seconds)} (measured, {gpu_kept[0]['device']})"
    walls = ledger.gpu_walls().get(row["ref"].id)
    if walls and walls["status"] in ("done", "stopped"):
        bound = "" if walls["status"] == "done" else "> "
        return (
            f"{bound}{ledger.duration(walls['wall_s'])} (measured, {walls['device']} {walls['date']}, seed 0; not kept)"
        )
    cpu = row["probes"].get("cpu")
    if row["ref"].kind != "train" or not cpu:
        return "—"
    total = cpu.get("estimate_s", cpu.get("estimate_at_least_s", 0.0))
    rest = max(total - probe.estimate_seconds(cpu["runs"]), 0.0)
    bound = "" if "estimate_s" in cpu else "> "
    return f"{bound}{ledger.duration(ledger.gpu_estimate(cpu['runs'], rest / 10, peak))} (est.)"


def _going(part: str, kept: Sequence[int]) -> str:
    """``running (cpu, as of ...; seeds started 1, 2; done, not kept yet: 1)`` for the seeds beyond ``kept``, or ""."""
    as_of, flying = _running()
    entry = flying.get(part)
    more = [s for s in entry["seeds_started"] if s not in kept] if entry else []
    if not entry or not more:
        return ""
    done = [s for s in entry["seeds_done"] if s not in kept]
    tail = f"; done, not kept yet: {', '.join(map(str, done))}" if done else ""
    return f"running ({entry['device']}, as of {as_of}; seeds started {', '.join(map(str, more))}{tail})"


#: The seeds a seeded part needs at the paper's sizes before its verdicts count as a reproduction's.
SEEDS_WANTED = 3


def kept_seeds(row: Mapping[str, Any]) -> list[int]:
    """The seeds of ``row``'s part over its kept runs."""
    return sorted({s for r in row["kept"] for s in r["parts"][row["ref"].id]["seeds"]})


def _settings(row: Mapping[str, Any]) -> dict[tuple[str, ...], list[int]]:
    """The seeds of ``row``'s part over its kept runs, by setting: ``()`` the paper's sizes, else the fields changed."""
    out: dict[tuple[str, ...], set[int]] = {}
    for run in row["kept"]:
        entry = run["parts"][row["ref"].id]
        out.setdefault(tuple(entry.get("changed", [])), set()).update(entry["seeds"])
    return {changed: sorted(seeds) for changed, seeds in out.items()}


def full_size_seeds(row: Mapping[str, Any]) -> list[int]:
    """The seeds of ``row``'s part over its kept runs at the paper's own sizes (no preset field changed)."""
    return _settings(row).get((), [])


def seeds_complete(row: Mapping[str, Any]) -> bool:
    """Whether ``row``'s part has run at the paper's sizes with the seeds it needs: :data:`SEEDS_WANTED` for a
    seeded part; one run for an exact part (no seed) or a part over trial seeds of its own."""
    seeds = full_size_seeds(row)
    return bool(seeds) and (row["ref"].seeding != "seeded" or len(seeds) >= SEEDS_WANTED)


def _seeds_text(ref: ledger.PartRef, kept: Sequence[int]) -> str:
    if ref.seeding == "exact":
        return "exact: no seed"
    if ref.seeding == "trials":
        return "one run over its own trial seeds"
    return f"seeds {', '.join(map(str, kept))}" + ("" if len(kept) >= SEEDS_WANTED else f" of {SEEDS_WANTED}")


def _status(row: Mapping[str, Any]) -> str:
    kept = kept_seeds(row)
    going = _going(row["ref"].id, kept)
    if row["kept"]:
        devices = ", ".join(sorted({r["device"] for r in row["kept"]}))
        settings = _settings(row)
        full = settings.pop((), [])
        texts = [_seeds_text(row["ref"], full)] if full else []
        for changed, seeds in sorted(settings.items()):
            but = f"the paper's sizes but {', '.join(changed)}"
            texts.append(
                f"and {but}: {_seeds_text(row['ref'], seeds)}" if full else f"{_seeds_text(row['ref'], seeds)}; {but}"
            )
        return f"run ({devices}; {'; '.join(texts)})" + (f"; {going}" if going else "")
    if going:
        return going
    cpu = row["probes"].get("cpu")
    if cpu and ledger.fits_here(cpu):
        return "not yet (fits here)"
    return (
        "not yet (a GPU)"
        if cpu and ("estimate_at_least_s" in cpu or cpu["estimate_s"] > ledger.FITS_HERE_S)
        else "not yet"
    )


COLUMNS = (
    "part",
    "paper's sizes (largest run here)",
    "FLOPs / step",
    "steps",
    "s / step (1 core)",
    "fraction of peak",
    "paper preset, 1 core (est.)",
    "paper preset, GPU",
    "status",
    "verdicts at the paper's size",
)


def ledger_md() -> str:
    """The ledger as Markdown (``docs/paper-scale.md``)."""
    rows = ledger_rows()
    probes = ledger.load_probes()
    cpu = probes.get("cpu", {})
    peak = float(cpu.get("matmul_flops_one_core") or 1.0)
    lines = [
        "# The papers' own scale: a ledger",
        "",
        "Generated by `python -m analyses.paper_scale --ledger docs/paper-scale.md --update-readme README.md` "
        "from the probe and the kept runs in `analyses/measured/`; do not edit.",
        "",
        coverage_line(rows),
        "",
    ]
    if cpu:
        m = cpu["machine"]
        lines += [
            f"Probed on {m['cpu']} ({m['cores']} cores, torch {m['torch']}, commit {m['commit']}, "
            f"{m['date'][:10]}): one thread per part, float32; one core's float32 matmul rate "
            f"{peak / 1e9:.1f} GFLOP/s (the *fraction of peak* divides a step's FLOPs per second by it).",
            "",
        ]
    lines += [
        "How to read it: *paper's sizes* lists each preset field where the paper differs from the largest preset "
        "run here (in brackets). *FLOPs / step*, *s / step* and *fraction of peak* are of the part's costliest "
        "training run (forward and backward, counted by torch's FLOP counter; a few timed steps of the paper "
        "preset, `mechrecall.probe`); *steps* sums every training run of the part. The 1-core estimate is the "
        "probed wall time of the whole part (data, evaluations, SVDs at full size) less the probe's own steps, plus "
        f"every run's steps × s/step and evaluations × s/evaluation. A GPU estimate (est.) assumes "
        f"{ledger.GPU_FLOPS / 1e12:.0f} TFLOP/s sustained and at least {ledger.GPU_STEP_FLOOR_S * 1e3:.0f} ms per "
        "step (kernel launches), its evaluations at the same rate, and the rest of the part 10× faster than one "
        "core; *measured* is a GPU window's wall time (a kept run, or `analyses/measured/gpu_walls.json` where the "
        "window's results were not brought back). "
        f"*Fits here*: within {ledger.FITS_HERE_S / 3600:.0f} h on one core. *Running*: a background run at the paper "
        "preset as `python -m analyses.paper_scale --in-flight OUT` last recorded it (its seeds started and finished, "
        f"not yet kept). *Run*: kept at the paper preset, with its seeds against the {SEEDS_WANTED} a seeded part "
        "needs (an exact part has no seed; a part over trial seeds of its own runs once); "
        "a run that changed a preset field (`--set`, or an option such as `--batch`) reads *the paper's sizes but "
        "FIELD=VALUE* and does not count as run at the paper's sizes. Parts on pretrained models are timed "
        "by `benchmarks/bench_pretrained_shapes.py` (the README's *At Pythia's sizes*).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for row in rows:
        ref = row["ref"]
        cells = [
            f"`{ref.id}`",
            _sizes(ref, row["here"], row["changed"]),
            *_cost_cells(row, peak),
            _gpu_cell(row, peak),
            _status(row),
            _claims_cell(row["claims"]),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    runs = kept_runs()
    if runs:
        lines += [
            "",
            "## Kept runs",
            "",
            "Seconds are each part's own (a sweep's cells ran before it as jobs of their own and are not in them).",
            "",
        ]
        for r in runs:
            m = r["machine"]
            lines.append(
                f"- `{r['name']}`: preset {r['preset']}, {r['device']} ({m['cpu']}), commit {m['commit']}, "
                f"{m['date'][:10]}, seeds {', '.join(map(str, r['seeds']))}; parts "
                + ", ".join(f"`{p}` ({ledger.duration(max(v['seconds']))} per seed)" for p, v in r["parts"].items())
            )
    return "\n".join(lines) + "\n"


def coverage_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line: how much of the paper plan has run at the paper's sizes."""
    train = [r for r in rows if r["ref"].kind == "train"]
    run = [r for r in train if full_size_seeds(r)]
    fits = [r for r in train if r["probes"].get("cpu") and ledger.fits_here(r["probes"]["cpu"])]
    done = [r for r in fits if seeds_complete(r)]
    judged = [  # the claims of the parts run at the paper's sizes (not those of a run with a field changed)
        c for r in run for c in r["claims"] if c.get("class", "paper") == "paper" and c.get("at_scale") != "reduced"
    ]
    return (
        f"**Coverage:** {len(run)} of the {len(train)} toy-model parts have run at the paper's sizes (their "
        f"paper claims: {_verdicts(judged)}); {len(fits)} fit 2 h on one core of this machine, {len(done)} of them "
        f"with every seed they need ({SEEDS_WANTED} seeds, or one run where the part has no seed or its own trial "
        "seeds); "
        f"the {len(rows) - len(train)} parts on pretrained models run on real checkpoints (`--model`)."
    )


def write_ledger(path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ledger_md(), encoding="utf-8")
    return path


README_START, README_END = "<!-- paper-scale:start -->", "<!-- paper-scale:end -->"


def update_readme(readme: str | Path, ledger_path: str | Path) -> Path:
    """Rewrite the README's paper-scale block: the coverage line and a link to the ledger."""
    from analyses.report.render import replace_block

    readme = Path(readme)
    link = Path(os.path.relpath(Path(ledger_path).resolve(), readme.resolve().parent)).as_posix()
    block = (
        f"**At the papers' own sizes** ([{link}]({link}): every part, its cost here and on a GPU, what has "
        f"run): {coverage_line(ledger_rows())[len('**Coverage:** ') :]}"
    )
    readme.write_text(
        replace_block(readme.read_text(encoding="utf-8"), block, README_START, README_END), encoding="utf-8"
    )
    return readme
