"""Theorem 2's two-step cascade (§4): finetuning dynamics from the Prop. 1 weights with gradients of the
population loss over ICL_rel sequences (exact enumeration when small, else Monte Carlo), and the theorem's
closed-form quantities (its condition, the previous-token coefficient α_1). The construction itself (Prop. 1-4,
the plain-torch forward of Eq. 1) is in ``models.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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


Weights = tuple[Float[torch.Tensor, "d d"], Float[torch.Tensor, "d d"], Float[torch.Tensor, "d d"]]


def _ce(kqs: Sequence[torch.Tensor], ovs: Sequence[torch.Tensor], batch: Batch, V: int, T_max: int) -> torch.Tensor:
    logits = functional_last_logits(batch.tokens, kqs, ovs, V, T_max)
    return F.cross_entropy(logits, batch.extras["target"])


def _icl_accuracy(kqs: Sequence[torch.Tensor], ovs: Sequence[torch.Tensor], batch: Batch, V: int, T_max: int) -> float:
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


@dataclass(frozen=True)
class Steps:
    """The cascade's step sizes: ``η_KQ^subj``, ``η_OV^rel``, ``η_KQ^rel``."""

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
    ) -> "Steps":
        """Step sizes through the theorem's scale-free constants where given: ``η_OV^rel = α_2 L T U_L²`` and
        ``η_KQ^rel = α_3 T / ((m-1)² α_2)``."""
        c = world.cfg
        T, U_L, m = 3 * (n_demos + 1) - 1, max(c.n_values), n_demos + 1
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

    def accuracies(self, kr: torch.Tensor, ks: torch.Tensor, ovr: torch.Tensor) -> dict[str, float]:
        V = self.world.V
        return {
            f"{name}@beta={b:g}": _icl_accuracy([b * kr, b * ks], [ovr, self.ov_subj], batch, V, self.T_max)
            for b in self.betas_eval
            for name, batch in self.evals.items()
        }

    def grads(
        self, kr: torch.Tensor, ks: torch.Tensor, ovr: torch.Tensor
    ) -> tuple[float, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Loss and ``(∇_{W̃_rel}/β, ∇_{W̃_subj}/β, ∇ W_OV^rel)`` of the population loss at ``β_grad``."""
        kr, ks, ovr = (x.clone().requires_grad_(True) for x in (kr, ks, ovr))
        b = self.beta_grad
        loss = _ce([b * kr, b * ks], [ovr, self.ov_subj], self.pop, self.world.V, self.T_max)
        g = torch.autograd.grad(loss, (kr, ks, ovr))
        return loss.item(), g[0] / b, g[1] / b, g[2]


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
) -> dict[str, Any]:
    """Theorem 2's two-step cascade from the Prop. 1 weights (2 heads), ``W_KQ^h = β W̃^h``.

    Step 1: one GD step on ``W̃_subj`` (``η_KQ^subj``, applied to ``∇_{W̃}/β``) and one *projected* step on
    ``W_OV^rel`` (``∇ (I - h([sep])h([sep])ᵀ)``, ``η_OV^rel``); ``W̃_rel`` gets no gradient (no relation tokens
    in ICL prompts). Step 2: one GD step on ``W̃_rel`` (``η_KQ^rel``) at the updated weights. ``W_OV^subj`` is
    frozen. ``alpha2`` / ``alpha3`` (optional) set the step sizes through the theorem's scale-free constants
    (:meth:`Steps.from_alphas`). Returns the gradient norms, the learned coefficients, and ICL accuracy after each
    step for query subjects seen in finetuning, held-out queries (demos from 𝒮'), and all-held-out prompts, at
    each β.
    """
    T_icl = 3 * (n_demos + 1) - 1
    if T_icl > T_max:
        raise WorldConfigError(f"ICL_rel length {T_icl} is longer than T_max={T_max}")
    eta = Steps.from_alphas(world, n_demos, eta_kq_subj, eta_ov_rel, eta_kq_rel, alpha2, alpha3)
    gen = torch.Generator().manual_seed(seed)
    w0 = construction_weights(world, 1.0, "pt", T_max=T_max)
    pop, how = population_batches(world, ft, n_demos, max_exact, n_mc, gen)
    evals = {
        "seen": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=ft),
        "heldout_query": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=ft, query_subjects=heldout),
        "all_heldout": sample_icl_rel(world, n_eval, n_demos, gen, demo_subjects=heldout),
    }
    run = _Cascade(world, T_max, pop, evals, w0["subject"][1], beta_grad, betas_eval)
    out = _cascade_header(world, ft, n_demos, eta, how)
    weights, steps = _cascade_steps(run, (w0["relation"][0], w0["subject"][0], w0["relation"][1]), eta)
    out.update(steps)
    out["coef"] = _coefficients(
        world, ft, heldout, n_demos, T_max, (w0["relation"][0], w0["subject"][0], w0["relation"][1]), weights
    )
    out["coef"]["alpha1_predicted"] = predicted_alpha1(eta.kq_subj, n_demos, max(world.cfg.n_values))
    out["weights"] = {"kt_rel": weights[0], "kt_subj": weights[1], "ov_rel": weights[2], "ov_subj": run.ov_subj}
    return out


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
        "alpha3": eta.kq_rel * (m - 1) ** 2 * alpha2 / T,
        "condition_holds": lhs < n_demos,
    }


def _cascade_steps(run: _Cascade, w0: Weights, eta: Steps) -> tuple[Weights, dict[str, Any]]:
    """Steps 1 and 2 from ``w0 = (W̃_rel, W̃_subj, W_OV^rel)``: the final weights and the losses, gradient norms
    and accuracies after each step."""
    kt_rel, kt_subj, ov_rel = w0
    out: dict[str, Any] = {"acc_step0": run.accuracies(kt_rel, kt_subj, ov_rel)}
    loss0, g_rel, g_subj, g_ov = run.grads(kt_rel, kt_subj, ov_rel)
    sep = Basis(run.world, run.T_max).sep
    proj = torch.eye(len(sep)) - outer(sep, sep)
    kt_subj1 = kt_subj - eta.kq_subj * g_subj
    ov_rel1 = ov_rel - eta.ov_rel * g_ov @ proj
    out.update(
        loss_step0=loss0, grad_norm_kq_rel_step1=g_rel.norm().item(), grad_norm_kq_subj_step1=g_subj.norm().item()
    )
    out["acc_step1"] = run.accuracies(kt_rel, kt_subj1, ov_rel1)
    loss1, g_rel2, _, _ = run.grads(kt_rel, kt_subj1, ov_rel1)
    kt_rel2 = kt_rel - eta.kq_rel * g_rel2
    out.update(loss_step1=loss1, grad_norm_kq_rel_step2=g_rel2.norm().item())
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
        "ov_rel_same_type_attr_mean": dov[same].mean().item(),
        "ov_rel_cross_type_attr_mean": dov[~same].mean().item() if (~same).any() else 0.0,
        "kq_rel_attr_positions_mean": drel[pos(attr_offsets)].mean().item(),
        "kq_rel_attr_tokens_mean": drel[U_ids].mean().item(),
        "kq_rel_ft_subject_tokens_mean": drel[ft].mean().item(),
        "kq_rel_heldout_subject_tokens_mean": drel[heldout].mean().item() if len(heldout) else 0.0,
        "kq_rel_query_offset": drel[pos(-1)].item(),
    }
