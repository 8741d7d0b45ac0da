"""One rule policy, declared before any result: the paper's wording → the band a claim must reach.

A claim never sets its own threshold. It names a line of :data:`POLICY` and the rule is computed from that line and
the paper's number (or the paper's own words: the exponent of a Θ(·), a bound the text states)::

    ClaimSpec("main.p_correct_drop_F2", "dropping F₂ makes the model predict ȳ", "final/drop_F2/p_correct",
              policy("printed"), paper=0.98)          # rule: within ±10 % of 0.98; partial ±25 %

The lines, in words (``docs/rule-policy.md`` prints the same table, generated from :data:`POLICY`):

=================  ===========================================================  ====================================
line               the paper's wording                                          the band
=================  ===========================================================  ====================================
printed            a number printed in the paper (mean, probability, ratio)     ±max(error bar, 10 % of |x|);
                                                                                partial ±max(2 × error bar, 25 %)
printed_bound      "perfect", "100 %", "≥ 0.999", "every" — a bound as printed  ≥ x; partial ≥ 0.9 x
close_to_one       "≈ 1", "almost always", "close to 1", "nearly all"           ≥ 0.9; partial ≥ 0.7
near_zero          "≈ 0", "removes", "no …", "fails" (a probability, fraction)  ≤ 0.05; partial ≤ 0.1
higher_than        "higher than", "raises", "improves" (a difference of two     ≥ 0.05; partial ≥ 0.02
                   probabilities / accuracies / fractions)
ratio_below        "most of … removed", "clearly below" (after / before)        ≤ 0.5; partial ≤ 0.8
ratio_above        "order of magnitude", "clearly above" (after / before)       ≥ 2; partial ≥ 1.25
above_untrained    a contrast ≈ 0 at initialisation, normalised (any of the     ≥ 2 × max |value| over 5 untrained
                   words above, for a score without a natural unit)             seeds other than the run's own
theta              "grows as Θ(N^k)", "scales as N^k"                           fitted exponent within ±0.25 of k;
                                                                                partial ±0.5
stated_bound       a bound the text states with its own number ("≥ α/2",        beyond the bound; no partial band
                   "order N", "at least half")
identity           (class ``check`` only) the code against its own closed form, |difference| ≤ tol (float64: 1e-10)
                   two implementations of one computation
extension          (class ``extension`` only) the paper gives neither number    our bar, declared with its reason
                   nor word: ours, beyond the paper
=================  ===========================================================  ====================================

At reduced scale (a run smaller than the paper along an axis that matters: ``mechrecall.claims`` ``scale``) every
line keeps its band, and the verdict reads "reproduced at reduced scale" — counted apart from "reproduced at the
paper's scale" in every headline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mechrecall.claims import Rule, above_untrained, at_least, at_most, near

Results = Any  # a part's typed results (mechrecall.typed.Results); a callable argument reads it


def _need(line: str, name: str, value: Any) -> float:
    if value is None or isinstance(value, bool) or not math.isfinite(float(value)):
        raise ValueError(f"policy line {line!r} needs {name}; got {value!r}")
    return float(value)


def _printed(paper: Any, error_bar: float | None = None) -> Rule:
    x = _need("printed", "the paper's number", paper)
    if x == 0:
        raise ValueError("policy line 'printed' needs a non-zero number; a printed 0 is 'near_zero'")
    e = float(error_bar or 0.0)
    tol, partial = max(e, 0.1 * abs(x)), max(2 * e, 0.25 * abs(x))
    why = f"the paper's error bar ±{e:.4g}" if e >= 0.1 * abs(x) else "±10 % of the printed number"
    return near(x, tol, partial_tol=partial, words=f"within ±{tol:.4g} of {x:.4g} ({why}); partial ±{partial:.4g}")


def _printed_bound(paper: Any) -> Rule:
    x = _need("printed_bound", "the printed bound", paper)
    return at_least(x, partial=0.9 * x, words=f"≥ {x:.4g} as printed; partial ≥ {0.9 * x:.4g}")


def _close_to_one(paper: Any = None) -> Rule:
    return at_least(0.9, partial=0.7, words="≥ 0.9 ('close to 1'); partial ≥ 0.7")


def _near_zero(paper: Any = None) -> Rule:
    return at_most(0.05, partial=0.1, words="≤ 0.05 ('≈ 0'); partial ≤ 0.1")


def _higher_than(paper: Any = None) -> Rule:
    return at_least(0.05, partial=0.02, words="≥ 0.05 ('higher than'); partial ≥ 0.02")


def _ratio_below(paper: Any = None) -> Rule:
    return at_most(0.5, partial=0.8, words="≤ 0.5 (after / before); partial ≤ 0.8")


def _ratio_above(paper: Any = None) -> Rule:
    return at_least(2.0, partial=1.25, words="≥ 2 (after / before); partial ≥ 1.25")


def _above_untrained(paper: Any = None, *, values: Any, what: str = "value", factor: float = 2.0) -> Rule:
    return above_untrained(values, factor=factor, what=what)


def _theta(paper: Any) -> Rule:
    k = _need("theta", "the exponent k of Θ(N^k)", paper)
    return near(k, 0.25, partial_tol=0.5, words=f"fitted exponent within ±0.25 of {k:.4g}; partial ±0.5")


def _stated_bound(paper: Any = None, *, bound: Any, upper: bool = False, says: str = "") -> Rule:
    b = _need("stated_bound", "the bound", bound)
    sign = "≤" if upper else "≥"
    words = f"{sign} {b:.4g}" + (f" (the paper: {says})" if says else "")
    return at_most(b, words=words) if upper else at_least(b, words=words)


def _identity(paper: Any = None, *, tol: float = 1e-10) -> Rule:
    return at_most(tol, words=f"|difference| ≤ {tol:.0e}")


def _extension(paper: Any = None, *, bar: Any, upper: bool = False, why: str, partial: Any = None) -> Rule:
    b = _need("extension", "its bar", bar)
    sign = "≤" if upper else "≥"
    p = None if partial is None else float(partial)
    words = f"{sign} {b:.4g} (our bar: {why})" + (f"; partial {sign} {p:.4g}" if p is not None else "")
    return at_most(b, partial=p, words=words) if upper else at_least(b, partial=p, words=words)


@dataclass(frozen=True)
class Line:
    """One line of the policy: the paper's wording it covers, the band in words, what it needs, and the rule."""

    id: str
    wording: str
    band: str
    make: Callable[..., Rule]
    needs: str = ""
    classes: tuple[str, ...] = ("paper", "ablation")


