"""The two TransformerLens majors against each other: a toy model of one config and seed has the same weights on
both, and a checkpoint written under one loads under the other with the same logits.

The other major runs in a process of its own (one process imports one TransformerLens): the Python of the other
environment is ``$MECHRECALL_OTHER_TL_PYTHON``, else whichever of the repository's ``.venv`` / ``.venv4`` has the
other major. Without one the tests skip, saying so (CI builds ``.venv`` first, so they run in its 4.x pass)."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mechrecall import LinearFeedForward, PermanentHook, SetWeight, ZeroBiases, build_toy_model, load_model
from mechrecall._tl import TL_MAJOR, tl_state_dict

REPO = Path(__file__).resolve().parents[1]
CFG = dict(
    n_layers=2, n_heads=2, d_model=16, d_head=8, d_mlp=32, d_vocab=11, n_ctx=8, act_fn="relu", normalization_type="LN"
)
SURGERIES = [
    ZeroBiases(),
    SetWeight(("blocks.0.attn.W_Q",), "normal", scale=0.3, freeze=False),
    LinearFeedForward((1,)),
    PermanentHook("strict_causal_mask", {"layers": [1]}),
]
TOKENS = torch.randint(0, 11, (3, 8), generator=torch.Generator().manual_seed(0))

# Run by the other major: the untrained model's weights, and a "trained" model's checkpoint and logits.
WRITER = textwrap.dedent(
    """
    import sys, torch
    from safetensors.torch import save_file
    from mechrecall import build_toy_model, save_checkpoint
    from mechrecall._tl import TL_MAJOR, tl_parameter, tl_state_dict
    from tests.test_tl_majors import CFG, SURGERIES, TOKENS
    out = sys.argv[1]
    model = build_toy_model(CFG, SURGERIES, seed=3)
    save_file({k: v.contiguous() for k, v in tl_state_dict(model).items()}, out + "/untrained.safetensors")
    with torch.no_grad():
        tl_parameter(model, "blocks.1.mlp.W_F").normal_(generator=torch.Generator().manual_seed(1))
        tl_parameter(model, "blocks.0.attn.W_K").mul_(2.0)
    save_checkpoint(out + "/ckpt", model)
    save_file({"logits": model(TOKENS).detach()}, out + "/logits.safetensors")
    print(TL_MAJOR)
    """
)


def other_major_python() -> str | None:
    """A Python whose TransformerLens is the other major, or ``None``."""
    candidates = [os.environ.get("MECHRECALL_OTHER_TL_PYTHON", "")] + [
        str(REPO / venv / "bin" / "python") for venv in (".venv", ".venv4")
    ]
    for python in filter(None, candidates):
        if not Path(python).is_file():
            continue
        probe = "import importlib.metadata as m; print(m.version('transformer-lens').split('.')[0])"
        out = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
        if out.returncode == 0 and out.stdout.strip().isdigit() and int(out.stdout) != TL_MAJOR:
            return python
    return None


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    python = other_major_python()
    if python is None:
        pytest.skip("no environment with the other TransformerLens major (set MECHRECALL_OTHER_TL_PYTHON)")
    out = tmp_path_factory.mktemp("other-major")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [python, "-c", WRITER, str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) != TL_MAJOR
    return out


def test_one_config_and_seed_give_the_same_weights_on_both_majors(written):
    theirs = load_file(str(written / "untrained.safetensors"))
    ours = tl_state_dict(build_toy_model(CFG, SURGERIES, seed=3))
    weights = {k for k in ours if not k.endswith(("mask", "IGNORE"))}  # 3.x also keeps its attention buffers
    assert weights == {k for k in theirs if not k.endswith(("mask", "IGNORE"))}
    for name in sorted(weights):
        assert torch.equal(ours[name], theirs[name]), name


def test_a_checkpoint_of_the_other_major_loads_with_its_logits(written):
    model = load_model(written / "ckpt")
    expected = load_file(str(written / "logits.safetensors"))["logits"]
    # The same weights computed by the other major's code: equal up to float32 rounding.
    torch.testing.assert_close(model(TOKENS), expected, rtol=0, atol=1e-5)
    _, cache = model.run_with_cache(TOKENS)
    assert not cache["blocks.1.attn.hook_pattern"].diagonal(dim1=-2, dim2=-1).any()  # the permanent hook came back
