"""Tests of ``pretrained``: loading tiny GPT-NeoX / GPT-2 checkpoints offline and comparing with HF.

Everything runs without network: checkpoints come from ``pretrained.testing.tiny_checkpoint``;
the hub code path is exercised through a hand-made Hugging Face cache folder.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from pathlib import Path

import pytest
import torch

import pretrained
from mechrecall._tl import IS_BRIDGE
from pretrained import PYTHIA_CHECKPOINTS, PretrainedNotAvailableError, processing_of, require_raw
from pretrained.testing import EOT, tiny_checkpoint

torch.set_num_threads(1)

ARCHS = ["gpt_neox", "gpt2"]
TEXT = "Madrid is located in Spain . The Eiffel Tower is in Paris , France"
ROUND_TRIP = [
    TEXT,
    " the",
    "Madrid is located in",
    "The capital of Spain is Madrid .\nParis is in France",
    "  Michael Jordan plays basketball",
]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def dirs(tmp_path_factory) -> dict[str, Path]:
    """Tiny checkpoints: one per arch (seed 0), and a NeoX checkpoint mirror step0/ + step1000/."""
    root = tmp_path_factory.mktemp("tiny")
    out = {arch: tiny_checkpoint(root / arch, arch, seed=0) for arch in ARCHS}
    tiny_checkpoint(root / "mirror" / "step0", "gpt_neox", seed=1)
    tiny_checkpoint(root / "mirror" / "step1000", "gpt_neox", seed=2)
    out["mirror"] = root / "mirror"
    return out


@pytest.fixture(scope="session")
def hf(dirs):
    """HF's own model + tokenizer for a tiny directory (eval mode), cached per directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache: dict[Path, tuple] = {}

    def get(path: Path):
        if path not in cache:
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
            cache[path] = (model, AutoTokenizer.from_pretrained(path, local_files_only=True))
        return cache[path]

    return get


@pytest.fixture
def no_network(monkeypatch) -> list[tuple]:
    """Opening a connection or resolving a host name fails at once; returns the list of attempts."""
    attempts: list[tuple] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access attempted during a test that must stay offline")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


