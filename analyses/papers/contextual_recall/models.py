"""The paper's models as builder recipes (``HookedTransformerConfig`` + surgeries, rebuildable from checkpoints).

- **Model A** (§3, App. B.1): "a 2-layer 1-head GPT-2 type decoder-only transformer (Karpathy minGPT) with
  embedding dimension 256". The rest follows minGPT: pre-LayerNorm with a final LayerNorm, a 4x GELU MLP,
  learned absolute positions, an untied bias-free head (``b_U`` frozen at 0), no dropout (TL has none; the
  data is online and never repeats).
- **Model B** (§4, Eq. 1): one layer, attention only, 3 heads; one-hot *fixed* token embeddings and a tied
  fixed unembedding (``W_U = W_Eᵀ``); positions one-hot in an orthogonal subspace (``d = V + T``) and
  *relative*, added to the keys only (``h(p_{i-t})``, a permanent score hook); no skip connection (the output
  is the attention output only); no biases, no LayerNorm. Only ``W_Q, W_K, W_V, W_O`` train.
- **Model B′** (App. C.3.2): as B with fixed one-hot *absolute* positions (``W_pos = [0 | I_T]``), which reach
  queries, keys and values but not the logits (the unembedding reads only the token subspace).

The hand-built one-layer attention-only construction of §4 (Prop. 1-4), notation of §4, Eq. 1: one-hot tokens
``h(v) = e_v`` and relative positions ``h(p_o) = e_{V + T_max - 1 + o}`` in ``d = V + T_max``. Head ``h`` has
``W_KQ^h`` and ``W_OV^h`` (``d x d``, paper convention): the score of key ``i`` from query ``t`` is
``(x_i + h(p_{i-t}))ᵀ W_KQ x_t``, ``g = Σ_i softmax_i(score) x_i``, ``f = Σ_h W_OV^h g_h``, logits ``f[:V]``;
no skip connection, no scaling. Sums: ``σ`` (all subjects), ``ρ`` (all relation tokens), ``γ`` (all grammar
tokens), ``u_ℓ`` (all values of type ℓ), ``U_all = Σ_ℓ u_ℓ``, ``own_j = Σ_ℓ h(a_j^ℓ)``, ``u'_ℓ`` (values of type
ℓ held by finetuning subjects), ``𝐩`` (the window of the S+2 latest offsets).

- :func:`construction_weights` — Prop. 1 / Prop. 3 (``mode="pt"``, factual recall after pretraining; the
  subject head's OV in its *set* form ``-(U_all - own_j)``: read as a multiset sum, values shared by several
  subjects would get ``-7``/``-8`` and the construction would fail), Prop. 2 / Prop. 4 (``mode="icl"``).
- :func:`load_construction` — puts them in a ``HookedTransformer`` (Model B with ``d_head = d``):
  ``W_Q = I, W_K = W_KQ, W_V = W_OVᵀ, W_O = I``; :func:`construction_model` builds that model.
- :func:`functional_last_logits` — a plain-torch forward of Eq. 1 at the last position (an independent
  reference for the TL model, and what Theorem 2's cascade (``theory.py``) differentiates).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Float, Int

from mechrecall._tl import HookedTransformer
from mechrecall.batch import Batch
from mechrecall.builder import build_toy_model
from mechrecall.surgeries import PermanentHook, SetWeight, Surgery, ZeroBiases

from .data import World
from .presets import WorldConfig, WorldConfigError


def model_a_config(d_vocab: int, n_ctx: int, d_model: int = 256) -> dict[str, Any]:
    """Model A: 2 layers x 1 head, ``d_head = d_model``, ``d_mlp = 4 d_model``, LN, gelu_new, learned positions."""
    return dict(
        n_layers=2,
        n_heads=1,
        d_model=d_model,
        d_head=d_model,
        d_mlp=4 * d_model,
        d_vocab=d_vocab,
        d_vocab_out=d_vocab,
        n_ctx=n_ctx,
        act_fn="gelu_new",
        normalization_type="LN",
        positional_embedding_type="standard",
        attn_only=False,
        default_prepend_bos=False,
        init_mode="gpt2",
        initializer_range=0.02,
    )


def build_model_a(d_vocab: int, n_ctx: int, d_model: int = 256, seed: int = 0) -> HookedTransformer:
    """Model A with a bias-free head (``unembed.b_U`` zero and frozen)."""
    return build_toy_model(model_a_config(d_vocab, n_ctx, d_model), [SetWeight(("unembed.b_U",), "zeros")], seed=seed)


def model_b_config(
    d_vocab: int, n_ctx: int, d_head: int = 256, n_heads: int = 3, attn_scale: bool = True
) -> dict[str, Any]:
    """Model B / B′: ``d_model = V + n_ctx`` (tokens, then positions), attention only, no LN."""
    return dict(
        n_layers=1,
        n_heads=n_heads,
        d_model=d_vocab + n_ctx,
        d_head=d_head,
        d_vocab=d_vocab,
        d_vocab_out=d_vocab,
        n_ctx=n_ctx,
        attn_only=True,
        normalization_type=None,
        positional_embedding_type="standard",
        use_attn_scale=attn_scale,
        default_prepend_bos=False,
        init_mode="gpt2",
        initializer_range=0.02,
    )


def model_b_surgeries(d_vocab: int, n_ctx: int, positions: str = "relative") -> list[Surgery]:
    """Fixed one-hot embeddings, tied fixed unembedding, no biases, no skip connection, and the positions."""
    if positions not in ("relative", "absolute"):
        raise WorldConfigError(f"positions={positions!r}; expected 'relative' (Model B) or 'absolute' (Model B′)")
    surgeries: list[Surgery] = [
        ZeroBiases(),
        SetWeight(("embed.W_E",), "one_hot"),  # h(v) = e_v
        SetWeight(("unembed.W_U",), "one_hot"),  # logit_v = h(v)ᵀ f
    ]
    if positions == "relative":
        surgeries += [
            SetWeight(("pos_embed.W_pos",), "zeros"),
            PermanentHook("relative_key_positions", {"layer": 0, "pos_offset": d_vocab, "n_pos": n_ctx}),
        ]
    else:
        surgeries += [SetWeight(("pos_embed.W_pos",), "one_hot", offset=d_vocab)]
    surgeries.append(PermanentHook("no_skip_connection", {"layer": 0}))
    return surgeries


def build_model_b(
    d_vocab: int,
    n_ctx: int,
    *,
    d_head: int = 256,
    n_heads: int = 3,
    positions: str = "relative",
    attn_scale: bool = True,
    seed: int = 0,
) -> HookedTransformer:
    """Model B (``positions="relative"``) or B′ (``"absolute"``)."""
    return build_toy_model(
        model_b_config(d_vocab, n_ctx, d_head, n_heads, attn_scale),
        model_b_surgeries(d_vocab, n_ctx, positions),
        seed=seed,
    )


def construction_model(
    world: World, weights: dict[str, tuple[torch.Tensor, torch.Tensor]], T_max: int, seed: int
) -> HookedTransformer:
    """Model B (``d_head = d``, no attention scale) holding the construction ``weights``, one head each."""
    model = build_model_b(world.V, T_max, d_head=world.V + T_max, n_heads=len(weights), attn_scale=False, seed=seed)
    load_construction(model, weights)
    return model


def world_r_ctx(cfg: WorldConfig, n_demos: int) -> int:
    """Context of Model B: the longest input, PT_rel ((S+3)N_tr - 1) or ICL_rel (3(N_ft+1) - 1)."""
    return max(cfg.pt_len, 3 * (n_demos + 1) - 1)


# ----------------------------------------------------------------------------------------------- §4 construction

HEADS_PT = ("relation", "subject")
HEADS_PT_FULL = ("relation", "subject", "grammar")


@dataclass(frozen=True)
class Basis:
    """One-hot directions of Model B's ``d = V + T_max`` space for a World-R world."""

    world: World
    T_max: int

    @property
    def V(self) -> int:
        return self.world.V

    @property
    def d(self) -> int:
        return self.V + self.T_max

    def h(self, ids: int | Sequence[int] | torch.Tensor) -> Float[torch.Tensor, " d"]:
        """Sum of ``h(v)`` over token ids ``ids`` (a ``[d]`` vector; repeated ids count once)."""
        v = torch.zeros(self.d)
        v[torch.as_tensor(ids, dtype=torch.long).reshape(-1)] = 1.0
        return v

    def pos_index(self, offset: int | torch.Tensor) -> torch.Tensor:
        return self.V + self.T_max - 1 + torch.as_tensor(offset, dtype=torch.long)

    def p(self, offsets: int | torch.Tensor) -> Float[torch.Tensor, " d"]:
        v = torch.zeros(self.d)
        v[self.pos_index(offsets).reshape(-1)] = 1.0
        return v

    # the sums of the construction
    @property
    def sigma(self) -> Float[torch.Tensor, " d"]:
        return self.h(torch.arange(self.world.cfg.n_subjects))

    @property
    def rho(self) -> Float[torch.Tensor, " d"]:
        return self.h(self.world.relation(torch.arange(self.world.cfg.n_types)))

    @property
    def gamma(self) -> Float[torch.Tensor, " d"]:
        c = self.world.cfg
        return self.h(torch.arange(c.grammar_offset, c.grammar_offset + c.n_grammar))

    @property
    def sep(self) -> Float[torch.Tensor, " d"]:
        return self.h(self.world.cfg.sep)

    def u(self, ell: int, subjects: torch.Tensor | None = None) -> torch.Tensor:
        """``u_ℓ`` (all type-ℓ values), or ``u'_ℓ`` (the values held by ``subjects``)."""
        if subjects is None:
            return self.h(self.world.value_ids(ell))
        return self.h(self.world.attributes[subjects, ell])

    @property
    def u_all(self) -> Float[torch.Tensor, " d"]:
        return total(self.u(ell) for ell in range(self.world.cfg.n_types))

    def own(self) -> Float[torch.Tensor, "M d"]:
        """``own_j`` for every subject: ``[M, d]``."""
        out = torch.zeros(self.world.cfg.n_subjects, self.d)
        out.scatter_(1, self.world.attributes, 1.0)
        return out

    def window(self) -> torch.Tensor:
        """``𝐩``: offsets ``-(S+1)..0`` (the current subsequence ``[s, g_1..g_S, [sep]]``)."""
        S = self.world.cfg.grammar_len
        if self.T_max < S + 2:
            raise WorldConfigError(f"T_max={self.T_max} < S+2={S + 2}: the relation head's window does not fit")
        return self.p(torch.arange(-(S + 1), 1))


