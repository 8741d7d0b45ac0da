"""Train and measure: the pretraining and finetuning runs of §3 (World-G, Model A) and §4 (World-R, Model B / B′)
on the one trainer, the construction part's measurements (Prop. 1-4, Theorem 2's cascade), and what each part
reads off its trained models — functions returning results dictionaries (no claims, no figures).

Every run is resumable (its checkpoints live in the run folder). Metrics over training (Figs. 2-4, 15, 19,
24) are the four final-token matches of Fig. 1 on fresh, fixed evaluation sets: PT sequences (last
subsequence forced factual), ICL with query subjects seen in finetuning or held out (demonstrations from the
same pool as the query), and for World-G ICL+Grm with S_ft = 1 (Fig. 15).
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from mechrecall._tl import HookedTransformer, load_tl_state_dict, tl_state_dict
from mechrecall.batch import Batch
from mechrecall.builder import build_from_spec, model_spec
from mechrecall.controls import untrained_controls
from mechrecall.trainer import TrainConfig, train
from mechrecall.typed import NotApplicable

from . import metrics as M
from .data import (
    LOSS_READINGS,
    World,
    build_world,
    check_task,
    prefix_subjects,
    sample_icl,
    sample_icl_rel,
    sample_pt,
    sample_pt_rel,
    split_subjects,
    with_loss,
)
from .models import (
    Basis,
    build_model_a,
    build_model_b,
    construction_model,
    construction_weights,
    outer,
    world_r_ctx,
)
from .presets import CONSTRUCTION_WORLD, CascadeWorld, ContextualRecallPreset, RunG, RunR, WorldConfigError
from .theory import balanced_split, gd_cascade

EVAL_SEED = 10_000


@dataclass
class Trained:
    world: World
    ft: torch.Tensor
    heldout: torch.Tensor
    model_pt: HookedTransformer
    models_ft: dict[str, HookedTransformer]
    history_pt: dict[str, Any]
    history_ft: dict[str, dict[str, Any]]
    evals: dict[str, Batch]


def _copy(model: HookedTransformer) -> HookedTransformer:
    new = build_from_spec(model_spec(model))
    load_tl_state_dict(new, tl_state_dict(model))
    return new if model.cfg.device is None else new.to(model.cfg.device)


def g_ctx(run: RunG) -> int:
    """Model A's context: the longest of PT, ICL and ICL+Grm inputs."""
    c = run.world
    m = run.n_demos + 1
    return max(c.pt_len, (run.grm_len[1] + 3) * m - 1) - 1


def check_run_g(run: RunG) -> World:
    """World-G run consistency, before any training (errors name the value)."""
    world = build_world(run.world)
    ft, ho = split_subjects(world, run.n_finetune, run.world.seed)
    if len(ho) == 0:
        raise WorldConfigError(f"n_finetune={run.n_finetune} leaves no held-out subject (M={run.world.n_subjects})")
    check_task(world, n_demos=run.n_demos, pools=(ft, ho))
    if run.ft_loss not in LOSS_READINGS:
        raise WorldConfigError(f"ft_loss={run.ft_loss!r}; expected one of {LOSS_READINGS}")
    return world


def check_run_r(run: RunR, n_ctx: int | None = None) -> World:
    world = build_world(run.world)
    ft, ho = split_subjects(world, run.n_finetune, run.world.seed)
    if len(ho) == 0:
        raise WorldConfigError(f"n_finetune={run.n_finetune} leaves no held-out subject (M={run.world.n_subjects})")
    check_task(world, n_demos=run.n_demos, pools=(ft, ho))
    if run.pt_loss not in LOSS_READINGS:
        raise WorldConfigError(f"pt_loss={run.pt_loss!r}; expected one of {LOSS_READINGS}")
    if n_ctx is not None:
        check_task(world, n_ctx=n_ctx, seq_len=world_r_ctx(run.world, run.n_demos))
    return world


def _metric_evals(
    world: World, batches: dict[str, Batch]
) -> dict[str, Callable[[HookedTransformer], dict[str, float]]]:
    return {name: functools.partial(_recall, batch=b, world=world) for name, b in batches.items()}


