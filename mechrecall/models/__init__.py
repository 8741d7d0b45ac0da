"""Each paper's toy models, as ``HookedTransformerConfig`` + surgeries (see ``mechrecall.builder``).

- ``noisy_icl``: Chen, Bruna & Bietti — the two-layer noisy in-context-recall model (Eq. 1) with its FF
  variants, the deeper synthetic-IOI models (App. J) and the one-layer theory model (Eq. 2).
"""
