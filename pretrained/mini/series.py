"""Pretrain a mini GPT-NeoX on the generated corpus and save a Pythia-style checkpoint series.

Layout of ``out``::

    step0/ step1/ ... step{final}/   one Hugging Face GPTNeoXForCausalLM folder per step (weights + tokenizer)
    final/                           the last step again (what a single-model part loads)
    facts.json                       relation -> [[subject, answer]] (IC-recall's facts-table format)
    ground_truth.json                the world, templates, the preset, corpus statistics, recall per step
    train/                           the tokenizer, the token stream, the trainer's checkpoints (resume)

Every step folder is written atomically; a rerun skips the steps already there and resumes training from the
trainer's newest checkpoint, ending with the weights an uninterrupted run has.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Int
from safetensors.torch import load_file, save_file

from mechrecall import Freeze, TrainConfig, build_toy_model, train
from mechrecall.batch import Batch
from mechrecall.io import atomic_directory, atomic_write_json
from pretrained._local import tl_config_dict
from pretrained.mini.corpus import MIX, documents
from pretrained.mini.export import check_exports_as_neox, hf_config, save_neox
from pretrained.mini.presets import PRESETS, MiniPreset
from pretrained.mini.recall import recall
from pretrained.mini.tokenizer import EOT, multi_token_words, train_tokenizer
from pretrained.mini.world import World, make_world

log = logging.getLogger(__name__)
SCHEMA = "mechrecall.mini/1"


def tl_config(preset: MiniPreset, d_vocab: int, seed: int) -> dict[str, Any]:
    """The ``HookedTransformerConfig`` fields of the model Pythia's loader would build from its HF config."""
    hf = hf_config(preset.d_model, preset.n_layers, preset.n_heads, preset.d_mlp, preset.n_ctx, d_vocab)
    cfg = tl_config_dict(hf, "GPTNeoXForCausalLM")
    return {**cfg, "seed": seed, "init_weights": True}


def corpus(world: World, preset: MiniPreset, seed: int) -> tuple[list[str], Counter[tuple[str, str]]]:
    """The documents and how often each (relation, subject) is stated in them."""
    stated: Counter[tuple[str, str]] = Counter()
    return list(documents(world, preset.n_docs, seed, stated)), stated


def token_stream(tokenizer: Any, docs: list[str]) -> Int[torch.Tensor, " n"]:
    """The documents' tokens, each followed by the end-of-text token (id 0)."""
    ids: list[int] = []
    for enc in tokenizer(docs, add_special_tokens=False)["input_ids"]:
        ids += [*enc, 0]
    return torch.tensor(ids, dtype=torch.int32)


def window_batches(
    stream: Int[torch.Tensor, " n"], batch_size: int, n_ctx: int
) -> Callable[[int, torch.Generator], Batch]:
    """``batch_fn(step, generator)``: ``batch_size`` random windows of ``n_ctx`` tokens and their next tokens."""

    def batch_fn(step: int, generator: torch.Generator) -> Batch:
        starts = torch.randint(0, len(stream) - n_ctx - 1, (batch_size,), generator=generator)
        idx = starts[:, None] + torch.arange(n_ctx + 1)
        window = stream[idx].long()
        return Batch(tokens=window[:, :-1], targets=window[:, 1:])

    return batch_fn


def _tokenizer(out: Path, docs: list[str], preset: MiniPreset, world: World) -> Any:
    from transformers import PreTrainedTokenizerFast

    where = out / "train" / "tokenizer"
    if not where.is_dir():
        tok = train_tokenizer(docs, preset.vocab_size, model_max_length=preset.n_ctx)
        with atomic_directory(where) as tmp:
            tok.save_pretrained(tmp)
    tok = PreTrainedTokenizerFast.from_pretrained(where, local_files_only=True)
    answers = sorted({a for pairs in world.facts().values() for _, a in pairs})
    if (bad := multi_token_words(tok, answers)) or tok.convert_tokens_to_ids(EOT) != 0:
        raise ValueError(f"the tokenizer splits the answers {bad[:5]}: raise vocab_size={preset.vocab_size}")
    return tok


def _stream(out: Path, tokenizer: Any, docs: list[str]) -> Int[torch.Tensor, " n"]:
    file = out / "train" / "tokens.safetensors"
    if not file.is_file():
        tmp = file.with_suffix(".tmp")
        save_file({"tokens": token_stream(tokenizer, docs)}, str(tmp))
        os.replace(tmp, file)
    return load_file(str(file))["tokens"]


def step_recall(folder: Path, world: World) -> dict[str, dict[str, float]]:
    """Exact-match recall of the checkpoint in ``folder`` as ``pretrained.load`` reads it, per template split."""
    import pretrained

    model = pretrained.load(folder, processing="raw")
    return {split: recall(model, model.tokenizer, world, split) for split in ("train", "heldout")}


def _claim_folder(out: Path, recipe: dict[str, Any]) -> None:
    """Record the run's recipe in ``out/train/recipe.json``; ``ValueError`` if ``out`` holds another run."""
    file = out / "train" / "recipe.json"
    if file.is_file():
        if (old := json.loads(file.read_text())) != recipe:
            diff = sorted(
                k
                for k in {**old.get("preset", {}), **recipe["preset"]}
                if old.get("preset", {}).get(k) != recipe["preset"].get(k)
            )
            raise ValueError(
                f"{out} holds a mini run of another recipe (seed {old.get('seed')} vs {recipe['seed']}; preset fields "
                f"{diff}); pass another --out or delete it"
            )
        return
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty and holds no mini run; pass a new or empty --out")
    atomic_write_json(file, recipe)


