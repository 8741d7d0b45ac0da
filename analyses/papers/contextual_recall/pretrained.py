"""Extension, not a reproduction: the paper's task-vector geometry (§3.4, Fig. 8) and steering on a real
pretrained model (Pythia / GPT-2) with few-shot natural-language contextual-recall prompts (``data.RELATIONS``),
or on the mini model of ``pretrained.mini`` with its own facts (its ``facts.json``: the ground truth).

For ``t`` demonstrations of one relation (landmark → country, landmark → city, person → birth year), the
attention output of a middle layer at the last prompt token is read (``analyses.task_vectors``); its cosine
silhouette by relation type and the first-answer-token accuracy are tracked against ``t``. Steering replaces
that vector by ``(1-β) v_r + β v_r'`` and ranks the original and the target answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from jaxtyping import Float, Int

from mechrecall._tl import HookedTransformer
from mechrecall.controls import untrained_controls
from mechrecall.typed import NotRun

from .data import RELATIONS, prompt_text

Item = tuple[int, list[tuple[str, str]], tuple[str, str]]
Relations = Mapping[str, Sequence[tuple[str, str]]]
#: The two relations steered into each other: the same subjects, another answer (a landmark's country / city).
STEER_PAIR = ("landmark_country", "landmark_city")
#: The same on the mini model's world: a person's country / city.
MINI_STEER_PAIR = ("person_country", "person_city")


def relations_of(name: str) -> tuple[Relations, tuple[str, str]]:
    """The relations to prompt ``name`` with and the steering pair: the mini model's own facts (its ground truth)
    for a ``pretrained.mini`` series, else the real-world ``data.RELATIONS``."""
    from pretrained.mini import read_facts

    facts = read_facts(name)
    return (facts, MINI_STEER_PAIR) if facts is not None else (RELATIONS, STEER_PAIR)


def build_prompt_set(
    K: int, max_t: int, seed: int, relations: Relations = RELATIONS
) -> tuple[list[str], list[Item], dict[str, dict[str, str]]]:
    """``K`` base prompts per relation (the query excluded from its demos); prefixes give every ``t``.
    Returns ``(relations, items, answers)`` with items ``[(relation index, demos, (query, answer))]`` and
    ``answers[relation][subject]`` (every query's answer under every relation: the steering targets)."""
    g = torch.Generator().manual_seed(seed)
    names = list(relations)
    items: list[Item] = []
    for r, name in enumerate(names):
        pairs = relations[name]
        for _k in range(K):
            perm = torch.randperm(len(pairs), generator=g).tolist()
            demos = [pairs[i] for i in perm[1 : max_t + 1]]
            items.append((r, demos, pairs[perm[0]]))
    return names, items, {name: dict(relations[name]) for name in names}


def _tokens(model: HookedTransformer, texts: Sequence[str]) -> tuple[Int[torch.Tensor, "n T"], Int[torch.Tensor, " n"]]:
    """Right-padded token ids ``[n, T]`` and the last real position of each ``[n]``."""
    seqs = [model.to_tokens(t, prepend_bos=False)[0].cpu() for t in texts]
    T = max(len(s) for s in seqs)
    eos = model.tokenizer.eos_token_id if model.tokenizer is not None else None
    out = torch.full((len(seqs), T), eos if eos is not None else 0, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out, torch.tensor([len(s) - 1 for s in seqs])


@torch.no_grad()
def task_geometry(
    model: HookedTransformer,
    K: int = 8,
    max_t: int = 6,
    layer: int | None = None,
    seed: int = 0,
    betas: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
    relations: Relations = RELATIONS,
    steer_pair: tuple[str, str] = STEER_PAIR,
) -> dict[str, Any]:
    """Silhouette / accuracy vs ``t`` and steering ranks at ``t = max_t`` (see the module docstring)."""
    from analyses.task_vectors import class_cosine_matrix, cosine_silhouette_score, residual_vectors
    from pretrained import answer_token

    layer = model.cfg.n_layers // 2 if layer is None else layer
    names, items, by_subject = build_prompt_set(K, max_t, seed, relations)
    labels = torch.tensor([r for r, _, _ in items])
    answers = torch.tensor([int(answer_token(model, q[1])) for _, _, q in items])
    out: dict[str, Any] = {
        "layer": layer,
        "relations": names,
        "t": [],
        "silhouette": [],
        "accuracy": [],
        "similarity": {},
    }
    dev = model.cfg.device
    for t in range(max_t + 1):
        tokens, pos = _tokens(model, [prompt_text(d[:t], q[0]) for _, d, q in items])
        reps = residual_vectors(model, tokens.to(dev), layer, site="attn_out", positions=pos).cpu()
        logits = model(tokens.to(dev))[torch.arange(len(pos)), pos.to(dev)].cpu()
        out["t"].append(t)
        out["silhouette"].append(cosine_silhouette_score(reps, labels))
        out["accuracy"].append((logits.argmax(-1) == answers).float().mean().item())
        out["similarity"][t] = class_cosine_matrix(reps, labels)[0].tolist()
    task_vectors = torch.stack([reps[labels == r].mean(0) for r in range(len(names))])
    answer = lambda text: int(answer_token(model, text))  # noqa: E731
    out["steering"] = steer_pair_of(
        model, (tokens, pos), items, names, by_subject, task_vectors, layer, betas, answer, steer_pair
    )
    return out


def steer_pair_of(
    model: HookedTransformer,
    prompts: tuple[Int[torch.Tensor, "n T"], Int[torch.Tensor, " n"]],
    items: Sequence[Item],
    names: Sequence[str],
    by_subject: dict[str, dict[str, str]],
    task_vectors: Float[torch.Tensor, "relations d_model"],
    layer: int,
    betas: Sequence[float],
    answer: Callable[[str], int],
    pair: tuple[str, str] = STEER_PAIR,
) -> dict[str, list[float]]:
    """Steering between the two relations of ``pair`` (same subjects, so both answers exist for every query): the
    attention output at the last token of the full prompts replaced by ``(1-β) v_r + β v_r'``; mean ranks of the
    original and the target answers per β."""
    from analyses.task_vectors import replace_and_rank

    tokens, pos = prompts
    dev = model.cfg.device
    labels = torch.tensor([r for r, _, _ in items])
    first, second = names.index(pair[0]), names.index(pair[1])
    src = [i for i, (r, _, _) in enumerate(items) if r in (first, second)]
    tgt_rel = [second if items[i][0] == first else first for i in src]  # one relation of the pair <-> the other
    q = [items[i][2][0] for i in src]
    orig = torch.tensor([answer(by_subject[names[items[i][0]]][s]) for i, s in zip(src, q)])
    target = torch.tensor([answer(by_subject[names[r]][s]) for r, s in zip(tgt_rel, q)])
    src_t = torch.tensor(src)
    steer: dict[str, list[float]] = {"beta": list(betas), "rank_orig": [], "rank_target": []}
    for b in betas:
        vec = (1 - b) * task_vectors[labels[src_t]] + b * task_vectors[torch.tensor(tgt_rel)]
        ranks = replace_and_rank(
            model,
            tokens[src_t].to(dev),
            vec,
            layer,
            {"orig": orig, "target": target},
            site="attn_out",
            positions=pos[src_t],
        )
        steer["rank_orig"].append(ranks["orig"].mean().item())
        steer["rank_target"].append(ranks["target"].mean().item())
    return steer


def run_pretrained(
    name: str, checkpoint: int | None, K: int, max_t: int, seed: int, device: str | None
) -> dict[str, Any] | NotRun:
    """The extension on checkpoint ``name``: :func:`task_geometry` and the two numbers its claims read, or
    ``NotRun`` (``{"not_run": why, "model": name}``) where its weights cannot be loaded here."""
    import pretrained
    from pretrained.mini import measured_on

    model, why = pretrained.load_or_why(name, checkpoint=checkpoint, processing="raw", device=device or "cpu")
    if model is None:
        return NotRun.model_validate({"not_run": why, "model": name})
    model.eval()
    relations, pair = relations_of(name)
    geo = task_geometry(model, K=K, max_t=max_t, seed=seed, relations=relations, steer_pair=pair)

    def measure(m: HookedTransformer) -> dict[str, float]:
        return contrasts(task_geometry(m, K=K, max_t=max_t, seed=seed, relations=relations, steer_pair=pair))

    return {
        "model": name,
        "measured_on": measured_on(name),
        "steer_pair": list(pair),
        "K": K,
        **geo,
        **contrasts(geo),
        "steering_target_over_orig": geo["steering"]["rank_target"][-1] / geo["steering"]["rank_orig"][-1],
        "at_init": untrained_controls(lambda s: pretrained.untrained_like(model, s), measure, seed),
    }


def contrasts(geo: dict[str, Any]) -> dict[str, float]:
    """The two contrasts the claims read (≈ 0 on an untrained model, either sign): the silhouette rise from t = 0
    to t = max, and ln(mean rank original / mean rank target) at β = 1 (> 0: the target outranks the original)."""
    steer = geo["steering"]
    return {
        "silhouette_rise": geo["silhouette"][-1] - geo["silhouette"][0],
        "steering_log_orig_over_target": math.log(steer["rank_orig"][-1] / steer["rank_target"][-1]),
    }
