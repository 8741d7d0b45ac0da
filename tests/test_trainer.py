"""The one trainer: resumption, determinism, optimiser groups, loss positions, evals, bad input."""

import pytest
import torch
import torch.nn.functional as F

from mechrecall import (
    Batch,
    SetWeight,
    TrainableEntries,
    TrainConfig,
    ZeroBiases,
    build_toy_model,
    latest_checkpoint,
    train,
)
from mechrecall._tl import tl_grad, tl_parameters, tl_state_dict, weight
from mechrecall.checkpoint import read_checkpoint_meta
from mechrecall.sequences import induction_batch
from mechrecall.trainer import lr_factor, select_positions

V, T = 13, 12


def small_model(seed=0, **overrides):
    cfg = dict(
        n_layers=2,
        n_heads=2,
        d_model=16,
        d_head=8,
        d_mlp=32,
        d_vocab=V,
        n_ctx=T,
        act_fn="relu",
        normalization_type="LN",
    )
    cfg.update(overrides)
    return build_toy_model(cfg, [ZeroBiases(), SetWeight(("embed.W_E",), "normal")], seed=seed)


def batch_fn(step, gen):
    return induction_batch(8, T, V, gen)


def weights(model):
    return tl_state_dict(model)


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


@pytest.mark.parametrize(
    "cfg",
    [
        TrainConfig(
            steps=14,
            optimizer="sgd",
            lr=0.05,
            momentum=0.9,
            weight_decay=1e-3,
            loss_positions="mask",
            checkpoint_every=4,
            eval_every=3,
            progress=False,
        ),
        TrainConfig(
            steps=14,
            optimizer="adamw",
            lr=3e-3,
            weight_decay=0.01,
            grad_clip=0.5,
            schedule="cosine",
            warmup_steps=3,
            loss_positions="mask",
            checkpoint_every=5,
            eval_every=3,
            progress=False,
            param_groups=({"params": ("blocks.0.*",), "lr": 1e-2},),
        ),
    ],
    ids=["sgd-momentum", "adamw-groups-clip-cosine"],
)
def test_interrupted_run_resumes_to_identical_weights(tmp_path, cfg):
    evals = {"w": lambda m: m.blocks[1].attn.W_K.sum().item()}
    full = small_model()
    full_result = train(full, batch_fn, cfg, evals=evals, out_dir=tmp_path / "full")

    class Crash(Exception):
        pass

    def crashing_batch_fn(step, gen):
        if step == 11:
            raise Crash
        return batch_fn(step, gen)

    interrupted = small_model()
    with pytest.raises(Crash):
        train(interrupted, crashing_batch_fn, cfg, evals=evals, out_dir=tmp_path / "resumed")
    last = read_checkpoint_meta(latest_checkpoint(tmp_path / "resumed"))["step"]
    assert last == 10 if cfg.checkpoint_every == 5 else last == 8
    resumed = small_model()  # a fresh process would start from a fresh model
    result = train(resumed, batch_fn, cfg, evals=evals, out_dir=tmp_path / "resumed")
    assert result.resumed_from == last
    assert_same_weights(weights(full), weights(resumed))
    assert result.history == full_result.history


def test_same_seed_same_numbers_and_data_depends_on_seed():
    cfg = TrainConfig(steps=6, optimizer="adam", lr=1e-2, loss_positions="mask", progress=False)
    a, b = small_model(), small_model()
    ra, rb = train(a, batch_fn, cfg), train(b, batch_fn, cfg)
    assert_same_weights(weights(a), weights(b))
    assert ra.history == rb.history
    c = small_model()
    train(c, batch_fn, TrainConfig(**{**cfg.__dict__, "seed": 1}))
    assert not torch.equal(a.blocks[0].attn.W_K, c.blocks[0].attn.W_K)


def test_sgd_step_follows_param_group_learning_rates_and_frozen_params_stay():
    model = small_model()
    before = weights(model)
    batch = batch_fn(0, torch.Generator().manual_seed(0))
    # The gradient at step 0, computed independently of the trainer.
    probe = small_model()
    rows, labels = select_positions(probe(batch.tokens), batch.targets, "mask", batch.loss_mask)
    F.cross_entropy(rows, labels).backward()
    cfg = TrainConfig(
        steps=1,
        optimizer="sgd",
        lr=0.1,
        loss_positions="mask",
        progress=False,
        param_groups=({"params": ("blocks.1.mlp.*",), "lr": 0.5},),
    )
    train(model, lambda step, gen: batch, cfg)
    for name, p in tl_parameters(model).items():
        grad = tl_grad(probe, name)
        if not weight(model, name).requires_grad:
            assert torch.equal(p, before[name]), name  # frozen (biases, W_E)
            continue
        lr = 0.5 if name.startswith("blocks.1.mlp.") else 0.1
        torch.testing.assert_close(p, before[name] - lr * grad, rtol=0, atol=1e-6)


