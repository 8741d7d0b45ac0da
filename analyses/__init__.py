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
==================  ==========================================================================

Runnable experiments live beside them, one module each (``python -m analyses.<experiment>``).
"""
from analyses.heads import (
    ATTENTION_ROLES,
    ROLES,
    attention_mass,
    attention_patterns,
    copying_scores,
    duplicate_token_keys,
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
from analyses.plotting import curves, heatmap, layer_head_table
from analyses.attention_html import attention_pattern_html, save_attention_html
from analyses.task_vectors import (
    SITES,
    coeff_sweep,
    inject_task_vector,
    latent_geometry,
    latent_geometry_figure,
    pca,
    residual_vectors,
    silhouette_score,
    task_vector,
)
