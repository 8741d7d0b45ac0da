"""LASER on pretrained Pythia / GPT-2 (Chen, Bruna & Bietti §4.1, App. C, I) — ``python -m analyses.laser_pythia``.

Truncating one late MLP input matrix to a tiny rank (LASER, Sharma et al. 2024) removes the generic
"the" that feed-forward layers predict from distributional statistics, and lets the in-context answer win.
Every truncation uses ``hooks.low_rank`` on **raw** weights (``pretrained.load(..., processing="raw")``),
and the weights are checked bit-identical after each one. Layers are given as in the paper (1-indexed);
results show the TransformerLens block (``layer - 1``) beside them.

Experiments (``--experiment``):

- ``factual``: "Madrid is located in" → " Spain" on Pythia-1B, layer 16, ρ = 0.0125: top-5 next tokens
  full vs LASER (Table 1), P(Spain)/P(the) across ``--checkpoints`` (Fig 5 right).
- ``factual20``: the 20 prompts of Table 5 on Pythia-1B / 1.4B / 2.8B (Fig 16).
- ``ioi``: 100 IOI prompts ("When {IO} and {S} went to a store, {S} gave a drink to") on Pythia-410M (layer 22,
  ρ = 0.02) and 1B (layer 11, ρ = 0.008): mean P(IO), P(S), P(the), ratios, accuracy (Figs 5 left, 15).
- ``prepositions``: mean rank of " the" after 30 raw prepositions and 40 sentences, no LASER (Fig 14).
- ``gpt2-ioi``: GPT-2 small, "When Mary and John went to a store, John gave a drink to", LASER on ``W_in`` of
  layers 9-12 over a ρ grid: P(Mary), P(them), P(the), P(John) (Fig 17).
- ``sweep``: ``analyses.laser_sweep`` over layers x matrices x ρ for any model and prompt set (``--prompts``
  JSON lines ``{"prompt": ..., "answer": ...}``), objective mean P(answer)/P(" the").

``--model`` takes TransformerLens names (``pythia-1b``) or local Hugging Face directories (read offline; a
directory with ``step{N}/`` subfolders serves ``--checkpoints``). Without local weights and without the hub the
module stops at once, naming what to pass.

``results.json`` (schema ``mechrecall.results/1``, see ``mechrecall.results``) holds, under
``results[experiment][model][checkpoint]``: ``intervention`` (paper layer, TL block, matrix, ρ, rank kept) and per
variant ``full`` / ``laser`` the probabilities, ratios, ranks and top-k tokens of that experiment; the paper's
numbers sit beside ours in ``claims``.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

import pretrained
from analyses.plotting import subplots
from hooks import low_rank, rank_for
from hooks.weights import get_matrix
from mechrecall.results import Claim, write_results
from analyses.papers.distributional.prompts import (
    FACTUAL_20,
    GPT2_IOI,
    GPT2_IOI_TOKENS,
    MADRID,
    PREPOSITION_SENTENCES,
    PREPOSITIONS,
    Prompt,
    ioi_prompts,
    load_prompt_file,
)

EXPERIMENTS = ("factual", "factual20", "ioi", "prepositions", "gpt2-ioi", "sweep")

#: Paper layer (1-indexed) and ρ of each (experiment, model) — spec §6.1, from App. C.2.
PAPER_LASER = {
    ("factual", "pythia-1b"): (16, 0.0125),
    ("factual20", "pythia-1b"): (16, 0.0125),
    ("factual20", "pythia-1.4b"): (24, 0.025),
    ("factual20", "pythia-2.8b"): (32, 0.04),
    ("ioi", "pythia-1b"): (11, 0.008),
    ("ioi", "pythia-410m"): (22, 0.02),
}
DEFAULT_MODELS = {
    "factual": ("pythia-1b",), "factual20": ("pythia-1b", "pythia-1.4b", "pythia-2.8b"),
    "ioi": ("pythia-410m", "pythia-1b"), "prepositions": ("pythia-160m", "pythia-410m", "pythia-1b"),
    "gpt2-ioi": ("gpt2",), "sweep": ("pythia-1b",),
}
#: Spec §6.2's 25 log-spaced training steps (``--checkpoints paper``).
PAPER_CHECKPOINTS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 3000, 4000, 6000, 8000, 10000, 14000,
                     20000, 30000, 50000, 70000, 100000, 143000)
GPT2_LAYERS = (9, 10, 11, 12)
GPT2_RHOS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SWEEP_RHOS = (0.005, 0.008, 0.01, 0.0125, 0.02, 0.025, 0.04, 0.05, 0.1, 0.2, 0.5)
#: Table 1 (Pythia-1B, "Madrid is located in"): top-5 next tokens, full and LASER.
TABLE1 = {"full": {"the": 0.499, "Spain": 0.079, "a": 0.069, "southern": 0.023, "northern": 0.021},
          "laser": {"the": 0.027, "Spain": 0.300, "a": 0.002, "southern": 0.044, "northern": 0.046}}


@dataclass(frozen=True)
class Options:
    """Command-line options shared by the experiments."""

    checkpoints: tuple[int | None, ...] = (None,)  # None = the final / only weights
    layer: int | None = None  # paper (1-indexed); default per (experiment, model)
    rho: float | None = None
    matrix: str = "mlp_in"
    n_prompts: int = 100
    seed: int = 0
    prepend_bos: bool = False
    dtype: str = "float32"
    device: str = "cpu"
    prompts: str | None = None
    progress: bool = True


# ----------------------------------------------------------------------------------- model access


def model_key(name_or_path: str) -> str:
    """``pythia-1b`` for ``pythia-1b`` / ``EleutherAI/pythia-1b`` / ``/data/pythia-1b``; else the name as given."""
    return Path(str(name_or_path).rstrip("/")).name.lower().removesuffix("-deduped")


def laser_setting(experiment: str, model, name: str, opts: Options) -> tuple[int, float]:
    """(paper layer, ρ): the options if given, else the paper's for this model, else the last layer and ρ = 0.05."""
    layer, rho = PAPER_LASER.get((experiment, model_key(name)), (model.cfg.n_layers, 0.05))
    layer = opts.layer if opts.layer is not None else layer
    rho = opts.rho if opts.rho is not None else rho
    if not 1 <= layer <= model.cfg.n_layers:
        raise ValueError(f"--layer={layer} (1-indexed, as in the paper) is out of range for {name}: "
                         f"expected 1..{model.cfg.n_layers}")
    return layer, rho


