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

from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # what mypy and editors see; at run time each name is imported on first use (mechrecall.lazy)
    from analyses import (
        attention_html,
        circuit,
        heads,
        lowrank,
        ov,
        pair_attention,
        papers,
        plotting,
        report,
        task_vectors,
    )
    from analyses.attention_html import attention_pattern_html, save_attention_html
    from analyses.circuit import circuit_figure, composition_table, strongest_edges
    from analyses.heads import (
        ATTENTION_ROLES,
        ROLES,
        attention_mass,
        attention_patterns,
        copying_scores,
        duplicate_token_keys,
        head_outputs,
        head_roles,
        head_roles_figure,
        induction_keys,
        induction_performance,
        previous_token_keys,
        repeated_tokens,
        role_scores,
        top_heads,
    )
    from analyses.lowrank import DEFAULT_RHOS, SweepResult, laser_sweep, singular_values
    from analyses.ov import (
        full_ov_circuit,
        head_logit_lens,
        ov_circuit,
        project_to_vocab,
        self_mapping_fraction,
        token_strings,
        top_tokens,
        top_tokens_table,
    )
    from analyses.plotting import curves, heatmap, layer_head_table, subplots
    from analyses.task_vectors import (
        SITES,
        class_cosine_matrix,
        coeff_sweep,
        cosine_silhouette_score,
        inject_task_vector,
        latent_geometry,
        latent_geometry_figure,
        pca,
        replace_and_rank,
        residual_vectors,
        silhouette_score,
        task_vector,
    )

__getattr__, __dir__ = lazy_imports(__name__)
__all__ = [
    "ATTENTION_ROLES",
    "DEFAULT_RHOS",
    "ROLES",
    "SITES",
    "SweepResult",
    "attention_html",
    "attention_mass",
    "attention_pattern_html",
    "attention_patterns",
    "circuit",
    "circuit_figure",
    "class_cosine_matrix",
    "coeff_sweep",
    "composition_table",
    "copying_scores",
    "cosine_silhouette_score",
    "curves",
    "duplicate_token_keys",
    "full_ov_circuit",
    "head_logit_lens",
    "head_outputs",
    "head_roles",
    "head_roles_figure",
    "heads",
    "heatmap",
    "induction_keys",
    "induction_performance",
    "inject_task_vector",
    "laser_sweep",
    "latent_geometry",
    "latent_geometry_figure",
    "layer_head_table",
    "lowrank",
    "ov",
    "ov_circuit",
    "pair_attention",
    "papers",
    "pca",
    "plotting",
    "previous_token_keys",
    "project_to_vocab",
    "repeated_tokens",
    "replace_and_rank",
    "report",
    "residual_vectors",
    "role_scores",
    "save_attention_html",
    "self_mapping_fraction",
    "silhouette_score",
    "singular_values",
    "strongest_edges",
    "subplots",
    "task_vector",
    "task_vectors",
    "token_strings",
    "top_heads",
    "top_tokens",
    "top_tokens_table",
]
