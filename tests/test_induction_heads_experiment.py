"""``python -m analyses.induction_emergence``: micro parts end to end, figures, claims, Pythia, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from analyses.induction_emergence import EXPERIMENT
from analyses.papers.induction_heads import metrics as em
from analyses.papers.induction_heads import parts
from analyses.papers.induction_heads import results as R
from mechrecall.claims import control_problems, evaluate
from mechrecall.errors import UsageError
from mechrecall.experiment import PartResult
from mechrecall.typed import NotRun, Results, ResultsError


def _ctx(tmp_path, preset="micro", parts=(), **options):
    """The context the protocol hands a part (options checked, the preset's overrides applied)."""
    ctx, _ = EXPERIMENT.prepare(tmp_path, preset=preset, parts=list(parts) or None, options=options)
    return ctx


def _claims(part, result, preset="micro"):
    """The claims table evaluated against a part's results, as the protocol does: {name: Claim}; every measured claim
    has a control value that its rule rejects."""
    from analyses.papers.induction_heads.presets import PRESETS

    ours, paper = PRESETS[preset].scale_axes(part), PRESETS["paper"].scale_axes(part)
    scale = {axis: (float(ours[axis]), float(paper[axis])) for axis in ours}
    rows = evaluate(
        EXPERIMENT.claim_table(), part, result.results, experiment=EXPERIMENT.name, preset=preset, scale=scale
    )
    assert control_problems([c.row() for c in rows]) == []
    return {c.id.rsplit(".", 1)[1]: c for c in rows}


def _json(result: PartResult) -> dict:
    """A part's typed results as ``results.json`` stores them (the undeclared entries too: histories, rows)."""
    assert isinstance(result.results, Results)
    return result.results.to_json()


def _lines(fig, axis_index=0):
    return fig.axes[axis_index].get_lines()


def test_micro_parts_write_claims_with_computed_verdicts(tmp_path):
    payload = EXPERIMENT.run(tmp_path, preset="micro", parts=["exact", "ode"])
    rows = {r["id"].split(".", 1)[1]: r for r in payload["claims"]}
    assert [
        r["id"] for r in payload["claims"] if r["reason"].startswith("not measured")
    ] == []  # every `reads` is written
    assert control_problems(payload["claims"]) == []
    assert len(rows) == 7 and {k: r["class"] for k, r in rows.items() if r["class"] != "paper"} == {
        "exact.closed_form_equals_matrix_model": "check",
        "exact.orbit_gradient_in_19dim_subspace": "check",
        "ode.t_icl_over_N2_vs_asymptote": "extension",
    }
    assert all(r["policy"] for r in rows.values())
    exact_scale = {"closed_form_D": [16, 16], "closed_form_N": [4, 4], "orbit_D": [4, 4], "orbit_N": [2, 2]}
    assert rows["exact.closed_form_equals_matrix_model"]["scale"] == exact_scale
    assert rows["exact.closed_form_equals_matrix_model"]["at_scale"] == "paper"  # the identities' own setting
    assert rows["ode.t_icl_exponent"]["scale"] == {"N_max": [16, 128]}
    assert rows["ode.t_icl_exponent"]["at_scale"] == "reduced"
    assert all(
        r["note"].startswith("micro preset: sizes far below") or "; micro preset:" in r["note"] for r in rows.values()
    )
    assert {r["verdict"] for r in rows.values()} == {"not comparable"}  # micro: never a verdict
    orbit, closed = rows["exact.orbit_gradient_in_19dim_subspace"], rows["exact.closed_form_equals_matrix_model"]
    assert orbit["ours"] < 1e-10 and orbit["control"] > 0.5  # the plain gradient leaves the subspace
    assert closed["ours"] < 1e-10 and closed["control"] > 0.1  # Gaussian codes break the closed form
    assert rows["ode.order_gamma_beta_alpha"]["ours"] == 1 and rows["ode.order_gamma_beta_alpha"]["control"] == 0
    assert rows["ode.t_icl_exponent"]["control"] == pytest.approx(1.0, abs=0.02)  # T_γ: Θ(N)
    saved = json.loads((tmp_path / "induction_emergence" / "results.json").read_text())
    assert saved["parts"]["ode"]["status"] == "done" and "fig5_emergence_scaling.png" in saved["figures"]


def test_ode_part_figure_plots_the_three_times_and_the_quadratic_asymptote(tmp_path):
    res = parts.part_ode(_ctx(tmp_path, parts=("ode",)))
    assert isinstance(res.results, R.OdeResults)
    fig = res.figures["fig5_emergence_scaling.png"]
    left, right = fig.axes[:2]
    assert [l.get_label() for l in left.get_lines()] == ["T_γ₃", "T_β₂", "T_α₃"]
    assert left.get_xscale() == "log" and right.get_yscale() == "log"
    rows = _json(res)["rows"]
    assert list(right.get_lines()[0].get_xdata()) == [r["N"] for r in rows] == res.results.ns
    assert list(right.get_lines()[0].get_ydata()) == [r["t_icl"] for r in rows]
    assert "N²" in right.get_lines()[1].get_label()


def test_disentangled_part_trains_both_runs_and_plots_all_19(tmp_path):
    res = parts.part_disentangled(_ctx(tmp_path, parts=("disentangled",)))
    fig = res.figures["fig4_pseudo_parameters.png"]
    assert len(fig.axes) == 4 and len(_lines(fig, 0)) == 19 and len(_lines(fig, 2)) == 19
    assert isinstance(res.results, R.DisentangledResults)
    only = _json(res)["main"]["only"][-1]
    moved = {k for k in only if k.startswith(("alpha", "beta", "gamma")) and only[k] != 0}
    assert moved <= {"alpha3", "beta2", "gamma3"}
    assert res.results.summary.final_loss_only == only["loss"]
    summary = _json(res)["summary"]
    # exact by construction, so tests rather than claims: the restricted run stays in the span of what it trains,
    # and β₃..β₆ never move (the query has no positional code; eq. 7)
    assert summary["only_run_max_abs_others"] == 0.0 and summary["max_abs_beta3_to_beta6"] == 0.0
    claims = _claims("disentangled", res)
    assert set(claims) == {"loss_drops", "top3_are_alpha3_beta2_gamma3", "only_run_not_slower"}
    assert claims["loss_drops"].control == 1.0 and claims["top3_are_alpha3_beta2_gamma3"].control == 0.0
    heat = res.figures["fig3_weights.png"]
    assert [a.get_title().split(" ")[0] for a in heat.axes[:3]] == ["W1", "W2", "W3ᵀ"]
    assert heat.axes[0].get_images()[0].get_array().shape == (16, 16)  # micro: D = 8


def test_standard_part_reports_head_roles_and_fig2_contrasts(tmp_path):
    res = parts.part_standard(_ctx(tmp_path, parts=("standard",)))
    assert isinstance(res.results, R.StandardResults)
    claims = _claims("standard", res)
    assert all(c.ours is not None for c in claims.values()) and len(claims) == 8
    assert claims["previous_token_head_layer0"].note.endswith(
        f"layer 1: {res.results.role_scores.L1_previous_token:.3f}"
    )
    assert claims["induction_head_layer1"].note.endswith(f"layer 0: {res.results.role_scores.L0_induction:.3f}")
    assert "bar from untrained seeds 1–5: " in claims["fig2_P_P_subdiagonal"].note
    at_init = _json(res)["at_init"]
    assert at_init["seeds"] == [1, 2, 3, 4, 5] and all(len(v) == 5 for v in at_init["init_values"].values())
    assert claims["final_loss"].control == res.results.at_init.control.test_loss > 3  # ≈ ln 32 untrained
    assert (
        claims["fig2_output_OV1E_diagonal"].ours
        == res.results.fig2_contrasts.copy_
        == _json(res)["fig2_contrasts"]["copy"]
    )
    assert claims["final_loss"].kind == "extension"  # Fig 17 prints no number
    for name, key in (
        ("fig2_P_P_subdiagonal", "previous_position"),
        ("fig2_E_OV0E_diagonal", "induction"),
        ("fig2_output_OV1E_diagonal", "copy"),
    ):
        assert claims[name].policy == "above_untrained"
        assert claims[name].rule.lo == pytest.approx(2 * max(abs(v) for v in at_init["init_values"][key]))
        assert abs(at_init["control"][key]) < 1.0  # a z-score: ≈ N(0, 1/n) untrained
    roles = claims["roles_in_the_right_layers"]
    assert roles.policy == "higher_than" and roles.rule.lo == 0.05  # a difference of two attention fractions
    assert claims["final_loss"].scale == {"d_model": (32, 2048), "batch": (64, 512), "steps": (30, 300), "N": (8, 8)}
    roles = _json(res)["head_roles"]
    expected = {(l, s) for l in (0, 1) for s in ("previous_token", "induction")}
    assert {(r["layer"], r["score"]) for r in roles} == expected
    fig2 = res.figures["fig2_interpretable_matrices.png"]
    assert fig2.axes[0].get_images()[0].get_array().shape == (64, 64)  # [E; P] with 32 + 32
    assert fig2.axes[1].get_images()[0].get_array().shape == (128, 128)
    assert fig2.axes[2].get_images()[0].get_array().shape == (256, 32)
    loss = res.figures["fig17_loss.png"].axes[0].get_lines()[0]
    assert len(loss.get_xdata()) == 30  # micro: 30 steps


@pytest.mark.slow
def test_sgd_scaling_appendixF_protocol_follows_the_ode(tmp_path):
    """SGD on the matrix model with gradients projected on α₃, β₂, γ₃ is Euler on the ODE (time = steps x lr/D):
    its t_ICL matches the ODE's; training runs in chunks that resume their checkpoints until t_ICL is reached."""
    res = parts.part_sgd_scaling(_ctx(tmp_path, parts=("sgd_scaling",)))
    span = [r for r in _json(res)["rows"] if r["variant"] == "appendixF_span"]
    assert [r["N"] for r in span] == [2, 3, 4]
    for r in span:
        assert r["t_icl"] == pytest.approx(r["t_icl_ode"], rel=0.05)
        assert r["final_residual"] == 0.0
    claims = _claims("sgd_scaling", res)
    assert set(claims) == {"t_icl_exponent_full_training", "t_icl_exponent_appendixF", "order_full_training"}
    assert claims["t_icl_exponent_appendixF"].ours is not None
    assert (
        claims["t_icl_exponent_full_training"].seeds == (0,)
        and "ODE's exponent" in claims["t_icl_exponent_full_training"].note
    )
    ax = res.figures["fig5_full_training.png"].axes[0]
    assert ax.get_xscale() == "log" and list(ax.get_lines()[-1].get_xdata()) == [2, 3, 4]


def test_paper_sizes_run_a_few_steps():
    """The paper preset's configurations are valid: two steps of each at the paper's sizes (small batches)."""
    from analyses.papers.induction_heads.presets import PRESETS
    from analyses.papers.induction_heads.runs import StandardRun, disentangled_runs, train_disentangled, train_standard

    paper = PRESETS["paper"]
    std = StandardRun(
        d_model=paper.standard.d_model, n_pairs=paper.standard_n_pairs, steps=2, batch_size=2, eval_every=0
    )
    result = train_standard(std)
    assert result.model.cfg.d_model == 2048 and len(result.history["train"]) == 2
    plan = disentangled_runs(paper.disentangled, paper.extra_trajectories, seed=0)
    assert set(plan) == {"main", "fig15", "fig16"}
    run = replace(plan["main"], steps=2, batch_size=4, log_every=1, snapshot_steps=())
    res = train_disentangled(run)
    assert res.model.dim == 32 and res.model.n_pairs == 16 and len(res.history) == 3


# --------------------------------------------------------------------------- Pythia extension


def test_pythia_part_on_a_tiny_local_mirror(tmp_path):
    from analyses.papers.induction_heads.pretrained import TOP_K
    from pretrained.testing import tiny_checkpoint

    mirror = tmp_path / "mirror"
    for step, seed in ((0, 1), (100, 2), (1000, 3)):
        tiny_checkpoint(mirror / f"step{step}", "gpt_neox", seed=seed, n_layers=2)
    res = parts.part_pythia(_ctx(tmp_path / "out", parts=("pythia",), model=str(mirror), pythia_threshold=0.2))
    assert isinstance(res.results, R.PythiaResults)
    assert res.results.checkpoints == [0, 100, 1000]
    r = _json(res)
    claims = _claims("pythia", res)
    assert all(c.ours is not None and c.kind == "extension" for c in claims.values())
    final = claims["final_induction_score"]
    assert final.rule.lo == 0.2 and final.note == f"measured on {mirror}; threshold 0.2"
    assert r["weight_based_fig2"].startswith("not applicable") and "rotary" in r["weight_based_fig2"]
    # the same estimator, recomputed from the stored grids
    (l, h) = r["top_heads"]["induction"][0]
    values = [r["scores"][str(s)]["induction"][l][h] for s in (0, 100, 1000)]
    assert res.results.emergence_step[f"induction L{l}H{h}"] == em.crossing_time([0, 100, 1000], values, 0.2)
    ax = res.figures["pythia_head_roles_vs_step.png"].axes[0]
    assert ax.get_xscale() == "log" and len([ln for ln in ax.get_lines() if ln.get_marker() == "o"]) == 2 * TOP_K


def test_pythia_part_without_weights_is_not_run_with_the_reason(tmp_path):
    res = parts.part_pythia(_ctx(tmp_path, parts=("pythia",), model="EleutherAI/pythia-70m", checkpoints=(0, 1000)))
    assert isinstance(res.results, NotRun) and res.results.threshold == 0.4  # the run's head rides along
    claims = _claims("pythia", res)
    assert claims and all(c.verdict == "not run" and c.reason.startswith("no weights") for c in claims.values())
    assert all(c.note == "" for c in claims.values())  # a not-run row quotes no numbers


def test_stored_results_read_back_as_the_typed_models(tmp_path):
    """``results.json`` of a micro run is read back as the parts' typed models (the claims re-evaluated from them are
    the stored rows); a misspelt or invalid field of a stored record is a one-line ``ResultsError`` naming it."""
    payload = EXPERIMENT.run(tmp_path, preset="micro", parts=["exact", "ode", "pythia"])
    loaded = EXPERIMENT.load(tmp_path)
    exact, ode, pythia = loaded["exact"], loaded["ode"], loaded["pythia"]
    assert isinstance(exact, R.ExactResults) and isinstance(ode, R.OdeResults)
    assert exact.orbit.strict.symmetrized < 1e-10 < exact.control.max_closed_form_gap
    assert exact.orbit.strict.orbit_sequences > 0 and isinstance(exact.orbit.strict.orbit_sequences, int)
    assert ode.N_max == max(ode.ns) == 16 and isinstance(ode.N_max, int)
    assert ode.order_gamma_beta_alpha is True and ode.control.order_gamma_beta_alpha is False
    assert isinstance(pythia, NotRun) and pythia.why.startswith("no weights") and pythia.threshold == 0.4
    stored = {r["id"]: r for r in payload["claims"]}
    for part, typed in loaded.items():
        assert payload["parts"][part]["results_schema"] == (None if part == "pythia" else f"{type(typed).__name__}/1")
        for c in evaluate(EXPERIMENT.claim_table(), part, typed, experiment=EXPERIMENT.name, preset="micro"):
            row = c.row()
            assert (row["ours"], row["control"], row["rule"]) == tuple(
                stored[c.id][k] for k in ("ours", "control", "rule")
            )
    path = tmp_path / "induction_emergence" / "results.json"
    record = json.loads(path.read_text())
    results = record["parts"]["ode"]["results"]
    for broken, field in (
        ({**results, "control": {**results["control"], "exponent_t_icl": "steep"}}, "control.exponent_t_icl"),
        ({("exponent_T_betta" if k == "exponent_T_beta" else k): v for k, v in results.items()}, "exponent_T_beta"),
    ):
        record["parts"]["ode"]["results"] = broken
        path.write_text(json.dumps(record))
        with pytest.raises(ResultsError) as err:
            EXPERIMENT.load(tmp_path)
        message = str(err.value)
        assert message.startswith(f"OdeResults: {field}: ") and "\n" not in message


# --------------------------------------------------------------------------- bad input


BAD_INPUT = [
    (["--n-pairs", "16"], "--n-pairs 16"),
    (["--experiment", "sgd_scaling", "--sgd-ns", "2,3,5"], "N=5"),
    (["--thresholds", "0.5,1.2,0.5"], "beta2=1.2"),
    (["--train-only", "alpha3,delta1"], "delta1"),
    (["--experiment", "pythia", "--checkpoints", "1000"], "at least 2 checkpoints"),
    (["--experiment", "pythia", "--checkpoints", "0,-5"], "--checkpoints -5"),
    (["--experiment", "pythia", "--pythia-threshold", "1"], "--pythia-threshold=1"),
    (["--steps", "0"], "--steps 0"),
    (["--ns", "1,4"], "--ns 1"),
    (["--ns", "4"], "--ns 4"),
    (["--ns", "a,b"], "--ns"),
    (["--seed", "1", "--experiment", "ode"], "part ode does not depend on a seed"),
]


def test_bad_input_from_the_command_line_is_one_line_exit_2(tmp_path):
    args, value = BAD_INPUT[0]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "analyses.induction_emergence",
            "--preset",
            "micro",
            "--out",
            str(tmp_path),
            "--no-progress",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert value in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, value", BAD_INPUT)
def test_bad_input_is_one_line_exit_2_before_any_work(tmp_path, capsys, args, value):
    code: int | str | None
    try:
        code = EXPERIMENT.main(["--preset", "micro", "--out", str(tmp_path), "--no-progress", *args])
    except SystemExit as exc:  # argparse's own errors (an option's type) exit from the parser
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and value in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "induction_emergence" / "runs").exists()  # nothing trained


