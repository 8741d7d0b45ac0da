"""LASER on pretrained Pythia / GPT-2 (Chen, Bruna & Bietti §4.1, App. C, I).

The parts of ``python -m analyses.laser_pythia``.

Truncating one late MLP input matrix to a tiny rank (LASER, Sharma et al. 2024) removes the generic
"the" that feed-forward layers predict from distributional statistics, and lets the in-context answer win.
Every truncation uses ``hooks.low_rank`` on **raw** weights (``pretrained.load(..., processing="raw")``),
and the weights are checked bit-identical after each one. Layers are given as in the paper (1-indexed);
results show the TransformerLens block (``layer - 1``) beside them.

Parts (``--experiment``):

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
directory with ``step{N}/`` subfolders serves ``--checkpoints``). A model whose weights are not here (no local
directory, no hub) makes its claims ``not run``, with the reason, and the run goes on.

``results.json`` (``mechrecall.experiment``) holds, under ``parts[part]["results"][model][checkpoint]``:
``intervention`` (paper layer, TL block, matrix, ρ, rank kept) and per variant ``full`` / ``laser`` the
probabilities, ratios, ranks and top-k tokens of that part; the paper's numbers sit beside ours in ``claims``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import pretrained
from analyses.papers.distributional.prompts import (
    FACTUAL_20,
    GPT2_IOI,
    GPT2_IOI_TOKENS,
    MADRID,
    PREPOSITION_SENTENCES,
    PREPOSITIONS,
    TABLE1_PROBS,
    ioi_prompts,
)
from analyses.plotting import subplots
from hooks import low_rank, rank_for
from hooks.weights import get_matrix
from mechrecall.claims import Claim, Rule, at_least, at_most
from mechrecall.errors import UsageError
from mechrecall.experiment import Context, PartResult
from mechrecall.progress import progress_bar
from pretrained.prompts import Prompt, answer_token, load_prompt_file

log = logging.getLogger(__name__)

#: Paper layer (1-indexed) and ρ of each (experiment, model) from App. C.2.
PAPER_LASER = {
    ("factual", "pythia-1b"): (16, 0.0125),
    ("factual20", "pythia-1b"): (16, 0.0125),
    ("factual20", "pythia-1.4b"): (24, 0.025),
    ("factual20", "pythia-2.8b"): (32, 0.04),
    ("ioi", "pythia-1b"): (11, 0.008),
    ("ioi", "pythia-410m"): (22, 0.02),
}
DEFAULT_MODELS = {
    "factual": ("pythia-1b",),
    "factual20": ("pythia-1b", "pythia-1.4b", "pythia-2.8b"),
    "ioi": ("pythia-410m", "pythia-1b"),
    "prepositions": ("pythia-160m", "pythia-410m", "pythia-1b"),
    "gpt2-ioi": ("gpt2",),
    "sweep": ("pythia-1b",),
}
#: Spec §6.2's 25 log-spaced training steps (``--checkpoints paper``).
PAPER_CHECKPOINTS = (
    0,
    1,
    2,
    4,
    8,
    16,
    32,
    64,
    128,
    256,
    512,
    1000,
    2000,
    3000,
    4000,
    6000,
    8000,
    10000,
    14000,
    20000,
    30000,
    50000,
    70000,
    100000,
    143000,
)
GPT2_LAYERS = (9, 10, 11, 12)
GPT2_RHOS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SWEEP_RHOS = (0.005, 0.008, 0.01, 0.0125, 0.02, 0.025, 0.04, 0.05, 0.1, 0.2, 0.5)


@dataclass(frozen=True)
class Options:
    """Command-line options shared by the parts."""

    models: tuple[str, ...] = ()  # empty: the paper's models for each part
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


# ----------------------------------------------------------------------------------- model access


def model_key(name_or_path: str) -> str:
    """``pythia-1b`` for ``pythia-1b`` / ``EleutherAI/pythia-1b`` / ``/data/pythia-1b``; else the name as given."""
    return Path(str(name_or_path).rstrip("/")).name.lower().removesuffix("-deduped")


def laser_setting(experiment: str, model, name: str, opts: Options) -> tuple[int, float]:
    """(paper layer, ρ): the options if given, else the paper's for this model.

    A model the paper did not use needs ``--layer`` and ``--rho`` (no silent default)."""
    paper = PAPER_LASER.get((experiment, model_key(name)))
    if paper is None and (opts.layer is None or opts.rho is None):
        raise UsageError(
            f"the paper gives no LASER layer and ρ for {experiment} on {model_key(name)!r}; pass --layer "
            f"(1..{model.cfg.n_layers}, 1-indexed) and --rho"
        )
    layer = opts.layer if opts.layer is not None else paper[0]
    rho = opts.rho if opts.rho is not None else paper[1]
    if not 1 <= layer <= model.cfg.n_layers:
        raise UsageError(
            f"--layer {layer} (1-indexed, as in the paper) is out of range for {name}: expected 1..{model.cfg.n_layers}"
        )
    return layer, rho


def load(ctx: Context, name: str, checkpoint: int | None, opts: Options):
    """``pretrained.load(..., processing="raw")``, kept in ``ctx.cache`` for the other parts of this invocation
    (one model at a time: a new one replaces the last). ``None`` when the weights are not here (recorded in
    ``ctx.cache["missing"]`` with the reason)."""
    key = ("laser_pythia.model", name, checkpoint, opts.dtype, opts.device)
    if key not in ctx.cache:
        for old in [k for k in ctx.cache if isinstance(k, tuple) and k[0] == "laser_pythia.model"]:
            del ctx.cache[old]
        try:
            ctx.cache[key] = pretrained.load(
                name, checkpoint=checkpoint, processing="raw", dtype=opts.dtype, device=opts.device
            )
        except pretrained.PretrainedNotAvailableError as exc:
            ctx.cache.setdefault("missing", {})[name] = str(exc).splitlines()[0]
            ctx.say(f"no weights for {name} here: its claims are not run (pass --model DIR with a local copy)")
            return None
        except ValueError as exc:  # a name that is neither a directory nor a model, a bad checkpoint
            raise UsageError(f"--model {name}: {exc}") from None
    return ctx.cache[key]


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
    return {
        "paper_layer": layer,
        "tl_block": layer - 1,
        "matrix": matrix,
        "rho": rho,
        "rank_kept": rank_for(rho, shape),
        "full_rank": min(shape),
    }


def _tokens(model, texts: Sequence[str], opts: Options) -> list[torch.Tensor]:
    return [model.to_tokens(t, prepend_bos=opts.prepend_bos)[0] for t in texts]


def token_id(model, word: str, prompt: str | None = None) -> tuple[int, str]:
    """First token of ``" " + word`` and the string it decodes to (``pretrained.prompts.answer_token``).

    A word outside the vocabulary is refused (``UsageError`` naming the prompt); a word of several tokens is
    scored by its first piece, as the paper does, and says so once in the log."""
    try:
        token = answer_token(model, word)
    except ValueError as exc:
        raise UsageError(f"answer {word!r}" + (f" of the prompt {prompt!r}" if prompt else "") + f": {exc}") from None
    if token.multi_token and (word, prompt) not in _WARNED:
        _WARNED.add((word, prompt))
        log.warning(
            "answer %r%s is %d tokens; scored by its first piece %r",
            word,
            f" of {prompt!r}" if prompt else "",
            len(token.ids),
            token.text,
        )
    return int(token), token.text


_WARNED: set[tuple[str, str | None]] = set()


@torch.no_grad()
def next_token_probs(model, texts: Sequence[str], opts: Options) -> torch.Tensor:
    """``[n, d_vocab_out]`` next-token distributions at each prompt's last position (one forward per length)."""
    tokens = _tokens(model, texts, opts)
    out = torch.empty(len(texts), model.cfg.d_vocab_out)
    by_length: dict[int, list[int]] = {}
    for i, t in enumerate(tokens):
        by_length.setdefault(len(t), []).append(i)
    for _length, index in by_length.items():
        logits = model(torch.stack([tokens[i] for i in index]).to(opts.device))[:, -1]
        out[index] = logits.float().softmax(-1).cpu()
    return out