@pytest.fixture
def empty_hub(monkeypatch, tmp_path):
    """Offline mode with an empty Hugging Face cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    return tmp_path / "hf" / "hub"


def hf_W_in(hf_model, layer: int = 0) -> torch.Tensor:
    """HF's MLP input weight as ``[d_model, d_mlp]`` (TL's ``W_in`` layout)."""
    if hasattr(hf_model, "gpt_neox"):
        return hf_model.gpt_neox.layers[layer].mlp.dense_h_to_4h.weight.T
    return hf_model.transformer.h[layer].mlp.c_fc.weight  # Conv1D: already [in, out]


def max_logprob_diff(model, hf_model, ids: torch.Tensor) -> float:
    with torch.no_grad():
        ours = model(ids).log_softmax(-1)
        ref = hf_model(ids).logits.log_softmax(-1)
    return (ours.double() - ref.double()).abs().max().item()


# --------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("processing", ["raw", "tl"])
@pytest.mark.parametrize("arch", ARCHS)
def test_logprobs_match_hf(dirs, hf, arch, processing):
    """Log-probs over the vocab at every position agree with HF's model to 1e-4, both processings
    (logits are not compared: "tl"'s center_unembed shifts them by a per-position constant)."""
    model = pretrained.load(dirs[arch], processing=processing)
    hf_model, tok = hf(dirs[arch])
    ids = torch.tensor([tok.encode(TEXT)])
    diff = max_logprob_diff(model, hf_model, ids)
    print(f"{arch} {processing}: max |dlogprob| = {diff:.2e}")
    assert diff < 1e-4
    # and the distribution is far from uniform, so the comparison is not vacuous
    with torch.no_grad():
        assert hf_model(ids).logits.log_softmax(-1).std(-1).min() > 0.5


@pytest.mark.parametrize("arch", ARCHS)
def test_raw_keeps_weights_tl_folds_them(dirs, hf, arch):
    """raw: W_in is HF's exactly; tl: LayerNorm folding changed it. Processing is recorded."""
    hf_model, _ = hf(dirs[arch])
    raw = pretrained.load(dirs[arch], processing="raw")
    tl = pretrained.load(dirs[arch], processing="tl")
    assert torch.equal(raw.blocks[0].mlp.W_in, hf_W_in(hf_model))
    assert not torch.allclose(tl.blocks[0].mlp.W_in, hf_W_in(hf_model), atol=1e-3)
    assert raw.cfg.normalization_type == "LN" and tl.cfg.normalization_type == "LNPre"

    assert raw.cfg.mechrecall_processing == "raw" and processing_of(raw) == "raw"
    assert tl.cfg.mechrecall_processing == "tl" and processing_of(tl) == "tl"
    assert raw.cfg.mechrecall_source == str(dirs[arch]) and raw.cfg.mechrecall_checkpoint is None

    require_raw(raw, "low-rank truncation of W_in")  # fine
    with pytest.raises(ValueError, match="low-rank truncation of W_in") as err:
        require_raw(tl, "low-rank truncation of W_in")
    assert "processing='raw'" in str(err.value) and str(dirs[arch]) in str(err.value)


def test_processing_of_unrecorded_model():
    """A model not loaded by pretrained.load: unknown processing, and taken as-is by require_raw."""
    from mechrecall._tl import make_model_config, new_model

    model = new_model(make_model_config(dict(n_layers=1, d_model=8, n_ctx=4, d_head=2, act_fn="relu", d_vocab=5)))
    assert processing_of(model) is None
    require_raw(model, "anything")
    # ... unless it is visibly a converted pretrained model with folded LayerNorm
    model.cfg.original_architecture, model.cfg.normalization_type = "GPT2LMHeadModel", "LNPre"
    with pytest.raises(ValueError, match="folded LayerNorm"):
        require_raw(model, "anything")


def test_dtype(dirs, hf):
    """float64 loads in float64 (and still matches HF); bfloat16 / torch dtypes are accepted."""
    hf_model, tok = hf(dirs["gpt_neox"])
    model = pretrained.load(dirs["gpt_neox"], dtype="float64", processing="raw")
    assert model.W_E.dtype == torch.float64 and model.cfg.dtype == torch.float64
    ids = torch.tensor([tok.encode(TEXT)])
    with torch.no_grad():
        ours = model(ids).log_softmax(-1)
        ref = hf_model(ids).logits.double().log_softmax(-1)
    assert (ours - ref).abs().max() < 1e-4
    assert pretrained.load(dirs["gpt2"], dtype=torch.bfloat16).W_E.dtype == torch.bfloat16


# --------------------------------------------------------------------------- tokenizer


@pytest.mark.parametrize("arch", ARCHS)
def test_tokenization(dirs, hf, arch):
    """Exact round trips; " the" is one token; to_tokens(prepend_bos=False) == HF's ids."""
    model = pretrained.load(dirs[arch], processing="raw")
    _, tok = hf(dirs[arch])
    for text in ROUND_TRIP:
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert model.to_tokens(text, prepend_bos=False)[0].tolist() == ids
        assert model.to_string(model.to_tokens(text, prepend_bos=False)[0]) == text
    assert len(tok.encode(" the")) == 1 and tok.convert_ids_to_tokens(tok.encode(" the")) == ["Ġthe"]
    assert tok.convert_ids_to_tokens(tok.encode("Madrid is located in")) == ["Madrid", "Ġis", "Ġlocated", "Ġin"]
    assert tok.encode(" Zanzibar") == [tok.convert_tokens_to_ids(EOT)] == [0]  # unknown -> <|endoftext|>
    # TL's prepend_bos default follows the architecture (Pythia: no BOS; GPT-2: BOS)
    first = model.to_tokens("Madrid")[0, 0].item()
    assert (first == 0) == (arch == "gpt2")


def test_tiny_checkpoint_is_deterministic_and_nontrivial(tmp_path):
    from safetensors.torch import load_file

    a = load_file(tiny_checkpoint(tmp_path / "a", "gpt_neox", seed=3) / "model.safetensors")
    b = load_file(tiny_checkpoint(tmp_path / "b", "gpt_neox", seed=3) / "model.safetensors")
    c = load_file(tiny_checkpoint(tmp_path / "c", "gpt_neox", seed=4) / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["gpt_neox.embed_in.weight"], c["gpt_neox.embed_in.weight"])
    ln_w = a["gpt_neox.layers.0.input_layernorm.weight"]
    ln_b = a["gpt_neox.layers.0.input_layernorm.bias"]
    assert (ln_w - 1).abs().max() > 0.2 and ln_b.abs().max() > 0.1  # folding is not a no-op
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["architectures"] == ["GPTNeoXForCausalLM"] and cfg["use_parallel_residual"] is True


# --------------------------------------------------------------------------- local directories


def test_local_load_makes_no_network_call(dirs, no_network, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # even in online mode
    for arch in ARCHS:
        for processing in ("raw", "tl"):
            assert pretrained.load(dirs[arch], processing=processing).tokenizer is not None
    assert no_network == []


def test_checkpoint_mirror(dirs, hf):
    """checkpoint=N on a dir with step{N}/ subfolders loads that subfolder."""
    mirror = dirs["mirror"]
    m0 = pretrained.load(mirror, checkpoint=0, processing="raw")
    m1000 = pretrained.load(str(mirror), checkpoint=1000, processing="raw")
    assert torch.equal(m0.blocks[0].mlp.W_in, hf_W_in(hf(mirror / "step0")[0]))
    assert torch.equal(m1000.blocks[0].mlp.W_in, hf_W_in(hf(mirror / "step1000")[0]))
    assert not torch.allclose(m0.blocks[0].mlp.W_in, m1000.blocks[0].mlp.W_in)
    assert m1000.cfg.mechrecall_checkpoint == 1000 and m1000.cfg.checkpoint_value == 1000

    with pytest.raises(ValueError, match=r"checkpoint=500.*available: \[0, 1000\]"):
        pretrained.load(mirror, checkpoint=500)
    with pytest.raises(ValueError, match="checkpoint=N"):
        pretrained.load(mirror)
    with pytest.raises(ValueError, match=r"step\{N\}"):
        pretrained.load(dirs["gpt_neox"], checkpoint=0)


def test_unsupported_architecture(tmp_path):
    from transformers import LlamaConfig

    LlamaConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        architectures=["LlamaForCausalLM"],
    ).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"LlamaForCausalLM.*GPTNeoXForCausalLM.*GPT2LMHeadModel"):
        pretrained.load(tmp_path)


