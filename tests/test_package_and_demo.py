"""The installed package as a new user meets it: imports, the pinned TL, and the main job end to end."""
import json
import subprocess
import sys
from importlib import metadata

import torch


def test_layout_imports_and_tl_pin():
    import analyses
    import hooks
    import pretrained
    from mechrecall import analyses as via_core
    from mechrecall import hooks as hooks_via_core
    from mechrecall import pretrained as pretrained_via_core

    assert via_core is analyses and hooks_via_core is hooks and pretrained_via_core is pretrained
    major, minor = (int(x) for x in metadata.version("transformer-lens").split(".")[:2])
    assert (3, 9) <= (major, minor) < (4, 0)  # 4.x removed HookedTransformer
    from mechrecall._tl import HookedTransformer

    assert HookedTransformer.__module__.startswith("transformer_lens")


def test_main_job_runs_end_to_end_and_resumes(tmp_path):
    out = tmp_path / "demo"
    cmd = [sys.executable, "-m", "mechrecall", "demo", "--out", str(out), "--steps", "400", "--no-progress"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    data = json.loads((out / "results.json").read_text())
    final = data["results"]["final"]
    # Chance is 1/64. Measured at 400 steps, seeds 0-4: accuracy 0.946-0.953, L1 induction attention 0.85-0.87.
    assert final["accuracy"] > 0.6
    assert final["attention.L1_induction"] > 0.5
    assert data["results"]["reloaded_checkpoint_accuracy"] == final["accuracy"]
    assert (out / "training.png").stat().st_size > 10_000
    # The head-role analysis finds the trained circuit: L0 is the previous-token head, L1 the induction head.
    roles = {(r["layer"], r["head"], r["score"]): r["value"] for r in data["results"]["head_roles"]}
    assert roles[(0, 0, "previous_token")] > roles[(1, 0, "previous_token")]
    assert roles[(1, 0, "induction")] > roles[(0, 0, "induction")]
    assert "circuits-vis" in (out / "attention_L1.html").read_text() and (out / "head_roles.png").exists()
    assert data["config"]["steps"] == 400 and data["versions"]["torch"] == torch.__version__
    # Re-running with more steps resumes from the last checkpoint instead of starting over.
    second = subprocess.run(cmd[:-3] + ["--steps", "450", "--no-progress"], capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert json.loads((out / "results.json").read_text())["results"]["resumed_from_step"] == 400


def test_main_job_rejects_bad_arguments(tmp_path):
    bad = subprocess.run([sys.executable, "-m", "mechrecall", "demo", "--steps", "0", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "--steps=0" in bad.stderr
    unknown = subprocess.run([sys.executable, "-m", "mechrecall", "fly"], capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "unknown command 'fly'" in unknown.stderr