def test_help_lists_every_part():
    text = EXPERIMENT.parser().format_help()
    for part in ("exact", "ode", "disentangled", "weights", "standard", "sgd_scaling", "pythia"):
        assert part in text
    assert "benchmark" not in [p.name for p in EXPERIMENT.parts]  # benchmarks/bench_induction_heads.py
    assert torch.get_num_threads() == 1


def test_bad_input_through_the_library_is_a_usage_error_before_any_work(tmp_path):
    with pytest.raises(UsageError, match="--n-pairs 16"):
        EXPERIMENT.run(tmp_path, preset="micro", parts=["standard"], options={"n_pairs": 16})
    with pytest.raises(UsageError, match="N=5"):
        EXPERIMENT.prepare(tmp_path, preset="micro", parts=["sgd_scaling"], options={"sgd_ns": (2, 3, 5)})
    assert not (tmp_path / "induction_emergence").exists()


def test_an_option_that_changes_a_size_is_noted_on_every_claim_of_the_run(tmp_path):
    """--ns overrides the preset's ode_ns: the exponent is then fitted on the last three N given, and every claim
    says what changed."""
    payload = EXPERIMENT.run(tmp_path, preset="micro", parts=["ode"], options={"ns": (2, 4, 8)})
    assert payload["parts"]["ode"]["results"]["fit_ns"] == [2, 4, 8]
    notes = [r["note"] for r in payload["claims"]]
    assert notes and all("changed from preset micro: ode_ns (2, 4, 8) (preset (2, 4, 8, 16))" in n for n in notes)


