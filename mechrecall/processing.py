"""Which weights a model carries: TransformerLens-processed or raw (as stored by Hugging Face).

``pretrained.load`` records ``model.cfg.mechrecall_processing`` (``"tl"`` or ``"raw"``); weight edits
(``hooks.low_rank``) need raw weights, since TL's processing folds LayerNorm into the matrices.
"""

from __future__ import annotations

from mechrecall._tl import HookedTransformer

PROCESSINGS = ("tl", "raw")


def processing_of(model: HookedTransformer) -> str | None:
    """``"tl"`` or ``"raw"`` as recorded by ``pretrained.load``; ``None`` for a model it did not load."""
    value = getattr(model.cfg, "mechrecall_processing", None)
    return value if value in PROCESSINGS else None


def require_raw(model: HookedTransformer, what: str) -> None:
    """Raise ``ValueError`` unless ``model``'s weights are unprocessed, because ``what`` needs them.

    A model recorded as ``processing="tl"`` fails. An unrecorded model (not loaded by ``pretrained.load``)
    fails only if it visibly is a converted pretrained model with folded LayerNorm
    (``cfg.original_architecture`` set and ``normalization_type`` ``"LNPre"``/``"RMSPre"``);
    otherwise, e.g. for a model trained in TL, its weights are taken as they are.
    """
    proc = processing_of(model)
    cfg = model.cfg
    folded = (
        proc is None
        and getattr(cfg, "original_architecture", None) is not None
        and getattr(cfg, "normalization_type", None) in ("LNPre", "RMSPre")
    )
    if proc == "tl" or folded:
        src = getattr(cfg, "mechrecall_source", None) or getattr(cfg, "model_name", "<model>")
        state = "was loaded with processing='tl'" if proc == "tl" else "has folded LayerNorm weights"
        raise ValueError(
            f"{what} needs the unprocessed weights, but this model {state} (LayerNorm folded into "
            f"W_Q/W_K/W_V/W_in, writing weights and W_U centred). Reload it with "
            f"pretrained.load({src!r}, processing='raw')."
        )
