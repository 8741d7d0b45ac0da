"""``python -m analyses.laser_pythia`` end to end on tiny GPT-NeoX / GPT-2 checkpoints (offline).

The numbers are meaningless on random weights; the pipeline is not: prompts, layer indexing, LASER on the
raw matrix (checked against truncating the Hugging Face model's own weight), restoration, the JSON schema.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import pretrained
from analyses.laser_pythia import main
from analyses.papers.distributional.claims import LASER_PYTHIA_CLAIMS
from analyses.papers.distributional.data.prompts import (
    FACTUAL_20,
    IOI_NAMES,
    IOI_TEMPLATE,
    MADRID,
    TABLE1_PROBS,
    IOIPrompt,
    ioi_prompts_without_io,
    prompt_vocab,
)
from analyses.papers.distributional.pretrained import _prepositions_measures, ranks_of
from analyses.papers.distributional.results import PrepositionsResults
from mechrecall.claims import control_problems, judge_row
from mechrecall.typed import read_results
from pretrained.testing import tiny_checkpoint


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("laser_pythia")
    vocab = prompt_vocab()
    out = {
        "neox": tiny_checkpoint(root / "pythia-tiny", "gpt_neox", vocab=vocab, seed=0, n_layers=3),
        "gpt2": tiny_checkpoint(root / "gpt2-tiny", "gpt2", vocab=vocab, seed=0, n_layers=2),
    }
    for step, seed in ((0, 1), (1000, 2)):
        # a local mirror named as the paper's model: its claims are the paper's pythia-1b claims
        tiny_checkpoint(root / "pythia-1b" / f"step{step}", "gpt_neox", vocab=vocab, seed=seed, n_layers=3)
    out["mirror"] = root / "pythia-1b"
    # GPT-2's paper layers 9-11 exist in a 12-layer mirror named as the paper's model: its claims are gpt2's
    out["gpt2_mirror"] = tiny_checkpoint(root / "gpt2", "gpt2", vocab=vocab, seed=3, n_layers=12)
    out["planted"] = _planted_checkpoint(root / "planted" / "pythia-1b")
    return out


@torch.no_grad()
def _planted_checkpoint(path, *, d=192, n_dead=64):
    """A 3-layer GPT-NeoX with §4's mechanism built in: every token carries one direction (slot 0) that the last
    MLP's input matrix reads with a small singular value and maps to ' the' (the distributional association; 64
    dead directions with singular value 10 feed units that write nothing, so LASER at rank 48 keeps them and drops
    it); its one attention head (Q = K = 0: uniform) copies the names in the context and maps each factual prompt's
    own words (Madrid) to its answer (Spain). Layers 1-2 write nothing; ' the' also has a small direct prior."""
    from transformers import AutoTokenizer, GPTNeoXForCausalLM

    path = tiny_checkpoint(path, "gpt_neox", vocab=prompt_vocab(), d_model=d, n_layers=3, n_heads=1)
    model, tok = GPTNeoXForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    facts = [MADRID, *FACTUAL_20]
    words = [w for p in facts for w in p.prompt.split()]
    shared = set(IOI_TEMPLATE.split()) | {w for w in words if words.count(w) > 1}
    cues = {w: p.answer.split()[0] for p in facts for w in p.prompt.split() if w not in shared}
    slots: dict[str, int] = {}
    for w in ["the", *IOI_NAMES, *cues, *cues.values()]:
        slots.setdefault(w, len(slots) + 1)
    free, e, gen = len(slots) + 1, torch.eye(d), torch.Generator().manual_seed(0)
    assert free + 8 < d
    sd = {k: torch.zeros_like(v) if k.endswith(("weight", "bias")) else v for k, v in model.state_dict().items()}
    emb, unemb = sd["gpt_neox.embed_in.weight"], sd["lm_head.weight"]
    emb[:, free:] = 0.1 * torch.randn(len(emb), d - free, generator=gen)  # other tokens: dimensions no slot uses
    unemb[:, free:] = 0.1 * torch.randn(len(unemb), d - free, generator=gen)
    emb[:, 0] = 1.0
    for w, slot in slots.items():
        for text in (w, " " + w):
            emb[tok(text, add_special_tokens=False).input_ids[0]] = e[0] + e[slot]
        unemb[tok(" " + w, add_special_tokens=False).input_ids[0]] = e[slot]
    unemb[tok(" the", add_special_tokens=False).input_ids[0]] += 0.5 * e[0]
    for name in [k for k in sd if k.endswith("layernorm.weight") or k == "gpt_neox.final_layer_norm.weight"]:
        sd[name] = torch.ones_like(sd[name])
    last = "gpt_neox.layers.2."
    sd[last + "attention.query_key_value.weight"][2 * d :] = torch.eye(d)  # V = I; Q = K = 0
    out = sd[last + "attention.dense.weight"]
    for n in IOI_NAMES:
        out[:, slots[n]] += 9.0 * e[slots[n]]
    for w, answer in cues.items():
        out[:, slots[w]] += 0.6 * e[slots[answer]]
    dead = torch.linalg.qr(torch.randn(d - 1, n_dead, generator=gen))[0]  # orthonormal, orthogonal to slot 0
    sd[last + "mlp.dense_h_to_4h.weight"][:n_dead, 1:] = 10.0 * dead.T
    sd[last + "mlp.dense_h_to_4h.weight"][n_dead, 0] = 1.0
    sd[last + "mlp.dense_4h_to_h.weight"][:, n_dead] = 0.3 * e[slots["the"]]
    model.load_state_dict(sd)
    model.save_pretrained(path)
    return path


def _results(out):
    return json.loads((out / "laser_pythia" / "results.json").read_text())


def _part(out, part):
    return _results(out)["parts"][part]["results"]["results"]


def test_every_part_runs_offline_on_tiny_checkpoints(dirs, tmp_path):
    out = tmp_path / "all"
    assert (
        main(
            [
                "--experiment",
                "factual",
                "factual20",
                "ioi",
                "prepositions",
                "sweep",
                "--model",
                str(dirs["mirror"]),
                "--checkpoints",
                "0,1000",
                "--layer",
                "3",
                "--rho",
                "0.25",
                "--n-prompts",
                "12",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (
        main(
            ["--experiment", "gpt2-ioi", "--model", str(dirs["gpt2"]), "--out", str(tmp_path / "gpt2"), "--no-progress"]
        )
        == 0
    )
    data = _results(out)
    assert data["schema"] == "mechrecall.results/2"
    model = str(dirs["mirror"])
    for part in ("factual", "factual20", "ioi", "prepositions", "sweep"):
        assert data["parts"][part]["status"] == "done"
        assert set(_part(out, part)[model]) == {"0", "1000"}, part
    factual = _part(out, "factual")[model]["1000"]
    assert factual["intervention"] == {
        "paper_layer": 3,
        "tl_block": 2,
        "matrix": "mlp_in",
        "rho": 0.25,
        "rank_kept": 8,
        "full_rank": 32,
    }
    assert len(factual["full"]["top5"]) == 5 and factual["full"]["p_answer"] != factual["laser"]["p_answer"]
    ioi = _part(out, "ioi")[model]["0"]
    assert ioi["n_prompts"] == 12 and len(ioi["full"]["p_io"]) == 12
    # accuracy is the fraction of prompts with P(IO) > P(S), recomputed from the stored per-prompt numbers
    recount = np.mean([a > b for a, b in zip(ioi["laser"]["p_io"], ioi["laser"]["p_s"])])
    assert ioi["laser"]["accuracy_io_over_s"] == pytest.approx(recount)
    assert len(_part(out, "factual20")[model]["0"]["full"]["per_prompt"]) == 20
    ranks = _part(out, "prepositions")[model]["0"]
    assert len(ranks["raw_prepositions"]["ranks"]) == 30 and len(ranks["sentences"]["ranks"]) == 40
    sweep = _part(out, "sweep")[model]["0"]
    assert sweep["best"]["paper_layer"] == 3 and sweep["n_svd"] == 2  # one layer x {W_in, W_out}
    claims = {c["id"]: c for c in data["claims"]}
    ratio = claims["laser_pythia.factual.pythia-1b.ratio_laser"]
    assert ratio["paper"] == 11.3 and ratio["ours"] == pytest.approx(factual["laser"]["ratio_answer_the"])
    drop = claims["laser_pythia.factual.pythia-1b.p_the_drop"]
    assert drop["paper"] == pytest.approx(TABLE1_PROBS["laser"]["the"] / TABLE1_PROBS["full"]["the"], rel=1e-3)
    assert drop["ours"] == pytest.approx(factual["laser"]["p_the"] / factual["full"]["p_the"])
    # the paper's other IOI model was not among --model: no rows, and its results entry says why
    assert "laser_pythia.ioi.pythia-410m.ratio_full" not in claims
    measures = _results(out)["parts"]["ioi"]["results"]["measures"]
    assert "not among --model" in measures["pythia-410m"]["not_applicable"]
    first = claims["laser_pythia.prepositions.pythia-1b.first_step_the_top5"]
    assert first["ours"] in (0, 1000) or "no checkpoint with mean rank ≤ 5" in first["reason"]
    assert claims["laser_pythia.sweep.pythia-1b.best_gain"]["class"] == "extension"
    for row in data["claims"]:  # every verdict follows from the number, its control and the rule
        assert row["verdict"] == judge_row(row), row["id"]
    _check_controls(claims, model, out)
    assert data["figures"] and set(data["figures"]) >= {
        "fig5_factual_pythia-1b.png",
        "fig5_ioi_pythia-1b.png",
        "table1_pythia-1b.png",
        "fig15_ioi.png",
        "fig16_factual20.png",
        "fig14_prepositions.png",
        "sweep_pythia-1b_0.png",
    }
    gpt2 = _part(tmp_path / "gpt2", "gpt2-ioi")[str(dirs["gpt2"])]["final"]
    assert {r["paper_layer"] for r in gpt2["sweep"]} == {2}  # GPT-2's layers 9-12 do not exist: the last one
    assert gpt2["n_svd"] == 1 and len(gpt2["full"]["top4"]) == 4


def _check_controls(claims, model, out):
    """Every measured claim has a control, read from the entry its ``control_is`` names. (On random weights a
    control may pass its rule -- the model has no mechanism to tell apart -- so this does not ask them to fail:
    ``test_a_model_with_the_mechanism_...`` does.)"""
    assert not [p for p in control_problems(claims.values()) if "no control value" in p]
    measured = [c for c in claims.values() if c["ours"] is not None]
    assert len(measured) == 9 and all(c["control"] is not None and c["control_is"] for c in measured)
    factual = _part(out, "factual")[model]["1000"]
    control = {k.removeprefix("laser_pythia.").replace(".pythia-1b.", "."): c["control"] for k, c in claims.items()}
    assert control["factual.ratio_full"] == pytest.approx(factual["laser"]["ratio_answer_the"])  # LASER
    assert control["factual.ratio_laser"] == pytest.approx(factual["laser"]["no_cue"]["ratio_answer_the"])
    assert factual["laser"]["no_cue"]["prompt"] == "It is located in"  # the cue "Madrid" is gone
    assert control["factual.p_the_drop"] == pytest.approx(factual["laser"]["p_answer"] / factual["full"]["p_answer"])
    for gain in ("factual.p_answer_gain", "factual20.answer_over_the_gain", "ioi.ratio_gain"):
        assert control[gain] == 1.0  # the model without its rank reduction (the sweep's too, below)
    ioi = _part(out, "ioi")[model]["1000"]
    assert control["ioi.ratio_full"] == pytest.approx(ioi["control_no_io"]["ratio_io_the"])
    assert control["ioi.ratio_full"] != pytest.approx(ioi["full"]["ratio_io_the"])
    assert control["sweep.best_gain"] == 1.0
    # no checkpoint of the random mirror puts the IO name in the top 5: the control is the last step + 1
    assert control["prepositions.first_step_the_top5"] == 1001


@pytest.mark.parametrize("layer", [3, 2])
def test_a_model_with_the_mechanism_reproduces_every_claim_and_rejects_every_control(dirs, tmp_path, layer):
    """On a model built with §4's mechanism (``_planted_checkpoint``), LASER on its last layer reproduces every
    claim that runs without checkpoints and is not judged at a printed number, and no control passes its rule: the
    LASER model without the cue ('It is located in'), the IOI prompts without the IO, Spain's own ratio, no rank
    reduction. The same truncation of layer 2, which holds no association, reproduces none of the LASER claims."""
    out = tmp_path / "p"
    args = ["--model", str(dirs["planted"]), "--layer", str(layer), "--rho", "0.25", "--n-prompts", "12"]
    assert (
        main(["--experiment", "factual", "factual20", "ioi", "sweep", *args, "--out", str(out), "--no-progress"]) == 0
    )
    rows = _results(out)["claims"]
    verdicts = {r["id"].removeprefix("laser_pythia.").replace(".pythia-1b.", "."): r["verdict"] for r in rows}
    policies = {r["id"].removeprefix("laser_pythia.").replace(".pythia-1b.", "."): r["policy"] for r in rows}
    assert len(verdicts) == 9 and all(r["control"] is not None for r in rows)
    # the rows under the policy's "printed" line are judged at Table 1's / Fig 5's own numbers (±10 %), which a
    # planted toy model does not carry: the mechanism is asked of the others (ratio_below / ratio_above / extension)
    directional = {k: v for k, v in verdicts.items() if policies[k] != "printed"}
    assert set(directional) == {"factual20.p_the_drop", "factual20.answer_over_the_gain", "sweep.best_gain"}
    if layer == 3:
        assert control_problems(rows) == []
        assert set(directional.values()) == {"reproduced"}, verdicts
    else:  # every LASER claim fails (the full model's ratios, judged at the paper's numbers, aside)
        verdicts.pop("ioi.ratio_full"), verdicts.pop("factual.ratio_full")
        assert set(verdicts.values()) == {"not reproduced"}, verdicts


def test_gpt2_ioi_claims_carry_their_controls(dirs, tmp_path):
    """Fig 17 on a random 12-layer mirror named gpt2: each layer's fraction beside the same fraction for ' Mary',
    the top-4 count beside the count on the prompt without the names (present; on random weights not rejected)."""
    out = tmp_path / "g"
    assert (
        main(["--experiment", "gpt2-ioi", "--model", str(dirs["gpt2_mirror"]), "--out", str(out), "--no-progress"]) == 0
    )
    claims = {c["id"].removeprefix("laser_pythia.gpt2-ioi.gpt2."): c for c in _results(out)["claims"]}
    row = _part(out, "gpt2-ioi")[str(dirs["gpt2_mirror"])]["final"]
    assert set(claims) == {"layer9_the_lower", "layer10_the_lower", "layer11_the_lower", "top4_match"}
    for l in (9, 10, 11):
        fraction = row["fraction_rho_below_full"][str(l)]
        assert (claims[f"layer{l}_the_lower"]["ours"], claims[f"layer{l}_the_lower"]["control"]) == (
            fraction["the"],
            fraction["Mary"],
        )
    words = row["no_names"]["prompt"].replace(",", " ").split()
    assert "Mary" not in words and "John" not in words and "the" not in words
    top4 = {t["token"].strip() for t in row["no_names"]["top4"]}
    assert claims["top4_match"]["control"] == len(top4 & {"Mary", "them", "the", "John"})
    assert not [p for p in control_problems(claims.values()) if "no control value" in p]


def test_a_stored_run_is_read_back_as_typed_results_and_a_bad_field_is_named(dirs, tmp_path):
    """``EXPERIMENT.load`` reads ``results.json`` back as each part's typed model (``results.py``): per paper model
    its measures, a NotRun marker where the number was not measured (no checkpoint with ' the' in the top 5), a
    NotApplicable one for a paper model not among ``--model``; a misspelt field is refused with one line naming it."""
    from analyses.laser_pythia import EXPERIMENT
    from analyses.papers.distributional.results import FactualMeasures, FactualResults
    from mechrecall.typed import NotApplicable, NotRun, ResultsError

    out = tmp_path / "typed"
    args = ["--model", str(dirs["mirror"]), "--checkpoints", "0,1000", "--layer", "3", "--rho", "0.25"]
    assert main(["--experiment", "factual", "prepositions", *args, "--out", str(out), "--no-progress"]) == 0
    loaded = EXPERIMENT.load(out)
    factual, prepositions = loaded["factual"], loaded["prepositions"]
    assert (
        isinstance(factual, FactualResults)
        and _results(out)["parts"]["factual"]["results_schema"] == "FactualResults/1"
    )
    measures = factual.measures["pythia-1b"]
    assert isinstance(measures, FactualMeasures)
    stored = _results(out)["parts"]["factual"]["results"]["measures"]["pythia-1b"]
    assert (measures.ratio_laser, measures.control.ratio_laser) == (
        stored["ratio_laser"],
        stored["control"]["ratio_laser"],
    )
    claims = {c["id"]: c for c in _results(out)["claims"]}
    assert claims["laser_pythia.factual.pythia-1b.ratio_laser"]["ours"] == pytest.approx(measures.ratio_laser)
    first = prepositions.measures["pythia-1b"].first_step_the_top5
    if isinstance(first, NotRun):  # random weights: ' the' never in the top 5, the claim is not run and says why
        assert claims["laser_pythia.prepositions.pythia-1b.first_step_the_top5"]["reason"] == first.why
    assert isinstance(prepositions.measures["pythia-160m"], NotApplicable)

    path = out / "laser_pythia" / "results.json"
    payload = _results(out)
    entry = payload["parts"]["factual"]["results"]["measures"]["pythia-1b"]
    entry["ratio_lser"] = entry.pop("ratio_laser")
    path.write_text(json.dumps(payload))
    with pytest.raises(ResultsError, match=r"^FactualResults: measures\.pythia-1b") as exc:
        EXPERIMENT.load(out)
    assert "\n" not in str(exc.value)


def test_ioi_control_prompts_take_the_answer_out_of_the_context():
    prompts = [IOIPrompt.from_names(io, s) for io, s in (("Mary", "John"), ("John", "Mary"), ("Anna", "Paul"))]
    control = ioi_prompts_without_io(prompts, ["Mary", "John", "Paul", "Anna"])
    for p, c in zip(prompts, control, strict=True):
        words = c.prompt.replace(",", " ").split()
        assert (c.io, c.s) == (p.io, p.s) and c.io not in words and words.count(c.s) == 2
        assert c.prompt.replace(words[1], p.io, 1) == p.prompt  # only the IO's place changed
    assert [c.prompt.split()[1] for c in control] == ["Paul", "Paul", "Mary"]
    with pytest.raises(ValueError, match="expected >= 3"):
        ioi_prompts_without_io(prompts, ["Mary", "John"])
    assert set(IOI_NAMES) >= {"Mary", "John", "Paul"}


def test_ranks_of_ranks_each_rows_own_token():
    probs = torch.tensor([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.2, 0.3, 0.5]])
    assert ranks_of(probs, torch.tensor([2, 0, 2])).tolist() == [2, 2, 1]  # a tie shares the better rank


def _first_step_claim(rows):
    (spec,) = [s for s in LASER_PYTHIA_CLAIMS if s.id == "prepositions.pythia-1b.first_step_the_top5"]
    results = {"models": ["pythia-1b"], "measures": {"pythia-1b": _prepositions_measures(rows)}}
    return spec.evaluate(read_results(PrepositionsResults, results), experiment="laser_pythia")


def test_the_early_the_claim_is_judged_against_the_in_context_answers_first_step():
    """' the' top-5 "around 10 steps" (Fig 14; policy ``printed``: within ±1, partial ±2.5) while the IO name gets
    there at 2,000 (§4.1): at step 10 reproduced, at Pythia's checkpoint 8 partial, at 16 a miss; a model that puts
    both there at once (a unigram phase, no contrast) makes the claim vacuous; an IO never in the top 5: last + 1."""

    def rows(the, io, at=16):
        return {
            str(step): {"raw_prepositions": {"mean_rank_the": t}, "ioi_answer": {"mean_rank_io": i}}
            for step, t, i in zip((0, at, 2000), the, io, strict=True)
        }

    claim = _first_step_claim(rows((30000, 3, 1.2), (20000, 900, 2.5), at=10))
    assert (claim.ours, claim.control, claim.verdict, claim.policy) == (10, 2000, "reproduced", "printed")
    assert _first_step_claim(rows((30000, 3, 1.2), (20000, 900, 2.5), at=8)).verdict == "partial"
    assert _first_step_claim(rows((30000, 3, 1.2), (20000, 900, 2.5))).verdict == "not reproduced"
    assert _first_step_claim(rows((30000, 3, 1.2), (20000, 4, 2.5), at=8)).verdict == "vacuous"
    assert _first_step_claim(rows((30000, 3, 1.2), (20000, 900, 800))).control == 2001


def test_a_laser_that_changes_nothing_earns_no_gain_claim():
    """The gain claims' control is the model without its rank reduction (1): their rules (policy: the printed gain,
    ``ratio_above`` ≥ 2 with partial ≥ 1.25, or the sweep's own bar) reject it, partial band included."""
    gains = [s for s in LASER_PYTHIA_CLAIMS if s.control_is.startswith("the model without its rank reduction")]
    assert {s.id.split(".")[-1] for s in gains} == {"p_answer_gain", "answer_over_the_gain", "ratio_gain", "best_gain"}
    for spec in gains:
        rule = spec.rule_for({})
        assert rule.judge(1.0) == "not reproduced" and rule.judge(1.2) == "not reproduced", spec.id
        assert spec.policy_line in ("printed", "ratio_above", "extension"), spec.id
    table1 = {s.id: s for s in gains}["factual.pythia-1b.p_answer_gain"]
    assert table1.policy_line == "printed" and table1.rule_for({}).judge(3.797) == "reproduced"