def top_k(model, probs: torch.Tensor, k: int = 5) -> list[dict[str, Any]]:
    values, ids = probs.topk(k)
    return [{"token": model.tokenizer.decode([int(i)]), "id": int(i), "p": float(v)} for v, i in zip(values, ids)]


def rank_of(probs: torch.Tensor, token: int) -> torch.Tensor:
    """1-based rank of ``token`` in each row (1 = argmax)."""
    return (probs > probs[:, token : token + 1]).sum(-1) + 1


def _iter_runs(ctx: Context, models: Sequence[str], opts: Options, desc: str):
    """(name, checkpoint, model) for every model x checkpoint whose weights are here."""
    pairs = [(m, c) for m in models for c in opts.checkpoints]
    for name, checkpoint in progress_bar(pairs, enabled=ctx.progress, desc=desc, unit="checkpoint"):
        model = load(ctx, name, checkpoint, opts)
        if model is not None:
            yield name, checkpoint, model


def _ckpt(checkpoint: int | None) -> str:
    return "final" if checkpoint is None else str(checkpoint)


def _model_claim(
    ctx: Context, part: str, name: str, model: str, results: dict, value, claim: str, rule: Rule, **kw
) -> Claim:
    """A claim about ``model``: ``value(last row)`` when it ran, else ``not run`` with the reason."""
    rows = results.get(model)
    if not rows:
        reason = ctx.cache.get("missing", {}).get(model, "not run")
        return ctx.claim(
            part,
            f"{_slug(model)}.{name}",
            f"{model_key(model)}: {claim}",
            None,
            rule,
            reason=f"no weights for {model}: {reason}",
            **kw,
        )
    return ctx.claim(
        part, f"{_slug(model)}.{name}", f"{model_key(model)}: {claim}", value(list(rows.values())[-1]), rule, **kw
    )


