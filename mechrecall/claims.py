"""Claims as data: the paper's statement and number, ours as a number, the rule that decides, a verdict.

A claim row (one per paper statement an experiment checks)::

    {"id": "noisy_icl.main.p_correct_drop_F2",      # stable: reports and READMEs refer to it
     "claim": "p(ȳ) with F₂ dropped (ρ = 0)",        # the paper's statement, in words
     "paper": 0.98, "ours": 0.91,                   # numbers (paper: null where it states none)
     "rule": "≥ 0.9 reproduced; ≥ 0.7 partial",     # what decides, in words
     "rule_spec": {"kind": "at_least", ...},        # the same rule as data
     "control": 0.12,                               # the same measurement on the control ...
     "control_is": "F₁ dropped instead of F₂",      # ... which is this
     "verdict": "reproduced",                       # computed from ours, the control and the rule, never typed
     "preset": "smoke", "comparable": true, "seeds": [0], "where": "Fig 3", "note": "", "reason": ""}

Verdicts (:func:`verdict`), in the order they are decided:

- ``not run``: no number (no weights here, a preset that does not include the run, ...; ``reason`` says which);
- ``not comparable``: measured at a preset whose sizes are not comparable to the paper's (``micro``);
- ``vacuous``: the claim's **control** — the same measurement on the untrained model, on the model with the
  mechanism removed, or on a perturbed input — also earns a verdict from the rule, so the rule cannot tell;
  a bug in the claim, never in the model;
- ``reproduced``, ``partial`` or ``not reproduced``: what the rule says of ours.

Over several seeds (:func:`seed_verdict`) a claim is ``reproduced`` when every seed is, ``partial`` when at
least half reach the rule's reproduced or partial band, and ``vacuous`` when the control passes on any seed.

Rules are built with :func:`at_least`, :func:`at_most`, :func:`between`, :func:`near` and
:func:`is_true`; each may carry a looser ``partial`` band.

A paper declares its claims once, as a table of :class:`ClaimSpec` (``analyses/papers/<paper>/claims.py``):
the statement, where in the paper, the paper's number, the rule, the function of the part's typed results
(:mod:`mechrecall.typed`) that reads our number and its control, and its class (``paper``, ``extension`` beyond
the paper, ``ablation``, ``check``). The protocol evaluates the table against each part's results
(:func:`evaluate`); no part builds a claim.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mechrecall.typed import NotApplicable, NotRun

if TYPE_CHECKING:
    from mechrecall.policy import PolicyRule

VERDICTS = ("reproduced", "partial", "not reproduced", "vacuous", "not comparable", "not run")
REPRODUCED, PARTIAL, NOT_REPRODUCED, VACUOUS, NOT_COMPARABLE, NOT_RUN = VERDICTS
# a claim's class: the paper's statement, ours beyond it, an ablation, or a check (an identity: the code against its
# own closed form, two implementations of one computation) — shown in a table of its own, never counted as the paper's
KINDS = ("paper", "extension", "ablation", "check")
PAPER_SCALE, REDUCED_SCALE = "paper", "reduced"  # a row's ``at_scale``: its run's sizes against the paper's
NOT_RUN_KEY = "not_run"  # a results entry {"not_run": "why"} (at any level of a path) makes its claims `not run`
# a results entry {"not_applicable": "why"} drops its claims from the run (a configuration this preset does not have)
NOT_APPLICABLE_KEY = "not_applicable"


def _fmt(x: float) -> str:
    return f"{x:.4g}"


@dataclass(frozen=True)
class Rule:
    """What decides a claim's verdict from our number.

    ``kind``: ``at_least`` (ours ≥ lo), ``at_most`` (ours ≤ hi), ``between`` (lo ≤ ours ≤ hi),
    ``near`` (|ours − target| ≤ tol) or ``is_true`` (ours is 1 / True). ``partial``: the looser band
    of the same kind that earns ``partial`` (a (lo, hi) pair; ``None`` for no partial band).
    """

    kind: str
    lo: float | None = None
    hi: float | None = None
    partial: tuple[float | None, float | None] | None = None
    words: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("at_least", "at_most", "between", "near", "is_true"):
            raise ValueError(f"Rule.kind={self.kind!r}; expected at_least, at_most, between, near or is_true")

    @staticmethod
    def _inside(x: float, lo: float | None, hi: float | None) -> bool:
        return (lo is None or x >= lo) and (hi is None or x <= hi)

    def judge(self, ours: Any) -> str:
        """The verdict for ``ours`` (``not run`` when it is ``None`` or not a finite number)."""
        if ours is None:
            return NOT_RUN
        if isinstance(ours, bool):
            ours = float(ours)
        if not isinstance(ours, (int, float)) or not math.isfinite(float(ours)):
            return NOT_RUN
        if self._inside(float(ours), self.lo, self.hi):
            return REPRODUCED
        if self.partial is not None and self._inside(float(ours), *self.partial):
            return PARTIAL
        return NOT_REPRODUCED

    def describe(self) -> str:
        """The rule in words, e.g. ``≥ 0.9 (partial: ≥ 0.7)``."""
        if self.words:
            return self.words

        def band(lo: float | None, hi: float | None) -> str:
            if lo is not None and hi is not None:
                return f"in [{_fmt(lo)}, {_fmt(hi)}]"
            if lo is not None:
                return f"≥ {_fmt(lo)}"
            return f"≤ {_fmt(hi)}" if hi is not None else "any value"

        if self.kind == "is_true":
            return "holds (1 = yes)"
        text = band(self.lo, self.hi)
        if self.partial is not None:
            text += f"; partial if {band(*self.partial)}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "lo": self.lo,
            "hi": self.hi,
            "partial": list(self.partial) if self.partial is not None else None,
        }


def at_least(lo: float, *, partial: float | None = None, words: str = "") -> Rule:
    """Reproduced when ours ≥ ``lo``; partial when ours ≥ ``partial``."""
    return Rule("at_least", lo=lo, partial=None if partial is None else (partial, None), words=words)


def at_most(hi: float, *, partial: float | None = None, words: str = "") -> Rule:
    """Reproduced when ours ≤ ``hi``; partial when ours ≤ ``partial``."""
    return Rule("at_most", hi=hi, partial=None if partial is None else (None, partial), words=words)


def between(lo: float, hi: float, *, partial: tuple[float, float] | None = None, words: str = "") -> Rule:
    """Reproduced when ``lo ≤ ours ≤ hi``; partial inside the wider ``partial`` interval."""
    if lo > hi:
        raise ValueError(f"between(lo={lo}, hi={hi}); expected lo <= hi")
    return Rule("between", lo=lo, hi=hi, partial=partial, words=words)


def near(target: float, tol: float, *, partial_tol: float | None = None, words: str = "") -> Rule:
    """Reproduced when |ours − target| ≤ ``tol``; partial within ``partial_tol``."""
    if tol < 0:
        raise ValueError(f"near(tol={tol}); expected tol >= 0")
    partial = None if partial_tol is None else (target - partial_tol, target + partial_tol)
    text = words or (
        f"within ±{_fmt(tol)} of {_fmt(target)}"
        + (f"; partial within ±{_fmt(partial_tol)}" if partial_tol is not None else "")
    )
    return Rule("near", lo=target - tol, hi=target + tol, partial=partial, words=text)


def is_true(words: str = "") -> Rule:
    """Reproduced when ours is true (1); our number is the 0/1 outcome."""
    return Rule("is_true", lo=0.5, words=words)


def above_untrained(values: Sequence[float], *, factor: float = 2.0, what: str = "") -> Rule:
    """A contrast that is ≈ 0 at initialisation, either sign (a head-role difference, a diagonal minus the
    off-diagonal): reproduced when ours ≥ ``factor`` × the largest ``|value|`` over untrained models of several
    seeds (``values``, ≥ 5 of them). The factor 2 puts the bar well above what initialisation alone reaches, and
    an untrained model's own value (the control) can never pass it unless every untrained value is 0."""
    if len(values) < 5:
        raise ValueError(f"above_untrained: {len(values)} untrained values; expected >= 5 seeds")
    bar = factor * max(abs(float(v)) for v in values)
    words = f"≥ {_fmt(factor)} × the largest |{what or 'value'}| of {len(values)} untrained seeds (= {_fmt(bar)})"
    return at_least(bar, words=words)


