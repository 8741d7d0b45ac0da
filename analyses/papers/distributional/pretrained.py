"""LASER on pretrained Pythia / GPT-2 (Chen, Bruna & Bietti §4.1, App. C, I): the work of
``python -m analyses.laser_pythia`` on the checkpoints, returning results dicts (no claims, no figures but the
sweep's own).

Truncating one late MLP input matrix to a tiny rank (LASER, Sharma et al. 2024) removes the generic
"the" that feed-forward layers predict from distributional statistics, and lets the in-context answer win.
Every truncation uses ``hooks.low_rank`` on **raw** weights (``pretrained.load(..., processing="raw")``),
and the weights are checked bit-identical after each one. Layers are given as in the paper (1-indexed);
results show the TransformerLens block (``layer - 1``) beside them.

Per part (``run_<part>``): ``factual`` (Table 1, Fig 5 right), ``factual20`` (Table 5, Fig 16), ``ioi`` (Figs 5
left, 15), ``prepositions`` (Fig 14, no LASER), ``gpt2-ioi`` (Fig 17), ``sweep`` (``analyses.lowrank.laser_sweep``
over late layers x matrices x ρ on ``--prompts``). :func:`measures` turns a part's rows into the numbers its
claims read, per model (:class:`~mechrecall.typed.NotRun` for a model whose weights are not here), and under
``control`` the same numbers on each claim's control (the prompt without its cue, the IOI prompts without the IO,
the in-context answer instead of " the", the model without its rank reduction; ``README.md``).

``--model`` takes TransformerLens names (``pythia-1b``) or local Hugging Face directories (read offline; a
directory with ``step{N}/`` subfolders serves ``--checkpoints``). A model whose weights are not here (no local
directory, no hub) makes its claims ``not run``, with the reason, and the run goes on.

Results hold, under ``results[model][checkpoint]``: ``intervention`` (paper layer, TL block, matrix, ρ, rank
kept) and per variant ``full`` / ``laser`` the probabilities, ratios, ranks and top-k tokens of that part.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Float, Int

import pretrained
from analyses.papers.distributional.data.prompts import (
    FACTUAL_20,
    GPT2_IOI,
    GPT2_IOI_NO_NAMES,
    GPT2_IOI_TOKENS,
    IOI_NAMES,
    IOI_TEMPLATE,
    MADRID,
    MADRID_NO_CUE,
    PREPOSITION_SENTENCES,
    PREPOSITIONS,
    IOIPrompt,
    ioi_prompts,
    ioi_prompts_without_io,
    single_token_names,
)
from analyses.papers.distributional.presets import PAPER_LASER
from analyses.papers.distributional.results import TWO_CHECKPOINTS
from hooks import low_rank, rank_for
from hooks.weights import get_matrix
from mechrecall._tl import HookedTransformer, last_logits, residual_before
from mechrecall.errors import UsageError
from mechrecall.experiment import Context
from mechrecall.progress import progress_bar
from mechrecall.typed import NotApplicable, NotRun
from pretrained.mini import measured_on, read_facts
from pretrained.mini.world import FIRST_NAMES
from pretrained.prompts import Prompt, answer_token, load_prompt_file

log = logging.getLogger(__name__)

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
#: The mini corpus's IOI story (``pretrained.mini.corpus.IOI_TEMPLATES``) as a prompt, the IO last.
MINI_IOI_TEMPLATE = "When {io} and {s} went to the park, {s} gave a book to"
#: The paper model a mini series stands in for, per part (its rows say so).
MINI_STANDS_IN = {"factual": "pythia-1b", "ioi": "pythia-1b"}
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
    laser: Mapping[tuple[str, str], tuple[int, float]] = field(default_factory=lambda: dict(PAPER_LASER))


# ----------------------------------------------------------------------------------- model access


def model_key(name_or_path: str) -> str:
    """``pythia-1b`` for ``pythia-1b`` / ``EleutherAI/pythia-1b`` / ``/data/pythia-1b``; else the name as given."""
    return Path(str(name_or_path).rstrip("/")).name.lower().removesuffix("-deduped")


def laser_setting(experiment: str, model: HookedTransformer, name: str, opts: Options) -> tuple[int, float]:
    """(paper layer, ρ): the options if given, else the paper's for this model.

    A model the paper did not use needs ``--layer`` and ``--rho`` (no silent default)."""
    paper = opts.laser.get((experiment, model_key(name)))
    if paper is None and (opts.layer is None or opts.rho is None):
        raise UsageError(
            f"the paper gives no LASER layer and ρ for {experiment} on {model_key(name)!r}; pass --layer "
            f"(1..{model.cfg.n_layers}, 1-indexed) and --rho"
        )
    layer = opts.layer if opts.layer is not None else paper[0] if paper is not None else 0
    rho = opts.rho if opts.rho is not None else paper[1] if paper is not None else 0.0
    if not 1 <= layer <= model.cfg.n_layers:
        raise UsageError(
            f"--layer {layer} (1-indexed, as in the paper) is out of range for {name}: expected 1..{model.cfg.n_layers}"
        )
    return layer, rho


def load(ctx: Context, name: str, checkpoint: int | None, opts: Options) -> HookedTransformer | None:
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
def laser(model: HookedTransformer, layer: int, rho: float, matrix: str) -> Iterator[HookedTransformer]:
    """``hooks.low_rank`` on TL block ``layer - 1``; asserts the matrix is bit-identical afterwards."""
    before = get_matrix(model, layer - 1, matrix).clone()
    with low_rank(model, layer - 1, matrix, rho):
        yield model
    if not torch.equal(get_matrix(model, layer - 1, matrix), before):  # pragma: no cover - hooks.low_rank's contract
        raise RuntimeError(f"layer {layer} {matrix} was not restored bit-exact after LASER")


def _laser_info(model: HookedTransformer, layer: int, rho: float, matrix: str) -> dict[str, Any]:
    shape = tuple(get_matrix(model, layer - 1, matrix).shape)
    return {
        "paper_layer": layer,
        "tl_block": layer - 1,
        "matrix": matrix,
        "rho": rho,
        "rank_kept": rank_for(rho, shape),
        "full_rank": min(shape),
    }


def _tokens(model: HookedTransformer, texts: Sequence[str], opts: Options) -> list[Int[torch.Tensor, " pos"]]:
    return [model.to_tokens(t, prepend_bos=opts.prepend_bos)[0] for t in texts]


def token_id(model: HookedTransformer, word: str, prompt: str | None = None) -> tuple[int, str]:
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


#: Prompts per forward pass: a batch's activations stay small (a few hundred MB at Pythia-2.8B's width).
BATCH = 64


class PromptBatch:
    """Prompts tokenized once and right-padded into batches of :data:`BATCH`, for the next-token distribution at
    each prompt's own last token (causal attention: no prompt sees the padding after it).

    ``probs(model, from_layer=L)`` says that only blocks ``L`` and later differ from the model this batch first saw
    at block ``L``: the residual entering block ``L`` is computed once and the rest of the forward resumes from it
    (TransformerLens 3; on 4.x the whole forward runs). A LASER sweep edits one block at a time and asks with that
    block: each of its ρ re-runs only the blocks from there on.
    """

    def __init__(self, model: HookedTransformer, texts: Sequence[str], opts: Options):
        tokens = _tokens(model, texts, opts)
        pad = model.tokenizer.pad_token_id
        pad = int(pad if pad is not None else model.tokenizer.eos_token_id or 0)
        self.n, self.device = len(tokens), opts.device
        self.batches: list[tuple[Int[torch.Tensor, "b pos"], Int[torch.Tensor, " b"]]] = []
        for i in range(0, len(tokens), BATCH):
            chunk = tokens[i : i + BATCH]
            padded = torch.full((len(chunk), max(len(t) for t in chunk)), pad, dtype=torch.long)
            for row, t in enumerate(chunk):
                padded[row, : len(t)] = t
            self.batches.append((padded.to(opts.device), torch.tensor([len(t) - 1 for t in chunk])))
        self._residual: dict[tuple[int, int], torch.Tensor | None] = {}

    @torch.no_grad()
    def probs(self, model: HookedTransformer, from_layer: int = 0) -> Float[torch.Tensor, "n d_vocab_out"]:
        """``[n, d_vocab_out]`` next-token distributions (float32, on the CPU), in the prompts' order."""
        out = []
        for b, (tokens, last) in enumerate(self.batches):
            key = (b, from_layer)
            if from_layer > 0 and key not in self._residual:
                self._residual[key] = residual_before(model, tokens, from_layer)
            residual = self._residual.get(key)
            logits = last_logits(model, tokens, last, residual=residual, start=from_layer)
            out.append(logits.float().softmax(-1).cpu())
        return torch.cat(out) if out else torch.empty(0, model.cfg.d_vocab_out)