# ----------------------------------------------------------------------------------- experiments


def full_and_laser(model, layer: int, rho: float, matrix: str, measure) -> dict[str, Any]:
    """``{"full": measure(), "laser": measure()}``, the second under LASER on paper layer ``layer``."""
    full = measure()
    with laser(model, layer, rho, matrix):
        truncated = measure()
    return {"full": full, "laser": truncated}


@torch.no_grad()
def greedy(model, prompt: str, n: int, opts: Options) -> str:
    """The next ``n`` greedy tokens, decoded (``HookedTransformer.generate``, no sampling)."""
    return model.generate(
        prompt,
        max_new_tokens=n,
        do_sample=False,
        prepend_bos=opts.prepend_bos,
        verbose=False,
        return_type="str",
        use_past_kv_cache=False,
    )[len(prompt) :]


def run_factual(ctx: Context, models, opts: Options) -> tuple[dict, list[Claim]]:
    """Table 1 / Fig 5 right: "Madrid is located in" → " Spain" vs " the"."""
    results = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "factual"):
        layer, rho = laser_setting("factual", model, name, opts)
        answer, answer_str = token_id(model, MADRID.answer)
        the, _ = token_id(model, "the")

        def measure():
            probs = next_token_probs(model, [MADRID.prompt], opts)[0]
            return {
                "p_answer": float(probs[answer]),
                "p_the": float(probs[the]),
                "ratio_answer_the": float(probs[answer] / probs[the]),
                "top5": top_k(model, probs),
                "greedy": greedy(model, MADRID.prompt, 4, opts),
            }

        row = {
            "intervention": _laser_info(model, layer, rho, opts.matrix),
            "prompt": MADRID.prompt,
            "answer_token": answer_str,
            **full_and_laser(model, layer, rho, opts.matrix, measure),
        }
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    full, lasered = TABLE1_PROBS["full"], TABLE1_PROBS["laser"]
    claims = []
    for name in models:

        def claim(key, text, value, rule, **kw):
            return _model_claim(ctx, "factual", key, name, results, value, text, rule, **kw)

        claims += [
            claim(
                "ratio_full",
                "the full model prefers the generic ' the' to ' Spain' (P(Spain)/P(the))",
                lambda r: r["full"]["ratio_answer_the"],
                at_most(1.0),
                paper=0.16,
                where="Table 1, Fig 5 right",
            ),
            claim(
                "ratio_laser",
                "after LASER ' Spain' wins over ' the' (P(Spain)/P(the))",
                lambda r: r["laser"]["ratio_answer_the"],
                at_least(2.0, partial=1.0),
                paper=11.3,
                where="Table 1, Fig 5 right",
            ),
            claim(
                "p_the_drop",
                "LASER removes most of P(the) (LASER / full)",
                lambda r: r["laser"]["p_the"] / r["full"]["p_the"],
                at_most(0.2, partial=0.5),
                paper=round(lasered["the"] / full["the"], 4),
                where="Table 1",
            ),
            claim(
                "p_answer_gain",
                "LASER raises P(Spain) (LASER / full)",
                lambda r: r["laser"]["p_answer"] / r["full"]["p_answer"],
                at_least(2.0, partial=1.0),
                paper=round(lasered["Spain"] / full["Spain"], 3),
                where="Table 1",
            ),
        ]
    return results, claims