def pretrain(
    out: str | os.PathLike[str], preset: str | MiniPreset = "laptop", seed: int = 0, progress: bool = True
) -> Path:
    """Pretrain (or resume) the mini model into ``out``; returns ``out``. See the module docstring."""
    if isinstance(preset, str) and preset not in PRESETS:
        raise ValueError(f"preset {preset!r}; expected one of {sorted(PRESETS)} or a MiniPreset")
    p = PRESETS[preset] if isinstance(preset, str) else preset
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; expected a folder (new, empty, or a mini run to resume)")
    _claim_folder(out, {"schema": SCHEMA, "preset": p.to_dict(), "seed": seed})
    torch.set_num_threads(p.threads)
    world = make_world(seed, p.n_people, p.n_cities, p.n_countries)
    docs, stated = corpus(world, p, seed)
    tokenizer = _tokenizer(out, docs, p, world)
    stream = _stream(out, tokenizer, docs)
    model = build_toy_model(tl_config(p, len(tokenizer), seed), [Freeze(("unembed.b_U",))], seed=seed)
    batch_fn = window_batches(stream, p.batch_size, p.n_ctx)
    hf = hf_config(p.d_model, p.n_layers, p.n_heads, p.d_mlp, p.n_ctx, len(tokenizer))
    check_exports_as_neox(model, hf)
    recalls: dict[int, dict[str, dict[str, float]]] = {}
    for step in p.series():
        folder = out / f"step{step}"
        if not folder.is_dir():
            cfg = TrainConfig(
                steps=step,
                optimizer="adamw",
                lr=p.lr,
                weight_decay=p.weight_decay,
                warmup_steps=p.warmup_steps,
                loss_positions="all",
                grad_clip=1.0,
                checkpoint_every=500,
                seed=seed,
                progress=progress,
            )
            train(model, batch_fn, cfg, out_dir=out / "train")
            save_neox(model, hf, tokenizer, folder)
        recalls[step] = step_recall(folder, world)
        log.info("step %d: recall %s", step, {k: round(v["all"], 3) for k, v in recalls[step].items()})
    final = out / "final"
    if not final.is_dir():
        with atomic_directory(final) as tmp:
            shutil.copytree(out / f"step{p.steps}", tmp, dirs_exist_ok=True)
    name = preset if isinstance(preset, str) else "custom"
    write_ground_truth(out, name, world, p, stream, stated, recalls)
    return out


def write_ground_truth(
    out: Path,
    name: str,
    world: World,
    p: MiniPreset,
    stream: torch.Tensor,
    stated: Counter[tuple[str, str]],
    recalls: dict,
) -> None:
    """``facts.json`` and ``ground_truth.json`` (see the module docstring)."""
    facts = world.facts()
    n_facts = sum(len(v) for v in facts.values())
    seen = {rel: sum(stated[(rel, s)] > 0 for s, _ in pairs) / len(pairs) for rel, pairs in facts.items()}
    atomic_write_json(out / "facts.json", {"_about": "the mini corpus's facts: relation -> [subject, answer]", **facts})
    atomic_write_json(
        out / "ground_truth.json",
        {
            "schema": SCHEMA,
            "preset_name": name,
            "world": world.to_dict(),
            "preset": p.to_dict(),
            "series": p.series(),
            "corpus": {
                "documents": p.n_docs,
                "mix": MIX,
                "tokens": len(stream),
                "tokens_sha256": hashlib.sha256(stream.numpy().tobytes()).hexdigest(),
                "tokens_trained": p.steps * p.batch_size * p.n_ctx,
                "facts": n_facts,
                "fraction_of_facts_stated": seen,
                "mean_statements_per_fact": sum(stated.values()) / n_facts,
            },
            "recall": {str(k): v for k, v in recalls.items()},
        },
    )


def series_root(path: str | os.PathLike[str]) -> Path | None:
    """The mini series folder ``path`` is (or whose ``final`` / ``step{N}`` subfolder it is); None if neither."""
    for folder in (Path(path), Path(path).parent):
        file = folder / "ground_truth.json"
        if file.is_file() and json.loads(file.read_text()).get("schema") == SCHEMA:
            return folder
    return None


def read_ground_truth(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``ground_truth.json`` of a mini series (see :func:`series_root`); None for any other model."""
    root = series_root(path)
    return None if root is None else json.loads((root / "ground_truth.json").read_text())


def read_facts(path: str | os.PathLike[str]) -> dict[str, list[tuple[str, str]]] | None:
    """Relation -> ``[(subject, answer)]`` of a mini series (its ground truth); None for any other model."""
    truth = read_ground_truth(path)
    return None if truth is None else World.from_dict(truth["world"]).facts()


def measured_on(name: str) -> str:
    """How a report names the model a pretrained row was measured on: a mini series says so (not Pythia)."""
    truth = read_ground_truth(name)
    if truth is None:
        return str(name)
    return (
        f"the mini GPT-NeoX pretrained here ({truth['preset_name']} preset, seed {truth['world']['seed']}, "
        f"{truth['corpus']['tokens_trained']:,} tokens; python -m pretrained.mini), not Pythia"
    )
