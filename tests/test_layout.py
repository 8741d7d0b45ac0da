"""The layout's one rule: dependencies point downwards (core ← hooks, pretrained ← analyses ← papers)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analyses.registry import EXPERIMENTS, experiment
from mechrecall.lazy import type_checking_imports

ROOT = Path(__file__).resolve().parents[1]
PAPERS = ROOT / "analyses" / "papers"
#: the modules of every paper package, each in the same role (README "Adding a paper")
PAPER_MODULES = {
    "__init__",
    "presets",
    "data",
    "models",
    "runs",
    "metrics",
    "pretrained",
    "claims",
    "results",
    "figures",
    "parts",
    "theory",
}
MAX_FUNCTION_LINES, MAX_PART_LINES = 60, 40


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
    """No core module imports a sibling package, not even under ``TYPE_CHECKING``; ``mechrecall`` hands one to a
    user who asks (``from mechrecall import analyses``) by looking it up by name at run time."""
    siblings = ("hooks", "pretrained", "analyses")
    assert offenders("mechrecall", lambda p, m: _top(m) in siblings) == []
    import mechrecall

    assert mechrecall.analyses is importlib.import_module("analyses") and "pretrained" in dir(mechrecall)


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


ENTRY_MODULES = set(EXPERIMENTS)


def test_the_registry_names_every_entry_module_and_its_package():
    """Every module beside analyses/__init__.py that declares an experiment is in the registry, and back."""
    declared = {
        p.stem for p in (ROOT / "analyses").glob("*.py") if "EXPERIMENT = Experiment(" in p.read_text(encoding="utf-8")
    }
    assert declared == set(EXPERIMENTS)
    for name, paper in EXPERIMENTS.items():
        exp = experiment(name)
        assert exp.name == name and exp.package == f"analyses.papers.{paper}", name
        parts = {p.name for p in exp.parts}
        assert {s.part for s in exp.claim_table()} <= parts, name  # the claims table names its own parts


#: what an entry module imports at run time: the protocol, the lazy pattern and its paper package (whose modules
#: are imported on first use), so that ``--help`` is fast
ENTRY_RUNTIME_IMPORTS = {"__future__", "sys", "typing", "mechrecall.experiment", "mechrecall.lazy", "analyses.papers"}


def _runtime_imports(tree: ast.Module) -> set[str]:
    """The modules a module's top level imports outside its ``if TYPE_CHECKING:`` blocks."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_entry_modules_are_a_table_of_contents():
    """An entry module imports only the protocol and its paper package (so --help is fast) and holds no logic: no
    functions; its ``if TYPE_CHECKING:`` imports (its public API) come from its own paper package."""
    assert {"noisy_icl", "laser_pythia", "induction_emergence"} <= ENTRY_MODULES
    for stem in ENTRY_MODULES:
        path = ROOT / "analyses" / f"{stem}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert _runtime_imports(tree) <= ENTRY_RUNTIME_IMPORTS, stem
        assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))], stem
        package = experiment(stem).package
        lazy = type_checking_imports(path.read_text(encoding="utf-8"), f"analyses.{stem}")
        assert all(module.startswith(package + ".") for module, _ in lazy.values()), stem


#: a ``"package.module:NAME"`` address (or the tail of one in an f-string, ``".parts:part_x"``): how parts, checks,
#: presets and claims were named before they were objects
ADDRESS = re.compile(r"^[\w.]+:[A-Za-z_]\w*$")


def addresses(source: str) -> list[str]:
    """Every string constant of ``source`` (f-string pieces included) that is a ``"module:NAME"`` address."""
    tree = ast.parse(source)
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and ADDRESS.match(str(n.value))]


def test_declarations_hold_objects_not_module_function_strings():
    """No entry module, and not the protocol, names a part, check, preset table, claims table or API entry by a
    ``"module:function"`` string: each is a Python object that mypy checks and go-to-definition follows."""
    paths = [ROOT / "analyses" / f"{stem}.py" for stem in sorted(ENTRY_MODULES)]
    paths += [ROOT / "mechrecall" / "experiment.py", ROOT / "analyses" / "registry.py"]
    assert {str(p.relative_to(ROOT)): addresses(p.read_text(encoding="utf-8")) for p in paths} == {
        str(p.relative_to(ROOT)): [] for p in paths
    }


#: a results entry named as a slash path (``"final/accuracy"``, ``f"{at}control/{sid}"``): how claims read their
#: numbers before they read typed results by attribute
SLASH_PATH = re.compile(r"^[\w{}.]*/[\w{}./]*$")


def slash_paths(source: str) -> list[str]:
    """Every string constant of ``source`` (f-string pieces included) shaped like a ``a/b`` results path."""
    tree = ast.parse(source)
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and SLASH_PATH.match(str(n.value))]


def test_claims_tables_read_typed_results_not_slash_paths():
    """Every claims table reads its numbers by attribute access on the part's typed results (mypy checks each
    field): no slash-path string in any claims module."""
    found = {
        str(p.relative_to(ROOT)): slash_paths(p.read_text(encoding="utf-8")) for p in sorted(PAPERS.glob("*/claims.py"))
    }
    assert found == {k: [] for k in found}