def _answer_metrics(model, prompts: Sequence[Prompt], probs: torch.Tensor) -> dict[str, Any]:
    the, _ = token_id(model, "the")
    answers = [token_id(model, p.answer, p.prompt) for p in prompts]
    ids = torch.tensor([a for a, _ in answers])
    p_answer, p_the = probs[torch.arange(len(ids)), ids], probs[:, the]
    return {
        "per_prompt": [
            {"prompt": p.prompt, "answer": p.answer, "answer_token": s, "p_answer": float(a), "p_the": float(t)}
            for p, (_, s), a, t in zip(prompts, answers, p_answer, p_the)
        ],
        "mean_p_answer": float(p_answer.mean()),
        "mean_p_the": float(p_the.mean()),
        "ratio_of_means": float(p_answer.mean() / p_the.mean()),
        "mean_of_ratios": float((p_answer / p_the).mean()),
        "frac_answer_above_the": float((p_answer > p_the).float().mean()),
    }


def run_factual20(ctx: Context, models, opts: Options) -> tuple[dict, list[Claim]]:
    """Fig 16: the 20 factual prompts of Table 5, full vs LASER."""
    results = {}
    texts = [p.prompt for p in FACTUAL_20]
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "factual20"):
        layer, rho = laser_setting("factual20", model, name, opts)
        row = {
            "intervention": _laser_info(model, layer, rho, opts.matrix),
            **full_and_laser(
                model,
                layer,
                rho,
                opts.matrix,
                lambda: _answer_metrics(model, FACTUAL_20, next_token_probs(model, texts, opts)),
            ),
        }
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    claims = []
    for name in models:
        claims.append(
            _model_claim(
                ctx,
                "factual20",
                "p_the_drop",
                name,
                results,
                lambda r: r["laser"]["mean_p_the"] / r["full"]["mean_p_the"],
                "LASER significantly lowers P(the) on the 20 factual prompts (mean, LASER / full)",
                at_most(0.5, partial=0.9),
                where="Fig 16",
            )
        )
        claims.append(
            _model_claim(
                ctx,
                "factual20",
                "answer_over_the_gain",
                name,
                results,
                lambda r: r["laser"]["ratio_of_means"] / r["full"]["ratio_of_means"],
                "LASER raises P(answer)/P(the) (ratio of means, LASER / full)",
                at_least(2.0, partial=1.0),
                where="Fig 16",
            )
        )
    return results, claims


