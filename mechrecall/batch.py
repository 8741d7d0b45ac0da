"""One training batch, shared by every task generator and the trainer (generators import this, not the trainer)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch
from jaxtyping import Bool, Float, Int


@dataclass
class Batch:
    """One training batch.

    ``tokens``: model input, ``[batch, pos]`` token ids (or a ``[batch, pos, d_model]`` residual stream when
    the loss_fn feeds it with ``start_at_layer=0``). ``targets``: ``[batch, pos]`` labels aligned with the
    logits (``targets[b, t]`` is the label for position ``t``), or ``[batch]`` with ``loss_positions="last"``.
    ``loss_mask``: ``[batch, pos]`` bool, used with ``loss_positions="mask"``. ``extras``: anything else
    a custom loss_fn or eval needs.
    """

    tokens: Int[torch.Tensor, "batch pos"] | Float[torch.Tensor, "batch pos d_model"]
    targets: Int[torch.Tensor, "batch pos"] | Int[torch.Tensor, " batch"] | Float[torch.Tensor, "batch ..."]
    loss_mask: Bool[torch.Tensor, "batch pos"] | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def to(self, device: torch.device | str) -> Batch:
        """The same batch with every tensor (extras included) on ``device``."""

        def move(x: Any) -> Any:
            return x.to(device) if isinstance(x, torch.Tensor) else x

        moved = copy.copy(self)  # not Batch(...): the trainer checks shapes itself, with its own messages
        moved.tokens, moved.targets, moved.loss_mask = move(self.tokens), move(self.targets), move(self.loss_mask)
        moved.extras = {k: move(v) for k, v in self.extras.items()}
        return moved