def total(terms: Iterable[torch.Tensor]) -> torch.Tensor:
    """The sum of ``terms`` (tensors of one shape; at least one)."""
    return functools.reduce(operator.add, terms)


def outer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a[:, None] * b[None, :]


def subject_ov(B: Basis) -> Float[torch.Tensor, "d d"]:
    """``W_OV^subj = -Σ_j (U_all - own_j) h(s_j)ᵀ`` (set form): column ``s_j`` is ``-(U_all - own_j)``."""
    W = torch.zeros(B.d, B.d)
    M = B.world.cfg.n_subjects
    W[:, :M] = -(B.u_all[None, :] - B.own()).T
    return W


def relation_ov_pt(B: Basis) -> Float[torch.Tensor, "d d"]:
    """``Σ_ℓ u_ℓ h(r_ℓ)ᵀ``: the relation token of type ℓ writes every type-ℓ value."""
    return total(outer(B.u(ell), B.h(B.world.relation(ell))) for ell in range(B.world.cfg.n_types))


def construction_weights(
    world: World,
    beta: float,
    mode: str = "pt",
    *,
    T_max: int,
    ft_subjects: torch.Tensor | None = None,
    grammar_head: bool = False,
    variant: str = "main",
    window: bool = False,
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``{head: (W_KQ, W_OV)}`` of the construction.

    ``mode="pt"``: Prop. 1 (relation + subject heads; ``grammar_head=True`` adds Prop. 3's grammar head).
    ``mode="icl"``: Prop. 2 (Eq. 4-5, ``variant="main"``) or Prop. 4 (``variant="appendix"``), with ``U'`` the
    values held by ``ft_subjects`` (default: all subjects). ``window=True`` keeps Prop. 1's ``+𝐩`` term in the
    relation head's KQ (factual recall survives finetuning).
    """
    if not world.cfg.relation_tokens:
        raise WorldConfigError("the construction is for World-R (relation_tokens=True)")
    if mode not in ("pt", "icl"):
        raise WorldConfigError(f"mode={mode!r}; expected 'pt' (Prop. 1/3) or 'icl' (Prop. 2/4)")
    if variant not in ("main", "appendix"):
        raise WorldConfigError(f"variant={variant!r}; expected 'main' (Prop. 2) or 'appendix' (Prop. 4)")
    B = Basis(world, T_max)
    L = world.cfg.n_types
    sep = B.sep
    out = {}
    if mode == "pt":
        out["relation"] = (beta * outer(B.rho + B.window(), sep), relation_ov_pt(B))
        out["subject"] = (beta * outer(B.sigma, sep), subject_ov(B))
    else:
        ft = torch.arange(world.cfg.n_subjects) if ft_subjects is None else ft_subjects
        u_ft = [B.u(ell, ft) for ell in range(L)]
        rel = [B.h(world.relation(ell)) for ell in range(L)]
        if variant == "main":  # Eq. 5
            key = total(rel[ell] + u_ft[ell] for ell in range(L))
            ov = total(outer(B.u(ell), rel[ell]) + outer(u_ft[ell], u_ft[ell]) for ell in range(L))
        else:  # Prop. 4
            key = total(u_ft)
            ov = total(outer(u_ft[ell], u_ft[ell] + rel[ell]) for ell in range(L))
        if window:
            key = key + B.window()
        out["relation"] = (beta * outer(key, sep), ov)
        out["subject"] = (beta * outer(B.sigma + B.p(-1), sep), subject_ov(B))  # Eq. 4
    if grammar_head:
        out["grammar"] = grammar_head_weights(B, beta)
    return out


def grammar_head_weights(B: Basis, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Prop. 3's grammar head (predicts ``[sep]`` after grammar, the attribute's subject after an attribute, ...).
    Its KQ column of ``[sep]`` is zero, so at the final ``[sep]`` it attends uniformly and adds little."""
    world = B.world
    L, M = world.cfg.n_types, world.cfg.n_subjects
    U = B.u_all
    S_ = B.sigma
    rho, gamma, sep, win = B.rho, B.gamma, B.sep, B.window()
    kq = torch.diag(U) + torch.diag(S_)
    for ell in range(L):
        r = B.h(world.relation(ell))
        kq = kq + outer(r + sep + win, r)
    kq = kq + outer(rho + sep + win, gamma)
    ov = torch.zeros(B.d, B.d)
    ov[torch.arange(M)[:, None].expand(M, L), world.attributes] = 1.0  # attribute a_j^ℓ -> subject s_j
    ov = ov + outer(gamma + rho, S_ + sep) + outer(0.5 * gamma + sep, rho)
    return beta * kq, ov


def load_construction(
    model: HookedTransformer,
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]],
    head_order: Sequence[str] | None = None,
) -> None:
    """Write ``weights`` into head ``k = head_order.index(name)`` of layer 0 (Model B built with
    ``d_head = d_model`` and ``attn_scale=False``): ``W_Q = I, W_K = W_KQ, W_V = W_OVᵀ, W_O = I``."""
    head_order = list(head_order or weights)
    attn = model.blocks[0].attn
    d = model.cfg.d_model
    if model.cfg.d_head != d or model.cfg.use_attn_scale:
        raise WorldConfigError(
            f"load_construction needs d_head == d_model ({model.cfg.d_head} vs {d}) and "
            "use_attn_scale=False (scores must be exactly x_iᵀ W_KQ x_t)"
        )
    if len(head_order) != model.cfg.n_heads:
        raise WorldConfigError(
            f"{len(head_order)} construction heads {head_order} for a model with {model.cfg.n_heads} heads"
        )
    eye = torch.eye(d)
    with torch.no_grad():
        for k, name in enumerate(head_order):
            kq, ov = weights[name]
            if kq.shape != (d, d):
                raise WorldConfigError(f"head {name!r}: W_KQ has shape {tuple(kq.shape)}; expected ({d}, {d})")
            attn.W_Q[k] = eye
            attn.W_K[k] = kq
            attn.W_V[k] = ov.T
            attn.W_O[k] = eye