@torch.no_grad()
def test_factual_laser_equals_truncating_the_hf_weight(dirs, tmp_path):
    """P(Spain) under LASER (paper layer 2 = TL block 1, ρ = 0.25) equals the HF model with its own
    ``dense_h_to_4h`` replaced by the rank-8 SVD truncation, computed with numpy."""
    from transformers import AutoModelForCausalLM

    assert (
        main(
            [
                "--experiment",
                "factual",
                "--model",
                str(dirs["neox"]),
                "--layer",
                "2",
                "--rho",
                "0.25",
                "--out",
                str(tmp_path / "f"),
                "--no-progress",
            ]
        )
        == 0
    )
    row = _part(tmp_path / "f", "factual")[str(dirs["neox"])]["final"]
    hf = AutoModelForCausalLM.from_pretrained(dirs["neox"], local_files_only=True).eval()
    tokenizer = pretrained.load(str(dirs["neox"]), processing="raw").tokenizer
    ids = tokenizer(MADRID.prompt, return_tensors="pt", add_special_tokens=False).input_ids  # no BOS
    spain = tokenizer(" Spain", add_special_tokens=False).input_ids[0]
    full = hf(ids).logits[0, -1].softmax(-1)[spain].item()
    weight = hf.gpt_neox.layers[1].mlp.dense_h_to_4h.weight
    U, S, Vh = np.linalg.svd(weight.double().numpy(), full_matrices=False)
    weight.copy_(torch.from_numpy((U[:, :8] * S[:8]) @ Vh[:8]).float())
    truncated = hf(ids).logits[0, -1].softmax(-1)[spain].item()
    assert row["full"]["p_answer"] == pytest.approx(full, rel=1e-4)
    assert row["laser"]["p_answer"] == pytest.approx(truncated, rel=1e-4)
    assert abs(truncated - full) > 1e-6


