"""Model-agnostic analyses that take any ``HookedTransformer`` (a toy model or a loaded checkpoint),
plus one runnable module per paper experiment (``python -m analyses.<experiment>``).
"""
