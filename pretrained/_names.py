"""Model names and Pythia checkpoint labels: resolution and validation (no hub access)."""

from __future__ import annotations

import difflib
from functools import lru_cache

#: Training steps at which EleutherAI published Pythia checkpoints (hub revision ``step{N}``):
#: log-spaced early steps, then every 1000 steps up to 143000 -- 154 labels in all.
#: Identical to TransformerLens' ``loading_from_pretrained.PYTHIA_CHECKPOINTS``.
PYTHIA_CHECKPOINTS: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, *tuple(range(1000, 143000 + 1, 1000)))
#: The original ("-v0") Pythia suite only has the every-1000-steps checkpoints.
PYTHIA_V0_CHECKPOINTS: tuple[int, ...] = tuple(range(1000, 143000 + 1, 1000))


@lru_cache(maxsize=1)
def _name_table() -> dict[str, tuple[str, str]]:
    """Lower-cased TL name or alias -> (the spelling TL lists, the official hub id)."""
    from mechrecall._tl import tl_model_names

    official_names, aliases = tl_model_names()
    table: dict[str, tuple[str, str]] = {}
    for official in official_names:
        table[official.lower()] = (official, official)
        for alias in aliases.get(official, []):
            table.setdefault(alias.lower(), (alias, official))
    return table


def official_name(name: str) -> str | None:
    """The hub id TransformerLens uses for ``name`` (an official name or alias), else ``None``."""
    entry = _name_table().get(name.lower())
    return None if entry is None else entry[1]


def close_matches(name: str, n: int = 6) -> list[str]:
    """TL official names/aliases that look like ``name`` (difflib), as TL spells them."""
    table = _name_table()
    keys = difflib.get_close_matches(name.lower(), list(table), n=n, cutoff=0.6)
    if not keys:  # e.g. "pythia70m": also try the last path component / substrings
        keys = [k for k in table if name.lower().split("/")[-1] in k][:n]
    seen: list[str] = []
    for key in keys:
        spelled = table[key][0]
        if spelled not in seen:
            seen.append(spelled)
    return seen


def is_pythia(official: str) -> bool:
    """Whether ``official`` is one of EleutherAI's Pythia models (the only checkpointed family here)."""
    return official.startswith("EleutherAI/pythia")


def checkpoint_labels(official: str) -> tuple[int, ...]:
    """The valid ``checkpoint=`` values for a Pythia model (v0 models lack the early steps)."""
    return PYTHIA_V0_CHECKPOINTS if official.endswith("-v0") else PYTHIA_CHECKPOINTS


def describe_labels(labels: tuple[int, ...]) -> str:
    """A short human description of a checkpoint label set."""
    early = [x for x in labels if x < 1000]
    head = ", ".join(str(x) for x in early)
    tail = "1000, 2000, ..., 143000 (every 1000 steps)"
    return f"{len(labels)} steps: {head + ', ' if head else ''}{tail}"


def check_step(checkpoint: object) -> int:
    """``checkpoint`` as a step number; ``ValueError`` unless it is a non-negative int."""
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, int) or checkpoint < 0:
        raise ValueError(f"checkpoint={checkpoint!r} is not a training step; expected a non-negative int")
    return int(checkpoint)


def validate_hub_checkpoint(name: str, official: str, checkpoint: object) -> int | None:
    """Check ``checkpoint=`` for a hub model before anything is downloaded.

    Returns the step (or ``None``); raises ``ValueError`` for a non-Pythia model or a step that
    Pythia never published, naming the bad value and the valid set.
    """
    if checkpoint is None:
        return None
    if not is_pythia(official):
        raise ValueError(
            f"checkpoint={checkpoint!r} given for {name!r} ({official}), but only Pythia models "
            "(EleutherAI/pythia-*) have training checkpoints; drop checkpoint= or pick a Pythia model"
        )
    step = check_step(checkpoint)
    labels = checkpoint_labels(official)
    if step not in labels:
        raise ValueError(
            f"checkpoint={step} is not a published checkpoint of {official}; "
            f"expected one of its {describe_labels(labels)}"
        )
    return step
