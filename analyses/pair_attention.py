"""Pairwise attention structure: does a query attend *equally within* each (subject, answer) pair of the
context and *differently across* pairs, with ≈ no weight on the query subject and the end token?

This is the pattern Huang, Nichani, Lee & Ge ("Fine-Tuning Dynamics of In-Context Factual Recall in
Transformers", §4.1, Fig 2) prove a one-layer transformer converges to on in-context factual recall. The
score here is model-agnostic: the caller labels every key position with a *role* and passes one query row
of attention, so the same call scores the paper's toy model and any head of GPT-2 / Pythia.

Roles (``Int[batch, key]``): ``2i`` = the subject tokens of context pair ``i``, ``2i + 1`` = its answer
tokens (a span may cover several tokens: masses are summed), :data:`QUERY` = the query subject,
:data:`END` = the end token(s) the query reads from, :data:`OTHER` = anything else (BOS, separators).

For pair masses ``m_s(i), m_a(i)`` and ``P_i = m_s(i) + m_a(i)``:

* ``within`` = mean_i |m_s(i) − m_a(i)| / P_i ∈ [0, 1]: 0 when each pair is attended equally;
* ``across`` = (max_i P_i − min_i P_i) / Σ_i P_i ∈ [0, 1]: > 0 when pairs differ;
* ``rest`` = mass on QUERY and END;
* ``score`` = (1 − within) · across · (1 − rest): 0 for uniform attention, for attention on one token, or
  on the query; large only for the pairwise pattern. For the paper's n = 3 optimum (a, a, ½−a, ½−a, 0, 0)
  it is 1 − 4a (0.47 at a = 0.133).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from jaxtyping import Bool, Float, Int

from mechrecall._tl import HookedTransformer

OTHER, QUERY, END = -1, -2, -3


@dataclass
class PairAttentionStats:
    """Per-prompt statistics of one attention row (see the module docstring); all ``[batch]`` except
    ``subject_mass``/``answer_mass`` ``[batch, pairs]``."""

    subject_mass: Float[torch.Tensor, "batch pairs"]
    answer_mass: Float[torch.Tensor, "batch pairs"]
    within: Float[torch.Tensor, " batch"]
    across: Float[torch.Tensor, " batch"]
    query_mass: Float[torch.Tensor, " batch"]
    end_mass: Float[torch.Tensor, " batch"]
    other_mass: Float[torch.Tensor, " batch"]

    @property
    def pair_mass(self) -> Float[torch.Tensor, "batch pairs"]:
        return self.subject_mass + self.answer_mass

    @property
    def rest(self) -> Float[torch.Tensor, " batch"]:
        return self.query_mass + self.end_mass

    @property
    def score(self) -> Float[torch.Tensor, " batch"]:
        return (1 - self.within) * self.across * (1 - self.rest)


def pair_attention_stats(
    attention: Float[torch.Tensor, "batch key"] | Float[torch.Tensor, " key"],
    roles: Int[torch.Tensor, "batch key"] | Int[torch.Tensor, " key"],
    n_pairs: int | None = None,
) -> PairAttentionStats:
    """Statistics of one query's attention ``[batch, key]`` over keys labelled by ``roles`` (same shape).

    Raises:
        ValueError: mismatched shapes, fewer than 2 pairs, or a pair with no subject or no answer key.
    """
    if attention.ndim == 1:
        attention, roles = attention[None], roles[None] if roles.ndim == 1 else roles
    if roles.ndim == 1:
        roles = roles.expand_as(attention)
    if attention.shape != roles.shape:
        raise ValueError(f"attention {tuple(attention.shape)} and roles {tuple(roles.shape)} must have one shape")
    if n_pairs is None:
        n_pairs = int(roles.max()) // 2 + 1
    if n_pairs < 2:
        raise ValueError(f"n_pairs={n_pairs}; the across-pair difference needs >= 2 context pairs")
    labels = torch.arange(2 * n_pairs, device=roles.device)
    onehot = (roles[..., None] == labels).to(attention.dtype)  # [B, key, 2P]
    present = onehot.any(1)  # [B, 2P]
    if not present.all():
        missing = sorted(set(labels[~present.all(0)].tolist()))
        raise ValueError(f"every pair needs subject (2i) and answer (2i+1) keys; some prompts lack roles {missing[:6]}")
    mass = torch.einsum("bk,bkr->br", attention, onehot)
    ms, ma = mass[:, 0::2], mass[:, 1::2]
    P = ms + ma
    tiny = torch.finfo(attention.dtype).tiny
    within = ((ms - ma).abs() / P.clamp_min(tiny)).mean(-1)
    across = (P.max(-1).values - P.min(-1).values) / P.sum(-1).clamp_min(tiny)
    pick = lambda role: (attention * (roles == role)).sum(-1)  # noqa: E731
    return PairAttentionStats(ms, ma, within, across, pick(QUERY), pick(END), pick(OTHER))


def is_pairwise(
    stats: PairAttentionStats, *, within_tol: float = 0.1, min_across: float = 0.05, max_rest: float = 0.05
) -> Bool[torch.Tensor, " batch"]:
    """The pairwise pattern: equal within pairs (``within <= within_tol``), different across
    (``across >= min_across``), little on the query and end (``rest <= max_rest``)."""
    return (stats.within <= within_tol) & (stats.across >= min_across) & (stats.rest <= max_rest)


@torch.no_grad()
def head_pair_scores(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    roles: Int[torch.Tensor, "batch pos"],
    query_pos: Int[torch.Tensor, " batch"] | int,
    layers: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Score every layer × head: one row per head with the prompt-mean ``within``, ``across``, ``rest``,
    ``score`` and ``pairwise_fraction`` (share of prompts passing :func:`is_pairwise`), from the attention
    row of ``query_pos`` (one per prompt; e.g. the last token of each prompt)."""
    from analyses.heads import attention_patterns

    if tokens.shape != roles.shape:
        raise ValueError(f"tokens {tuple(tokens.shape)} and roles {tuple(roles.shape)} must have one shape")
    B = tokens.shape[0]
    q = torch.full((B,), query_pos, dtype=torch.long) if isinstance(query_pos, int) else query_pos.long()
    patterns = attention_patterns(model, tokens, layers)  # [L, B, H, q, k]
    rows = patterns.permute(1, 3, 0, 2, 4)[torch.arange(B), q]  # [B, L, H, k]: the query row of each prompt
    keys = torch.arange(tokens.shape[1])
    masked_roles = torch.where(keys[None, :] <= q[:, None], roles, torch.full_like(roles, OTHER))
    layer_ids = list(range(model.cfg.n_layers)) if layers is None else list(layers)
    n_pairs = int(roles.max()) // 2 + 1
    records = []
    for li, layer in enumerate(layer_ids):
        for head in range(rows.shape[2]):
            st = pair_attention_stats(rows[:, li, head].double(), masked_roles, n_pairs)
            records.append(
                {
                    "layer": layer,
                    "head": head,
                    "within": float(st.within.mean()),
                    "across": float(st.across.mean()),
                    "rest": float(st.rest.mean()),
                    "score": float(st.score.mean()),
                    "pairwise_fraction": float(is_pairwise(st).double().mean()),
                }
            )
    return pd.DataFrame.from_records(records)
