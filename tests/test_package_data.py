"""A user installs the wheel, not the checkout: every non-Python file the packages read at run time is package data.

The files read are found in the code itself: a file beside the packages' modules whose name appears in a string
literal of one of them (``facts.json``, ``tinyshakespeare_char_stats.json``; docstrings aside). Each must match
``[tool.setuptools.package-data]``, and a wheel built from a copy of the sources must hold it.
"""

from __future__ import annotations

import ast
import fnmatch
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.10: pip's own copy of tomli
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mechrecall", "hooks", "analyses", "pretrained")
#: Non-Python files beside the modules that no code opens: the papers' READMEs are documentation.
DOCS = ("README.md",)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _data_files() -> list[Path]:
    """Every non-Python file under the four packages (caches aside), relative to the checkout."""
    return sorted(
        p.relative_to(ROOT)
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )


def _literals(module: Path) -> set[str]:
    """The string constants of a module, docstrings excluded."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    }


def files_read() -> list[Path]:
    """The non-Python files some module of the packages names in its code (not in a docstring)."""
    names: set[str] = set()
    for pkg in PACKAGES:
        for module in (ROOT / pkg).rglob("*.py"):
            names |= _literals(module)
    paths = {s.rsplit("/", 1)[-1] for s in names if " " not in s}  # a name or a path; prose that mentions one aside
    return [p for p in _data_files() if p.name in paths]


def is_package_data(path: Path, table: dict[str, list[str]]) -> bool:
    """Whether ``path`` (relative to the checkout) matches a package-data pattern of its package or of a package
    above it (``analyses = ["measured/**/*.json"]``: a pattern relative to that package's folder)."""
    parts = path.parts
    for i in range(1, len(parts)):
        package, rest = ".".join(parts[:i]), "/".join(parts[i:])
        patterns = table.get(package, []) + (table.get("*", []) + table.get("", []) if i == len(parts) - 1 else [])
        if any(fnmatch.fnmatch(rest, pattern) for pattern in patterns):
            return True
    return False


def test_the_finder_sees_the_files_the_code_opens():
    """The two data tables the code reads are found (the finder itself works) and no README counts as read."""
    read = {p.as_posix() for p in files_read()}
    assert {
        "analyses/papers/ic_recall/facts.json",
        "analyses/papers/distributional/data/tinyshakespeare_char_stats.json",
    } <= read
    assert not any(p.endswith("README.md") for p in read)


def test_every_file_the_code_opens_is_package_data():
    table = _pyproject()["tool"]["setuptools"]["package-data"]
    missing = [p.as_posix() for p in files_read() if not is_package_data(p, table)]
    assert not missing, f"read at run time but not in [tool.setuptools.package-data]: {missing}"


def test_every_other_data_file_is_package_data_or_documentation():
    """A data file no literal names (read through a glob, say) is package data too; only the READMEs stay out."""
    table = _pyproject()["tool"]["setuptools"]["package-data"]
    stray = [p.as_posix() for p in _data_files() if p.name not in DOCS and not is_package_data(p, table)]
    assert not stray, f"non-Python files in the packages that the wheel leaves out: {stray}"


def test_setuptools_floor_reads_the_license_string():
    """``license = "MIT"`` (a PEP 639 SPDX string) needs setuptools 77 or later to build."""
    data = _pyproject()
    assert isinstance(data["project"]["license"], str)
    (req,) = [r for r in data["build-system"]["requires"] if r.startswith("setuptools")]
    floor = tuple(int(x) for x in req.split(">=")[1].split("."))
    assert floor >= (77,), req


@pytest.mark.slow
def test_the_wheel_holds_every_file_the_code_opens(tmp_path):
    """Build the wheel from a copy of the sources (no build isolation: this venv's setuptools) and look inside."""
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), "."]
    proc = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
    if proc.returncode and "setuptools>=77" in proc.stderr:  # pragma: no cover - an older setuptools in this venv
        pytest.skip("this venv's setuptools is older than the build-system's floor")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("mechrecall-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [p.as_posix() for p in files_read() if p.as_posix() not in names]
    assert not missing, f"the wheel lacks {missing}"
    assert "mechrecall/py.typed" in names and "analyses/registry.py" in names


def test_the_kept_paper_scale_runs_are_committed_not_ignored():
    """The kept runs (``analyses/measured/runs/``) are package data the report and the ledger read: a ``runs/``
    rule in ``.gitignore`` (the default output folder) once kept them out of every clone."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("analyses/measured/runs/paper-cpu-x/provenance.json", "analyses/measured/probe/cpu.json"):
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
        assert ignored.returncode == 1, f"{path} is ignored by git"
    assert subprocess.run(["git", "check-ignore", "-q", "runs/x.json"], cwd=ROOT, check=False).returncode == 0
