"""Measurements on a trained model.

- Fig. 1 / Figs. 2-5: the four final-token metrics — exact, attribute-type, subject and attribute match.
- §3.4 / Figs. 8, 16, 17: representations at the query subject of ICL prefixes with ``t`` demonstrations,
  their cosine silhouette S̄^t and type-by-type similarity C̄^t, and ICL accuracy vs ``t``.
- §3.4 / Figs. 8 right, 18: steering by replacing the layer-2 attention output at the last position with
  ``(1-β) v_ℓ + β v_ℓ'`` and ranking the original and the target attribute.
- §4 / Figs. 9-12, 20-21: Model B head roles — attention maps, cosine of each head's output with the
  construction's ``f_subj`` / ``f_rel`` (also after projecting out the all-attributes direction ``U_all``),
  and sliced OV matrices.

Through the generic layer (``analyses.task_vectors``, ``analyses.heads``, ``analyses.ov``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from jaxtyping import Float, Int

from analyses.heads import attention_patterns, head_outputs
from analyses.ov import full_ov_circuit
from analyses.task_vectors import class_cosine_matrix, cosine_silhouette_score, replace_and_rank, residual_vectors
from mechrecall._tl import HookedTransformer
from mechrecall.batch import Batch

from .data import World, icl_prefix_tokens
from .models import Basis, theoretical_outputs

METRICS = ("exact", "attr_type", "subject", "attribute")


@torch.no_grad()
def final_predictions(model: HookedTransformer, batch: Batch) -> Int[torch.Tensor, " B"]:
    """Argmax over the full vocabulary (first index on ties) of the logits at ``pred_pos``: ``[B]``."""
    logits = model(batch.tokens)
    rows = torch.arange(batch.tokens.shape[0], device=logits.device)
    return logits[rows, batch.extras["pred_pos"].to(logits.device)].argmax(-1).cpu()


def metrics_of_predictions(pred: Int[torch.Tensor, " B"], batch: Batch, world: World) -> dict[str, float]:
    """Fig. 1's metrics from predictions ``[B]``: ``exact`` = the ground-truth attribute; ``attr_type`` = any
    value of the target's type; ``subject`` = any attribute of the sequence (PT) / query (ICL) subject;
    ``attribute`` = any attribute token."""
    e = {k: v.cpu() for k, v in batch.extras.items()}
    types = world.type_of_token()
    pred_type = types[pred]
    own = world.attributes[e["subject"]]  # [B, L]
    return {
        "exact": (pred == e["target"]).float().mean().item(),
        "attr_type": (pred_type == e["attr_type"]).float().mean().item(),
        "subject": (own == pred[:, None]).any(1).float().mean().item(),
        "attribute": (pred_type >= 0).float().mean().item(),
    }


def recall_metrics(model: HookedTransformer, batch: Batch, world: World) -> dict[str, float]:
    """:func:`metrics_of_predictions` of the model's argmax on ``batch``."""
    was = model.training
    model.eval()
    try:
        return metrics_of_predictions(final_predictions(model, batch.to(model.cfg.device or "cpu")), batch, world)
    finally:
        model.train(was)


#: what the model answers at a query (Finding 3's miss, §3.2): the target ``attribute``; another value of the
#: ``right_type``; a ``grammar`` token; ``other`` (a value of another type, a subject, ``[sep]``)
BREAKDOWN = ("attribute", "right_type", "grammar", "other")


def breakdown_of_logits(
    logits: Float[torch.Tensor, "B V"],
    target: Int[torch.Tensor, " B"],
    attr_type: Int[torch.Tensor, " B"],
    world: World,
) -> dict[str, float]:
    """The share of each :data:`BREAKDOWN` class among the argmax answers (first index on ties) of ``logits`` at
    the query; the four shares sum to 1."""
    pred = logits.argmax(-1).cpu()
    target, attr_type = target.cpu(), attr_type.cpu()
    c = world.cfg
    exact = pred == target
    right_type = (world.type_of_token()[pred] == attr_type) & ~exact
    grammar = (pred >= c.grammar_offset) & (pred < c.grammar_offset + c.n_grammar)
    other = ~(exact | right_type | grammar)
    return {k: v.float().mean().item() for k, v in zip(BREAKDOWN, (exact, right_type, grammar, other))}


