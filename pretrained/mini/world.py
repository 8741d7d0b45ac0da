"""The invented world a mini model learns: people, cities, countries, occupations, and the templates that state them.

Every fact is made up (invented names, deterministic from a seed), so nothing is known before training and every
answer has a ground truth. Four relations, as in the contextual-recall and IC-recall papers' fact tables:

- ``person_city``, ``person_country``, ``person_occupation``: a person's attributes (biography-style records);
- ``city_country``: where a city lies (the LASER probe "``<city> is located in``" → its country, against the
  generic " the" of "is located in the north of ...").

Each relation has *train* templates (the only ones the corpus uses) and *held-out* templates (never in the corpus:
factual recall is measured on them). A template is ``"... {s} ... {a}"`` with the answer last; its prompt is the
text before ``{a}``, stripped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

#: First names: people's first names and IOI's names (frequent, so the tokenizer gives each one token).
FIRST_NAMES = (
    "John Mary Alice Bob Tom Anna Paul Kate Mark Lucy Sam Emma Jack Sara Mike Nina Adam Rose Dan Ella "
    "Luke Ivy Owen Zoe Carl Jane Hugo Iris Neil Ruth"
).split()
OCCUPATIONS = "baker pilot farmer doctor teacher painter sailor miner tailor singer lawyer nurse".split()
#: Generic nouns of the distributional sentences, the IOI stories and the repeated lists.
OBJECTS = "book cup key ring coat lamp hat bag box pen map coin".split()
PLACES = "garden house kitchen park market station library school river forest square harbor".split()
DIRECTIONS = "north south east west center".split()
SYLLABLES = "ka ve lo mar dri sen tol bra nik qua zel fen dor ril mu tash gol vin par eth cor lun sa bel".split()

TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    "person_city": {
        "train": ("{s} lives in {a}.", "{s} moved to {a} last year.", "The hometown of {s} is {a}."),
        "heldout": ("{s} was raised in {a}.", "The town where {s} lives is {a}."),
    },
    "person_country": {
        "train": ("{s} is a citizen of {a}.", "{s} holds a passport from {a}."),
        "heldout": ("{s} comes from {a}.",),
    },
    "person_occupation": {
        "train": ("{s} works as a {a}.", "By trade, {s} is a {a}.", "The job of {s} is {a}."),
        "heldout": ("{s} earns a living as a {a}.",),
    },
    "city_country": {
        "train": ("{s} is located in {a}.", "{s} is a city in {a}.", "The city of {s} lies in {a}."),
        "heldout": ("{s} belongs to {a}.",),
    },
}
#: The LASER probe (Chen, Bruna & Bietti §4.1's "Madrid is located in"): the city's country competes with the
#: generic " the", which the corpus puts after "is located in" more often ("... in the north of <country>").
LOCATED = "{s} is located in the {d} of {a}."


def invented_word(rng: random.Random, syllables: int, taken: set[str]) -> str:
    """A capitalised made-up word of ``syllables`` syllables, new to ``taken`` (and added to it)."""
    while True:
        word = "".join(rng.choice(SYLLABLES) for _ in range(syllables)).capitalize()
        if word not in taken and word.lower() not in {w.lower() for w in (*FIRST_NAMES, *OCCUPATIONS)}:
            taken.add(word)
            return word


@dataclass(eq=False)  # hashed by identity (the corpus caches its facts)
class World:
    """People, cities and countries with their attributes (every field JSON-able)."""

    seed: int
    countries: list[str]
    city_country: dict[str, str]
    people: dict[str, dict[str, str]]  # full name -> {"city", "country", "occupation"}
    templates: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=lambda: TEMPLATES)

    def facts(self) -> dict[str, list[tuple[str, str]]]:
        """Relation -> ``[(subject, answer)]``: the ground truth (IC-recall's facts-table format)."""
        people = [r for r in self.templates if r.startswith("person_")]
        out = {rel: [(p, a[rel.removeprefix("person_")]) for p, a in self.people.items()] for rel in people}
        out["city_country"] = list(self.city_country.items())
        return out

    def answers(self, relation: str) -> list[str]:
        """Every answer of ``relation`` (its possible values, sorted)."""
        return sorted({a for _, a in self.facts()[relation]})

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "countries": self.countries,
            "city_country": self.city_country,
            "people": self.people,
            "templates": {r: {k: list(v) for k, v in t.items()} for r, t in self.templates.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> World:
        templates = {r: {k: tuple(v) for k, v in t.items()} for r, t in d["templates"].items()}
        return cls(d["seed"], d["countries"], d["city_country"], d["people"], templates)


def make_world(seed: int, n_people: int, n_cities: int, n_countries: int) -> World:
    """A world of ``n_people`` people (first name + invented surname) in ``n_cities`` cities of ``n_countries``
    countries; every city has a country, every country at least one city; deterministic in its arguments."""
    if not 1 <= n_countries <= n_cities:
        raise ValueError(f"n_countries={n_countries}, n_cities={n_cities}; expected 1 <= n_countries <= n_cities")
    rng = random.Random(seed)
    taken: set[str] = set()
    countries = [invented_word(rng, 2, taken) + "ia" for _ in range(n_countries)]
    cities = [invented_word(rng, 3, taken) for _ in range(n_cities)]
    city_country = {c: countries[i % n_countries] for i, c in enumerate(cities)}
    people: dict[str, dict[str, str]] = {}
    while len(people) < n_people:
        name = f"{rng.choice(FIRST_NAMES)} {invented_word(rng, 2, taken)}"
        city = rng.choice(cities)
        people[name] = {"city": city, "country": city_country[city], "occupation": rng.choice(OCCUPATIONS)}
    return World(seed, countries, city_country, people)


def prompt_of(template: str, subject: str) -> str:
    """The text before the answer: ``"{s} lives in {a}."`` → ``"<subject> lives in"``."""
    return template.split("{a}")[0].format(s=subject).rstrip()