def next_token_probs(
    model: HookedTransformer, texts: Sequence[str], opts: Options
) -> Float[torch.Tensor, "n d_vocab_out"]:
    """``[n, d_vocab_out]`` next-token distributions at each prompt's last position (:class:`PromptBatch`: prompts
    batched, logits only where they are read)."""
    return PromptBatch(model, texts, opts).probs(model)


def top_k(model: HookedTransformer, probs: Float[torch.Tensor, " d_vocab_out"], k: int = 5) -> list[dict[str, Any]]:
    values, ids = probs.topk(k)
    return [{"token": model.tokenizer.decode([int(i)]), "id": int(i), "p": float(v)} for v, i in zip(values, ids)]


def rank_of(probs: Float[torch.Tensor, "n d_vocab_out"], token: int) -> Int[torch.Tensor, " n"]:
    """1-based rank of ``token`` in each row (1 = argmax)."""
    return (probs > probs[:, token : token + 1]).sum(-1) + 1


def ranks_of(probs: Float[torch.Tensor, "n d_vocab_out"], tokens: Int[torch.Tensor, " n"]) -> Int[torch.Tensor, " n"]:
    """1-based rank of ``tokens[i]`` in row ``i`` (1 = argmax)."""
    own = probs[torch.arange(len(tokens)), tokens]
    return (probs > own[:, None]).sum(-1) + 1


