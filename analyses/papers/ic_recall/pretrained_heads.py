"""Extension (not in Huang, Nichani, Lee & Ge): does a real LM show the pairwise attention pattern of Fig 2?

Few-shot fact prompts are written as data (``facts.json``: capital, language, birthplace tables), e.g.
``"Einstein: Germany. Newton: England. Curie:"``: k (subject, answer) pairs of one relation, then a query
subject and ``":"``, the position that must name the answer. Every layer × head of a GPT-2 / Pythia model
is scored from that last position with the model-agnostic :func:`analyses.pair_attention.head_pair_scores`
(within-pair equality, across-pair difference, little on the query subject and the ``":"``), and heads are
ranked by the pairwise score. The paper studies a one-layer toy; whether real heads do this is open.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch

from analyses.pair_attention import END, OTHER, QUERY
from mechrecall.claims import at_least
from mechrecall.experiment import Context, PartResult

FACTS = Path(__file__).with_name("facts.json")
PROMPTS = {"micro": 24, "smoke": 120, "paper": 300}


def load_facts(path: str | Path = FACTS) -> dict[str, list[tuple[str, str]]]:
    """Relation name -> (subject, answer) pairs (keys starting with ``_`` are comments)."""
    raw = json.loads(Path(path).read_text())
    return {name: [tuple(p) for p in pairs] for name, pairs in raw.items() if not name.startswith("_")}


def prompt_vocab(path: str | Path = FACTS) -> list[str]:
    """Every word the prompts use (for a test tokenizer): subjects, answers and the punctuation."""
    words = {w for pairs in load_facts(path).values() for pair in pairs for w in pair}
    return [*sorted(words), ":", "."]


def fact_prompts(
    tokenizer: Any, k: int = 2, n_prompts: int = 100, seed: int = 0, path: str | Path = FACTS
) -> dict[str, Any]:
    """Tokenized prompts with per-token roles (``2i``/``2i+1`` for pair i's subject/answer, QUERY, END, OTHER).

    Returns ``tokens [B, T]`` (right-padded), ``roles [B, T]``, ``query_pos [B]`` (the final ``":"``),
    ``texts`` and ``relations``. Pieces are tokenized one by one (``" " + word``), so word spans are exact."""
    facts = load_facts(path)
    rng = random.Random(seed)
    bos = getattr(tokenizer, "bos_token_id", None)
    pad = bos if bos is not None else (tokenizer.eos_token_id or 0)
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    rows, texts, relations = [], [], []
    names = sorted(facts)
    for _ in range(n_prompts):
        rel = rng.choice(names)
        pairs = rng.sample(facts[rel], k + 1)
        pieces: list[tuple[str, int]] = []
        for i, (s, a) in enumerate(pairs[:k]):
            pieces += [((" " if i else "") + s, 2 * i), (":", OTHER), (" " + a, 2 * i + 1), (".", OTHER)]
        pieces += [(" " + pairs[k][0], QUERY), (":", END)]
        ids, roles = ([bos], [OTHER]) if bos is not None else ([], [])
        for text, role in pieces:
            piece = encode(text)
            ids += piece
            roles += [role] * len(piece)
        rows.append((ids, roles))
        texts.append("".join(t for t, _ in pieces))
        relations.append(rel)
    T = max(len(ids) for ids, _ in rows)
    tokens = torch.full((len(rows), T), pad, dtype=torch.long)
    roles = torch.full((len(rows), T), OTHER, dtype=torch.long)
    query_pos = torch.empty(len(rows), dtype=torch.long)
    for b, (ids, rl) in enumerate(rows):
        tokens[b, : len(ids)] = torch.tensor(ids)
        roles[b, : len(rl)] = torch.tensor(rl)
        query_pos[b] = len(ids) - 1
    return {"tokens": tokens, "roles": roles, "query_pos": query_pos, "texts": texts, "relations": relations}


def part_pretrained(ctx: Context) -> PartResult:
    """Score every head of ``--model`` with the pairwise-attention score (not run, with the reason, without weights)."""
    import pretrained
    from analyses.pair_attention import head_pair_scores
    from analyses.plotting import heatmap

    name = ctx.options.get("model") or "pythia-160m"
    X = "pretrained"
    rule = at_least(0.5, partial=0.2)
    claim_text = (
        f"extension: the best head of {name} attends pairwise from the final ':' (share of prompts "
        "passing within ≤ 0.1, across ≥ 0.05, query + ':' ≤ 0.05)"
    )
    try:
        model = pretrained.load(name, processing="raw")
    except pretrained.PretrainedNotAvailableError as exc:
        reason = f"no weights: {str(exc).splitlines()[0]}"
        ctx.say(f"pretrained: not run ({reason})")
        return PartResult(
            {"model": name, "not_run": reason},
            [
                ctx.claim(X, "best_head_pairwise_share", claim_text, None, rule, reason=reason, where="extension"),
                ctx.claim(
                    X,
                    "best_head_score",
                    f"extension: the highest mean pairwise score over heads of {name}",
                    None,
                    at_least(0.2),
                    reason=reason,
                    where="extension",
                ),
            ],
        )
    model.eval()
    prompts = fact_prompts(model.tokenizer, k=2, n_prompts=PROMPTS[ctx.preset], seed=ctx.seed)
    table = head_pair_scores(
        model,
        prompts["tokens"].to(model.cfg.device),
        prompts["roles"].to(model.cfg.device),
        prompts["query_pos"].to(model.cfg.device),
    )
    ranked = table.sort_values("score", ascending=False).reset_index(drop=True)
    best = ranked.iloc[0]
    long = table.melt(
        id_vars=["layer", "head"],
        value_vars=["score", "within", "across", "rest"],
        var_name="metric",
        value_name="value",
    )
    fig = heatmap(long, panel="metric", title=f"pairwise attention score per head of {name} (extension of Fig 2)")
    claims = [
        ctx.claim(
            X,
            "best_head_pairwise_share",
            claim_text,
            float(ranked["pairwise_fraction"].max()),
            rule,
            where="extension",
            note=f"head L{int(best['layer'])}H{int(best['head'])} has the highest score",
        ),
        ctx.claim(
            X,
            "best_head_score",
            f"extension: the highest mean pairwise score over heads of {name}",
            float(best["score"]),
            at_least(0.2),
            where="extension",
            note=f"L{int(best['layer'])}H{int(best['head'])}: within {best['within']:.3f}, "
            f"across {best['across']:.3f}, "
            f"rest {best['rest']:.3f}",
        ),
    ]
    ctx.say(f"pretrained {name}: best head L{int(best['layer'])}H{int(best['head'])} score {best['score']:.3f}")
    return PartResult(
        {
            "model": name,
            "n_prompts": len(prompts["texts"]),
            "example_prompt": prompts["texts"][0],
            "ranking": ranked.head(20).to_dict(orient="records"),
            "table": table.to_dict(orient="records"),
        },
        claims,
        {"pretrained_head_pair_scores.png": fig},
    )