# ----------------------------------------------------------------------------------------------- reference forward


def functional_last_logits(
    tokens: Int[torch.Tensor, "B T"],
    kqs: Sequence[torch.Tensor],
    ovs: Sequence[torch.Tensor],
    V: int,
    T_max: int,
    pos: int = -1,
) -> Float[torch.Tensor, "B V"]:
    """Eq. 1 at query position ``pos`` in plain torch (one-hot inputs make every product a gather):
    ``score_i = W_KQ[tok_i, tok_t] + W_KQ[h(p_{i-t}), tok_t]`` for ``i <= t``, ``f = Σ_h Σ_i α_i W_OV[:, tok_i]``."""
    _Bn, T = tokens.shape
    t = pos % T
    keys = tokens[:, : t + 1]  # [B, t+1]
    q = tokens[:, t]  # [B]
    pidx = V + T_max - 1 + (torch.arange(t + 1) - t)  # [t+1]
    heads = []
    for kq, ov in zip(kqs, ovs):
        col = kq[:, q].T  # [B, d]: W_KQ x_t
        scores = col.gather(1, keys) + col[:, pidx]
        alpha = scores.softmax(-1)  # [B, t+1]
        vals = ov[:V][:, keys]  # [V, B, t+1]
        heads.append(torch.einsum("vbi,bi->bv", vals, alpha))
    return total(heads)


def theoretical_outputs(
    world: World, batch: Batch, mode: str, T_max: int, ft_subjects: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(f_subj, f_rel)`` ``[B, d]`` of the construction at the last position (Figs. 10/12):
    ``f_subj = -(U_all - own_{j*})`` (``j*`` the sequence / query subject), ``f_rel = u_ℓ`` (``mode="pt"``, ℓ the
    last subsequence's type) or ``u'_ℓ`` (``mode="icl"``)."""
    B = Basis(world, T_max)
    subj = batch.extras["subject"].cpu()
    ell = batch.extras["attr_type"].cpu()
    own = B.own()[subj]
    f_subj = -(B.u_all[None] - own)
    if mode == "pt" or ft_subjects is None:
        U = torch.stack([B.u(e) for e in range(world.cfg.n_types)])
    else:
        U = torch.stack([B.u(e, ft_subjects) for e in range(world.cfg.n_types)])
    return f_subj, U[ell]