def _iter_runs(
    ctx: Context, models: Sequence[str], opts: Options, desc: str
) -> Iterator[tuple[str, int | None, HookedTransformer]]:
    """(name, checkpoint, model) for every model x checkpoint whose weights are here."""
    pairs = [(m, c) for m in models for c in opts.checkpoints]
    bar = progress_bar(pairs, enabled=ctx.progress and len(pairs) > 1, desc=desc, unit="checkpoint", log_every=30.0)
    for name, checkpoint in bar:
        model = load(ctx, name, checkpoint, opts)
        if model is not None:
            yield name, checkpoint, model


def _ckpt(checkpoint: int | None) -> str:
    return "final" if checkpoint is None else str(checkpoint)


# ----------------------------------------------------------------------------------- experiments


def full_and_laser(
    model: HookedTransformer, layer: int, rho: float, matrix: str, measure: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """``{"full": measure(), "laser": measure()}``, the second under LASER on paper layer ``layer``."""
    full = measure()
    with laser(model, layer, rho, matrix):
        truncated = measure()
    return {"full": full, "laser": truncated}


@torch.no_grad()
def greedy(model: HookedTransformer, prompt: str, n: int, opts: Options) -> str:
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


def run_factual(ctx: Context, models: Sequence[str], opts: Options) -> dict[str, Any]:
    """Table 1 / Fig 5 right: "Madrid is located in" → " Spain" vs " the" (on a ``pretrained.mini`` series: its
    cities, :func:`mini_factual`)."""
    results: dict[str, Any] = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "factual"):
        if (facts := read_facts(name)) is not None:
            results.setdefault(name, {})[_ckpt(checkpoint)] = mini_factual(model, facts["city_country"], opts)
            continue
        layer, rho = laser_setting("factual", model, name, opts)
        answer, answer_str = token_id(model, MADRID.answer)
        the, _ = token_id(model, "the")

        def measure() -> dict[str, Any]:
            probs, no_cue = next_token_probs(model, [MADRID.prompt, MADRID_NO_CUE.prompt], opts)
            return {
                "p_answer": float(probs[answer]),
                "p_the": float(probs[the]),
                "ratio_answer_the": float(probs[answer] / probs[the]),
                "top5": top_k(model, probs),
                "greedy": greedy(model, MADRID.prompt, 4, opts),
                "no_cue": {  # the control prompt: no "Madrid", the same answer
                    "prompt": MADRID_NO_CUE.prompt,
                    "p_answer": float(no_cue[answer]),
                    "p_the": float(no_cue[the]),
                    "ratio_answer_the": float(no_cue[answer] / no_cue[the]),
                },
            }

        row = {
            "intervention": _laser_info(model, layer, rho, opts.matrix),
            "prompt": MADRID.prompt,
            "answer_token": answer_str,
            **full_and_laser(model, layer, rho, opts.matrix, measure),
        }
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    return results