def test_gpt2_dir_without_n_ctx(dirs, hf, tmp_path):
    """transformers-5 GPT-2 configs may lack n_ctx (TL's converter reads it); we use n_positions."""
    d = tmp_path / "gpt2"
    shutil.copytree(dirs["gpt2"], d)
    cfg = json.loads((d / "config.json").read_text())
    cfg.pop("n_ctx")
    (d / "config.json").write_text(json.dumps(cfg))
    model = pretrained.load(d)
    hf_model, tok = hf(dirs["gpt2"])
    assert model.cfg.n_ctx == 64
    assert max_logprob_diff(model, hf_model, torch.tensor([tok.encode(TEXT)])) < 1e-4


@pytest.mark.skipif(
    IS_BRIDGE,
    reason="TL 4 has no convert_hf_model_config (TL 3's loader); the mapping is checked "
    "on both majors by test_config_mapping_builds_the_hf_model",
)
@pytest.mark.parametrize("arch", ARCHS)
def test_config_mapping_agrees_with_tl(dirs, arch):
    """Our HF->TL config mapping gives what TL's own convert_hf_model_config gives."""
    from transformer_lens.loading_from_pretrained import convert_hf_model_config
    from transformers import AutoConfig

    from pretrained import _local

    theirs = convert_hf_model_config(str(dirs[arch]))
    hf_cfg = AutoConfig.from_pretrained(dirs[arch], local_files_only=True)
    ours = _local.tl_config_dict(hf_cfg, _local.architecture_of(hf_cfg, dirs[arch]))
    assert set(theirs) - set(ours) <= {"quantization_method", "tokenizer_name"}
    assert {k: ours[k] for k in theirs if k in ours} == {k: theirs[k] for k in theirs if k in ours}


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
def test_config_mapping_builds_the_hf_model(dirs, hf, arch):
    """A TL model built from our HF->TL config mapping (``new_model``: TL 3's HookedTransformer, TL 4's native
    bridge, what a mini series trains and untrained_like initialises), given the checkpoint's weights by TL name,
    computes HF's log-probs: sizes, rotary dims and base, parallel residual, activation and eps are the model's."""
    from transformers import AutoConfig

    from mechrecall._tl import load_tl_state_dict, make_model_config, new_model, tl_parameters, tl_state_dict
    from pretrained import _local

    hf_cfg = AutoConfig.from_pretrained(dirs[arch], local_files_only=True)
    fields = _local.tl_config_dict(hf_cfg, _local.architecture_of(hf_cfg, dirs[arch]))
    built = new_model(make_model_config({**fields, "seed": 0}))
    state = tl_state_dict(pretrained.load(dirs[arch], processing="raw"))
    for name, value in tl_parameters(built).items():  # a bias HF's model lacks (TL 4's native b_U) is zero
        state.setdefault(name, torch.zeros_like(value))
    load_tl_state_dict(built, state)
    hf_model, tok = hf(dirs[arch])
    assert max_logprob_diff(built.eval(), hf_model, torch.tensor([tok.encode(TEXT)])) < 1e-4


