"""The README's examples run as written (except blocks marked as needing the hub or local weights)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"(<!-- not run[^>]*-->\s*)?```python\n(.*?)```", re.S)
blocks = [code for skip, code in BLOCK.findall(README.read_text()) if not skip]


def test_readme_has_runnable_examples():
    assert len(blocks) >= 2


@pytest.mark.parametrize("code", blocks, ids=[f"block{i}" for i in range(len(blocks))])
def test_readme_example_runs(code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert out.strip()  # every example prints what it shows
    stray = [p.name for p in tmp_path.iterdir() if p.name != "runs"]
    assert stray == []  # examples write under runs/ or a temporary folder, never beside the user's files
    if 'out_dir="runs/readme"' in code:  # the trainer example checkpoints where it says
        assert (tmp_path / "runs" / "readme" / "checkpoints" / "latest.json").is_file()
