"""The hand-built one-layer attention-only construction of §4 (Prop. 1-4) and the two-step cascade of Theorem 2.

Notation (§4, Eq. 1): one-hot tokens ``h(v) = e_v`` and relative positions ``h(p_o) = e_{V + T_max - 1 + o}``
in ``d = V + T_max``. Head ``h`` has ``W_KQ^h`` and ``W_OV^h`` (``d x d``, paper convention): the score of key
``i`` from query ``t`` is ``(x_i + h(p_{i-t}))ᵀ W_KQ x_t``, ``g = Σ_i softmax_i(score) x_i``,
``f = Σ_h W_OV^h g_h``,
logits ``f[:V]``; no skip connection, no scaling. Sums: ``σ`` (all subjects), ``ρ`` (all relation tokens), ``γ``
(all grammar tokens), ``u_ℓ`` (all values of type ℓ), ``U_all = Σ_ℓ u_ℓ``, ``own_j = Σ_ℓ h(a_j^ℓ)``,
``u'_ℓ`` (values of type ℓ held by finetuning subjects), ``𝐩`` (the window of the S+2 latest offsets).

- :func:`construction_weights` — Prop. 1 / Prop. 3 (``mode="pt"``, factual recall after pretraining; the
  subject head's OV in its *set* form ``-(U_all - own_j)``: read as a multiset sum, values shared by several
  subjects would get ``-7``/``-8`` and the construction would fail), Prop. 2 / Prop. 4 (``mode="icl"``).
- :func:`load_construction` — puts them in a ``HookedTransformer`` (Model B with ``d_head = d``):
  ``W_Q = I, W_K = W_KQ, W_V = W_OVᵀ, W_O = I``.
- :func:`functional_last_logits` — a plain-torch forward of Eq. 1 at the last position (an independent
  reference for the TL model, and what the cascade differentiates).
- :func:`gd_cascade` — Theorem 2's finetuning dynamics from the Prop. 1 weights with gradients of the
  population loss over ICL_rel sequences (exact enumeration when small, else Monte Carlo).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int

from mechrecall.batch import Batch

from .world import World, WorldConfigError, all_icl_rel, population_size, sample_icl_rel

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

    def h(self, ids) -> torch.Tensor:
        """Sum of ``h(v)`` over token ids ``ids`` (a ``[d]`` vector; repeated ids count once)."""
        v = torch.zeros(self.d)
        v[torch.as_tensor(ids, dtype=torch.long).reshape(-1)] = 1.0
        return v

    def pos_index(self, offset) -> torch.Tensor:
        return self.V + self.T_max - 1 + torch.as_tensor(offset, dtype=torch.long)

    def p(self, offsets) -> torch.Tensor:
        v = torch.zeros(self.d)
        v[self.pos_index(offsets).reshape(-1)] = 1.0
        return v

    # the sums of the construction
    @property
    def sigma(self):
        return self.h(torch.arange(self.world.cfg.n_subjects))

    @property
    def rho(self):
        return self.h(self.world.relation(torch.arange(self.world.cfg.n_types)))

    @property
    def gamma(self):
        c = self.world.cfg
        return self.h(torch.arange(c.grammar_offset, c.grammar_offset + c.n_grammar))

    @property
    def sep(self):
        return self.h(self.world.cfg.sep)

    def u(self, ell: int, subjects: torch.Tensor | None = None) -> torch.Tensor:
        """``u_ℓ`` (all type-ℓ values), or ``u'_ℓ`` (the values held by ``subjects``)."""
        if subjects is None:
            return self.h(self.world.value_ids(ell))
        return self.h(self.world.attributes[subjects, ell])

    @property
    def u_all(self):
        return sum(self.u(ell) for ell in range(self.world.cfg.n_types))

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


def _outer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a[:, None] * b[None, :]


