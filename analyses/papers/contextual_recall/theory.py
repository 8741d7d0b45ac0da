"""Theorem 2's two-step cascade (§4): finetuning dynamics from the Prop. 1 weights with gradients of the
population loss over ICL_rel sequences (exact enumeration when small, else Monte Carlo), and the theorem's
closed-form quantities (its condition, the previous-token coefficient α_1). The construction itself (Prop. 1-4,
the plain-torch forward of Eq. 1) is in ``models.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from jaxtyping import Float

from mechrecall.batch import Batch

from .data import World, all_icl_rel, population_size, sample_icl_rel
from .models import Basis, construction_weights, functional_last_logits, outer
from .presets import WorldConfigError

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


def theorem2_coefficients(
    M: int, L: int, U_L: int, n_demos: int, alpha1: float, alpha2: float, alpha3: float
) -> dict[str, float]:
    """Theorem 2's updated weights (App. C.2) read at the coefficients :func:`gd_cascade` measures (its ``coef``
    keys; ``W̃ = W_KQ / β`` units, change from the Prop. 1 weights): ``W̃_subj`` gains ``α_1 h(p_{-1})`` and nothing
    at the demonstration subjects' offsets; ``W_OV^rel`` gains ``(m-1) α_2`` on every same-type attribute pair and
    nothing across types; ``W̃_rel`` gains ``α_3 (2/(3 L U_L)) u + 1/(m-1) Σ_i p_attr_i - p/T - 1/(3M) Σ_s h(s))``,
    so ``α_3/(m-1) - α_3/T`` at an attribute position, ``-α_3/T`` at the query-subject offset ``p_{-1}`` (no term of
    its own), ``2α_3/(3 L U_L)`` on an attribute token and ``-α_3/(3M)`` on every subject token. ``α_1`` is the
    printed one (without the ``(1 - 1/m)`` our measurement finds, :func:`predicted_alpha1`); ``m = N_ft + 1``,
    ``T = 3m - 1``."""
    m, T = n_demos + 1, 3 * (n_demos + 1) - 1
    return {
        "alpha1_kq_subj_prev_token": alpha1,
        "kq_subj_demo_subject_offsets_mean": 0.0,
        "ov_rel_same_type_attr_mean": (m - 1) * alpha2,
        "ov_rel_cross_type_attr_mean": 0.0,
        "kq_rel_attr_positions_mean": alpha3 / (m - 1) - alpha3 / T,
        "kq_rel_attr_tokens_mean": 2 * alpha3 / (3 * L * U_L),
        "kq_rel_ft_subject_tokens_mean": -alpha3 / (3 * M),
        "kq_rel_heldout_subject_tokens_mean": -alpha3 / (3 * M),
        "kq_rel_query_offset": -alpha3 / T,
    }


# ------------------------------------------------------------------------- exact population gradient, large worlds


def soft_last_logits(
    X: torch.Tensor, kqs: Sequence[torch.Tensor], ovs: Sequence[torch.Tensor], V: int, T_max: int
) -> torch.Tensor:
    """Eq. 1 at the last position for *soft* inputs ``X`` (``[B, T, d]``: each row a mixture of one-hot tokens; the
    last token is ``[sep]`` in every row) — :func:`functional_last_logits` on one-hot rows."""
    T = X.shape[1]
    sep = int(X[0, -1, :V].argmax())
    P = torch.zeros(T, X.shape[2], dtype=X.dtype)
    P[torch.arange(T), V + T_max - 1 + (torch.arange(T) - (T - 1))] = 1.0
    heads = []
    for kq, ov in zip(kqs, ovs):
        alpha = ((X + P) @ kq[:, sep]).softmax(-1)
        heads.append(torch.einsum("btd,bt->bd", X, alpha) @ ov[:V].T)
    return sum(heads[1:], heads[0])


SoftRows = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def block_rows(world: World, ft: torch.Tensor, n_demos: int, ell: int, T_max: int, dtype: torch.dtype) -> SoftRows:
    """The rows whose weighted sum gives the exact population mean, over type ``ell``, of any function of an ICL_rel
    sequence that is a sum of terms each nonlinear in at most one demonstration block ``(s_i, a_i)`` (the query
    block ``(s_q, y)`` included) and linear in the others: the blocks are independent, so that mean is ``Σ_i
    E[f | block i drawn, the others at their means] - (m - 1) f(every block at its mean)``. Returns the soft inputs
    ``X`` ``[m M_ft + 1, T, d]``, soft targets ``Y`` ``[.., V]`` and the row weights ``w`` (summing to 1)."""
    V, m, M_ft = world.V, n_demos + 1, len(ft)
    d, T = V + T_max, 3 * m - 1
    eye = torch.eye(d, dtype=dtype)
    subj, attr = eye[ft], eye[world.attributes[ft, ell]]
    base = torch.zeros(T, d, dtype=dtype)
    base[1::3] = eye[world.cfg.sep]
    base[0::3] = subj.mean(0)
    base[2::3] = attr.mean(0)
    X = base.repeat(m * M_ft + 1, 1, 1)
    Y = attr[:, :V].mean(0).repeat(m * M_ft + 1, 1)
    for i in range(m):
        rows = slice(i * M_ft, (i + 1) * M_ft)
        X[rows, 3 * i] = subj
        if i < m - 1:
            X[rows, 3 * i + 2] = attr
        else:
            Y[rows] = attr[:, :V]
    w = torch.full((m * M_ft + 1,), 1 / M_ft, dtype=dtype)
    w[-1] = -(m - 1)
    return X, Y, w


def fixed_attention(kq: torch.Tensor, tokens: torch.Tensor, V: int, T_max: int, tol: float = 1e-9) -> bool:
    """Whether the head's scores at the last position are the same for every sequence in ``tokens`` (each position's
    score does not depend on which token sits there): its attention pattern is then fixed over the population."""
    T = tokens.shape[1]
    col = kq[:, tokens[0, -1]]
    scores = col[tokens] + col[V + T_max - 1 + (torch.arange(T) - (T - 1))]
    return bool((scores - scores[:1]).abs().max() <= tol * (1 + scores.abs().max()))


def balanced_split(world: World, groups: Sequence[torch.Tensor], seed: int) -> World:
    """``world`` with each type's values re-dealt so that every value is held by the same number of subjects inside
    each group (the finetuning subjects 𝒮' and the held-out ones): Theorem 2's proof takes the population over 𝒮'
    with ``Pr(a^ℓ = y) = 1/U_L`` ("each value appears on M/U_L subjects"), which a random 𝒮' of a balanced world
    does not give. Needs ``U_ℓ`` to divide every group's size."""
    gen = torch.Generator().manual_seed(seed)
    attributes = world.attributes.clone()
    for ell in range(world.cfg.n_types):
        values = world.value_ids(ell)
        for group in groups:
            if len(group) % len(values):
                raise WorldConfigError(f"{len(values)} values of type {ell} do not divide {len(group)} subjects evenly")
            dealt = values.repeat(len(group) // len(values))
            attributes[group, ell] = dealt[torch.randperm(len(group), generator=gen)]
    return replace(world, attributes=attributes)


Weights = tuple[Float[torch.Tensor, "d d"], Float[torch.Tensor, "d d"], Float[torch.Tensor, "d d"]]


def _ce(kqs: Sequence[torch.Tensor], ovs: Sequence[torch.Tensor], batch: Batch, V: int, T_max: int) -> torch.Tensor:
    logits = functional_last_logits(batch.tokens, kqs, ovs, V, T_max)
    return F.cross_entropy(logits, batch.extras["target"])


def hard_last_logits(
    tokens: torch.Tensor,
    kts: Sequence[torch.Tensor],
    ovs: Sequence[torch.Tensor],
    V: int,
    T_max: int,
    tol: float = 1e-9,
) -> torch.Tensor:
    """Eq. 1 at the last position in the hard-attention limit ``β → ∞`` of ``W_KQ^h = β W̃^h`` (``kts``: the
    ``W̃``): each head attends uniformly to the keys whose score ``(x_i + p_i)ᵀ W̃ x_T`` is within ``tol`` (relative)
    of the largest, so exact ties share the attention as they do for every finite β."""
    _Bn, T = tokens.shape
    q = tokens[:, -1]
    pidx = V + T_max - 1 + (torch.arange(T) - (T - 1))
    heads = []
    for kt, ov in zip(kts, ovs):
        col = kt[:, q].T
        scores = col.gather(1, tokens) + col[:, pidx]
        top = scores.max(-1, keepdim=True).values
        alpha = (scores >= top - tol * (1 + top.abs())).to(scores.dtype)
        alpha = alpha / alpha.sum(-1, keepdim=True)
        heads.append(torch.einsum("vbi,bi->bv", ov[:V][:, tokens], alpha))
    return sum(heads[1:], heads[0])


def _icl_accuracy(
    kts: Sequence[torch.Tensor], ovs: Sequence[torch.Tensor], batch: Batch, V: int, T_max: int, beta: float
) -> float:
    """Last-token accuracy of ``W_KQ^h = β W̃^h`` (``β = inf``: the hard-attention limit)."""
    with torch.no_grad():
        if math.isinf(beta):
            logits = hard_last_logits(batch.tokens, kts, ovs, V, T_max)
        else:
            logits = functional_last_logits(batch.tokens, [beta * k for k in kts], ovs, V, T_max)
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


@dataclass(frozen=True)
class Steps:
    """The cascade's step sizes: ``η_KQ^subj``, ``η_OV^rel``, ``η_KQ^rel`` (applied to ``∇_{W̃}/β``)."""

    kq_subj: float = 2.0
    ov_rel: float = 40.0
    kq_rel: float = 40.0

    @staticmethod
    def from_alphas(
        world: World,
        n_demos: int,
        kq_subj: float,
        ov_rel: float,
        kq_rel: float,
        alpha2: float | None,
        alpha3: float | None,
        alpha1: float | None = None,
    ) -> "Steps":
        """Step sizes through Theorem 2's scale-free constants where given: ``η_KQ^subj = α_1 m / (1 - 1/U_L)``
        (its definition ``α_1 := η m⁻¹ (1 - U_L⁻¹)``), ``η_OV^rel = α_2 L T U_L²`` and ``η_KQ^rel = α_3 T / ((m-1)²
        α_2)`` (``α_3 := η (m-1)² α_2`` with the ``1/T`` the printed definition lacks)."""
        c = world.cfg
        T, U_L, m = 3 * (n_demos + 1) - 1, max(c.n_values), n_demos + 1
        if alpha1 is not None:
            kq_subj = alpha1 * m / (1 - 1 / U_L)
        if alpha2 is not None:
            ov_rel = alpha2 * c.n_types * T * U_L**2
        if alpha3 is not None:
            kq_rel = alpha3 * T / ((m - 1) ** 2 * (ov_rel / (c.n_types * T * U_L**2)))
        return Steps(kq_subj, ov_rel, kq_rel)


@dataclass
class _Cascade:
    """What every step of the cascade shares: the world, the population, the frozen subject OV, β's."""

    world: World
    T_max: int
    pop: Batch
    evals: dict[str, Batch]
    ov_subj: torch.Tensor
    beta_grad: float
    betas_eval: Sequence[float]
    rows: list[SoftRows] | None = None  # block_rows per type where the population is sampled, not enumerated

    def accuracies(self, kr: torch.Tensor, ks: torch.Tensor, ovr: torch.Tensor) -> dict[str, float]:
        V = self.world.V
        return {
            f"{name}@beta={b:g}": _icl_accuracy([kr, ks], [ovr, self.ov_subj], batch, V, self.T_max, b)
            for b in self.betas_eval
            for name, batch in self.evals.items()
        }

    def grads(self, kr: torch.Tensor, ks: torch.Tensor, ovr: torch.Tensor) -> tuple[float, Weights, Weights]:
        """Loss and ``(∇_{W̃_rel}/β, ∇_{W̃_subj}/β, ∇ W_OV^rel)`` of the population loss at ``β_grad``: over the
        population when it is enumerated, else :meth:`control_variate`."""
        kr, ks, ovr = (x.clone().requires_grad_(True) for x in (kr, ks, ovr))
        b, V = self.beta_grad, self.world.V
        logits = functional_last_logits(self.pop.tokens, [b * kr, b * ks], [ovr, self.ov_subj], V, self.T_max)
        loss = F.cross_entropy(logits, self.pop.extras["target"])
        g = torch.autograd.grad(loss, (kr, ks, ovr), retain_graph=self.rows is not None)
        full = (g[0] / b, g[1] / b, g[2])
        if self.rows is None:
            return loss.item(), full, full
        return loss.item(), self.control_variate((kr, ks, ovr), logits, full), full

    def control_variate(self, w: Weights, logits: torch.Tensor, full: Weights) -> Weights:
        """The population gradient as ``E[∇ ℓ_c]`` (exact, :func:`block_rows`) ``+`` the sample mean of ``∇ ℓ - ∇ ℓ_c``,
        where ``ℓ_c = (c - h(y))ᵀ logits`` is the cross-entropy with its softmax frozen at the sample mean ``c``:
        ``∇ ℓ_c`` carries the target's part of the gradient, whose sampling noise would otherwise dominate; only the
        softmax's small fluctuation around ``c`` is sampled. Exact for a head's ``W̃`` only where its attention is
        the same over the population (:func:`fixed_attention`); elsewhere that head keeps the sample gradient."""
        b, V, kr, ks, ovr = self.beta_grad, self.world.V, *w
        assert self.rows is not None  # only called with the enumerated rows (``block_rows``)
        c = logits.detach().softmax(-1).mean(0)
        onehot = F.one_hot(self.pop.extras["target"], V).to(logits.dtype)
        g_mc = torch.autograd.grad(((c - onehot) * logits).sum(-1).mean(), (kr, ks, ovr))
        exact = [torch.zeros_like(x) for x in w]
        for X, Y, wt in self.rows:
            soft = soft_last_logits(X, [b * kr, b * ks], [ovr, self.ov_subj], V, self.T_max)
            lin = (wt[:, None] * (c - Y) * soft).sum() / len(self.rows)
            exact = [e + g for e, g in zip(exact, torch.autograd.grad(lin, (kr, ks, ovr)))]
        out = [f + e / s - m / s for f, e, m, s in zip(full, exact, g_mc, (b, b, 1.0))]
        for i, kq in enumerate((kr, ks)):
            if not fixed_attention(kq.detach(), self.pop.tokens, V, self.T_max):
                out[i] = full[i]
        return out[0], out[1], out[2]


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
    alpha1: float | None = None,
    max_exact: int = 20000,
    n_mc: int = 4096,
    n_eval: int = 1024,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> dict[str, Any]:
    """Theorem 2's two-step cascade from the Prop. 1 weights (2 heads), ``W_KQ^h = β W̃^h``.

    Step 1: one GD step on ``W̃_subj`` (``η_KQ^subj``, applied to ``∇_{W̃}/β``) and one *projected* step on
    ``W_OV^rel`` (``∇ (I - h([sep])h([sep])ᵀ)``, ``η_OV^rel``); ``W̃_rel`` gets no gradient (no relation tokens
    in ICL prompts). Step 2: one GD step on ``W̃_rel`` (``η_KQ^rel``) at the updated weights. ``W_OV^subj`` is
    frozen. ``alpha1`` / ``alpha2`` / ``alpha3`` (optional) set the step sizes through the theorem's scale-free
    constants (:meth:`Steps.from_alphas`); ``β = inf`` in ``betas_eval`` is the hard-attention limit. Where the
    population is too large to enumerate, its gradient is :meth:`_Cascade.control_variate`'s. Returns the gradient
    norms, the learned coefficients, and ICL accuracy after each step for query subjects seen in finetuning,
    held-out queries (demos from 𝒮'), and all-held-out prompts, at each β.
    """
    T_icl = 3 * (n_demos + 1) - 1
    if T_icl > T_max:
        raise WorldConfigError(f"ICL_rel length {T_icl} is longer than T_max={T_max}")
    eta = Steps.from_alphas(world, n_demos, eta_kq_subj, eta_ov_rel, eta_kq_rel, alpha2, alpha3, alpha1)
    gen = torch.Generator().manual_seed(seed)
    w0 = {
        k: (kq.to(dtype), ov.to(dtype)) for k, (kq, ov) in construction_weights(world, 1.0, "pt", T_max=T_max).items()
    }
    pop, how = population_batches(world, ft, n_demos, max_exact, n_mc, gen)
    evals = {
        "seen": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=ft),
        "heldout_query": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=ft, query_subjects=heldout),
        "all_heldout": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=heldout),
    }
    rows = None
    if not how.startswith("exact"):
        rows = [block_rows(world, ft, n_demos, ell, T_max, dtype) for ell in range(world.cfg.n_types)]
        how += ", the target's part of the gradient exact (control variate)"
    run = _Cascade(world, T_max, pop, evals, w0["subject"][1], beta_grad, betas_eval, rows)
    out = _cascade_header(world, ft, n_demos, eta, how)
    weights, steps = _cascade_steps(run, (w0["relation"][0], w0["subject"][0], w0["relation"][1]), eta)
    out.update(steps)
    start = (w0["relation"][0], w0["subject"][0], w0["relation"][1])
    out.update(_learned_vs_theorem(world, ft, heldout, n_demos, T_max, start, weights, eta, out))
    out["weights"] = {"kt_rel": weights[0], "kt_subj": weights[1], "ov_rel": weights[2], "ov_subj": run.ov_subj}
    return out


