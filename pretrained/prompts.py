"""Prompts for pretrained models: a prompt with its answer, the answer's token, prompt files.

:meth:`Prompt.answer_token` scores a target by the **first token of** ``" " + answer`` and returns an
:class:`AnswerToken` (an ``int``) that also records the sub-token text and whether the answer was split
into several tokens. :func:`load_prompt_file` reads user prompt sets (JSON lines
``{"prompt": ..., "answer": ...}``). Each paper's prompt tables live in its package
(e.g. ``analyses.papers.distributional.data.prompts``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AnswerToken", "Prompt", "answer_token", "is_single_token", "load_prompt_file", "tokenizer_of"]

# --------------------------------------------------------------------------- tokens


def tokenizer_of(tokenizer_or_model: Any) -> Any:
    """An HF tokenizer itself, or the ``.tokenizer`` of a ``HookedTransformer`` (or anything holding one)."""
    if callable(getattr(tokenizer_or_model, "encode", None)):
        return tokenizer_or_model
    tok = getattr(tokenizer_or_model, "tokenizer", None)
    if tok is None or not callable(getattr(tok, "encode", None)):
        raise TypeError(
            f"expected a Hugging Face tokenizer or a model with a .tokenizer, got {type(tokenizer_or_model).__name__}"
        )
    return tok


class AnswerToken(int):
    """The id of the first token of ``" " + answer`` -- an ``int``, usable directly as an index.

    Attributes:
        answer: the answer word(s), e.g. ``"New York Harbor"``.
        text: the decoded first sub-token, e.g. ``" New"`` (equals ``" " + answer`` when single-token).
        ids: all token ids of ``" " + answer``.
        multi_token: ``len(ids) > 1`` -- the answer is scored by its first sub-token only.
    """

    answer: str
    text: str
    ids: tuple[int, ...]

    def __new__(cls, ids: Sequence[int], *, answer: str, text: str) -> "AnswerToken":
        self = super().__new__(cls, int(ids[0]))
        self.answer = answer
        self.text = text
        self.ids = tuple(int(i) for i in ids)
        return self

    @property
    def id(self) -> int:
        return int(self)

    @property
    def multi_token(self) -> bool:
        return len(self.ids) > 1

    def __repr__(self) -> str:
        extra = f", multi_token ({len(self.ids)} tokens)" if self.multi_token else ""
        return f"AnswerToken({int(self)}, text={self.text!r}, answer={self.answer!r}{extra})"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_rebuild_answer_token, (self.ids, self.answer, self.text))


def _rebuild_answer_token(ids: Sequence[int], answer: str, text: str) -> AnswerToken:
    return AnswerToken(ids, answer=answer, text=text)


def answer_token(tokenizer_or_model: Any, answer: str) -> AnswerToken:
    """First token of ``" " + answer`` under a tokenizer (or a ``HookedTransformer``'s tokenizer).

    Encodes without special tokens (no BOS). Raises ``ValueError`` if the answer encodes to nothing or
    its first token is the tokenizer's unknown token (e.g. a word missing from a word-level test vocabulary).
    """
    tok = tokenizer_of(tokenizer_or_model)
    text = " " + answer
    ids = list(tok.encode(text, add_special_tokens=False))
    if not ids:
        raise ValueError(f"{text!r} encodes to no tokens")
    unk = getattr(tok, "unk_token_id", None)
    if unk is not None and ids[0] == unk:
        raise ValueError(f"{text!r} starts with the tokenizer's unknown token {tok.unk_token!r}: not in its vocabulary")
    return AnswerToken(ids, answer=answer, text=tok.decode(ids[:1]))


def is_single_token(tok: Any, word: str) -> bool:
    ids = tok.encode(" " + word, add_special_tokens=False)
    return len(ids) == 1 and ids[0] != getattr(tok, "unk_token_id", None)


# --------------------------------------------------------------------------- prompt types


def _check_text(value: Any, name: str, *, strip_ok: bool) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} must be non-empty, got {value!r}")
    if not strip_ok and value != value.strip():
        raise ValueError(f"{name} must not start or end with whitespace (the leading space is added), got {value!r}")


@dataclass(frozen=True)
class Prompt:
    """A next-token prompt and its target word(s); the target is scored by the first token of ``" " + answer``.

    ``prompt`` must not end with whitespace (the answer's token carries the leading space). ``answer`` may be
    written with or without its leading space (``"Spain"`` or ``" Spain"``: the same answer); other whitespace
    around it is an error.
    """

    prompt: str
    answer: str

    def __post_init__(self) -> None:
        _check_text(self.prompt, "prompt", strip_ok=True)
        if self.prompt != self.prompt.rstrip():
            raise ValueError(f"prompt must not end with whitespace, got {self.prompt!r}")
        if isinstance(self.answer, str) and self.answer.startswith(" ") and not self.answer.startswith("  "):
            object.__setattr__(self, "answer", self.answer[1:])  # " Spain" as the README's examples write it
        _check_text(self.answer, "answer", strip_ok=False)

    def answer_token(self, tokenizer_or_model: Any) -> AnswerToken:
        """Id of the first token of ``" " + answer`` (an ``int``; ``.multi_token``/``.text`` say more)."""
        return answer_token(tokenizer_or_model, self.answer)


# --------------------------------------------------------------------------- files and vocabulary


def load_prompt_file(path: str | os.PathLike[str]) -> list[Prompt]:
    """Read a JSON-lines prompt set: one object per line with string keys ``"prompt"`` and ``"answer"``.

    Blank lines are skipped and other keys ignored. Raises ``ValueError`` naming the file and 1-based line
    number for invalid JSON, a non-object line, a missing or non-string ``prompt``/``answer``, an invalid
    value (empty, whitespace around the answer, prompt ending with whitespace), or a file with no prompts.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    prompts: list[Prompt] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{p}, line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict):
            raise ValueError(
                f"{where}: expected a JSON object with keys 'prompt' and 'answer', got {type(obj).__name__}"
            )
        for key in ("prompt", "answer"):
            if key not in obj:
                raise ValueError(f"{where}: missing key {key!r}")
            if not isinstance(obj[key], str):
                raise ValueError(f"{where}: {key!r} must be a string, got {type(obj[key]).__name__} {obj[key]!r}")
        try:
            prompts.append(Prompt(obj["prompt"], obj["answer"]))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: {e}") from None
    if not prompts:
        raise ValueError(f"{p}: no prompts (the file is empty or has only blank lines)")
    return prompts
