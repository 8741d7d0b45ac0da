"""On the Emergence of Induction Heads for In-Context Learning (Musat et al.).

``demo``: the 2-layer attention-only model on periodic random tokens and the circuit that forms.
Runnable: ``python -m analyses.induction_emergence``.
"""