def _learned_vs_theorem(
    world: World,
    ft: torch.Tensor,
    heldout: torch.Tensor,
    n_demos: int,
    T_max: int,
    start: tuple[torch.Tensor, ...],
    weights: tuple[torch.Tensor, ...],
    eta: Steps,
    out: dict[str, Any],
) -> dict[str, Any]:
    """The coefficients the cascade learned (``coef``) beside Theorem 2's (``coef_theorem2``)."""
    coef = _coefficients(world, ft, heldout, n_demos, T_max, start, weights)
    coef["alpha1_predicted"] = predicted_alpha1(eta.kq_subj, n_demos, max(world.cfg.n_values))
    c = world.cfg
    theorem = theorem2_coefficients(
        c.n_subjects, c.n_types, max(c.n_values), n_demos, out["alpha1"], out["alpha2"], out["alpha3"]
    )
    return {"coef": coef, "coef_theorem2": theorem}


def _cascade_header(world: World, ft: torch.Tensor, n_demos: int, eta: Steps, how: str) -> dict[str, Any]:
    """The cascade's settings: population, step sizes and their scale-free constants, Theorem 2's condition."""
    c = world.cfg
    T, U_L, m = 3 * (n_demos + 1) - 1, max(c.n_values), n_demos + 1
    alpha2 = eta.ov_rel / (c.n_types * T * U_L**2)
    lhs = cascade_condition(world, len(ft), n_demos)
    return {
        "population": how,
        "eta": {"kq_subj": eta.kq_subj, "ov_rel": eta.ov_rel, "kq_rel": eta.kq_rel},
        "alpha2": alpha2,
        "condition_lhs": lhs,
        "condition_rhs": n_demos,
        "T_icl": T,
        "S_plus_2": c.grammar_len + 2,
        "alpha1": eta.kq_subj / m * (1 - 1 / U_L),
        "alpha3": eta.kq_rel * (m - 1) ** 2 * alpha2 / T,
        "condition_holds": lhs < n_demos,
    }


