"""A 2-layer attention-only induction circuit written as explicit weight matrices (test fixture).

Residual stream of ``d_model = 3V + T`` dims, in four blocks: ``tok`` (one-hot current token),
``pos`` (one-hot position), ``prev`` (written by the previous-token head) and ``out`` (read by W_U).

- head (0, 0), previous-token: query ``pos p`` matches key ``pos p-1``; copies the key's token into ``prev``.
- head (1, 1), induction: query ``tok t`` matches keys whose ``prev`` holds ``t``; copies the key's token
  into ``out``; its full OV circuit ``W_E W_V W_O W_U`` is the identity on the vocabulary.
- heads (0, 1) and (1, 0): fillers — zero QK (uniform attention), small random OV writing into ``out``.
"""

from __future__ import annotations

import torch

from mechrecall.builder import build_toy_model
from mechrecall.surgeries import ZeroBiases

V, T, BETA = 32, 20, 40.0
PREV_TOKEN_HEAD, INDUCTION_HEAD = (0, 0), (1, 1)


def handbuilt_induction_model(seed: int = 0):
    d_model, d_head = 3 * V + T, max(V, T)
    tok, pos, prev, out = 0, V, V + T, 2 * V + T
    model = build_toy_model(
        dict(
            n_layers=2,
            n_heads=2,
            d_model=d_model,
            d_head=d_head,
            d_vocab=V,
            n_ctx=T,
            attn_only=True,
            normalization_type=None,
            use_attn_scale=False,
        ),
        [ZeroBiases()],
        seed=seed,
    )
    gen = torch.Generator().manual_seed(seed)
    eye_v, eye_t = torch.eye(V), torch.eye(T)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim > 1:
                p.zero_()
        model.embed.W_E[:, tok : tok + V] = eye_v
        model.pos_embed.W_pos[:, pos : pos + T] = eye_t
        model.unembed.W_U[out : out + V] = eye_v
        a0, a1 = model.blocks[0].attn, model.blocks[1].attn
        # (0, 0): previous-token head.
        a0.W_Q[0, pos : pos + T, :T] = BETA * eye_t  # position p -> e_p
        a0.W_K[0, pos : pos + T - 1, 1:T] = eye_t[:-1, :-1]  # position j -> e_{j+1}
        a0.W_V[0, tok : tok + V, :V] = eye_v
        a0.W_O[0, :V, prev : prev + V] = eye_v
        # (1, 1): induction head.
        a1.W_Q[1, tok : tok + V, :V] = BETA * eye_v
        a1.W_K[1, prev : prev + V, :V] = eye_v
        a1.W_V[1, tok : tok + V, :V] = eye_v
        a1.W_O[1, :V, out : out + V] = eye_v
        # Fillers: uniform attention, small random OV into the output block.
        for attn, head in ((a0, 1), (a1, 0)):
            attn.W_V[head] = 0.1 * torch.randn(d_model, d_head, generator=gen)
            attn.W_O[head, :, out : out + V] = 0.1 * torch.randn(d_head, V, generator=gen)
    return model
