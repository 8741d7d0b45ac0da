"""Packaged data: tiny-Shakespeare character statistics (π_u, π_b of §3).

    stats = load_char_stats()
    stats.vocab            # "\\n !$&',-.3:;?ABC...xyz" (65 characters sorted by code point; id = index)
    stats.pi_u             # [65] float64 unigram frequencies
    stats.pi_b             # [65, 65] float64, row c = π_b(· | c)
    stats.encode("to be")  # [5] int64 ids

Rebuild the JSON from the public text (the text itself is never copied; the same input gives a byte-identical
file)::

    python -m analyses.papers.distributional.data.char_stats PATH/TO/tinyshakespeare.txt
    python -m analyses.papers.distributional.data.char_stats PATH --out other.json      # somewhere else
    python -m analyses.papers.distributional.data.char_stats PATH --no-verify           # a different text

The counts were computed once by ``python -m analyses.papers.distributional.data.char_stats PATH`` from the public
file ``data/tinyshakespeare/input.txt`` of ``karpathy/char-rnn`` (sha256 recorded in the JSON); the
text itself is not shipped.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.resources
import itertools
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from jaxtyping import Float, Int

__all__ = [
    "CHAR_STATS_FILE",
    "EXPECTED_SHA256",
    "CharStats",
    "compute_char_stats",
    "load_char_stats",
    "make_char_stats",
]

CHAR_STATS_FILE = "tinyshakespeare_char_stats.json"
EXPECTED_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
DEFAULT_OUT = Path(__file__).with_name(CHAR_STATS_FILE)
ORIGIN = "GitHub karpathy/char-rnn, data/tinyshakespeare/input.txt (public domain)"


@dataclass(frozen=True)
class CharStats:
    """Character statistics of a text.

    ``vocab``: the ``V`` distinct characters sorted by code point (id ``i`` = ``vocab[i]``).
    ``unigram_counts [V]``, ``bigram_counts [V, V]`` (int64; ``bigram_counts[i, j]`` = number of
    consecutive pairs ``(vocab[i], vocab[j])``). ``pi_u [V]``, ``pi_b [V, V]`` (float64): the unigram
    distribution and the row-normalised bigram counts. A row with zero count (a character seen only as the
    last character of the text) has no bigram estimate; its ``pi_b`` row is set to ``pi_u`` (the same
    fallback the noisy-ICL generator uses after the appended noise token) and its id is listed in
    ``empty_rows``. Tiny Shakespeare has no such row (the smallest row total is 1).
    """

    vocab: str
    unigram_counts: Int[torch.Tensor, " V"]
    bigram_counts: Int[torch.Tensor, "V V"]
    pi_u: Float[torch.Tensor, " V"]
    pi_b: Float[torch.Tensor, "V V"]
    source: str
    sha256: str
    n_chars: int
    empty_rows: tuple[int, ...] = ()

    @property
    def n_tokens(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> Int[torch.Tensor, " n"]:
        """Ids of the characters of ``text``; ``ValueError`` for a character outside the vocabulary."""
        index = {c: i for i, c in enumerate(self.vocab)}
        missing = sorted({c for c in text if c not in index})
        if missing:
            raise ValueError(f"characters {missing!r} are not in the {self.n_tokens}-character vocabulary")
        return torch.tensor([index[c] for c in text], dtype=torch.int64)

    def decode(self, ids: Sequence[int] | Int[torch.Tensor, " n"]) -> str:
        """The characters of ``ids`` (ints or a 1-D tensor); ids outside the vocabulary become ``'<id>'``."""
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        return "".join(self.vocab[i] if 0 <= i < self.n_tokens else f"<{i}>" for i in ids)


@functools.lru_cache(maxsize=1)
def _packaged_json() -> dict:
    return json.loads(importlib.resources.files(__package__).joinpath(CHAR_STATS_FILE).read_text(encoding="utf-8"))


def _read_json(path: str | None) -> dict:
    return _packaged_json() if path is None else json.loads(Path(path).read_text(encoding="utf-8"))


def load_char_stats(path: str | Path | None = None) -> CharStats:
    """The packaged tiny-Shakespeare statistics (or those in the JSON file ``path``) as a fresh ``CharStats``.

    Raises ``FileNotFoundError`` if the JSON is missing and ``ValueError`` if it is inconsistent (shapes,
    totals). The packaged JSON is parsed once per process; every call returns new tensors.
    """
    try:
        d = _read_json(None if path is None else str(path))
    except FileNotFoundError as err:
        raise FileNotFoundError(
            f"character statistics {path or CHAR_STATS_FILE} not found; build them with "
            "`python -m analyses.papers.distributional.data.char_stats PATH/TO/tinyshakespeare.txt`"
        ) from err
    vocab = d["vocab"]
    uni = torch.tensor(d["unigram_counts"], dtype=torch.int64)
    bi = torch.tensor(d["bigram_counts"], dtype=torch.int64)
    V = len(vocab)
    if uni.shape != (V,) or bi.shape != (V, V):
        raise ValueError(
            f"char stats: unigram {tuple(uni.shape)}, bigram {tuple(bi.shape)}; expected ({V},), ({V}, {V})"
        )
    if int(uni.sum()) != d["n_chars"] or int(bi.sum()) != d["n_chars"] - 1:
        raise ValueError(
            f"char stats: counts sum to {int(uni.sum())} / {int(bi.sum())}; expected n_chars={d['n_chars']} / n_chars-1"
        )
    if (uni < 0).any() or (bi < 0).any() or "".join(sorted(set(vocab))) != vocab:
        raise ValueError("char stats: negative counts or a vocabulary that is not sorted and unique")
    pi_u = uni.double() / uni.sum()
    rows = bi.sum(1, keepdim=True)
    empty = rows.squeeze(1) == 0
    pi_b = torch.where(empty[:, None], pi_u[None, :], bi.double() / rows.clamp(min=1))
    return CharStats(
        vocab=vocab,
        unigram_counts=uni,
        bigram_counts=bi,
        pi_u=pi_u,
        pi_b=pi_b,
        source=d["source"],
        sha256=d["sha256"],
        n_chars=int(d["n_chars"]),
        empty_rows=tuple(torch.nonzero(empty).flatten().tolist()),
    )


# ----------------------------------------------------------------------------- rebuilding the packaged JSON


def compute_char_stats(text: str) -> dict:
    """Vocabulary, unigram and bigram counts of ``text`` (a JSON-ready dict; counts are Python ints).

    ``vocab``: the distinct characters sorted by code point; ``unigram_counts[i]``: occurrences of
    ``vocab[i]``; ``bigram_counts[i][j]``: number of ``k`` with ``text[k] = vocab[i]``,
    ``text[k+1] = vocab[j]``.
    """
    if len(text) < 2:
        raise ValueError(f"text has {len(text)} characters; expected at least 2 (one consecutive pair)")
    vocab = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(vocab)}
    uni = Counter(text)
    bi = Counter(itertools.pairwise(text))
    unigram = [uni[c] for c in vocab]
    bigram = [[0] * len(vocab) for _ in vocab]
    for (a, b), n in bi.items():
        bigram[index[a]][index[b]] = n
    return {"vocab": vocab, "unigram_counts": unigram, "bigram_counts": bigram}


def dumps_stats(stats: dict) -> str:
    """JSON text with one bigram row per line (small, diff-friendly, deterministic)."""
    fields = [
        f" {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in stats.items() if k != "bigram_counts"
    ]
    rows = ",\n".join("  " + json.dumps(row, separators=(",", ":")) for row in stats["bigram_counts"])
    return "{\n" + ",\n".join(fields) + f',\n "bigram_counts": [\n{rows}\n ]\n}}\n'


def make_char_stats(path: str | Path, out: str | Path = DEFAULT_OUT, *, verify: bool = True) -> dict:
    """Read ``path``, check its sha256 (unless ``verify=False``), write the statistics JSON to ``out``."""
    path = Path(path)
    raw = path.read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    if verify and sha != EXPECTED_SHA256:
        raise ValueError(
            f"{path} has sha256 {sha}; expected {EXPECTED_SHA256} (tiny Shakespeare, karpathy/char-rnn). "
            "Pass --no-verify to compute statistics of another text."
        )
    text = raw.decode("utf-8")
    counts = compute_char_stats(text)
    stats = {
        "description": "Character unigram/bigram counts of tiny Shakespeare (ids = index in vocab, sorted by code "
        "point); bigram_counts[i][j] = #{k : text[k] = vocab[i], text[k+1] = vocab[j]}.",
        "source": path.name,
        "origin": ORIGIN if sha == EXPECTED_SHA256 else None,
        "sha256": sha,
        "n_chars": len(text),
        "n_pairs": len(text) - 1,
        **counts,
    }
    Path(out).write_text(dumps_stats(stats), encoding="ascii")
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analyses.papers.distributional.data.char_stats",
        description="Write the packaged tiny-Shakespeare character statistics (π_u, π_b of §3).",
    )
    parser.add_argument("path", help="the tiny Shakespeare text (karpathy/char-rnn data/tinyshakespeare/input.txt)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"output JSON (default: {DEFAULT_OUT})")
    parser.add_argument("--no-verify", action="store_true", help="accept a file whose sha256 differs")
    args = parser.parse_args(argv)
    try:
        stats = make_char_stats(args.path, args.out, verify=not args.no_verify)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    size = Path(args.out).stat().st_size
    print(
        f"wrote {args.out} ({size:,} bytes): {len(stats['vocab'])} characters, {stats['n_chars']:,} chars, "
        f"sha256 {stats['sha256']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