def subject_ov(B: Basis) -> Float[torch.Tensor, "d d"]:
    """``W_OV^subj = -Σ_j (U_all - own_j) h(s_j)ᵀ`` (set form): column ``s_j`` is ``-(U_all - own_j)``."""
    W = torch.zeros(B.d, B.d)
    M = B.world.cfg.n_subjects
    W[:, :M] = -(B.u_all[None, :] - B.own()).T
    return W


def relation_ov_pt(B: Basis) -> Float[torch.Tensor, "d d"]:
    """``Σ_ℓ u_ℓ h(r_ℓ)ᵀ``: the relation token of type ℓ writes every type-ℓ value."""
    return sum(_outer(B.u(ell), B.h(B.world.relation(ell))) for ell in range(B.world.cfg.n_types))


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
        out["relation"] = (beta * _outer(B.rho + B.window(), sep), relation_ov_pt(B))
        out["subject"] = (beta * _outer(B.sigma, sep), subject_ov(B))
    else:
        ft = torch.arange(world.cfg.n_subjects) if ft_subjects is None else ft_subjects
        u_ft = [B.u(ell, ft) for ell in range(L)]
        rel = [B.h(world.relation(ell)) for ell in range(L)]
        if variant == "main":  # Eq. 5
            key = sum(rel[ell] + u_ft[ell] for ell in range(L))
            ov = sum(_outer(B.u(ell), rel[ell]) + _outer(u_ft[ell], u_ft[ell]) for ell in range(L))
        else:  # Prop. 4
            key = sum(u_ft)
            ov = sum(_outer(u_ft[ell], u_ft[ell] + rel[ell]) for ell in range(L))
        if window:
            key = key + B.window()
        out["relation"] = (beta * _outer(key, sep), ov)
        out["subject"] = (beta * _outer(B.sigma + B.p(-1), sep), subject_ov(B))  # Eq. 4
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
        kq = kq + _outer(r + sep + win, r)
    kq = kq + _outer(rho + sep + win, gamma)
    ov = torch.zeros(B.d, B.d)
    ov[torch.arange(M)[:, None].expand(M, L), world.attributes] = 1.0  # attribute a_j^ℓ -> subject s_j
    ov = ov + _outer(gamma + rho, S_ + sep) + _outer(0.5 * gamma + sep, rho)
    return beta * kq, ov


