"""The one place that imports TransformerLens' HookedTransformer API.

TransformerLens 4.0 removed ``HookedTransformer``; this project pins ``transformer-lens>=3.9,<4``.
Every module imports the classes from here, so a later port (e.g. to 4.x's
``TransformerBridge.boot_native``) touches one file.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    # 3.x warns on import that HookedTransformer is in maintenance mode.
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.simplefilter("ignore", FutureWarning)
    try:
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError as exc:  # pragma: no cover - only on an unsupported TL version
        raise ImportError(
            "mechrecall needs transformer-lens>=3.9,<4 (4.x removed HookedTransformer); "
            "install it with `pip install 'transformer-lens>=3.9,<4'`"
        ) from exc
    from transformer_lens.ActivationCache import ActivationCache
    from transformer_lens.FactoredMatrix import FactoredMatrix
    from transformer_lens.hook_points import HookPoint
    from transformer_lens.utilities import get_act_name  # "pattern", 1 -> "blocks.1.attn.hook_pattern"

__all__ = [
    "ActivationCache",
    "FactoredMatrix",
    "HookPoint",
    "HookedTransformer",
    "HookedTransformerConfig",
    "get_act_name",
]
