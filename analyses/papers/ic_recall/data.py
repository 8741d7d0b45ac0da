"""The IC-recall task of Huang, Nichani, Lee & Ge, "Fine-Tuning Dynamics of In-Context Factual Recall in
Transformers" (§2.2, Definition 2.1; derived sequence types of §4.2; pretraining data of §5).

Vocabulary (no BOS, no padding)::

    subjects  s_0 .. s_{n-1}   ids 0 .. n-1
    answers   a_0 .. a_{n-1}   ids n .. 2n-1
    relations r_0 .. r_{m-1}   ids 2n .. 2n+m-1
    EoS                        id  2n+m          d_vocab = 2n + m + 1

Each relation is a bijection subjects -> answers, stored as ``rel[r, s]`` = answer index. An IC-recall
sequence with ``k`` in-context pairs is ``s_1 a_1 ... s_k a_k s_{k+1} EoS`` with targets ``r*`` (first
decoding step, read at the EoS position ``2k+1``) and ``a_{k+1}`` (second step). One teacher-forced
sequence of length ``2k+3`` (``r*`` appended) serves both steps in a causal one-layer model.

Relation families: ``random`` (the paper's experiments: distinct uniform random bijections),
``all_bijections`` (§4.1's warm-up, n = 3, m = 6, Table 1) and ``affine`` (x -> αx + β mod n for prime n,
relabelled; two (subject, answer) pairs with distinct subjects pin down at most one relation, so the
identifiability Assumption 2.2 holds). The paper's own experimental sizes (n = 8, m = 64 > n(n-1))
break Assumption 2.2, so first-step accuracy is judged against the exact Bayes ceiling E[1/K], K = the
number of relations consistent with the context (:meth:`ICRecallTask.bayes_ceiling`).

The extension's few-shot fact prompts for real LMs are data too (``facts.json``: capital, language, birthplace
tables; :func:`fact_prompts`), e.g. ``"Einstein: Germany. Newton: England. Curie:"`` with per-token roles.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from jaxtyping import Bool, Int

IdT = TypeVar("IdT", torch.Tensor, int)  # a token index or a tensor of them
FAMILIES = ("random", "all_bijections", "affine")
MAX_POPULATION = 50_000


def is_prime(n: int) -> bool:
    return n >= 2 and all(n % p for p in range(2, math.isqrt(n) + 1))


def max_relations(n: int, family: str) -> int:
    """How many distinct relations ``family`` can supply for ``n`` subjects."""
    if family == "affine":
        return n * (n - 1) if is_prime(n) else 0
    return math.factorial(n)


@dataclass(frozen=True)
class ICRecallSpec:
    """Sizes of one IC-recall task: ``n`` subjects (= answers), ``m`` relations, ``k`` in-context pairs."""

    n: int
    m: int
    k: int = 2
    family: str = "random"  # one of FAMILIES
    seed: int = 0

    def validate(self) -> None:
        """Raise ``ValueError`` naming the bad value (before any work)."""
        for name in ("n", "m", "k"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r}; expected an integer >= 1")
        if self.family not in FAMILIES:
            raise ValueError(f"relation family {self.family!r}; expected one of {FAMILIES}")
        if self.k + 1 > self.n:
            raise ValueError(f"k={self.k} in-context pairs need k+1={self.k + 1} distinct subjects; n={self.n}")
        if self.family == "affine" and not is_prime(self.n):
            raise ValueError(f"relation family 'affine' needs a prime n; n={self.n}")
        if self.family == "all_bijections" and self.n > 8:
            raise ValueError(
                f"relation family 'all_bijections' enumerates n! bijections; n={self.n} is too large (<= 8)"
            )
        cap = max_relations(self.n, self.family)
        if self.m > cap:
            raise ValueError(
                f"relation family {self.family!r} cannot supply m={self.m} distinct relations for "
                f"n={self.n} (at most {cap})"
            )

    @property
    def d_vocab(self) -> int:
        return 2 * self.n + self.m + 1

    @property
    def seq_len(self) -> int:
        """Teacher-forced length ``2k+3`` (context, query subject, EoS, relation)."""
        return 2 * self.k + 3

    @property
    def population_size(self) -> int:
        """Number of distinct IC-recall sequences, ``m · n!/(n-k-1)!``."""
        return self.m * math.perm(self.n, self.k + 1)


def check_n_ctx(spec: ICRecallSpec, n_ctx: int | None) -> int:
    """``n_ctx`` (default ``2k+3``), checked: the 2k+2 tokens up to EoS plus the appended relation must fit."""
    if n_ctx is None:
        return spec.seq_len
    if not isinstance(n_ctx, int) or n_ctx < spec.seq_len:
        raise ValueError(
            f"n_ctx={n_ctx!r} is too short: k={spec.k} in-context pairs give 2k+2={2 * spec.k + 2} tokens "
            f"up to EoS plus the decoded relation, so n_ctx must be >= 2k+3={spec.seq_len}"
        )
    return n_ctx


def check_temperature(T: float) -> None:
    """The decoding temperature must be a finite number > 0."""
    if not (isinstance(T, (int, float)) and T > 0 and math.isfinite(T)):
        raise ValueError(f"temperature T={T!r}; expected a number > 0")


def check_sample_count(spec: ICRecallSpec, N: int) -> None:
    """``N`` fine-tuning samples must not exceed the number of distinct sequences (an error naming it)."""
    if not isinstance(N, int) or N < 1:
        raise ValueError(f"N={N!r}; expected an integer >= 1")
    if spec.population_size < N:
        raise ValueError(
            f"N={N} fine-tuning samples exceed the {spec.population_size} distinct IC-recall "
            f"sequences of n={spec.n}, m={spec.m}, k={spec.k}"
        )


@dataclass
class ICRecallData:
    """A set of IC-recall sequences (a fine-tuning set D or a test set).

    ``tokens``: ``[B, 2k+3]`` teacher-forced (last token = ``r*``); ``relation``: ``[B]`` index of ``r*``;
    ``subjects``/``answers``: ``[B, k+1]`` indices (the last answer is the target ``a_{k+1}``).
    """

    tokens: Int[torch.Tensor, "batch seq"]
    relation: Int[torch.Tensor, " batch"]
    subjects: Int[torch.Tensor, "batch k1"]
    answers: Int[torch.Tensor, "batch k1"]

    def __len__(self) -> int:
        return self.tokens.shape[0]

    @property
    def answer(self) -> Int[torch.Tensor, " batch"]:
        return self.answers[:, -1]

    @property
    def k(self) -> int:
        return self.subjects.shape[1] - 1

    def subset(self, index: torch.Tensor) -> "ICRecallData":
        return ICRecallData(self.tokens[index], self.relation[index], self.subjects[index], self.answers[index])


class ICRecallTask:
    """Relation table + vocabulary + sampling of one IC-recall task (all deterministic in ``spec.seed``)."""

    def __init__(self, spec: ICRecallSpec) -> None:
        spec.validate()
        self.spec = spec
        self.n, self.m, self.k = spec.n, spec.m, spec.k
        self.rel: Int[torch.Tensor, "m n"] = make_relations(spec)

    # -- vocabulary --------------------------------------------------------------------------
    def subject_id(self, s: IdT) -> IdT:
        return s

    def answer_id(self, a: IdT) -> IdT:
        return a + self.n

    def relation_id(self, r: IdT) -> IdT:
        return r + 2 * self.n

    @property
    def eos_id(self) -> int:
        return 2 * self.n + self.m

    @property
    def relation_pos(self) -> int:
        """Position of EoS, where the first step (the relation) is read."""
        return 2 * self.k + 1

    @property
    def answer_pos(self) -> int:
        """Position of the appended relation, where the second step (the answer) is read."""
        return 2 * self.k + 2

    # -- sequences ---------------------------------------------------------------------------
    def make(self, relation: Int[torch.Tensor, " batch"], subjects: Int[torch.Tensor, "batch k1"]) -> ICRecallData:
        """Sequences for relations ``[B]`` and distinct subjects ``[B, k+1]``."""
        answers = self.rel[relation[:, None], subjects]  # [B, k+1]
        B, k = len(relation), self.k
        tokens = torch.empty(B, 2 * k + 3, dtype=torch.long)
        tokens[:, 0 : 2 * k + 1 : 2] = subjects
        tokens[:, 1 : 2 * k : 2] = self.answer_id(answers[:, :k])
        tokens[:, 2 * k + 1] = self.eos_id
        tokens[:, 2 * k + 2] = self.relation_id(relation)
        return ICRecallData(tokens, relation.clone(), subjects.clone(), answers)

    def sample(self, N: int, generator: torch.Generator) -> ICRecallData:
        """``N`` i.i.d. draws from P_IC (Definition 2.1): r* uniform, k+1 distinct subjects uniform."""
        if not isinstance(N, int) or N < 1:
            raise ValueError(f"N={N!r}; expected an integer >= 1")
        relation = torch.randint(self.m, (N,), generator=generator)
        subjects = torch.rand(N, self.n, generator=generator).argsort(dim=1)[:, : self.k + 1]
        return self.make(relation, subjects)

    def population(
        self, max_size: int | None = MAX_POPULATION, generator: torch.Generator | None = None
    ) -> ICRecallData:
        """Every distinct sequence (``m · n!/(n-k-1)!``), or ``max_size`` i.i.d. draws when there are more."""
        if max_size is not None and self.spec.population_size > max_size:
            return self.sample(max_size, generator if generator is not None else torch.Generator().manual_seed(0))
        tuples = torch.tensor(list(itertools.permutations(range(self.n), self.k + 1)), dtype=torch.long)
        relation = torch.arange(self.m).repeat_interleave(len(tuples))
        return self.make(relation, tuples.repeat(self.m, 1))

    def pretraining_population(self) -> tuple[Int[torch.Tensor, "b 2"], Int[torch.Tensor, " b"]]:
        """All ``6nm`` pretraining sequences ``(u1, u2)`` -> the third element of a fact (§5)."""
        s = torch.arange(self.n).repeat(self.m)
        r = torch.arange(self.m).repeat_interleave(self.n)
        triple = torch.stack([s, self.relation_id(r), self.answer_id(self.rel[r, s])], dim=1)  # [nm, 3]
        tokens, targets = [], []
        for i, j in itertools.permutations(range(3), 2):
            tokens.append(triple[:, [i, j]])
            targets.append(triple[:, 3 - i - j])
        return torch.cat(tokens), torch.cat(targets)

    # -- identifiability ---------------------------------------------------------------------
    def matches(self, data: ICRecallData) -> Bool[torch.Tensor, "batch m k1 k"]:
        """``M[b, r, i, j] = (r(s_i) = a_j)`` for subjects ``i <= k+1`` and context answers ``j <= k``."""
        images = self.rel[:, data.subjects].permute(1, 0, 2)  # [B, m, k+1]
        return images[:, :, :, None] == data.answers[:, None, None, : self.k]

    def consistent(self, data: ICRecallData) -> Bool[torch.Tensor, "batch m"]:
        """Relations consistent with the context: ``r(s_j) = a_j`` for every ``j <= k``."""
        images = self.rel[:, data.subjects[:, : self.k]].permute(1, 0, 2)  # [B, m, k]
        return (images == data.answers[:, None, : self.k]).all(-1)

    def bayes_ceiling(self, data: ICRecallData | None = None) -> float:
        """Best possible first-step accuracy, E[1/K] (K = number of consistent relations).

        With ``data``: the mean over those sequences. Without: exact over P_IC, enumerating every
        (relation, ordered k-tuple of context subjects) (K does not depend on the query subject).
        """
        if data is None:
            tuples = torch.tensor(list(itertools.permutations(range(self.n), self.k)), dtype=torch.long)
            images = self.rel[:, tuples]  # [m, P, k]: the contexts are (tuple, rel[r, tuple]) for every r
            powers = self.n ** torch.arange(self.k)
            codes = (images * powers).sum(-1) + torch.arange(len(tuples)) * self.n**self.k  # one code per context
            _, inverse, counts = torch.unique(codes, return_inverse=True, return_counts=True)
            K = counts[inverse]  # [m, P]: relations sharing the context
            return float((1.0 / K.double()).mean())
        K = self.consistent(data).sum(-1).double()
        return float((1.0 / K).mean())

    def answer_ceiling(self, data: ICRecallData) -> float:
        """Best possible end-to-end (final answer) accuracy: E[max_a #{consistent r: r(s_{k+1}) = a} / K]."""
        consistent = self.consistent(data)  # [B, m]
        final = self.rel[:, data.subjects[:, -1]].T  # [B, m]
        counts = torch.zeros(len(data), self.n, dtype=torch.double)
        counts.scatter_add_(1, final, consistent.double())
        return float((counts.max(-1).values / consistent.sum(-1).double()).mean())

    def sequence_types(self, data: ICRecallData) -> dict[str, torch.Tensor]:
        """§4.2's types: ``confusing`` (some relation maps s_1..s_k onto a permutation of a_1..a_k other than
        the identity; k = 2: r(s1) = a2, r(s2) = a1) and ``mismatched`` (some relation maps k of the k+1
        subjects, s_{k+1} included, onto a_1..a_k). Also ``n_matching``: relations covering every a_j."""
        M = self.matches(data)  # [B, m, k+1, k]
        covering = M.any(2).all(-1)  # each context answer is hit (bijection: by one subject each)
        identity = torch.eye(self.k, dtype=torch.bool)
        from_context = M[:, :, : self.k, :].any(2).all(-1)
        confusing = (from_context & ~(M[:, :, : self.k, :] == identity).all((-1, -2))).any(-1)
        mismatched = (covering & M[:, :, self.k, :].any(-1)).any(-1)
        return {"confusing": confusing, "mismatched": mismatched, "n_matching": covering.sum(-1)}

    def assumption_2_2_violations(self) -> int:
        """Number of relation pairs that agree on >= 2 subjects (0 iff Assumption 2.2 holds, distinct s1, s2)."""
        agree = (self.rel[:, None, :] == self.rel[None, :, :]).sum(-1)
        return int(torch.triu(agree >= 2, diagonal=1).sum())


def make_relations(spec: ICRecallSpec) -> Int[torch.Tensor, "m n"]:
    """The relation table of ``spec.family`` (see the module docstring); deterministic in ``spec.seed``."""
    spec.validate()
    n, m = spec.n, spec.m
    g = torch.Generator().manual_seed(1_000_003 * spec.seed + 17)
    if spec.family == "all_bijections":
        perms = torch.tensor(list(itertools.permutations(range(n))), dtype=torch.long)
        if m == len(perms):
            return perms
        return perms[torch.randperm(len(perms), generator=g)[:m]]
    if spec.family == "affine":
        x = torch.arange(n)
        table = torch.stack([(alpha * x + beta) % n for alpha in range(1, n) for beta in range(n)])
        table = table[torch.randperm(len(table), generator=g)[:m]]
        relabel_s, relabel_a = torch.randperm(n, generator=g), torch.randperm(n, generator=g)
        return relabel_a[table][:, relabel_s]
    # random: distinct uniform random bijections (duplicates redrawn)
    rows: list[torch.Tensor] = []
    seen: set[tuple[int, ...]] = set()
    while len(rows) < m:
        batch = torch.rand(2 * (m - len(rows)) + 4, n, generator=g).argsort(dim=1)
        for row in batch:
            key = tuple(row.tolist())
            if key not in seen:
                seen.add(key)
                rows.append(row)
                if len(rows) == m:
                    break
    return torch.stack(rows)


# ------------------------------------------------------------- few-shot fact prompts (extension)

FACTS = Path(__file__).with_name("facts.json")


def load_facts(path: str | Path = FACTS) -> dict[str, list[tuple[str, str]]]:
    """Relation name -> (subject, answer) pairs (keys starting with ``_`` are comments)."""
    raw = json.loads(Path(path).read_text())
    return {name: [tuple(p) for p in pairs] for name, pairs in raw.items() if not name.startswith("_")}


def prompt_vocab(path: str | Path = FACTS) -> list[str]:
    """Every word the prompts use (for a test tokenizer): subjects, answers and the punctuation."""
    words = {w for pairs in load_facts(path).values() for pair in pairs for w in pair}
    return [*sorted(words), ":", "."]


def fact_prompts(
    tokenizer: Any, k: int = 2, n_prompts: int = 100, seed: int = 0, path: str | Path = FACTS
) -> dict[str, Any]:
    """Tokenized prompts with per-token roles (``2i``/``2i+1`` for pair i's subject/answer, QUERY, END, OTHER).

    Returns ``tokens [B, T]`` (right-padded), ``roles [B, T]``, ``query_pos [B]`` (the final ``":"``),
    ``texts`` and ``relations``. Pieces are tokenized one by one (``" " + word``), so word spans are exact."""
    from analyses.pair_attention import END, OTHER, QUERY  # the roles (imports TransformerLens: only here)

    facts = load_facts(path)
    rng = random.Random(seed)
    bos = getattr(tokenizer, "bos_token_id", None)
    pad = bos if bos is not None else (tokenizer.eos_token_id or 0)
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    rows, texts, relations = [], [], []
    names = sorted(facts)
    for _ in range(n_prompts):
        rel = rng.choice(names)
        pairs = rng.sample(facts[rel], k + 1)
        pieces: list[tuple[str, int]] = []
        for i, (s, a) in enumerate(pairs[:k]):
            pieces += [((" " if i else "") + s, 2 * i), (":", OTHER), (" " + a, 2 * i + 1), (".", OTHER)]
        pieces += [(" " + pairs[k][0], QUERY), (":", END)]
        ids, roles = ([bos], [OTHER]) if bos is not None else ([], [])
        for text, role in pieces:
            piece = encode(text)
            ids += piece
            roles += [role] * len(piece)
        rows.append((ids, roles))
        texts.append("".join(t for t, _ in pieces))
        relations.append(rel)
    T = max(len(ids) for ids, _ in rows)
    tokens = torch.full((len(rows), T), pad, dtype=torch.long)
    roles = torch.full((len(rows), T), OTHER, dtype=torch.long)
    query_pos = torch.empty(len(rows), dtype=torch.long)
    for b, (ids, rl) in enumerate(rows):
        tokens[b, : len(ids)] = torch.tensor(ids)
        roles[b, : len(rl)] = torch.tensor(rl)
        query_pos[b] = len(ids) - 1
    return {"tokens": tokens, "roles": roles, "query_pos": query_pos, "texts": texts, "relations": relations}
