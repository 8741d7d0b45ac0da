"""Reusable hooks: ablate, patch, add a vector, low-rank a weight — every edit undone on exit, bit-exact.

Activation edits (``hooks.activations``) are TransformerLens forward hooks added with
``model.hooks(...)`` and removed when the ``with`` block exits, even by an exception; weight edits
(``hooks.weights``) snapshot the parameters they touch and copy them back. All of them nest::

    from hooks import ablate, add_vector, low_rank, patch

    with ablate(model, heads=[(1, 0)]), low_rank(model, 0, "attn_v", rho=0.5):
        logits = model(tokens)          # both edits active
    # here the model is exactly as before

Positions for every activation edit are given as in ``hooks.positions``.
"""

from hooks.activations import (
    ablate,
    activation_means,
    add_hook,
    add_vector,
    attn_out_hook_name,
    head_hook_name,
    hooked,
    mlp_out_hook_name,
    patch,
    replace_hook,
)
from hooks.positions import Positions, position_mask
from hooks.weights import (
    MATRICES,
    SVD,
    edit_matrix,
    from_svd,
    get_matrix,
    low_rank,
    matrix_params,
    rank_for,
    restored,
    set_matrix,
    svd,
    truncate,
    truncation,
)

__all__ = [
    "MATRICES",
    "SVD",
    "Positions",
    "ablate",
    "activation_means",
    "add_hook",
    "add_vector",
    "attn_out_hook_name",
    "edit_matrix",
    "from_svd",
    "get_matrix",
    "head_hook_name",
    "hooked",
    "low_rank",
    "matrix_params",
    "mlp_out_hook_name",
    "patch",
    "position_mask",
    "rank_for",
    "replace_hook",
    "restored",
    "set_matrix",
    "svd",
    "truncate",
    "truncation",
]
