"""``pretrained.mini``: the generated corpus and its ground truth, the export to Pythia's layout (against the
Hugging Face model's logits), the checkpoint series, resuming, and the mini model's pretrained parts."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch

import pretrained
from pretrained.mini import PRESETS, make_world, pretrain, read_facts, read_ground_truth
from pretrained.mini.corpus import documents
from pretrained.mini.recall import recall_prompts
from pretrained.mini.world import prompt_of

torch.set_num_threads(1)
TINY = PRESETS["tiny"]


def test_world_is_deterministic_and_consistent():
    a, b = make_world(3, 20, 6, 3), make_world(3, 20, 6, 3)
    assert a.to_dict() == b.to_dict() and a.to_dict() != make_world(4, 20, 6, 3).to_dict()
    facts = a.facts()
    for person, attrs in a.people.items():
        assert a.city_country[attrs["city"]] == attrs["country"]
        assert (person, attrs["occupation"]) in facts["person_occupation"]
    assert set(a.city_country.values()) == set(a.countries)  # every country has a city
    with pytest.raises(ValueError, match="n_countries=7"):
        make_world(0, 5, 6, 7)


def test_heldout_templates_never_appear_in_the_corpus():
    world = make_world(0, 12, 6, 3)
    text = "\n".join(documents(world, 2000, seed=0))
    for rel, templates in world.templates.items():
        for template in templates["heldout"]:
            core = re.escape(template.split("{s}")[1].split("{a}")[0].strip())  # e.g. "was raised in"
            assert not re.search(core, text), (rel, template)


def test_statement_counts_match_the_text():
    """``documents`` counts what it states: recount the person-occupation statements from the text itself."""
    world = make_world(1, 10, 4, 2)
    stated: Counter = Counter()
    docs = list(documents(world, 600, seed=1, stated=stated))
    text = "\n".join(docs)
    for person, attrs in world.people.items():
        by_template = sum(
            text.count(t.format(s=person, a=attrs["occupation"])) for t in world.templates["person_occupation"]["train"]
        )
        icl = text.count(f"{person}: {attrs['occupation']}")
        assert stated[("person_occupation", person)] == by_template + icl


def test_recall_prompts_end_before_the_answer():
    world = make_world(0, 4, 2, 1)
    rows = recall_prompts(world, "heldout")
    assert len(rows) == sum(len(world.templates[r]["heldout"]) * len(p) for r, p in world.facts().items())
    assert prompt_of("{s} works as a {a}.", "Ann Bel") == "Ann Bel works as a"
    assert all(not prompt.endswith(" ") and answer not in prompt for _, prompt, answer in rows)


def test_series_layout_and_ground_truth(mini_series: Path):
    steps = TINY.series()
    assert steps[0] == 0 and steps[-1] == TINY.steps and steps == sorted(steps)
    assert sorted(pretrained._local.step_dirs(mini_series)) == steps
    final, last = mini_series / "final" / "model.safetensors", mini_series / f"step{TINY.steps}" / "model.safetensors"
    assert final.read_bytes() == last.read_bytes()
    truth = read_ground_truth(mini_series / "final")
    assert truth is not None and truth["series"] == steps
    world_facts = make_world(0, TINY.n_people, TINY.n_cities, TINY.n_countries).facts()
    assert read_facts(mini_series) == world_facts
    on_disk = json.loads((mini_series / "facts.json").read_text())
    assert {k: [tuple(p) for p in v] for k, v in on_disk.items() if not k.startswith("_")} == world_facts
    assert read_ground_truth(mini_series / "step0") == truth  # a step folder's parent is the series
    assert read_facts(mini_series.parent) is None  # not a series


def test_export_matches_hugging_face_and_the_trained_model(mini_series: Path):
    """The step folder read by Hugging Face, by ``pretrained.load`` (raw) and the trainer's own checkpoint of the
    same step give the same logits."""
    from transformers import AutoModelForCausalLM

    from mechrecall import load_model

    step = TINY.steps
    tl = pretrained.load(mini_series, checkpoint=step, processing="raw")
    hf = AutoModelForCausalLM.from_pretrained(mini_series / f"step{step}", local_files_only=True).eval()
    trained = load_model(mini_series / "train" / "checkpoints" / f"step-{step:08d}").eval()
    tokens = tl.to_tokens("When Mary and John went to the park, John gave a book to", prepend_bos=False)
    with torch.no_grad():
        logits = hf(tokens).logits
        torch.testing.assert_close(tl(tokens), logits, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(trained(tokens), logits, atol=1e-4, rtol=1e-4)
    assert pretrained.load(mini_series).cfg.n_layers == TINY.n_layers  # no checkpoint: the final weights


def test_tokenizer_round_trips_and_keeps_answers_whole(mini_series: Path):
    tok = pretrained.load(mini_series).tokenizer
    world = make_world(0, TINY.n_people, TINY.n_cities, TINY.n_countries)
    doc = next(documents(world, 1, seed=5))
    assert tok.decode(tok(doc, add_special_tokens=False)["input_ids"]) == doc
    for pairs in world.facts().values():
        for _, answer in pairs:
            assert len(tok(" " + answer, add_special_tokens=False)["input_ids"]) == 1


def test_the_tiny_model_learned_from_its_corpus(mini_series: Path):
    """Recall of the facts: none at step 0 (one answer among the world's), most of them after the tiny run, on the
    train templates and above step 0 on the held-out ones; every fact is stated in the corpus."""
    truth = read_ground_truth(mini_series)
    first, last = truth["recall"]["0"], truth["recall"][str(TINY.steps)]
    assert first["train"]["all"] < 0.1 and last["train"]["all"] > 0.3
    assert last["heldout"]["all"] > first["heldout"]["all"] + 0.1
    assert min(truth["corpus"]["fraction_of_facts_stated"].values()) == 1.0


def test_a_resumed_pretraining_ends_with_the_same_weights(mini_series: Path, tmp_path: Path):
    """Delete the last step and the trainer's newest checkpoint (a run killed mid-segment): the rerun retrains the
    last segment from the previous checkpoint and writes bit-identical weights."""
    copy = tmp_path / "copy"
    shutil.copytree(mini_series, copy)
    last = TINY.steps
    for gone in (copy / f"step{last}", copy / "final", copy / "train" / "checkpoints" / f"step-{last:08d}"):
        shutil.rmtree(gone)
    previous = TINY.series()[-2]
    (copy / "train" / "checkpoints" / "latest.json").write_text(
        json.dumps({"name": f"step-{previous:08d}", "step": previous})
    )
    pretrain(copy, "tiny", seed=0, progress=False)
    for name in (f"step{last}", "final"):
        assert (copy / name / "model.safetensors").read_bytes() == (
            mini_series / name / "model.safetensors"
        ).read_bytes()


def test_bad_output_folders_are_refused_in_one_line(mini_series: Path, tmp_path: Path, capsys):
    from pretrained.mini.__main__ import main

    (tmp_path / "file").write_text("x")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    for out, message in (
        (mini_series, "seed 0 vs 1"),  # another recipe's run
        (tmp_path / "file", "is a file"),
        (tmp_path / "other", "holds no mini run"),
        (Path("/proc/mini"), "--out /proc/mini: "),  # cannot be created
    ):
        assert main(["--out", str(out), "--preset", "tiny", "--seed", "1"]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and message in err, err
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_a_model_that_is_not_the_saved_gpt_neox_is_refused_before_training():
    """The series checks, before training, that its TL model computes what the saved GPT-NeoX will: here the HF
    config rotates whole heads while the model rotates a quarter of each, and the check says so in one line."""
    from mechrecall import build_toy_model
    from pretrained.mini.export import check_exports_as_neox, hf_config
    from pretrained.mini.series import tl_config

    model = build_toy_model(tl_config(TINY, 50, seed=0), seed=0)
    check_exports_as_neox(model, hf_config(TINY.d_model, TINY.n_layers, TINY.n_heads, TINY.d_mlp, TINY.n_ctx, 50))
    other = hf_config(TINY.d_model, TINY.n_layers, TINY.n_heads, TINY.d_mlp, TINY.n_ctx, 50, rotary_pct=1.0)
    with pytest.raises(ValueError, match="not the GPT-NeoX it would be saved as") as err:
        check_exports_as_neox(model, other)
    assert "\n" not in str(err.value)
