"""The rule policy (mechrecall.policy): every claim's rule recomputed, independently, from its line and the paper's
number; checks and the scale of a row kept apart from the paper's claims in every headline."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyses.registry import EXPERIMENTS, experiment
from analyses.report.render import headline, scale_counts
from mechrecall.claims import ClaimSpec, at_least, at_scale, label, scale_words
from mechrecall.policy import POLICY, PolicyRule, policy, policy_markdown, policy_problems, recompute
from mechrecall.typed import Results

ROOT = Path(__file__).resolve().parents[1]

# The bands of each line that needs only the paper's number, written out here again (not read from the module):
# (kind, lo, hi, partial) for the paper's number x.
EXPECTED = {
    "printed": lambda x: ("near", x - 0.1 * abs(x), x + 0.1 * abs(x), (x - 0.25 * abs(x), x + 0.25 * abs(x))),
    "printed_bound": lambda x: ("at_least", x, None, (0.9 * x, None)),
    "close_to_one": lambda x: ("at_least", 0.9, None, (0.7, None)),
    "near_zero": lambda x: ("at_most", None, 0.05, (None, 0.1)),
    "higher_than": lambda x: ("at_least", 0.05, None, (0.02, None)),
    "ratio_below": lambda x: ("at_most", None, 0.5, (None, 0.8)),
    "ratio_above": lambda x: ("at_least", 2.0, None, (1.25, None)),
    "theta": lambda x: ("near", x - 0.25, x + 0.25, (x - 0.5, x + 0.5)),
}


def _band(rule):
    return (rule.kind, rule.lo, rule.hi, rule.partial)


def _close(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a is b or (a is not None and b is not None and all(_close(x, y) for x, y in zip(a, b, strict=True)))
    return a is b or (a is not None and b is not None and (a == b or abs(a - b) < 1e-12))


def _tables():
    """Every claims table of every registered experiment: (experiment, spec)."""
    for name in EXPERIMENTS:
        for spec in experiment(name).claim_table():
            yield name, spec


@pytest.mark.parametrize("line", sorted(EXPECTED))
def test_each_line_computes_its_band_from_the_paper_number(line):
    for x in (0.98, 0.5, 2.0, 11.3):
        got = POLICY[line].make(x)
        want = EXPECTED[line](x)
        assert got.kind == want[0] and all(_close(g, w) for g, w in zip(_band(got)[1:], want[1:], strict=True))


def test_printed_takes_the_papers_error_bar_where_it_is_wider_and_refuses_a_printed_zero():
    rule = POLICY["printed"].make(0.1, error_bar=0.05)  # 10 % of 0.1 is 0.01: the error bar is wider
    assert (rule.lo, rule.hi) == pytest.approx((0.05, 0.15)) and rule.partial == pytest.approx((0.0, 0.2))
    assert rule.judge(0.14) == "reproduced" and rule.judge(0.16) == "partial" and rule.judge(0.21) == "not reproduced"
    with pytest.raises(ValueError, match="near_zero"):
        POLICY["printed"].make(0.0)
    with pytest.raises(ValueError, match="needs the paper's number"):
        POLICY["printed"].make(None)


def test_a_line_is_refused_for_a_class_it_is_not_for():
    with pytest.raises(ValueError, match="for class check"):
        ClaimSpec[Toy]("p.x", "an identity", value=lambda r: r.p, rule=policy("identity"), kind="paper")
    with pytest.raises(ValueError, match="for class extension"):
        ClaimSpec[Toy]("p.x", "ours", value=lambda r: r.p, rule=policy("extension", bar=1.0, why="w"), kind="paper")
    with pytest.raises(ValueError, match="expected one of"):
        policy("roughly")


def test_every_claim_of_every_table_names_a_policy_line_and_its_rule_is_the_lines():
    hand_set = [f"{n}.{s.id}" for n, s in _tables() if not isinstance(s.rule, PolicyRule)]
    assert hand_set == [], f"claims with a hand-set rule (no policy line): {hand_set}"
    checked = 0
    for name, spec in _tables():
        line = spec.rule.line
        assert spec.kind in POLICY[line].classes, f"{name}.{spec.id}: line {line} for class {spec.kind}"
        if line in EXPECTED and not spec.rule.args and not callable(spec.paper):
            got, want = spec.rule_for({}), EXPECTED[line](spec.paper if spec.paper is not None else 0.0)
            assert got.kind == want[0], f"{name}.{spec.id}"
            assert all(_close(g, w) for g, w in zip(_band(got)[1:], want[1:], strict=True)), f"{name}.{spec.id}"
            checked += 1
    assert checked >= 20  # most rules depend only on the paper's number (the others: test_rows_recompute)


def test_identity_rows_are_checks_and_checks_use_the_identity_line():
    for name, spec in _tables():
        if spec.kind == "check":
            assert spec.rule.line == "identity", f"{name}.{spec.id}"
        if isinstance(spec.rule, PolicyRule) and spec.rule.line == "identity":
            assert spec.kind == "check", f"{name}.{spec.id}"


class Toy(Results):
    """A toy part's typed results: a probability, its control, the same contrast at 5 untrained seeds, a chance."""

    p: float
    c: float = 0.0
    init: tuple[float, ...] = ()
    chance: float = 0.0