def _recall(model: HookedTransformer, *, batch: Batch, world: World) -> dict[str, float]:
    return M.recall_metrics(model, batch, world)


#: the finetuning distributions of Model A: ``ICL`` (Fig. 3), ``ICL+Grm`` with S_ft ~ U{1..5} (Fig. 4), and a
#: control (not in the paper): ICL prompts whose subject tokens are redrawn, so that no pair is a stored fact
FINETUNE_KINDS = ("ICL", "ICLGrm", "ICL_shuffled_subjects")


def ft_key(kind: str, loss: str) -> str:
    """The name of a finetuning of ``kind`` with its loss on the positions of ``loss`` (:data:`LOSS_READINGS`):
    ``kind`` itself under the literal reading ``all`` (the names, folders and results keys of earlier runs),
    ``<kind>_loss_<loss>`` otherwise — the key of ``Trained.models_ft`` / ``history_ft`` and ``out/ft_<key>``."""
    return kind if loss == "all" else f"{kind}_loss_{loss}"


def _icl_sampler(
    world: World, run: RunG, ft: torch.Tensor, kind: str, loss: str
) -> Callable[[int, torch.Generator], Batch]:
    if kind not in FINETUNE_KINDS:
        raise WorldConfigError(f"finetuning kind {kind!r}; expected one of {FINETUNE_KINDS}")
    if loss not in LOSS_READINGS:
        raise WorldConfigError(f"loss reading {loss!r}; expected one of {LOSS_READINGS}")
    grm = run.grm_len if kind == "ICLGrm" else 0
    shuffle = kind == "ICL_shuffled_subjects"

    def sample(step: int, gen: torch.Generator) -> Batch:
        b = sample_icl(world, run.batch, run.n_demos, gen, demo_subjects=ft, grammar_len=grm, shuffle_subjects=shuffle)
        return with_loss(b, world, loss)

    return sample


def _g_config(run: RunG, seed: int, progress: bool) -> TrainConfig:
    """Model A's pretraining recipe (minGPT's AdamW and decay groups); finetuning changes steps, lr and seed."""
    no_decay = (
        {"params": ("embed.W_E", "pos_embed.W_pos", "blocks.*.ln*", "ln_final.*", "*.b_*"), "weight_decay": 0.0},
    )  # minGPT's decay groups
    return TrainConfig(
        steps=run.pt_steps,
        optimizer="adamw",
        lr=run.pt_lr,
        betas=(0.9, 0.95),
        weight_decay=run.weight_decay,
        param_groups=no_decay,
        grad_clip=1.0,
        loss_positions="mask",
        eval_every=run.pt_eval_every,
        checkpoint_every=run.checkpoint_every,
        seed=seed,
        progress=progress,
    )


def train_g(
    run: RunG,
    seed: int,
    out: Path,
    *,
    device: str | None = None,
    progress: bool = False,
    finetune: Sequence[str] = ("ICL", "ICLGrm"),
    iclgrm_losses: Sequence[str] = (),
) -> Trained:
    """Pretrain Model A on PT (``out/pt``), then finetune copies on each of ``finetune`` (:data:`FINETUNE_KINDS`)
    over the finetuning subjects with the loss on ``run.ft_loss``'s positions, and on ICL+Grm once more under each
    other reading of ``iclgrm_losses`` (``out/ft_<key>``, :func:`finetune_g`, :func:`ft_key`). Resumable: a
    finished run is loaded from its checkpoints without training."""
    world = check_run_g(run)
    ft, ho = split_subjects(world, run.n_finetune, seed)
    model = build_model_a(world.V, g_ctx(run), run.d_model, seed=seed)
    if device:
        model.to(device)
    eg = torch.Generator().manual_seed(EVAL_SEED + seed)
    N = run.n_demos
    batches = {
        "PT": sample_pt(world, run.n_eval, eg, force_last_factual=True),
        "ICL_seen": sample_icl(world, run.n_eval, N, eg, demo_subjects=ft),
        "ICL_heldout": sample_icl(world, run.n_eval, N, eg, demo_subjects=ho),
        "ICLGrm1_seen": sample_icl(world, run.n_eval, N, eg, demo_subjects=ft, grammar_len=1),
        "ICLGrm1_heldout": sample_icl(world, run.n_eval, N, eg, demo_subjects=ho, grammar_len=1),
    }
    tc = _g_config(run, seed, progress)
    res = train(
        model,
        lambda step, gen: sample_pt(world, run.batch, gen),
        tc,
        evals=_metric_evals(world, batches),
        out_dir=out / "pt",
    )
    tr = Trained(world, ft, ho, model, {}, res.history, {}, batches)
    for kind in finetune:
        finetune_g(tr, run, seed, out, kind, progress=progress)
    for loss in iclgrm_losses:
        if loss != run.ft_loss:
            finetune_g(tr, run, seed, out, "ICLGrm", loss=loss, progress=progress)
    return tr