def verdict(rule: Rule, ours: Any, *, control: Any = None, comparable: bool = True) -> str:
    """A claim's verdict: ``not run`` (no number), ``not comparable`` (a preset not comparable to the paper's),
    ``vacuous`` (the control, too, earns ``reproduced`` or ``partial``), else the rule's verdict of ours."""
    judged = rule.judge(ours)
    if judged == NOT_RUN:
        return NOT_RUN
    if not comparable:
        return NOT_COMPARABLE
    if rule.judge(control) in (REPRODUCED, PARTIAL):
        return VACUOUS
    return judged


def seed_verdict(
    rule: Rule | Sequence[Rule], ours: Sequence[Any], controls: Sequence[Any], *, comparable: bool = True
) -> str:
    """The verdict over seeds (``ours[i]`` and ``controls[i]``: seed i's numbers; ``rule``: one rule, or seed i's
    own where it depends on the seed, e.g. a bar set by that seed's untrained models): ``not run`` when no seed has
    a number, then ``not comparable``, ``vacuous`` when the control passes on any seed; ``reproduced`` when every
    seed is reproduced, ``partial`` when at least half reach the reproduced or partial band, else ``not
    reproduced`` (a seed without a number counts as a miss)."""
    rules = [rule] * len(ours) if isinstance(rule, Rule) else list(rule)
    each = [verdict(r, o, control=c) for r, o, c in zip(rules, ours, controls, strict=True)]
    if all(v == NOT_RUN for v in each):
        return NOT_RUN
    if not comparable:
        return NOT_COMPARABLE
    if VACUOUS in each:
        return VACUOUS
    if all(v == REPRODUCED for v in each):
        return REPRODUCED
    if 2 * sum(v in (REPRODUCED, PARTIAL) for v in each) >= len(each):
        return PARTIAL
    return NOT_REPRODUCED