def test_grad_clipping_bounds_the_update():
    model = small_model()
    before = weights(model)
    train(
        model,
        batch_fn,
        TrainConfig(steps=1, optimizer="sgd", lr=1.0, grad_clip=1e-3, loss_positions="mask", progress=False),
    )
    update = torch.cat(
        [(p - before[n]).flatten() for n, p in tl_parameters(model).items() if weight(model, n).requires_grad]
    )
    torch.testing.assert_close(update.norm(), torch.tensor(1e-3), rtol=1e-4, atol=0)


def test_trainable_entries_survive_weight_decay_and_momentum():
    model = build_toy_model(
        dict(n_layers=1, n_heads=1, d_model=16, d_head=16, d_vocab=V, n_ctx=T, attn_only=True, normalization_type=None),
        [TrainableEntries("blocks.0.attn.W_K", (None, (0, 4), (0, 4)))],
    )
    w_k = model.blocks[0].attn.W_K.detach().clone()
    train(
        model,
        batch_fn,
        TrainConfig(steps=5, optimizer="adamw", lr=1e-2, weight_decay=0.5, loss_positions="mask", progress=False),
    )
    after = model.blocks[0].attn.W_K.detach()
    mask = model.mechrecall_entry_masks["blocks.0.attn.W_K"]
    assert torch.equal(after[~mask], w_k[~mask])
    assert not torch.equal(after[mask], w_k[mask])


def test_loss_positions_select_the_right_rows():
    logits = torch.randn(2, 5, 7)
    targets = torch.randint(0, 7, (2, 5))
    rows, labels = select_positions(logits, targets, (1, -1))
    assert torch.equal(rows, torch.stack([logits[0, 1], logits[0, 4], logits[1, 1], logits[1, 4]]))
    assert torch.equal(labels, torch.stack([targets[0, 1], targets[0, 4], targets[1, 1], targets[1, 4]]))
    rows, labels = select_positions(logits, targets[:, -1], "last")
    assert torch.equal(rows, logits[:, -1]) and torch.equal(labels, targets[:, -1])
    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[1, 2] = True
    rows, labels = select_positions(logits, targets, "mask", mask)
    assert torch.equal(rows, logits[1, 2][None]) and torch.equal(labels, targets[1, 2][None])


@pytest.mark.parametrize(
    "cfg_kwargs, batch, message",
    [
        (dict(loss_positions="mask"), "short mask", "loss_mask has shape (2, 11)"),
        (dict(loss_positions=(T,)), None, f"outside the sequence (length {T})"),
        (dict(loss_positions="all"), "1-d targets", "targets have shape (2,)"),
        (dict(loss_positions="middle"), None, "loss_positions='middle'"),
        (dict(optimizer="lion"), None, "optimizer='lion'"),
        (dict(lr=-1.0), None, "lr=-1.0"),
        (dict(param_groups=({"params": ("embed.W_E",), "lr": 1.0},)), None, "matches no trainable parameter"),
        (dict(checkpoint_every=2), None, "needs an out_dir"),
        (dict(compile="turbo"), None, "compile='turbo'; expected None or a torch.compile backend"),
    ],
)
def test_bad_input_fails_before_any_update(cfg_kwargs, batch, message):
    model = small_model()
    before = weights(model)
    if batch is not None:  # shapes the runtime checker would refuse in Batch(...): set after construction
        bad, batch = batch, Batch(torch.zeros(2, T, dtype=torch.long), torch.zeros(2, T, dtype=torch.long))
        if bad == "short mask":
            batch.loss_mask = torch.ones(2, T - 1, dtype=torch.bool)
        else:
            batch.targets = torch.zeros(2, dtype=torch.long)
    fn = (lambda step, gen: batch) if batch is not None else batch_fn
    cfg = TrainConfig(**{"steps": 3, "loss_positions": "mask", "progress": False, **cfg_kwargs})
    with pytest.raises(ValueError) as info:
        train(model, fn, cfg)
    assert message in str(info.value)
    assert_same_weights(before, weights(model))


