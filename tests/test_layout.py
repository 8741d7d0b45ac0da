"""The layout's one rule: dependencies point downwards (core ← hooks, pretrained ← analyses ← papers)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_packages(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (``import x.y`` and ``from x.y import z``, anywhere)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def offenders(folder: str, forbidden) -> list[str]:
    return [
        f"{p.relative_to(ROOT)} imports {m}"
        for p in files(folder)
        for m in sorted(imported_packages(p))
        if forbidden(p, m)
    ]


def _top(module: str) -> str:
    return module.split(".")[0]


def test_the_core_imports_no_sibling():
    assert offenders("mechrecall", lambda p, m: _top(m) in ("hooks", "pretrained", "analyses")) == []


def test_hooks_import_only_the_core():
    assert offenders("hooks", lambda p, m: _top(m) in ("pretrained", "analyses")) == []


def test_pretrained_imports_no_analysis():
    assert offenders("pretrained", lambda p, m: _top(m) in ("hooks", "analyses")) == []


def test_generic_analyses_import_no_paper():
    generic = lambda p: "papers" not in p.relative_to(ROOT / "analyses").parts  # noqa: E731
    assert (
        offenders(
            "analyses",
            lambda p, m: (
                generic(p)
                and p.parent == ROOT / "analyses"
                and p.stem not in ENTRY_MODULES
                and m.startswith("analyses.papers")
            ),
        )
        == []
    )


ENTRY_MODULES = {
    p.stem for p in (ROOT / "analyses").glob("*.py") if "EXPERIMENT = Experiment(" in p.read_text(encoding="utf-8")
}


def test_entry_modules_are_a_table_of_contents():
    """An entry module imports only the protocol (so --help is fast) and holds no logic: no functions."""
    assert {"noisy_icl", "laser_pythia", "induction_emergence"} <= ENTRY_MODULES
    for stem in ENTRY_MODULES:
        path = ROOT / "analyses" / f"{stem}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert imported_packages(path) <= {"__future__", "sys", "mechrecall.experiment"}, stem
        assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))], stem


def test_a_paper_never_imports_another_paper():
    papers = [p.name for p in (ROOT / "analyses" / "papers").iterdir() if (p / "__init__.py").exists()]
    assert len(papers) >= 2
    found = []
    for paper in papers:
        found += offenders(
            f"analyses/papers/{paper}",
            lambda p, m, paper=paper: m.startswith("analyses.papers.") and m.split(".")[2] != paper,
        )
    assert found == []


@pytest.mark.parametrize(
    "source,module",
    [
        ("import analyses.heads\n", "mechrecall"),
        ("from pretrained import load\n", "hooks"),
    ],
)
def test_the_checker_catches_an_upward_import(tmp_path, source, module):
    path = tmp_path / "m.py"
    path.write_text(source)
    assert _top(next(iter(imported_packages(path)))) in ("analyses", "pretrained")
