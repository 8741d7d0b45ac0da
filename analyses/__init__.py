"""Model-agnostic analyses: each takes any ``HookedTransformer`` — a toy model from
``mechrecall.build_toy_model`` or a checkpoint from ``pretrained.load`` — through the same code path.

==================  ==========================================================================
module              what it holds
==================  ==========================================================================
``heads``           previous-token / duplicate / induction / copying scores, attention mass A→B
``ov``              full OV circuits (``FactoredMatrix``), top tokens, self-mapping, logit lens
``task_vectors``    query-position residual vectors, injection, PCA + silhouette geometry
``lowrank``         LASER sweeps over layers x matrices x rho (one SVD per matrix), spectra
``attention_html``  circuitsvis attention patterns as self-contained, offline HTML
``plotting``        tidy tables → heatmaps and curves (matplotlib)
``circuit``         heads (with their roles) and Q/K/V-composition edges between successive layers
``pair_attention``  how a query's attention is structured over (subject, answer) pairs, for any model
==================  ==========================================================================

Each paper has one package under ``analyses/papers/`` (its data, models, probes, theory, figures and
prompt tables); the runnable experiments are the short entry modules beside this file
(``python -m analyses.<experiment> --help``). Names are imported on first use.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any

_MODULES = (
    "circuit",
    "heads",
    "ov",
    "pair_attention",
    "task_vectors",
    "lowrank",
    "attention_html",
    "plotting",
    "papers",
    "report",
)
_LAZY = {
    **dict.fromkeys(
        (
            "ATTENTION_ROLES",
            "ROLES",
            "attention_mass",
            "attention_patterns",
            "copying_scores",
            "head_outputs",
            "duplicate_token_keys",
            "head_roles",
            "head_roles_figure",
            "induction_keys",
            "induction_performance",
            "previous_token_keys",
            "repeated_tokens",
            "role_scores",
            "top_heads",
        ),
        "analyses.heads",
    ),
    **dict.fromkeys(("circuit_figure", "composition_table", "strongest_edges"), "analyses.circuit"),
    **dict.fromkeys(("DEFAULT_RHOS", "SweepResult", "laser_sweep", "singular_values"), "analyses.lowrank"),
    **dict.fromkeys(
        (
            "full_ov_circuit",
            "head_logit_lens",
            "ov_circuit",
            "project_to_vocab",
            "self_mapping_fraction",
            "token_strings",
            "top_tokens",
            "top_tokens_table",
        ),
        "analyses.ov",
    ),
    **dict.fromkeys(("curves", "heatmap", "layer_head_table", "subplots"), "analyses.plotting"),
    **dict.fromkeys(("attention_pattern_html", "save_attention_html"), "analyses.attention_html"),
    **dict.fromkeys(
        (
            "SITES",
            "class_cosine_matrix",
            "coeff_sweep",
            "cosine_silhouette_score",
            "replace_and_rank",
            "inject_task_vector",
            "latent_geometry",
            "latent_geometry_figure",
            "pca",
            "residual_vectors",
            "silhouette_score",
            "task_vector",
        ),
        "analyses.task_vectors",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = _importlib.import_module(f"analyses.{name}")
    elif name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'analyses' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_MODULES])


__all__ = sorted(_LAZY)