def run_ioi(ctx: Context, models, opts: Options) -> tuple[dict, list[Claim]]:
    """Figs 5 left and 15: mean P(IO), P(S), P(the) on 100 IOI prompts, full vs LASER."""
    results = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "ioi"):
        layer, rho = laser_setting("ioi", model, name, opts)
        prompts = ioi_prompts(model.tokenizer, n=opts.n_prompts, seed=opts.seed)
        io = torch.tensor([token_id(model, p.io)[0] for p in prompts])
        s = torch.tensor([token_id(model, p.s)[0] for p in prompts])
        the, _ = token_id(model, "the")
        n = torch.arange(len(prompts))

        def measure():
            probs = next_token_probs(model, [p.prompt for p in prompts], opts)
            p_io, p_s, p_the = probs[n, io], probs[n, s], probs[:, the]
            return {
                "mean_p_io": float(p_io.mean()),
                "mean_p_s": float(p_s.mean()),
                "mean_p_the": float(p_the.mean()),
                "ratio_io_the": float(p_io.mean() / p_the.mean()),
                "mean_ratio_io_the": float((p_io / p_the).mean()),
                "accuracy_io_over_s": float((p_io > p_s).float().mean()),
                "logit_diff_io_s": float((p_io.log() - p_s.log()).mean()),
                "p_io": p_io.tolist(),
                "p_s": p_s.tolist(),
                "p_the": p_the.tolist(),
            }

        row = {
            "intervention": _laser_info(model, layer, rho, opts.matrix),
            "n_prompts": len(prompts),
            "prompts": [p.prompt for p in prompts],
            **full_and_laser(model, layer, rho, opts.matrix, measure),
        }
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    claims = []
    for name in models:
        paper = (2.3, round(12.3 / 2.3, 2)) if model_key(name) == "pythia-1b" else (None, None)
        claims.append(
            _model_claim(
                ctx,
                "ioi",
                "ratio_full",
                name,
                results,
                lambda r: r["full"]["ratio_io_the"],
                "the full model already prefers the IO name to ' the' (P(IO)/P(the))",
                at_least(1.0),
                paper=paper[0],
                where="Fig 5 left",
            )
        )
        claims.append(
            _model_claim(
                ctx,
                "ioi",
                "ratio_gain",
                name,
                results,
                lambda r: r["laser"]["ratio_io_the"] / r["full"]["ratio_io_the"],
                "LASER raises P(IO)/P(the) several-fold (LASER / full)",
                at_least(2.0, partial=1.0),
                paper=paper[1],
                where="Fig 5 left",
                note="the paper reads its ratios at '14K steps', probably the final checkpoint",
            )
        )
    return results, claims


def run_prepositions(ctx: Context, models, opts: Options) -> tuple[dict, list[Claim]]:
    """Fig 14: mean 1-based rank of " the" after 30 raw prepositions and 40 preposition-final sentences."""
    results = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "prepositions"):
        the, _ = token_id(model, "the")
        row = {}
        for label, texts in (("raw_prepositions", PREPOSITIONS), ("sentences", PREPOSITION_SENTENCES)):
            ranks = rank_of(next_token_probs(model, texts, opts), the)
            row[label] = {"mean_rank_the": float(ranks.float().mean()), "ranks": ranks.tolist()}
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    claims = []
    for name in models:
        rows = results.get(name, {})
        by_step = sorted((int(k), v) for k, v in rows.items() if k != "final")
        first = next((step for step, v in by_step if v["raw_prepositions"]["mean_rank_the"] <= 5), None)
        reason = "" if len(by_step) >= 2 else "needs --checkpoints with at least two training steps"
        if not rows:
            reason = f"no weights for {name}: {ctx.cache.get('missing', {}).get(name, 'not run')}"
        claims.append(
            ctx.claim(
                "prepositions",
                f"{_slug(name)}.first_step_the_top5",
                f"{model_key(name)}: ' the' is "
                "among the top predictions after a preposition early in training (first checkpoint "
                "with mean rank ≤ 5)",
                first if not reason else None,
                at_most(64, partial=512),
                paper=10,
                where="Fig 14",
                reason=reason,
            )
        )
    return results, claims