def finetune_g(
    tr: Trained, run: RunG, seed: int, out: Path, kind: str, *, loss: str | None = None, progress: bool = False
) -> HookedTransformer:
    """Finetune a copy of the pretrained Model A ``tr.model_pt`` on ``kind`` (one of :data:`FINETUNE_KINDS`) over
    the finetuning subjects ``tr.ft`` with the loss on the positions of ``loss`` (:data:`LOSS_READINGS`; default
    ``run.ft_loss``) (§3.2: ``run.ft_steps`` steps at ``run.ft_lr``, the pretraining recipe otherwise), tracked on
    ``tr.evals``; resumable in ``out/ft_<key>`` (:func:`ft_key`). Stores the model and its history in
    ``tr.models_ft[key]`` / ``tr.history_ft[key]`` and returns the model."""
    loss = run.ft_loss if loss is None else loss
    key = ft_key(kind, loss)
    tc = _g_config(run, seed, progress)
    tcf = replace(tc, steps=run.ft_steps, lr=run.ft_lr, eval_every=run.ft_eval_every, seed=seed + 1)
    sampler = _icl_sampler(tr.world, run, tr.ft, kind, loss)
    m = _copy(tr.model_pt)
    r = train(m, sampler, tcf, evals=_metric_evals(tr.world, tr.evals), out_dir=out / f"ft_{key}")
    tr.models_ft[key], tr.history_ft[key] = m, r.history
    return m


def train_r(
    run: RunR, seed: int, out: Path, *, positions: str = "relative", device: str | None = None, progress: bool = False
) -> Trained:
    """Pretrain Model B (or B′) on PT_rel (cosine lr; the loss on ``run.pt_loss``'s positions, every next token by
    default), then finetune a copy on ICL_rel over the finetuning subjects with the last-token loss (constant lr)."""
    world = check_run_r(run)
    ft, ho = split_subjects(world, run.n_finetune, seed)
    n_ctx = world_r_ctx(run.world, run.n_demos)
    model = build_model_b(world.V, n_ctx, d_head=run.d_head, n_heads=run.n_heads, positions=positions, seed=seed)
    if device:
        model.to(device)
    eg = torch.Generator().manual_seed(EVAL_SEED + seed)
    N = run.n_demos
    batches = {
        "PT": sample_pt_rel(world, run.n_eval, eg),
        "ICL_seen": sample_icl_rel(world, run.n_eval, N, eg, demo_subjects=ft),
        "ICL_heldout": sample_icl_rel(world, run.n_eval, N, eg, demo_subjects=ho),
    }
    evals = _metric_evals(world, batches)
    tc = TrainConfig(
        steps=run.pt_steps,
        optimizer="adamw",
        lr=run.pt_lr,
        weight_decay=run.weight_decay,
        schedule="cosine",
        loss_positions="mask",
        eval_every=run.pt_eval_every,
        checkpoint_every=run.checkpoint_every,
        seed=seed,
        progress=progress,
    )
    res = train(
        model,
        lambda step, gen: with_loss(sample_pt_rel(world, run.batch, gen), world, run.pt_loss),
        tc,
        evals=evals,
        out_dir=out / "pt",
    )
    m = _copy(model)
    tcf = replace(
        tc, steps=run.ft_steps, lr=run.ft_lr, schedule="constant", eval_every=run.ft_eval_every, seed=seed + 1
    )  # fine-tuning: the same recipe at a constant learning rate
    r = train(
        m,
        lambda step, gen: sample_icl_rel(world, run.batch, N, gen, demo_subjects=ft),
        tcf,
        evals=evals,
        out_dir=out / "ft_ICL",
    )
    return Trained(world, ft, ho, model, {"ICL": m}, res.history, {"ICL": r.history}, batches)


