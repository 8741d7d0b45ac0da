"""Prompt tables of Chen, Bruna & Bietti, "Distributional Associations vs In-Context Reasoning" (§4.1, App. I).

Verbatim from the paper:

* :data:`MADRID` -- "Madrid is located in" -> "Spain" (Table 1, §4.1, Fig. 5 right), with the Table 1
  top-5 tokens :data:`MADRID_TOKENS` and probabilities :data:`TABLE1_PROBS`.
* :data:`FACTUAL_20` -- the 20 factual prompts and targets of Table 5 (App. I.2; Fig. 16).
* :data:`PREPOSITIONS` -- the 30 raw prepositions and :data:`PREPOSITION_SENTENCES` -- the 40 incomplete
  sentences ending with a preposition (App. I.1; Fig. 14).
* :data:`IOI_NAMES` (the name pool of Wang et al. 2022), :data:`IOI_TEMPLATE` and :func:`ioi_prompts` -- the
  IOI prompts of §4.1 / Fig. 5 left / Fig. 15; :data:`GPT2_IOI` and :data:`GPT2_IOI_TOKENS` -- the GPT-2 small
  demonstration of Fig. 17.

:func:`prompt_words` lists every word used here, for building a covering word-level tokenizer
(``pretrained.testing.tiny_tokenizer(prompt_vocab())``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pretrained.prompts import AnswerToken, Prompt, _check_text, answer_token, is_single_token, tokenizer_of

__all__ = [
    "FACTUAL_20",
    "GPT2_IOI",
    "GPT2_IOI_NO_NAMES",
    "GPT2_IOI_TOKENS",
    "IOI_NAMES",
    "IOI_TEMPLATE",
    "MADRID",
    "MADRID_NO_CUE",
    "MADRID_TOKENS",
    "PREPOSITIONS",
    "PREPOSITION_SENTENCES",
    "TABLE1_PROBS",
    "IOIPrompt",
    "ioi_prompts",
    "ioi_prompts_without_io",
    "prompt_vocab",
    "prompt_words",
    "single_token_names",
]


@dataclass(frozen=True)
class IOIPrompt:
    """An indirect-object-identification prompt: ``prompt`` mentions ``io`` once and ``s`` twice (ABB order).

    The correct answer is the indirect object ``io``; ``s`` (the subject) is the in-context distractor.
    """

    prompt: str
    io: str
    s: str

    def __post_init__(self) -> None:
        _check_text(self.prompt, "prompt", strip_ok=True)
        _check_text(self.io, "io", strip_ok=False)
        _check_text(self.s, "s", strip_ok=False)
        if self.io == self.s:
            raise ValueError(f"io and s must differ, both are {self.io!r}")

    @classmethod
    def from_names(cls, io: str, s: str, template: str | None = None) -> "IOIPrompt":
        """``IOIPrompt(IOI_TEMPLATE.format(io=io, s=s), io, s)`` (or another template with ``{io}``/``{s}``)."""
        return cls((IOI_TEMPLATE if template is None else template).format(io=io, s=s), io, s)

    @property
    def answer(self) -> str:
        return self.io

    def as_prompt(self) -> Prompt:
        return Prompt(self.prompt, self.io)

    def answer_token(self, tokenizer_or_model: Any) -> AnswerToken:
        """Token of ``" " + io``."""
        return answer_token(tokenizer_or_model, self.io)

    def io_token(self, tokenizer_or_model: Any) -> AnswerToken:
        return answer_token(tokenizer_or_model, self.io)

    def s_token(self, tokenizer_or_model: Any) -> AnswerToken:
        return answer_token(tokenizer_or_model, self.s)


# --------------------------------------------------------------------------- factual recall

#: Table 1 / §4.1 (Fig. 5 right): the factual-recall prompt studied on Pythia-1B.
MADRID = Prompt("Madrid is located in", "Spain")

#: The control of the factual claims (ours, not the paper's): :data:`MADRID` without its in-context cue (no
#: "Madrid"), scored for the same answer " Spain"; LASER should not make " Spain" win here.
MADRID_NO_CUE = Prompt("It is located in", "Spain")

#: Table 1: the top-5 next tokens of Pythia-1B (final checkpoint) after :data:`MADRID` (each with a leading space).
MADRID_TOKENS: tuple[str, ...] = ("the", "Spain", "a", "southern", "northern")

#: Table 1: probabilities of :data:`MADRID_TOKENS` for the full model and the LASER model
#: (``blocks[15].mlp.W_in``, rho = 0.0125), Pythia-1B.
TABLE1_PROBS: dict[str, dict[str, float]] = {
    "full": {"the": 0.499, "Spain": 0.079, "a": 0.069, "southern": 0.023, "northern": 0.021},
    "laser": {"the": 0.027, "Spain": 0.300, "a": 0.002, "southern": 0.044, "northern": 0.046},
}

#: Table 5 (App. I.2; Fig. 16): 20 factual prompts and targets, verbatim ("Galápagos" keeps its accent).
#: Several targets are multi-token ("New York Harbor", "Bennelong Point"): scored by their first sub-token.
FACTUAL_20: tuple[Prompt, ...] = tuple(
    Prompt(p, a)
    for p, a in (
        ("The Great Wall is located in", "China"),
        ("Mount Kilimanjaro is located in", "Tanzania"),
        ("The Nobel Prize is awarded in", "Sweden"),
        ("The Statue of Liberty stands in", "New York Harbor"),
        ("Vatican City is enclosed within", "Rome"),
        ("The Acropolis is situated in", "Athens"),
        ("The Sydney Opera House is located on", "Bennelong Point"),
        ("The Galápagos Islands belong to", "Ecuador"),
        ("The Aurora Borealis can be seen in", "Norway"),
        ("The Amazon River flows through", "Brazil"),
        ("The Andes Mountains extend through", "Chile"),
        ("Machu Picchu is found in", "Peru"),
        ("The Kremlin is located in", "Moscow"),
        ("Uluru is a landmark found in", "Australia"),
        ("Petra is an archaeological city in", "Jordan"),
        ("Angkor Wat is located in", "Cambodia"),
        ("The city of Toronto is in", "Canada"),
        ("The city of Barcelona is in", "Spain"),
        ("The city of Mumbai is in", "India"),
        ("The Eiffel Tower is located in", "Paris"),
    )
)

# --------------------------------------------------------------------------- prepositions (App. I.1, Fig. 14)

#: App. I.1: the 30 raw prepositions; each is a whole input by itself (no leading space).
PREPOSITIONS: tuple[str, ...] = tuple(
    """
    about above across after against along around at before behind below beneath beside between by
    during for from in inside into near of on over through to under with without
    """.split()
)

#: App. I.1: the 40 incomplete sentences ending with a preposition, verbatim (ASCII apostrophes).
PREPOSITION_SENTENCES: tuple[str, ...] = (
    "Inspired painter gazed at pristine canvas, envisioning next creation about",
    "Children's delighted squeals filled yard as they frolicked, stumbling across",
    "Singer inhaled deeply, calming nerves before gracing stage before",
    "Ominous storm clouds amassed, promising downpour that would soon roll in",
    "Awestruck trekker admired breathtaking summit vista, looking over",
    "Rich aroma of freshly roasted beans permeated cozy cafe, enticing during",
    "With deft sleight of hand, illusionist made coin vanish, leaving spectators in awe without",
    "Majestic oak stood tall, branches reaching skyward above",
    "Gentle waves caressed shoreline, soothing rhythm lulling along",
    "Meticulous investigator scoured crime scene, searching for any evidence left behind",
    "Radiant sunbeams filtered through sheer curtains, warming hardwood floor beneath",
    "Concert pianist's nimble fingers glided across ivory keys, room resonating with melody around",
    "Crickets' evening chorus filled silent field from nearby meadow during",
    "Jubilant laughter resounded down corridor as jovial group headed towards celebration without",
    "Struggling poet tapped pen restlessly, seeking words to capture elusive emotion beneath",
    "Soothing patter of raindrops danced on windowpane, inviting serene relaxation with",
    "Mouthwatering scent of fresh bread beckoned passersby into cozy bakery without",
    "Mighty waves thundered against jagged cliffs, echoing roar along rugged shoreline around",
    "Seasoned trekker carefully navigated winding trail, cautiously avoiding exposed roots and rocks beneath",
    "Graceful ballerina flowed across stage, movements blending seamlessly with melody during",
    "Crackling campfire cast dancing shadows across gathered faces around",
    "Vibrant brush strokes danced across canvas, bold hues bursting into life before",
    "Photographer framed breathtaking sunset, capturing fleeting beauty over glistening ocean without",
    "Stern librarian hushed raucous group, reminding them to stay quiet inside",
    "Ink flowed from author's pen, words brimming with raw passion as page filled during",
    "Earthy aroma of freshly steeped tea perfumed air, inviting moment of serenity along",
    "Masterful guitarist's fingers danced nimbly across strings, room alive with haunting melody around",
    "Meticulous chef artfully garnished plate, adding delicate finishing touches over",
    "Indomitable marathoner pushed through punishing final stretch, fortitude driving every stride before",
    "Engrossed scientist examined specimen's intricate structures through microscope beneath",
    "Nervous thespian steadied breathing, striding into dazzling spotlight, delivering flawless performance with",
    "Skilled artist's pencil glided gracefully, deftly capturing subject's essence without",
    "Weary hiker paused to catch breath, marveling at sweeping panorama from lofty peak above",
    "Deep in thought, writer drummed fingers, seeking perfect phrasing to convey profound emotion without",
    "Lost in reverie, violinist swayed gently, fingers dancing across delicate strings during",
    "Painter's brushstrokes burst into radiant life, canvas ablaze with vivid sunset hues over",
    "Adept photographer framed picturesque scene, preserving landscape's beauty without",
    "World-renowned chef meticulously garnished plate, each component strategically placed around",
    "Dedicated researcher scrutinized specimen under microscope, documenting minute details beneath",
    "Seasoned actor inhaled deeply, embodying character as bright lights engulfed stage with",
)

# --------------------------------------------------------------------------- IOI (§4.1, Fig. 5 left, 15, 17)

#: Spec App. A: the IOI name pool of Wang et al. (2022), in that order (the paper only says "random names").
IOI_NAMES: tuple[str, ...] = tuple(
    name.strip()
    for name in """
    Michael, Christopher, Jessica, Matthew, Ashley, Jennifer, Joshua, Amanda, Daniel, David, James, Robert, John,
    Joseph, Andrew, Ryan, Brandon, Jason, Justin, Sarah, William, Jonathan, Stephanie, Brian, Nicole, Nicholas,
    Anthony, Heather, Eric, Elizabeth, Adam, Megan, Melissa, Kevin, Steven, Thomas, Timothy, Christina, Kyle,
    Rachel, Laura, Lauren, Amber, Brittany, Danielle, Richard, Kimberly, Jeffrey, Amy, Crystal, Michelle, Tiffany,
    Jeremy, Benjamin, Mark, Emily, Aaron, Charles, Rebecca, Jacob, Stephen, Patrick, Sean, Erin, Jamie, Kelly,
    Samantha, Nathan, Sara, Dustin, Paul, Angela, Tyler, Scott, Katherine, Andrea, Gregory, Erica, Mary, Travis,
    Lisa, Kenneth, Bryan, Lindsey, Kristen, Jose, Alexander, Jesse, Katie, Lindsay, Shannon, Vanessa, Courtney,
    Christine, Alicia, Cody, Allison, Bradley, Samuel
    """.split(",")
)

#: §4.1 and footnote 1 ("a store", so that "the" never occurs in the context); ABB order, answer = IO.
IOI_TEMPLATE = "When {io} and {s} went to a store, {s} gave a drink to"

#: Fig. 17: the GPT-2 small IOI demonstration prompt (IO = Mary, S = John).
GPT2_IOI = Prompt("When Mary and John went to a store, John gave a drink to", "Mary")

#: Fig. 17: GPT-2 small's top-4 next tokens for :data:`GPT2_IOI` (each with a leading space), IO first.
GPT2_IOI_TOKENS: tuple[str, ...] = ("Mary", "them", "the", "John")

#: The control of Fig. 17's top-4 claim (ours): :data:`GPT2_IOI` with both names taken out of the context (and
#: still no "the"), so neither name can be copied from it.
GPT2_IOI_NO_NAMES = Prompt("When they went to a store, he gave a drink to", "Mary")


def single_token_names(tokenizer_or_model: Any, names: Iterable[str] = IOI_NAMES) -> list[str]:
    """The names (in order) whose ``" " + name`` is one token, not the unknown token, under the tokenizer."""
    tok = tokenizer_of(tokenizer_or_model)
    return [name for name in names if is_single_token(tok, name)]


def ioi_prompts(
    tokenizer: Any,
    n: int = 100,
    seed: int = 0,
    min_names: int = 20,
    *,
    names: Sequence[str] = IOI_NAMES,
    template: str = IOI_TEMPLATE,
) -> list[IOIPrompt]:
    """``n`` IOI prompts "with random names for [IO] and [S]" (§4.1 recommended generator).

    The name pool (default :data:`IOI_NAMES`) is filtered to names whose ``" " + name`` is a single token under
    ``tokenizer`` (an HF tokenizer or a ``HookedTransformer``); ``ValueError`` if fewer than ``min_names``
    survive. Then, with ``random.Random(seed)``, each prompt draws an ordered pair (IO, S) of distinct names
    uniformly and fills ``template`` (ABB: "When IO and S went to a store, S gave a drink to" -> " IO").
    Deterministic in (surviving names, n, seed): the same tokenizer and seed give the same prompts.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if isinstance(min_names, bool) or not isinstance(min_names, int) or min_names < 2:
        raise ValueError(f"min_names must be an integer >= 2 (IO and S are distinct), got {min_names!r}")
    pool = single_token_names(tokenizer, names)
    if len(pool) < min_names:
        raise ValueError(
            f"only {len(pool)} of {len(tuple(names))} IOI names are a single token (with a leading space) under "
            f"this tokenizer; need at least min_names={min_names}"
            + (f" (survivors: {', '.join(pool)})" if pool else "")
        )
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        io, s = rng.sample(pool, 2)
        out.append(IOIPrompt.from_names(io, s, template))
    return out


