"""A report's claims as a table and one claim across seeds (``analyses.report.tables``), on hand-written rows."""

from __future__ import annotations

import json
import math

import pytest

from analyses import report

ROWS = [
    {
        "id": "toy.main.accuracy",
        "claim": "the model learns the task",
        "where": "Fig 1",
        "paper": 0.9,
        "ours": 0.8,
        "spread": [0.7, 0.9],
        "control": 0.1,
        "control_is": "the untrained model",
        "rule": "≥ 0.75",
        "rule_spec": {"kind": "at_least", "lo": 0.75, "hi": None, "partial": None},
        "verdict": "partial",
        "class": "paper",
        "seeds": [0, 1, 2],
        "passed": 2,
        "per_seed": [
            {"seed": 0, "ours": 0.7, "control": 0.1},
            {"seed": 1, "ours": 0.8, "control": 0.05},
            {"seed": 2, "ours": 0.9, "control": 0.15},
        ],
    },
    {"id": "toy.main.flag", "claim": "a flag", "ours": True, "paper": None, "verdict": "reproduced", "seeds": [0]},
]


def test_a_table_row_per_claim_from_a_report_folder_a_file_or_the_dict(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "claims.json").write_text(json.dumps({"claims": ROWS}))
    (tmp_path / "seeds.json").write_text(json.dumps({"claims": ROWS}))
    for source in (tmp_path, tmp_path / "report" / "claims.json", tmp_path / "seeds.json", {"claims": ROWS}):
        table = report.claims_table(source)
        assert list(table.columns) == list(report.tables.COLUMNS)
        assert table.id.tolist() == ["toy.main.accuracy", "toy.main.flag"]
        assert table.experiment.tolist() == ["toy", "toy"]  # from the id when the row has none
        assert table.seeds.tolist() == [3, 1] and table.loc[0, "passed"] == 2
    with pytest.raises(FileNotFoundError, match="no claims here"):
        report.claims_table(tmp_path / "nothing")


def test_one_claim_per_seed_and_its_figure():
    table = report.per_seed({"claims": ROWS}, "toy.main.accuracy")
    assert table.to_dict("list") == {"seed": [0, 1, 2], "ours": [0.7, 0.8, 0.9], "control": [0.1, 0.05, 0.15]}
    flag = report.per_seed({"claims": ROWS}, "toy.main.flag")
    assert flag.ours.tolist() == [1.0] and math.isnan(flag.control[0])
    fig = report.seeds_figure({"claims": ROWS}, "toy.main.accuracy")
    (ax,) = fig.axes
    ours, control = (line for line in ax.lines if line.get_linestyle() == "None")
    assert list(ours.get_ydata()) == [0.7, 0.8, 0.9] and list(control.get_ydata()) == [0.1, 0.05, 0.15]
    assert [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"] == [0.9]  # the paper's
    (band,) = ax.patches  # the rule's accepted band starts at its threshold
    assert band.get_y() == pytest.approx(0.75)
    with pytest.raises(KeyError, match=r"'toy\.main\.nope' is not in this report"):
        report.seeds_figure({"claims": ROWS}, "toy.main.nope")
