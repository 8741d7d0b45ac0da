"""Custom modules that TransformerLens' config cannot express, each exposing TL's hook names.

They are swapped into a ``HookedTransformer`` by the toy-model builder (``mechrecall.builder``), after
which ``model.setup()`` registers their ``HookPoint``s, so ``run_with_cache`` / ``run_with_hooks`` see
``blocks.{l}.mlp.hook_pre`` / ``hook_post`` exactly as for TL's own MLP.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from jaxtyping import Float, Int

from mechrecall._tl import HookPoint


class LinearFF(nn.Module):
    """A linear feed-forward block ``F(x) = x @ W_F`` (no bias, no activation).

    Chen, Bruna & Bietti (2025), App. B.5 / Figs. 11-12: the FF layer of one block is a single
    ``d_model x d_model`` matrix. TL convention: right multiplication, ``W_F: [d_model, d_model]``.

    Hooks: ``hook_pre`` sees the input ``x`` ([batch, pos, d_model]) and ``hook_post`` the output
    ``x @ W_F`` ([batch, pos, d_model]), so analyses written for TL's MLP hook names still run.
    """

    def __init__(self, d_model: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.W_F = nn.Parameter(torch.zeros(d_model, d_model, dtype=dtype))
        self.hook_pre = HookPoint()  # [batch, pos, d_model]
        self.hook_post = HookPoint()  # [batch, pos, d_model]
        self.hook_out = HookPoint()  # [batch, pos, d_model]: the output, which a bridge's hook_mlp_out names

    def forward(self, x: Float[torch.Tensor, "batch pos d_model"]) -> Float[torch.Tensor, "batch pos d_model"]:
        return self.hook_out(self.hook_post(self.hook_pre(x) @ self.W_F))


class ZeroFF(nn.Module):
    """A block with no feed-forward layer: returns zeros of the input's shape.

    Keeps ``hook_pre`` / ``hook_post`` (both see the input, unchanged) so hook names stay uniform
    across blocks; ``blocks.{l}.hook_mlp_out`` is exactly zero.
    """

    def __init__(self) -> None:
        super().__init__()
        self.hook_pre = HookPoint()  # [batch, pos, d_model]
        self.hook_post = HookPoint()  # [batch, pos, d_model]
        self.hook_out = HookPoint()  # [batch, pos, d_model]: zeros, which a bridge's hook_mlp_out names

    def forward(self, x: Float[torch.Tensor, "batch pos d_model"]) -> Float[torch.Tensor, "batch pos d_model"]:
        return self.hook_out(torch.zeros_like(self.hook_post(self.hook_pre(x))))


class EmbedWithPrevious(nn.Module):
    """Token embedding plus a separate previous-token embedding: ``x_t = W_E[z_t] + W_E_prev[z_{t-1}]``.

    Chen, Bruna & Bietti (2025), Eq. 2 (the one-layer theory model): ``W̃_E(z_{t-1})`` lives in its own
    subspace, with ``W̃_E(z_0) = 0`` for the first position. Drop-in replacement for TL's ``Embed``
    (``forward(tokens) -> [batch, pos, d_model]``); ``hook_embed`` sees the sum.
    """

    def __init__(self, d_vocab: int, d_model: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.W_E = nn.Parameter(torch.zeros(d_vocab, d_model, dtype=dtype))
        self.W_E_prev = nn.Parameter(torch.zeros(d_vocab, d_model, dtype=dtype))
        self.hook_out = HookPoint()  # [batch, pos, d_model]: the sum, which a bridge's hook_embed names

    def forward(self, tokens: Int[torch.Tensor, "batch pos"]) -> Float[torch.Tensor, "batch pos d_model"]:
        current = self.W_E[tokens]
        previous = torch.zeros_like(current)
        previous[:, 1:] = self.W_E_prev[tokens[:, :-1]]
        return self.hook_out(current + previous)