def test_annotated_shapes_are_checked_at_run_time_in_the_tests():
    """tests/conftest.py installs jaxtyping's import hook with beartype over the project's packages."""
    from jaxtyping import TypeCheckError

    from mechrecall.trainer import select_positions as checked

    logits, targets = torch.zeros(2, 5, 7), torch.zeros(2, 5, dtype=torch.long)
    checked(logits, targets, "all")  # consistent shapes pass
    with pytest.raises(TypeCheckError):
        checked(torch.zeros(2, 5), targets, "all")  # logits without their vocabulary axis
    with pytest.raises(TypeCheckError):
        Batch(torch.zeros(2, T, dtype=torch.long), torch.zeros(2, T, dtype=torch.long), torch.ones(2, T - 1) > 0)


def test_resume_refuses_a_different_model_or_training_config(tmp_path):
    cfg = TrainConfig(steps=4, optimizer="sgd", lr=0.1, loss_positions="mask", checkpoint_every=2, progress=False)
    train(small_model(), batch_fn, cfg, out_dir=tmp_path)
    with pytest.raises(ValueError, match=r"cfg.d_mlp: 32 vs 64"):
        train(small_model(d_mlp=64), batch_fn, TrainConfig(**{**cfg.__dict__, "steps": 6}), out_dir=tmp_path)
    with pytest.raises(ValueError, match=r"lr: 0.1 \(checkpoint\) vs 0.2"):
        train(small_model(), batch_fn, TrainConfig(**{**cfg.__dict__, "steps": 6, "lr": 0.2}), out_dir=tmp_path)
    # Extending the run is allowed: it continues from step 4.
    assert (
        train(small_model(), batch_fn, TrainConfig(**{**cfg.__dict__, "steps": 6}), out_dir=tmp_path).resumed_from == 4
    )