def city_prompts(pairs: Sequence[tuple[str, str]]) -> tuple[list[Prompt], list[Prompt]]:
    """A mini world's ``"<city> is located in"`` → its country, split into the cities that choose LASER's layer and
    ρ (even positions) and those it is measured on (odd): Table 1's prompt for every city of the world."""
    prompts = [Prompt(f"{city} is located in", country) for city, country in pairs]
    return prompts[0::2], prompts[1::2]


def mini_factual(model: HookedTransformer, pairs: Sequence[tuple[str, str]], opts: Options) -> dict[str, Any]:
    """Table 1 on a mini model: mean P(country) and P(" the") after ``"<city> is located in"`` over the measured
    cities (the no-cue control: ``"It is located in"``, same answers), full vs LASER. The paper's layer and ρ are
    Pythia-1B's; the mini model's are ``--layer`` / ``--rho`` or the pair (late layer, ρ) that maximises the
    mean ln P(country)/P(the) on the *other* cities (as the paper searched per model, App. C.2)."""
    select, measured = city_prompts(pairs)
    no_cue = [Prompt("It is located in", p.answer) for p in measured]
    answers = torch.tensor([token_id(model, p.answer, p.prompt)[0] for p in measured])
    the, _ = token_id(model, "the")
    n = torch.arange(len(measured))

    def means(prompts: Sequence[Prompt]) -> dict[str, Any]:
        probs = next_token_probs(model, [p.prompt for p in prompts], opts)
        p_answer, p_the = probs[n, answers].mean(), probs[:, the].mean()
        return {
            "p_answer": float(p_answer),
            "p_the": float(p_the),
            "ratio_answer_the": float(p_answer / p_the),
            "top5": top_k(model, probs[0]),  # the first prompt's
        }

    def measure() -> dict[str, Any]:
        return {**means(measured), "greedy": greedy(model, measured[0].prompt, 4, opts), "no_cue": means(no_cue)}

    layer, rho, search = mini_laser_setting(model, select, opts)
    return {
        "intervention": _laser_info(model, layer, rho, opts.matrix),
        "prompt": measured[0].prompt,
        "answer_token": "the city's country",
        "prompts": [p.prompt for p in measured],
        "selection": {"prompts": [p.prompt for p in select], "search": search},
        **full_and_laser(model, layer, rho, opts.matrix, measure),
    }


