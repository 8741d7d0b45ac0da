"""The notebooks: a quickstart and one per paper, saved with their outputs, using only the public API, and each run
top to bottom in a real Jupyter kernel in its FAST mode (the inline backend still drawing a plain pyplot figure
after every analysis call)."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
INLINE_CHECK = """
import matplotlib
import matplotlib.pyplot as plt

print("backend:", matplotlib.get_backend())
plt.figure(figsize=(2, 2))
plt.plot([0, 1], [1, 0])
plt.show()
"""


def _runner():
    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _code(path: Path) -> str:
    """The notebook's code cells as one Python module (IPython's % and ! lines commented out)."""
    sources = ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]
    return "\n".join(re.sub(r"(?m)^(\s*)([%!])", r"\1# \2", s) for s in sources)


def private_uses(source: str) -> list[str]:
    """Every import of, attribute path through, or module name naming ``analyses.papers`` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("analyses.papers")]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.startswith("analyses.papers") or (
                module == "analyses" and any(a.name == "papers" for a in node.names)
            ):
                found.append(f"from {module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Attribute) and node.attr == "papers":
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "analyses.papers" in node.value:
            found.append(repr(node.value))
    return found


def _outputs(cell: dict) -> list[dict]:
    return cell.get("outputs", [])


def _has(cell: dict, mime: str) -> bool:
    return any(mime in o.get("data", {}) for o in _outputs(cell))


def test_one_notebook_per_paper_and_a_quickstart():
    from analyses.registry import experiment, experiments

    by_paper = defaultdict(set)
    for name in experiments():
        by_paper[experiment(name).paper].add(name)
    stems = {p.stem for p in NOTEBOOKS}
    assert "quickstart" in stems
    missing = [paper for paper, names in by_paper.items() if not names & stems]
    assert not missing, f"papers with no notebook: {missing}"
    assert stems - {"quickstart"} <= set(experiments()), "a notebook is named after its paper's experiment"


def test_the_public_api_check_finds_every_way_in():
    assert private_uses("import analyses.papers.ic_recall.data") == ["analyses.papers.ic_recall.data"]
    assert private_uses("from analyses.papers.distributional import models") != []
    assert private_uses("from analyses import papers") != []
    assert private_uses("import analyses\nx = analyses.papers.ic_recall") != []
    assert private_uses("import importlib\nimportlib.import_module('analyses.papers.ic_recall')") != []
    assert private_uses("from analyses import ic_recall, heads\nfrom mechrecall import train") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_use_only_the_public_api(path):
    assert private_uses(_code(path)) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_saved_with_the_outputs_of_a_full_run(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert nb["metadata"].get("mechrecall", {}).get("mode") == "full", "saved by `make notebooks` (full mode)"
    assert all(c["execution_count"] for c in code), "every code cell ran, in order"
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    assert not [o for c in code for o in _outputs(c) if o["output_type"] == "error"]
    assert any(_has(c, "image/png") for c in code), "its figures are visible without running it"
    assert path.stat().st_size < 3_000_000


def _fast_run(path: Path, tmp_path: Path):
    pytest.importorskip("nbclient", reason="the notebooks extra (pip install -e '.[notebooks]') is not installed")
    nb, _ = _runner().execute(path, fast=True, runs=tmp_path / "runs", extra_cells=[INLINE_CHECK])
    return nb


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_in_a_kernel_in_fast_mode_and_leaves_the_inline_backend(path, tmp_path):
    nb = _fast_run(path, tmp_path)  # raises CellExecutionError, with the cell and its traceback, on any error
    *cells, check = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in cells)
    assert any(_has(c, "image/png") for c in cells), "the analyses' figures render inline"
    printed = "".join(o.get("text", "") for o in check.outputs)
    assert "inline" in printed, printed
    assert _has(check, "image/png"), "a plain pyplot figure after the analysis calls still renders as a PNG"
    assert (tmp_path / "runs").is_dir(), "the notebook writes under MECHRECALL_RUNS"


@pytest.mark.slow
def test_the_quickstart_trains_with_a_progress_bar(tmp_path):
    pytest.importorskip("ipywidgets", reason="the notebooks extra is not installed")
    nb = _fast_run(ROOT / "notebooks" / "quickstart.ipynb", tmp_path)
    training = next(c for c in nb.cells if c.cell_type == "code" and "train(" in c.source)
    assert _has(training, WIDGET), "tqdm draws its notebook widget while the toy model trains"


def test_the_runner_refuses_a_path_that_is_not_a_notebook(capsys):
    with pytest.raises(SystemExit) as exit_:
        _runner().main([str(ROOT / "README.md")])
    assert exit_.value.code == 2
    assert "README.md: not a notebook file" in capsys.readouterr().err


def test_the_readme_quotes_each_notebooks_full_run_time():
    """The README's table gives each notebook's full-mode wall time as its saved run recorded it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        row = re.search(rf"^\| \[`{path.name}`\]\(notebooks/{path.name}\) \|[^|]*\| (\d+) s", readme, re.M)
        assert row, f"README.md has no row for {path.name}"
        recorded = json.loads(path.read_text(encoding="utf-8"))["metadata"]["mechrecall"]["seconds"]
        assert int(row.group(1)) == recorded, path.name
