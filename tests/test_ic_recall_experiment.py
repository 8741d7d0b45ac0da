"""IC-recall experiment: the generic pairwise-attention score, the resumable process-pool sweep, figures, the
CLI (bad input, --help) and the pretrained-model extension on a tiny local checkpoint."""

import json
import subprocess
import sys
import time

import pytest
import torch

from analyses.pair_attention import END, OTHER, QUERY, head_pair_scores, is_pairwise, pair_attention_stats

torch.set_num_threads(1)
ENV_CMD = [sys.executable, "-m", "analyses.ic_recall"]


def test_pair_attention_stats_by_hand():
    roles = torch.tensor([0, 1, 2, 3, QUERY, END])
    st = pair_attention_stats(
        torch.tensor(
            [[0.2, 0.2, 0.3, 0.3, 0.0, 0.0], [1 / 6] * 6, [0.1, 0.3, 0.3, 0.1, 0.1, 0.1]], dtype=torch.float64
        ),
        roles,
    )
    assert st.within.tolist() == pytest.approx([0.0, 0.0, 0.5])
    assert st.across.tolist() == pytest.approx([0.2, 0.0, 0.0])
    assert st.rest.tolist() == pytest.approx([0.0, 1 / 3, 0.2])
    assert st.score.tolist() == pytest.approx([0.2, 0.0, 0.0])
    assert is_pairwise(st).tolist() == [True, False, False]
    # the paper's n = 3 optimum (a, a, ½−a, ½−a, 0, 0): score 1 − 4a
    a = 0.1332
    assert pair_attention_stats(torch.tensor([a, a, 0.5 - a, 0.5 - a, 0, 0]), roles).score.item() == pytest.approx(
        1 - 4 * a
    )
    # multi-token spans add up; BOS/separators are OTHER
    spans = torch.tensor([OTHER, 0, 0, OTHER, 1, 2, 3, 3, QUERY, END])
    att = torch.tensor([0.3, 0.05, 0.05, 0.0, 0.1, 0.2, 0.1, 0.1, 0.05, 0.05])
    st = pair_attention_stats(att, spans)
    assert st.subject_mass.tolist()[0] == pytest.approx([0.1, 0.2])
    assert st.answer_mass.tolist()[0] == pytest.approx([0.1, 0.2])
    assert st.other_mass.item() == pytest.approx(0.3)
    with pytest.raises(ValueError, match="roles"):
        pair_attention_stats(att, torch.tensor([OTHER, 0, 0, OTHER, 1, 2, 2, 2, QUERY, END]))


def test_head_scores_on_the_toy_model_read_softmax_theta():
    from analyses.papers.ic_recall.model import build_model, set_scores
    from analyses.papers.ic_recall.task import ICRecallSpec, ICRecallTask

    task = ICRecallTask(ICRecallSpec(8, 64, 2, "random"))
    model = build_model(task.spec, "partial", dtype="float64")
    theta = torch.log(torch.tensor([0.18, 0.18, 0.31, 0.31, 0.01, 0.01], dtype=torch.float64))
    set_scores(model, theta, torch.zeros(7, dtype=torch.float64))
    data = task.sample(16, torch.Generator().manual_seed(0))
    roles = torch.tensor([0, 1, 2, 3, QUERY, END, OTHER]).expand(16, 7)
    table = head_pair_scores(model, data.tokens, roles, 5)
    assert len(table) == 1
    row = table.iloc[0]
    assert row.within == pytest.approx(0.0, abs=1e-12)
    assert row.across == pytest.approx((0.62 - 0.36) / 0.98)
    assert row.rest == pytest.approx(0.02)
    assert row.pairwise_fraction == 1.0


def test_sweep_resumes_and_two_workers_give_the_same_numbers(tmp_path):
    from analyses.papers.ic_recall.sweep import Cell, run_cells

    cells = [
        Cell(n=5, m=10, N=N, seed=s, family="affine", lr=1e-2, steps=25, test_size=500) for N in (1, 4) for s in (0, 1)
    ]
    one, info1 = run_cells(cells, tmp_path / "w1", workers=1)
    two, info2 = run_cells(cells, tmp_path / "w2", workers=2)
    assert info1["ran"] == info2["ran"] == 4
    for a, b in zip(one, two):
        assert a["v"] == b["v"] and a["acc_relation_exact"] == b["acc_relation_exact"]
    (tmp_path / "w1" / f"{cells[0].key}.json").unlink()  # an interrupted sweep: one cell missing
    again, info = run_cells(cells, tmp_path / "w1", workers=2)
    assert info["skipped"] == 3 and info["ran"] == 1
    assert [r["v"] for r in again] == [r["v"] for r in one]