@torch.no_grad()
def prediction_breakdown(model: HookedTransformer, batch: Batch, world: World) -> dict[str, float]:
    """:func:`breakdown_of_logits` of the model's logits at ``pred_pos`` of ``batch``."""
    was = model.training
    model.eval()
    try:
        b = batch.to(model.cfg.device or "cpu")
        logits = model(b.tokens)
        rows = torch.arange(b.tokens.shape[0], device=logits.device)
        e = batch.extras
        return breakdown_of_logits(logits[rows, b.extras["pred_pos"]], e["target"], e["attr_type"], world)
    finally:
        model.train(was)


# ----------------------------------------------------------------------------------------------- §3.4

#: (layer, site) read for Fig. 16; the paper's main one is layer-2 attention = (1, "attn_out").
REP_SITES = ((0, "attn_out"), (0, "mlp_out"), (1, "attn_out"), (1, "mlp_out"), (1, "resid_post"))


@torch.no_grad()
def clustering_vs_demos(
    model: HookedTransformer,
    world: World,
    subj: Int[torch.Tensor, "n m"],
    ell: Int[torch.Tensor, " n"],
    ts: Sequence[int],
    sites: Sequence[tuple[int, str]] = REP_SITES,
    main: tuple[int, str] = (1, "attn_out"),
) -> dict[str, Any]:
    """For each ``t``: held-out ICL exact accuracy, the cosine silhouette of each site's representation at
    the query position (labels = attribute type), and C̄^t at ``main`` (Figs. 8, 16, 17)."""
    silhouette: dict[str, list[float]] = {f"L{l + 1}_{s}": [] for l, s in sites}
    out: dict[str, Any] = {"t": [], "accuracy": [], "silhouette": silhouette, "similarity": {}}
    target = world.attributes[subj[:, -1], ell]
    for t in ts:
        tokens = icl_prefix_tokens(world, subj, ell, t).to(model.cfg.device)
        pred = model(tokens)[:, -1].argmax(-1).cpu()
        out["t"].append(t)
        out["accuracy"].append((pred == target).float().mean().item())
        for layer, site in sites:
            reps = residual_vectors(model, tokens, layer, site=site).cpu()
            out["silhouette"][f"L{layer + 1}_{site}"].append(cosine_silhouette_score(reps, ell))
            if (layer, site) == main:
                out["similarity"][t] = class_cosine_matrix(reps, ell)[0].tolist()
    return out


@torch.no_grad()
def steering_ranks(
    model: HookedTransformer,
    world: World,
    subj: Int[torch.Tensor, "n m"],
    ell: Int[torch.Tensor, " n"],
    betas: Sequence[float],
    layer: int = 1,
    site: str = "attn_out",
) -> dict[str, Any]:
    """Fig. 8 right / Fig. 18: task vectors ``v_ℓ`` = mean layer-2 attention output at the last position of the
    full prompts of type ℓ; for every prompt of type ℓ and every ℓ' ≠ ℓ, replace that output by
    ``(1-β) v_ℓ + β v_ℓ'`` and rank the query subject's type-ℓ (original) and type-ℓ' (target) attributes.
    Returns mean ranks per β, overall and per target type."""
    L = world.cfg.n_types
    t = subj.shape[1] - 1
    tokens = icl_prefix_tokens(world, subj, ell, t).to(model.cfg.device)
    reps = residual_vectors(model, tokens, layer, site=site).cpu()
    v = torch.stack([reps[ell == e].mean(0) for e in range(L)])  # [L, d]
    src = torch.arange(len(ell)).repeat_interleave(L - 1)
    tgt = torch.stack([torch.tensor([e for e in range(L) if e != int(ell[i])]) for i in range(len(ell))]).view(-1)
    q = subj[src, -1]
    orig_ids = world.attributes[q, ell[src]]
    tgt_ids = world.attributes[q, tgt]
    out: dict[str, Any] = {
        "beta": [float(b) for b in betas],
        "rank_orig": [],
        "rank_target": [],
        "rank_target_by_type": {int(e): [] for e in range(L)},
        "rank_orig_by_type": {int(e): [] for e in range(L)},
    }
    for b in betas:
        vec = (1 - b) * v[ell[src]] + b * v[tgt]
        r = replace_and_rank(model, tokens[src], vec, layer, {"orig": orig_ids, "target": tgt_ids}, site=site)
        out["rank_orig"].append(r["orig"].mean().item())
        out["rank_target"].append(r["target"].mean().item())
        for e in range(L):
            sel = (tgt == e).to(r["target"].device)
            out["rank_target_by_type"][e].append(r["target"][sel].mean().item())
            out["rank_orig_by_type"][e].append(r["orig"][sel].mean().item())
    return out