def final(history: Mapping[str, Any]) -> dict[str, Any]:
    """The last evaluation row of a training history."""
    return history["eval"][-1]


def chance_exact(world: Any) -> float:
    """Exact-match chance of a uniform guess within the right type: mean over types of 1/M_ℓ."""
    return sum(1 / m for m in world.n_values) / world.n_types


# ------------------------------------------------------------------------------------------------ construction

#: today's cascade setting, kept as sensitivity rows: gradients at β = 8, η_KQ^subj = 2, α_2 = 0.25, α_3 = 5
CASCADE_ALPHA2, CASCADE_ALPHA3, CASCADE_BETA_GRAD, CASCADE_BETA = 0.25, 5.0, 8.0, 50.0
#: Theorem 2's own setting: the Prop. 1 weights at β = 40, its scale-free constants α = (α_1, α_2, α_3), the
#: accuracies at β = 40 and in the hard-attention limit β → ∞ (the theorem's statement)
THEOREM_BETA, THEOREM_ALPHAS = 40.0, (0.5, 0.25, 1.0)
CONSTRUCTION_BETA, CONSTRUCTION_DEMOS, CONSTRUCTION_FT = 20.0, 5, 32


def run_construction(params: ContextualRecallPreset, seed: int, *, sensitivity: bool = True) -> dict[str, Any]:
    """§4's constructions (Prop. 1-4) in a HookedTransformer, scored on PT_rel / ICL_rel with their controls, and
    Theorem 2's cascade in the preset's two worlds: in the theorem's setting (``cascade.holds``,
    ``cascade.paper_scale``) and, unless ``sensitivity=False``, in the earlier sensitivity setting
    (``cascade.sensitivity_*``, the ablation rows of the claims table)."""
    torch.manual_seed(seed)
    cfg = replace(CONSTRUCTION_WORLD, seed=seed)
    res: dict[str, Any] = {"world": asdict(cfg), "beta": CONSTRUCTION_BETA, "n_demos": CONSTRUCTION_DEMOS}
    res.update(_propositions(build_world(cfg), params.construction_samples, seed))
    holds, paper_scale = params.cascade
    res["cascade"] = {
        "holds": _cascade(holds, params, seed, expect_condition=True),
        "paper_scale": _cascade(paper_scale, params, seed, expect_condition=False),
    }
    if sensitivity:
        res["cascade"]["sensitivity_holds"] = _cascade(holds, params, seed, expect_condition=True, theorem=False)
        res["cascade"]["sensitivity_paper_scale"] = _cascade(
            paper_scale, params, seed, expect_condition=False, theorem=False
        )
    res["cascade_settings"] = {
        "theorem": {"beta_grad": THEOREM_BETA, "alphas": list(THEOREM_ALPHAS), "beta_eval": [THEOREM_BETA, "inf"]},
        "sensitivity": {
            "alpha2": CASCADE_ALPHA2,
            "alpha3": CASCADE_ALPHA3,
            "beta_grad": CASCADE_BETA_GRAD,
            "beta_eval": CASCADE_BETA,
            "eta_kq_subj": 2.0,
        },
    }
    return res


