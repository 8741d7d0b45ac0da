"""Extension, not a reproduction: the paper's task-vector geometry (§3.4, Fig. 8) and steering on a real
pretrained model (Pythia / GPT-2) with few-shot natural-language contextual-recall prompts (``prompts.py``).

For ``t`` demonstrations of one relation (landmark → country, landmark → city, person → birth year), the
attention output of a middle layer at the last prompt token is read (``analyses.task_vectors``); its cosine
silhouette by relation type and the first-answer-token accuracy are tracked against ``t``. Steering replaces
that vector by ``(1-β) v_r + β v_r'`` and ranks the original and the target answers.
"""

from __future__ import annotations

import torch

from mechrecall.claims import at_least, at_most
from mechrecall.experiment import Context, PartResult

from .prompts import RELATIONS, prompt_text

P = "pretrained"


def build_prompt_set(model, K: int, max_t: int, seed: int):
    """``K`` base prompts per relation (the query excluded from its demos); prefixes give every ``t``.
    Returns ``(relations, items)`` with items ``[(relation index, demos, (query, answer))]``."""
    from pretrained import answer_token

    g = torch.Generator().manual_seed(seed)
    names = list(RELATIONS)
    items = []
    for r, name in enumerate(names):
        pairs = RELATIONS[name]
        for _k in range(K):
            perm = torch.randperm(len(pairs), generator=g).tolist()
            q = pairs[perm[0]]
            demos = [pairs[i] for i in perm[1 : max_t + 1]]
            items.append((r, demos, q))
    # answers of every item under every relation (for steering targets): the query's answer in relation r'
    by_subject = {name: dict(RELATIONS[name]) for name in names}
    return names, items, by_subject, answer_token


