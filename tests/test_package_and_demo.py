"""The installed package as a new user meets it: imports, the pinned TL, and the main job end to end."""

import subprocess
import sys
from importlib import metadata

import pytest
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
    assert (3, 9) <= (major, minor) < (5, 0)  # 3.x's HookedTransformer or 4.x's TransformerBridge
    from mechrecall._tl import TL_MAJOR, HookedTransformer, Model

    assert major == TL_MAJOR and Model is HookedTransformer and Model.__module__.startswith("transformer_lens")
    assert Model.__name__ == ("HookedTransformer" if major == 3 else "TransformerBridge")


@pytest.mark.slow
def test_induction_demo_runs_end_to_end(tmp_path):
    """Resuming and refusing another configuration are the protocol's (tests/test_experiment_protocol.py)."""
    from analyses.induction_emergence import EXPERIMENT
    from mechrecall.claims import control_problems

    data = EXPERIMENT.run(tmp_path, preset="micro", parts=["demo"], options={"steps": 400})
    part = data["parts"]["demo"]["results"]
    final = part["final"]
    # Chance is 1/64. Measured at 400 steps, seeds 0-4: accuracy 0.946-0.953, L1 induction attention 0.85-0.87.
    assert final["accuracy"] > 0.6
    assert final["attention.L1_induction"] > 0.5
    assert part["reloaded_checkpoint_accuracy"] == final["accuracy"]
    # The head-role analysis finds the trained circuit: L0 is the previous-token head, L1 the induction head.
    roles = {(r["layer"], r["head"], r["score"]): r["value"] for r in part["head_roles"]}
    assert roles[(0, 0, "previous_token")] > roles[(1, 0, "previous_token")]
    assert roles[(1, 0, "induction")] > roles[(0, 0, "induction")]
    claims = {c["id"]: c for c in data["claims"]}
    assert claims["induction_emergence.demo.induction_accuracy"]["ours"] == final["accuracy"]
    layer1 = claims["induction_emergence.demo.induction_head_in_layer1"]
    assert layer1["verdict"] == "not comparable"  # micro: the rule is not applied, but ours clears it, the control not
    assert layer1["ours"] >= layer1["rule_spec"]["lo"] > abs(layer1["control"])
    assert control_problems(data["claims"]) == []
    assert "demo_steps 400 (preset 150)" in claims["induction_emergence.demo.induction_accuracy"]["note"]
    assert "circuits-vis" in (tmp_path / "induction_emergence" / "demo_attention_L1.html").read_text()
    assert part["config"]["steps"] == 400 and data["versions"]["torch"] == torch.__version__


def test_mechrecall_command_dispatches_to_the_experiments(tmp_path):
    (script,) = [e for e in metadata.entry_points(group="console_scripts") if e.name == "mechrecall"]
    assert script.value == "analyses.registry:main"  # the `mechrecall` command
    listed = subprocess.run(
        [sys.executable, "-m", "analyses.registry", "--help"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0 and "induction_emergence" in listed.stdout and "noisy_icl" in listed.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "analyses.registry", "induction_emergence", "--steps", "0", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "--steps 0" in bad.stderr and "Traceback" not in bad.stderr
    unknown = subprocess.run(
        [sys.executable, "-m", "analyses.registry", "fly"], capture_output=True, text=True, timeout=60
    )
    assert unknown.returncode == 2 and "unknown experiment 'fly'" in unknown.stderr