@pytest.mark.parametrize(
    "damage", ["truncate model", "truncate optimizer", "remove model", "bad json", "bad latest.json"]
)
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(tmp_path, damage, caplog):
    cfg = TrainConfig(
        steps=6,
        optimizer="sgd",
        lr=0.1,
        momentum=0.9,
        loss_positions="mask",
        checkpoint_every=2,
        keep_checkpoints=2,
        progress=False,
    )
    reference = small_model()
    train(reference, batch_fn, cfg, out_dir=tmp_path / "ref")
    run = tmp_path / "run"
    train(small_model(), batch_fn, TrainConfig(**{**cfg.__dict__, "steps": 4}), out_dir=run)  # steps 2, 4 kept
    newest = run / "checkpoints" / "step-00000004"
    if damage == "truncate model":
        data = (newest / "model.safetensors").read_bytes()
        (newest / "model.safetensors").write_bytes(data[: len(data) // 2])
    elif damage == "truncate optimizer":
        data = (newest / "optimizer.safetensors").read_bytes()
        (newest / "optimizer.safetensors").write_bytes(data[:20])
    elif damage == "remove model":
        (newest / "model.safetensors").unlink()
    elif damage == "bad json":
        (newest / "checkpoint.json").write_text("{not json")
    else:
        (run / "checkpoints" / "latest.json").write_text("")
    resumed = small_model()
    with caplog.at_level("INFO", logger="mechrecall"):
        result = train(resumed, batch_fn, cfg, out_dir=run)
    if damage == "bad latest.json":  # the step-* folders are still intact: the newest one is used
        assert result.resumed_from == 4
    else:
        assert result.resumed_from == 2 and "step-00000004" in caplog.text and "skipped damaged" in caplog.text
    assert f"from step {result.resumed_from}" in caplog.text
    assert_same_weights(weights(reference), weights(resumed))  # and the run still ends where it should


def test_no_intact_checkpoint_says_what_to_delete(tmp_path):
    from mechrecall.errors import CheckpointError

    cfg = TrainConfig(
        steps=2, optimizer="sgd", lr=0.1, loss_positions="mask", checkpoint_every=2, keep_checkpoints=1, progress=False
    )
    train(small_model(), batch_fn, cfg, out_dir=tmp_path)
    (tmp_path / "checkpoints" / "step-00000002" / "model.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(CheckpointError, match=r"model.safetensors is unreadable.*delete that folder"):
        train(small_model(), batch_fn, TrainConfig(**{**cfg.__dict__, "steps": 4}), out_dir=tmp_path)


def test_evals_recorded_on_schedule_and_checkpoints_pruned(tmp_path):
    calls = []
    cfg = TrainConfig(
        steps=7,
        optimizer="sgd",
        lr=0.1,
        loss_positions="mask",
        eval_every=3,
        eval_steps=(1,),
        checkpoint_every=2,
        keep_checkpoints=2,
        progress=False,
    )
    result = train(
        small_model(),
        batch_fn,
        cfg,
        evals={"n": lambda m: calls.append(1) or len(calls), "d": lambda m: {"a": 1.0}},
        out_dir=tmp_path,
    )
    assert [row["step"] for row in result.history["eval"]] == [0, 1, 3, 6, 7]
    assert result.history["eval"][-1] == {"step": 7, "n": 5.0, "d.a": 1.0}
    assert [row["step"] for row in result.history["train"]] == list(range(1, 8))
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("step-*")) == ["step-00000006", "step-00000007"]


def test_schedule_warmup_and_cosine():
    cfg = TrainConfig(steps=10, schedule="cosine", warmup_steps=2)
    assert [round(lr_factor(cfg, s), 6) for s in (0, 1, 2)] == [0.5, 1.0, 1.0]
    assert lr_factor(cfg, 10) == pytest.approx(0.0)
    assert lr_factor(cfg, 6) == pytest.approx(0.5)


def test_readback_in_groups_gives_each_steps_numbers_and_names_the_diverged_step():
    """A GPU reads the loss and gradient norm back every few steps (no per-step host sync): the rows are those
    of one ``.item()`` per step, in order, and a non-finite loss raises naming its own step."""
    from mechrecall.trainer import _Readback

    class Bar:
        n = 0

        def update(self, k):
            self.n += k

        def set_postfix(self, **kw):
            pass

    history, bar = {"train": []}, Bar()
    readback = _Readback(history, bar, every=4, seconds=float("inf"))
    losses = torch.rand(10, dtype=torch.float32)
    norms = torch.rand(10, dtype=torch.float32)
    for i in range(10):
        readback.add(i, losses[i], norms[i], 0.1 * i)
    assert len(history["train"]) == 8 and bar.n == 8  # two groups of 4; 2 rows still on the device
    readback.flush()
    assert [r["step"] for r in history["train"]] == list(range(1, 11))
    assert [r["loss"] for r in history["train"]] == [losses[i].item() for i in range(10)]
    assert [r["grad_norm"] for r in history["train"]] == [norms[i].item() for i in range(10)]
    with pytest.raises(FloatingPointError, match="training loss is nan at step 11; lower the learning rate"):
        readback.add(10, torch.tensor(0.5), torch.tensor(1.0), 0.0)
        readback.add(11, torch.tensor(float("nan")), torch.tensor(1.0), 0.0)
        readback.flush()
    assert history["train"][-1]["step"] == 11  # step 10 (index 10) was read before the diverged one


def test_the_fused_optimiser_is_opt_in_on_the_cpu_and_rounds_like_the_foreach_one():
    """``TrainConfig.fused``: the CPU keeps the foreach kernel (the numbers every kept run was made with) unless
    asked; asked, torch's fused kernel takes the same steps up to rounding."""
    from mechrecall.trainer import build_optimizer

    cfg = TrainConfig(steps=6, optimizer="adamw", lr=1e-2, weight_decay=0.01, progress=False)
    assert not build_optimizer(small_model(), cfg).defaults["fused"]
    fused_cfg = TrainConfig(**{**cfg.to_dict(), "fused": True})
    assert build_optimizer(small_model(), fused_cfg).defaults["fused"]
    a, b = train(small_model(), batch_fn, cfg).model, train(small_model(), batch_fn, fused_cfg).model
    for name, value in weights(a).items():
        torch.testing.assert_close(weights(b)[name], value, rtol=0, atol=1e-6)


def test_a_compiled_step_runs_the_loss_through_the_backend_and_keeps_the_numbers():
    """``TrainConfig.compile``: the forward and loss go through ``torch.compile`` with the named backend (here one
    that records the graphs it is given and runs them as traced), and train to the eager run's weights."""
    from torch._dynamo import register_backend, reset

    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def last_token_loss(model, batch):  # the suite's run-time shape checker cannot be traced: a loss without it
        targets = batch.targets if batch.targets.ndim == 1 else batch.targets[:, -1]
        return F.cross_entropy(model(batch.tokens)[:, -1], targets)

    register_backend(recording, name="mechrecall_recording")
    reset()
    cfg = TrainConfig(steps=4, optimizer="adam", lr=1e-2, progress=False)
    eager = train(small_model(), batch_fn, cfg, loss_fn=last_token_loss).model
    compiled_cfg = TrainConfig(**{**cfg.to_dict(), "compile": "mechrecall_recording"})
    compiled = train(small_model(), batch_fn, compiled_cfg, loss_fn=last_token_loss)
    assert graphs and any(n.op == "call_function" for g in graphs for n in g.graph.nodes)
    for name, value in weights(eager).items():
        torch.testing.assert_close(weights(compiled.model)[name], value, rtol=0, atol=1e-6)
