"""Load pretrained GPT-2 / Pythia models as ``HookedTransformer``s, by name or from a local folder.

    import pretrained
    model = pretrained.load("pythia-70m", checkpoint=1000, processing="raw")   # hub (or its cache)
    model = pretrained.load("/data/pythia-70m")                                # save_pretrained dir, offline
    model = pretrained.load("/data/pythia-70m-mirror", checkpoint=1000)        # .../step1000/

``processing="tl"`` (default) applies TransformerLens' processing (fold_ln, centring, value-bias
folding); ``"raw"`` keeps the weights as stored, which weight-editing analyses need
(:func:`require_raw` checks it; :func:`processing_of` reads what was used).
Without network, a hub model that isn't cached raises :class:`PretrainedNotAvailableError` at once.
:mod:`pretrained.testing` builds tiny random GPT-NeoX / GPT-2 checkpoints for tests;
:mod:`pretrained.prompts` holds prompts with answers and reads prompt files (each paper's tables live in
its package under ``analyses/papers/``).
"""

from pretrained import prompts, testing
from pretrained._local import SUPPORTED_ARCHITECTURES
from pretrained._names import PYTHIA_CHECKPOINTS
from pretrained.errors import PretrainedNotAvailableError
from pretrained.loading import load, load_or_why, no_weights, processing_of, require_raw
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
    "no_weights",
    "processing_of",
    "prompts",
    "require_raw",
    "testing",
]
