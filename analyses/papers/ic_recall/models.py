"""The one-layer IC-recall transformer of Huang, Nichani, Lee & Ge (§2.1), the MLP associative memory of
Lemma 3.1, and the closed-form logits of eq. (16) / App. D.

**The model** (§2.1): ``z_i = [e_i ; φ(u_i)]`` (one-hot position concatenated with an orthonormal token
embedding), one head with a merged key-query matrix and no value/output matrices and no 1/√d scaling,
``h = W^P (z_{-1} + Z softmax(Zᵀ W^KQ z_{-1}))``, then ``f = Vᵀ σ(W h)`` with ``σ(x) = x²`` and **no residual
around the MLP**, read out by the (tied) token embeddings. As a TransformerLens model (a builder recipe):

    residual  [0, d_P)        block P: one-hot positions (W_pos)
              [d_P, D_in)     block X: token embeddings φ (W_E); read by attention and W_in (= W^P)
              [D_in, D_in+d)  block Y: MLP output (W_out writes only here; W_U reads only here)

``d_head = D_in``, ``W_Q = W_V = [I; 0]``, ``W_O = [I 0]`` frozen, ``W_K[0, :D_in, :D_in] = W^KQ`` (key index
first: score(q, j) = z_jᵀ W^KQ z_q), ``use_attn_scale=False``, no biases, no LayerNorm, activation x².
θ (the EoS query's scores over positions 0..2k+1) is ``W_K[0, :2k+2, 2k+1]``; ω (the relation query's)
is ``W_K[0, :2k+3, 2k+2]``.

Fine-tuning modes: ``partial`` (only the position–position block of W^KQ, the theory's setting, §2.3),
``full`` (all of W^KQ, §5); ``pretrain`` (W^KQ and the MLP both trainable, §5 "Experiments with pretrained MLP").

**The fast path** :class:`AnalyticICRecall`: in partial mode the attention is the same for every sequence,
and with the constructed memory the logits are the closed forms below, so training needs no transformer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from jaxtyping import Float, Int

from analyses.papers.ic_recall.data import ICRecallData, ICRecallSpec, ICRecallTask, check_n_ctx
from mechrecall._tl import HookedTransformer, load_tl_state_dict, tl_parameter, tl_state_dict, weight
from mechrecall.builder import build_toy_model
from mechrecall.surgeries import SURGERIES, SetActivation, SetWeight, Surgery, TrainableEntries, ZeroBiases

MODES = ("partial", "full", "pretrain", "frozen")
EMBEDDINGS = ("random", "identity")


# ------------------------------------------------------------------------------- the memory


def orthonormal_embeddings(
    d_vocab: int, kind: str = "random", seed: int = 0, dtype: torch.dtype = torch.float64
) -> Float[torch.Tensor, "d d_vocab"]:
    """Φ with orthonormal columns φ(u) (d = d_vocab): the Q factor of a seeded Gaussian, or the identity."""
    if kind not in EMBEDDINGS:
        raise ValueError(f"embedding={kind!r}; expected one of {EMBEDDINGS}")
    if kind == "identity":
        return torch.eye(d_vocab, dtype=dtype)
    g = torch.Generator().manual_seed(7919 * seed + 3)
    q, r = torch.linalg.qr(torch.randn(d_vocab, d_vocab, generator=g, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r))).to(dtype)


def associative_memory(
    task: ICRecallTask, phi: Float[torch.Tensor, "d d_vocab"]
) -> tuple[Float[torch.Tensor, "rows d"], Float[torch.Tensor, "rows d"]]:
    """Lemma 3.1's MLP (W, V), each ``[3n², d]``. For the i-th (s, a) pair (s-major), ρ = Σ_{r ∈ R(s,a)} φ(r):

    w_{3i-2} = φ(s) + ρ, v_{3i-2} = φ(a)     (s, r) -> a
    w_{3i-1} = φ(a) + φ(s), v_{3i-1} = ρ     (s, a) -> r
    w_{3i}   = φ(a) + ρ, v_{3i}   = φ(s)     (a, r) -> s
    """
    n, m = task.n, task.m
    S, A, R = phi[:, :n].T, phi[:, n : 2 * n].T, phi[:, 2 * n : 2 * n + m].T  # [n, d], [n, d], [m, d]
    holds = (task.rel.T[:, None, :] == torch.arange(n)[None, :, None]).to(phi.dtype)  # [s, a, r]
    rho = torch.einsum("sar,rd->sad", holds, R)
    s_vec, a_vec = S[:, None, :].expand_as(rho), A[None, :, :].expand_as(rho)
    W = torch.stack([s_vec + rho, a_vec + s_vec, a_vec + rho], dim=2).reshape(3 * n * n, -1)
    V = torch.stack([a_vec, rho, s_vec], dim=2).reshape(3 * n * n, -1)
    return W, V


def memory_readout(
    W: Float[torch.Tensor, "rows d"],
    V: Float[torch.Tensor, "rows d"],
    phi: Float[torch.Tensor, "d d_vocab"],
    x: Float[torch.Tensor, "*batch d"],
) -> Float[torch.Tensor, "*batch d_vocab"]:
    """Logits ``φ(u)ᵀ Vᵀ (W x)²`` over the vocabulary for inputs ``x [B, d]`` -> ``[B, d_vocab]``."""
    return ((x @ W.T) ** 2 @ V) @ phi


def memory_recall(
    task: ICRecallTask,
    W: Float[torch.Tensor, "rows d"],
    V: Float[torch.Tensor, "rows d"],
    phi: Float[torch.Tensor, "d d_vocab"],
) -> dict[str, float]:
    """Argmax recall of the memory on every pretraining pair (φ(u1) + φ(u2) -> the third element), per kind.

    ``sa->r`` counts any relation in R(s, a) as correct (several relations can map s to a)."""
    s = torch.arange(task.n).repeat(task.m)
    r = torch.arange(task.m).repeat_interleave(task.n)
    a = task.rel[r, s]
    ids = {"s": s, "r": task.relation_id(r), "a": task.answer_id(a)}
    out = {}
    for first, second, target in (("s", "r", "a"), ("s", "a", "r"), ("a", "r", "s")):
        pred = memory_readout(W, V, phi, phi[:, ids[first]].T + phi[:, ids[second]].T).argmax(-1)
        if target == "r":
            ok = task.rel[(pred - 2 * task.n).clamp(0, task.m - 1), s] == a
            ok &= (pred >= 2 * task.n) & (pred < 2 * task.n + task.m)
        else:
            ok = pred == ids[target]
        out[f"{first}{second}->{target}"] = float(ok.double().mean())
    return out


# ------------------------------------------------------------------------- the TL model


@dataclass(frozen=True)
class ICRecallWeights(Surgery):
    """Write Φ (``W_E`` block X, ``W_U`` block Y) and the MLP (``W_in`` rows X, ``W_out`` columns Y) of the
    IC-recall task ``(n, m, k, family, task_seed)``. ``memory="constructed"``: Lemma 3.1, frozen;
    ``"random"``: W ~ N(0, 1/d), V ~ N(0, 1/d_MLP) (the pretrained-MLP variant's start; trainable)."""

    n: int
    m: int
    k: int
    family: str
    task_seed: int
    embedding: str = "random"
    memory: str = "constructed"
    kind: ClassVar[str] = "ic_recall_weights"

    def apply(self, model: HookedTransformer, generator: torch.Generator) -> None:
        if self.memory not in ("constructed", "random"):
            raise ValueError(f"ICRecallWeights: memory={self.memory!r}; expected 'constructed' or 'random'")
        task = ICRecallTask(ICRecallSpec(self.n, self.m, self.k, self.family, self.task_seed))
        d, dP = model.cfg.d_vocab, model.cfg.n_ctx
        Din = dP + d
        phi = orthonormal_embeddings(d, self.embedding, self.task_seed)
        if self.memory == "constructed":
            W, V = associative_memory(task, phi)
        else:
            width = model.cfg.d_mlp
            W = torch.randn(width, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
            V = torch.randn(width, d, generator=generator, dtype=torch.float64) / math.sqrt(width)
        dtype = model.cfg.dtype
        with torch.no_grad():
            for name, _block in (
                ("embed.W_E", None),
                ("unembed.W_U", None),
                ("blocks.0.mlp.W_in", None),
                ("blocks.0.mlp.W_out", None),
            ):
                tl_parameter(model, name).zero_()
            model.embed.W_E[:, dP:Din] = phi.T.to(dtype)
            model.unembed.W_U[Din:] = phi.to(dtype)
            model.blocks[0].mlp.W_in[dP:Din] = W.T.to(dtype)
            model.blocks[0].mlp.W_out[:, Din:] = V.to(dtype)
        for name in ("embed.W_E", "unembed.W_U", "blocks.0.mlp.W_in", "blocks.0.mlp.W_out"):
            weight(model, name).requires_grad_(False)


SURGERIES.setdefault(ICRecallWeights.kind, ICRecallWeights)


@dataclass(frozen=True)
class Layout:
    """Residual-stream layout of the TL model: ``d_P`` positions, ``d`` token dims, blocks P | X | Y."""

    dP: int
    d: int

    @property
    def Din(self) -> int:
        return self.dP + self.d

    @property
    def D(self) -> int:
        return self.dP + 2 * self.d


def model_config(
    spec: ICRecallSpec, *, d_mlp: int | None = None, dtype: str = "float32", n_ctx: int | None = None
) -> dict:
    """The ``HookedTransformerConfig`` fields of the IC-recall model (``n_ctx = d_P``, default ``2k+3``)."""
    lay = Layout(check_n_ctx(spec, n_ctx), spec.d_vocab)
    return dict(
        n_layers=1,
        n_heads=1,
        d_model=lay.D,
        d_head=lay.Din,
        d_mlp=d_mlp or 3 * spec.n**2,
        d_vocab=spec.d_vocab,
        n_ctx=lay.dP,
        act_fn="relu",
        normalization_type=None,
        positional_embedding_type="standard",
        use_attn_scale=False,
        default_prepend_bos=False,
        attn_only=False,
        dtype=dtype,
        device="cpu",
    )


def model_recipe(
    spec: ICRecallSpec,
    mode: str = "partial",
    *,
    embedding: str = "random",
    memory: str = "constructed",
    dtype: str = "float32",
    n_ctx: int | None = None,
    d_mlp: int | None = None,
) -> tuple[dict, list[Surgery]]:
    """(config, surgeries) of the IC-recall model; ``build_toy_model(*model_recipe(...))`` builds it.

    ``mode``: ``partial`` (train W^KQ's position–position block), ``full`` (all of W^KQ), ``pretrain``
    (W^KQ and the MLP's W (rows of block X) and V (columns of block Y)), ``frozen`` (nothing)."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}; expected one of {MODES}")
    spec.validate()
    cfg = model_config(spec, dtype=dtype, n_ctx=n_ctx, d_mlp=d_mlp)
    lay = Layout(cfg["n_ctx"], spec.d_vocab)
    attn = ("blocks.0.attn.W_Q", "blocks.0.attn.W_K", "blocks.0.attn.W_V", "blocks.0.attn.W_O")
    surgeries: list[Surgery] = [
        ZeroBiases(),
        SetActivation("square"),
        SetWeight(attn, "zeros"),
        SetWeight(("blocks.0.attn.W_Q", "blocks.0.attn.W_V"), "identity", region=((0, 1), (0, lay.Din), (0, lay.Din))),
        SetWeight(("blocks.0.attn.W_O",), "identity", region=((0, 1), (0, lay.Din), (0, lay.Din))),
        SetWeight(("pos_embed.W_pos",), "one_hot"),
        ICRecallWeights(spec.n, spec.m, spec.k, spec.family, spec.seed, embedding, memory),
    ]
    if mode == "partial":
        surgeries.append(TrainableEntries("blocks.0.attn.W_K", ((0, 1), (0, lay.dP), (0, lay.dP))))
    elif mode in ("full", "pretrain"):
        surgeries.append(TrainableEntries("blocks.0.attn.W_K", ((0, 1), (0, lay.Din), (0, lay.Din))))
    if mode == "pretrain":
        surgeries.append(TrainableEntries("blocks.0.mlp.W_in", ((lay.dP, lay.Din),)))
        surgeries.append(TrainableEntries("blocks.0.mlp.W_out", (None, (lay.Din, lay.D))))
    return cfg, surgeries


def build_model(
    spec: ICRecallSpec,
    mode: str = "partial",
    *,
    embedding: str = "random",
    memory: str = "constructed",
    dtype: str = "float32",
    seed: int = 0,
    n_ctx: int | None = None,
    d_mlp: int | None = None,
) -> HookedTransformer:
    """The IC-recall transformer (see :func:`model_recipe`; ``d_mlp`` default 3n²)."""
    cfg, surgeries = model_recipe(spec, mode, embedding=embedding, memory=memory, dtype=dtype, n_ctx=n_ctx, d_mlp=d_mlp)
    return build_toy_model(cfg, surgeries, seed=seed)


# ------------------------------------------------------------------ the MLP's cross terms (Fig 4)


def pair_terms(
    model: HookedTransformer, first: Int[torch.Tensor, " a"], second: Int[torch.Tensor, " b"]
) -> Float[torch.Tensor, "a b d_model"]:
    """The bilinear terms of the MLP, ``B(u, u') = W_outᵀ[(W_inᵀ e_u) ⊙ (W_inᵀ e_u')]`` (residual space) for the
    token ids ``first`` × ``second`` (``e_u`` = the token's embedding row of ``W_E``).

    With σ(x) = x², no biases and an MLP input ``x = Σ_u c_u e_u`` (the attention's mix of orthonormal token
    embeddings, the residual EoS included; ``W_in`` reads only the token block), the MLP's output is exactly
    ``Σ_{u,u'} c_u c_u' B(u, u')``: the pair {u, u'} (u ≠ u') enters as the **cross term** ``2 c_u c_u' B(u, u')``.
    The first step reads relation logits off it. In Lemma 3.1's memory every row stores one (s, a) pair, so the
    subject×subject terms B(s, s') vanish; a pretrained MLP need not make them vanish (interference)."""
    mlp = model.blocks[0].mlp
    h1, h2 = model.embed.W_E[first] @ mlp.W_in, model.embed.W_E[second] @ mlp.W_in
    return torch.einsum("ak,bk,kd->abd", h1, h2, mlp.W_out)


@torch.no_grad()
def cancel_cross_terms(model: HookedTransformer, spec: ICRecallSpec, ids: Int[torch.Tensor, " g"]) -> HookedTransformer:
    """A copy of the (pretrained, ``full``-mode) IC-recall ``model`` whose MLP has every cross term between two
    distinct tokens of ``ids`` cancelled exactly: for each pair {u, u'} two frozen neurons with input
    ``(e_u ± e_u')/2`` and output ``∓2 B(u, u')``, since ((α+β)/2)² − ((α−β)/2)² = αβ, so the MLP's output becomes
    ``f(x) − Σ_{u<u'} 2 c_u c_u' B(u, u')`` (every other term, squares included, unchanged). The attention is
    copied (W^KQ trainable, as in ``full`` mode); the MLP is frozen."""
    ids = ids.tolist()
    old = model.cfg.d_mlp
    pairs = [(i, j) for i in range(len(ids)) for j in range(i + 1, len(ids))]
    dtype = str(model.cfg.dtype).removeprefix("torch.")
    out = build_model(spec, "full", memory="random", dtype=dtype, n_ctx=model.cfg.n_ctx, d_mlp=old + 2 * len(pairs))
    load_tl_state_dict(out, {k: v for k, v in tl_state_dict(model).items() if ".mlp." not in k}, strict=False)
    B, E = pair_terms(model, torch.tensor(ids), torch.tensor(ids)), model.embed.W_E
    W_in, W_out = out.blocks[0].mlp.W_in, out.blocks[0].mlp.W_out
    W_in.zero_(), W_out.zero_()
    W_in[:, :old], W_out[:old] = model.blocks[0].mlp.W_in, model.blocks[0].mlp.W_out
    for p, (i, j) in enumerate(pairs):
        plus, minus = old + 2 * p, old + 2 * p + 1
        W_in[:, plus], W_in[:, minus] = (E[ids[i]] + E[ids[j]]) / 2, (E[ids[i]] - E[ids[j]]) / 2
        W_out[plus], W_out[minus] = -2 * B[i, j], 2 * B[i, j]
    return out


def merged_wkq(model: HookedTransformer) -> torch.Tensor:
    """W^KQ ``[D_in, D_in]`` (key index first) of the IC-recall model."""
    Din = model.cfg.d_head
    return model.blocks[0].attn.W_K[0, :Din, :Din]


def scores(model: HookedTransformer, k: int) -> tuple[Float[torch.Tensor, " eos_pos"], Float[torch.Tensor, " rel_pos"]]:
    """(θ ``[2k+2]``, ω ``[2k+3]``): the position–position attention scores of the EoS and relation queries."""
    W = model.blocks[0].attn.W_K[0]
    return W[: 2 * k + 2, 2 * k + 1].detach().clone(), W[: 2 * k + 3, 2 * k + 2].detach().clone()


def set_scores(
    model: HookedTransformer, theta: Float[torch.Tensor, " eos_pos"], omega: Float[torch.Tensor, " rel_pos"]
) -> None:
    """Write θ and ω into the position–position block of W^KQ."""
    k = (len(theta) - 2) // 2
    with torch.no_grad():
        W = model.blocks[0].attn.W_K
        W[0, : 2 * k + 2, 2 * k + 1] = theta.to(W.dtype)
        W[0, : 2 * k + 3, 2 * k + 2] = omega.to(W.dtype)


def initial_scores(k: int, std: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """θ0, ω0 ~ N(0, std²) (seeded): Algorithm 1 starts at 0; a small perturbation breaks the symmetry for Adam."""
    g = torch.Generator().manual_seed(104_729 * seed + 11)
    return (
        std * torch.randn(2 * k + 2, generator=g, dtype=torch.float64),
        std * torch.randn(2 * k + 3, generator=g, dtype=torch.float64),
    )


# --------------------------------------------------------------------- closed-form logits


def closed_form_relation_logits(
    v: Float[torch.Tensor, "batch pos"] | Float[torch.Tensor, " pos"], task: ICRecallTask, data: ICRecallData
) -> Float[torch.Tensor, "batch m"]:
    """Eq. (16), any k: ``l(r) = Σ_{i ≤ 2k+1} v_i² + 2 Σ_{i ≤ k+1, j ≤ k} v_{s_i} v_{a_j} 1{r(s_i) = a_j}``.

    ``v``: attention of the EoS query over positions 0..2k+1 (``[B, 2k+2]`` or ``[2k+2]``); EoS's own
    weight never contributes. Holds for any attention, with the constructed memory and orthonormal φ."""
    k = task.k
    v = v.expand(len(data), -1) if v.ndim == 1 else v
    M = task.matches(data).to(v.dtype)  # [B, m, k+1, k]
    vs, va = v[:, 0 : 2 * k + 1 : 2], v[:, 1 : 2 * k : 2]
    cross = torch.einsum("brij,bi,bj->br", M, vs, va)
    return (v[:, : 2 * k + 1] ** 2).sum(-1, keepdim=True) + 2 * cross


def closed_form_answer_logits(
    q: Float[torch.Tensor, "batch pos"] | Float[torch.Tensor, " pos"],
    task: ICRecallTask,
    data: ICRecallData,
    relation: Int[torch.Tensor, " batch"] | None = None,
) -> Float[torch.Tensor, "batch n"]:
    """App. D (general k): with relation r in the last position,
    ``l(a) = Σ_i q_{s_i}² + (1 + q_r)² + 2 (1 + q_r) Σ_i q_{s_i} 1{r(s_i) = a}`` (q over positions 0..2k+2)."""
    k = task.k
    q = q.expand(len(data), -1) if q.ndim == 1 else q
    relation = data.relation if relation is None else relation
    qs, qr = q[:, 0 : 2 * k + 1 : 2], q[:, 2 * k + 2]
    hit = torch.nn.functional.one_hot(task.rel[relation[:, None], data.subjects], task.n).to(q.dtype)  # [B,k+1,n]
    base = (qs**2).sum(-1) + (1 + qr) ** 2
    return base[:, None] + 2 * (1 + qr)[:, None] * torch.einsum("bi,bia->ba", qs, hit)


def confusing_logit_gap(v: Float[torch.Tensor, "*batch pos"]) -> Float[torch.Tensor, "*batch"]:
    """``l(r*) - l(r_conf) = 2 (v1 - v3)(v2 - v4)`` (§4.1; the paper writes ∝)."""
    return 2 * (v[..., 0] - v[..., 2]) * (v[..., 1] - v[..., 3])


class AnalyticICRecall(torch.nn.Module):
    """The partial-mode model in closed form: parameters θ ``[2k+2]`` and ω ``[2k+3]`` only; the logits are
    eq. (16) and App. D with v = softmax(θ), q = softmax(ω). No d, no MLP: O(N·m·k²) per step."""

    def __init__(
        self,
        task: ICRecallTask,
        theta: Float[torch.Tensor, " eos_pos"] | None = None,
        omega: Float[torch.Tensor, " rel_pos"] | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        self.task = task
        k = task.k
        self.theta = torch.nn.Parameter(
            torch.zeros(2 * k + 2, dtype=dtype) if theta is None else theta.clone().to(dtype)
        )
        self.omega = torch.nn.Parameter(
            torch.zeros(2 * k + 3, dtype=dtype) if omega is None else omega.clone().to(dtype)
        )

    def relation_logits(
        self, data: ICRecallData, M: Float[torch.Tensor, "batch m pairs"] | None = None
    ) -> Float[torch.Tensor, "batch m"]:
        """``[B, m]``; ``M`` = precomputed ``task.matches(data)`` as floats, flattened to ``[B, m, (k+1)k]``."""
        k, v = self.task.k, torch.softmax(self.theta, -1)
        vs, va = v[0 : 2 * k + 1 : 2], v[1 : 2 * k : 2]
        weights = torch.outer(vs, va).flatten()
        if M is None:  # evaluation: in chunks (the match tensor of a large test set is big)
            parts = [
                self.task.matches(data.subset(slice(i, i + 2048))).to(v.dtype).flatten(2) @ weights
                for i in range(0, len(data), 2048)
            ]
            return (v[: 2 * k + 1] ** 2).sum() + 2 * torch.cat(parts)
        return (v[: 2 * k + 1] ** 2).sum() + 2 * (M @ weights)

    def answer_logits(
        self,
        data: ICRecallData,
        relation: Int[torch.Tensor, " batch"] | None = None,
        hit: Float[torch.Tensor, "batch k1 n"] | None = None,
    ) -> Float[torch.Tensor, "batch n"]:
        """``[B, n]``; ``hit`` = precomputed one-hot ``r(s_i)`` ``[B, k+1, n]``."""
        k, q = self.task.k, torch.softmax(self.omega, -1)
        if hit is None:
            relation = data.relation if relation is None else relation
            hit = torch.nn.functional.one_hot(self.task.rel[relation[:, None], data.subjects], self.task.n).to(q.dtype)
        qs, qr = q[0 : 2 * k + 1 : 2], q[2 * k + 2]
        return (qs**2).sum() + (1 + qr) ** 2 + 2 * (1 + qr) * (qs @ hit)
