"""What a newcomer trips over, run as they would: the shared CLI of every experiment, files, figures."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

DEMO = [sys.executable, "-m", "analyses.induction_emergence", "--experiment", "demo", "--preset", "micro"]


def _run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)


def _one_line_error(done):
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


@pytest.mark.slow  # trains the demo in a subprocess (> 10 s)
def test_a_damaged_checkpoint_is_named_in_one_line(tmp_path):
    out = tmp_path / "o"
    first = _run([*DEMO, "--steps", "30", "--out", str(out), "--no-progress"])
    assert first.returncode == 0, first.stderr
    # a longer run resumes from the checkpoint; damage every checkpoint first
    for model in (out / "induction_emergence" / "runs" / "demo" / "checkpoints").glob("step-*/model.safetensors"):
        model.write_bytes(model.read_bytes()[:100])
    (out / "induction_emergence" / "results.json").unlink()  # so that the part runs again
    err = _one_line_error(_run([*DEMO, "--steps", "40", "--out", str(out), "--no-progress"]))
    assert "model.safetensors is unreadable" in err and "delete that folder" in err


def test_results_json_that_is_not_json_is_named(tmp_path):
    (tmp_path / "induction_emergence").mkdir()
    (tmp_path / "induction_emergence" / "results.json").write_text("{half")
    err = _one_line_error(_run([*DEMO, "--out", str(tmp_path)]))
    assert "results.json is unreadable" in err and "--fresh" in err


def test_ctrl_c_says_where_it_stopped_and_how_to_resume(tmp_path):
    # A shell without job control starts background jobs with SIGINT ignored, and Python keeps an inherited
    # SIG_IGN (no KeyboardInterrupt ever): the tests run in the background (`nohup make test &`) would then
    # hang here. The child gets the default disposition, as a command typed at a terminal has.
    proc = subprocess.Popen(
        [*DEMO, "--steps", "100000", "--out", str(tmp_path), "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert "demo: running" in proc.stdout.readline()  # training has started
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()  # never leave a 100,000-step run behind
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err and "Rerun the same command to resume" in err


@pytest.mark.parametrize("umask,file_mode,dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_written_files_follow_the_umask(tmp_path, umask, file_mode, dir_mode):
    from mechrecall.io import atomic_directory, atomic_write_json

    old = os.umask(umask)
    try:
        atomic_write_json(tmp_path / "a" / "results.json", {"x": 1})
        with atomic_directory(tmp_path / "ckpt") as folder:
            atomic_write_json(folder / "checkpoint.json", {})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a" / "results.json").stat().st_mode) == file_mode
    assert stat.S_IMODE((tmp_path / "ckpt").stat().st_mode) == dir_mode
    assert stat.S_IMODE((tmp_path / "ckpt" / "checkpoint.json").stat().st_mode) == file_mode


@pytest.mark.slow  # trains the demo in a subprocess (> 10 s)
def test_a_log_file_gets_no_progress_bar_and_a_resume_line(tmp_path):
    first = _run([*DEMO, "--steps", "30", "--out", str(tmp_path)])  # stdout/stderr are pipes, not a terminal
    assert first.returncode == 0, first.stderr
    assert "train:" not in first.stderr and "it/s" not in first.stderr  # no per-step bar in a log
    (tmp_path / "induction_emergence" / "results.json").unlink()
    # a longer run into the same runs/ folder: the part is run again and its training resumes from step 30
    again = _run([*DEMO, "--steps", "40", "--out", str(tmp_path), "--no-progress"])
    assert again.returncode == 0, again.stderr
    assert "from step 30" in again.stderr
    data = json.loads((tmp_path / "induction_emergence" / "results.json").read_text())
    assert data["parts"]["demo"]["results"]["resumed_from_step"] == 30


def test_help_texts_name_papers_not_private_documents():
    for module in ("analyses.noisy_icl", "analyses.laser_pythia", "analyses.induction_emergence"):
        done = _run([sys.executable, "-m", module, "--help"])
        assert done.returncode == 0
        text = done.stdout
        assert "``" not in text and "spec" not in text.lower() and "paper 003" not in text
        assert "Paper:" in text and "--preset" in text and "--fresh" in text