_LAST_LOADED: dict[tuple, Any] = {}


def load(name: str, checkpoint: int | None, opts: Options):
    """``pretrained.load(..., processing="raw")``; the last model loaded is kept, so the fail-fast check of
    ``run`` does not load the first model twice."""
    key = (name, checkpoint, opts.dtype, opts.device)
    if key not in _LAST_LOADED:
        _LAST_LOADED.clear()
        _LAST_LOADED[key] = pretrained.load(name, checkpoint=checkpoint, processing="raw", dtype=opts.dtype,
                                            device=opts.device)
    return _LAST_LOADED[key]


@contextlib.contextmanager
def laser(model, layer: int, rho: float, matrix: str):
    """``hooks.low_rank`` on TL block ``layer - 1``; asserts the matrix is bit-identical afterwards."""
    before = get_matrix(model, layer - 1, matrix).clone()
    with low_rank(model, layer - 1, matrix, rho):
        yield model
    if not torch.equal(get_matrix(model, layer - 1, matrix), before):  # pragma: no cover - hooks.low_rank's contract
        raise RuntimeError(f"layer {layer} {matrix} was not restored bit-exact after LASER")


def _laser_info(model, layer: int, rho: float, matrix: str) -> dict[str, Any]:
    shape = tuple(get_matrix(model, layer - 1, matrix).shape)
    return {"paper_layer": layer, "tl_block": layer - 1, "matrix": matrix, "rho": rho,
            "rank_kept": rank_for(rho, shape), "full_rank": min(shape)}


