"""Extension (not in Huang, Nichani, Lee & Ge): does a real LM show the pairwise attention pattern of Fig 2?
(A Pythia / GPT-2 checkpoint, or the mini GPT-NeoX of ``pretrained.mini`` prompted with its own facts.)

Few-shot fact prompts (:func:`.data.fact_prompts`, e.g. ``"Einstein: Germany. Newton: England. Curie:"``): k
(subject, answer) pairs of one relation, then a query subject and ``":"``, the position that must name the
answer. Every layer × head of a GPT-2 / Pythia model is scored from that last position with the model-agnostic
:func:`analyses.pair_attention.head_pair_scores` (within-pair equality, across-pair difference, little on the
query subject and the ``":"``), and heads are ranked by the pairwise score. The paper studies a one-layer toy;
whether real heads do this is open.
"""

from __future__ import annotations

from typing import Any

from analyses.papers.ic_recall.data import fact_prompts
from mechrecall.typed import NotRun


def score_heads(name: str, n_prompts: int, seed: int) -> dict[str, Any] | NotRun:
    """The pairwise score of every head of ``name`` on ``n_prompts`` fact prompts: the ranking, the whole table,
    the best head, and the same scores on the untrained model (``control``: the series' step-0 checkpoint for a
    ``pretrained.mini`` series, else a randomly initialised model of its config); ``NotRun(not_run=why,
    model=name)`` (JSON ``{"not_run": why, "model": name}``) when its weights cannot be loaded here. A mini series
    is prompted with its own facts (``facts.json``)."""
    import pretrained
    from analyses.pair_attention import head_pair_scores
    from pretrained.mini import measured_on, series_root

    model, why = pretrained.load_or_why(name, processing="raw")
    if model is None:
        return NotRun.model_validate({"not_run": why, "model": name})
    model.eval()
    root = series_root(name)
    facts = {} if root is None else {"path": root / "facts.json"}
    prompts = fact_prompts(model.tokenizer, k=2, n_prompts=n_prompts, seed=seed, **facts)
    device = model.cfg.device
    inputs = [prompts[key].to(device) for key in ("tokens", "roles", "query_pos")]
    table = head_pair_scores(model, *inputs)
    ranked = table.sort_values("score", ascending=False).reset_index(drop=True)
    best = ranked.iloc[0]
    if root is None:
        untrained = pretrained.untrained_like(model, seed)
    else:
        untrained = pretrained.load(root, checkpoint=0, processing="raw")
    control = head_pair_scores(untrained, *inputs)
    return {
        "control": {
            "best_head_score": float(control["score"].max()),
            "best_pairwise_share": float(control["pairwise_fraction"].max()),
        },
        "control_model": "a randomly initialised model of its config" if root is None else "its step-0 checkpoint",
        "model": name,
        "measured_on": measured_on(name),
        "n_prompts": len(prompts["texts"]),
        "example_prompt": prompts["texts"][0],
        "ranking": ranked.head(20).to_dict(orient="records"),
        "table": table.to_dict(orient="records"),
        "best_head": {
            "layer": int(best["layer"]),
            "head": int(best["head"]),
            "score": float(best["score"]),
            "within": float(best["within"]),
            "across": float(best["across"]),
            "rest": float(best["rest"]),
        },
        "best_pairwise_share": float(ranked["pairwise_fraction"].max()),
    }
