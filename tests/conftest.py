"""Shared test set-up: shapes checked at run time, one CPU thread (tiny models run far faster), no hub access."""

import os

from jaxtyping import install_import_hook

# Every jaxtyping annotation of the project's packages is checked when the function is called (beartype, through
# tests/shape_checker.py), so a Float[Tensor, "batch pos d_model"] that receives the wrong shape fails the test
# that passed it. This must run before any of those packages is imported.
install_import_hook(["mechrecall", "hooks", "analyses", "pretrained"], "shape_checker.check")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# a claim's notes / words function that fails on a measured claim raises in the tests (mechrecall.claims.STRICT_ENV)
os.environ.setdefault("MECHRECALL_STRICT_CLAIMS", "1")

import matplotlib

matplotlib.use("Agg")

import torch

torch.set_num_threads(1)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tl3_only(reason): needs TransformerLens 3.x (a HookedTransformer); skipped on 4.x with the reason given",
    )


def pytest_collection_modifyitems(config, items):
    """Skip the ``tl3_only`` tests on TransformerLens 4.x, each with its reason (README: "Two TransformerLens
    majors" counts them)."""
    from mechrecall._tl import IS_BRIDGE, TL_VERSION

    if not IS_BRIDGE:
        return
    for item in items:
        marker = item.get_closest_marker("tl3_only")
        if marker is not None:
            why = marker.args[0] if marker.args else "needs TransformerLens 3.x"
            item.add_marker(pytest.mark.skip(reason=f"transformer-lens {TL_VERSION}: {why}"))


# ------------------------------------------------------------------ models shared by the analysis tests

import pytest

ANY_MODEL = ["toy", "gpt_neox", "gpt2"]


@pytest.fixture
def without_shape_checks():
    """For tests of the library's own shape validation (the ValueError a user without the checker sees):
    the run-time shape checker is off for the test."""
    import jaxtyping

    jaxtyping.config.update("jaxtyping_disable", True)
    yield
    jaxtyping.config.update("jaxtyping_disable", False)


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    """Tiny ``save_pretrained`` checkpoints (GPT-NeoX and GPT-2), built once per session."""
    from pretrained.testing import tiny_checkpoint

    root = tmp_path_factory.mktemp("tiny-analysis")
    return {arch: tiny_checkpoint(root / arch, arch, seed=0) for arch in ("gpt_neox", "gpt2")}


def make_toy_model(seed: int = 0):
    """A small toy model with MLPs, LayerNorm and biases: every matrix kind exists."""
    from mechrecall.builder import build_toy_model

    return build_toy_model(
        dict(
            n_layers=2,
            n_heads=2,
            d_model=16,
            d_head=8,
            d_mlp=32,
            d_vocab=24,
            n_ctx=32,
            act_fn="gelu",
            normalization_type="LN",
        ),
        [],
        seed=seed,
    )


@pytest.fixture(params=ANY_MODEL)
def any_model(request, tiny_dirs):
    """The same analysis runs on a toy model and on tiny pretrained checkpoints (raw weights)."""
    import pretrained

    if request.param == "toy":
        return make_toy_model()
    return pretrained.load(str(tiny_dirs[request.param]), processing="raw")


@pytest.fixture(scope="session")
def mini_series(tmp_path_factory):
    """The ``tiny`` mini pretraining (``python -m pretrained.mini --preset tiny``), run once per session."""
    from pretrained.mini import pretrain

    return pretrain(tmp_path_factory.mktemp("mini") / "tiny", "tiny", seed=0, progress=False)