def test_weights_are_restored_bit_exact_after_every_experiment(dirs, tmp_path, monkeypatch):
    loaded = []
    real_load = pretrained.load
    monkeypatch.setattr(pretrained, "load", lambda *a, **k: loaded.append(real_load(*a, **k)) or loaded[-1])
    assert (
        main(
            [
                "--experiment",
                "factual",
                "factual20",
                "ioi",
                "sweep",
                "--model",
                str(dirs["neox"]),
                "--layer",
                "3",
                "--rho",
                "0.1",
                "--n-prompts",
                "5",
                "--out",
                str(tmp_path / "r"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert len(loaded) == 1  # loaded once, reused by every experiment
    used = loaded[0]  # the very model object the experiments edited
    fresh = pretrained.load(str(dirs["neox"]), processing="raw")
    for name, value in fresh.state_dict().items():
        assert torch.equal(value, used.state_dict()[name]), name


def test_sweep_reads_a_user_prompt_file(dirs, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("\n".join(json.dumps({"prompt": p.prompt, "answer": p.answer}) for p in FACTUAL_20[:3]))
    assert (
        main(
            [
                "--experiment",
                "sweep",
                "--model",
                str(dirs["neox"]),
                "--prompts",
                str(prompts),
                "--rho",
                "0.5",
                "--out",
                str(tmp_path / "s"),
                "--no-progress",
            ]
        )
        == 0
    )
    row = _part(tmp_path / "s", "sweep")[str(dirs["neox"])]["final"]
    assert row["n_prompts"] == 3
    assert {r["paper_layer"] for r in row["table"]} == {2, 3}  # the last half of 3 layers
    assert {r["matrix"] for r in row["table"]} == {"mlp_in", "mlp_out"}


def test_no_weights_makes_claims_not_run_with_the_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["--experiment", "factual", "--out", str(tmp_path / "x"), "--no-progress"]) == 0
    assert "--model DIR" in capsys.readouterr().out
    rows = _results(tmp_path / "x")["claims"]
    assert rows and all(r["verdict"] == "not run" and r["ours"] is None for r in rows)
    assert all("pythia-1b" in r["reason"] and "can't be loaded" in r["reason"] for r in rows)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--checkpoints", "a,b"], "--checkpoints 'a,b'"),
        (["--layer", "9", "--rho", "0.1"], "--layer 9 (1-indexed, as in the paper) is out of range"),
        (["--rho", "1.5"], "--rho 1.5"),
        (["--n-prompts", "0"], "--n-prompts 0"),
        (["--prompts", "/nonexistent.jsonl"], "--prompts /nonexistent.jsonl: no such file"),
        (["--model", "pythia-nonsense"], "--model pythia-nonsense: 'pythia-nonsense' is neither"),
    ],
)
def test_bad_arguments(dirs, tmp_path, capsys, args, message):
    code = main(["--model", str(dirs["neox"]), "--out", str(tmp_path / "x"), "--no-progress", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_unknown_model_needs_layer_and_rho(dirs, tmp_path, capsys):
    """A model the paper did not use gets no silent default layer and ρ."""
    assert (
        main(["--experiment", "factual", "--model", str(dirs["neox"]), "--out", str(tmp_path / "x"), "--no-progress"])
        == 2
    )
    assert "pass --layer" in capsys.readouterr().err


def test_sweep_refuses_an_answer_outside_the_vocabulary_and_names_the_prompt(dirs, tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        json.dumps({"prompt": "Madrid is located in", "answer": " Spain"})
        + "\n"
        + json.dumps({"prompt": "Paris is located in", "answer": "Zanzibarland"})
        + "\n"
    )
    assert (
        main(
            [
                "--experiment",
                "sweep",
                "--model",
                str(dirs["neox"]),
                "--prompts",
                str(prompts),
                "--rho",
                "0.5",
                "--out",
                str(tmp_path / "s"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "'Zanzibarland' of the prompt 'Paris is located in'" in err and "not in its vocabulary" in err


def test_bad_prompt_file_fails_before_loading(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\n')
    assert (
        main(["--experiment", "sweep", "--model", "pythia-1b", "--prompts", str(bad), "--out", str(tmp_path / "x")])
        == 2
    )
    assert "line 1" in capsys.readouterr().err
