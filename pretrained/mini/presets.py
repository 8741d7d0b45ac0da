"""Sizes of the mini pretraining: ``tiny`` (seconds; the tests) and ``laptop`` (the model the report reads)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MiniPreset:
    """World, corpus, tokenizer, model and training sizes (every field JSON-able)."""

    n_people: int
    n_cities: int
    n_countries: int
    n_docs: int
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_mlp: int
    n_ctx: int
    batch_size: int
    steps: int
    lr: float
    warmup_steps: int
    weight_decay: float = 0.01
    threads: int = 1  # part of the config: float reductions change with the thread count

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def series(self) -> list[int]:
        """Pythia's checkpoint steps, scaled down: 0, 1, 2, 4, ..., 512, then every 1000, and the last step."""
        steps = [0] + [2**k for k in range(10) if 2**k < self.steps]
        steps += list(range(1000, self.steps, 1000))
        return sorted({*steps, self.steps})


PRESETS: dict[str, MiniPreset] = {
    "tiny": MiniPreset(
        n_people=12,
        n_cities=6,
        n_countries=3,
        n_docs=1500,
        vocab_size=700,
        d_model=32,
        n_layers=2,
        n_heads=2,
        d_mlp=128,
        n_ctx=64,
        batch_size=16,
        steps=256,
        lr=5e-3,
        warmup_steps=16,
    ),
    "laptop": MiniPreset(
        n_people=120,
        n_cities=24,
        n_countries=6,
        n_docs=60000,
        vocab_size=2048,
        d_model=128,
        n_layers=4,
        n_heads=4,
        d_mlp=512,
        n_ctx=128,
        batch_size=32,
        steps=3000,
        lr=2e-3,
        warmup_steps=100,
        threads=2,
    ),
}
