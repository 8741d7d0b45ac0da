"""The examples of the README and docs/guide.md run as written (except blocks marked ``<!-- not run ... -->``)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README, GUIDE = ROOT / "README.md", ROOT / "docs" / "guide.md"
BLOCK = re.compile(r"(<!-- not run[^>]*-->\s*)?```python\n(.*?)```", re.S)
blocks = [(doc, code) for doc in (README, GUIDE) for skip, code in BLOCK.findall(doc.read_text()) if not skip]


def test_readme_has_runnable_examples():
    assert sum(doc == README for doc, _ in blocks) >= 1 and sum(doc == GUIDE for doc, _ in blocks) >= 2


@pytest.mark.parametrize("doc,code", blocks, ids=[f"{doc.stem}-block{i}" for i, (doc, _) in enumerate(blocks)])
def test_readme_example_runs(doc, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(doc), "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert out.strip()  # every example prints what it shows
    stray = [p.name for p in tmp_path.iterdir() if p.name != "runs"]
    assert stray == []  # examples write under runs/ or a temporary folder, never beside the user's files
    if 'out_dir="runs/readme"' in code:  # the trainer example checkpoints where it says
        assert (tmp_path / "runs" / "readme" / "checkpoints" / "latest.json").is_file()
