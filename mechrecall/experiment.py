"""The experiment protocol: one CLI, one run loop and one results file for every paper's experiment.

An experiment declares its name, paper, parts (sub-experiments), presets, claims and own options::

    from mypaper import paper  # a paper package: its modules are imported on first use (mechrecall.lazy)

    EXPERIMENT = Experiment(
        name="noisy_icl", paper="Distributional Associations vs In-Context Reasoning (Chen, Bruna & Bietti)",
        summary="FF layers store the noise association, attention recalls in context.",
        parts=(Part("main", lambda ctx: paper.parts.part_main(ctx), "Figs 3, 4, 7-10"), ...),
        preset_table=lambda: paper.presets.NOISY_ICL_PRESETS,
        claims=lambda: paper.claims.NOISY_ICL_CLAIMS,
        options=(Option("--steps", type=int, low=1, field="steps", help="training steps"),),
    )
    if __name__ == "__main__":
        sys.exit(EXPERIMENT.main())

and gets ``--preset --experiment --seed --out --device --threads --no-progress --fresh --help`` plus
its own options. A part is ``function(ctx: Context) -> PartResult`` (its numbers and figures). Parts, the check,
the presets and the claims are real references (mypy checks them, go-to-definition follows them); the lambdas only
defer the paper's imports until a part runs, so ``--help`` answers without importing torch. The protocol knows
which part runs (``ctx.part``), hands it the typed preset with the options that override a preset field applied
(``ctx.params``), and evaluates the paper's claims table against the part's results; every claim of a run whose
sizes differ from the named preset says so in its note.

Results go to ``OUT/<experiment>/results.json`` (schema ``mechrecall.results/2``), **rewritten after
each part finishes**; a rerun into the same folder keeps finished parts and skips them (training runs
inside an unfinished part resume from their checkpoints). A rerun with another preset, seed or
option refuses to mix results and names the difference: use another ``--out`` or ``--fresh``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import logging
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, NoReturn, TypeVar

from mechrecall.claims import ClaimSpec, check_table, evaluate, over_seeds, summary
from mechrecall.errors import UsageError
from mechrecall.presets import Preset, describe_overrides, override
from mechrecall.seeds import SEEDS_SCHEMA, parse_seeds, seed_out
from mechrecall.typed import NotRun, Results, ResultsError, read_results

P = TypeVar("P", bound=Preset)  # a paper's preset type (the type of ``Context.params``)

RESULTS_SCHEMA = "mechrecall.results/2"
PRESETS = ("micro", "smoke", "paper")
PRESET_HELP = {
    "micro": "seconds; exercises every code path (the tests)",
    "smoke": "a laptop CPU in minutes; shows the paper's qualitative effect",
    "paper": "the paper's sizes (a GPU is the practical choice)",
}
STATUS_DONE, STATUS_FAILED = "done", "failed"


@dataclass(frozen=True)
class Part:
    """A sub-experiment: ``run`` is ``function(ctx) -> PartResult``; an entry module passes
    ``lambda ctx: paper.parts.part_x(ctx)``, so the paper's modules are imported only when the part runs.

    ``presets``: the presets that include it (``None``: all). ``seeded``: whether ``--seed`` changes it (an exact
    computation does not: another seed is refused, naming the part). ``reports``: the report presets
    (``quick``, ``smoke``, ``paper``) whose plan runs it. ``minutes``: its rough cost on one core per preset (the
    report starts the longest jobs first). ``tasks``: the independent units of its work (a sweep's cells) as
    :class:`PartTask` s, which the report runs as jobs of its executor before the part (that then finds them done);
    a part runs them itself when run alone. ``trials``: the part spreads its numbers over trial seeds of its own
    (which ``--seed`` shifts, so each is still seeded): a multi-seed run runs it once, at its first seed, and its
    claims show those trials (a sweep of cells × trial seeds, too costly to repeat per seed). ``pretrained``: it
    reads a pretrained model (``--model``) rather than training a toy (the paper-scale ledger times it apart).
    ``sizes``: the preset fields that set its sizes (``("r.", "pt_steps.r")``: a field, or a prefix of dotted
    nested fields; ``()``: none), which the ledger compares with the paper's. ``results``: the
    part's typed results model (:class:`mechrecall.typed.Results`; an entry module passes
    ``lambda: paper.results.WorldG`` so nothing is imported before the part runs): what the part hands back is
    validated as it, stored with its schema, and validated again when ``results.json`` is read back
    (:meth:`Experiment.load`)."""

    name: str
    run: Callable[[Context[Any]], PartResult]
    help: str
    results: Callable[[], type[Results]] | None = None
    presets: tuple[str, ...] | None = None
    seeded: bool = True
    reports: tuple[str, ...] = ("smoke", "paper")
    minutes: Mapping[str, float] = field(default_factory=dict)
    tasks: Callable[[Context[Any]], Sequence[PartTask]] | None = None
    trials: bool = False
    pretrained: bool = False  # it reads a pretrained model's weights (--model), not a toy it trains
    sizes: tuple[str, ...] | None = None  # the preset fields (dotted prefixes) that set its sizes; None: every field

    def cost(self, preset: str) -> float:
        """Rough minutes on one core at ``preset`` (1 where undeclared)."""
        return float(self.minutes.get(preset, 1.0))


@dataclass(frozen=True)
class PartTask:
    """One unit of a part's work that an executor may run before the part: ``fn(*args)`` (both picklable) returns a
    JSON-able value, which the driver writes to ``path``, where the part looks for it (and skips that unit)."""

    id: str
    path: Path
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    seconds: float = 60.0


@dataclass(frozen=True)
class Option:
    """One experiment-specific command-line option (``argparse.add_argument(*flags, **kwargs)``).

    ``compare=False`` marks an option that does not change the numbers (a rerun with another value resumes).
    ``low`` / ``high``: the inclusive range of a numeric option, ``above``: a strict lower bound (a learning rate,
    a temperature), checked before any work (one line naming the value); NaN is refused too. ``field``: the
    preset field the option overrides (its default ``None`` means "the preset's"); the claims of a run where it
    differs from the preset say so."""

    flags: tuple[str, ...]
    kwargs: Mapping[str, Any]
    compare: bool
    low: float | None
    high: float | None
    above: float | None
    field: str | None

    def __init__(
        self,
        *flags: str,
        compare: bool = True,
        low: float | None = None,
        high: float | None = None,
        above: float | None = None,
        field: str | None = None,
        **kwargs: Any,
    ) -> None:
        object.__setattr__(self, "flags", flags)
        object.__setattr__(self, "kwargs", kwargs)
        object.__setattr__(self, "compare", compare)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "above", above)
        object.__setattr__(self, "field", field)

    @property
    def dest(self) -> str:
        return self.kwargs.get("dest") or self.flags[0].lstrip("-").replace("-", "_")

    def check(self, value: Any) -> None:
        """One :class:`UsageError` line naming ``value`` when it lies outside ``[low, high]`` (each item of a list)."""
        if value is None or (self.low is None and self.high is None and self.above is None):
            return
        for item in value if isinstance(value, (list, tuple)) else (value,):
            inside = (
                (self.low is None or item >= self.low)
                and (self.high is None or item <= self.high)
                and (self.above is None or item > self.above)
            )
            if not inside:  # NaN is never inside
                raise UsageError(f"{self.flags[0]} {item}; expected {self.range_words()}")

    def range_words(self) -> str:
        kind = "an integer" if self.kwargs.get("type") in (int, comma_ints) else "a number"
        bounds = [f"> {self.above:g}"] if self.above is not None else []
        if self.low is not None and self.high is not None:
            return f"{kind} in [{self.low:g}, {self.high:g}]" + "".join(f", {b}" for b in bounds)
        bounds += [f">= {self.low:g}"] if self.low is not None else []
        bounds += [f"<= {self.high:g}"] if self.high is not None else []
        return f"{kind} " + " and ".join(bounds)


@dataclass
class PartResult:
    """What a part hands back: its numbers (its typed results, :class:`mechrecall.typed.Results`, which its claims
    read; a dict is validated as the part's declared model) and its figures (name -> Figure / HTML
    str / bytes). Claims are not built here: the protocol evaluates the paper's claims table against ``results``.

    ``footer``: what else a reader of the figures needs (e.g. "600 steps, d = 64"); the protocol writes it, with
    the experiment, part, preset and seed, at the bottom of every matplotlib figure of the part.

    ``scale``: the part's sizes against the paper's, ``{axis: (ours, paper's)}``, where the part knows them better
    than its preset does (a pretrained model's size against the paper's model); ``None``: from the preset
    (:meth:`Context.scale`)."""

    results: Results | NotRun | dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    footer: str = ""
    scale: Mapping[str, tuple[float, float]] | None = None


#: Every experiment's ``--set FIELD=VALUE``: any field of the preset, e.g. the paper's sizes on every axis but one.
SET_OPTION = Option(
    "--set",
    action="append",
    metavar="FIELD=VALUE",
    default=None,
    help="change one preset field (dotted for a nested one; VALUE in JSON, e.g. --set pretrained_mlp.right.m=64); "
    "repeatable; the claims say what changed",
)


def preset_sets(preset: Preset, name: str, sets: Sequence[str] | None) -> dict[str, Any]:
    """``--set`` items as ``{field: value}``, each checked against ``preset`` (named ``name``): the field exists
    and the value has the preset value's type (a JSON list for a tuple; an integer for a float). One
    :class:`UsageError` line naming the bad item otherwise."""
    out: dict[str, Any] = {}
    for item in [sets] if isinstance(sets, str) else sets or ():
        key, eq, text = item.partition("=")
        current: Any = preset
        for part in key.split("."):
            if (
                not eq
                or not dataclasses.is_dataclass(current)
                or part not in {f.name for f in dataclasses.fields(current)}
            ):
                fields = (
                    sorted(f.name for f in dataclasses.fields(current)) if dataclasses.is_dataclass(current) else []
                )
                raise UsageError(
                    f"--set {item}: expected FIELD=VALUE with FIELD one of preset {name}'s fields"
                    + (f" (at {part!r}: {', '.join(fields)})" if fields and eq else "")
                )
            current = getattr(current, part)
        out[key] = _set_value(item, text, current)
    return out


def _set_value(item: str, text: str, current: Any) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    if isinstance(current, tuple) and isinstance(value, list):
        value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    if isinstance(current, float) and type(value) is int:
        value = float(value)
    if current is not None and type(value) is not type(current):
        kind = type(current).__name__
        raise UsageError(
            f"--set {item}: expected {'an' if kind[0] in 'aeiou' else 'a'} {kind} like the preset's {current!r}"
        )
    return value


NOT_COMPARABLE_NOTE = "sizes far below the paper's, not comparable"


@dataclass
class Context(Generic[P]):
    """What a part gets: where to write, the preset (its name and its typed values, options applied), the seed,
    device, the experiment's own options and the part that is running.

    ``params`` is the paper's own preset type: a part that reads sizes annotates ``ctx: Context[MyPreset]``."""

    experiment: Experiment
    out: Path
    preset: str
    seed: int
    options: dict[str, Any]
    params: P  # the typed preset with the options that override its fields applied
    device: str | None = None
    progress: bool = False
    parts: tuple[str, ...] = ()
    cache: dict[Any, Any] = field(default_factory=dict)  # shared by the parts of one invocation (e.g. a loaded model)
    overrides: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (ours, the preset's)
    part: str = ""  # the part running now

    def run_dir(self, name: str) -> Path:
        """Folder of one training run inside this experiment (checkpoints, resumable)."""
        return self.out / "runs" / name

    def claim_notes(self) -> tuple[str, str]:
        """What every claim of this run must say, before and after its own note: a preset that is not comparable
        to the paper's; sizes changed from the preset."""
        first = ""
        if not self.params.comparable:
            first = f"{self.preset} preset: {NOT_COMPARABLE_NOTE}"
        return first, describe_overrides(self.preset, self.overrides)

    def scale(self) -> dict[str, tuple[float, float]]:
        """The running part's sizes against the paper's, ``{axis: (ours, paper's)}``: the typed preset's
        :meth:`~mechrecall.presets.Preset.scale_axes` beside the ``paper`` preset's (the paper's sizes)."""
        table = self.experiment.preset_values()
        if self.params is None or not table or "paper" not in table:
            return {}
        ours, paper = self.params.scale_axes(self.part), table["paper"].scale_axes(self.part)
        return {axis: (float(ours[axis]), float(paper[axis])) for axis in ours if axis in paper}

    def say(self, message: str) -> None:
        print(f"[{self.experiment.name}] {message}", flush=True)


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Experiment:
    """A runnable experiment: see the module docstring."""

    name: str
    paper: str
    summary: str
    parts: tuple[Part, ...]
    preset_table: Mapping[str, Preset] | Callable[[], Mapping[str, Preset]]  # the typed presets, or a function
    claims: Sequence[ClaimSpec] | Callable[[], Sequence[ClaimSpec]] = ()  # the claims table, or a function
    options: tuple[Option, ...] = ()
    package: str = ""  # the paper's package (its name, for readers and the layout checks)
    report_presets: Mapping[str, str] = field(default_factory=dict)  # report preset -> this experiment's preset
    default_parts: tuple[str, ...] | None = None  # None: every part the preset includes
    default_preset: str = "smoke"
    presets: tuple[str, ...] = PRESETS
    preset_help: Mapping[str, str] = field(default_factory=lambda: dict(PRESET_HELP))
    check: Callable[[Context[Any]], None] | None = None  # raises UsageError before any work
    default_out: str = "runs"
    epilog: str = ""
    threads: int | None = 1  # --threads' default; None: every core (a real model's forwards, not a toy's steps)

    def __post_init__(self) -> None:
        if all(o.dest != SET_OPTION.dest for o in self.options):
            object.__setattr__(self, "options", (*self.options, SET_OPTION))
        names = [p.name for p in self.parts]
        if len(set(names)) != len(names):
            raise ValueError(f"experiment {self.name}: duplicate part names {names}")
        for d in self.default_parts or ():
            if d not in names:
                raise ValueError(f"experiment {self.name}: default part {d!r} is not one of {names}")

    # ------------------------------------------------------------------------------------ CLI

    def parser(self) -> argparse.ArgumentParser:
        parts_help = "\n".join(
            f"  {p.name:<14} {p.help}" + (f" [presets: {', '.join(p.presets)}]" if p.presets else "")
            for p in self.parts
        )
        presets_help = "\n".join(f"  {name:<14} {self.preset_help.get(name, '')}" for name in self.presets)
        description = (
            f"{self.summary}\n\nPaper: {self.paper}\n\nparts (--experiment):\n{parts_help}\n\n"
            f"presets (--preset):\n{presets_help}"
        )
        epilog = (self.epilog + "\n\n" if self.epilog else "") + (
            f"Results go to OUT/{self.name}/results.json, rewritten after each part. Rerunning the same command "
            "skips finished parts and resumes training runs from their checkpoints; --fresh starts over."
        )
        parser = OneLineErrorParser(
            prog=f"python -m analyses.{self.name}",
            description=description,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument(
            "--preset", default=self.default_preset, choices=self.presets, help="sizes (default %(default)s)"
        )
        parser.add_argument(
            "--experiment",
            nargs="+",
            metavar="PART",
            default=None,
            help="parts to run, or 'all' (default: "
            + (" ".join(self.default_parts) if self.default_parts else "all")
            + ")",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of model init and data (default %(default)s)")
        parser.add_argument(
            "--seeds",
            type=parse_seeds,
            default=None,
            metavar="SEEDS",
            help="run every seed (0-4 or 0,3,7): each to OUT/seed<N>/, the claims over the seeds (mean, "
            f"min-max, seeds passed) to OUT/{self.name}/seeds.json",
        )
        parser.add_argument(
            "--out",
            default=self.default_out,
            help=f"output folder; results go to OUT/{self.name}/ (default %(default)s)",
        )
        parser.add_argument(
            "--device", default=None, help="torch device: cpu, cuda, cuda:1, mps (default: cpu, or cuda when available)"
        )
        parser.add_argument(
            "--threads",
            type=_positive_int,
            default=self.threads or os.cpu_count() or 1,
            help="torch CPU threads (default %(default)s: "
            + ("fastest for small models)" if self.threads else "this machine's cores, for a real model's forwards)"),
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress display")
        parser.add_argument("--fresh", action="store_true", help=f"delete OUT/{self.name} first instead of resuming it")
        for option in self.options:
            parser.add_argument(*option.flags, **dict(option.kwargs))
        return parser

    def select_parts(self, requested: Sequence[str] | None, preset: str) -> tuple[str, ...]:
        included = [p.name for p in self.parts if p.presets is None or preset in p.presets]
        if not requested:
            wanted = list(self.default_parts) if self.default_parts else included
            return tuple(p for p in wanted if p in included)
        if "all" in requested:
            return tuple(included)
        known = {p.name: p for p in self.parts}
        unknown = [r for r in requested if r not in known]
        if unknown:
            raise UsageError(
                f"--experiment {' '.join(unknown)}: unknown part; expected some of {', '.join(known)} or all"
            )
        excluded = [r for r in requested if r not in included]
        if excluded:
            p = known[excluded[0]]
            raise UsageError(
                f"--experiment {p.name} is not part of --preset {preset}; it runs with "
                f"--preset {' or '.join(p.presets or ())}"
            )
        return tuple(dict.fromkeys(requested))

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Parse, check, run; user errors end in one line on stderr and exit code 2."""
        parser = self.parser()
        args = parser.parse_args(argv)
        _console_logging()
        try:
            options = {o.dest: getattr(args, o.dest) for o in self.options}
            parts = self.select_parts(args.experiment, args.preset)
            if args.seeds is not None and args.seed != 0:
                raise UsageError(f"--seed {args.seed} with --seeds; expected one of them")
            run = self.run_seeds(
                args.out,
                args.seeds or (args.seed,),
                preset=args.preset,
                parts=parts,
                options=options,
                device=args.device,
                threads=args.threads,
                progress=not args.no_progress,
                fresh=args.fresh,
            )
        except UsageError as exc:
            print(f"{parser.prog}: error: {exc}", file=sys.stderr)
            return 2
        except FloatingPointError as exc:  # a diverging training run (mechrecall.trainer): the user's to fix
            print(
                f"{parser.prog}: error: training diverged: {exc}; the part is marked failed in "
                f"{Path(args.out) / self.name / 'results.json'} (a changed option needs --fresh or another --out)",
                file=sys.stderr,
            )
            return 1
        except KeyboardInterrupt:
            print(
                f"\n{parser.prog}: interrupted; finished parts are kept in "
                f"{Path(args.out) / self.name / 'results.json'}. Rerun the same command to resume.",
                file=sys.stderr,
            )
            return 130
        counts = run["summary"]
        print(f"[{self.name}] claims: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n))
        print(f"[{self.name}] wrote {run['path']}")
        return 1 if run["failed"] else 0

    def seed_runs(self, seeds: Sequence[int], parts: Sequence[str]) -> list[tuple[int, tuple[str, ...]]]:
        """``(seed, parts)`` for each run of a multi-seed job: every seed runs the seeded ``parts``; the parts that
        do not depend on the seed run once, at seed 0 (added first when 0 is not among ``seeds``); a part that
        spreads its numbers over its own trial seeds (``Part.trials``) runs once, at the first of ``seeds``."""
        exact = {p.name for p in self.parts if not p.seeded}
        trials = {p.name for p in self.parts if p.trials}
        runs = [
            (s, tuple(p for p in parts if (p not in exact or s == 0) and (p not in trials or s == seeds[0])))
            for s in seeds
        ]
        once = tuple(p for p in parts if p in exact)
        if once and 0 not in seeds:
            runs.insert(0, (0, once))
        return [(s, ps) for s, ps in runs if ps]

    def run_seeds(
        self, out: str | Path, seeds: Sequence[int], *, parts: Sequence[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Run ``parts`` for every seed (:meth:`run` each, to :func:`~mechrecall.seeds.seed_out`) and, for several
        seeds, write the claims over them to ``OUT/<name>/seeds.json``. Returns ``{claims, summary, path, failed}``
        (one seed: its ``results.json`` payload with those keys added)."""
        seeds = tuple(seeds)
        if len(seeds) == 1:
            payload = self.run(out, parts=parts, seed=seeds[0], **kwargs)
            failed = any(p.get("status") == STATUS_FAILED for p in payload["parts"].values())
            return {**payload, "path": Path(out) / self.name / "results.json", "failed": failed}
        preset = kwargs.get("preset") or self.default_preset
        runs = self.seed_runs(seeds, self.select_parts(parts, preset))
        for seed, chosen in runs:  # every seed's configuration checked before any work
            where = seed_out(out, seed, seeds)
            self.prepare(where, preset=preset, parts=chosen, seed=seed, options=kwargs.get("options"))
        payloads = {}
        for seed, chosen in runs:
            where = seed_out(out, seed, seeds)
            try:
                payloads[seed] = self.run(where, parts=chosen, seed=seed, **kwargs)
            except (UsageError, KeyboardInterrupt):
                raise
            except Exception:  # recorded as failed in that seed's results.json; the other seeds go on
                traceback.print_exc()
                payloads[seed] = json.loads((where / self.name / "results.json").read_text())
        failed = any(p.get("status") == STATUS_FAILED for pl in payloads.values() for p in pl["parts"].values())
        rows = over_seeds({s: pl["claims"] for s, pl in payloads.items()})
        result = {
            "schema": SEEDS_SCHEMA,
            "experiment": self.name,
            "preset": preset,
            "seeds": list(seeds),
            "runs": {str(s): str(seed_out(out, s, seeds) / self.name / "results.json") for s in payloads},
            "claims": rows,
            "summary": summary(rows),
        }
        from mechrecall.io import atomic_write_json

        path = Path(out) / self.name / "seeds.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, result)
        return {**result, "path": path, "failed": failed}

    # ------------------------------------------------------------------------------------ run loop

    def run(
        self,
        out: str | os.PathLike,
        *,
        preset: str | None = None,
        parts: Sequence[str] | None = None,
        seed: int = 0,
        options: Mapping[str, Any] | None = None,
        device: str | None = None,
        threads: int | None = None,
        progress: bool = False,
        fresh: bool = False,
    ) -> dict[str, Any]:
        """Run ``parts`` into ``out/<name>/`` and return the results payload (also the library entry point).

        Every check (preset, parts, options, device, the output folder) happens before any work.
        """
        if threads is not None and threads < 1:
            raise UsageError(f"--threads {threads}; expected an integer >= 1")
        ctx, config = self.prepare(out, preset=preset, parts=parts, seed=seed, options=options, device=device)
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        ctx.progress = progress
        root = ctx.out
        if fresh and root.exists():
            shutil.rmtree(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot create {root} ({exc.strerror})") from exc
        payload = self._load_or_start(root, config)
        try:
            self._run_parts(ctx, root, payload)
        finally:
            ctx.cache.clear()  # never keep a loaded model alive after the run
        return payload

    def prepare(
        self,
        out: str | os.PathLike,
        *,
        preset: str | None = None,
        parts: Sequence[str] | None = None,
        seed: int = 0,
        options: Mapping[str, Any] | None = None,
        device: str | None = None,
    ) -> tuple[Context[Preset], dict[str, Any]]:
        """Every check before any work (preset, parts, seed, options and their ranges, device, the output folder);
        returns the run's context and the configuration written into (and compared with) ``results.json``."""
        preset = preset or self.default_preset
        if preset not in self.presets:
            raise UsageError(f"--preset {preset!r}; expected one of {', '.join(self.presets)}")
        parts = self.select_parts(parts, preset)
        self._check_seed(seed, parts)
        opts = self._options(options)
        root = check_out_folder(Path(out), self.name)
        device = check_device(device)
        params, overrides = self._params(preset, opts)
        self.claim_table()  # a table that names no part of ours fails here, not after the training
        ctx = Context(self, root, preset, seed, opts, params, device=device, parts=parts, overrides=overrides)
        if self.check:
            self.check(ctx)
        compared = {o.dest for o in self.options if o.compare}
        config = {
            "preset": preset,
            "seed": seed,
            "options": _jsonable({k: v for k, v in opts.items() if k in compared}),
        }
        return ctx, config

    def finished(
        self,
        out: str | os.PathLike,
        *,
        preset: str,
        parts: Sequence[str],
        seed: int = 0,
        options: Mapping[str, Any] | None = None,
    ) -> bool:
        """Whether ``OUT/<name>/results.json`` holds every one of ``parts``, done, with this configuration."""
        try:
            _, config = self.prepare(out, preset=preset, parts=parts, seed=seed, options=options)
            payload = json.loads((Path(out) / self.name / "results.json").read_text())
        except (UsageError, OSError, ValueError):
            return False
        if _diff(payload.get("config", {}), config):
            return False
        return all(payload.get("parts", {}).get(p, {}).get("status") == STATUS_DONE for p in parts)

    def part_tasks(
        self,
        out: str | os.PathLike,
        *,
        preset: str,
        part: str,
        seed: int = 0,
        options: Mapping[str, Any] | None = None,
    ) -> list[PartTask]:
        """The :class:`PartTask` s of ``part`` in this configuration not finished yet (their file absent); none for a
        part that declares none."""
        declared = next((p for p in self.parts if p.name == part), None)
        if declared is None or declared.tasks is None:
            return []
        ctx, _ = self.prepare(out, preset=preset, parts=[part], seed=seed, options=options)
        ctx.part = part
        return [t for t in declared.tasks(ctx) if not t.path.is_file()]

    def _check_seed(self, seed: int, parts: Sequence[str]) -> None:
        if seed < 0:
            raise UsageError(f"--seed {seed}; expected an integer >= 0")
        unseeded = [p.name for p in self.parts if p.name in parts and not p.seeded]
        if seed != 0 and unseeded:
            raise UsageError(
                f"--seed {seed}: part {unseeded[0]} does not depend on a seed (an exact computation); "
                "run it with --seed 0 (the default) or leave it out with --experiment"
            )

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        opts = {o.dest: o.kwargs.get("default") for o in self.options}
        unknown = set(options or {}) - set(opts)
        if unknown:
            raise UsageError(f"unknown option(s) {sorted(unknown)} for {self.name}; expected some of {sorted(opts)}")
        opts.update(options or {})
        for option in self.options:
            option.check(opts[option.dest])
        return opts

    def preset_values(self) -> Mapping[str, Preset]:
        """The typed presets (``preset_table``, called first when it is a function)."""
        table = self.preset_table
        return table() if callable(table) else table

    def claim_table(self) -> tuple[ClaimSpec, ...]:
        """The experiment's claims (``claims``, called first when it is a function), checked."""
        specs = tuple(self.claims() if callable(self.claims) else self.claims)
        check_table(specs, [p.name for p in self.parts])
        return specs

    def overrides(self, preset: str, options: Mapping[str, Any] | None = None) -> dict[str, tuple[Any, Any]]:
        """The fields of ``preset`` that ``options`` change (the options with a ``field``, and ``--set``):
        ``{field: (new, preset's)}``; ``UsageError`` for an option or a field the experiment does not have."""
        return self._params(preset, self._options(options))[1]

    def _params(self, preset: str, opts: Mapping[str, Any]) -> tuple[Preset, dict[str, tuple[Any, Any]]]:
        table = self.preset_values()
        changes = {o.field: opts[o.dest] for o in self.options if o.field}
        changes.update(preset_sets(table[preset], preset, opts.get(SET_OPTION.dest)))
        try:
            return override(table[preset], changes)
        except KeyError as exc:  # a declaration bug, not the user's
            raise ValueError(f"experiment {self.name}: {exc}") from None

    def _run_parts(self, ctx: Context[Preset], root: Path, payload: dict[str, Any]) -> None:
        functions = {p.name: p for p in self.parts}
        preset, seed = ctx.preset, ctx.seed
        for name in ctx.parts:
            record = payload["parts"].get(name)
            if record and record.get("status") == STATUS_DONE:
                ctx.say(f"{name}: done earlier, kept ({record.get('seconds', 0):.0f} s)")
                continue
            ctx.say(f"{name}: running ({preset} preset, seed {seed})")
            started = time.perf_counter()
            ctx.part = name
            before, after = ctx.claim_notes()
            comparable = ctx.params.comparable
            try:
                result = functions[name].run(ctx)
                typed = self.typed_results(name, result.results)
                claims = evaluate(
                    self.claim_table(),
                    name,
                    typed,
                    experiment=self.name,
                    preset=preset,
                    seeds=(seed,),
                    note_first=before,
                    note=after,
                    comparable=comparable,
                    scale=ctx.scale() if result.scale is None else result.scale,
                )
            except (UsageError, KeyboardInterrupt):
                raise
            except Exception as exc:
                payload["parts"][name] = {
                    "status": STATUS_FAILED,
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(),
                    "seconds": time.perf_counter() - started,
                }
                self.write_part(root, payload, name)
                raise
            footer = f"python -m analyses.{self.name} · part {name} · preset {preset} · seed {seed}" + (
                f" · {result.footer}" if result.footer else ""
            )
            figures = _save_figures(root, result.figures, footer)
            payload["parts"][name] = {
                "status": STATUS_DONE,
                "seconds": time.perf_counter() - started,
                "finished": _stamp(),
                "results": _results_json(typed),
                "results_schema": _schema_of(typed),
                "figures": figures,
                "claims": [c.row() for c in claims],
            }
            self.write_part(root, payload, name)
            ctx.say(f"{name}: done in {payload['parts'][name]['seconds']:.1f} s")

    def _load_or_start(self, root: Path, config: dict[str, Any]) -> dict[str, Any]:
        path = root / "results.json"
        if path.exists():
            try:
                payload = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise UsageError(f"{path} is unreadable ({exc}); delete it or rerun with --fresh") from exc
            if payload.get("schema") != RESULTS_SCHEMA:
                raise UsageError(
                    f"{path} has schema {payload.get('schema')!r}, not {RESULTS_SCHEMA}; use another --out or --fresh"
                )
            old = payload.get("config", {})
            diffs = _diff(old, config)
            if diffs:
                raise UsageError(
                    f"{root} holds results of another configuration ({'; '.join(diffs)}); "
                    "rerun with the same options to resume, or use another --out, or --fresh"
                )
            self._revalidate(payload, path)
            return payload
        return {
            "schema": RESULTS_SCHEMA,
            "experiment": self.name,
            "paper": self.paper,
            "created": _stamp(),
            "config": config,
            "parts": {},
        }

    def typed_results(self, part: str, results: Any, *, schema: str | None = None) -> Any:
        """``results`` of ``part`` validated as its declared model (:class:`~mechrecall.typed.NotRun` where the whole
        part was not run); as they are for a part that declares none. :class:`~mechrecall.typed.ResultsError`
        names the first bad field."""
        declared = next(p for p in self.parts if p.name == part)
        if declared.results is None:
            return results
        return read_results(declared.results(), results, schema=schema)

    def load(self, out: str | os.PathLike) -> dict[str, Any]:
        """The typed results of every finished part in ``OUT/<name>/results.json`` (``{part: Results | NotRun}``),
        each validated against its model and schema version (:class:`~mechrecall.typed.ResultsError` otherwise)."""
        path = Path(out) / self.name / "results.json"
        payload = json.loads(path.read_text())
        return {
            name: self.typed_results(name, record.get("results", {}), schema=record.get("results_schema"))
            for name, record in payload.get("parts", {}).items()
            if record.get("status") == STATUS_DONE and any(p.name == name for p in self.parts)
        }

    def _revalidate(self, payload: dict[str, Any], path: Path) -> None:
        """Every finished part of a resumed ``results.json`` read back as its typed model; one that is not (an older
        schema, a changed field) runs again, and the run says why."""
        for name, record in list(payload.get("parts", {}).items()):
            if record.get("status") != STATUS_DONE or not any(p.name == name for p in self.parts):
                continue
            try:
                self.typed_results(name, record.get("results", {}), schema=record.get("results_schema"))
            except ResultsError as exc:
                print(f"[{self.name}] {name}: the results in {path} are not read back ({exc}); it runs again")
                record["status"] = "stale"

    def write_part(self, root: Path, payload: dict[str, Any], part: str) -> None:
        """``results.json`` with ``part``'s new record. Under a lock, the records other processes wrote there since
        this run read it (other parts of the same configuration run beside it) are kept, not overwritten."""
        from mechrecall.io import atomic_write_json, file_lock
        from mechrecall.results import versions

        with file_lock(root / ".results.lock"):
            try:
                disk = json.loads((root / "results.json").read_text())
            except (OSError, json.JSONDecodeError):
                disk = {}
            if "config" in disk and not _diff(disk["config"], payload["config"]):
                payload["parts"] = {**payload["parts"], **disk.get("parts", {}), part: payload["parts"][part]}
            order = [p.name for p in self.parts]
            payload["parts"] = {k: payload["parts"][k] for k in sorted(payload["parts"], key=order.index)}
            rows = [row for p in payload["parts"].values() for row in p.get("claims", [])]
            payload.update(
                updated=_stamp(),
                versions=versions(),
                claims=rows,
                summary=summary(rows),
                figures=[f for p in payload["parts"].values() for f in p.get("figures", [])],
            )
            atomic_write_json(root / "results.json", payload)


def _console_logging() -> None:
    """The library's log lines (e.g. "resuming ... from step 900") on stderr, once, for a command-line run."""
    logger = logging.getLogger("mechrecall")
    if not any(getattr(h, "_mechrecall_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._mechrecall_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}; expected an integer >= 1")
    return value


def comma_ints(text: str) -> tuple[int, ...]:
    """``"16,32,64"`` -> ``(16, 32, 64)``: the argparse type of an option that takes a list of integers."""
    try:
        values = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        values = ()
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r}; expected comma-separated integers like 16,32,64")
    return values


def check_out_folder(out: Path, name: str) -> Path:
    """``out/<name>``, checked (not created) to be a folder we can make and write, before any work."""
    for path in (out, out / name):
        if path.exists() and not path.is_dir():
            raise UsageError(f"--out {out}: {path} exists and is not a folder")
    existing = next(p for p in (out / name, out, *out.absolute().parents) if p.exists())
    if not os.access(existing, os.W_OK):
        raise UsageError(f"--out {out}: {existing} is not writable")
    return out / name


def check_device(device: str | None) -> str | None:
    """``device`` if torch can use it here; a one-line :class:`UsageError` otherwise."""
    if device is None:
        return None
    import torch

    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise UsageError(f"--device {device!r}: not a torch device; expected cpu, cuda, cuda:N or mps") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"--device {device}: this torch ({torch.__version__}) has no usable CUDA device")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise UsageError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s)")
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise UsageError(f"--device {device}: MPS is not available here")
    elif parsed.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"--device {device!r}; expected cpu, cuda, cuda:N or mps")
    return device


def _results_json(results: Any) -> Any:
    """A part's results as ``results.json`` holds them (a typed model's JSON; a dict as it is)."""
    return results.to_json() if isinstance(results, (Results, NotRun)) else _jsonable(results)


def _schema_of(results: Any) -> str | None:
    return type(results).schema_id() if isinstance(results, Results) else None


def _jsonable(value: Any) -> Any:
    from mechrecall.io import to_jsonable

    return json.loads(json.dumps(to_jsonable(value)))


def _diff(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += _diff(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} there, {b!r} now")
    return out


def _save_figures(root: Path, figures: Mapping[str, Any], footer: str) -> list[str]:
    """Save each figure (a matplotlib one with ``footer`` at its bottom edge); returns the file names."""
    from mechrecall.results import save_figure

    for name, figure in figures.items():
        if hasattr(figure, "savefig"):
            figure.text(0.995, 0.003, footer, ha="right", va="bottom", fontsize=6, color="0.4")
        save_figure(root / name, figure)
    return list(figures)
