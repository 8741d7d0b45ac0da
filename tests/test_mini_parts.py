"""Every pretrained part of the papers on the tiny mini series (``pretrained.mini``): each reads the series' own
facts, names the model it measured, and takes its control from the series' step 0 where the part has one."""

from __future__ import annotations

import json
from pathlib import Path

import torch

import pretrained
from pretrained.mini import read_facts

torch.set_num_threads(1)


def test_laser_factual_on_the_mini_series_stands_in_for_pythia_1b(mini_series: Path, tmp_path: Path):
    """The paper's Table 1 rows get the mini model's numbers, labelled; P(country) and P(' the') match the Hugging
    Face model's own softmax on the measured cities; LASER's (layer, ρ) is the search's best on the other cities."""
    from transformers import AutoModelForCausalLM

    from analyses.laser_pythia import main
    from analyses.papers.distributional.pretrained import city_prompts

    out = tmp_path / "out"
    assert main(["--experiment", "factual", "--model", str(mini_series), "--out", str(out), "--no-progress"]) == 0
    res = json.loads((out / "laser_pythia" / "results.json").read_text())
    part = res["parts"]["factual"]["results"]
    stand_in = part["measures"]["pythia-1b"]
    assert "mini GPT-NeoX" in stand_in["measured_on"] and "in place of pythia-1b" in stand_in["measured_on"]
    row = part["results"][str(mini_series)]["final"]
    best = max(row["selection"]["search"], key=lambda r: r["mean_log_ratio"])
    assert (row["intervention"]["paper_layer"], row["intervention"]["rho"]) == (best["layer"], best["rho"])

    _, measured = city_prompts(read_facts(mini_series)["city_country"])
    hf = AutoModelForCausalLM.from_pretrained(mini_series / "final", local_files_only=True).eval()
    tok = pretrained.load(mini_series).tokenizer
    ids = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731 (no BOS, as the paper's code)
    p_answer, p_the = [], []
    with torch.no_grad():
        for prompt in measured:
            probs = hf(torch.tensor([ids(prompt.prompt)])).logits[0, -1].softmax(-1)
            p_answer.append(float(probs[ids(" " + prompt.answer)[0]]))
            p_the.append(float(probs[ids(" the")[0]]))
    assert abs(row["full"]["p_answer"] - sum(p_answer) / len(p_answer)) < 1e-5
    assert abs(row["full"]["p_the"] - sum(p_the) / len(p_the)) < 1e-5
    for claim in res["claims"]:
        assert claim["verdict"] != "not run" and "in place of pythia-1b" in claim["note"]


def test_task_vectors_on_the_mini_series_use_its_relations(mini_series: Path):
    from analyses.papers.contextual_recall.pretrained import MINI_STEER_PAIR, run_pretrained

    res = run_pretrained(str(mini_series), None, K=2, max_t=2, seed=0, device=None)
    assert res["relations"] == list(read_facts(mini_series)) and res["steer_pair"] == list(MINI_STEER_PAIR)
    assert "mini GPT-NeoX" in res["measured_on"] and len(res["steering"]["rank_orig"]) == 5


def test_pair_attention_on_the_mini_series_uses_its_facts_and_its_step_0(mini_series: Path):
    from analyses.pair_attention import head_pair_scores
    from analyses.papers.ic_recall.data import fact_prompts
    from analyses.papers.ic_recall.pretrained import score_heads

    res = score_heads(str(mini_series), n_prompts=6, seed=0)
    subjects = {s for pairs in read_facts(mini_series).values() for s, _ in pairs}
    assert res["example_prompt"].split(":")[0] in subjects and res["control_model"] == "its step-0 checkpoint"
    step0 = pretrained.load(mini_series, checkpoint=0, processing="raw").eval()
    prompts = fact_prompts(step0.tokenizer, k=2, n_prompts=6, seed=0, path=mini_series / "facts.json")
    table = head_pair_scores(step0, prompts["tokens"], prompts["roles"], prompts["query_pos"])
    assert abs(res["control"]["best_head_score"] - float(table["score"].max())) < 1e-6


def test_head_roles_across_the_mini_series(mini_series: Path):
    from analyses.papers.induction_heads.pretrained import local_steps, run_pythia

    steps = local_steps(str(mini_series))
    res = run_pythia(str(mini_series), steps, 0.4)
    assert res["checkpoints"] == steps and "mini GPT-NeoX" in res["measured_on"]
    assert res["control"]["final_induction_score"] == res["max_over_heads"]["induction"][0]  # step 0's best head


def test_ioi_on_the_mini_series_uses_its_names_and_story(mini_series: Path, tmp_path: Path):
    from analyses.laser_pythia import main
    from analyses.papers.distributional.pretrained import MINI_IOI_TEMPLATE
    from pretrained.mini.world import FIRST_NAMES

    out = tmp_path / "out"
    args = ["--experiment", "ioi", "--model", str(mini_series), "--n-prompts", "8", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    part = json.loads((out / "laser_pythia" / "results.json").read_text())["parts"]["ioi"]["results"]
    row = part["results"][str(mini_series)]["final"]
    prompt, control = row["prompts"][0], row["control_no_io"]["prompts"][0]
    story = MINI_IOI_TEMPLATE.split("{io}")[0]
    assert prompt.startswith(story) and prompt.split()[1] in FIRST_NAMES
    assert control.startswith(story) and control.split()[1] in FIRST_NAMES and control != prompt  # the IO replaced
    assert "in place of pythia-1b" in part["measures"]["pythia-1b"]["measured_on"]
    assert "not_applicable" in part["measures"]["pythia-410m"]  # the mini stands in for one paper model


def test_the_untrained_control_of_seed_0_is_the_series_step_0(mini_series: Path):
    """The controls' untrained models (``pretrained.untrained_like``, seeds 0-4) start with the series' own step 0:
    the mini model is built by TransformerLens' initialisation of the same config and seed."""
    from pretrained import untrained_like

    step0 = pretrained.load(mini_series, checkpoint=0, processing="raw")
    fresh = untrained_like(pretrained.load(mini_series, processing="raw"), 0)
    for name, value in step0.state_dict().items():
        torch.testing.assert_close(fresh.state_dict()[name], value, rtol=0, atol=0, msg=name)
