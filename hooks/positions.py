"""Which (batch, position) entries a hook edits: one selector type for every hook in ``hooks/``.

A ``Positions`` value is any of:

- ``None`` — every position;
- an ``int`` — one position for every sequence (negative counts from the end, ``-1`` = last);
- a ``list``/``tuple`` of ints or a ``slice`` — the same positions for every sequence;
- an int tensor ``[batch]`` — one position per sequence (e.g. each prompt's query position);
- a bool tensor ``[pos]`` or ``[batch, pos]`` — an explicit mask.

``position_mask`` turns any of them into a bool mask ``[batch, pos]`` for the activation at hand, and
raises a ``ValueError`` naming the bad value when it does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import torch
from jaxtyping import Bool

Positions: TypeAlias = int | Sequence[int] | slice | torch.Tensor | None


def position_mask(
    positions: Positions, batch: int, seq_len: int, device: torch.device | str | None = None
) -> Bool[torch.Tensor, "batch pos"]:
    """The bool mask ``[batch, seq_len]`` selected by ``positions`` (see the module docstring)."""
    if positions is None:
        return torch.ones(batch, seq_len, dtype=torch.bool, device=device)
    if isinstance(positions, slice):
        mask = torch.zeros(seq_len, dtype=torch.bool, device=device)
        mask[positions] = True
        return mask.expand(batch, seq_len)
    if isinstance(positions, torch.Tensor) and positions.dtype == torch.bool:
        if positions.shape == (seq_len,):
            return positions.to(device).expand(batch, seq_len)
        if positions.shape == (batch, seq_len):
            return positions.to(device)
        raise ValueError(
            f"bool positions of shape {tuple(positions.shape)} do not fit an activation with batch={batch}, "
            f"pos={seq_len}; expected [pos] or [batch, pos]"
        )
    if isinstance(positions, torch.Tensor) and positions.ndim == 1 and positions.numel() == batch and batch > 1:
        index = _check_range(positions.long().to(device), seq_len)
        mask = torch.zeros(batch, seq_len, dtype=torch.bool, device=device)
        mask[torch.arange(batch, device=device), index] = True
        return mask
    if isinstance(positions, int) or (isinstance(positions, torch.Tensor) and positions.ndim == 0):
        index = [int(positions)]
    elif isinstance(positions, (list, tuple)) or (isinstance(positions, torch.Tensor) and positions.ndim == 1):
        index = [int(p) for p in positions]
    else:
        raise ValueError(
            f"positions={positions!r}; expected None, an int, a list of ints, a slice, an int tensor [batch] "
            "or a bool mask [pos] / [batch, pos]"
        )
    _check_range(torch.tensor(index), seq_len)
    mask = torch.zeros(seq_len, dtype=torch.bool, device=device)
    mask[index] = True
    return mask.expand(batch, seq_len)


def _check_range(index: torch.Tensor, seq_len: int) -> torch.Tensor:
    if index.numel() and (index.min() < -seq_len or index.max() >= seq_len):
        raise ValueError(f"positions {index.tolist()} out of range for a sequence of length {seq_len}")
    return index % seq_len