# --------------------------------------------------------------------------- the rule policy


def test_every_claim_names_a_policy_line_and_identities_are_checks():
    """Every rule of the table is computed from a line of ``mechrecall.policy`` (none set by hand), each line is one
    its class may use, the float64 identities are class ``check``, and each rule recomputes from its line."""
    from analyses.papers.induction_heads.claims import CLAIMS
    from mechrecall.claims import Rule
    from mechrecall.policy import POLICY, PolicyRule

    assert all(isinstance(c.rule, PolicyRule) and not isinstance(c.rule, Rule) for c in CLAIMS)
    assert all(c.kind in POLICY[c.policy_line].classes for c in CLAIMS)
    assert (
        {c.id for c in CLAIMS if c.policy_line == "identity"}
        == {c.id for c in CLAIMS if c.kind == "check"}
        == {
            "exact.closed_form_equals_matrix_model",
            "exact.orbit_gradient_in_19dim_subspace",
        }
    )
    assert all(c.paper is not None for c in CLAIMS if c.policy_line in ("printed", "printed_bound", "theta"))
    theta = {c.id: c.paper for c in CLAIMS if c.policy_line == "theta"}
    assert theta["ode.T_gamma_linear"] == 1.0 and theta["ode.T_beta_quadratic"] == 2.0  # Theorem 2's exponents
    assert all(c.kind == "extension" for c in CLAIMS if c.part in ("demo", "pythia"))
    t_gamma = next(c for c in CLAIMS if c.id == "ode.T_gamma_linear")
    rule = t_gamma.rule_for({})
    assert (rule.lo, rule.hi, rule.partial) == (0.75, 1.25, (0.5, 1.5))  # theta: ±0.25, partial ±0.5


def test_scale_axes_of_the_paper_preset_are_the_papers():
    """The paper preset holds the sizes the paper states: App. E (§2 model), App. D (Fig 4), App. C (Figs 6-14),
    App. F (Fig 5's SGD); smoke is below them on d_model; the exact part is the same in every preset."""
    from analyses.papers.induction_heads.presets import PRESETS

    paper, smoke = PRESETS["paper"], PRESETS["smoke"]
    assert paper.scale_axes("standard") == {"d_model": 2048, "batch": 512, "steps": 300, "N": 8}
    assert paper.scale_axes("disentangled") == {"D": 32, "N": 16, "batch": 256}
    assert paper.scale_axes("weights") == {"D": 16, "batch": 512, "N_max": 16, "steps_max": 1000}
    assert paper.scale_axes("sgd_scaling") == {"D": 256, "batch": 64}
    assert smoke.scale_axes("standard")["d_model"] == 128
    assert all(p.scale_axes("exact") == paper.scale_axes("exact") for p in PRESETS.values())
    assert paper.scale_axes("pythia") == {}