@pytest.mark.parametrize("processing", ["raw", "tl"])
@pytest.mark.parametrize("arch", ARCHS)
def test_untrained_like(dirs, hf, arch, processing):
    """The control model: the loaded model's kind, config, tokenizer, processing record and hook names; seeded
    (the global RNG untouched); weights unlike the checkpoint's; raw for a GPT-NeoX it is TL's initialisation of the
    config (the step 0 of a mini series), as ``new_model`` draws it."""
    from transformers import AutoConfig

    from mechrecall._tl import make_model_config, new_model, tl_parameters
    from pretrained import _local

    model = pretrained.load(dirs[arch], processing=processing)
    rng = torch.random.get_rng_state()
    a, b, c = (pretrained.untrained_like(model, seed) for seed in (0, 0, 1))
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert type(a) is type(model) and a.tokenizer is model.tokenizer and not a.training
    assert a.cfg.normalization_type == model.cfg.normalization_type and processing_of(a) == processing
    ours, same, other, trained = (tl_parameters(m) for m in (a, b, c, model))
    assert set(ours) == set(trained) and all(torch.equal(ours[k], same[k]) for k in ours)
    assert not torch.equal(ours["blocks.0.mlp.W_in"], other["blocks.0.mlp.W_in"])
    assert not torch.allclose(ours["blocks.0.mlp.W_in"], trained["blocks.0.mlp.W_in"], atol=1e-2)
    ids = torch.tensor([hf(dirs[arch])[1].encode(TEXT)])
    _, cache = a.run_with_cache(ids)
    assert cache["blocks.1.attn.hook_pattern"].shape[-1] == ids.shape[1]
    if arch == "gpt_neox" and processing == "raw":
        hf_cfg = AutoConfig.from_pretrained(dirs[arch], local_files_only=True)
        fields = _local.tl_config_dict(hf_cfg, "GPTNeoXForCausalLM")
        init = tl_parameters(new_model(make_model_config({**fields, "seed": 0, "init_weights": True})))
        for name, value in ours.items():
            torch.testing.assert_close(value, init[name], rtol=0, atol=0, msg=name)


# --------------------------------------------------------------------------- hub names, offline


@pytest.fixture
def no_waiting(monkeypatch):
    """Every ``time.sleep`` (a hub client's retry back-off) recorded instead of waited for."""
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    return waits