def _cascade_steps(run: _Cascade, w0: Weights, eta: Steps) -> tuple[Weights, dict[str, Any]]:
    """Steps 1 and 2 from ``w0 = (W̃_rel, W̃_subj, W_OV^rel)``: the final weights and the losses, gradient norms
    and accuracies after each step."""
    kt_rel, kt_subj, ov_rel = w0
    out: dict[str, Any] = {"acc_step0": run.accuracies(kt_rel, kt_subj, ov_rel)}
    loss0, (g_rel, g_subj, g_ov), _ = run.grads(kt_rel, kt_subj, ov_rel)
    sep = Basis(run.world, run.T_max).sep
    proj = (torch.eye(len(sep)) - outer(sep, sep)).to(g_ov.dtype)
    kt_subj1 = kt_subj - eta.kq_subj * g_subj
    ov_rel1 = ov_rel - eta.ov_rel * g_ov @ proj
    out.update(
        loss_step0=loss0,
        grad_norm_kq_rel_step1=g_rel.norm().item(),
        grad_norm_kq_subj_step1=g_subj.norm().item(),
        grad_norm_ov_rel_step1=(g_ov @ proj).norm().item(),  # the projected gradient the step applies
    )
    out["acc_step1"] = run.accuracies(kt_rel, kt_subj1, ov_rel1)
    loss1, (g_rel2, _, _), _ = run.grads(kt_rel, kt_subj1, ov_rel1)
    kt_rel2 = kt_rel - eta.kq_rel * g_rel2
    # the cascade's control: step 2's W̃_rel gradient with W_OV^rel left at Prop. 1's (only step 1's W̃_subj step
    # taken): the relation head then writes nothing on ICL_rel, so W̃_rel gets no gradient — step 1's OV update is
    # what gives it one. (The plain population / sample gradient: zero for every sequence.)
    _, _, (g_rel2_frozen, _, _) = replace(run, rows=None).grads(kt_rel, kt_subj1, ov_rel)
    out.update(
        loss_step1=loss1,
        grad_norm_kq_rel_step2=g_rel2.norm().item(),
        grad_norm_kq_rel_step2_ov_frozen=g_rel2_frozen.norm().item(),
    )
    out["acc_step2"] = run.accuracies(kt_rel2, kt_subj1, ov_rel1)
    return (kt_rel2, kt_subj1, ov_rel1), out


