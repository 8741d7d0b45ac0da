"""``python -m analyses.contextual_recall``: CLI, bad input, a ``micro`` run end to end, the pretrained extension on
a tiny local checkpoint, and the ``paper`` preset's sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import torch

from analyses.contextual_recall import EXPERIMENT
from mechrecall.claims import control_problems, rule_of

PY = [sys.executable, "-m", "analyses.contextual_recall"]


def _cli(*args, timeout=120):
    return subprocess.run(PY + list(args), capture_output=True, text=True, timeout=timeout)


def test_help_lists_the_parts_and_the_entry_presets_and_claims_import_nothing_heavy():
    text = EXPERIMENT.parser().format_help()
    for part in ("construction", "world_r", "world_g", "pretrained", "--preset", "--n-finetune"):
        assert part in text
    pkg = "analyses.papers.contextual_recall"
    light = f"import analyses.contextual_recall, {pkg}.presets, {pkg}.claims"
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", light], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "transformer_lens" not in out.stderr and "| torch" not in out.stderr


@pytest.mark.parametrize(
    "parts, options, message",
    [
        (["world_g"], {"n_finetune": 99}, "n_finetune=99 is larger than M=32"),
        (["world_r"], {"n_demos": 40, "n_finetune": 32}, "n_demos=40 demonstrations but the subject pool"),
        (["world_g"], {"div": 1.5}, "target_div=1.5 is unreachable"),
        (["world_r"], {"n_ctx": 10}, "--n-ctx 10: the longest World-R input has 26 tokens"),
        (["world_g"], {"pt_steps": 0}, "--pt-steps 0; expected an integer >= 1"),
        (["world_r"], {"n_demos": 0}, "--n-demos 0; expected an integer >= 1"),
        (["world_r"], {"n_ctx": 0}, "--n-ctx 0; expected an integer >= 1"),
        (["pretrained"], {"checkpoint": -1}, "--checkpoint -1; expected an integer >= 0"),
        (["world_r"], {"set": ["r.pt_loss=grammar"]}, "pt_loss='grammar'; expected one of"),
    ],
)
def test_inconsistent_configs_fail_naming_the_value_before_training(tmp_path, parts, options, message):
    from mechrecall.errors import UsageError

    with pytest.raises(UsageError, match=message):
        EXPERIMENT.run(tmp_path, preset="smoke", parts=parts, options=options)
    assert not (tmp_path / "contextual_recall" / "runs").exists()  # nothing trained


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    r = _cli("--preset", "smoke", "--experiment", "world_g", "--pt-steps", "0", "--out", str(tmp_path), "--no-progress")
    assert r.returncode == 2, r.stderr
    assert "--pt-steps 0; expected an integer >= 1" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_size_options_override_the_preset_and_are_named_in_every_claim_note(tmp_path):
    from analyses.papers.contextual_recall.presets import PerRun

    options = {"pt_steps": 5, "div": 0.3}
    ctx, _ = EXPERIMENT.prepare(tmp_path, preset="smoke", parts=["world_g", "world_r"], options=options)
    assert ctx.overrides == {"pt_steps": (5, PerRun(2000, 3000)), "div": (0.3, None)}
    assert ctx.params.run_g(0).pt_steps == 5 and ctx.params.run_r(0).pt_steps == 5
    assert ctx.params.run_g(0).world.target_div == 0.3 and ctx.params.run_r(0).ft_steps == 600
    assert ctx.claim_notes()[1] == (
        "changed from preset smoke: pt_steps 5 (preset World-G 2000, World-R 3000), div 0.3 (preset None)"
    )
    ctx, _ = EXPERIMENT.prepare(tmp_path, preset="smoke", parts=["world_r"], seed=3)
    assert ctx.overrides == {} and ctx.params.run_r(3).world.seed == 3 and ctx.params.run_g(3).world.seed == 3


def _titles(fig):
    return " ".join([fig._suptitle.get_text() if fig._suptitle else ""] + [ax.get_title() for ax in fig.axes])


@pytest.mark.slow
def test_micro_run_end_to_end(tmp_path):
    from analyses.papers.contextual_recall.metrics import REP_SITES

    run = EXPERIMENT.run(tmp_path, preset="micro", parts=["construction", "world_r", "world_g"])
    rows = {r["id"].split(".", 1)[1]: r for r in run["claims"]}
    assert [r["id"] for r in run["claims"] if r["reason"].startswith("not measured")] == []  # every `reads` is written
    # the construction is exact at any preset (micro: `not comparable`, so the numbers and the rules are checked)
    construction = [r for r in run["claims"] if r["id"].startswith("contextual_recall.construction.")]
    assert control_problems(construction) == []
    for name in ("prop1_factual_recall", "prop2_icl_heldout", "prop3_factual_recall", "prop4_icl_heldout"):
        row = rows[f"construction.{name}"]
        assert row["ours"] == 1.0 and rule_of(row).judge(row["ours"]) == "reproduced"
        assert rule_of(row).judge(row["control"]) == "not reproduced"  # the mechanism removed breaks it
    assert rows["construction.prop1_no_icl"]["ours"] == 0.0 and rows["construction.prop1_no_icl"]["control"] == 1.0
    for name in ("cascade_holds_step1_heldout", "cascade_holds_step2_heldout", "cascade_paper_scale_step1_heldout"):
        assert rows[f"construction.{name}"]["ours"] >= 0.99 and rows[f"construction.{name}"]["control"] == 0.0
    assert rows["construction.cascade_paper_scale_step2_collapse"]["ours"] <= 0.5  # the micro world fails the condition
    assert rows["construction.cascade_paper_scale_step2_collapse"]["class"] == "extension"
    assert rows["construction.cascade_sensitivity_holds_step1_heldout"]["class"] == "ablation"
    # world_r / world_g: every claim has its control and no rule passes it. Excepted: "ICL ≈ 0 after pretraining",
    # whose control is the model finetuned on ICL; micro's 4 finetuning steps teach it nothing (smoke: 0.17-0.35)
    trained = [r for r in run["claims"] if r["id"].split(".")[1] in ("world_r", "world_g")]
    assert len(trained) == 16 and all(r.get("control_is") for r in trained)
    assert control_problems(trained) == [
        "contextual_recall.world_g.pt_icl_near_zero: control 0 passes the rule '≤ 0.05 ('≈ 0'); partial ≤ 0.1'"
    ]
    assert rows["world_r.pt_icl_at_chance"]["control"] == 1.0  # Prop. 2 on the same held-out sequences
    assert all(isinstance(r["ours"], (int, float)) for r in run["claims"])
    for r in run["claims"]:  # every row names its policy line and stands beside the paper preset's sizes
        assert r["policy"] and r["scale"] and r["at_scale"] == "reduced", r["id"]
    assert tuple(rows["world_g.ft_icl_heldout"]["scale"]["M"]) == (16, 256)
    res = json.loads((tmp_path / "contextual_recall" / "results.json").read_text())
    g = res["parts"]["world_g"]["results"]
    assert [r["step"] for r in g["history_pt"]] == [0, 3, 6]
    for part in (g, res["parts"]["world_r"]["results"]):  # the untrained control is the run's model at step 0
        assert part["at_init"]["seeds"] == [1, 2, 3, 4, 5]  # the bar's seeds: never the run's own (seed 0)
        assert part["at_init"]["control"]["PT.exact"] == part["history_pt"][0]["PT.exact"]
    step0 = g["history_pt"][0]
    assert g["at_init"]["control"]["stagewise_gap"] == step0["PT.attr_type"] - step0["PT.exact"]
    assert len(g["clustering_ft_icl"]["t"]) == 4 and len(g["steering_ft_icl"]["beta"]) == 11
    _check_finding3(tmp_path, g, rows)
    for f in (
        "fig02_pretraining.png",
        "fig03_finetune_icl.png",
        "fig09_attention_after_pt.png",
        "fig20_ov_after_pt.png",
        "fig08_16_17_clustering.png",
        "construction_cascade.png",
    ):
        assert (tmp_path / "contextual_recall" / f).stat().st_size > 1000
    # figure content: titles name the paper figure, curves hold the recorded numbers
    from analyses.papers.contextual_recall import figures as F

    hist = {"eval": g["history_pt"]}
    fig = F.metric_curves(hist, [("PT", "PT"), ("ICL_heldout", "ICL")], "Fig. 2: pretraining", "PT step")
    assert "Fig. 2" in _titles(fig) and len(fig.axes[0].lines) == 4
    assert list(fig.axes[0].lines[0].get_ydata()) == [r["PT.exact"] for r in g["history_pt"]]
    fig = F.clustering_figure(g["clustering_ft_icl"], "Figs. 8, 16, 17")
    assert "Fig. 16" in _titles(fig) and len(fig.axes[1].lines) == len(REP_SITES)
    assert list(fig.axes[0].lines[0].get_ydata()) == g["clustering_ft_icl"]["accuracy"]


def _check_finding3(tmp_path, g, rows):
    """Finding 3 under both loss readings: two ICL+Grm finetunings from one pretrained model, their rows, the
    held-out breakdown and the Fig. 4 figure."""
    from analyses.papers.contextual_recall import figures as F

    assert g["ft_loss"] == "all" and g["samples_per_ft_step"] == 8
    runs = tmp_path / "contextual_recall" / "runs" / "world_g"
    assert sorted(p.name for p in runs.iterdir()) == ["ft_ICL", "ft_ICLGrm", "ft_ICLGrm_loss_attributes", "pt"]
    assert g["history_ft_iclgrm_attributes"][0] == g["history_ft_iclgrm"][0]  # the same pretrained start
    assert set(g["query_breakdown"]) == {"pretrained", "ft_icl", "ft_iclgrm", "ft_iclgrm_attributes"}
    for name, b in g["query_breakdown"].items():
        assert sum(b.values()) == pytest.approx(1.0)
        exact = {"pretrained": g["after_pt"], "ft_icl": g["after_ft_icl"], "ft_iclgrm": g["after_ft_iclgrm"]}
        exact["ft_iclgrm_attributes"] = g["after_ft_iclgrm_attributes"]
        assert b["attribute"] == pytest.approx(exact[name]["ICL_heldout.exact"])  # the same sequences, same model
    lit, attr = rows["world_g.ft_iclgrm_transfers_to_icl"], rows["world_g.ft_iclgrm_attributes_transfers_to_icl"]
    assert lit["ours"] == g["after_ft_iclgrm"]["ICL_heldout.exact"] and lit["class"] == attr["class"] == "paper"
    assert attr["ours"] == g["after_ft_iclgrm_attributes"]["ICL_heldout.exact"]
    assert "loss positions: all (the literal reading" in lit["note"]
    assert "loss positions: attributes (the attribute-target reading" in attr["note"]
    assert (
        "FT on ICL (loss: all) at the same 32 samples" in attr["note"] and "held-out answers: attribute" in attr["note"]
    )
    assert lit["control"] == attr["control"] == g["after_pt"]["ICL_heldout.exact"]
    fig = F.finding3_figure([g, g])
    assert "Fig. 4" in _titles(fig)
    means = [ln for ln in fig.axes[0].lines if ln.get_linewidth() == 2]
    assert len(means) == 3 and list(means[2].get_ydata()) == [
        r["ICL_heldout.exact"] for r in g["history_ft_iclgrm_attributes"]
    ]
    assert list(means[0].get_xdata()) == [8 * r["step"] for r in g["history_ft_icl"]]  # finetuning samples
    assert (tmp_path / "contextual_recall" / "fig04_sample_efficiency.png").stat().st_size > 1000


@pytest.mark.slow
def test_ft_loss_option_sets_every_finetuning_mix_and_is_named(tmp_path):
    run = EXPERIMENT.run(tmp_path, preset="micro", parts=["world_g"], options={"ft_loss": "last"})
    rows = {r["id"].split(".", 1)[1]: r for r in run["claims"]}
    runs = tmp_path / "contextual_recall" / "runs" / "world_g"
    assert sorted(p.name for p in runs.iterdir()) == [
        "ft_ICLGrm_loss_attributes",
        "ft_ICLGrm_loss_last",
        "ft_ICL_loss_last",
        "pt",
    ]
    note = rows["world_g.ft_iclgrm_transfers_to_icl"]["note"]
    assert "ft_loss last (preset all)" in note and "loss positions: last (the final answer only)" in note
    assert "loss positions: attributes" in rows["world_g.ft_iclgrm_attributes_transfers_to_icl"]["note"]
    with pytest.raises(Exception, match="ft_loss='grammar'"):
        EXPERIMENT.run(tmp_path / "bad", preset="micro", parts=["world_g"], options={"ft_loss": "grammar"})


@pytest.mark.parametrize("reading", ["all", "attributes"])
def test_world_r_pretraining_puts_its_loss_where_pt_loss_says(tmp_path, monkeypatch, reading):
    from dataclasses import replace

    from analyses.papers.contextual_recall import runs as R
    from analyses.papers.contextual_recall.presets import PRESETS

    first = []

    def spy(model, sample, config, **kwargs):  # the first batch of each training run
        first.append(sample(0, torch.Generator().manual_seed(0)))
        return train(model, sample, config, **kwargs)

    train = R.train
    monkeypatch.setattr(R, "train", spy)
    run = replace(PRESETS["micro"].run_r(0), pt_loss=reading)
    tr = R.train_r(run, 0, tmp_path)
    pt = first[0]  # pretraining's (finetuning's comes second, last-token)
    is_attribute = tr.world.type_of_token()[pt.targets.clamp(min=0)] >= 0
    if reading == "all":
        assert pt.loss_mask.all() and not is_attribute.all()
    else:  # one attribute after each [sep]: N_tr targets a sequence
        assert torch.equal(pt.loss_mask, is_attribute)
        assert pt.loss_mask.sum(1).eq(run.world.n_subseq).all()


def test_finetune_g_adds_a_control_finetuning_and_a_finished_run_loads_without_writing(tmp_path):
    from analyses.contextual_recall import PRESETS, finetune_g, train_g
    from analyses.papers.contextual_recall.presets import WorldConfigError

    run = PRESETS["micro"].run_g(0)
    tr = train_g(run, 0, tmp_path, finetune=("ICL",))
    m = finetune_g(tr, run, 0, tmp_path, "ICL_shuffled_subjects")
    assert tr.models_ft["ICL_shuffled_subjects"] is m and set(tr.history_ft) == {"ICL", "ICL_shuffled_subjects"}
    assert [r["step"] for r in tr.history_ft["ICL_shuffled_subjects"]["eval"]] == [0, 2, 4]
    assert tr.history_ft["ICL_shuffled_subjects"]["eval"][0] == tr.history_ft["ICL"]["eval"][0]  # same start
    w_pt, w_ft = tr.model_pt.state_dict(), m.state_dict()
    assert any(not torch.equal(w_pt[k], w_ft[k]) for k in w_pt)  # it trained a copy
    with pytest.raises(WorldConfigError, match="finetuning kind 'ICL_typo'"):
        finetune_g(tr, run, 0, tmp_path, "ICL_typo")
    files = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    again = train_g(run, 0, tmp_path, finetune=("ICL", "ICL_shuffled_subjects"))  # finished: loads, trains nothing
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == files
    assert again.history_ft["ICL_shuffled_subjects"] == tr.history_ft["ICL_shuffled_subjects"]
    for k, v in again.models_ft["ICL"].state_dict().items():
        assert torch.equal(v, tr.models_ft["ICL"].state_dict()[k])


def test_pretrained_extension_on_a_tiny_checkpoint_and_not_run_without_weights(tmp_path):
    from analyses.papers.contextual_recall.data import RELATIONS, vocabulary
    from pretrained.testing import tiny_checkpoint

    path = tiny_checkpoint(tmp_path / "tiny", "gpt2", vocab=vocabulary(), n_ctx=128)
    run = EXPERIMENT.run(tmp_path / "a", preset="micro", parts=["pretrained"], options={"model": str(path)})
    res = run["parts"]["pretrained"]["results"]
    assert res["relations"] == list(RELATIONS) and res["t"] == [0, 1, 2]
    assert all(-1 <= s <= 1 for s in res["silhouette"]) and len(res["steering"]["rank_orig"]) == 5
    assert all(isinstance(r["ours"], float) for r in run["claims"])
    assert control_problems(run["claims"]) == [] and all(r["class"] == "extension" for r in run["claims"])
    init = res["at_init"]["init_values"]
    assert len(set(init["silhouette_rise"])) == 5  # five different random models
    missing = EXPERIMENT.run(tmp_path / "b", preset="micro", parts=["pretrained"], options={"model": "pythia-14m"})
    for row in missing["claims"]:
        assert row["verdict"] == "not run" and row["reason"].startswith("no weights")


def test_paper_preset_has_the_papers_sizes_and_takes_a_training_step():
    from analyses.papers.contextual_recall.data import build_world, sample_pt, sample_pt_rel
    from analyses.papers.contextual_recall.models import build_model_a, build_model_b, world_r_ctx
    from analyses.papers.contextual_recall.presets import RUN_G, RUN_R
    from analyses.papers.contextual_recall.runs import g_ctx
    from mechrecall.trainer import TrainConfig, train

    g, r = RUN_G["paper"], RUN_R["paper"]
    assert (
        g.world.n_subjects,
        g.world.n_types,
        g.world.n_values,
        g.world.grammar_len,
        g.world.n_subseq,
        g.world.p_grammar_only,
        g.world.target_div,
    ) == (256, 8, (256,) + (32,) * 7, 80, 5, 0.2, 0.5)
    assert (g.d_model, g.batch, g.pt_steps, g.ft_steps, g.pt_lr, g.n_demos, g.n_finetune) == (
        256,
        64,
        20000,
        2000,
        1e-4,
        16,
        128,
    )
    wg = build_world(g.world)
    assert wg.V == 753 and g.world.pt_len == 414 and abs(wg.div() - 0.5) < 1e-5
    model = build_model_a(wg.V, g_ctx(g), g.d_model)
    # 2,072,305 parameters at n_ctx=414 with a b_U; here n_ctx=413 (the longest input) and b_U is frozen at 0
    assert g_ctx(g) == 413
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 2_072_305 - 256 - 753
    tc = TrainConfig(steps=1, lr=g.pt_lr, loss_positions="mask", progress=False)
    res = train(model, lambda step, gen: sample_pt(wg, 2, gen), tc)
    assert len(res.history["train"]) == 1 and res.history["train"][0]["loss"] > 0
    wr = build_world(r.world)
    assert wr.V == 256 + 256 + 16 + 1 + 8 and world_r_ctx(r.world, r.n_demos) == 64
    mb = build_model_b(wr.V, 64, d_head=r.d_head)
    assert mb.cfg.d_model == 601 and sum(p.numel() for p in mb.parameters() if p.requires_grad) == 4 * 3 * 601 * 256
    res = train(
        mb, lambda step, gen: sample_pt_rel(wr, 2, gen), TrainConfig(steps=1, loss_positions="mask", progress=False)
    )
    assert res.history["train"][0]["loss"] > 0


def test_world_g_size_options_resize_the_world_and_keep_the_finetuning_share(tmp_path):
    from analyses.papers.contextual_recall.presets import PRESETS, resized_world
    from analyses.papers.contextual_recall.runs import check_run_g, g_ctx

    ctx, config = EXPERIMENT.prepare(
        tmp_path, preset="smoke", parts=["world_g"], options={"n_subjects": 64, "grammar_len": 40}
    )
    base, run = PRESETS["smoke"].run_g(0), ctx.params.run_g(0)
    assert config["options"]["n_subjects"] == 64 and config["options"]["grammar_len"] == 40
    assert (base.world.n_subjects, base.world.n_values, base.n_finetune) == (32, (32, 8, 8, 8), 16)
    assert (run.world.n_subjects, run.world.n_values, run.world.grammar_len) == (64, (64, 8, 8, 8), 40)
    assert run.n_finetune == 32  # half of the subjects, as the preset's 16 of 32
    world = check_run_g(run)
    assert world.attributes.shape == (64, 4) and g_ctx(run) > g_ctx(base)
    explicit = EXPERIMENT.prepare(
        tmp_path, preset="smoke", parts=["world_g"], options={"n_subjects": 20, "n_finetune": 9}
    )
    small = explicit[0].params.run_g(0)
    assert small.world.n_values == (20, 8, 8, 8) and small.n_finetune == 9  # --n-finetune wins over the share
    assert resized_world(base.world, 6, None).n_values == (6, 6, 6, 6)  # every M_l at most M
    with pytest.raises(Exception, match="n-subjects"):
        EXPERIMENT.prepare(tmp_path, preset="smoke", parts=["world_g"], options={"n_subjects": 1})


def test_every_claim_names_a_policy_line_and_identities_are_checks():
    """Issue #35: every rule of the table is computed from a line of the rule policy (never a hand-set Rule, never a
    bar from our seeds), each line is allowed for its class, and an identity row is class check (and only it)."""
    from analyses.papers.contextual_recall import claims as C
    from mechrecall.claims import Rule
    from mechrecall.policy import POLICY, PolicyRule

    assert C.CLAIMS
    for spec in C.CLAIMS:
        assert isinstance(spec.rule, PolicyRule) and not isinstance(spec.rule, Rule), spec.id
        assert spec.policy_line in POLICY and spec.kind in POLICY[spec.policy_line].classes, spec.id
        assert (spec.policy_line == "identity") == (spec.kind == "check"), spec.id
        assert (spec.policy_line == "extension") <= (spec.kind == "extension"), spec.id
    assert not hasattr(C, "R_FT_HELDOUT_MIN") and not hasattr(C, "G_FT_HELDOUT_MIN")  # no bar set from seeds
    lines = {s.id: s.policy_line for s in C.CLAIMS}
    assert lines["world_g.ft_icl_heldout"] == lines["world_r.ft_icl_heldout"] == "close_to_one"
    assert lines["world_r.pt_subject_head_cosine"] == lines["world_r.pt_relation_head_cosine"] == "close_to_one"
    assert lines["world_g.pt_icl_near_zero"] == "near_zero" and lines["world_g.steering_reaches_target"] == (
        "above_untrained"
    )


def _row(spec: Any, results: Any) -> dict[str, Any]:
    """The row of claim ``spec`` evaluated against ``results`` (it must apply)."""
    claim = spec.evaluate(results, experiment="contextual_recall")
    assert claim is not None, spec.id
    return claim.row()


def _cascade_results(measured: float, corrected: float, printed: float = 0.5) -> Any:
    """Construction results holding only the ``holds`` cascade the α_1 row reads (``model_construct``: the rest of
    the part is not built)."""
    from analyses.papers.contextual_recall.results import Cascade, Cascades, ConstructionResults

    acc = {s: {"seen@beta=inf": 1.0, "all_heldout@beta=inf": 1.0, "heldout_query@beta=40": 1.0} for s in (1, 2)}
    tag = Cascade.model_validate({
        "alpha1": printed, "population": "exact", "acc_step1": acc[1], "acc_step2": acc[2], "condition_lhs": 1.25,
        "condition_rhs": 3, "condition_holds": True, "step0_heldout": 0.0, "step1_heldout": 1.0, "step2_heldout": 1.0,
        "step2_collapse": {"not_applicable": "the condition holds"},
        "coef": {"alpha1_kq_subj_prev_token": measured, "alpha1_predicted": corrected,
                 "kq_subj_demo_subject_offsets_mean": -0.125},
    })  # fmt: skip
    return ConstructionResults.model_construct(cascade=Cascades.model_construct(holds=tag))


def test_cascade_alpha1_is_judged_against_the_printed_value_with_the_erratum_in_the_note():
    """Theorem 2's α_1 := η m⁻¹(1-1/U_L) as printed (0.5 in the theorem's setting) is the paper column; our measured
    coefficient 0.375 = α_1 (1-1/m) (m = 4) misses the printed band (±10 %) but lies in its partial band (±25 %), and
    the note gives the verdict against the corrected value."""
    from analyses.papers.contextual_recall.claims import CLAIMS

    spec = next(s for s in CLAIMS if s.id == "construction.cascade_holds_alpha1")
    row = _row(spec, _cascade_results(0.375, 0.375))
    assert row["paper"] == 0.5 and row["policy"] == "printed"
    assert row["verdict"] == "partial"  # |0.375 - 0.5| = 0.125: outside ±0.05, inside ±0.125
    assert "0.375" in row["note"] and "against it: reproduced" in row["note"]
    far = _row(spec, _cascade_results(0.2, 0.375))
    assert far["verdict"] == "not reproduced" and "against it: not reproduced" in far["note"]
    assert _row(spec, _cascade_results(0.5, 0.375))["verdict"] == "reproduced"
    collapse = next(s for s in CLAIMS if s.id == "construction.cascade_holds_step2_collapse")
    assert collapse.evaluate(_cascade_results(0.5, 0.375), experiment="contextual_recall") is None  # not applicable


def test_above_untrained_bar_comes_from_the_other_seeds_and_the_own_untrained_model_is_the_control():
    """A contrast's bar is 2 × the largest |value| of the untrained seeds seed+1..seed+5; the run's own untrained
    model (the control) is judged by that bar and fails it when it is no larger than them."""
    from analyses.papers.contextual_recall.claims import CLAIMS
    from analyses.papers.contextual_recall.results import Clustering, UntrainedG, WorldGAtInit, WorldGResults
    from mechrecall.typed import NotRun

    spec = next(s for s in CLAIMS if s.id == "world_g.silhouette_rises_with_demos")
    at_init = WorldGAtInit.model_construct(
        seeds=[1, 2, 3, 4, 5],
        control=UntrainedG.model_construct(silhouette_rise=0.1),
        init_values={"silhouette_rise": [0.05, -0.2, 0.1, 0.0, 0.15]},
    )
    clustering = Clustering.model_validate({"t": [0, 8], "silhouette": {"L2_attn_out": [0.1, 0.6]}})

    def results(rise: float) -> WorldGResults:  # only what the row reads (model_construct: the rest is not built)
        return WorldGResults.model_construct(silhouette_rise=rise, clustering_ft_icl=clustering, at_init=at_init)

    row = _row(spec, results(0.5))
    assert row["rule_spec"]["lo"] == pytest.approx(0.4) and row["verdict"] == "reproduced"
    assert row["control"] == 0.1 and "untrained seeds 1–5" in row["note"] and "t=8: 0.600" in row["note"]
    assert _row(spec, results(0.3))["verdict"] == "not reproduced"
    missing = _row(spec, NotRun(not_run="no weights"))
    assert missing["verdict"] == "not run" and missing["reason"] == "no weights"


def test_stored_results_read_back_as_the_typed_models(tmp_path):
    """``results.json`` of a micro run is read back as the parts' typed models (the claims re-evaluated from them are
    the stored rows); a misspelt or invalid field of a stored record is a one-line ``ResultsError`` naming it."""
    from analyses.papers.contextual_recall import results as R
    from mechrecall.claims import evaluate
    from mechrecall.typed import NotApplicable, NotRun, ResultsError

    payload = EXPERIMENT.run(
        tmp_path, preset="micro", parts=["construction", "pretrained"], options={"model": "pythia-14m"}
    )
    loaded = EXPERIMENT.load(tmp_path)
    construction, pretrained = loaded["construction"], loaded["pretrained"]
    assert isinstance(construction, R.ConstructionResults) and isinstance(construction.cascade.holds, R.Cascade)
    assert construction.prop1_pt_rel.exact == 1.0 and construction.prop2_restricted.not_in_u_with_full_u == 1.0
    assert isinstance(construction.cascade.holds.step2_collapse, NotApplicable)  # micro's `holds` world: no collapse
    assert isinstance(construction.cascade.paper_scale.step2_collapse, float)
    assert isinstance(pretrained, NotRun) and pretrained.why.startswith("no weights")
    assert pretrained.model == "pythia-14m"  # the run's head rides along
    stored = {r["id"]: r for r in payload["claims"]}
    for part, typed in loaded.items():
        schema = payload["parts"][part]["results_schema"]
        assert schema == (None if part == "pretrained" else "ConstructionResults/1")
        rows = [c.row() for c in evaluate(EXPERIMENT.claim_table(), part, typed, experiment=EXPERIMENT.name)]
        assert rows and {r["id"] for r in rows} == {i for i in stored if i.split(".")[1] == part}
        for row in rows:
            assert (row["ours"], row["control"], row["rule"]) == tuple(
                stored[row["id"]][k] for k in ("ours", "control", "rule")
            )
    path = tmp_path / "contextual_recall" / "results.json"
    record = json.loads(path.read_text())
    results = record["parts"]["construction"]["results"]
    for broken, field in (
        ({**results, "prop1_pt_rel": {**results["prop1_pt_rel"], "exact": "all"}}, "prop1_pt_rel.exact"),
        ({("prop2_restrcted" if k == "prop2_restricted" else k): v for k, v in results.items()}, "prop2_restricted"),
        (
            {**results, "prop2_restricted": {**results["prop2_restricted"], "acc_answer_not_in_U'": "high"}},
            "prop2_restricted.acc_answer_not_in_U'",
        ),
    ):
        record["parts"]["construction"]["results"] = broken
        path.write_text(json.dumps(record))
        with pytest.raises(ResultsError) as err:
            EXPERIMENT.load(tmp_path)
        message = str(err.value)
        assert message.startswith(f"ConstructionResults: {field}: ") and "\n" not in message


def test_scale_axes_hold_the_papers_sizes_and_smoke_is_reduced_where_it_is_smaller():
    """``scale_axes``: the paper preset holds App. B.1 / B.2's sizes; smoke's World-G (M = 32 of 256, S = 24 of 80)
    and World-R read 'reduced scale'; the construction part is the theorem's own setting (the paper's scale at
    smoke); the pretrained extension declares none."""
    from analyses.papers.contextual_recall.presets import PRESETS
    from mechrecall.claims import PAPER_SCALE, REDUCED_SCALE, at_scale

    paper = PRESETS["paper"]
    assert {k: paper.scale_axes("world_g")[k] for k in ("M", "S", "L", "N_tr", "d", "PT steps", "FT steps")} == {
        "M": 256, "S": 80, "L": 8, "N_tr": 5, "d": 256, "PT steps": 20000, "FT steps": 2000,
    }  # fmt: skip
    r = paper.scale_axes("world_r")
    assert (r["M"], r["S"], r["d_h"], r["heads"], r["PT steps"], r["FT steps"], r["N_ft"]) == (
        256, 10, 256, 3, 2000, 1000, 5,
    )  # fmt: skip
    assert paper.scale_axes("world_r_absolute") == r and paper.scale_axes("pretrained") == {}

    def scale(preset: str, part: str) -> dict:
        ours, theirs = PRESETS[preset].scale_axes(part), paper.scale_axes(part)
        return {a: (ours[a], theirs[a]) for a in ours}

    g = scale("smoke", "world_g")
    assert g["M"] == (32, 256) and g["S"] == (24, 80) and at_scale(g) == REDUCED_SCALE
    assert at_scale(scale("smoke", "world_r")) == REDUCED_SCALE
    assert at_scale(scale("smoke", "construction")) == PAPER_SCALE
    assert at_scale(scale("micro", "construction")) == REDUCED_SCALE  # a smaller cascade world and fewer samples
    assert at_scale(scale("paper", "world_g")) == PAPER_SCALE