def test_figures_hold_the_plotted_data():
    from analyses.papers.ic_recall.figures import accuracy_vs_samples, attention_heatmaps

    fig = attention_heatmaps(
        [{"label": "A", "k": 2, "v": [0.13, 0.13, 0.37, 0.37, 0.0, 0.0], "q": [0.1] * 7}], "Fig 2 test"
    )
    axes = fig.get_axes()
    assert len(axes) == 2 and fig._suptitle.get_text().startswith("Fig 2")
    assert [t.get_text() for t in axes[0].texts] == ["0.13", "0.13", "0.37", "0.37", "0.00", "0.00"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["s1", "a1", "s2", "a2", "s3", "EoS", "r*"]
    rows = [
        {"n": n, "m": 6, "N": N, "seed": s, "acc_relation_exact": 0.5 + 0.1 * s, "bayes_ceiling_exact": 0.9}
        for n in (3, 5)
        for N in (1, 2, 4)
        for s in (0, 1)
    ]
    fig = accuracy_vs_samples(rows, "Fig 3 test")
    ax = fig.get_axes()[0]
    data_lines = [l for l in ax.get_lines() if l.get_marker() == "o"]
    assert len(data_lines) == 2 and list(data_lines[0].get_ydata()) == pytest.approx([0.55] * 3)
    assert sum(1 for l in ax.get_lines() if list(l.get_ydata()) == [0.9, 0.9]) == 2  # the ceilings
    assert ax.get_ylabel() == "first-step test accuracy"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--temperature", "0"], "--temperature: temperature T=0.0"),
        (["--family", "affine", "--n", "8"], "prime n; n=8"),
        (["--family", "affine", "--n", "7", "--m", "50"], "m=50"),
        (["--n", "3", "--m", "6", "--family", "all_bijections", "--samples", "100"], "N=100"),
        (["--n-ctx", "5"], "n_ctx=5"),
        (["--workers", "0"], "--workers 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_work(args, message, tmp_path, capsys):
    import analyses.ic_recall as entry

    code = entry.main(["--preset", "micro", "--out", str(tmp_path), "--no-progress", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ic_recall" / "results.json").exists()


def test_bad_input_from_the_shell_exits_2_without_traceback(tmp_path):
    proc = subprocess.run(
        [*ENV_CMD, "--preset", "micro", "--out", str(tmp_path), "--temperature", "-1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "python -m analyses.ic_recall: error: --temperature: temperature T=-1.0; expected a number > 0"
    ]


def test_help_is_fast_and_lists_the_parts():
    started = time.perf_counter()
    proc = subprocess.run([*ENV_CMD, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for part in ("exact", "pattern", "sample_complexity", "algorithm1", "pretrained_mlp", "benchmark", "pretrained"):
        assert part in proc.stdout
    assert time.perf_counter() - started < 10  # a subprocess start; the module itself imports no torch
    assert (
        "torch"
        not in subprocess.run(
            [sys.executable, "-c", "import sys, analyses.ic_recall; print(' '.join(sys.modules))"],
            capture_output=True,
            text=True,
        ).stdout.split()
    )


def test_cli_runs_and_pretrained_extension_scores_a_tiny_checkpoint(tmp_path):
    import pretrained
    from analyses.papers.ic_recall.pretrained_heads import fact_prompts, prompt_vocab
    from pretrained.testing import tiny_checkpoint

    tiny = tiny_checkpoint(tmp_path / "tiny", "gpt_neox", vocab=prompt_vocab(), seed=0, n_layers=2)
    import analyses.ic_recall as entry

    out = tmp_path / "out"
    code = entry.main(
        [
            "--preset",
            "micro",
            "--out",
            str(out),
            "--no-progress",
            "--experiment",
            "algorithm1",
            "pretrained",
            "--model",
            str(tiny),
        ]
    )
    assert code == 0
    res = json.loads((out / "ic_recall" / "results.json").read_text())
    claims = {c["id"]: c for c in res["claims"]}
    assert claims["ic_recall.algorithm1.n7_stage1_second_step"]["verdict"] == "reproduced"
    best = claims["ic_recall.pretrained.best_head_score"]
    assert isinstance(best["ours"], float) and best["verdict"] != "not run"
    table = res["parts"]["pretrained"]["results"]["table"]
    assert len(table) == 2 * 4  # layers × heads
    assert (out / "ic_recall" / "pretrained_head_pair_scores.png").stat().st_size > 0
    # independent recomputation of one head's score from the cached pattern
    model = pretrained.load(str(tiny), processing="raw")
    prompts = fact_prompts(model.tokenizer, k=2, n_prompts=24, seed=0)
    assert "<|endoftext|>" not in "".join(model.tokenizer.convert_ids_to_tokens(prompts["tokens"][0][1:6]))
    _, cache = model.run_with_cache(prompts["tokens"])
    row = next(r for r in table if r["layer"] == 1 and r["head"] == 2)
    scores = []
    for b in range(len(prompts["texts"])):
        q = int(prompts["query_pos"][b])
        att = cache["blocks.1.attn.hook_pattern"][b, 2, q].double()
        roles = prompts["roles"][b]
        mass = [float(att[(roles == r) & (torch.arange(len(roles)) <= q)].sum()) for r in range(4)]
        within = (abs(mass[0] - mass[1]) / (mass[0] + mass[1]) + abs(mass[2] - mass[3]) / (mass[2] + mass[3])) / 2
        P = [mass[0] + mass[1], mass[2] + mass[3]]
        across = abs(P[0] - P[1]) / sum(P)
        rest = float(att[((roles == QUERY) | (roles == END)) & (torch.arange(len(roles)) <= q)].sum())
        scores.append((1 - within) * across * (1 - rest))
    assert row["score"] == pytest.approx(sum(scores) / len(scores), abs=1e-6)


def test_no_weights_gives_not_run_claims(tmp_path, monkeypatch):
    import analyses.ic_recall as entry
    from analyses.papers.ic_recall.pretrained_heads import part_pretrained
    from mechrecall.experiment import Context

    ctx = Context(entry.EXPERIMENT, tmp_path, "micro", 0, {"model": "pythia-14m"})
    result = part_pretrained(ctx)
    assert [c.verdict for c in result.claims] == ["not run", "not run"]
    assert all(c.reason.startswith("no weights") for c in result.claims)
