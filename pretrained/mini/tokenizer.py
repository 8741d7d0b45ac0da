"""A byte-level BPE tokenizer trained on the mini corpus (the GPT-2 / Pythia kind, smaller)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: End of text: id 0, also BOS, EOS and padding (as in GPT-2 and Pythia).
EOT = "<|endoftext|>"


def train_tokenizer(texts: Iterable[str], vocab_size: int, *, model_max_length: int) -> Any:
    """A ``PreTrainedTokenizerFast``: byte-level BPE with ``vocab_size`` entries learned from ``texts``.

    The pre-tokenizer is GPT-2's (a word keeps its leading space: ``" Velmora"`` is one piece), so a frequent
    word ends as one token; :func:`multi_token_words` lists the words that did not."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOT,
        eos_token=EOT,
        unk_token=EOT,
        pad_token=EOT,
        clean_up_tokenization_spaces=False,
        model_max_length=model_max_length,
    )


def multi_token_words(tokenizer: Any, words: Sequence[str]) -> list[str]:
    """The words whose ``" " + word`` is more than one token (the answers must be one token each)."""
    return [w for w in words if len(tokenizer(" " + w, add_special_tokens=False)["input_ids"]) != 1]