@dataclass(frozen=True)
class Claim:
    """One paper statement checked by an experiment; :meth:`row` computes the verdict.

    Args:
        id: stable identifier, ``<experiment>.<part>.<name>``.
        claim: the paper's statement in words.
        ours: our number (``None``: not run, say why in ``reason``).
        rule: what decides (:func:`at_least`, :func:`between`, ...).
        paper: the paper's number, where it gives one.
        where: section / figure / table in the paper.
        spread: (min, max) of ours over the trials it summarises.
        control: the same measurement on the claim's control (``control_is`` says what that is).
        comparable: whether the preset's sizes are comparable to the paper's (``False``: ``not comparable``).
        policy: the line of the rule policy (``mechrecall.policy.POLICY``) the rule was computed from.
        scale: the run's sizes against the paper's along the axes that matter, ``{axis: (ours, paper's)}``.
    """

    id: str
    claim: str
    ours: float | None
    rule: Rule
    paper: float | None = None
    where: str = ""
    note: str = ""
    reason: str = ""
    preset: str = ""
    seeds: tuple[int, ...] = ()
    spread: tuple[float, float] | None = None
    kind: str = "paper"
    control: float | None = None
    control_is: str = ""
    comparable: bool = True
    policy: str = ""
    scale: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id or any(c.isspace() for c in self.id):
            raise ValueError(f"Claim.id={self.id!r}; expected a non-empty id without spaces")
        if self.ours is not None and not isinstance(self.ours, (bool, int, float)):
            raise TypeError(
                f"claim {self.id}: ours={self.ours!r} ({type(self.ours).__name__}); expected a number or None"
            )
        if self.paper is not None and not isinstance(self.paper, (int, float)):
            raise TypeError(f"claim {self.id}: paper={self.paper!r}; expected a number or None")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind={self.kind!r}; expected one of {', '.join(KINDS)}")

    @property
    def verdict(self) -> str:
        return verdict(self.rule, self.ours, control=self.control, comparable=self.comparable)

    def row(self) -> dict[str, Any]:
        judged = self.verdict
        reason = self.reason or ("no number was measured" if judged == NOT_RUN else "")
        return {
            "id": self.id,
            "claim": self.claim,
            "paper": self.paper,
            "ours": _number(self.ours),
            "control": _number(self.control),
            "control_is": self.control_is,
            "rule": self.rule.describe(),
            "rule_spec": self.rule.to_dict(),
            "verdict": judged,
            "preset": self.preset,
            "comparable": self.comparable,
            "seeds": list(self.seeds),
            "where": self.where,
            "note": self.note,
            "reason": reason,
            "spread": list(self.spread) if self.spread is not None else None,
            "class": self.kind,
            "policy": self.policy,
            "scale": {axis: [ours, paper] for axis, (ours, paper) in self.scale.items()},
            "at_scale": at_scale(self.scale),
            **dict(self.extra),
        }


