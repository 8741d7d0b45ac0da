"""The mini model's training text: documents generated from a :class:`~pretrained.mini.world.World`.

Five kinds of document, each probing one of the papers' pretrained experiments (shares in :data:`MIX`):

- ``bio``: a person's facts (and their city's) in the train templates (factual recall stored in the weights:
  the contextual-recall and IC-recall papers);
- ``generic``: everyday sentences where " the" follows "in" / "located in" (the distributional association
  LASER removes: Chen, Bruna & Bietti §4); city facts are stated as "located in the <direction> of <country>"
  more often than "located in <country>", as natural text does;
- ``repeat``: a random list of words (most of them nonce words), then the same list again (the repeated spans
  that induction heads copy);
- ``ioi``: name-swap stories, "When Mary and John went to the park, John gave a book to Mary.";
- ``icl``: demonstrations of one relation, ``"S: A\\n"`` lines or ``"S: A. S: A."`` (task vectors; IC-recall's
  few-shot prompts).

Deterministic from ``(world, seed, n_docs)``; documents are joined by the tokenizer's end-of-text token.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Callable, Iterator

from pretrained.mini.world import DIRECTIONS, FIRST_NAMES, LOCATED, OBJECTS, OCCUPATIONS, PLACES, SYLLABLES, World

#: Share of each kind of document.
MIX = {"bio": 0.2, "generic": 0.15, "repeat": 0.4, "ioi": 0.05, "icl": 0.2}
#: Share of real (world) words in a repeated list; the rest are nonce words, which only copying predicts.
NAMED_SHARE = 0.2
#: Share of city statements that say "located in the <direction> of" (the generic " the" after "located in").
LOCATED_THE = 0.6
IOI_TEMPLATES = (
    "When {a} and {b} went to the {p}, {b} gave a {o} to {a}.",
    "After {a} and {b} met at the {p}, {b} handed the {o} to {a}.",
    "{a} and {b} were in the {p}. {b} passed a {o} to {a}.",
)
GENERIC = (
    "{n} left the {o} in the {p}.",
    "The {o} is in the {p}.",
    "We found a {o} in the {p}.",
    "The {p} is located in the {d} of the town.",
    "{n} waited in the {p} with a {o}.",
)

Counts = Counter[tuple[str, str]]  # (relation, subject) -> times stated


def _bio(world: World, rng: random.Random, stated: Counts) -> str:
    person = rng.choice(list(world.people))
    relations = ["person_city", "person_country", "person_occupation"]
    rng.shuffle(relations)
    lines = []
    for rel in relations[: rng.randint(2, 3)]:
        answer = world.people[person][rel.removeprefix("person_")]
        lines.append(rng.choice(world.templates[rel]["train"]).format(s=person, a=answer))
        stated[(rel, person)] += 1
    if rng.random() < 0.5:
        lines.append(_city(world, world.people[person]["city"], rng, stated))
    return " ".join(lines)


def _city(world: World, city: str, rng: random.Random, stated: Counts) -> str:
    stated[("city_country", city)] += 1
    country = world.city_country[city]
    if rng.random() < LOCATED_THE:
        return LOCATED.format(s=city, d=rng.choice(DIRECTIONS), a=country)
    return rng.choice(world.templates["city_country"]["train"]).format(s=city, a=country)


def _generic(world: World, rng: random.Random, stated: Counts) -> str:
    lines = [
        rng.choice(GENERIC).format(
            n=rng.choice(FIRST_NAMES), o=rng.choice(OBJECTS), p=rng.choice(PLACES), d=rng.choice(DIRECTIONS)
        )
        for _ in range(rng.randint(2, 4))
    ]
    lines.append(_city(world, rng.choice(list(world.city_country)), rng, stated))
    return " ".join(lines)


def _repeat(world: World, rng: random.Random, stated: Counts) -> str:
    """A list of words, most of them made up on the spot (so only copying from the context predicts their second
    occurrence), then the same list once or twice more."""
    pool = [*FIRST_NAMES, *OBJECTS, *PLACES, *OCCUPATIONS, *world.city_country]
    words = [rng.choice(pool) if rng.random() < NAMED_SHARE else _nonce(rng) for _ in range(rng.randint(8, 30))]
    return "\n".join([" ".join(words)] * rng.randint(2, 3))


def _nonce(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))


def _ioi(world: World, rng: random.Random, stated: Counts) -> str:
    a, b = rng.sample(FIRST_NAMES, 2)
    return rng.choice(IOI_TEMPLATES).format(a=a, b=b, p=rng.choice(PLACES), o=rng.choice(OBJECTS))


def _icl(world: World, rng: random.Random, stated: Counts) -> str:
    facts = _facts(world)
    rel = rng.choice(sorted(facts))
    pairs = rng.sample(facts[rel], min(len(facts[rel]), rng.randint(3, 8)))
    for s, _ in pairs:
        stated[(rel, s)] += 1
    if rng.random() < 0.5:
        return "".join(f"{s}: {a}\n" for s, a in pairs).rstrip("\n")
    return " ".join(f"{s}: {a}." for s, a in pairs)


@functools.lru_cache(maxsize=4)
def _facts(world: World) -> dict[str, list[tuple[str, str]]]:
    return world.facts()


_KINDS: dict[str, Callable[[World, random.Random, Counts], str]] = {
    "bio": _bio,
    "generic": _generic,
    "repeat": _repeat,
    "ioi": _ioi,
    "icl": _icl,
}


def documents(world: World, n_docs: int, seed: int, stated: Counts | None = None) -> Iterator[str]:
    """``n_docs`` documents (kinds drawn by :data:`MIX`); ``stated`` counts each (relation, subject) stated."""
    rng = random.Random(seed)
    kinds, weights = list(MIX), list(MIX.values())
    stated = Counter() if stated is None else stated
    for _ in range(n_docs):
        yield _KINDS[rng.choices(kinds, weights)[0]](world, rng, stated)
