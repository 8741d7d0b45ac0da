"""The parts of ``python -m analyses.noisy_icl`` and ``python -m analyses.laser_pythia``: glue from the context to
``runs.py`` / ``pretrained.py`` / ``theory.py`` and ``figures.py``. The claims (``claims.py``) are evaluated by the
protocol against each part's results.

noisy_icl:

- ``main``: the two-layer MLP/MLP model on α = 0.5 data; p(ȳ), p(τ), clean loss for the full model, F₂'s
  input matrix truncated at ρ ∈ {0.2, 0.1} and dropped (ρ = 0), and F₁ dropped; the FF-2 noise margin;
  layer-2 attention on ``[q, ȳ]`` vs ``[q, τ]``; p(τ) on noisy data — Figs 3, 4 (left), 7, 8 (left), 9 (left), 10.
- ``ff_variants``: MLP/linear, linear/MLP and no-FF models — Figs 11, 12, 13.
- ``finetune``: clean pre-training, then noisy fine-tuning of all weights — Figs 4 (right), 8 (right).
- ``multi_trigger``: five triggers Q = {1, 39, 43, 53, 58} — Fig 9 (right).
- ``ioi``: synthetic IOI with L = 3..7 layers (SGD, drop the last MLP) and L = 3..5 (Adam, ρ = 0.01) —
  Figs 19-20 (``paper`` preset; ``laptop`` runs Adam at L = 3 at its own small sizes, ``NoisyICLPreset.ioi``;
  ``micro`` runs L = 3 only, to exercise the pipeline); accuracy, p(τ) and the IO/S logit margin.
- ``theory``: Theorem 1 one-step margins, the App. B.3 recursion, Theorem 3 and the linear associative
  memory of Fig 18 (``theory.py``).

laser_pythia: one part per experiment of §4 (``factual``, ``factual20``, ``ioi``, ``prepositions``, ``gpt2-ioi``,
``sweep``), each ``pretrained.run_<part>`` on ``--model`` (or the paper's models for it), then its figures.
"""

from __future__ import annotations

from typing import Any

from analyses.papers.distributional import figures, pretrained, runs
from analyses.papers.distributional import results as R
from analyses.papers.distributional.metrics import qk_trigger_matching
from analyses.papers.distributional.runs import RunConfig
from mechrecall.errors import UsageError
from mechrecall.experiment import Context, PartResult
from mechrecall.typed import NotApplicable, read_results

# ----------------------------------------------------------------------------------- noisy_icl


def run_config(ctx: Context) -> RunConfig:
    """The training configuration of this invocation (sizes: the preset with the options applied)."""
    o = ctx.options
    return RunConfig(
        sizes=ctx.params, data_preset=o["data_preset"], alpha=o["alpha"], seed=ctx.seed, lr=o["lr"], device=ctx.device
    )


def check(ctx: Context) -> None:
    """What the options' ranges cannot say, before any work: a data configuration that exists at these sizes."""
    try:
        runs.data_config(run_config(ctx))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def part_main(ctx: Context) -> PartResult:
    """Figs 3, 4, 7, 8 (left), 9 (left), 10: the MLP/MLP model; F₂ stores the noise, attention recalls ȳ."""
    rc = run_config(ctx)
    run = runs.train_run(ctx.run_dir("main"), rc, progress=ctx.progress)
    model, history, data, noisy = run["model"], run["history"], run["data"], run["noisy"]
    qk = qk_trigger_matching(model)
    found = {
        "fig3_truncation.png": figures.fig_truncation(history, "F2", "Fig 3: truncating F₂'s input matrix"),
        "fig10_mlp_mlp.png": figures.fig_drops(history, "Fig 10: dropping F₁ or F₂ (MLP / MLP)"),
        "fig4_attention.png": figures.fig_attention(model, noisy, data, "Fig 4 (left)"),
        "fig7_readouts.png": figures.fig_readouts(model, noisy, data),
        "fig8_noise_fraction.png": figures.fig_noise_fraction(history, "Fig 8 (left): training on noisy data"),
        "fig9_qk_matching.png": figures.fig_matrix(
            qk, "Fig 9 (left): ⟨W¹_V W_E(i), W²_QK W_E(j)⟩ (one trigger)", "query token j", "previous token i"
        ),
    }
    from analyses.attention_html import attention_pattern_html

    found["attention_layer2.html"] = attention_pattern_html(model, noisy.tokens[:1].cpu(), layer=1)
    return PartResult(read_results(R.MainResults, runs.measure_main(run, rc)), found, footer=rc.footer())


def part_ff_variants(ctx: Context) -> PartResult:
    """Figs 11-13: MLP/linear, linear/MLP and no-FF models."""
    rc = run_config(ctx)
    results: dict[str, Any] = {}
    found: dict[str, Any] = {}
    for variant, fig in runs.FF_VARIANT_FIGURES.items():
        results[variant], run = runs.train_ff_variant(ctx.run_dir(variant), rc, variant, ctx.progress)
        if variant == "none":
            found["fig13_no_ff.png"] = figures.fig_truncation(
                run["history"], "OV1", "Fig 13: no FF, truncating W¹_V W¹_O"
            )
        else:
            found[f"{fig.lower().replace(' ', '')}_{variant}.png"] = figures.fig_drops(
                run["history"], f"{fig}: dropping F₁ or F₂ ({variant.replace('_', ' / ')})"
            )
    return PartResult(read_results(R.FFVariantsResults, results), found, footer=rc.footer())