def load_construction(
    model, weights: dict[str, tuple[torch.Tensor, torch.Tensor]], head_order: Sequence[str] | None = None
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
    out = 0.0
    for kq, ov in zip(kqs, ovs):
        col = kq[:, q].T  # [B, d]: W_KQ x_t
        scores = col.gather(1, keys) + col[:, pidx]
        alpha = scores.softmax(-1)  # [B, t+1]
        vals = ov[:V][:, keys]  # [V, B, t+1]
        out = out + torch.einsum("vbi,bi->bv", vals, alpha)
    return out


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


# ----------------------------------------------------------------------------------------------- Theorem 2


def cascade_condition(world: World, n_ft_subjects: int, n_demos: int) -> float:
    """``U_L (U_L + N_ft) / M_ft``: step 2 of the cascade reaches 100% ICL when this is below ``N_ft``
    (measured by an exact population-gradient re-derivation; see the package README)."""
    U = max(world.cfg.n_values)
    return U * (U + n_demos) / n_ft_subjects


def predicted_alpha1(eta_kq_subj: float, n_demos: int, n_values: int) -> float:
    """Theorem 2's previous-token coefficient of ``W_KQ^subj`` after step 1, with the factor ``(1 - 1/m)`` the
    printed constant lacks: ``α_1 = η m⁻¹ (1 - 1/U_L)(1 - 1/m)``, ``m = N_ft + 1``."""
    m = n_demos + 1
    return eta_kq_subj / m * (1 - 1 / n_values) * (1 - 1 / m)


def _ce(kqs, ovs, batch: Batch, V: int, T_max: int) -> torch.Tensor:
    logits = functional_last_logits(batch.tokens, kqs, ovs, V, T_max)
    return F.cross_entropy(logits, batch.extras["target"])


def _icl_accuracy(kqs, ovs, batch: Batch, V: int, T_max: int) -> float:
    with torch.no_grad():
        logits = functional_last_logits(batch.tokens, kqs, ovs, V, T_max)
    return (logits.argmax(-1) == batch.extras["target"]).float().mean().item()


def population_batches(
    world: World, ft: torch.Tensor, n_demos: int, max_exact: int, n_mc: int, gen: torch.Generator
) -> tuple[Batch, str]:
    """The finetuning population (all subjects from 𝒮'): every sequence when there are at most ``max_exact``,
    else ``n_mc`` Monte-Carlo draws."""
    n = population_size(n_demos, len(ft), len(ft), world.cfg.n_types)
    if n <= max_exact:
        return all_icl_rel(world, n_demos, ft), f"exact ({n} sequences)"
    return sample_icl_rel(world, n_mc, n_demos, gen, demo_subjects=ft), f"Monte Carlo ({n_mc} of {n} sequences)"


def gd_cascade(
    world: World,
    ft: torch.Tensor,
    heldout: torch.Tensor,
    *,
    n_demos: int,
    T_max: int,
    beta_grad: float = 8.0,
    betas_eval: Sequence[float] = (8.0, 50.0, 200.0),
    eta_kq_subj: float = 2.0,
    eta_ov_rel: float = 40.0,
    eta_kq_rel: float = 40.0,
    alpha2: float | None = None,
    alpha3: float | None = None,
    max_exact: int = 20000,
    n_mc: int = 4096,
    n_eval: int = 1024,
    seed: int = 0,
) -> dict:
    """Theorem 2's two-step cascade from the Prop. 1 weights (2 heads), ``W_KQ^h = β W̃^h``.

    Step 1: one GD step on ``W̃_subj`` (``η_KQ^subj``, applied to ``∇_{W̃}/β``) and one *projected* step on
    ``W_OV^rel`` (``∇ (I - h([sep])h([sep])ᵀ)``, ``η_OV^rel``); ``W̃_rel`` gets no gradient (no relation tokens
    in ICL prompts). Step 2: one GD step on ``W̃_rel`` (``η_KQ^rel``) at the updated weights. ``W_OV^subj`` is
    frozen. ``alpha2`` / ``alpha3`` (optional) set the step sizes through the theorem's scale-free constants
    instead: ``η_OV^rel = α_2 L T U_L²`` and ``η_KQ^rel = α_3 T / ((m-1)² α_2)``. Returns the gradient norms,
    the learned coefficients, and ICL accuracy after each step for query subjects seen in finetuning, held-out
    queries (demos from 𝒮'), and all-held-out prompts, at each β.
    """
    c = world.cfg
    V = world.V
    Bs = Basis(world, T_max)
    gen = torch.Generator().manual_seed(seed)
    check_n = 3 * (n_demos + 1) - 1
    U_L, m = max(c.n_values), n_demos + 1
    if alpha2 is not None:
        eta_ov_rel = alpha2 * c.n_types * check_n * U_L**2
    if alpha3 is not None:
        a2 = eta_ov_rel / (c.n_types * check_n * U_L**2)
        eta_kq_rel = alpha3 * check_n / ((m - 1) ** 2 * a2)
    if check_n > T_max:
        raise WorldConfigError(f"ICL_rel length {check_n} is longer than T_max={T_max}")
    w0 = construction_weights(world, 1.0, "pt", T_max=T_max)
    kt_rel, ov_rel = w0["relation"]
    kt_subj, ov_subj = w0["subject"]
    pop, how = population_batches(world, ft, n_demos, max_exact, n_mc, gen)
    evals = {
        "seen": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=ft),
        "heldout_query": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=ft, query_subjects=heldout),
        "all_heldout": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=heldout),
    }

    def accuracies(kr, ks, ovr):
        return {
            f"{name}@beta={b:g}": _icl_accuracy([b * kr, b * ks], [ovr, ov_subj], batch, V, T_max)
            for b in betas_eval
            for name, batch in evals.items()
        }

    def grads(kr, ks, ovr):
        kr, ks, ovr = (x.clone().requires_grad_(True) for x in (kr, ks, ovr))
        loss = _ce([beta_grad * kr, beta_grad * ks], [ovr, ov_subj], pop, V, T_max)
        g = torch.autograd.grad(loss, (kr, ks, ovr))
        return loss.item(), g[0] / beta_grad, g[1] / beta_grad, g[2]  # ∇_{W̃}/β for the KQs

    out = {
        "population": how,
        "eta": {"kq_subj": eta_kq_subj, "ov_rel": eta_ov_rel, "kq_rel": eta_kq_rel},
        "alpha2": eta_ov_rel / (c.n_types * check_n * U_L**2),
        "condition_lhs": cascade_condition(world, len(ft), n_demos),
        "condition_rhs": n_demos,
        "T_icl": check_n,
        "S_plus_2": c.grammar_len + 2,
    }
    out["alpha3"] = eta_kq_rel * (m - 1) ** 2 * out["alpha2"] / check_n
    out["condition_holds"] = out["condition_lhs"] < n_demos
    out["acc_step0"] = accuracies(kt_rel, kt_subj, ov_rel)
    loss0, g_rel, g_subj, g_ov = grads(kt_rel, kt_subj, ov_rel)
    proj = torch.eye(Bs.d) - _outer(Bs.sep, Bs.sep)
    kt_subj1 = kt_subj - eta_kq_subj * g_subj
    ov_rel1 = ov_rel - eta_ov_rel * g_ov @ proj
    out.update(
        loss_step0=loss0, grad_norm_kq_rel_step1=g_rel.norm().item(), grad_norm_kq_subj_step1=g_subj.norm().item()
    )
    out["acc_step1"] = accuracies(kt_rel, kt_subj1, ov_rel1)
    loss1, g_rel2, _, _ = grads(kt_rel, kt_subj1, ov_rel1)
    kt_rel2 = kt_rel - eta_kq_rel * g_rel2
    out.update(loss_step1=loss1, grad_norm_kq_rel_step2=g_rel2.norm().item())
    out["acc_step2"] = accuracies(kt_rel2, kt_subj1, ov_rel1)
    # learned coefficients (columns of [sep]; W̃ units)
    s = c.sep
    dsubj = (kt_subj1 - kt_subj)[:, s]
    drel = (kt_rel2 - kt_rel)[:, s]
    pos = Bs.pos_index
    attr_offsets = torch.tensor([1 - 3 * i for i in range(1, n_demos + 1)])
    other_offsets = torch.tensor([o for o in range(-(check_n - 1), 1) if o not in set(attr_offsets.tolist())])
    types = world.type_of_token()
    U_ids = torch.nonzero(types >= 0)[:, 0]
    same = types[U_ids][:, None] == types[U_ids][None, :]
    dov = (ov_rel1 - ov_rel)[U_ids][:, U_ids]
    out["coef"] = {
        "alpha1_kq_subj_prev_token": dsubj[pos(-1)].item(),
        "alpha1_predicted": predicted_alpha1(eta_kq_subj, n_demos, max(c.n_values)),
        "kq_subj_other_positions_mean": dsubj[pos(other_offsets[other_offsets != -1])].mean().item(),
        "ov_rel_same_type_attr_mean": dov[same].mean().item(),
        "ov_rel_cross_type_attr_mean": dov[~same].mean().item() if (~same).any() else 0.0,
        "kq_rel_attr_positions_mean": drel[pos(attr_offsets)].mean().item(),
        "kq_rel_attr_tokens_mean": drel[U_ids].mean().item(),
        "kq_rel_ft_subject_tokens_mean": drel[ft].mean().item(),
        "kq_rel_heldout_subject_tokens_mean": drel[heldout].mean().item() if len(heldout) else 0.0,
        "kq_rel_query_offset": drel[pos(-1)].item(),
    }
    out["weights"] = {"kt_rel": kt_rel2, "kt_subj": kt_subj1, "ov_rel": ov_rel1, "ov_subj": ov_subj}
    return out
