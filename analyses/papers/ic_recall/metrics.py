"""First- and second-step accuracies of an IC-recall model (Huang, Nichani, Lee & Ge, §5, Fig 3), with the
ceilings that identifiability allows.

* ``acc_relation_exact``: argmax of the relation logits at EoS is r*; ``acc_relation_consistent``: it is a
  relation consistent with the context; ``bayes_ceiling``: E[1/K] on the test set (no model can do better).
* ``acc_answer_teacher_forced``: the second step with r* appended (the paper's L2); ``acc_final``: end to
  end, the model's own decoded relation appended; ``answer_ceiling``: the best end-to-end accuracy possible.
* ``acc_answer_given_own_relation``: the second step executes the decoded relation r̂ (answer = r̂(s_{k+1})).
* ``soft_relation`` / ``soft_answer``: mean p1(r*) / p2(a*) at temperature T (the theory's "accuracy").

Also the measurements on a built model: the construction against its closed forms (eq. (16), App. D), the
memory's read-out (Lemma 3.1, App. A), the answer tie at EoS (Lemma B.1) and the confusing gap (§4.1); the
attention patterns (pair scores of :mod:`analyses.pair_attention`, the TL model rebuilt from learned θ, ω).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch
from jaxtyping import Float, Int

from analyses.heads import attention_patterns
from analyses.pair_attention import END, QUERY, is_pairwise, pair_attention_stats
from analyses.papers.ic_recall.data import ICRecallData, ICRecallSpec, ICRecallTask
from analyses.papers.ic_recall.models import (
    AnalyticICRecall,
    associative_memory,
    build_model,
    closed_form_answer_logits,
    closed_form_relation_logits,
    confusing_logit_gap,
    memory_readout,
    memory_recall,
    orthonormal_embeddings,
    pair_terms,
    set_scores,
)
from mechrecall._tl import HookedTransformer, get_act_name

TL_CHECK = 4096  # test sequences on which the TL model and the fast path are compared


def step_logits(
    model: torch.nn.Module,
    task: ICRecallTask,
    data: ICRecallData,
    relation: Int[torch.Tensor, " batch"] | None = None,
    *,
    chunk: int = 4096,
) -> tuple[Float[torch.Tensor, "batch m"], Float[torch.Tensor, "batch n"]]:
    """(relation logits ``[B, m]`` at EoS, answer logits ``[B, n]`` with ``relation`` (default r*) appended)."""
    if isinstance(model, AnalyticICRecall):
        return model.relation_logits(data), model.answer_logits(data, relation)
    tokens = (
        data.tokens if relation is None else torch.cat([data.tokens[:, :-1], task.relation_id(relation)[:, None]], 1)
    )
    rel, ans = [], []
    for start in range(0, len(tokens), chunk):
        logits = model(tokens[start : start + chunk].to(model.cfg.device))
        rel.append(logits[:, task.relation_pos, 2 * task.n : 2 * task.n + task.m])
        ans.append(logits[:, task.answer_pos, task.n : 2 * task.n])
    return torch.cat(rel), torch.cat(ans)


@torch.no_grad()
def accuracy(model: torch.nn.Module, task: ICRecallTask, test: ICRecallData, T: float) -> dict[str, float]:
    """The metrics of the module docstring on ``test``."""
    rel_logits, ans_logits = step_logits(model, task, test)
    pred_rel = rel_logits.argmax(-1)
    _, own_logits = step_logits(model, task, test, relation=pred_rel)
    pred_final = own_logits.argmax(-1)
    consistent = task.consistent(test)
    own_answer = task.rel[pred_rel, test.subjects[:, -1]]
    types = task.sequence_types(test) if task.k >= 1 else {}
    out = {
        "acc_relation_exact": (pred_rel == test.relation).double().mean(),
        "acc_relation_consistent": consistent.gather(1, pred_rel[:, None]).double().mean(),
        "bayes_ceiling": task.bayes_ceiling(test),
        "acc_answer_teacher_forced": (ans_logits.argmax(-1) == test.answer).double().mean(),
        "acc_final": (pred_final == test.answer).double().mean(),
        "answer_ceiling": task.answer_ceiling(test),
        "acc_answer_given_own_relation": (pred_final == own_answer).double().mean(),
        "soft_relation": torch.softmax(rel_logits.double() / T, -1).gather(1, test.relation[:, None]).mean(),
        "soft_answer": torch.softmax(ans_logits.double() / T, -1).gather(1, test.answer[:, None]).mean(),
        "p_confusing": types["confusing"].double().mean(),
        "p_mismatched": types["mismatched"].double().mean(),
    }
    return {k: float(v) for k, v in out.items()}


@torch.no_grad()
def no_cot_answer_accuracy(model: torch.nn.Module, task: ICRecallTask, test: ICRecallData) -> float:
    """Answer read directly at EoS without the relation step (Lemma B.1: all answer logits tie there)."""
    if not hasattr(model, "cfg"):
        raise ValueError("no_cot_answer_accuracy needs the TransformerLens model")
    logits = model(test.tokens[:, : task.relation_pos + 1])[:, -1, task.n : 2 * task.n]
    return float((logits.argmax(-1) == test.answer).double().mean())


# ------------------------------------------------------------------ the construction's exact checks

PATTERN = get_act_name("pattern", 0)  # the one layer's attention pattern
PERTURB_STD = 1e-3  # the controls' perturbation of the memory (std of the Gaussian noise added to each entry)


def perturb_memory(model: torch.nn.Module, seed: int, std: float = PERTURB_STD) -> torch.nn.Module:
    """The controls of the construction's identities: ``model`` with N(0, std²) added to every entry of the MLP's
    W_out (the memory's V), in place; any exact identity of the construction must break on it."""
    g = torch.Generator().manual_seed(31_337 + seed)
    with torch.no_grad():
        W = model.blocks[0].mlp.W_out
        W += std * torch.randn(W.shape, generator=g, dtype=torch.float64).to(W.dtype)
    return model


def shifted_relations(task: ICRecallTask) -> ICRecallTask:
    """A copy of ``task`` whose relation r is the original r − 1 (rows of ``rel`` rolled): a memory built on it
    stores other facts (the control of Lemma 3.1's recall)."""
    other = copy.copy(task)
    other.rel = task.rel.roll(1, dims=0)
    return other


def closed_form_check(spec: ICRecallSpec, seed: int, g: torch.Generator) -> dict[str, Any]:
    """One task (float64): the TL construction with a random W^KQ against eq. (16) / App. D (max |difference|),
    partial mode's EoS attention against softmax(θ), the memory's recall (Lemma 3.1) and the Bayes ceilings;
    ``control``: the same numbers where each identity must break (the memory perturbed, the same θ in the full
    model, the memory of shifted relations). Draws W^KQ, θ and ω from ``g`` in that order."""
    task = ICRecallTask(spec)
    k = spec.k
    data = task.population(4000, torch.Generator().manual_seed(1))
    model = build_model(spec, "full", dtype="float64", seed=seed)
    Din = model.cfg.d_head
    with torch.no_grad():  # any W^KQ: token-dependent attention
        model.blocks[0].attn.W_K[0, :Din, :Din] = 0.5 * torch.randn(Din, Din, generator=g, dtype=torch.float64)
    d_rel, d_ans = _closed_form_gaps(model, task, data)
    c_rel, c_ans = _closed_form_gaps(perturb_memory(model, seed), task, data)
    # partial mode: the EoS row of the pattern is softmax(θ) for every sequence
    partial = build_model(spec, "partial", dtype="float64", seed=seed)
    theta = torch.randn(2 * k + 2, generator=g, dtype=torch.float64)
    omega = torch.randn(2 * k + 3, generator=g, dtype=torch.float64)
    set_scores(partial, theta, omega)
    set_scores(model, theta, omega)  # control: the same θ in the full-mode model (token-dependent W^KQ)
    v = torch.softmax(theta, -1)
    phi = orthonormal_embeddings(spec.d_vocab, "random", spec.seed)
    W, V = associative_memory(task, phi)
    W_other, V_other = associative_memory(shifted_relations(task), phi)
    return {
        "spec": dataclasses.asdict(spec),
        "max_abs_diff_relation_logits": d_rel,
        "max_abs_diff_answer_logits": d_ans,
        "max_abs_diff_partial_pattern": _eos_attention_gap(partial, task, data, v),
        "memory_recall": memory_recall(task, W, V, phi),
        "control": {
            "max_abs_diff_relation_logits": c_rel,
            "max_abs_diff_answer_logits": c_ans,
            "max_abs_diff_partial_pattern": _eos_attention_gap(model, task, data, v),
            "memory_recall": memory_recall(task, W_other, V_other, phi),
        },
        "bayes_ceiling_exact": task.bayes_ceiling(),
        "bayes_ceiling_population": task.bayes_ceiling(task.population(None))
        if spec.population_size <= 50_000
        else None,
        "assumption_2_2_violations": task.assumption_2_2_violations(),
    }


@torch.no_grad()
def _eos_attention_gap(
    model: torch.nn.Module, task: ICRecallTask, data: ICRecallData, v: Float[torch.Tensor, " pos"]
) -> float:
    """Max |attention from EoS − ``v``| over positions 0..2k+1 of the first 64 sequences of ``data``."""
    _, cache = model.run_with_cache(data.tokens[:64])
    return float((cache[PATTERN][:, 0, task.relation_pos, : 2 * task.k + 2] - v).abs().max())


@torch.no_grad()
def _closed_form_gaps(model: torch.nn.Module, task: ICRecallTask, data: ICRecallData) -> tuple[float, float]:
    """Max |difference| of ``model``'s relation / answer logits from eq. (16) / App. D at its own attention."""
    k = task.k
    logits, cache = model.run_with_cache(data.tokens)
    pat = cache[PATTERN][:, 0]
    rel = logits[:, task.relation_pos, 2 * task.n : 2 * task.n + task.m]
    ans = logits[:, task.answer_pos, task.n : 2 * task.n]
    d_rel = (rel - closed_form_relation_logits(pat[:, task.relation_pos, : 2 * k + 2], task, data)).abs().max()
    d_ans = (ans - closed_form_answer_logits(pat[:, task.answer_pos, : 2 * k + 3], task, data)).abs().max()
    return float(d_rel), float(d_ans)


def readout_check(spec: ICRecallSpec, seed: int = 0) -> dict[str, Any]:
    """The memory's read-out of φ(s) + φ(r) (s = 2, r = 5) against App. A's values: 4 on r(s), 2 on the other
    answers, 1 on subjects and relations, 0 on EoS. ``error``: max |read-out − those values|; ``control_error``:
    the same for the memory with N(0, 1e-6) added to each entry of V (the values must move)."""
    task = ICRecallTask(spec)
    phi = orthonormal_embeddings(spec.d_vocab, "random", spec.seed)
    W, V = associative_memory(task, phi)
    s, r = 2, 5
    x = phi[:, s] + phi[:, task.relation_id(r)]
    out = memory_readout(W, V, phi, x)
    a = task.answer_id(int(task.rel[r, s]))
    expect = torch.ones_like(out)
    expect[task.n : 2 * task.n] = 2.0
    expect[a] = 4.0
    expect[task.eos_id] = 0.0
    g = torch.Generator().manual_seed(31_337 + seed)
    V_perturbed = V + PERTURB_STD * torch.randn(V.shape, generator=g, dtype=V.dtype)
    return {
        "values": out.tolist(),
        "error": float((out - expect).abs().max()),
        "control_error": float((memory_readout(W, V_perturbed, phi, x) - expect).abs().max()),
    }


def _spread(logits: Float[torch.Tensor, "batch n"]) -> float:
    """Max over the batch of (largest − smallest) logit."""
    return float((logits.max(-1).values - logits.min(-1).values).max().detach())


def _gap_error(rel: Float[torch.Tensor, "batch m"], v: Float[torch.Tensor, " pos"], task: ICRecallTask,
               pop: ICRecallData) -> float:  # fmt: skip
    """Max |(l(r*) − l(r_conf)) − 2(v1 − v3)(v2 − v4)| of the relation logits ``rel`` at EoS."""
    conf_r = (pop.answers[:, 1:2] == task.rel[:, pop.subjects[:, 0]].T) & (
        pop.answers[:, 0:1] == task.rel[:, pop.subjects[:, 1]].T
    )
    gap = rel.gather(1, pop.relation[:, None])[:, 0] - (rel * conf_r).sum(-1)
    return float((gap - confusing_logit_gap(v)).abs().max().detach())


@torch.no_grad()
def eos_tie_check(spec: ICRecallSpec, seed: int, g: torch.Generator) -> dict[str, float]:
    """Lemma B.1 (all answers tie at EoS: the max spread), the no-CoT accuracy that tie gives, and §4.1's
    confusing gap l(r*) − l(r_conf) = 2(v1 − v3)(v2 − v4) on the TL model's relation logits (max |error|); θ
    drawn from ``g``. Controls: both on the model with its memory perturbed (:func:`perturb_memory`)."""
    task = ICRecallTask(spec)
    model = build_model(spec, "partial", dtype="float64", seed=seed)
    theta = torch.randn(6, generator=g, dtype=torch.float64)
    set_scores(model, theta, torch.zeros(7, dtype=torch.float64))
    pop, v, rp, n = task.population(), torch.softmax(theta, -1), task.relation_pos, task.n
    eos = model(pop.tokens[:, : rp + 1])[:, -1]
    no_cot = no_cot_answer_accuracy(model, task, pop)
    perturbed = perturb_memory(model, seed)(pop.tokens[:, : rp + 1])[:, -1]
    return {
        "tie_spread": _spread(eos[:, n : 2 * n]),
        "no_cot_accuracy": no_cot,
        "gap_error": _gap_error(eos[:, 2 * n : 2 * n + task.m], v, task, pop),
        "control_tie_spread": _spread(perturbed[:, n : 2 * n]),
        "control_gap_error": _gap_error(perturbed[:, 2 * n : 2 * n + task.m], v, task, pop),
    }


# ------------------------------------------------------------------------------ attention patterns


def pair_roles(k: int) -> Int[torch.Tensor, " pos"]:
    """Roles of positions 0..2k+1 for :func:`analyses.pair_attention.pair_attention_stats`."""
    return torch.tensor([*range(2 * k), QUERY, END])


def pattern_stats(v: Float[torch.Tensor, "seeds pos"], k: int) -> dict[str, Any]:
    """Within / across / rest / score of each row of ``v`` (attention from EoS) and whether it is pairwise."""
    stats = pair_attention_stats(v, pair_roles(k))
    return {
        "within": stats.within.tolist(),
        "across": stats.across.tolist(),
        "rest": stats.rest.tolist(),
        "score": stats.score.tolist(),
        "pairwise": is_pairwise(stats).tolist(),
    }


def tl_readout(
    task: ICRecallTask,
    theta: Float[torch.Tensor, " eos_pos"],
    omega: Float[torch.Tensor, " rel_pos"],
    T: float,
    test: ICRecallData,
) -> dict[str, Any]:
    """Rebuild the TL model with the learned θ, ω; its attention through the generic layer, its accuracy on
    ``TL_CHECK`` test sequences against the fast path's, and the max |difference| of both steps' logits."""
    k = task.k
    model = build_model(task.spec, "partial", dtype="float64", seed=task.spec.seed)
    set_scores(model, theta, omega)
    pat = attention_patterns(model, test.subset(slice(0, 256)).tokens)[0, :, 0]  # [B, q, k]
    stats = pair_attention_stats(pat[:, task.relation_pos, : 2 * k + 2], pair_roles(k))
    check = test.subset(torch.randperm(len(test), generator=torch.Generator().manual_seed(3))[:TL_CHECK])
    fast_model = AnalyticICRecall(task, theta, omega)
    with torch.no_grad():
        tl_logits, fast_logits = step_logits(model, task, check), step_logits(fast_model, task, check)
    acc_tl = accuracy(model, task, check, T)
    with torch.no_grad():  # the control: the same comparison with the TL model's memory perturbed
        perturbed = step_logits(perturb_memory(model, task.spec.seed), task, check)
    return {
        "v_tl": pat[:, task.relation_pos, : 2 * k + 2].mean(0).tolist(),
        "acc_fast": accuracy(fast_model, task, check, T),
        "max_logit_diff_tl_vs_fast": max(float((a - b).abs().max()) for a, b in zip(tl_logits, fast_logits)),
        "max_logit_diff_perturbed_vs_fast": max(float((a - b).abs().max()) for a, b in zip(perturbed, fast_logits)),
        "q_tl": pat[:, task.answer_pos, : 2 * k + 3].mean(0).tolist(),
        "within": float(stats.within.mean()),
        "across": float(stats.across.mean()),
        "rest": float(stats.rest.mean()),
        "score": float(stats.score.mean()),
        "pairwise": bool(is_pairwise(stats).all()),
        "acc_tl": acc_tl,
    }


def crossed_roles(k: int) -> Int[torch.Tensor, " pos"]:
    """Roles pairing s_i with a_{i+1} (cyclically; k = 2: s1 with a2, s2 with a1): the within-pair score's control."""
    roles = []
    for i in range(k):
        roles += [2 * i, 2 * ((i - 1) % k) + 1]
    return torch.tensor([*roles, QUERY, END])


def pretrained_mlp_pattern(model: torch.nn.Module, task: ICRecallTask, test: ICRecallData) -> dict[str, Any]:
    """Fig 4's readings on the first 2048 test prompts: mean attention from EoS (v) and from r* (q), the
    pair scores (means; ``score`` the generic pairwise score), the within- and across-pair scores of the crossed
    pairs (:func:`crossed_roles`; ``within_crossed``, ``across_crossed``: the claims' controls) and the share of
    prompts whose pattern is pairwise."""
    k = task.k
    pat = attention_patterns(model, test.subset(slice(0, 2048)).tokens)[0, :, 0]
    v = pat[:, task.relation_pos, : 2 * k + 2].double()
    stats = pair_attention_stats(v, pair_roles(k))
    crossed = pair_attention_stats(v, crossed_roles(k))
    return {
        "v_mean": v.mean(0).tolist(),
        "q_mean": pat[:, task.answer_pos, : 2 * k + 3].double().mean(0).tolist(),
        "within": float(stats.within.mean()),
        "within_crossed": float(crossed.within.mean()),
        "across_crossed": float(crossed.across.mean()),
        "across": float(stats.across.mean()),
        "rest": float(stats.rest.mean()),
        "score": float(stats.score.mean()),
        "pairwise_share": float(is_pairwise(stats).double().mean()),
    }


@torch.no_grad()
def cross_term_sizes(model: HookedTransformer, task: ICRecallTask) -> dict[str, float]:
    """How much the MLP's cross terms (:func:`.models.pair_terms`) write on the relation logits the first step reads,
    against the signal: RMS over pairs of the relation read-out ``Φ_Rᵀ B(u, u')`` centred over the m relations, for
    subject×subject (s ≠ s') and answer×answer (a ≠ a') pairs, each divided by the subject×answer one (the (s, a)
    terms that carry R(s, a), the relations consistent with a context pair). 0 for Lemma 3.1's memory."""
    n, m = task.n, task.m
    subjects, answers = task.subject_id(torch.arange(n)), task.answer_id(torch.arange(n))

    def readout(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        logits = pair_terms(model, first, second).double() @ model.unembed.W_U[:, 2 * n : 2 * n + m].double()
        return logits - logits.mean(-1, keepdim=True)

    off = ~torch.eye(n, dtype=torch.bool)
    rms = lambda x: float(x.pow(2).mean().sqrt())  # noqa: E731
    signal = rms(readout(subjects, answers))
    return {
        "subject_subject": rms(readout(subjects, subjects)[off]) / signal,
        "answer_answer": rms(readout(answers, answers)[off]) / signal,
        "subject_answer_rms": signal,
    }