def run_gpt2_ioi(ctx: Context, models, opts: Options) -> tuple[dict, list[Claim]]:
    """Fig 17: LASER on W_in of GPT-2 layers 9-12 over a ρ grid; P(Mary), P(them), P(the), P(John)."""
    from analyses.lowrank import laser_sweep

    results = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "gpt2-ioi"):
        ids = {w: token_id(model, w)[0] for w in GPT2_IOI_TOKENS}

        def metric(m):
            probs = next_token_probs(m, [GPT2_IOI.prompt], opts)[0]
            return {w: float(probs[i]) for w, i in ids.items()}

        layers = [l for l in GPT2_LAYERS if l <= model.cfg.n_layers] or [model.cfg.n_layers]
        sweep = laser_sweep(model, metric, layers=[l - 1 for l in layers], matrices=[opts.matrix], rhos=GPT2_RHOS)
        full_probs = next_token_probs(model, [GPT2_IOI.prompt], opts)[0]
        table = sweep.table.assign(paper_layer=sweep.table["layer"] + 1)
        lower = {}
        for l in layers:
            part = table[(table["paper_layer"] == l) & table["rho"].between(0.1, 0.8)]
            lower[l] = {
                w: float((part[part["metric"] == w]["value"] < sweep.baseline[w]).mean()) for w in ("the", "them")
            }
        results.setdefault(name, {})[_ckpt(checkpoint)] = {
            "prompt": GPT2_IOI.prompt,
            "full": {"top4": top_k(model, full_probs, 4), **sweep.baseline},
            "sweep": table.to_dict(orient="records"),
            "n_svd": sweep.n_svd,
            "fraction_rho_below_full": lower,
        }
    claims = []
    for name in models:
        for l in GPT2_LAYERS[:-1]:
            claims.append(
                _model_claim(
                    ctx,
                    "gpt2-ioi",
                    f"layer{l}_the_lower",
                    name,
                    results,
                    lambda r, l=l: (
                        r["fraction_rho_below_full"].get(l, r["fraction_rho_below_full"].get(str(l), {})).get("the")
                    ),
                    f"LASER on layer {l}'s W_in lowers P(the) for ρ in [0.1, 0.8] (fraction of the ρ grid)",
                    at_least(0.8, partial=0.5),
                    paper=1.0,
                    where="Fig 17",
                )
            )
        claims.append(
            _model_claim(
                ctx,
                "gpt2-ioi",
                "top4_match",
                name,
                results,
                lambda r: len({t["token"].strip() for t in r["full"]["top4"]} & set(GPT2_IOI_TOKENS)),
                "the full model's top-4 next tokens are Mary, them, the, John (how many match)",
                at_least(4, partial=3),
                paper=4,
                where="Fig 17",
            )
        )
    return results, claims