def _propositions(world: World, n: int, seed: int) -> dict[str, Any]:
    """Prop. 1-4's weights scored on ``n`` PT_rel / ICL_rel sequences, Prop. 2 restricted to a small U', and each
    claim's control: the subject head removed (factual recall), Prop. 2 (no ICL), the query-position term removed
    (contextual recall), U' = U (values never seen)."""
    T = world_r_ctx(world.cfg, CONSTRUCTION_DEMOS)
    ft, ho = split_subjects(world, CONSTRUCTION_FT, seed)
    gen = torch.Generator().manual_seed(seed)
    pt = sample_pt_rel(world, n, gen)
    icl_all = sample_icl_rel(world, n, CONSTRUCTION_DEMOS, gen, demo_subjects=torch.arange(world.cfg.n_subjects))
    icl_ho = sample_icl_rel(world, n, CONSTRUCTION_DEMOS, gen, demo_subjects=ft, query_subjects=ho)

    def model(mode: str, drop: str = "", **kw: Any) -> HookedTransformer:
        weights = construction_weights(world, CONSTRUCTION_BETA, mode, T_max=T, **kw)
        return construction_model(world, _without(weights, drop, world, T), T, seed)

    p1, p2 = model("pt"), model("icl")  # Prop. 2 with U' = U
    return {
        "prop1_pt_rel": M.recall_metrics(p1, pt, world),
        "prop1_pt_rel_no_subject_head": M.recall_metrics(model("pt", "subject_ov"), pt, world),
        "prop1_icl_rel": M.recall_metrics(p1, icl_all, world),
        "prop2_icl_rel_all": M.recall_metrics(p2, icl_all, world),
        "prop3_pt_rel": M.recall_metrics(model("pt", grammar_head=True), pt, world),
        "prop3_pt_rel_no_subject_head": M.recall_metrics(model("pt", "subject_ov", grammar_head=True), pt, world),
        "prop2_icl_rel_heldout": M.recall_metrics(p2, icl_ho, world),
        "prop2_icl_rel_heldout_no_query_term": M.recall_metrics(model("icl", "query_term"), icl_ho, world),
        "prop2_pt_rel": M.recall_metrics(p2, pt, world),
        "prop4_icl_rel_heldout": M.recall_metrics(model("icl", variant="appendix"), icl_ho, world),
        "prop4_icl_rel_heldout_no_query_term": M.recall_metrics(
            model("icl", "query_term", variant="appendix"), icl_ho, world
        ),
        "prop2_restricted": _prop2_restricted(world, icl_ho, seed, model, p2),
    }