POLICY: dict[str, Line] = {
    line.id: line
    for line in (
        Line("printed", "a number printed in the paper (a mean, a probability, a ratio)",
             "within ±max(the paper's error bar, 10 % of |x|); partial ±max(2 × error bar, 25 % of |x|)", _printed,
             "the paper's number (its error bar where it prints one)"),
        Line("printed_bound", "'perfect', '100 %', '≥ 0.999', 'every': a bound as printed",
             "≥ the printed bound; partial ≥ 0.9 × it", _printed_bound, "the printed bound"),
        Line("close_to_one", "'≈ 1', 'almost always', 'close to 1', 'nearly all'", "≥ 0.9; partial ≥ 0.7",
             _close_to_one),
        Line("near_zero", "'≈ 0', 'removes', 'no …', 'fails' (a probability, an accuracy, a fraction)",
             "≤ 0.05; partial ≤ 0.1", _near_zero),
        Line("higher_than", "'higher than', 'raises', 'improves': a difference of two probabilities, accuracies "
             "or fractions", "≥ 0.05; partial ≥ 0.02", _higher_than),
        Line("ratio_below", "'removes most of', 'clearly below': a ratio after / before", "≤ 0.5; partial ≤ 0.8",
             _ratio_below),
        Line("ratio_above", "'clearly above', 'an order larger': a ratio after / before", "≥ 2; partial ≥ 1.25",
             _ratio_above),
        Line("above_untrained", "a contrast ≈ 0 at initialisation (a difference of two scores without a natural "
             "unit), normalised by a scale of the same matrix", "≥ 2 × the largest |value| over 5 untrained seeds "
             "other than the run's own (whose value is the control)", _above_untrained,
             "the untrained seeds' values", ("paper", "ablation", "extension")),
        Line("theta", "'grows as Θ(N^k)', 'scales as N^k'", "fitted exponent within ±0.25 of k; partial ±0.5",
             _theta, "the exponent k"),
        Line("stated_bound", "a bound the text states with its own number ('≥ α/2', 'order N', 'at least half')",
             "beyond the bound; no partial band", _stated_bound, "the bound, from the paper's words"),
        Line("identity", "(class check) the code against its own closed form, two implementations of one "
             "computation", "|difference| ≤ tol (1e-10 in float64)", _identity, "the tolerance", ("check",)),
        Line("extension", "(class extension) the paper gives neither number nor word", "our bar, declared with "
             "its reason beside the claim", _extension, "the bar and why", ("extension",)),
    )
}  # fmt: skip


