"""What makes the pretrained parts fit a real model's size, checked on tiny checkpoints against independent
computations: batched prompts against the Hugging Face model's own logits one prompt at a time, a forward resumed at
the edited block against the whole forward, bf16 / fp16 probability rows against fp32, the real shapes' parameter
counts against the published ones. (Speed and memory are measured in benchmarks/bench_pretrained_shapes.py.)"""

from __future__ import annotations

import json

import pytest
import torch

import pretrained
from analyses.laser_pythia import main
from analyses.lowrank import laser_sweep
from analyses.papers.distributional.data.prompts import FACTUAL_20, MADRID, prompt_vocab
from analyses.papers.distributional.pretrained import Options, PromptBatch, next_token_probs
from hooks import low_rank
from mechrecall._tl import IS_BRIDGE
from mechrecall.progress import LogLines
from pretrained.testing import REAL_SHAPES, n_params, real_shape_checkpoint, tiny_checkpoint

TEXTS = [MADRID.prompt, *[p.prompt for p in FACTUAL_20[:7]]]  # several lengths


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    return {
        arch: tiny_checkpoint(root / arch, arch, vocab=prompt_vocab(), seed=5, n_layers=4)
        for arch in ("gpt_neox", "gpt2")
    }


@pytest.fixture(scope="module")
def models(dirs):
    return {arch: pretrained.load(path, processing="raw") for arch, path in dirs.items()}


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
def test_batched_prompts_match_the_hf_model_prompt_by_prompt(dirs, models, arch):
    """One right-padded batch gives each prompt the distribution HF's model gives it alone."""
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(dirs[arch], local_files_only=True).eval()
    model = models[arch]
    probs = next_token_probs(model, TEXTS, Options())
    assert len({len(model.to_tokens(t, prepend_bos=False)[0]) for t in TEXTS}) > 2  # the batch really pads
    for row, text in zip(probs, TEXTS):
        tokens = model.to_tokens(text, prepend_bos=False)
        with torch.no_grad():
            expected = hf(tokens).logits[0, -1].float().softmax(-1)
        torch.testing.assert_close(row, expected, atol=2e-6, rtol=1e-4)


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
def test_a_forward_resumed_at_the_edited_block_is_the_whole_forward(models, arch):
    model = models[arch]
    batch = PromptBatch(model, TEXTS, Options())
    for layer, rho in ((2, 0.25), (2, 0.5), (3, 0.0), (1, 0.1)):
        with low_rank(model, layer, "mlp_in", rho):
            resumed = batch.probs(model, from_layer=layer)
            whole = PromptBatch(model, TEXTS, Options()).probs(model)
        torch.testing.assert_close(resumed, whole, atol=1e-6, rtol=1e-5)
    cached = [r for r in batch._residual.values() if r is not None]
    assert (len(cached) == 0) if IS_BRIDGE else (len(cached) == 3)  # 3.x: one residual per block asked for


def test_a_sweep_resuming_at_each_block_finds_the_same_table(models):
    model = models["gpt_neox"]
    batch = PromptBatch(model, TEXTS, Options())
    answer = model.to_single_token(" Spain")

    def whole(m):
        return float(next_token_probs(m, TEXTS, Options())[:, answer].mean())

    def resumed(m, from_layer):
        return float(batch.probs(m, from_layer)[:, answer].mean())

    kw = dict(layers=[1, 2, 3], matrices=["mlp_in", "mlp_out"], rhos=[0.0, 0.1, 0.5, 1.0])
    a = laser_sweep(model, whole, **kw)
    b = laser_sweep(model, resumed, from_layer=True, **kw)
    assert a.n_svd == b.n_svd == 6
    assert a.table[["layer", "matrix", "rho"]].equals(b.table[["layer", "matrix", "rho"]])
    torch.testing.assert_close(torch.tensor(b.table["value"].values), torch.tensor(a.table["value"].values))


#: Tolerances of the half-precision probability rows, in absolute probability (tiny random models put up to
#: ~0.3 on one token; bf16 keeps 8 bits of mantissa, fp16 11).
HALF_TOLERANCE = {"bfloat16": 0.03, "float16": 0.005}


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_probability_rows_are_close_to_fp32(dirs, models, arch, dtype):
    half = pretrained.load(dirs[arch], processing="raw", dtype=dtype)
    assert half.W_in.dtype == getattr(torch, dtype)
    full = next_token_probs(models[arch], TEXTS, Options())
    rows = next_token_probs(half, TEXTS, Options(dtype=dtype))
    assert rows.dtype == torch.float32 and torch.allclose(rows.sum(-1), torch.ones(len(TEXTS)), atol=1e-5)
    err = (rows - full).abs().max().item()
    assert err < HALF_TOLERANCE[dtype], f"{dtype}: max |p - p_fp32| = {err:.4f}"
    assert err > 0  # the rows really come from the half-precision weights
    # the same prompts' top token agrees wherever fp32's is clear (a margin over the runner-up above the tolerance)
    top2 = full.topk(2, -1).values
    clear = (top2[:, 0] - top2[:, 1]) > 2 * HALF_TOLERANCE[dtype]
    assert torch.equal(rows.argmax(-1)[clear], full.argmax(-1)[clear])