def _tokens(model, texts: Sequence[str], opts: Options) -> list[torch.Tensor]:
    return [model.to_tokens(t, prepend_bos=opts.prepend_bos)[0] for t in texts]


def token_id(model, word: str) -> tuple[int, str]:
    """First token of ``" " + word`` and the string it decodes to (a multi-token word keeps its first piece)."""
    ids = model.to_tokens(" " + word, prepend_bos=False)[0]
    return int(ids[0]), model.tokenizer.decode([int(ids[0])])


@torch.no_grad()
def next_token_probs(model, texts: Sequence[str], opts: Options) -> torch.Tensor:
    """``[n, d_vocab_out]`` next-token distributions at each prompt's last position (one forward per length)."""
    tokens = _tokens(model, texts, opts)
    out = torch.empty(len(texts), model.cfg.d_vocab_out)
    by_length: dict[int, list[int]] = {}
    for i, t in enumerate(tokens):
        by_length.setdefault(len(t), []).append(i)
    for length, index in by_length.items():
        logits = model(torch.stack([tokens[i] for i in index]).to(opts.device))[:, -1]
        out[index] = logits.float().softmax(-1).cpu()
    return out


def top_k(model, probs: torch.Tensor, k: int = 5) -> list[dict[str, Any]]:
    values, ids = probs.topk(k)
    return [{"token": model.tokenizer.decode([int(i)]), "id": int(i), "p": float(v)} for v, i in zip(values, ids)]


def rank_of(probs: torch.Tensor, token: int) -> torch.Tensor:
    """1-based rank of ``token`` in each row (1 = argmax)."""
    return (probs > probs[:, token : token + 1]).sum(-1) + 1


def _iter_runs(models: Sequence[str], opts: Options, desc: str):
    pairs = [(m, c) for m in models for c in opts.checkpoints]
    if opts.progress:
        from tqdm.auto import tqdm

        pairs = tqdm(pairs, desc=desc, unit="checkpoint")
    for name, checkpoint in pairs:
        yield name, checkpoint, load(name, checkpoint, opts)


def _ckpt(checkpoint: int | None) -> str:
    return "final" if checkpoint is None else str(checkpoint)


# ----------------------------------------------------------------------------------- experiments


def run_factual(models, opts: Options) -> tuple[dict, list[Claim]]:
    """Table 1 / Fig 5 right: "Madrid is located in" → " Spain" vs " the"."""
    results, claims = {}, []
    for name, checkpoint, model in _iter_runs(models, opts, "factual"):
        layer, rho = laser_setting("factual", model, name, opts)
        answer, answer_str = token_id(model, MADRID.answer)
        the, _ = token_id(model, "the")
        row = {"intervention": _laser_info(model, layer, rho, opts.matrix), "prompt": MADRID.prompt, "answer_token": answer_str}
        for variant in ("full", "laser"):
            with laser(model, layer, rho, opts.matrix) if variant == "laser" else contextlib.nullcontext():
                probs = next_token_probs(model, [MADRID.prompt], opts)[0]
                continuation = greedy(model, MADRID.prompt, 4, opts)
            row[variant] = {"p_answer": float(probs[answer]), "p_the": float(probs[the]),
                            "ratio_answer_the": float(probs[answer] / probs[the]), "top5": top_k(model, probs),
                            "greedy": continuation}
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    last = _last_row(results, models)
    claims += [
        Claim("factual: P(Spain)/P(the), full", last["full"]["ratio_answer_the"], 0.16, "Fig 5 right / Table 1"),
        Claim("factual: P(Spain)/P(the), LASER", last["laser"]["ratio_answer_the"], 11.3, "Fig 5 right / Table 1"),
        Claim("factual: P(the), full → LASER", f"{last['full']['p_the']:.3f} → {last['laser']['p_the']:.3f}",
              f"{TABLE1['full']['the']} → {TABLE1['laser']['the']}", "Table 1"),
        Claim("factual: P(Spain), full → LASER", f"{last['full']['p_answer']:.3f} → {last['laser']['p_answer']:.3f}",
              f"{TABLE1['full']['Spain']} → {TABLE1['laser']['Spain']}", "Table 1"),
    ]
    return results, claims


