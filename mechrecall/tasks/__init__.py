"""Task data generators, one module per task, each vectorised over the batch in torch.

Every generator takes an explicit ``torch.Generator`` (the trainer seeds one per step), so the same
seed gives the same data whatever ran before.
"""
from mechrecall.tasks.induction import induction_batch, repeated_random_tokens

__all__ = ["induction_batch", "repeated_random_tokens"]