def test_offline_uncached_name_fails_fast(empty_hub, no_network, no_waiting):
    with pytest.raises(PretrainedNotAvailableError) as err:
        pretrained.load("pythia-70m", checkpoint=1000)
    assert no_waiting == []  # no retry was waited for
    msg = str(err.value)
    assert isinstance(err.value, OSError)
    assert "not available offline" in msg and "EleutherAI/pythia-70m" in msg
    assert 'pretrained.load("/path/to/hf_dir", checkpoint=1000)' in msg
    assert 'revision="step1000").save_pretrained(' in msg and "AutoTokenizer" in msg
    assert len(msg.splitlines()) < 10 and no_network == []


def test_load_or_why_names_the_missing_weights_and_loads_what_is_here(empty_hub, no_network, dirs):
    model, why = pretrained.load_or_why("pythia-70m", checkpoint=1000)
    assert model is None and why.startswith("no weights: ") and "\n" not in why
    assert "pythia-70m" in why and no_network == []
    model, why = pretrained.load_or_why(dirs["gpt_neox"], processing="raw")
    assert why == "" and model is not None and model.cfg.n_layers >= 1


def test_unreachable_hub_fails_fast(empty_hub, no_network, no_waiting, monkeypatch):
    """Online mode, no network, not cached: the endpoint probe fails, so no hub retries are waited for."""
    from pretrained import _hub

    monkeypatch.setattr(_hub, "hub_offline", lambda: False)
    with pytest.raises(PretrainedNotAvailableError, match="can't be reached") as err:
        pretrained.load("gpt2")
    assert no_waiting == []
    assert 'pretrained.load("/path/to/hf_dir")' in str(err.value)


def test_hub_failure_inside_transformers_is_reraised_concisely(empty_hub, no_network, monkeypatch):
    """If the hub fails only inside transformers/TL, the error is re-raised short, keeping its cause.
    (huggingface_hub is put offline so that its failure is immediate, without retries.)"""
    import huggingface_hub.constants

    from pretrained import _hub

    monkeypatch.setattr(_hub, "hub_offline", lambda: False)
    monkeypatch.setattr(_hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PretrainedNotAvailableError) as err:
        pretrained.load("gpt2")
    assert isinstance(err.value.__cause__, OSError)  # the chain is kept for whoever needs it
    assert "could not be used" in str(err.value) and 'pretrained.load("/path/to/hf_dir")' in str(err.value)
    assert len(str(err.value).splitlines()) < 10


def test_a_local_disk_error_is_not_reported_as_unavailable(empty_hub, no_network, monkeypatch):
    """Disk full while loading is this machine's problem: it surfaces as the OSError it is."""
    import errno

    import transformers

    from pretrained import _hub

    monkeypatch.setattr(_hub, "hub_offline", lambda: False)
    monkeypatch.setattr(_hub, "hub_reachable", lambda timeout=3.0: True)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", disk_full)
    with pytest.raises(OSError) as err:
        pretrained.load("gpt2")
    assert not isinstance(err.value, PretrainedNotAvailableError) and err.value.errno == errno.ENOSPC


def _put_in_hub_cache(cache: Path, repo: str, revision: str, src: Path, commit: str) -> None:
    """Lay ``src`` out as huggingface_hub's cache does: refs/<revision> -> snapshots/<commit>/."""
    base = cache / ("models--" + repo.replace("/", "--"))
    (base / "refs").mkdir(parents=True, exist_ok=True)
    (base / "refs" / revision).write_text(commit)
    shutil.copytree(src, base / "snapshots" / commit)


