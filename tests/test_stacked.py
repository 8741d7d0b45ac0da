"""Several seeds in one process (mechrecall.stacked): each seed's numbers equal its own train() run on CPU."""

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from mechrecall import SetWeight, TrainableEntries, TrainConfig, ZeroBiases, build_toy_model, train
from mechrecall._tl import IS_BRIDGE, TL_VERSION, tl_state_dict
from mechrecall.sequences import induction_batch
from mechrecall.stacked import train_seeds

V, T, SEEDS = 13, 12, (0, 1, 2)
hooked_only = pytest.mark.skipif(IS_BRIDGE, reason="stacked seeds run on TransformerLens 3.x (mechrecall._tl)")


def small_model(seed, surgeries=()):
    cfg = dict(n_layers=2, n_heads=2, d_model=16, d_head=8, d_mlp=32, d_vocab=V, n_ctx=T, act_fn="relu")
    return build_toy_model(cfg, [ZeroBiases(), SetWeight(("embed.W_E",), "normal"), *surgeries], seed=seed)


def batch_fn(step, gen):
    return induction_batch(8, T, V, gen)  # with a loss mask and a tensor in extras: both stacked per seed


def first_logit(model):
    return {"logit": float(model(torch.arange(T)[None] % V)[0, -1, 0]), "norm": float(model.W_E.norm())}


def alone(seed, cfg, **kw):
    model = small_model(seed, kw.pop("surgeries", ()))
    return train(model, batch_fn, replace(cfg, seed=seed), **kw)


def stacked(cfg, **kw):
    surgeries = kw.pop("surgeries", ())
    models = [small_model(s, surgeries) for s in SEEDS]
    return train_seeds(models, batch_fn, [replace(cfg, seed=s) for s in SEEDS], **kw)


def assert_same_run(ours, theirs, loss_rel=0.0):
    if loss_rel:  # a custom loss is vmapped whole: its batched reduction may round its value differently
        for a, b in zip(ours.history["train"], theirs.history["train"]):
            assert a.pop("loss") == pytest.approx(b.pop("loss"), rel=loss_rel, abs=0)
    assert ours.history == theirs.history  # losses, gradient norms, lr, evaluations: bit for bit
    a, b = tl_state_dict(ours.model), tl_state_dict(theirs.model)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])]


@hooked_only
@pytest.mark.parametrize(
    "cfg",
    [
        TrainConfig(steps=12, optimizer="adamw", lr=3e-3, weight_decay=0.1, loss_positions="all", progress=False),
        TrainConfig(
            steps=12,
            optimizer="sgd",
            lr=0.05,
            momentum=0.9,
            grad_clip=0.5,
            loss_positions=(3, -1),
            schedule="cosine",
            warmup_steps=3,
            progress=False,
        ),
        TrainConfig(
            steps=12,
            optimizer="adam",
            lr=1e-2,
            loss_positions="last",
            eval_every=5,
            progress=False,
            param_groups=({"params": ("blocks.0.*",), "lr": 1e-3},),
        ),
    ],
    ids=["adamw", "sgd-clip-cosine", "adam-groups"],
)
def test_each_seed_of_a_stacked_run_equals_its_own_run_bit_for_bit(cfg):
    together = stacked(cfg, evals={"probe": first_logit})
    for seed, ours in zip(SEEDS, together):
        assert_same_run(ours, alone(seed, cfg, evals={"probe": first_logit}))
    losses = [r.history["train"][-1]["loss"] for r in together]
    assert len(set(losses)) == len(SEEDS)  # the seeds are not one run copied


@hooked_only
def test_a_custom_loss_and_frozen_entries_stack_as_they_train_alone():
    def loss_fn(model, batch):
        return F.cross_entropy(model(batch.tokens)[:, -1], batch.targets[:, -1]) + 0.01 * model.W_U.pow(2).sum()

    cfg = TrainConfig(steps=8, optimizer="adamw", lr=1e-2, progress=False)
    kw = dict(loss_fn=loss_fn, surgeries=[TrainableEntries("embed.W_E", ((0, V // 2), None))])  # the first rows train
    together = stacked(cfg, **kw)
    for seed, ours in zip(SEEDS, together):
        assert_same_run(ours, alone(seed, cfg, **kw), loss_rel=1e-6)
        untrained = small_model(seed).W_E
        assert torch.equal(ours.model.W_E[V // 2 :], untrained[V // 2 :])
        assert not torch.equal(ours.model.W_E[: V // 2], untrained[: V // 2])


@hooked_only
@pytest.mark.parametrize(
    "models, cfgs, message",
    [
        (lambda: [small_model(0), small_model(1)], lambda c: [c], "one TrainConfig per model"),
        (lambda: [small_model(0), small_model(1)], lambda c: [c, replace(c, seed=1, lr=1.0)], "differ in ['lr']"),
        (lambda: [small_model(0), small_model(1, [])], lambda c: [c, replace(c, loss_positions="mask")], "differ"),
        (lambda: [small_model(0)], lambda c: [replace(c, loss_positions="mask")], "loss_positions='mask'"),
    ],
)
def test_what_cannot_be_stacked_is_refused_before_any_work(models, cfgs, message):
    cfg = TrainConfig(steps=2, progress=False)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        train_seeds(models(), batch_fn, cfgs(cfg))


@hooked_only
def test_models_of_two_architectures_are_refused():
    other = build_toy_model(dict(n_layers=1, n_heads=2, d_model=16, d_head=8, d_mlp=32, d_vocab=V, n_ctx=T), [])
    with pytest.raises(ValueError, match="other weights"):
        train_seeds([small_model(0), other], batch_fn, [TrainConfig(steps=1, seed=s) for s in (0, 1)])


@pytest.mark.skipif(not IS_BRIDGE, reason="the 4.x bridge only")
def test_on_the_bridge_stacking_is_refused_in_one_line_naming_the_version():
    with pytest.raises(ValueError, match=f"TransformerLens 3.x.*{TL_VERSION}.*mechrecall.train"):
        train_seeds([small_model(0), small_model(1)], batch_fn, [TrainConfig(steps=1, seed=s) for s in (0, 1)])