@torch.no_grad()
def greedy(model, prompt: str, n: int, opts: Options) -> str:
    """The next ``n`` greedy tokens (decoded)."""
    tokens = model.to_tokens(prompt, prepend_bos=opts.prepend_bos).to(opts.device)
    start = tokens.shape[1]
    for _ in range(n):
        if tokens.shape[1] >= model.cfg.n_ctx:
            break
        tokens = torch.cat([tokens, model(tokens)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return model.tokenizer.decode(tokens[0, start:].tolist())


def _answer_metrics(model, prompts: Sequence[Prompt], probs: torch.Tensor) -> dict[str, Any]:
    the, _ = token_id(model, "the")
    answers = [token_id(model, p.answer) for p in prompts]
    ids = torch.tensor([a for a, _ in answers])
    p_answer, p_the = probs[torch.arange(len(ids)), ids], probs[:, the]
    return {"per_prompt": [{"prompt": p.prompt, "answer": p.answer, "answer_token": s, "p_answer": float(a), "p_the": float(t)}
                           for p, (_, s), a, t in zip(prompts, answers, p_answer, p_the)],
            "mean_p_answer": float(p_answer.mean()), "mean_p_the": float(p_the.mean()),
            "ratio_of_means": float(p_answer.mean() / p_the.mean()), "mean_of_ratios": float((p_answer / p_the).mean()),
            "frac_answer_above_the": float((p_answer > p_the).float().mean())}


def run_factual20(models, opts: Options) -> tuple[dict, list[Claim]]:
    """Fig 16: the 20 factual prompts of Table 5, full vs LASER."""
    results, claims = {}, []
    for name, checkpoint, model in _iter_runs(models, opts, "factual20"):
        layer, rho = laser_setting("factual20", model, name, opts)
        row = {"intervention": _laser_info(model, layer, rho, opts.matrix)}
        for variant in ("full", "laser"):
            with laser(model, layer, rho, opts.matrix) if variant == "laser" else contextlib.nullcontext():
                row[variant] = _answer_metrics(model, FACTUAL_20, next_token_probs(model, [p.prompt for p in FACTUAL_20], opts))
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
        claims.append(Claim(f"factual20 {name}: mean P(the), full → LASER",
                            f"{row['full']['mean_p_the']:.3f} → {row['laser']['mean_p_the']:.3f}", None, "Fig 16",
                            "LASER significantly lowers P(the) relative to the correct outputs"))
        claims.append(Claim(f"factual20 {name}: P(answer)/P(the) (ratio of means), full → LASER",
                            f"{row['full']['ratio_of_means']:.3g} → {row['laser']['ratio_of_means']:.3g}", None, "Fig 16"))
    return results, claims


def run_ioi(models, opts: Options) -> tuple[dict, list[Claim]]:
    """Figs 5 left and 15: mean P(IO), P(S), P(the) on 100 IOI prompts, full vs LASER."""
    results, claims = {}, []
    for name, checkpoint, model in _iter_runs(models, opts, "ioi"):
        layer, rho = laser_setting("ioi", model, name, opts)
        prompts = ioi_prompts(model.tokenizer, n=opts.n_prompts, seed=opts.seed)
        io = torch.tensor([token_id(model, p.io)[0] for p in prompts])
        s = torch.tensor([token_id(model, p.s)[0] for p in prompts])
        the, _ = token_id(model, "the")
        row = {"intervention": _laser_info(model, layer, rho, opts.matrix), "n_prompts": len(prompts),
               "prompts": [p.prompt for p in prompts]}
        for variant in ("full", "laser"):
            with laser(model, layer, rho, opts.matrix) if variant == "laser" else contextlib.nullcontext():
                probs = next_token_probs(model, [p.prompt for p in prompts], opts)
            n = torch.arange(len(prompts))
            p_io, p_s, p_the = probs[n, io], probs[n, s], probs[:, the]
            row[variant] = {"mean_p_io": float(p_io.mean()), "mean_p_s": float(p_s.mean()), "mean_p_the": float(p_the.mean()),
                            "ratio_io_the": float(p_io.mean() / p_the.mean()), "mean_ratio_io_the": float((p_io / p_the).mean()),
                            "accuracy_io_over_s": float((p_io > p_s).float().mean()),
                            "logit_diff_io_s": float((p_io.log() - p_s.log()).mean()),
                            "p_io": p_io.tolist(), "p_s": p_s.tolist(), "p_the": p_the.tolist()}
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    for name in models:
        last = list(results[name].values())[-1]
        paper = (2.3, 12.3) if model_key(name) == "pythia-1b" else (None, None)
        claims.append(Claim(f"ioi {name}: P(IO)/P(the), full", last["full"]["ratio_io_the"], paper[0], "Fig 5 left"))
        claims.append(Claim(f"ioi {name}: P(IO)/P(the), LASER", last["laser"]["ratio_io_the"], paper[1], "Fig 5 left",
                            "paper: at '14K steps' (spec §9.28: probably the final checkpoint)"))
    return results, claims


def run_prepositions(models, opts: Options) -> tuple[dict, list[Claim]]:
    """Fig 14: mean 1-based rank of " the" after 30 raw prepositions and 40 preposition-final sentences."""
    results, claims = {}, []
    for name, checkpoint, model in _iter_runs(models, opts, "prepositions"):
        the, _ = token_id(model, "the")
        row = {}
        for label, texts in (("raw_prepositions", PREPOSITIONS), ("sentences", PREPOSITION_SENTENCES)):
            ranks = rank_of(next_token_probs(model, texts, opts), the)
            row[label] = {"mean_rank_the": float(ranks.float().mean()), "ranks": ranks.tolist()}
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    for name in models:
        by_step = {k: v for k, v in results[name].items() if k != "final"}
        if by_step:
            first = next((int(k) for k, v in sorted(by_step.items(), key=lambda kv: int(kv[0]))
                          if v["raw_prepositions"]["mean_rank_the"] <= 5), None)
            claims.append(Claim(f"prepositions {name}: first checkpoint with mean rank of 'the' <= 5 (raw)", first, 10,
                                "Fig 14", "'the' among the top predictions from ~step 10"))
    return results, claims


def run_gpt2_ioi(models, opts: Options) -> tuple[dict, list[Claim]]:
    """Fig 17: LASER on W_in of GPT-2 layers 9-12 over a ρ grid; P(Mary), P(them), P(the), P(John)."""
    from analyses.lowrank import laser_sweep

    results, claims = {}, []
    for name, checkpoint, model in _iter_runs(models, opts, "gpt2-ioi"):
        ids = {w: token_id(model, w)[0] for w in GPT2_IOI_TOKENS}

        def metric(m):
            probs = next_token_probs(m, [GPT2_IOI.prompt], opts)[0]
            return {w: float(probs[i]) for w, i in ids.items()}

        layers = [l for l in GPT2_LAYERS if l <= model.cfg.n_layers] or [model.cfg.n_layers]
        sweep = laser_sweep(model, metric, layers=[l - 1 for l in layers], matrices=[opts.matrix], rhos=GPT2_RHOS)
        full_probs = next_token_probs(model, [GPT2_IOI.prompt], opts)[0]
        table = sweep.table.assign(paper_layer=sweep.table["layer"] + 1)
        results.setdefault(name, {})[_ckpt(checkpoint)] = {
            "prompt": GPT2_IOI.prompt, "full": {"top4": top_k(model, full_probs, 4), **sweep.baseline},
            "sweep": table.to_dict(orient="records"), "n_svd": sweep.n_svd}
        for l in layers:
            part = table[(table["paper_layer"] == l) & table["rho"].between(0.1, 0.8)]
            for word in ("the", "them"):
                lower = (part[part["metric"] == word]["value"] < sweep.baseline[word]).mean()
                claims.append(Claim(f"gpt2-ioi layer {l}: fraction of ρ in [0.1, 0.8] with P({word}) below full", float(lower),
                                    1.0 if l < 12 else None, "Fig 17", "l = 9, 10, 11: clearly lower"))
        claims.append(Claim("gpt2-ioi: full-model top-4 next tokens",
                            [t["token"].strip() for t in top_k(model, full_probs, 4)], list(GPT2_IOI_TOKENS), "Fig 17"))
    return results, claims


def run_sweep(models, opts: Options) -> tuple[dict, list[Claim]]:
    """A LASER search: layers (last half) x {W_in, W_out} x ρ, objective mean P(answer)/P(" the")."""
    from analyses.lowrank import laser_sweep

    prompts = load_prompt_file(opts.prompts) if opts.prompts else list(FACTUAL_20)
    results, claims = {}, []
    for name, checkpoint, model in _iter_runs(models, opts, "sweep"):
        the, _ = token_id(model, "the")
        answers = torch.tensor([token_id(model, p.answer)[0] for p in prompts])

        def metric(m):
            probs = next_token_probs(m, [p.prompt for p in prompts], opts)
            p_answer, p_the = probs[torch.arange(len(prompts)), answers], probs[:, the]
            return {"ratio": float((p_answer / p_the).mean()), "p_answer": float(p_answer.mean()), "p_the": float(p_the.mean())}

        n = model.cfg.n_layers
        layers = [opts.layer - 1] if opts.layer else list(range(n // 2, n))
        rhos = [opts.rho] if opts.rho is not None else list(SWEEP_RHOS)
        sweep = laser_sweep(model, metric, layers=layers, matrices=["mlp_in", "mlp_out"], rhos=rhos, progress=opts.progress)
        best = sweep.best("ratio")
        table = sweep.table.assign(paper_layer=sweep.table["layer"] + 1)
        results.setdefault(name, {})[_ckpt(checkpoint)] = {
            "n_prompts": len(prompts), "baseline": sweep.baseline, "best": {**best, "paper_layer": best["layer"] + 1},
            "table": table.to_dict(orient="records"), "n_svd": sweep.n_svd}
        claims.append(Claim(f"sweep {name}: best mean P(answer)/P(the) (layer {best['layer'] + 1}, {best['matrix']}, "
                            f"ρ={best['rho']})", best["value"], None, "§4 / App. C.2", f"full model {best['baseline']:.3g}"))
        results[name][_ckpt(checkpoint)]["figure"] = sweep
    return results, claims


RUNNERS = {"factual": run_factual, "factual20": run_factual20, "ioi": run_ioi, "prepositions": run_prepositions,
           "gpt2-ioi": run_gpt2_ioi, "sweep": run_sweep}


def _last_row(results: dict, models: Sequence[str]) -> dict:
    return list(results[models[-1]].values())[-1]


# ----------------------------------------------------------------------------------- figures


def _steps(rows: dict) -> list[tuple[int, dict]]:
    return sorted(((int(k), v) for k, v in rows.items() if k != "final"), key=lambda kv: kv[0])


def figures_for(experiment: str, results: dict) -> dict[str, Any]:
    figs: dict[str, Any] = {}
    if experiment in ("factual", "ioi"):
        keys = {"factual": [("p_answer", "P(Spain)"), ("p_the", "P(the)")],
                "ioi": [("mean_p_io", "P(IO)"), ("mean_p_s", "P(S)"), ("mean_p_the", "P(the)")]}[experiment]
        for name, rows in results.items():
            steps = _steps(rows)
            if len(steps) >= 2:
                fig, ax = subplots(figsize=(6, 3.6))
                for key, label in keys:
                    for variant, style in (("full", "-"), ("laser", "--")):
                        ax.plot([max(s, 0.5) for s, _ in steps], [r[variant][key] for _, r in steps], style, marker="o",
                                ms=3, label=f"{label} {variant}")
                ax.set(xscale="log", xlabel="training step (0 plotted at 0.5)", ylabel="probability",
                       title=f"{name}: {experiment} across training")
                ax.legend(fontsize=7)
                fig.tight_layout()
                figs[f"fig5_{experiment}_{_slug(name)}.png"] = fig
    if experiment == "factual":
        for name, rows in results.items():
            row = list(rows.values())[-1]
            fig, axes = subplots(1, 2, figsize=(8, 3))
            for ax, variant in zip(axes, ("full", "laser")):
                top = row[variant]["top5"]
                ax.barh([t["token"] for t in top][::-1], [t["p"] for t in top][::-1])
                ax.set(title=f"{variant}: top-5 after '{MADRID.prompt}'", xlabel="probability")
            fig.tight_layout()
            figs[f"table1_{_slug(name)}.png"] = fig
    if experiment in ("ioi", "factual20"):
        keys = ("p_io", "p_s", "p_the") if experiment == "ioi" else ("p_answer", "p_the")
        names = list(results)
        fig, axes = subplots(1, len(names), figsize=(4.5 * len(names), 3.4), squeeze=False)
        for ax, name in zip(axes[0], names):
            row = list(results[name].values())[-1]
            data, labels = [], []
            for key in keys:
                for variant in ("full", "laser"):
                    values = row[variant][key] if experiment == "ioi" else [p[key] for p in row[variant]["per_prompt"]]
                    data.append(values)
                    labels.append(f"{key.removeprefix('p_')}\n{variant}")
            ax.boxplot(data)
            ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
            ax.set(title=name, ylabel="probability")
        fig.tight_layout()
        figs[f"fig{15 if experiment == 'ioi' else 16}_{experiment}.png"] = fig
    if experiment == "prepositions":
        fig, axes = subplots(1, 2, figsize=(9, 3.4))
        for ax, label in zip(axes, ("raw_prepositions", "sentences")):
            for name, rows in results.items():
                steps = _steps(rows)
                if steps:
                    ax.plot([max(s, 0.5) for s, _ in steps], [r[label]["mean_rank_the"] for _, r in steps], marker="o", ms=3,
                            label=name)
            ax.set(xscale="log", yscale="log", xlabel="training step", ylabel="mean rank of ' the'", title=label)
            ax.legend(fontsize=7)
        fig.tight_layout()
        figs["fig14_prepositions.png"] = fig
    if experiment == "gpt2-ioi":
        for name, rows in results.items():
            row = list(rows.values())[-1]
            layers = sorted({r["paper_layer"] for r in row["sweep"]})
            fig, axes = subplots(1, len(layers), figsize=(3.6 * len(layers), 3.2), squeeze=False)
            for ax, layer in zip(axes[0], layers):
                for word in GPT2_IOI_TOKENS:
                    pts = sorted((r["rho"], r["value"]) for r in row["sweep"] if r["paper_layer"] == layer and r["metric"] == word)
                    ax.plot(*zip(*pts), marker="o", ms=3, label=word)
                ax.set(xlabel="ρ (kept rank fraction)", ylabel="probability", title=f"layer {layer} W_in")
            axes[0][0].legend(fontsize=7)
            fig.tight_layout()
            figs[f"fig17_{_slug(name)}.png"] = fig
    if experiment == "sweep":
        for name, rows in results.items():
            for checkpoint, row in rows.items():
                figs[f"sweep_{_slug(name)}_{checkpoint}.png"] = row.pop("figure").figure("ratio")
    return figs


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in model_key(name))


# ----------------------------------------------------------------------------------- entry point


def parse_checkpoints(text: str) -> tuple[int | None, ...]:
    """``final`` | ``paper`` (spec §6.2's 25 steps) | comma-separated steps, e.g. ``0,1000,143000``."""
    if text == "final":
        return (None,)
    if text == "paper":
        return PAPER_CHECKPOINTS
    try:
        steps = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"--checkpoints={text!r}; expected 'final', 'paper' or comma-separated steps like 0,1000,143000")
    if not steps or min(steps) < 0:
        raise ValueError(f"--checkpoints={text!r}; expected non-negative training steps")
    return steps


def run(out: str | Path, experiments: Sequence[str], models: Sequence[str] | None, opts: Options) -> dict:
    """Run ``experiments`` (each on ``models`` or its paper default) and write ``out/results.json`` + figures."""
    unknown = [e for e in experiments if e not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; expected some of {EXPERIMENTS}")
    if opts.rho is not None:
        rank_for(opts.rho, (1, 1))
    if opts.matrix not in ("mlp_in", "mlp_out"):
        raise ValueError(f"--matrix={opts.matrix!r}; expected mlp_in or mlp_out")
    if opts.prompts:
        load_prompt_file(opts.prompts)  # a bad file fails before any model loads
    plan = {e: list(models) if models else list(DEFAULT_MODELS[e]) for e in experiments}
    first = next(iter(plan.values()))[0]
    load(first, opts.checkpoints[0], opts)  # fail fast, naming what to pass, when the weights are unavailable
    results, claims, figures = {}, [], {}
    try:
        for experiment, names in plan.items():
            r, c = RUNNERS[experiment](names, opts)
            figures.update(figures_for(experiment, r))
            results[experiment] = r
            claims += c
    finally:
        _LAST_LOADED.clear()  # do not keep a multi-GB model alive after the run
    config = {"experiments": list(experiments), "models": plan, **{k: v for k, v in vars(opts).items()}}
    write_results(out, results, experiment="laser_pythia:" + "+".join(experiments), config=config, seed=opts.seed,
                  claims=claims, figures=figures)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analyses.laser_pythia", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", nargs="+", default=["factual"], choices=EXPERIMENTS + ("all",),
                        help="what to run (default factual); 'all' runs every experiment")
    parser.add_argument("--model", nargs="+", default=None,
                        help="TL names (pythia-1b, gpt2, ...) or local HF directories; default: the paper's models "
                             "for each experiment")
    parser.add_argument("--checkpoints", default="final",
                        help="'final' (default), 'paper' (25 log-spaced Pythia steps) or steps like 0,1000,143000")
    parser.add_argument("--layer", type=int, default=None, help="paper layer, 1-indexed (TL block = layer - 1); "
                        "default: the paper's per experiment and model")
    parser.add_argument("--rho", type=float, default=None, help="kept rank fraction for LASER; default: the paper's")
    parser.add_argument("--matrix", default="mlp_in", choices=("mlp_in", "mlp_out"), help="matrix to truncate (default %(default)s)")
    parser.add_argument("--prompts", default=None, help="JSON lines of {\"prompt\": ..., \"answer\": ...} for --experiment sweep")
    parser.add_argument("--n-prompts", type=int, default=100, help="IOI prompts (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the IOI prompt draw (default %(default)s)")
    parser.add_argument("--prepend-bos", action="store_true", help="prepend BOS (default off: HF-faithful, spec §9.31)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64", "bfloat16", "float16"))
    parser.add_argument("--device", default="cpu", help="torch device (default %(default)s)")
    parser.add_argument("--out", default="runs/laser_pythia", help="output directory (default %(default)s)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    args = parser.parse_args(argv)
    if args.n_prompts < 1:
        parser.error(f"--n-prompts={args.n_prompts}; expected >= 1")
    if args.threads:
        torch.set_num_threads(args.threads)
    experiments = list(EXPERIMENTS) if "all" in args.experiment else list(args.experiment)
    try:
        opts = Options(checkpoints=parse_checkpoints(args.checkpoints), layer=args.layer, rho=args.rho,
                       matrix=args.matrix, n_prompts=args.n_prompts, seed=args.seed, prepend_bos=args.prepend_bos,
                       dtype=args.dtype, device=args.device, prompts=args.prompts, progress=not args.no_progress)
        run(args.out, experiments, args.model, opts)
    except pretrained.PretrainedNotAvailableError as exc:
        print(f"error: {exc}\n\nPass --model with a local Hugging Face directory (save_pretrained output), e.g. "
              f"--model /data/pythia-1b, or run where the hub is reachable.", file=sys.stderr)
        return 2
    except ValueError as exc:
        parser.error(str(exc))
    print(f"wrote {Path(args.out) / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
