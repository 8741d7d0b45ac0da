"""Repeated random tokens: the classic induction-head task (Olsson et al. 2022; Musat et al., §2).

Random tokens that repeat with a period ``L``: ``seq[t] = seq[t - L]`` for ``t >= L``. From the first
repeat on, the next token is predictable only by induction: find the previous occurrence of the current
token and copy the token that followed it. When ``L`` varies between sequences, no fixed positional
offset solves the task, so a model must form a previous-token head and an induction head.
"""

from __future__ import annotations

import torch
from jaxtyping import Int

from mechrecall.batch import Batch


def repeated_random_tokens(
    batch: int, half_len: int, d_vocab: int, generator: torch.Generator, *, low: int = 0
) -> Int[torch.Tensor, "batch two_half_len"]:
    """``[batch, 2 * half_len]`` ids: uniform tokens in ``[low, d_vocab)``, repeated once.

    Drawn from the model's own vocabulary (TL's ``evals.induction_loss`` hard-codes ids 100-20000,
    which break toy vocabularies).
    """
    if half_len < 2:
        raise ValueError(f"half_len={half_len!r}; expected >= 2")
    if not 0 <= low < d_vocab:
        raise ValueError(f"low={low!r} must be in [0, d_vocab={d_vocab})")
    if batch < 1:
        raise ValueError(f"batch={batch!r}; expected >= 1")
    first = torch.randint(low, d_vocab, (batch, half_len), generator=generator)
    return torch.cat([first, first], dim=1)


def periodic_random_tokens(
    batch: int, seq_len: int, periods: tuple[int, int], d_vocab: int, generator: torch.Generator
) -> tuple[Int[torch.Tensor, "batch seq_len"], Int[torch.Tensor, " batch"]]:
    """Random tokens repeating with a per-sequence period ``L ~ U{periods[0]..periods[1]}``.

    Returns ``(seq [batch, seq_len], period [batch])`` with ``seq[b, t] = seq[b, t % period[b]]``.
    """
    low, high = periods
    if not 2 <= low <= high or high >= seq_len:
        raise ValueError(f"periods={periods!r}; expected 2 <= low <= high < seq_len={seq_len}")
    if batch < 1:
        raise ValueError(f"batch={batch!r}; expected >= 1")
    period = torch.randint(low, high + 1, (batch,), generator=generator)
    base = torch.randint(0, d_vocab, (batch, seq_len), generator=generator)
    index = torch.arange(seq_len)[None, :] % period[:, None]
    return torch.gather(base, 1, index), period


def induction_batch(
    batch: int, seq_len: int, d_vocab: int, generator: torch.Generator, *, periods: tuple[int, int] | None = None
) -> Batch:
    """A next-token ``Batch`` on periodic random tokens, with the loss on the predictable positions.

    ``seq`` has ``seq_len + 1`` tokens (period ``L`` per sequence, default ``U{seq_len//4 .. seq_len//2}``);
    ``tokens = seq[:, :-1]``, ``targets = seq[:, 1:]``; ``loss_mask[b, t]`` is True for ``t >= L_b``,
    where ``targets[b, t] = seq[b, t+1]`` copies the token after the previous occurrence of ``seq[b, t]``.
    ``extras["period"]`` holds ``L``.
    """
    periods = periods or (max(2, seq_len // 4), seq_len // 2)
    seq, period = periodic_random_tokens(batch, seq_len + 1, periods, d_vocab, generator)
    tokens, targets = seq[:, :-1], seq[:, 1:]
    mask = torch.arange(seq_len)[None, :] >= period[:, None]
    return Batch(tokens=tokens, targets=targets, loss_mask=mask, extras={"period": period})