def _number(x: Any) -> float | int | None:
    """A row's number: bools as 0/1, non-finite as ``None``."""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def not_run(id: str, claim: str, rule: Rule, reason: str, **kwargs: Any) -> Claim:
    """A claim that could not be measured here (``reason`` says why, e.g. no Pythia weights)."""
    return Claim(id=id, claim=claim, ours=None, rule=rule, reason=reason, **kwargs)


def rule_of(row: Mapping[str, Any]) -> Rule:
    """The :class:`Rule` a written row was judged by (its ``rule_spec``)."""
    spec = dict(row["rule_spec"])
    partial = spec.pop("partial")
    return Rule(
        spec["kind"],
        lo=spec.get("lo"),
        hi=spec.get("hi"),
        partial=(partial[0], partial[1]) if partial is not None else None,
    )


def judge_row(row: Mapping[str, Any]) -> str:
    """Recompute a written row's verdict from its numbers (``ours`` and ``control``, or each seed's in
    ``per_seed``), its ``rule_spec`` and ``comparable``: reports never trust a typed verdict."""
    rule, comparable = rule_of(row), bool(row.get("comparable", True))
    if row.get("per_seed"):
        each = row["per_seed"]
        rules = [rule_of(s) if s.get("rule_spec") else rule for s in each]  # a seed's own rule, where it has one
        return seed_verdict(rules, [s["ours"] for s in each], [s["control"] for s in each], comparable=comparable)
    return verdict(rule, row.get("ours"), control=row.get("control"), comparable=comparable)