def test_the_factual_part_in_bf16_matches_fp32_within_the_tolerance(dirs, tmp_path):
    def run(dtype):
        out = tmp_path / dtype
        args = ["--experiment", "factual", "--model", str(dirs["gpt_neox"]), "--layer", "3", "--rho", "0.25"]
        assert main([*args, "--dtype", dtype, "--out", str(out), "--no-progress"]) == 0
        data = json.loads((out / "laser_pythia" / "results.json").read_text())
        return data["parts"]["factual"]["results"]["results"][str(dirs["gpt_neox"])]["final"]

    full, half = run("float32"), run("bfloat16")
    for variant in ("full", "laser"):
        for key in ("p_answer", "p_the"):
            assert half[variant][key] == pytest.approx(full[variant][key], abs=HALF_TOLERANCE["bfloat16"])


def test_a_bad_dtype_is_one_line_naming_it(dirs, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--experiment", "factual", "--model", str(dirs["gpt_neox"]), "--dtype", "int8"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err) and "'int8'" in err[-1] and "bfloat16" in err[-1]


def test_log_lines_say_how_far_a_loop_is_with_an_eta(capsys):
    now = [0.0]
    bar = LogLines(None, total=10, desc="LASER sweep", every=30.0, clock=lambda: now[0])
    for _ in range(4):
        now[0] += 10.0
        bar.update(1)
    bar.set_postfix_str("layer 8 mlp_in")  # 40 s: no line due yet (the last was at 30 s)
    now[0] += 20.0
    bar.update(1)  # 60 s, 5 of 10 done
    now[0] += 45.0
    bar.set_postfix_str("SVD of layer 9 mlp_in")  # a long SVD: a line as it starts
    bar.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "LASER sweep: 3/10 (30%), 0:30 so far, ETA 1:10"
    assert lines[1] == "LASER sweep: 5/10 (50%), 1:00 so far, ETA 1:00 (layer 8 mlp_in)"
    assert lines[2] == "LASER sweep: 5/10 (50%), 1:45 so far, ETA 1:45 (SVD of layer 9 mlp_in)"
    assert len(lines) == 4 and lines[-1].startswith("LASER sweep: 5/10")


#: The published parameter counts (Pythia's model card; GPT-2's Hugging Face models, the tied unembedding once).
PUBLISHED = {
    "pythia-160m": 162_322_944,
    "pythia-410m": 405_334_016,
    "pythia-1b": 1_011_781_632,
    "pythia-1.4b": 1_414_647_808,
    "pythia-2.8b": 2_775_208_960,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
}


def test_the_real_shapes_have_the_published_parameter_counts():
    assert set(REAL_SHAPES) == set(PUBLISHED)
    assert {s: n_params(s) for s in REAL_SHAPES} == PUBLISHED
    with pytest.raises(ValueError, match="pythia-7b"):
        n_params("pythia-7b")


@pytest.mark.slow
def test_a_real_shape_checkpoint_in_shards_loads_as_hf_reads_it(tmp_path):
    """GPT-2 small's shape (124M parameters, the real 50257-entry vocabulary), in bf16 shards of ~100 MB, read as
    Hugging Face's own loader reads it."""
    from transformers import AutoModelForCausalLM

    path = real_shape_checkpoint(tmp_path / "gpt2", "gpt2", vocab=prompt_vocab(), dtype="bfloat16", shard_bytes=10**8)
    index = json.loads((path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    model = pretrained.load(path, processing="raw")  # the bf16 weights read in fp32, by both
    assert model.cfg.d_vocab == 50257 and len(model.tokenizer) == 50257 and model.cfg.n_layers == 12
    hf = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32).eval()
    tokens = model.to_tokens(MADRID.prompt, prepend_bos=False)
    with torch.no_grad():
        ours, theirs = model(tokens)[0, -1], hf(tokens).logits[0, -1]
    torch.testing.assert_close(ours.log_softmax(-1), theirs.log_softmax(-1), atol=1e-4, rtol=1e-4)
