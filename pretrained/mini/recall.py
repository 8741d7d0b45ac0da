"""Exact-match factual recall of a model over a world's facts, on its train or held-out templates."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from mechrecall._tl import HookedTransformer
from pretrained.mini.world import World, prompt_of


def recall_prompts(world: World, split: str) -> list[tuple[str, str, str]]:
    """``[(relation, prompt, answer)]``: every fact of ``world`` in every ``split`` ("train" / "heldout") template."""
    return [
        (rel, prompt_of(template, s), a)
        for rel, pairs in world.facts().items()
        for template in world.templates[rel][split]
        for s, a in pairs
    ]


@torch.no_grad()
def recall(model: HookedTransformer, tokenizer: Any, world: World, split: str) -> dict[str, float]:
    """Per relation and ``"all"``: the fraction of facts whose answer token is the model's top next token after
    the prompt (every answer is one token: ``pretrained.mini.tokenizer.multi_token_words`` is empty)."""
    rows = recall_prompts(world, split)
    hits: dict[str, list[bool]] = defaultdict(list)
    for start in range(0, len(rows), 256):
        chunk = rows[start : start + 256]
        ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for _, p, _ in chunk]
        tokens = torch.zeros(len(ids), max(map(len, ids)), dtype=torch.long)  # right-padded with id 0
        for i, seq in enumerate(ids):
            tokens[i, : len(seq)] = torch.tensor(seq)
        last = torch.tensor([len(seq) - 1 for seq in ids])
        top = model(tokens.to(model.cfg.device))[torch.arange(len(ids)), last].argmax(-1).cpu()
        for (rel, _, a), t in zip(chunk, top.tolist()):
            hits[rel].append(t == tokenizer(" " + a, add_special_tokens=False)["input_ids"][0])
    out = {rel: sum(h) / len(h) for rel, h in sorted(hits.items())}
    out["all"] = sum(sum(h) for h in hits.values()) / sum(len(h) for h in hits.values())
    return out
