"""Write the packaged tiny-Shakespeare character statistics (π_u, π_b of §3).

    python -m analyses.papers.distributional.make_char_stats PATH/TO/tinyshakespeare.txt
    python -m analyses.papers.distributional.make_char_stats PATH --out other.json      # somewhere else
    python -m analyses.papers.distributional.make_char_stats PATH --no-verify           # a different text (not shipped)

The input is the public-domain file ``data/tinyshakespeare/input.txt`` of GitHub ``karpathy/char-rnn``
(1,115,394 characters, sha256 ``86c4e6aa...``). The output JSON holds only counts -- the vocabulary
string (the distinct characters sorted by code point, id = index), the unigram counts ``[V]`` and the
bigram counts ``[V, V]`` of all consecutive pairs ``(text[i], text[i+1])``, ``i = 0..len-2`` -- plus
the source file's name, sha256 and length. The text itself is never copied. Deterministic: the same
input gives a byte-identical file.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from collections import Counter
from pathlib import Path

EXPECTED_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
DEFAULT_OUT = Path(__file__).with_name("tinyshakespeare_char_stats.json")
ORIGIN = "GitHub karpathy/char-rnn, data/tinyshakespeare/input.txt (public domain)"


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
        prog="python -m analyses.papers.distributional.make_char_stats", description=__doc__.split("\n")[0]
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