def _tokens(model, texts):
    """Right-padded token ids ``[n, T]`` and the last real position of each ``[n]``."""
    seqs = [model.to_tokens(t, prepend_bos=False)[0].cpu() for t in texts]
    T = max(len(s) for s in seqs)
    pad = model.tokenizer.eos_token_id if model.tokenizer.eos_token_id is not None else 0
    out = torch.full((len(seqs), T), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out, torch.tensor([len(s) - 1 for s in seqs])


@torch.no_grad()
def task_geometry(
    model, K: int = 8, max_t: int = 6, layer: int | None = None, seed: int = 0, betas=(0.0, 0.25, 0.5, 0.75, 1.0)
) -> dict:
    """Silhouette / accuracy vs ``t`` and steering ranks at ``t = max_t`` (see the module docstring)."""
    from analyses.task_vectors import class_cosine_matrix, cosine_silhouette_score, replace_and_rank, residual_vectors

    layer = model.cfg.n_layers // 2 if layer is None else layer
    names, items, by_subject, answer_token = build_prompt_set(model, K, max_t, seed)
    labels = torch.tensor([r for r, _, _ in items])
    answers = torch.tensor([int(answer_token(model, q[1])) for _, _, q in items])
    out = {"layer": layer, "relations": names, "t": [], "silhouette": [], "accuracy": [], "similarity": {}}
    dev = model.cfg.device
    for t in range(max_t + 1):
        texts = [prompt_text(d[:t], q[0]) for _, d, q in items]
        tokens, pos = _tokens(model, texts)
        reps = residual_vectors(model, tokens.to(dev), layer, site="attn_out", positions=pos).cpu()
        logits = model(tokens.to(dev))[torch.arange(len(pos)), pos.to(dev)].cpu()
        out["t"].append(t)
        out["silhouette"].append(cosine_silhouette_score(reps, labels))
        out["accuracy"].append((logits.argmax(-1) == answers).float().mean().item())
        out["similarity"][t] = class_cosine_matrix(reps, labels)[0].tolist()
    # steering between the two landmark relations (same subjects, so both answers exist for every query)
    v = torch.stack([reps[labels == r].mean(0) for r in range(len(names))])
    src = [i for i, (r, _, _) in enumerate(items) if names[r].startswith("landmark")]
    tgt_rel = [1 - items[i][0] for i in src]  # country <-> city
    q = [items[i][2][0] for i in src]
    orig = torch.tensor([int(answer_token(model, by_subject[names[items[i][0]]][s])) for i, s in zip(src, q)])
    target = torch.tensor([int(answer_token(model, by_subject[names[r]][s])) for r, s in zip(tgt_rel, q)])
    src_t = torch.tensor(src)
    steer = {"beta": list(betas), "rank_orig": [], "rank_target": []}
    for b in betas:
        vec = (1 - b) * v[labels[src_t]] + b * v[torch.tensor(tgt_rel)]
        r = replace_and_rank(
            model,
            tokens[src_t].to(dev),
            vec,
            layer,
            {"orig": orig, "target": target},
            site="attn_out",
            positions=pos[src_t],
        )
        steer["rank_orig"].append(r["orig"].mean().item())
        steer["rank_target"].append(r["target"].mean().item())
    out["steering"] = steer
    return out


def _claims(ctx: Context, geo: dict | None, reason: str = "") -> list:
    rows = [
        (
            "silhouette_rises_with_demos",
            "extension: the relation type clusters in a middle layer's attention output "
            "at the query as demonstrations are added (cosine silhouette, t=max minus t=0)",
            lambda g: g["silhouette"][-1] - g["silhouette"][0],
            at_least(0.05, partial=0.0),
        ),
        (
            "steering_country_city",
            "extension: replacing that vector by the other landmark relation's task vector "
            "(β=1) makes its answer outrank the original (mean rank target / original)",
            lambda g: g["steering"]["rank_target"][-1] / g["steering"]["rank_orig"][-1],
            at_most(1.0, partial=2.0),
        ),
    ]
    out = []
    for name, text, f, rule in rows:
        ours = None if geo is None else f(geo)
        out.append(
            ctx.claim(
                P,
                name,
                text,
                ours,
                rule,
                where="§3.4, Fig. 8 (analysis transferred to a real model)",
                note="extension, not a reproduction: the paper runs no pretrained checkpoint",
                reason=reason,
            )
        )
    return out


def part_pretrained(ctx: Context) -> PartResult:
    import pretrained

    name = ctx.options.get("model") or "pythia-160m"
    try:
        model = pretrained.load(
            name, checkpoint=ctx.options.get("checkpoint"), processing="raw", device=ctx.device or "cpu"
        )
    except pretrained.PretrainedNotAvailableError as exc:
        reason = f"no weights: {str(exc).splitlines()[0]}"
        ctx.say(f"pretrained: not run ({reason})")
        return PartResult({"model": name, "not_run": reason}, _claims(ctx, None, reason), {})
    model.eval()
    K, max_t = {"micro": (2, 2), "smoke": (10, 8), "paper": (20, 10)}[ctx.preset]
    geo = task_geometry(model, K=K, max_t=max_t, seed=ctx.seed)
    figs = {"pretrained_task_vectors.png": _figure(geo, name)}
    ctx.say(
        f"pretrained ({name}): silhouette t=0 {geo['silhouette'][0]:.3f} -> t={max_t} {geo['silhouette'][-1]:.3f}; "
        f"accuracy {geo['accuracy'][0]:.2f} -> {geo['accuracy'][-1]:.2f}"
    )
    return PartResult({"model": name, "K": K, **geo}, _claims(ctx, geo), figs)


def _figure(geo: dict, name: str):
    from analyses.plotting import subplots

    fig, (a, b) = subplots(1, 2, figsize=(9, 3.3))
    a.plot(geo["t"], geo["silhouette"], marker="o", label=f"silhouette (layer {geo['layer']} attn out)")
    a.plot(geo["t"], geo["accuracy"], marker="s", label="first-token accuracy")
    a.set(xlabel="number of demonstrations t", ylabel="value", title=f"Fig. 8 (left) on {name} — extension")
    a.legend(fontsize=7)
    s = geo["steering"]
    b.plot(s["beta"], s["rank_orig"], marker="o", label="original answer")
    b.plot(s["beta"], s["rank_target"], marker="s", label="target answer")
    b.set(xlabel="β", ylabel="mean rank", yscale="log", title="Fig. 8 (right) on a real model — extension")
    b.legend(fontsize=7)
    fig.tight_layout()
    return fig
