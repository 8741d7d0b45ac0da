"""The four final-token metrics of Fig. 1 / Figs. 2-5: exact, attribute-type, subject and attribute match."""

from __future__ import annotations

import torch

from mechrecall.batch import Batch

from .world import World

METRICS = ("exact", "attr_type", "subject", "attribute")


@torch.no_grad()
def final_predictions(model, batch: Batch) -> torch.Tensor:
    """Argmax over the full vocabulary (first index on ties) of the logits at ``pred_pos``: ``[B]``."""
    logits = model(batch.tokens)
    rows = torch.arange(batch.tokens.shape[0], device=logits.device)
    return logits[rows, batch.extras["pred_pos"].to(logits.device)].argmax(-1).cpu()


def metrics_of_predictions(pred: torch.Tensor, batch: Batch, world: World) -> dict[str, float]:
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


def recall_metrics(model, batch: Batch, world: World) -> dict[str, float]:
    """:func:`metrics_of_predictions` of the model's argmax on ``batch``."""
    was = model.training
    model.eval()
    try:
        return metrics_of_predictions(final_predictions(model, batch.to(model.cfg.device)), batch, world)
    finally:
        model.train(was)
