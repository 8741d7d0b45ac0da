"""Natural-language contextual-recall prompts for the pretrained-model extension (not in the paper).

The paper's motivating example (§1): ``[Niagara Falls, Canada, <sep>, Colosseum, Italy, <sep>, Parthenon, ] ->
Greece`` — the relation is never named and must be inferred from the in-context pairs. Here the same
landmarks appear under two relations (country, city), plus a third relation on people (birth year), so the
relation type can only be read off the demonstrations. Prompts are ``"Subject: answer\\n"`` lines ending with
``"Query:"``; the answer is scored by the first token of ``" " + answer``.
"""

from __future__ import annotations

#: (landmark, city, country)
LANDMARKS = (
    ("Eiffel Tower", "Paris", "France"),
    ("Colosseum", "Rome", "Italy"),
    ("Parthenon", "Athens", "Greece"),
    ("Big Ben", "London", "England"),
    ("Brandenburg Gate", "Berlin", "Germany"),
    ("Sagrada Familia", "Barcelona", "Spain"),
    ("Kremlin", "Moscow", "Russia"),
    ("Forbidden City", "Beijing", "China"),
    ("Meiji Shrine", "Tokyo", "Japan"),
    ("Taj Mahal", "Agra", "India"),
    ("Christ the Redeemer", "Rio", "Brazil"),
    ("Great Pyramid", "Giza", "Egypt"),
    ("Uffizi Gallery", "Florence", "Italy"),
    ("Alhambra", "Granada", "Spain"),
    ("CN Tower", "Toronto", "Canada"),
    ("Golden Gate Bridge", "San Francisco", "USA"),
    ("Hagia Sophia", "Istanbul", "Turkey"),
    ("Petronas Towers", "Kuala Lumpur", "Malaysia"),
    ("Rijksmuseum", "Amsterdam", "Netherlands"),
    ("Space Needle", "Seattle", "USA"),
)

#: (person, birth year)
PEOPLE = (
    ("Albert Einstein", "1879"),
    ("Marie Curie", "1867"),
    ("Charles Darwin", "1809"),
    ("Abraham Lincoln", "1809"),
    ("Wolfgang Amadeus Mozart", "1756"),
    ("Ludwig van Beethoven", "1770"),
    ("Napoleon Bonaparte", "1769"),
    ("William Shakespeare", "1564"),
    ("Leonardo da Vinci", "1452"),
    ("Galileo Galilei", "1564"),
    ("Nikola Tesla", "1856"),
    ("Mahatma Gandhi", "1869"),
    ("Winston Churchill", "1874"),
    ("Pablo Picasso", "1881"),
    ("Vincent van Gogh", "1853"),
    ("Johann Sebastian Bach", "1685"),
    ("Queen Victoria", "1819"),
    ("George Washington", "1732"),
    ("Alan Turing", "1912"),
    ("Ada Lovelace", "1815"),
)

#: relation name -> ((subject, answer), ...)
RELATIONS = {
    "landmark_country": tuple((l, c) for l, _, c in LANDMARKS),
    "landmark_city": tuple((l, city) for l, city, _ in LANDMARKS),
    "person_birth_year": PEOPLE,
}


def prompt_text(pairs, query: str) -> str:
    """``"S1: A1\\nS2: A2\\n...\\nQuery:"``."""
    return "".join(f"{s}: {a}\n" for s, a in pairs) + f"{query}:"


def vocabulary() -> list[str]:
    """Every word the prompts use (for a tiny word-level test tokenizer)."""
    words = {":"}
    for pairs in RELATIONS.values():
        for s, a in pairs:
            words.update(s.split())
            words.update(a.split())
    return sorted(words)