def mini_laser_setting(
    model: HookedTransformer, select: Sequence[Prompt], opts: Options, progress: bool = False
) -> tuple[int, float, list[dict[str, float]]]:
    """(paper-style 1-indexed layer, ρ, the search table): ``--layer`` / ``--rho`` where given, else the best mean
    ln P(answer)/P(" the") on ``select`` over the upper half of the layers × :data:`SWEEP_RHOS` (``opts.matrix``),
    searched with :func:`analyses.lowrank.laser_sweep` (one SVD per matrix)."""
    from analyses.lowrank import laser_sweep

    the, _ = token_id(model, "the")
    answers = torch.tensor([token_id(model, p.answer, p.prompt)[0] for p in select])
    texts = [p.prompt for p in select]

    batch = PromptBatch(model, texts, opts)

    def mean_log_ratio(m: HookedTransformer, from_layer: int) -> float:
        probs = batch.probs(m, from_layer)
        return float((probs[torch.arange(len(texts)), answers].log() - probs[:, the].log()).mean())

    n = model.cfg.n_layers
    layers = [opts.layer] if opts.layer is not None else list(range(n // 2 + 1, n + 1))
    rhos = [opts.rho] if opts.rho is not None else list(SWEEP_RHOS)
    sweep = laser_sweep(
        model,
        mean_log_ratio,
        layers=[l - 1 for l in layers],
        matrices=[opts.matrix],
        rhos=rhos,
        from_layer=True,
        progress=progress,
    )
    search = [
        {"layer": int(r["layer"]) + 1, "rho": float(r["rho"]), "mean_log_ratio": float(r["value"])}
        for r in sweep.table.to_dict(orient="records")
    ]
    best = max(search, key=lambda row: row["mean_log_ratio"])
    return int(best["layer"]), float(best["rho"]), search


def _answer_metrics(
    model: HookedTransformer, prompts: Sequence[Prompt], probs: Float[torch.Tensor, "n d_vocab_out"]
) -> dict[str, Any]:
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


def run_factual20(ctx: Context, models: Sequence[str], opts: Options) -> dict[str, Any]:
    """Fig 16: the 20 factual prompts of Table 5, full vs LASER."""
    results: dict[str, Any] = {}
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
    return results


def run_ioi(ctx: Context, models: Sequence[str], opts: Options) -> dict[str, Any]:
    """Figs 5 left and 15: mean P(IO), P(S), P(the) on 100 IOI prompts, full vs LASER (on a ``pretrained.mini``
    series: its first names in its own IOI story, LASER's layer and ρ searched on other prompts of the same kind)."""
    results: dict[str, Any] = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "ioi"):
        names: Sequence[str] = IOI_NAMES
        template = IOI_TEMPLATE
        if read_facts(name) is None:
            layer, rho = laser_setting("ioi", model, name, opts)
        else:  # the mini model's names and story; LASER's layer and ρ searched on other prompts of the same kind
            names, template = FIRST_NAMES, MINI_IOI_TEMPLATE
            select = ioi_prompts(model.tokenizer, n=opts.n_prompts, seed=opts.seed + 1, names=names, template=template)
            layer, rho, _ = mini_laser_setting(model, [Prompt(p.prompt, p.io) for p in select], opts, ctx.progress)
        prompts = ioi_prompts(model.tokenizer, n=opts.n_prompts, seed=opts.seed, names=names, template=template)
        io = torch.tensor([token_id(model, p.io)[0] for p in prompts])
        s = torch.tensor([token_id(model, p.s)[0] for p in prompts])
        the, _ = token_id(model, "the")
        n = torch.arange(len(prompts))

        def measure() -> dict[str, Any]:
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
            "control_no_io": io_control(model, prompts, opts, names, template),
        }
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    return results


@torch.no_grad()
def io_control(
    model: HookedTransformer,
    prompts: Sequence[IOIPrompt],
    opts: Options,
    names: Sequence[str] = IOI_NAMES,
    template: str = IOI_TEMPLATE,
) -> dict[str, Any]:
    """The IOI claims' control: mean P(IO) and P(" the") of the model as it is, on ``prompts`` (made with
    ``template``) with the IO replaced in the context by another name of ``names`` (``ioi_prompts_without_io``):
    the answer is no longer in the context."""
    control = ioi_prompts_without_io(prompts, single_token_names(model, names), template)
    io = torch.tensor([token_id(model, p.io)[0] for p in control])
    the, _ = token_id(model, "the")
    probs = next_token_probs(model, [p.prompt for p in control], opts)
    p_io, p_the = probs[torch.arange(len(control)), io], probs[:, the]
    return {
        "prompts": [p.prompt for p in control],
        "mean_p_io": float(p_io.mean()),
        "mean_p_the": float(p_the.mean()),
        "ratio_io_the": float(p_io.mean() / p_the.mean()),
    }