def ioi_prompts_without_io(
    prompts: Sequence[IOIPrompt], pool: Sequence[str], template: str = IOI_TEMPLATE
) -> list[IOIPrompt]:
    """The control of the IOI claims (ours): each prompt (made with ``template``) made again with its IO replaced
    in the context by another name of ``pool`` (neither its IO nor its S: the first such name from position
    ``i`` on), its ``io`` unchanged, so that the answer scored is no longer in the context."""
    if len(set(pool)) < 3:
        raise ValueError(f"ioi_prompts_without_io: {len(set(pool))} distinct names in the pool; expected >= 3")
    out = []
    for i, p in enumerate(prompts):
        other = next(n for n in [*pool[i % len(pool) :], *pool] if n not in (p.io, p.s))
        out.append(IOIPrompt(template.format(io=other, s=p.s), p.io, p.s))
    return out


def prompt_words() -> list[str]:
    """Every whitespace-separated word of the datasets here, deduplicated in order of first appearance.

    Covers :data:`MADRID` and :data:`MADRID_TOKENS`, :data:`FACTUAL_20` (prompts and every answer word),
    :data:`PREPOSITIONS`, :data:`PREPOSITION_SENTENCES`, the :data:`IOI_TEMPLATE` words, :data:`IOI_NAMES`,
    :data:`GPT2_IOI` and :data:`GPT2_IOI_TOKENS`, the controls :data:`MADRID_NO_CUE` and :data:`GPT2_IOI_NO_NAMES`,
    and "the", "a", "them". Words keep their punctuation
    ("store,", "Children's"), as a byte-level pre-tokenizer sees them.
    """
    texts: list[str] = [MADRID.prompt, MADRID.answer, *MADRID_TOKENS, MADRID_NO_CUE.prompt, GPT2_IOI_NO_NAMES.prompt]
    for p in FACTUAL_20:
        texts += [p.prompt, p.answer]
    texts += [*PREPOSITIONS, *PREPOSITION_SENTENCES]
    texts += [w for w in IOI_TEMPLATE.split() if "{" not in w]
    texts += [*IOI_NAMES, GPT2_IOI.prompt, GPT2_IOI.answer, *GPT2_IOI_TOKENS, "the", "a", "them"]
    return list(dict.fromkeys(w for t in texts for w in t.split()))


def prompt_vocab() -> list[str]:
    """``pretrained.testing.DEFAULT_WORDS`` then :func:`prompt_words`, deduplicated: with it a tiny word-level
    tokenizer covers every prompt here, and ``" " + word`` is one token for every answer word and IOI name."""
    from pretrained.testing import DEFAULT_WORDS

    return list(dict.fromkeys([*DEFAULT_WORDS, *prompt_words()]))