def control_problems(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """What is wrong with the controls of written rows, one line each: a measured claim without a control value,
    or a control its rule does not reject (reproduced or partial: the claim is vacuous at any preset)."""
    problems = []
    for row in rows:
        for each in row.get("per_seed") or [row]:
            if not _finite(each.get("ours")):
                continue
            if not _finite(each.get("control")):
                problems.append(f"{row['id']}: no control value ({row.get('control_is') or 'no control declared'})")
            elif rule_of(row).judge(each["control"]) in (REPRODUCED, PARTIAL):
                problems.append(f"{row['id']}: control {each['control']:.4g} passes the rule '{row.get('rule')}'")
    return problems


def summary(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Count of rows per verdict, in :data:`VERDICTS` order."""
    counts = dict.fromkeys(VERDICTS, 0)
    for row in rows:
        counts[row["verdict"]] += 1
    return counts


def summary_by_class(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """:func:`summary` per class (``paper``, ``extension``, ``ablation``, ``check``): the headline counts ``paper``
    rows only; checks (identities of the code) are never the paper's claims."""
    rows = list(rows)
    return {kind: summary(r for r in rows if (r.get("class") or "paper") == kind) for kind in KINDS}


def at_scale(scale: Mapping[str, Sequence[float]]) -> str:
    """``"paper"`` when the run is at least the paper's size along every axis of ``scale`` (``{axis: (ours,
    paper's)}``), ``"reduced"`` when it is smaller along one, ``""`` when no axis is declared."""
    if not scale:
        return ""
    return PAPER_SCALE if all(float(o) >= float(p) for o, p in scale.values()) else REDUCED_SCALE


def scale_words(row: Mapping[str, Any]) -> str:
    """A row's scale in words: ``"d 192/256 (0.75), T 64/256 (0.25)"`` — its sizes over the paper's; ``"the
    paper's (d 256, T 256)"`` at the paper's scale; ``"—"`` where the run declares none."""
    scale = row.get("scale") or {}
    if not scale:
        return "—"
    if row.get("at_scale") == PAPER_SCALE:
        return "the paper's (" + ", ".join(f"{a} {_fmt(float(o))}" for a, (o, _) in scale.items()) + ")"
    return ", ".join(
        f"{a} {_fmt(float(o))}/{_fmt(float(p))} ({_fmt(float(o) / float(p))})" if float(p) else f"{a} {o}/{p}"
        for a, (o, p) in scale.items()
    )


def label(row: Mapping[str, Any]) -> str:
    """A row's verdict as a reader sees it: a judged verdict at reduced scale never reads as a plain one
    (``"reproduced at reduced scale"``); at the paper's scale it says so (``"reproduced at the paper's scale"``)."""
    verdict_ = row["verdict"]
    if verdict_ not in (REPRODUCED, PARTIAL, NOT_REPRODUCED) or (row.get("class") or "paper") == "check":
        return verdict_
    if row.get("at_scale") == REDUCED_SCALE:
        return f"{verdict_} at reduced scale"
    if row.get("at_scale") == PAPER_SCALE:
        return f"{verdict_} at the paper's scale"
    return verdict_


def label_summary(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Count of rows per :func:`label` (the headline: the paper's scale apart from reduced scale), most common
    verdicts first, labels with no row left out."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[label(row)] = counts.get(label(row), 0) + 1
    order = [f"{v} at the paper's scale" for v in VERDICTS[:3]] + [f"{v} at reduced scale" for v in VERDICTS[:3]]
    order += list(VERDICTS)
    return {k: counts[k] for k in sorted(counts, key=lambda k: order.index(k) if k in order else len(order))}


def over_seeds(rows_by_seed: Mapping[int, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One row per claim from each seed's rows (``{seed: rows}``): ``ours`` and ``control`` are the means over the
    seeds that measured them, ``spread`` their [min, max], ``per_seed`` each seed's numbers and rule (a bar set
    from that seed's untrained models differs from seed to seed), ``passed`` how many
    seeds reproduced it, and the verdict :func:`seed_verdict`'s. A claim only some seeds have (an exact part, run
    once) keeps the seeds it has."""
    by_id: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for seed, rows in sorted(rows_by_seed.items()):
        for row in rows:
            by_id.setdefault(row["id"], []).append((seed, row))
    return [_merged(pairs) for pairs in by_id.values()]


def _merged(pairs: Sequence[tuple[int, Mapping[str, Any]]]) -> dict[str, Any]:
    first = pairs[0][1]
    each: list[dict[str, Any]] = [
        {"seed": seed, "ours": row.get("ours"), "control": row.get("control"), "rule_spec": row["rule_spec"]}
        for seed, row in pairs
    ]
    row = dict(first)
    ours = [float(s["ours"]) for s in each if _finite(s["ours"])]
    controls = [float(s["control"]) for s in each if _finite(s["control"])]
    row.update(
        ours=sum(ours) / len(ours) if ours else None,
        control=sum(controls) / len(controls) if controls else None,
        spread=[min(ours), max(ours)] if len(ours) > 1 else first.get("spread"),
        seeds=[s["seed"] for s in each],
        per_seed=each,
        passed=sum(verdict(rule_of(s), s["ours"], control=s["control"]) == REPRODUCED for s in each),
        reason=next((r.get("reason") for _, r in pairs if r.get("reason")), ""),
    )
    row["verdict"] = judge_row(row)
    return row


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(float(x))


def spread_of(values: Sequence[float]) -> tuple[float, float]:
    """(min, max) of a claim's number over seeds."""
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not finite:
        raise ValueError("spread_of: no finite values")
    return (min(finite), max(finite))


R = TypeVar("R")  # a part's typed results (a :class:`mechrecall.typed.Results` model)
Read = Callable[[R], Any]  # a claim's read of the part's results: a number, a marker (mechrecall.typed) or None


@dataclass(frozen=True)
class ClaimSpec(Generic[R]):
    """One claim, declared once; :meth:`evaluate` reads its number from a part's typed results.

    A table declares its rows as ``ClaimSpec[WorldGResults](...)``: every read below is then a function of that
    model, and mypy checks each attribute it names.

    Args:
        id: ``<part>.<name>`` (the experiment's name is prefixed in the row: ``noisy_icl.main.p_noise_full``).
        claim: the paper's statement in words.
        value: our number, read from the part's results (``lambda r: r.final.drop_F2.p_correct``); a
            :class:`~mechrecall.typed.NotRun` there makes the claim ``not run`` with its reason, a
            :class:`~mechrecall.typed.NotApplicable` leaves it out of the run (a configuration the preset lacks).
        rule: a line of the rule policy and its arguments (:func:`mechrecall.policy.policy`): the :class:`Rule` is
            computed from that line and the paper's number, never set by hand. (A :class:`Rule`, or a function of the
            part's results returning one, is still accepted from a table of one's own; the papers' tables use the
            policy, and a test recomputes every one of their rules from it.)
        where: section / figure / table / theorem in the paper.
        paper: the paper's number (or a function of the results giving it), ``None`` where it states none.
        kind: ``paper``, ``extension`` (ours, beyond the paper), ``ablation`` or ``check``.
        note: what a reader needs beside the number.
        notes: a function of the part's results adding what was measured beside the number (e.g. the chance
            level of this run).
        words: a function of the part's results giving the statement with this run's sizes.
        spread: ``[min, max]`` of our number over the trials it summarises.
        seeds: the seeds our number was measured on (default: the run's seed).
        control: the same measurement on the claim's control, which the rule must reject (else the verdict is
            ``vacuous``): the untrained model (same seed, step 0), the model with the mechanism the claim is about
            removed, or, for an exact identity, a perturbed input that breaks it.
        control_is: what the control is, in words ("the untrained model (step 0, same seed)").
    """

    id: str
    claim: str
    value: Read[R]
    rule: Rule | Callable[[R], Rule] | PolicyRule
    where: str = ""
    paper: float | Callable[[R], float | None] | None = None
    kind: str = "paper"
    note: str = ""
    notes: Callable[[R], str] | None = None
    words: Callable[[R], str] | None = None
    spread: Read[R] | None = None
    seeds: Read[R] | None = None
    control: Read[R] | None = None
    control_is: str = ""

    def __post_init__(self) -> None:
        if self.id.count(".") < 1 or any(c.isspace() for c in self.id):
            raise ValueError(f"ClaimSpec.id={self.id!r}; expected '<part>.<name>' without spaces")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind={self.kind!r}; expected one of {', '.join(KINDS)}")
        if isinstance(self.value, str):
            raise TypeError(f"claim {self.id}: value={self.value!r}; expected a function of the part's results")
        line = self.policy_line
        if line:
            from mechrecall.policy import POLICY

            if self.kind not in POLICY[line].classes:
                raise ValueError(
                    f"claim {self.id}: policy line {line!r} is for class {' / '.join(POLICY[line].classes)}, "
                    f"not {self.kind!r}"
                )

    @property
    def policy_line(self) -> str:
        """The policy line this claim's rule is computed from (``""`` for a hand-set rule)."""
        return str(getattr(self.rule, "line", "")) if not isinstance(self.rule, Rule) else ""

    def rule_for(self, results: R) -> Rule:
        """The :class:`Rule` this claim is judged by for ``results``: the policy line's rule for the paper's number,
        or the hand-set one."""
        if isinstance(self.rule, Rule):
            return self.rule
        if self.policy_line:
            return self.rule.rule(self._paper(results), results)  # type: ignore[union-attr]
        return self.rule(results)  # type: ignore[operator]

    def _paper(self, results: R) -> float | None:
        return self.paper(results) if callable(self.paper) else self.paper

    def _text(self, fn: Callable[[R], str] | None, results: R, measured: bool) -> str:
        """``fn(results)``, or ``""`` where the results lack what it reads. Under ``MECHRECALL_STRICT_CLAIMS=1`` a
        failure on a measured claim raises :class:`ClaimTextError` (a typo in a claim must not vanish); a user's
        run keeps its numbers and loses only the note."""
        if fn is None or not measured:
            return ""
        try:
            return fn(results)
        except (AttributeError, KeyError, TypeError, IndexError, ValueError) as exc:
            if os.environ.get(STRICT_ENV) == "1":
                raise ClaimTextError(f"claim {self.id}: its notes / words failed: {type(exc).__name__}: {exc}") from exc
            return ""

    def _words_or_claim(self, results: NotRun) -> str:
        """The statement of a claim whose part was not run: its ``words`` where they read only what the marker keeps
        (the model's name, say), else ``claim``."""
        try:
            text = self.words(results) if self.words else ""  # type: ignore[arg-type]
        except (AttributeError, KeyError, TypeError, IndexError, ValueError):
            return self.claim
        return self.claim if not text or "not_run=" in text else text  # words that printed the marker itself

    @property
    def part(self) -> str:
        return self.id.split(".", 1)[0]

    def evaluate(
        self,
        results: R | NotRun,
        *,
        experiment: str,
        preset: str = "",
        seeds: Sequence[int] = (),
        note: str = "",
        note_first: str = "",
        comparable: bool = True,
        scale: Mapping[str, tuple[float, float]] | None = None,
    ) -> Claim | None:
        """The claim row's data for this part's ``results`` (``not run`` with the reason where the number is a
        :class:`~mechrecall.typed.NotRun`, or the whole part was not run), ``None`` where it reads a
        :class:`~mechrecall.typed.NotApplicable` (the run has no such configuration). ``note_first`` / ``note``: the
        run's own notes, put before and after the claim's (e.g. a preset that is not comparable; sizes changed from
        the preset). ``comparable``: whether the run's preset is comparable to the paper's. ``scale``: the run's
        sizes against the paper's."""
        if isinstance(results, NotRun):
            return self._not_run(results, experiment, preset, seeds, note_first, note, comparable, scale)
        value = self.value(results)
        if isinstance(value, NotApplicable):
            return None
        ours, reason = measured(value)
        control = measured(self.control(results))[0] if self.control else None
        spread = measured(self.spread(results))[0] if self.spread else None
        measured_on = measured(self.seeds(results))[0] if self.seeds else None
        rule = self.rule_for(results)
        if ours is not None and not isinstance(ours, (bool, int, float)):
            ours = float(ours)
        has = ours is not None
        notes = "; ".join(n for n in (note_first, self.note, self._text(self.notes, results, has), note) if n)
        return Claim(
            id=f"{experiment}.{self.id}",
            claim=self._text(self.words, results, has) or self.claim,
            ours=ours,
            rule=rule,
            paper=self._paper(results),
            where=self.where,
            note=notes,
            reason=reason,
            preset=preset,
            seeds=tuple(measured_on if measured_on is not None else seeds),
            spread=(float(spread[0]), float(spread[1])) if spread is not None else None,
            kind=self.kind,
            control=float(control) if control is not None else None,
            control_is=self.control_is,
            comparable=comparable,
            policy=self.policy_line,
            scale=dict(scale or {}),
            extra={"policy_args": _policy_args(self.rule, results)} if self.policy_line else {},
        )

    def _not_run(
        self,
        results: NotRun,
        experiment: str,
        preset: str,
        seeds: Sequence[int],
        note_first: str,
        note: str,
        comparable: bool,
        scale: Mapping[str, tuple[float, float]] | None,
    ) -> Claim:
        """The row of a claim whose whole part was not run (no weights here): its rule from the paper's number and
        what the marker keeps beside its reason (a threshold, say), read through it like the part's results."""
        try:
            rule = self.rule_for(results)  # type: ignore[arg-type]
            paper = self._paper(results)  # type: ignore[arg-type]
        except (AttributeError, KeyError, TypeError, IndexError, ValueError):
            rule, paper = Rule("at_least", words="not computed: the part was not run"), None
        return Claim(
            id=f"{experiment}.{self.id}",
            claim=self._words_or_claim(results),
            ours=None,
            rule=rule,
            paper=paper if isinstance(paper, (int, float)) else None,
            where=self.where,
            note="; ".join(n for n in (note_first, self.note, note) if n),
            reason=results.why,
            preset=preset,
            seeds=tuple(seeds),
            kind=self.kind,
            control_is=self.control_is,
            comparable=comparable,
            policy=self.policy_line,
            scale=dict(scale or {}),
            extra={"policy_args": _policy_args(self.rule, results)} if self.policy_line else {},
        )


def measured(value: Any) -> tuple[Any, str]:
    """``(value, "")``, or ``(None, why)`` where ``value`` is a marker (:class:`~mechrecall.typed.NotRun`,
    :class:`~mechrecall.typed.NotApplicable`) or ``None``."""
    if isinstance(value, (NotRun, NotApplicable)):
        return None, value.why
    if value is None:
        return None, "not measured: the results entry is empty"
    return value, ""


def _policy_args(rule: Any, results: Any) -> dict[str, Any]:
    """A policy rule's arguments as numbers and words (what a row stores to have its rule recomputed)."""
    try:
        return {k: _jsonable_arg(v) for k, v in rule.resolve(results).items()}
    except (AttributeError, KeyError, TypeError, IndexError, ValueError):
        return {}


def _jsonable_arg(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable_arg(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return float(value)


STRICT_ENV = "MECHRECALL_STRICT_CLAIMS"  # "1" (the tests): a notes / words function failing on a measured claim raises


class ClaimTextError(RuntimeError):
    """A claim's ``notes`` / ``words`` function failed on results that hold the claim's number: a bug in the
    claim (a misspelt entry, say), raised under ``MECHRECALL_STRICT_CLAIMS=1`` (the test suite sets it)."""


def lookup(results: Mapping[str, Any], path: str) -> tuple[Any, str]:
    """``(value, "")`` of the JSON entry ``path`` (keys joined by ``/``: what a sweep's ``--measure`` names on the
    command line), or ``(None, why)`` where it is missing, ``None`` or below a ``{"not_run": why}`` (or
    ``{"not_applicable": why}``) entry."""
    node: Any = results
    for key in [*path.split("/"), None]:
        if isinstance(node, Mapping):
            for marker in (NOT_APPLICABLE_KEY, NOT_RUN_KEY):
                if marker in node:
                    return None, str(node[marker])
        if key is None:
            break
        if not isinstance(node, Mapping) or key not in node:
            return None, f"not measured: the results have no entry {path!r}"
        node = node[key]
    if node is None:
        return None, f"not measured: the results entry {path!r} is empty"
    return node, ""


def evaluate(
    specs: Iterable[ClaimSpec[Any]],
    part: str,
    results: Any,
    *,
    experiment: str,
    preset: str = "",
    seeds: Sequence[int] = (),
    note: str = "",
    note_first: str = "",
    comparable: bool = True,
    scale: Mapping[str, tuple[float, float]] | None = None,
) -> list[Claim]:
    """The claims of ``part``: each spec of that part, evaluated against the part's typed ``results``; those that
    read a :class:`~mechrecall.typed.NotApplicable` are left out."""
    claims = (
        spec.evaluate(
            results,
            experiment=experiment,
            preset=preset,
            seeds=seeds,
            note=note,
            note_first=note_first,
            comparable=comparable,
            scale=scale,
        )
        for spec in specs
        if spec.part == part
    )
    return [c for c in claims if c is not None]


def check_table(specs: Sequence[ClaimSpec[Any]], parts: Iterable[str]) -> None:
    """A claims table's own consistency: unique ids, each naming a part of the experiment (``ValueError``)."""
    ids = [s.id for s in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"claims declared twice: {duplicates}")
    known = set(parts)
    stray = sorted({s.part for s in specs} - known)
    if stray:
        raise ValueError(f"claims name parts {stray}; expected some of {sorted(known)}")
