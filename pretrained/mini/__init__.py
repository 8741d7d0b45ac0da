"""A mini Pythia pretrained here, on a generated corpus whose ground truth is known (``python -m pretrained.mini``).

The pretrained half of the papers needs a model that *learned* something from text: an induction head, facts in
its weights, a distributional association. With no model hub, :func:`pretrain` trains a small GPT-NeoX (Pythia's
architecture, a byte-level BPE tokenizer trained on the corpus) with the one trainer on documents generated from
an invented world (:mod:`~pretrained.mini.world`, :mod:`~pretrained.mini.corpus`), and saves a Pythia-style
checkpoint series that ``pretrained.load(out, checkpoint=N)`` reads as it reads Pythia, the world's facts and the
model's recall beside it (:func:`read_ground_truth`).
"""

from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name is imported on first use
    from pretrained.mini.presets import PRESETS, MiniPreset
    from pretrained.mini.series import measured_on, pretrain, read_facts, read_ground_truth, series_root
    from pretrained.mini.world import World, make_world

__all__ = [
    "PRESETS",
    "MiniPreset",
    "World",
    "make_world",
    "measured_on",
    "pretrain",
    "read_facts",
    "read_ground_truth",
    "series_root",
]


__getattr__, __dir__ = lazy_imports(__name__)