def run_prepositions(ctx: Context, models: Sequence[str], opts: Options) -> dict[str, Any]:
    """Fig 14: mean 1-based rank of " the" after 30 raw prepositions and 40 preposition-final sentences; beside
    it (the claim's control) the mean rank of the IO name on ``--n-prompts`` IOI prompts (drawn with seed 0)."""
    results: dict[str, Any] = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "prepositions"):
        the, _ = token_id(model, "the")
        row = {}
        for label, texts in (("raw_prepositions", PREPOSITIONS), ("sentences", PREPOSITION_SENTENCES)):
            ranks = rank_of(next_token_probs(model, texts, opts), the)
            row[label] = {"mean_rank_the": float(ranks.float().mean()), "ranks": ranks.tolist()}
        prompts = ioi_prompts(model.tokenizer, n=opts.n_prompts, seed=0)
        io = torch.tensor([token_id(model, p.io)[0] for p in prompts])
        ranks = ranks_of(next_token_probs(model, [p.prompt for p in prompts], opts), io)
        row["ioi_answer"] = {"mean_rank_io": float(ranks.float().mean()), "ranks": ranks.tolist()}
        results.setdefault(name, {})[_ckpt(checkpoint)] = row
    return results


def run_gpt2_ioi(ctx: Context, models: Sequence[str], opts: Options) -> dict[str, Any]:
    """Fig 17: LASER on W_in of GPT-2 layers 9-12 over a ρ grid; P(Mary), P(them), P(the), P(John)."""
    from analyses.lowrank import laser_sweep

    results: dict[str, Any] = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "gpt2-ioi"):
        ids = {w: token_id(model, w)[0] for w in GPT2_IOI_TOKENS}

        batch = PromptBatch(model, [GPT2_IOI.prompt], opts)

        def metric(m: HookedTransformer, from_layer: int) -> dict[str, float]:
            probs = batch.probs(m, from_layer)[0]
            return {w: float(probs[i]) for w, i in ids.items()}

        layers = [l for l in GPT2_LAYERS if l <= model.cfg.n_layers] or [model.cfg.n_layers]
        sweep = laser_sweep(
            model,
            metric,
            layers=[l - 1 for l in layers],
            matrices=[opts.matrix],
            rhos=GPT2_RHOS,
            from_layer=True,
            progress=ctx.progress,
        )
        full_probs = next_token_probs(model, [GPT2_IOI.prompt], opts)[0]
        table = sweep.table.assign(paper_layer=sweep.table["layer"] + 1)
        lower = {}
        for l in layers:
            part = table[(table["paper_layer"] == l) & table["rho"].between(0.1, 0.8)]
            lower[l] = {w: float((part[part["metric"] == w]["value"] < sweep.baseline[w]).mean()) for w in ids}
        no_names = next_token_probs(model, [GPT2_IOI_NO_NAMES.prompt], opts)[0]
        results.setdefault(name, {})[_ckpt(checkpoint)] = {
            "prompt": GPT2_IOI.prompt,
            "full": {"top4": top_k(model, full_probs, 4), **sweep.baseline},
            "no_names": {"prompt": GPT2_IOI_NO_NAMES.prompt, "top4": top_k(model, no_names, 4)},
            "sweep": table.to_dict(orient="records"),
            "n_svd": sweep.n_svd,
            "fraction_rho_below_full": lower,
        }
    return results


