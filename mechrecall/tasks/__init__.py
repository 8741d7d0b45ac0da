"""Task data generators, one module per task, each vectorised over the batch in torch.

Every generator takes an explicit ``torch.Generator`` (the trainer seeds one per step), so the same
seed gives the same data whatever ran before.
"""
from mechrecall.tasks.induction import induction_batch, repeated_random_tokens
from mechrecall.tasks.noisy_icl import (
    MULTI_TRIGGERS,
    NoisyICLConfig,
    noisy_icl_batch_fn,
    sample_lam,
    sample_noisy_icl,
    sample_synthetic_ioi,
)

__all__ = ["MULTI_TRIGGERS", "NoisyICLConfig", "induction_batch", "noisy_icl_batch_fn", "repeated_random_tokens",
           "sample_lam", "sample_noisy_icl", "sample_synthetic_ioi"]
