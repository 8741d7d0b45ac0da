"""Load pretrained GPT-2 / Pythia models as TransformerLens models, by name or from a local folder.

TL 3: a ``HookedTransformer``; TL 4: a ``TransformerBridge`` in compatibility mode (legacy hook names, ``W_Q``
… in 3.x shapes). The difference lives in ``mechrecall._tl`` (its pretrained-checkpoints section).

    import pretrained
    model = pretrained.load("pythia-70m", checkpoint=1000, processing="raw")   # hub (or its cache)
    model = pretrained.load("/data/pythia-70m")                                # save_pretrained dir, offline
    model = pretrained.load("/data/pythia-70m-mirror", checkpoint=1000)        # .../step1000/

``processing="tl"`` (default) applies TransformerLens' processing (fold_ln, centring, value-bias
folding); ``"raw"`` keeps the weights as stored, which weight-editing analyses need
(:func:`require_raw` checks it; :func:`processing_of` reads what was used).
Without network, a hub model that isn't cached raises :class:`PretrainedNotAvailableError` at once.
:mod:`pretrained.testing` builds tiny random GPT-NeoX / GPT-2 checkpoints for tests; :mod:`pretrained.mini`
pretrains a small GPT-NeoX here on a generated corpus whose facts are known (``python -m pretrained.mini``);
:mod:`pretrained.prompts` holds prompts with answers and reads prompt files (each paper's tables live in
its package under ``analyses/papers/``).
"""

from typing import TYPE_CHECKING

from mechrecall.lazy import lazy_imports

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name is imported on first use
    from pretrained import mini, prompts, testing
    from pretrained._local import SUPPORTED_ARCHITECTURES
    from pretrained._names import PYTHIA_CHECKPOINTS
    from pretrained.errors import PretrainedNotAvailableError
    from pretrained.loading import load, load_or_why, no_weights, processing_of, require_raw, untrained_like
    from pretrained.prompts import AnswerToken, Prompt, answer_token, load_prompt_file

__all__ = [
    "PYTHIA_CHECKPOINTS",
    "SUPPORTED_ARCHITECTURES",
    "AnswerToken",
    "PretrainedNotAvailableError",
    "Prompt",
    "answer_token",
    "load",
    "load_or_why",
    "load_prompt_file",
    "mini",
    "no_weights",
    "processing_of",
    "prompts",
    "require_raw",
    "testing",
    "untrained_like",
]


__getattr__, __dir__ = lazy_imports(__name__)