def run_sweep(ctx: Context, models, opts: Options) -> tuple[dict, list[Claim]]:
    """A LASER search: layers (last half) x {W_in, W_out} x ρ, objective mean P(answer)/P(" the")."""
    from analyses.lowrank import laser_sweep

    prompts = load_prompt_file(opts.prompts) if opts.prompts else list(FACTUAL_20)
    results, figures = {}, {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "sweep"):
        the, _ = token_id(model, "the")
        answers = torch.tensor([token_id(model, p.answer, p.prompt)[0] for p in prompts])

        def metric(m):
            probs = next_token_probs(m, [p.prompt for p in prompts], opts)
            p_answer, p_the = probs[torch.arange(len(prompts)), answers], probs[:, the]
            return {
                "ratio": float((p_answer / p_the).mean()),
                "p_answer": float(p_answer.mean()),
                "p_the": float(p_the.mean()),
            }

        n = model.cfg.n_layers
        layers = [opts.layer - 1] if opts.layer else list(range(n // 2, n))
        rhos = [opts.rho] if opts.rho is not None else list(SWEEP_RHOS)
        sweep = laser_sweep(
            model, metric, layers=layers, matrices=["mlp_in", "mlp_out"], rhos=rhos, progress=ctx.progress
        )
        best = sweep.best("ratio")
        table = sweep.table.assign(paper_layer=sweep.table["layer"] + 1)
        results.setdefault(name, {})[_ckpt(checkpoint)] = {
            "n_prompts": len(prompts),
            "baseline": sweep.baseline,
            "best": {**best, "paper_layer": best["layer"] + 1},
            "table": table.to_dict(orient="records"),
            "n_svd": sweep.n_svd,
        }
        figures[f"sweep_{_slug(name)}_{_ckpt(checkpoint)}.png"] = sweep.figure("ratio")
    claims = [
        _model_claim(
            ctx,
            "sweep",
            "best_gain",
            name,
            results,
            lambda r: r["best"]["value"] / r["best"]["baseline"],
            "a LASER search over late layers finds a truncation that raises mean P(answer)/P(the) (best / full)",
            at_least(2.0, partial=1.0),
            where="§4, App. C.2",
        )
        for name in models
    ]
    ctx.cache["laser_pythia.sweep_figures"] = figures
    return results, claims


RUNNERS = {
    "factual": run_factual,
    "factual20": run_factual20,
    "ioi": run_ioi,
    "prepositions": run_prepositions,
    "gpt2-ioi": run_gpt2_ioi,
    "sweep": run_sweep,
}


def part(ctx: Context, experiment: str) -> PartResult:
    """One part: its runner on ``--model`` (or the paper's models for it), then its figures."""
    opts = options(ctx)
    models = list(opts.models) if opts.models else list(DEFAULT_MODELS[experiment])
    results, claims = RUNNERS[experiment](ctx, models, opts)
    figures = figures_for(experiment, results)
    figures.update(ctx.cache.pop("laser_pythia.sweep_figures", {}))
    return PartResult({"models": models, "results": results, "missing": ctx.cache.get("missing", {})}, claims, figures)


# One part per experiment of the paper (the entry module names them "module:part_<name>").
part_factual = functools.partial(part, experiment="factual")
part_factual20 = functools.partial(part, experiment="factual20")
part_ioi = functools.partial(part, experiment="ioi")
part_prepositions = functools.partial(part, experiment="prepositions")
part_gpt2_ioi = functools.partial(part, experiment="gpt2-ioi")
part_sweep = functools.partial(part, experiment="sweep")


# ----------------------------------------------------------------------------------- figures


def _steps(rows: dict) -> list[tuple[int, dict]]:
    return sorted(((int(k), v) for k, v in rows.items() if k != "final"), key=lambda kv: kv[0])


def figures_for(experiment: str, results: dict) -> dict[str, Any]:
    """The figures of one part (none when no model ran)."""
    figs: dict[str, Any] = {}
    results = {name: rows for name, rows in results.items() if rows}
    if not results:
        return figs
    if experiment in ("factual", "ioi"):
        keys = {
            "factual": [("p_answer", "P(Spain)"), ("p_the", "P(the)")],
            "ioi": [("mean_p_io", "P(IO)"), ("mean_p_s", "P(S)"), ("mean_p_the", "P(the)")],
        }[experiment]
        for name, rows in results.items():
            steps = _steps(rows)
            if len(steps) >= 2:
                fig, ax = subplots(figsize=(6, 3.6))
                for key, label in keys:
                    for variant, style in (("full", "-"), ("laser", "--")):
                        ax.plot(
                            [max(s, 0.5) for s, _ in steps],
                            [r[variant][key] for _, r in steps],
                            style,
                            marker="o",
                            ms=3,
                            label=f"{label}, {'full model' if variant == 'full' else 'LASER'}",
                        )
                ax.set(
                    xscale="log",
                    xlabel="training step (0 plotted at 0.5)",
                    ylabel="probability",
                    title=f"Fig 5 ({'right' if experiment == 'factual' else 'left'}): {model_key(name)}, "
                    f"{experiment} across training",
                )
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
            fig.suptitle(f"Table 1: {model_key(name)}, full model vs LASER")
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
                    labels.append(f"P({key.removeprefix('p_')})\n{'full' if variant == 'full' else 'LASER'}")
            ax.boxplot(data)
            ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
            ax.set(title=model_key(name), ylabel="probability")
        fig.suptitle(f"Fig {15 if experiment == 'ioi' else 16}: {experiment}, full model vs LASER")
        fig.tight_layout()
        figs[f"fig{15 if experiment == 'ioi' else 16}_{experiment}.png"] = fig
    if experiment == "prepositions":
        fig, axes = subplots(1, 2, figsize=(9, 3.4))
        for ax, label in zip(axes, ("raw_prepositions", "sentences")):
            for name, rows in results.items():
                steps = _steps(rows)
                if steps:
                    ax.plot(
                        [max(s, 0.5) for s, _ in steps],
                        [r[label]["mean_rank_the"] for _, r in steps],
                        marker="o",
                        ms=3,
                        label=name,
                    )
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="training step",
                ylabel="mean rank of ' the'",
                title=label.replace("_", " "),
            )
            ax.legend(fontsize=7)
        fig.suptitle("Fig 14: rank of ' the' after prepositions across training")
        fig.tight_layout()
        figs["fig14_prepositions.png"] = fig
    if experiment == "gpt2-ioi":
        for name, rows in results.items():
            row = list(rows.values())[-1]
            layers = sorted({r["paper_layer"] for r in row["sweep"]})
            fig, axes = subplots(1, len(layers), figsize=(3.6 * len(layers), 3.2), squeeze=False)
            for ax, layer in zip(axes[0], layers):
                for word in GPT2_IOI_TOKENS:
                    pts = sorted(
                        (r["rho"], r["value"])
                        for r in row["sweep"]
                        if r["paper_layer"] == layer and r["metric"] == word
                    )
                    ax.plot(*zip(*pts), marker="o", ms=3, label=word)
                ax.set(xlabel="ρ (kept rank fraction)", ylabel="probability", title=f"layer {layer} W_in")
            axes[0][0].legend(fontsize=7)
            fig.suptitle(f"Fig 17: {model_key(name)}, LASER on W_in, P(next token) vs ρ")
            fig.tight_layout()
            figs[f"fig17_{_slug(name)}.png"] = fig
    return figs


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in model_key(name))


