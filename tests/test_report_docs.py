"""The documents generated from a report: the README's per-paper summary and docs/claims.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyses.report import update_readme, write_claims_doc
from analyses.report.render import SUMMARY_END, SUMMARY_START, claims_doc_md, headline_rows, replace_block, summary_md
from analyses.reproduce import main


def row(id, verdict, paper=None, ours=None, kind=None, note="", reason="", control=None, scale=None):
    experiment = id.split(".")[0]
    r = {
        "id": id,
        "claim": f"claim {id}",
        "paper": paper,
        "ours": ours,
        "control": control,
        "control_is": "untrained" if control is not None else "",
        "rule": "≥ 0.5",
        "verdict": verdict,
        "preset": "smoke",
        "seeds": [0],
        "where": "Fig 1",
        "note": note,
        "reason": reason,
        "experiment": experiment,
    }
    if kind is not None:  # rows of reports written before claims had a class have none
        r["class"] = kind
    if scale is not None:  # {axis: [ours, the paper's]}
        r["scale"] = scale
        r["at_scale"] = "paper" if all(o >= p for o, p in scale.values()) else "reduced"
    return r


ALPHA = [
    row("alpha.p.a1", "not run", paper=0.5, kind="paper", reason="no weights"),
    row("alpha.p.a2", "reproduced", ours=0.9),  # no class: a paper claim, but it states no paper number
    row("alpha.p.a3", "reproduced", paper=1.0, ours=1.0, kind="extension"),
    row(
        "alpha.p.a4",
        "partial",
        paper=2.0,
        ours=1.5,
        kind="paper",
        note="changed from preset smoke: steps 5",
        control=0.1,
        scale={"d": [64, 256]},
    ),
    row("alpha.p.a5", "not reproduced", paper=0.0, ours=0.25, kind="paper"),
    row("alpha.p.a6", "reproduced", paper=3.0, ours=3.0, kind="paper", scale={"d": [256, 256]}),
]
BETA = [row("beta.q.b1", "reproduced", paper=1.0, ours=1.0, kind="ablation"), row("beta.q.b2", "not run")]
REPORT = {
    "schema": "mechrecall.report/1",
    "preset": "quick",
    "created": "2026-01-02T03:04:05+00:00",
    "experiments": [
        {"experiment": "alpha", "paper": "A Title: With a Colon (Doe & Roe)", "preset": "smoke", "seed": 0,
         "status": "done", "error": ""},
        {"experiment": "beta", "paper": "", "preset": "micro", "seed": 0, "status": "failed", "error": "boom"},
    ],
    "claims": ALPHA + BETA,
    "summary": {"reproduced": 4, "partial": 1, "not reproduced": 1, "not run": 2},
}  # fmt: skip


def ids(rows):
    return [r["id"] for r in rows]


def test_headline_rows_are_paper_claims_with_a_paper_number_measured_first():
    assert ids(headline_rows(ALPHA)) == ["alpha.p.a4", "alpha.p.a5"]  # HEADLINES = 2
    assert ids(headline_rows(ALPHA, k=3)) == ["alpha.p.a4", "alpha.p.a5", "alpha.p.a6"]
    # then the numbered one that did not run, then paper claims without a number (a row without a class is one)
    assert ids(headline_rows(ALPHA, k=10)) == ["alpha.p.a4", "alpha.p.a5", "alpha.p.a6", "alpha.p.a1", "alpha.p.a2"]
    assert ids(headline_rows(BETA)) == ["beta.q.b2"]  # the ablation is never a headline
    assert headline_rows([]) == []


def test_summary_counts_each_experiment_and_lists_its_headlines():
    lines = summary_md(REPORT).splitlines()
    assert lines[0] == (  # a row without a scale (a2, a5: reports of before) is not counted at the paper's scale
        "From the `quick` report (`python -m analyses.reproduce --preset quick`) of 2026-01-02 03:04:05 UTC: "
        "paper claims at the paper's scale: 1 reproduced; at reduced scale: 1 reproduced, 1 partial, 1 not "
        "reproduced; 2 not run; extensions: 1 reproduced; ablations: 1 reproduced. The full table: "
        "[docs/claims.md](docs/claims.md)."
    )
    assert lines[4:8] == [  # the paper's claims at each scale, apart from the extensions, ablations and checks
        "| experiment | paper (authors) | preset | seeds | paper claims at the paper's scale | at reduced scale | "
        "vacuous / not comparable / not run | extensions | ablations | checks |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| `alpha` | Doe & Roe | smoke | seed 0 | 1 reproduced | 1 reproduced, 1 partial, 1 not reproduced | "
        "1 not run | 1 reproduced | — | — |",
        "| `beta` | — | micro (failed) | seed 0 | — | — | 1 not run | — | 1 reproduced | — |",
    ]
    table = lines[lines.index("| experiment | claim | paper | ours | control | verdict | scale |") + 2 :]
    assert table == [
        "| `alpha` | claim alpha.p.a4 (Fig 1) | 2 | 1.5 | 0.1 (untrained) | partial at reduced scale | "
        "d 64/256 (0.25) |",
        "| `alpha` | claim alpha.p.a5 (Fig 1) | 0 | 0.25 | — | not reproduced | — |",
        "| `beta` | claim beta.q.b2 (Fig 1) | — | — | — | not run | — |",
    ]
    assert "The full table" not in summary_md(REPORT, claims_link=None)


def test_claims_doc_holds_every_row_once_with_its_class_and_where_it_came_from():
    doc = claims_doc_md(REPORT, regenerate="python -m analyses.reproduce --out runs --claims-doc docs/claims.md")
    assert doc.startswith("# Claims of the latest report\n")
    assert "the `quick` report (`python -m analyses.reproduce --preset quick`) of 2026-01-02 03:04:05 UTC" in doc
    assert "by `python -m analyses.reproduce --out runs --claims-doc docs/claims.md`" in doc
    for r in ALPHA + BETA:
        assert doc.count(f"| claim {r['id']} (Fig 1) |") == 1
    lines = doc.splitlines()
    header = "| claim | class | paper | ours | control | rule | verdict | scale | preset | seeds | note |"
    assert lines.count(header) == 2
    assert "| claim alpha.p.a2 (Fig 1) | paper | — | 0.9 | — | ≥ 0.5 | reproduced | — | smoke | 0 |  |" in lines
    assert (
        "| claim alpha.p.a1 (Fig 1) | paper | 0.5 | — | — | ≥ 0.5 | not run: no weights | — | smoke | 0 |  |" in lines
    )
    assert "| claim alpha.p.a3 (Fig 1) | extension | 1 | 1 | — | ≥ 0.5 | reproduced | — | smoke | 0 |  |" in lines
    assert (
        "| claim alpha.p.a6 (Fig 1) | paper | 3 | 3 | — | ≥ 0.5 | reproduced at the paper's scale | "
        "the paper's (d 256) | smoke | 0 |  |" in lines
    )
    assert any(line.startswith("| claim alpha.p.a4 (Fig 1) | paper |") and "steps 5 |" in line for line in lines)
    assert "## `alpha` — preset smoke, seed 0" in lines and "## `beta` — preset micro, seed 0" in lines
    assert (
        "A Title: With a Colon (Doe & Roe). Paper claims at the paper's scale: 1 reproduced; at reduced scale: 1 "
        "reproduced, 1 partial, 1 not reproduced; 1 not run; extensions: 1 reproduced." in lines
    )
    assert "**Failed:** `boom`" in lines


def test_replace_block_rewrites_only_between_the_markers():
    text = f"top\n{SUMMARY_START}\nold\nlines\n{SUMMARY_END}\nbottom\n"
    new = replace_block(text, "new\n")
    assert new == f"top\n{SUMMARY_START}\nnew\n{SUMMARY_END}\nbottom\n"
    assert replace_block(new, "new") == new
    for bad in ("no markers", f"{SUMMARY_END}\n{SUMMARY_START}", f"{SUMMARY_START}\n{SUMMARY_START}\n{SUMMARY_END}"):
        with pytest.raises(ValueError, match="report-summary"):
            replace_block(bad, "x")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    (tmp_path / "runs" / "report").mkdir(parents=True)
    (tmp_path / "runs" / "report" / "claims.json").write_text(json.dumps(REPORT), encoding="utf-8")
    return tmp_path / "runs"


def test_update_readme_in_place_links_the_claims_doc(out, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nintro\n\n{SUMMARY_START}\nstale\n{SUMMARY_END}\n\n## Next\n", encoding="utf-8")
    update_readme(out, readme)  # no docs/claims.md beside it: not linked
    text = readme.read_text(encoding="utf-8")
    assert "stale" not in text and "The full table" not in text
    assert text.startswith("# Title\n\nintro\n\n") and text.endswith(f"{SUMMARY_END}\n\n## Next\n")
    assert summary_md(REPORT, None) in text
    doc = write_claims_doc(out, tmp_path / "docs" / "claims.md")
    update_readme(out, readme)
    once = readme.read_text(encoding="utf-8")
    assert "[docs/claims.md](docs/claims.md)" in once
    assert doc.read_text(encoding="utf-8") == claims_doc_md(REPORT) + "\n"
    update_readme(out, readme)
    assert readme.read_text(encoding="utf-8") == once  # rerunning changes nothing


def test_cli_writes_both_documents_and_fails_in_one_line(out, tmp_path, capsys):
    readme, doc = tmp_path / "README.md", tmp_path / "docs" / "claims.md"
    readme.write_text(f"{SUMMARY_START}\n{SUMMARY_END}\n", encoding="utf-8")
    assert main(["--out", str(out), "--claims-doc", str(doc), "--update-readme", str(readme)]) == 0
    written = doc.read_text(encoding="utf-8")
    assert f"`python -m analyses.reproduce --claims-doc {doc}`" in written and str(out) not in written
    assert "[docs/claims.md](docs/claims.md)" in readme.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["--out", str(tmp_path / "none"), "--claims-doc", str(doc)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"error: no report in {tmp_path / 'none'}/report/; run it first")
    readme.write_text("no markers\n", encoding="utf-8")
    assert main(["--out", str(out), "--update-readme", str(readme)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "report-summary:start" in err
    assert readme.read_text(encoding="utf-8") == "no markers\n"