def _row(**kw):
    spec = ClaimSpec[Toy](
        "main.p", "p(ȳ | drop F₂)", value=lambda r: r.p, rule=policy("printed"), paper=0.98, control=lambda r: r.c
    )
    claim = spec.evaluate(Toy(p=0.95, c=0.2), experiment="toy", **kw)
    assert claim is not None
    return claim.row()


def test_rows_recompute_and_a_tampered_rule_is_named():
    row = _row()
    assert row["policy"] == "printed" and row["policy_args"] == {}
    assert recompute(row).to_dict() == row["rule_spec"] and policy_problems([row]) == []
    tampered = {**row, "rule_spec": at_least(0.9).to_dict()}
    assert policy_problems([tampered]) == [
        "toy.main.p: its rule '" + row["rule"] + "' is not what line 'printed' computes"
    ]
    assert policy_problems([{**row, "policy": ""}]) == ["toy.main.p: no policy line (a hand-set rule)"]


def test_a_rule_from_the_results_is_stored_with_its_arguments():
    spec = ClaimSpec[Toy](
        "main.c",
        "a contrast",
        value=lambda r: r.p,
        rule=policy("above_untrained", values=lambda r: r.init, what="contrast"),
        control=lambda r: r.c,
        kind="paper",
    )
    claim = spec.evaluate(Toy(p=0.5, c=0.01, init=[0.1, -0.2, 0.05, 0.0, 0.15]), experiment="toy")
    assert claim is not None
    row = claim.row()
    assert row["policy_args"] == {"values": [0.1, -0.2, 0.05, 0.0, 0.15], "what": "contrast"}
    assert row["rule_spec"]["lo"] == pytest.approx(0.4) and row["verdict"] == "reproduced"
    assert policy_problems([row]) == []


def test_scale_reads_reduced_below_the_paper_on_any_axis():
    assert at_scale({"d": (256, 256), "T": (256, 256)}) == "paper"
    assert at_scale({"d": (192, 256), "T": (256, 256)}) == "reduced" and at_scale({}) == ""
    row = _row(scale={"d": (192.0, 256.0), "T": (64.0, 256.0)})
    assert row["at_scale"] == "reduced" and label(row) == "reproduced at reduced scale"
    assert scale_words(row) == "d 192/256 (0.75), T 64/256 (0.25)"
    full = _row(scale={"d": (256.0, 256.0)})
    assert label(full) == "reproduced at the paper's scale" and scale_words(full) == "the paper's (d 256)"


def test_the_headline_counts_checks_and_reduced_scale_apart():
    rows = [
        _row(scale={"d": (256.0, 256.0)}),
        _row(scale={"d": (64.0, 256.0)}),
        _row(scale={"d": (64.0, 256.0)}),
        {**_row(), "class": "check"},
    ]
    counts = scale_counts(rows)
    assert counts["paper"]["reproduced"] == 1 and counts["reduced"]["reproduced"] == 2
    text = headline(rows)
    assert text.startswith("paper claims at the paper's scale: 1 reproduced; at reduced scale: 2 reproduced")
    assert text.endswith("checks: 1 reproduced")


def test_the_policy_doc_holds_the_policy_table():
    doc = (ROOT / "docs" / "rule-policy.md").read_text(encoding="utf-8")
    assert policy_markdown() in doc, "docs/rule-policy.md is stale: python -m mechrecall.policy docs/rule-policy.md"


def test_a_failing_notes_function_fails_loudly_in_the_tests_and_quietly_for_a_user(monkeypatch):
    from mechrecall.claims import ClaimTextError
    from mechrecall.typed import NotRun

    spec = ClaimSpec[Toy](
        "main.p",
        "p",
        value=lambda r: r.p,
        rule=policy("close_to_one"),
        notes=lambda r: f"chance {r.chanse:.2f}",  # type: ignore[attr-defined]  # the typo mypy would catch
    )
    with pytest.raises(ClaimTextError, match=r"claim main\.p: its notes / words failed: AttributeError"):
        spec.evaluate(Toy(p=0.95, chance=0.1), experiment="toy")
    not_run = spec.evaluate(NotRun(not_run="no weights"), experiment="toy")  # nothing measured: nothing to note
    assert not_run is not None and not_run.verdict == "not run"
    monkeypatch.setenv("MECHRECALL_STRICT_CLAIMS", "0")
    quiet = spec.evaluate(Toy(p=0.95, chance=0.1), experiment="toy")
    assert quiet is not None and quiet.note == "" and quiet.ours == 0.95


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_part_declares_its_scale_against_the_papers(name, tmp_path):
    """Each part of each experiment names its sizes along the axes that matter, beside the paper preset's, at the
    presets the reports run (a row without a scale could read as a plain 'reproduced'). A part without axes may
    judge extensions only (ours, on a pretrained model the paper never ran); an axis at 0 is a configuration the
    preset does not run (reduced, never the paper's scale)."""
    exp = experiment(name)
    for report_preset in ("quick", "smoke"):
        preset = exp.report_presets.get(report_preset)
        if preset is None:
            continue
        for part in exp.select_parts(["all"], preset):
            ctx, _ = exp.prepare(tmp_path, preset=preset, parts=[part])
            ctx.part = part
            scale = ctx.scale()
            if not scale:
                kinds = {s.kind for s in exp.claim_table() if s.part == part}
                assert kinds <= {"extension"}, f"{name}:{part} at preset {preset} declares no scale axes"
            assert all(o >= 0 and p > 0 for o, p in scale.values()), f"{name}:{part}: {scale}"