@dataclass(frozen=True)
class PolicyRule:
    """A claim's rule as a policy line and its arguments: the :class:`Rule` is computed when the claim is evaluated,
    from the line, the paper's number and these arguments (a callable argument is a function of the part's
    results, e.g. the untrained seeds' values)."""

    line: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.line not in POLICY:
            raise ValueError(f"policy line {self.line!r}; expected one of {', '.join(POLICY)}")

    def resolve(self, results: Results) -> dict[str, Any]:
        """The arguments with every callable one applied to the part's ``results`` (numbers and words: a claim row
        stores them as ``policy_args``, so a report recomputes the rule from the row alone)."""
        return {k: (v(results) if callable(v) else v) for k, v in self.args.items()}

    def rule(self, paper: Any, results: Results) -> Rule:
        """The rule of this line for the paper's number ``paper`` (and the part's ``results``)."""
        return POLICY[self.line].make(paper, **self.resolve(results))


def policy(line: str, **args: Any) -> PolicyRule:
    """The rule of the policy line ``line`` (:data:`POLICY`), computed from the paper's number and ``args``."""
    return PolicyRule(line, args)


def recompute(row: Mapping[str, Any]) -> Rule | None:
    """The rule a written claim row must have been judged by: its policy line applied to its paper number and its
    ``policy_args`` (``None`` for a row without a policy line, or one whose arguments were not measured)."""
    line = row.get("policy")
    if not line:
        return None
    try:
        return POLICY[line].make(row.get("paper"), **dict(row.get("policy_args") or {}))
    except (TypeError, ValueError):
        return None


def policy_problems(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """What is wrong with written rows' rules, one line each: a paper or ablation row without a policy line, a line
    its class may not use, or a rule that is not the one its line computes from the paper's number."""
    problems = []
    for row in rows:
        line, kind = row.get("policy"), row.get("class") or "paper"
        if not line:
            problems.append(f"{row['id']}: no policy line (a hand-set rule)")
            continue
        if line not in POLICY or kind not in POLICY[line].classes:
            problems.append(f"{row['id']}: policy line {line!r} is not one for class {kind!r}")
            continue
        rule = recompute(row)
        if row.get("ours") is not None and (rule is None or not _same(rule.to_dict(), row.get("rule_spec") or {})):
            problems.append(f"{row['id']}: its rule {row.get('rule')!r} is not what line {line!r} computes")
    return problems


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    def close(x: Any, y: Any) -> bool:
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            return len(x) == len(y) and all(close(u, v) for u, v in zip(x, y, strict=True))
        if x is None or y is None:
            return x is y
        return math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-15)

    return a.get("kind") == b.get("kind") and all(close(a.get(k), b.get(k)) for k in ("lo", "hi", "partial"))


def policy_markdown() -> str:
    """The policy as a Markdown table (``docs/rule-policy.md``)."""
    lines = ["| line | the paper's wording | the band (reproduced; partial) | computed from | classes |",
             "|---|---|---|---|---|"]  # fmt: skip
    for line in POLICY.values():
        cells = [f"`{line.id}`", line.wording, line.band, line.needs or "—", ", ".join(line.classes)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


TABLE_START, TABLE_END = "<!-- policy-table:start -->", "<!-- policy-table:end -->"


def update_doc(path: str) -> None:
    """Rewrite the table between ``path``'s policy-table markers from :data:`POLICY` (``docs/rule-policy.md``)."""
    from pathlib import Path

    text = Path(path).read_text(encoding="utf-8")
    if text.count(TABLE_START) != 1 or text.count(TABLE_END) != 1:
        raise SystemExit(f"{path}: expected one {TABLE_START} line and one {TABLE_END} line")
    head, rest = text.split(TABLE_START, 1)
    tail = rest.split(TABLE_END, 1)[1]
    Path(path).write_text(f"{head}{TABLE_START}\n{policy_markdown()}\n{TABLE_END}{tail}", encoding="utf-8")


if __name__ == "__main__":  # python -m mechrecall.policy docs/rule-policy.md
    import sys

    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: python -m mechrecall.policy DOC.md  (rewrites the table between its policy-table markers)")
        raise SystemExit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    update_doc(sys.argv[1])