def run_sweep(ctx: Context, models: Sequence[str], opts: Options) -> tuple[dict[str, Any], dict[str, Any]]:
    """A LASER search: layers (last half) x {W_in, W_out} x ρ, objective mean P(answer)/P(" the")."""
    from analyses.lowrank import laser_sweep

    prompts = load_prompt_file(opts.prompts) if opts.prompts else list(FACTUAL_20)
    results: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    for name, checkpoint, model in _iter_runs(ctx, models, opts, "sweep"):
        the, _ = token_id(model, "the")
        answers = torch.tensor([token_id(model, p.answer, p.prompt)[0] for p in prompts])

        batch = PromptBatch(model, [p.prompt for p in prompts], opts)

        def metric(m: HookedTransformer, from_layer: int) -> dict[str, float]:
            probs = batch.probs(m, from_layer)
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
            model,
            metric,
            layers=layers,
            matrices=["mlp_in", "mlp_out"],
            rhos=rhos,
            progress=ctx.progress,
            from_layer=True,
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
        figures[f"sweep_{slug(name)}_{_ckpt(checkpoint)}.png"] = sweep.figure("ratio")
    return results, figures


#: The runner of each part but ``sweep`` (which also returns its figures).
RUNNERS: dict[str, Callable[[Context, Sequence[str], Options], dict[str, Any]]] = {
    "factual": run_factual,
    "factual20": run_factual20,
    "ioi": run_ioi,
    "prepositions": run_prepositions,
    "gpt2-ioi": run_gpt2_ioi,
}


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
    """The parts' options: the command line's, the preset's LASER table and IOI prompt count."""
    o = ctx.options
    return Options(
        models=tuple(o["model"] or ()),
        checkpoints=parse_checkpoints(o["checkpoints"]),
        layer=o["layer"],
        rho=o["rho"],
        matrix=o["matrix"],
        n_prompts=ctx.params.n_prompts,
        seed=ctx.seed,
        prepend_bos=o["prepend_bos"],
        dtype=o["dtype"],
        device=ctx.device or "cpu",
        prompts=o["prompts"],
        laser=ctx.params.laser,
    )


def check(ctx: Context) -> None:
    """The options a range cannot check, before any model loads: ``--checkpoints`` and the ``--prompts`` file."""
    opts = options(ctx)
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


# ----------------------------------------------------------------------------------- the numbers the claims read

Row = Mapping[str, Any]


def _gpt2_measures(r: Row) -> dict[str, Any]:
    """Fig 17's numbers; control: the same fraction for the in-context answer " Mary", and the top-4 count on the
    prompt without the names."""
    below = r["fraction_rho_below_full"]
    lower = {l: below.get(l, below.get(str(l), {})) for l in GPT2_LAYERS[:-1]}

    def matches(top4: Sequence[Mapping[str, Any]]) -> int:
        return len({t["token"].strip() for t in top4} & set(GPT2_IOI_TOKENS))

    return {
        **{f"layer{l}_the_lower": v.get("the") for l, v in lower.items()},
        "top4_match": matches(r["full"]["top4"]),
        "control": {
            **{f"layer{l}_the_lower": v.get("Mary") for l, v in lower.items()},
            "top4_match": matches(r["no_names"]["top4"]),
        },
    }


def _gain(r: Row, key: str, variant: str = "laser") -> float:
    """``r[variant][key] / r["full"][key]``: LASER over the full model, or (``variant="full"``) the model without
    its rank reduction over itself, the gain claims' control (1 by construction)."""
    return r[variant][key] / r["full"][key]


def _factual_measures(r: Row) -> dict[str, Any]:
    return {
        "ratio_full": r["full"]["ratio_answer_the"],
        "ratio_laser": r["laser"]["ratio_answer_the"],
        "p_the_drop": _gain(r, "p_the"),
        "p_answer_gain": _gain(r, "p_answer"),
        "control": {
            "ratio_full": r["laser"]["ratio_answer_the"],  # the late MLP's association removed
            "ratio_laser": r["laser"]["no_cue"]["ratio_answer_the"],  # no in-context cue
            "p_the_drop": _gain(r, "p_answer"),  # the in-context answer's ratio
            "p_answer_gain": _gain(r, "p_answer", "full"),  # no rank reduction
        },
    }