def _without(
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]], drop: str, world: World, T: int
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The construction with one mechanism removed: ``subject_ov`` (the subject head's facts, ``W_OV^subj = 0``) or
    ``query_term`` (Eq. 4's ``β h(p_{-1}) h([sep])ᵀ`` in ``W_KQ^subj``: the subject head back to Prop. 1's)."""
    if not drop:
        return weights
    kq, ov = weights["subject"]
    if drop == "subject_ov":
        ov = torch.zeros_like(ov)
    else:
        B = Basis(world, T)
        kq = kq - CONSTRUCTION_BETA * outer(B.p(-1), B.sep)
    return {**weights, "subject": (kq, ov)}


def _prop2_restricted(
    world: World, icl_ho: Batch, seed: int, model: Callable[..., HookedTransformer], full: HookedTransformer
) -> dict[str, Any]:
    """Prop. 2 with U' from 4 finetuning subjects: queries whose answer is outside U' must fail; the control is
    the same queries with U' = U (every value seen)."""
    small_ft, _ = split_subjects(world, 4, seed + 7)
    held = world.attributes[small_ft]
    target = icl_ho.extras["target"]
    in_u = (held.view(-1)[None, :] == target[:, None]).any(1) & torch.isin(icl_ho.tokens[:, 2::3], held).any(1)
    out_u = ~(held.view(-1)[None, :] == target[:, None]).any(1)
    pred = model("icl", ft_subjects=small_ft)(icl_ho.tokens)[:, -1].argmax(-1)
    pred_full = full(icl_ho.tokens)[:, -1].argmax(-1)

    def acc(p: torch.Tensor, rows: torch.Tensor) -> float | None:
        return (p[rows] == target[rows]).float().mean().item() if rows.any() else None

    return {
        "n_ft_subjects": 4,
        "acc_answer_and_a_demo_in_U'": acc(pred, in_u),
        "acc_answer_not_in_U'": acc(pred, out_u),
        "acc_answer_not_in_U'_with_U'=U": acc(pred_full, out_u),
    }


def _cascade(
    w: CascadeWorld, params: ContextualRecallPreset, seed: int, *, expect_condition: bool, theorem: bool = True
) -> dict[str, Any]:
    """Theorem 2's cascade in world ``w``: in the theorem's setting (``theorem``: the Prop. 1 weights at β = 40,
    step sizes from α = (0.5, 0.25, 1), every value equally frequent inside 𝒮', accuracies at β = 40 and β → ∞) or
    in the sensitivity setting (β = 8 gradients, α_3 = 5, a random 𝒮', accuracies at β = 8, 50, 200).
    ``step2_collapse`` holds the held-out accuracy after step 2 where the condition fails (else ``not_applicable``)."""
    cfg = w.world(seed)
    world = build_world(cfg)
    f, h = split_subjects(world, w.M_ft, seed)
    if theorem:
        world = balanced_split(world, (f, h), seed)
        a1, a2, a3 = THEOREM_ALPHAS
        setting = dict(beta_grad=THEOREM_BETA, betas_eval=(THEOREM_BETA, math.inf), alpha1=a1, alpha2=a2, alpha3=a3)
    else:
        setting = dict(
            beta_grad=CASCADE_BETA_GRAD,
            betas_eval=(CASCADE_BETA_GRAD, CASCADE_BETA, 200.0),
            alpha2=CASCADE_ALPHA2,
            alpha3=CASCADE_ALPHA3,
        )
    started = time.perf_counter()
    r = gd_cascade(
        world,
        f,
        h,
        n_demos=w.N_ft,
        T_max=world_r_ctx(cfg, w.N_ft),
        n_mc=params.cascade_mc,
        n_eval=params.cascade_eval,
        seed=seed,
        **setting,  # type: ignore[arg-type]
    )
    r.pop("weights")
    report = math.inf if theorem else CASCADE_BETA
    r.update(world=w.name, beta_report=f"{report:g}", seconds=time.perf_counter() - started)
    key = f"heldout_query@beta={report:g}"
    r["step2_heldout"], r["step1_heldout"] = r["acc_step2"][key], r["acc_step1"][key]
    r["step0_heldout"] = r["acc_step0"][key]
    fails = "U_L(U_L+N_ft)/M_ft < N_ft here: no collapse is predicted"
    r["step2_collapse"] = NotApplicable(not_applicable=fails) if r["condition_holds"] else r["step2_heldout"]
    if r["condition_holds"] != expect_condition:
        r["world_note"] = f"Theorem 2's condition {'holds' if r['condition_holds'] else 'fails'} in {w.name}"
    return r


# ------------------------------------------------------------------------------------------------ World-R


def measure_world_r(tr: Trained, run: RunR, positions: str, seconds: float, seed: int = 0) -> dict[str, Any]:
    """What the World-R part reads off its trained models: final metrics, head-role cosines (Figs. 10, 12), and
    the claims' controls (:func:`world_r_controls`)."""
    T = world_r_ctx(run.world, run.n_demos)
    cos_pt = M.head_role_cosines(tr.model_pt, tr.world, tr.evals["PT"], "pt", T)
    cos_ft = M.head_role_cosines(tr.models_ft["ICL"], tr.world, tr.evals["ICL_heldout"], "icl", T, tr.ft)
    return {
        "config": asdict(run),
        "positions": positions,
        "train_seconds": seconds,
        "chance_exact": chance_exact(run.world),
        "after_pt": final(tr.history_pt),
        "after_ft": final(tr.history_ft["ICL"]),
        "head_cosines_after_pt": cos_pt,
        "head_cosines_after_ft": cos_ft,
        "max_subject_cosine_after_pt": max(cos_pt["minus_U_all"]["subject"]),
        "max_relation_cosine_after_pt": max(cos_pt["minus_U_all"]["relation"]),
        "history_pt": tr.history_pt["eval"],
        "history_ft": tr.history_ft["ICL"]["eval"],
        **world_r_controls(tr, run, positions, seed),
    }


def world_r_controls(tr: Trained, run: RunR, positions: str, seed: int) -> dict[str, Any]:
    """The World-R claims' controls: ``at_init`` (PT_rel exact match and the max head cosines of the untrained
    Model B / B′ of ``seed`` and the next four, :func:`mechrecall.controls.untrained_controls`) and ``control``:
    Prop. 2's weights (U' = U, a model that does contextual recall) on the same held-out ICL_rel sequences, the
    number the 'at most chance after pretraining' claim must not reach."""
    T = world_r_ctx(run.world, run.n_demos)
    dev = tr.model_pt.cfg.device

    def build(s: int) -> HookedTransformer:
        m = build_model_b(tr.world.V, T, d_head=run.d_head, n_heads=run.n_heads, positions=positions, seed=s)
        return m.to(dev) if dev else m

    def measure(model: HookedTransformer) -> dict[str, float]:
        cos = M.head_role_cosines(model, tr.world, tr.evals["PT"], "pt", T)["minus_U_all"]
        pt = M.recall_metrics(model, tr.evals["PT"], tr.world)["exact"]
        return {"PT.exact": pt, "max_subject_cosine": max(cos["subject"]), "max_relation_cosine": max(cos["relation"])}

    prop2 = construction_model(tr.world, construction_weights(tr.world, CONSTRUCTION_BETA, "icl", T_max=T), T, seed)
    icl = M.recall_metrics(prop2.to(dev) if dev else prop2, tr.evals["ICL_heldout"], tr.world)["exact"]
    return {"at_init": untrained_controls(build, measure, seed), "control": {"prop2_icl_heldout": icl}}


# ------------------------------------------------------------------------------------------------ World-G

STEERING_BETAS = [round(0.1 * i, 1) for i in range(11)]


def measure_world_g(tr: Trained, run: RunG, seed: int, seconds: float) -> dict[str, Any]:
    """What the World-G part reads off its trained models: final metrics, the stage-wise gap (Fig. 2), task-vector
    clustering (Figs. 8, 16, 17) and steering (Figs. 8 right, 18) on held-out prompts."""
    pt_h = tr.history_pt
    gaps = [(r["step"], r["PT.attr_type"] - r["PT.exact"]) for r in pt_h["eval"]]
    max_gap_step, max_gap = max(gaps, key=lambda x: x[1])
    gen = torch.Generator().manual_seed(20_000 + seed)
    subj, ell = prefix_subjects(tr.world, run.K, run.max_t, gen, demo_subjects=tr.heldout)
    ts = list(range(run.max_t + 1))
    icl, grm = ft_key("ICL", run.ft_loss), ft_key("ICLGrm", run.ft_loss)
    model = tr.models_ft[icl]
    model.eval()
    clu = M.clustering_vs_demos(model, tr.world, subj, ell, ts)
    steer = M.steering_ranks(model, tr.world, subj, ell, STEERING_BETAS)
    clu_grm = M.clustering_vs_demos(tr.models_ft[grm].eval(), tr.world, subj, ell, ts)
    return {
        "config": asdict(run),
        "train_seconds": seconds,
        "div": {n: tr.world.div(n) for n in ("row_mean_l1", "entry_l1", "induced_l1")},
        "chance_exact": chance_exact(run.world),
        "after_pt": final(pt_h),
        "after_ft_icl": final(tr.history_ft[icl]),
        "after_ft_iclgrm": final(tr.history_ft[grm]),
        "stagewise_max_gap": {"step": max_gap_step, "type_minus_exact": max_gap},
        "clustering_ft_icl": clu,
        "clustering_ft_iclgrm": clu_grm,
        **_g_contrasts(clu, steer),
        "steering_ft_icl": steer,
        "steering_target_over_orig": steer["rank_target"][-1] / steer["rank_orig"][-1],
        "steering_crossing_beta": M.crossing_beta(steer),
        "history_pt": pt_h["eval"],
        "history_ft_icl": tr.history_ft[icl]["eval"],
        "history_ft_iclgrm": tr.history_ft[grm]["eval"],
        "at_init": world_g_controls(tr, run, seed, subj, ell, ts),
        **finding3(tr, run),
    }


def finding3(tr: Trained, run: RunG) -> dict[str, Any]:
    """Finding 3 (§3.2, Figs. 4, 15) under both readings of the finetuning loss: ``ft_loss`` (the reading of
    ``after_ft_icl`` / ``after_ft_iclgrm``), the ICL+Grm finetuning at the attribute-target reading
    (``after_ft_iclgrm_attributes`` and its history; the same run where ``ft_loss`` is ``attributes``), the
    samples one finetuning step sees (Fig. 4's x axis), and ``query_breakdown``: what each model answers at the
    held-out ICL queries (:func:`metrics.prediction_breakdown`: attribute / right type / grammar / other) —
    pretrained (before finetuning), finetuned on ICL, on ICL+Grm at ``ft_loss``, at ``attributes``."""
    attr = ft_key("ICLGrm", "attributes")
    models = {
        "pretrained": tr.model_pt,
        "ft_icl": tr.models_ft[ft_key("ICL", run.ft_loss)],
        "ft_iclgrm": tr.models_ft[ft_key("ICLGrm", run.ft_loss)],
        "ft_iclgrm_attributes": tr.models_ft[attr],
    }
    held = tr.evals["ICL_heldout"]
    return {
        "ft_loss": run.ft_loss,
        "samples_per_ft_step": run.batch,
        "after_ft_iclgrm_attributes": final(tr.history_ft[attr]),
        "history_ft_iclgrm_attributes": tr.history_ft[attr]["eval"],
        "query_breakdown": {k: M.prediction_breakdown(m, held, tr.world) for k, m in models.items()},
    }


def _g_contrasts(clu: Mapping[str, Any], steer: Mapping[str, Any]) -> dict[str, float]:
    """The World-G contrasts (≈ 0 at init, either sign): the silhouette rise of layer-2 attention from t = 0 to
    t = max, layer-2 minus layer-1 attention at t = max, and ln(mean rank original / mean rank target) at β = 1
    (> 0: the target outranks the original)."""
    sil = clu["silhouette"]
    return {
        "silhouette_rise": sil["L2_attn_out"][-1] - sil["L2_attn_out"][0],
        "silhouette_l2_minus_l1": sil["L2_attn_out"][-1] - sil["L1_attn_out"][-1],
        "steering_log_orig_over_target": math.log(steer["rank_orig"][-1] / steer["rank_target"][-1]),
    }


def world_g_controls(
    tr: Trained, run: RunG, seed: int, subj: torch.Tensor, ell: torch.Tensor, ts: Sequence[int]
) -> dict[str, Any]:
    """The World-G claims' controls: each measurement on the untrained Model A of ``seed`` and the next four
    (:func:`mechrecall.controls.untrained_controls`): PT exact match, the stage-wise gap (attribute type minus
    exact on PT), and the contrasts of :func:`_g_contrasts` on the same held-out prompts ``subj``, ``ell``."""
    dev = tr.model_pt.cfg.device

    def build(s: int) -> HookedTransformer:
        m = build_model_a(tr.world.V, g_ctx(run), run.d_model, seed=s).eval()
        return m.to(dev) if dev else m

    def measure(model: HookedTransformer) -> dict[str, float]:
        pt = M.recall_metrics(model, tr.evals["PT"], tr.world)
        clu = M.clustering_vs_demos(model, tr.world, subj, ell, ts)
        steer = M.steering_ranks(model, tr.world, subj, ell, [1.0])
        return {"PT.exact": pt["exact"], "stagewise_gap": pt["attr_type"] - pt["exact"], **_g_contrasts(clu, steer)}

    return untrained_controls(build, measure, seed)


# ------------------------------------------------------------------------------------------------ seeds


def seed_spread(paths: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """``{claim id: {"seeds": [...], "values": [...], "min", "max", "mean"}}`` over the results files of runs with
    several ``--seed`` (a run folder ``OUT`` or its ``OUT/contextual_recall/results.json``): how the smoke
    thresholds were set (README)."""
    out: dict[str, dict[str, Any]] = {}
    for p in map(Path, paths):
        f = p if p.is_file() else p / "contextual_recall" / "results.json"
        data = json.loads(f.read_text())
        for row in data["claims"]:
            if row["ours"] is None:
                continue
            d = out.setdefault(row["id"], {"seeds": [], "values": []})
            d["seeds"].append(data["config"]["seed"])
            d["values"].append(row["ours"])
    for d in out.values():
        v = d["values"]
        d.update(min=min(v), max=max(v), mean=sum(v) / len(v))
    return out