# ----------------------------------------------------------------------------------- options


def parse_checkpoints(text: str) -> tuple[int | None, ...]:
    """``final`` | ``paper`` (the paper's 25 log-spaced steps) | comma-separated steps, e.g. ``0,1000,143000``."""
    if text == "final":
        return (None,)
    if text == "paper":
        return PAPER_CHECKPOINTS
    try:
        steps = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise UsageError(
            f"--checkpoints {text!r}; expected 'final', 'paper' or comma-separated steps like 0,1000,143000"
        ) from None
    if not steps or min(steps) < 0:
        raise UsageError(f"--checkpoints {text!r}; expected non-negative training steps")
    return steps


def options(ctx: Context) -> Options:
    o = ctx.options
    return Options(
        models=tuple(o["model"] or ()),
        checkpoints=parse_checkpoints(o["checkpoints"]),
        layer=o["layer"],
        rho=o["rho"],
        matrix=o["matrix"],
        n_prompts=o["n_prompts"],
        seed=ctx.seed,
        prepend_bos=o["prepend_bos"],
        dtype=o["dtype"],
        device=ctx.device or "cpu",
        prompts=o["prompts"],
    )


def check(ctx: Context) -> None:
    """Every option, before any model loads."""
    opts = options(ctx)
    if opts.rho is not None and not 0.0 <= opts.rho <= 1.0:
        raise UsageError(f"--rho {opts.rho}; expected a kept-rank fraction in [0, 1]")
    if opts.layer is not None and opts.layer < 1:
        raise UsageError(f"--layer {opts.layer}; expected a paper layer >= 1 (1-indexed)")
    if opts.n_prompts < 1:
        raise UsageError(f"--n-prompts {opts.n_prompts}; expected an integer >= 1")
    if opts.prompts:
        path = Path(opts.prompts)
        if not path.is_file():
            raise UsageError(
                f"--prompts {opts.prompts}: " + ("is a folder, not a file" if path.is_dir() else "no such file")
            )
        try:
            load_prompt_file(path)
        except ValueError as exc:
            raise UsageError(f"--prompts: {exc}") from None