def crossing_beta(steer: Mapping[str, Any]) -> float | None:
    """Smallest β where the target attribute outranks the original (mean ranks), or None."""
    for b, o, t in zip(steer["beta"], steer["rank_orig"], steer["rank_target"]):
        if t < o:
            return b
    return None


# ----------------------------------------------------------------------------------------------- Model B


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)


@torch.no_grad()
def head_role_cosines(
    model: HookedTransformer,
    world: World,
    batch: Batch,
    mode: str,
    T_max: int,
    ft_subjects: Int[torch.Tensor, " n"] | None = None,
) -> dict[str, dict[str, Any]]:
    """Mean over sequences of ``cos(f_h, f_subj)`` and ``cos(f_h, f_rel)`` per head (Figs. 10/12), in the full
    space and after projecting the all-attributes direction ``U_all`` out of both sides; roles = argmax."""
    f = head_outputs(model, batch.tokens.to(model.cfg.device), 0, batch.extras["pred_pos"]).cpu()  # [B, H, d]
    f_subj, f_rel = theoretical_outputs(world, batch, mode, T_max, ft_subjects)
    u = Basis(world, T_max).u_all
    u = u / u.norm()

    def proj(x: torch.Tensor) -> torch.Tensor:
        return x - (x @ u)[..., None] * u

    out: dict[str, dict[str, Any]] = {}
    for tag, (a, s, r) in {"full": (f, f_subj, f_rel), "minus_U_all": (proj(f), proj(f_subj), proj(f_rel))}.items():
        cs = _cos(a, s[:, None, :]).mean(0)
        cr = _cos(a, r[:, None, :]).mean(0)
        out[tag] = {
            "subject": cs.tolist(),
            "relation": cr.tolist(),
            "subject_head": int(cs.argmax()),
            "relation_head": int(cr.argmax()),
        }
    return out


def ov_slice_ids(world: World, n: int = 8) -> tuple[list[int], list[str], list[int]]:
    """App. C.3.1's slices: the first ``n`` subjects, ``n`` type-1 values, ``n`` type-2 values, 4 grammar tokens +
    ``[sep]``, all relation tokens (ids, group names, group boundaries)."""
    c = world.cfg
    groups = [
        ("subjects", list(range(min(n, c.n_subjects)))),
        ("type-1 attrs", world.value_ids(0)[:n].tolist()),
        ("type-2 attrs", world.value_ids(min(1, c.n_types - 1))[:n].tolist()),
        ("grammar+sep", [*list(range(c.grammar_offset, c.grammar_offset + min(4, c.n_grammar))), c.sep]),
    ]
    if c.relation_tokens:
        groups.append(("relations", list(range(c.relation_offset, c.relation_offset + c.n_types))))
    ids: list[int] = []
    names: list[str] = []
    bounds: list[int] = []
    for name, g in groups:
        ids += g
        names.append(name)
        bounds.append(len(ids))
    return ids, names, bounds


@torch.no_grad()
def ov_slices(model: HookedTransformer, world: World, ids: Sequence[int]) -> Float[torch.Tensor, "head k k"]:
    """``[head, out, in]`` sliced OV matrices in the paper's convention (Figs. 20-21): entry ``[out, in]`` is the
    logit of token ``out`` written by the head when it attends to token ``in`` (``W_E OV W_U`` transposed)."""
    full = torch.as_tensor(full_ov_circuit(model).AB)[0]  # [head, d_vocab(in), d_vocab(out)]
    idx = torch.tensor(list(ids))
    return full[:, idx][:, :, idx].transpose(1, 2).cpu()


@torch.no_grad()
def example_attention(model: HookedTransformer, tokens: Int[torch.Tensor, "B T"]) -> Float[torch.Tensor, "head T T"]:
    """Attention patterns ``[head, q, k]`` of one sequence (Figs. 9, 11)."""
    return attention_patterns(model, tokens[:1].to(model.cfg.device))[0, 0].cpu()