def _factual20_measures(r: Row) -> dict[str, Any]:
    return {
        "p_the_drop": _gain(r, "mean_p_the"),
        "answer_over_the_gain": _gain(r, "ratio_of_means"),
        "control": {
            "p_the_drop": _gain(r, "mean_p_answer"),
            "answer_over_the_gain": _gain(r, "ratio_of_means", "full"),
        },
    }


def _ioi_measures(r: Row) -> dict[str, Any]:
    return {
        "ratio_full": r["full"]["ratio_io_the"],
        "ratio_gain": _gain(r, "ratio_io_the"),
        "control": {"ratio_full": r["control_no_io"]["ratio_io_the"], "ratio_gain": _gain(r, "ratio_io_the", "full")},
    }


def _sweep_measures(r: Row) -> dict[str, Any]:
    best = r["best"]
    return {
        "best_gain": best["value"] / best["baseline"],
        "control": {"best_gain": best["baseline"] / best["baseline"]},
    }


#: Per part, the numbers of one model's last checkpoint that its claims read (``control``: their controls').
LAST_ROW_MEASURES: dict[str, Callable[[Row], dict[str, Any]]] = {
    "factual": _factual_measures,
    "factual20": _factual20_measures,
    "ioi": _ioi_measures,
    "gpt2-ioi": _gpt2_measures,
    "sweep": _sweep_measures,
}


def first_step(by_step: Sequence[tuple[int, float]], bar: float = 5.0) -> int | None:
    """The first training step whose mean rank is ≤ ``bar`` (``None``: none)."""
    return next((step for step, rank in by_step if rank <= bar), None)


def _prepositions_measures(rows: Mapping[str, Row]) -> dict[str, Any]:
    """Fig 14: the first checkpoint where ' the' has mean rank ≤ 5 after the raw prepositions; control: the first
    checkpoint where the in-context answer (the IO name on IOI prompts) does (the last step + 1 when none does)."""
    by_step = sorted((int(k), v) for k, v in rows.items() if k != "final")
    if len(by_step) < 2:
        return {"first_step_the_top5": NotRun(not_run=TWO_CHECKPOINTS), "control": NotRun(not_run=TWO_CHECKPOINTS)}
    first = first_step([(step, v["raw_prepositions"]["mean_rank_the"]) for step, v in by_step])
    io = first_step([(step, v["ioi_answer"]["mean_rank_io"]) for step, v in by_step])
    return {
        "first_step_the_top5": first if first is not None else NotRun(not_run="no checkpoint with mean rank ≤ 5"),
        "control": {"first_step_the_top5": io if io is not None else by_step[-1][0] + 1},
    }


def measures(
    part: str,
    models: Sequence[str],
    results: Mapping[str, Mapping[str, Row]],
    missing: Mapping[str, str],
    paper_models: Sequence[str],
) -> dict[str, Any]:
    """``{model slug: the numbers its claims read}`` for every model run and every paper model of the part
    (:class:`~mechrecall.typed.NotRun`: no weights here; :class:`~mechrecall.typed.NotApplicable`: not among
    ``--model``)."""
    out: dict[str, Any] = {}
    for name in models:
        rows = results.get(name)
        if not rows:
            out[slug(name)] = NotRun(not_run=f"no weights for {name}: {missing.get(name, 'not run')}")
        elif part == "prepositions":
            out[slug(name)] = _prepositions_measures(rows)
        else:
            out[slug(name)] = LAST_ROW_MEASURES[part](list(rows.values())[-1])
    mini = next((n for n in models if results.get(n) and read_facts(n) is not None), None)
    for name in paper_models:
        if mini is not None and MINI_STANDS_IN.get(part) == name and slug(name) not in out:  # its rows say so
            out[slug(name)] = {**out[slug(mini)], "measured_on": f"{measured_on(mini)}, in place of {name}"}
        out.setdefault(slug(name), NotApplicable(not_applicable=f"not among --model ({', '.join(models)})"))
    return out


def slug(name: str) -> str:
    """A model's name in claim ids and file names (``pythia-1b`` for ``/data/pythia-1b``)."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in model_key(name))