def test_hub_names_load_from_cache_through_tl(dirs, hf, empty_hub, no_network):
    """The name path (TL's from_pretrained, checkpoint_value -> revision step{N}) on a cache that
    holds tiny models under Pythia's and GPT-2's hub ids."""
    _put_in_hub_cache(empty_hub, "EleutherAI/pythia-70m", "main", dirs["mirror"] / "step0", "a" * 40)
    _put_in_hub_cache(empty_hub, "EleutherAI/pythia-70m", "step1000", dirs["mirror"] / "step1000", "b" * 40)
    _put_in_hub_cache(empty_hub, "gpt2", "main", dirs["gpt2"], "c" * 40)

    raw = pretrained.load("pythia-70m", checkpoint=1000, processing="raw")
    assert torch.equal(raw.blocks[0].mlp.W_in, hf_W_in(hf(dirs["mirror"] / "step1000")[0]))
    assert raw.cfg.checkpoint_value == 1000 and raw.cfg.mechrecall_checkpoint == 1000
    assert raw.cfg.mechrecall_source == "pythia-70m" and processing_of(raw) == "raw"
    main = pretrained.load("EleutherAI/pythia-70m", processing="raw")
    assert torch.equal(main.blocks[0].mlp.W_in, hf_W_in(hf(dirs["mirror"] / "step0")[0]))

    gpt2 = pretrained.load("gpt2", processing="tl")
    hf_model, tok = hf(dirs["gpt2"])
    assert processing_of(gpt2) == "tl" and gpt2.tokenizer is not None
    assert max_logprob_diff(gpt2, hf_model, torch.tensor([tok.encode(TEXT)])) < 1e-4

    with pytest.raises(PretrainedNotAvailableError, match="step2000"):  # revision not cached
        pretrained.load("pythia-70m", checkpoint=2000)
    assert no_network == []  # offline: local_files_only everywhere


def test_cached_name_loads_when_hub_unreachable(dirs, empty_hub, no_network, monkeypatch):
    """Online mode (no HF_HUB_OFFLINE) without network: a cached model still loads, from the cache."""
    from pretrained import _hub

    _put_in_hub_cache(empty_hub, "gpt2", "main", dirs["gpt2"], "c" * 40)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(_hub, "hub_offline", lambda: False)
    assert not _hub.hub_reachable()
    assert processing_of(pretrained.load("gpt2", processing="raw")) == "raw"


# --------------------------------------------------------------------------- argument checks


def test_unknown_name_suggests_close_matches(empty_hub):
    with pytest.raises(ValueError, match="pythia-70m") as err:
        pretrained.load("pythia-70")
    assert "neither an existing directory nor" in str(err.value)
    with pytest.raises(ValueError, match="'gpt2'"):
        pretrained.load("gtp2")


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(processing="folded"), "processing='folded'"),
        (dict(processing=None), "processing=None"),
        (dict(dtype="float8"), "dtype='float8'"),
        (dict(dtype=torch.int64), "dtype=torch.int64"),
        (dict(checkpoint=1500), r"checkpoint=1500 .*154 steps: 0, 1, 2, 4.*143000"),
        (dict(checkpoint=-1), "checkpoint=-1"),
        (dict(checkpoint=True), "checkpoint=True"),
        (dict(checkpoint="step1000"), "checkpoint='step1000'"),
    ],
)
def test_bad_arguments_fail_before_any_download(empty_hub, no_network, kwargs, pattern):
    """With an empty cache offline, reaching the download would raise PretrainedNotAvailableError:
    a ValueError proves the check comes first."""
    with pytest.raises(ValueError, match=pattern):
        pretrained.load("pythia-70m", **kwargs)


def test_checkpoint_only_for_pythia(empty_hub):
    with pytest.raises(ValueError, match=r"checkpoint=1000 given for 'gpt2'.*only Pythia"):
        pretrained.load("gpt2", checkpoint=1000)
    with pytest.raises(ValueError, match=r"checkpoint=512 .* 143 steps"):  # v0 has no early steps
        pretrained.load("pythia-70m-v0", checkpoint=512)


def test_pythia_checkpoints_match_tl():
    from mechrecall._tl import tl_pythia_checkpoints

    assert len(PYTHIA_CHECKPOINTS) == 154 and list(PYTHIA_CHECKPOINTS) == tl_pythia_checkpoints()


def test_tiny_checkpoint_rejects_bad_arguments_before_writing(tmp_path):
    from pretrained.testing import tiny_checkpoint

    with pytest.raises(ValueError, match="arch='llama'"):
        tiny_checkpoint(tmp_path / "x", arch="llama")
    with pytest.raises(ValueError, match="n_heads=5"):
        tiny_checkpoint(tmp_path / "x", d_model=32, n_heads=5)
    assert not (tmp_path / "x").exists()