def part_finetune(ctx: Context) -> PartResult:
    """Figs 4 (right), 8 (right): clean pre-training, then fine-tuning every weight on noisy data."""
    rc = run_config(ctx)
    results, fine = runs.train_finetune(ctx.run_dir, rc, ctx.progress)
    found = {
        "fig8_finetune.png": figures.fig_noise_fraction(
            fine["history"], "Fig 8 (right): fine-tuning on noisy data after clean pre-training"
        ),
        "fig4_finetune_attention.png": figures.fig_attention(
            fine["model"], fine["noisy"], fine["data"], "Fig 4 (right)"
        ),
    }
    return PartResult(read_results(R.FinetuneResults, results), found, footer=rc.footer())


def part_multi_trigger(ctx: Context) -> PartResult:
    """Fig 9 (right): five triggers; the QK matching is diagonal on each of them."""
    rc = run_config(ctx)
    results, qk = runs.train_multi_trigger(ctx.run_dir("multi_trigger"), rc, ctx.progress)
    found = {
        "fig9_multi_trigger.png": figures.fig_matrix(
            qk, "Fig 9 (right): five triggers", "query token j", "previous token i"
        )
    }
    return PartResult(read_results(R.MultiTriggerResults, results), found, footer=rc.footer())


def part_ioi(ctx: Context) -> PartResult:
    """Figs 19-20: synthetic IOI with L layers; dropping (SGD) or truncating (Adam) the last MLP helps.

    Besides the paper's accuracy gain, each run reports the IO/S margin (logit of ȳ, the token that follows the
    trigger once — the indirect object — minus that of the distractor that follows it twice — the subject):
    the edit removes τ, the distributional association held by the last MLP, and should leave the in-context
    counting that separates IO from S where it is, in attention (§3's division of labour)."""
    rc = runs.ioi_config(run_config(ctx), {k: ctx.options.get(k) for k in runs.SIZE_FIELDS})
    results: dict[str, Any] = {}
    found: dict[str, Any] = {}
    for optimizer, layers, every in (
        ("sgd", rc.sizes.ioi_layers, range(3, 8)),
        ("adam", rc.sizes.adam_layers, range(3, 6)),
    ):
        histories = {}
        for n_layers in sorted(set(every) | set(layers)):
            run_id = runs.ioi_run_id(optimizer, n_layers)
            if n_layers not in layers:
                results[run_id] = NotApplicable(
                    not_applicable=f"preset {ctx.preset} does not train IOI with {optimizer} at L = {n_layers}"
                )
                continue
            results[run_id], history = runs.train_ioi(ctx.run_dir, rc, optimizer, n_layers, ctx.progress)
            if history is not None:
                histories[n_layers] = history
        if histories:
            found[f"fig{19 if optimizer == 'sgd' else 20}_ioi_{optimizer}.png"] = figures.fig_ioi(histories, optimizer)
    if any(isinstance(v, dict) and "counting" in v for v in results.values()):
        found["ioi_counting_by_position.png"] = figures.fig_ioi_counting(results)
    return PartResult(read_results(R.IOIResults, results), found, footer=rc.footer() + ", synthetic IOI")


def part_theory(ctx: Context) -> PartResult:
    """Theorem 1, App. B.3, Theorem 3 and Fig 18 (``theory.py``)."""
    from analyses.papers.distributional import theory

    results, lam = theory.theory_results(quick=not ctx.params.theory_full)
    return PartResult(read_results(R.TheoryResults, results), {"fig18_lam.png": figures.fig18_lam(lam)})


# ----------------------------------------------------------------------------------- laser_pythia


def part_laser(ctx: Context) -> PartResult:
    """One laser_pythia part (``ctx.part``): its runner on ``--model`` (or the paper's models), then its figures."""
    opts = pretrained.options(ctx)
    paper_models = ctx.params.models[ctx.part]
    models = list(opts.models) if opts.models else list(paper_models)
    found: dict[str, Any] = {}
    if ctx.part == "sweep":
        results, found = pretrained.run_sweep(ctx, models, opts)
    else:
        results = pretrained.RUNNERS[ctx.part](ctx, models, opts)
    found = {**figures.laser_figures(ctx.part, results), **found}
    missing = ctx.cache.get("missing", {})
    typed = read_results(
        LASER_RESULTS[ctx.part],
        {
            "models": models,
            "results": results,
            "missing": missing,
            "measures": pretrained.measures(ctx.part, models, results, missing, paper_models),
        },
    )
    return PartResult(typed, found)


#: Each laser_pythia part's typed results (``results.py``).
LASER_RESULTS: dict[str, type[R.LaserResults[Any]]] = {
    "factual": R.FactualResults,
    "factual20": R.Factual20Results,
    "ioi": R.PythiaIOIResults,
    "prepositions": R.PrepositionsResults,
    "gpt2-ioi": R.GPT2IOIResults,
    "sweep": R.SweepResults,
}