def test_the_slash_path_check_catches_a_path():
    source = 'ClaimSpec("a.b", "t", "final/accuracy", r)\nat = "right/"\nx = f"{at}control/{sid}"\ny = "≥ 1 / 2"\n'
    assert sorted(slash_paths(source)) == ["control/", "final/accuracy", "right/"]


def test_the_address_check_catches_a_string_part():
    source = 'PKG = "a.b"\nPart("main", f"{PKG}.parts:part_main", "h")\nAPI = {"x": "a.b.runs:x"}\n'
    assert sorted(addresses(source)) == [".parts:part_main", "a.b.runs:x"]


def test_entry_modules_serve_their_papers_public_api_on_first_use():
    """An entry module's public API (what its notebook uses) is its ``if TYPE_CHECKING:`` imports, from its own paper
    package, each served as the package's own object and nothing else; importing every entry module still loads no
    torch (``--help``)."""
    served = 0
    for stem in ENTRY_MODULES:
        entry = importlib.import_module(f"analyses.{stem}")
        api = type_checking_imports((ROOT / "analyses" / f"{stem}.py").read_text(encoding="utf-8"), entry.__name__)
        if not api:
            continue
        assert set(entry.__all__) == {"EXPERIMENT", "main", *api}, stem
        for name, (module, attr) in api.items():
            assert attr == name, (module, attr)
            assert getattr(entry, name) is getattr(importlib.import_module(module), name), name
            served += 1
        with pytest.raises(AttributeError, match="has no attribute 'check'"):
            entry.check  # noqa: B018 -- a package function that the API does not name
    assert served >= 4 * 4  # the four papers' notebooks
    code = (
        "import importlib, sys\n"
        f"for s in {sorted(ENTRY_MODULES)}:\n"
        "    importlib.import_module('analyses.' + s).EXPERIMENT.parser().format_help()\n"
        "print('torch' in sys.modules, 'numpy' in sys.modules)"
    )  # every entry module's --help: the paper's modules (and torch, numpy) stay unimported
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False False", done.stderr


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


def paper_packages() -> list[Path]:
    return sorted(p for p in PAPERS.iterdir() if (p / "__init__.py").exists())


def test_every_paper_package_has_the_same_modules():
    """The same module names in every paper package (a role may be a subpackage of that name)."""
    assert len(paper_packages()) == 4
    for package in paper_packages():
        modules = {p.stem for p in package.glob("*.py")} | {
            p.name for p in package.iterdir() if (p / "__init__.py").exists()
        }
        assert modules == PAPER_MODULES, (
            f"{package.name}: extra {sorted(modules - PAPER_MODULES)}, missing {sorted(PAPER_MODULES - modules)}"
        )


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, node.end_lineno - node.lineno + 1


def test_paper_functions_are_short_and_parts_are_glue():
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)"
        for path in sorted(PAPERS.rglob("*.py"))
        for node, n in _functions(path)
        if n > (MAX_PART_LINES if path.stem == "parts" and node.name.startswith("part_") else MAX_FUNCTION_LINES)
    ]
    assert long == []


def test_no_paper_module_builds_a_claim():
    """Claims are declared in each package's claims.py and evaluated by the protocol, never built in code."""
    built = []
    for path in sorted(PAPERS.rglob("*.py")):
        if path.name == "claims.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in ("Claim", "ClaimSpec", "claim"):
                    built.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}(...)")
            elif isinstance(node, ast.ImportFrom) and node.module == "mechrecall.claims":
                built += [
                    f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name in ("Claim", "ClaimSpec", "not_run")
                ]
    assert built == []


def test_the_layout_checks_catch_a_long_function_and_an_inline_claim(tmp_path):
    path = tmp_path / "parts.py"
    path.write_text("def part_x(ctx):\n" + "    x = 1\n" * 45 + "    return Claim(id='a')\n")
    ((_node, n),) = list(_functions(path))
    assert n > MAX_PART_LINES
    calls = [c for c in ast.walk(ast.parse(path.read_text())) if isinstance(c, ast.Call)]
    assert [c.func.id for c in calls] == ["Claim"]


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_claim_declares_its_control(name):
    """Each claim names the results entry of its control and says what the control is (a rule its control also
    passes is ``vacuous``: the micro runs check that no rule passes its control)."""
    missing = [s.id for s in experiment(name).claim_table() if not (s.control and s.control_is)]
    assert missing == []


LAZY_MODULES = ["mechrecall", "analyses", "analyses.report", "pretrained", "pretrained.mini"]


@pytest.mark.parametrize("name", [*LAZY_MODULES, *(f"analyses.papers.{p}" for p in sorted(set(EXPERIMENTS.values())))])
def test_every_lazy_name_resolves_and_is_exported(name):
    """Each name a module serves on first use (its ``if TYPE_CHECKING:`` imports, mechrecall.lazy) is the object it
    imports, and in ``__all__``."""
    module = importlib.import_module(name)
    table = type_checking_imports(Path(module.__file__).read_text(encoding="utf-8"), name)
    assert table, name
    for attr in table:
        assert getattr(module, attr) is not None, f"{name}.{attr}"
    assert set(table) <= set(module.__all__), name