def _coefficients(
    world: World, ft: torch.Tensor, heldout: torch.Tensor, n_demos: int, T_max: int, w0: Weights, w2: Weights
) -> dict[str, float]:
    """The learned coefficients (columns of ``[sep]``, ``W̃`` units) from ``w0`` to ``w2``."""
    c = world.cfg
    T = 3 * (n_demos + 1) - 1
    s = c.sep
    dsubj = (w2[1] - w0[1])[:, s]
    drel = (w2[0] - w0[0])[:, s]
    pos = Basis(world, T_max).pos_index
    attr_offsets = torch.tensor([1 - 3 * i for i in range(1, n_demos + 1)])
    other_offsets = torch.tensor([o for o in range(-(T - 1), 1) if o not in set(attr_offsets.tolist())])
    types = world.type_of_token()
    U_ids = torch.nonzero(types >= 0)[:, 0]
    same = types[U_ids][:, None] == types[U_ids][None, :]
    dov = (w2[2] - w0[2])[U_ids][:, U_ids]
    return {
        "alpha1_kq_subj_prev_token": dsubj[pos(-1)].item(),
        "kq_subj_other_positions_mean": dsubj[pos(other_offsets[other_offsets != -1])].mean().item(),
        "kq_subj_demo_subject_offsets_mean": dsubj[pos(attr_offsets - 2)].mean().item(),
        "ov_rel_same_type_attr_mean": dov[same].mean().item(),
        "ov_rel_cross_type_attr_mean": dov[~same].mean().item() if (~same).any() else 0.0,
        "kq_rel_attr_positions_mean": drel[pos(attr_offsets)].mean().item(),
        "kq_rel_attr_tokens_mean": drel[U_ids].mean().item(),
        "kq_rel_ft_subject_tokens_mean": drel[ft].mean().item(),
        "kq_rel_heldout_subject_tokens_mean": drel[heldout].mean().item() if len(heldout) else 0.0,
        "kq_rel_query_offset": drel[pos(-1)].item(),
    }
