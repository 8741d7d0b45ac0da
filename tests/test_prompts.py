"""Tests of ``pretrained.prompts``: the paper-003 prompt sets as data, IOI generation, prompt files, and the
tiny covering tokenizer / checkpoint of ``pretrained.testing.prompt_vocab``. Offline and CPU-only."""

from __future__ import annotations

import dataclasses
import pickle
import random

import pytest
import torch

import pretrained
from analyses.papers.distributional.data import prompts as P
from analyses.papers.distributional.data.prompts import (
    FACTUAL_20,
    GPT2_IOI,
    GPT2_IOI_TOKENS,
    IOI_NAMES,
    IOI_TEMPLATE,
    MADRID,
    PREPOSITION_SENTENCES,
    PREPOSITIONS,
    IOIPrompt,
    ioi_prompts,
    prompt_vocab,
    prompt_words,
    single_token_names,
)
from pretrained.prompts import AnswerToken, Prompt, load_prompt_file
from pretrained.testing import DEFAULT_WORDS, EOT, tiny_checkpoint, tiny_tokenizer

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def cover_tok():
    return tiny_tokenizer(prompt_vocab())


def all_prompt_texts() -> list[str]:
    return [
        MADRID.prompt,
        *(p.prompt for p in FACTUAL_20),
        *PREPOSITIONS,
        *PREPOSITION_SENTENCES,
        GPT2_IOI.prompt,
        *(IOI_TEMPLATE.format(io=a, s=b) for a, b in zip(IOI_NAMES, IOI_NAMES[1:] + IOI_NAMES[:1])),
    ]


# --------------------------------------------------------------------------- data (verbatim)


def test_counts():
    assert len(FACTUAL_20) == 20 and all(isinstance(p, Prompt) for p in FACTUAL_20)
    assert len(PREPOSITIONS) == 30 and len(set(PREPOSITIONS)) == 30
    assert len(PREPOSITION_SENTENCES) == 40 and len(set(PREPOSITION_SENTENCES)) == 40
    # the NAMES list of Wang et al.'s ioi_dataset.py: 99 names (no "Zachary"), all distinct
    assert len(IOI_NAMES) == 99 and len(set(IOI_NAMES)) == 99 and "Zachary" not in IOI_NAMES
    assert all(name.isalpha() and name[0].isupper() for name in IOI_NAMES)
    assert len(GPT2_IOI_TOKENS) == 4


def test_factual_verbatim():
    assert Prompt("Madrid is located in", "Spain") == MADRID
    assert FACTUAL_20[0] == Prompt("The Great Wall is located in", "China")
    assert FACTUAL_20[3] == Prompt("The Statue of Liberty stands in", "New York Harbor")
    assert FACTUAL_20[6] == Prompt("The Sydney Opera House is located on", "Bennelong Point")
    assert FACTUAL_20[7] == Prompt("The Galápagos Islands belong to", "Ecuador")
    assert "\u00e1" in FACTUAL_20[7].prompt  # the accent is kept
    assert FACTUAL_20[13] == Prompt("Uluru is a landmark found in", "Australia")
    assert FACTUAL_20[19] == Prompt("The Eiffel Tower is located in", "Paris")
    assert [p.answer for p in FACTUAL_20] == [
        "China", "Tanzania", "Sweden", "New York Harbor", "Rome", "Athens", "Bennelong Point", "Ecuador",
        "Norway", "Brazil", "Chile", "Peru", "Moscow", "Australia", "Jordan", "Cambodia", "Canada", "Spain",
        "India", "Paris",
    ]  # fmt: skip
    assert P.MADRID_TOKENS == ("the", "Spain", "a", "southern", "northern")
    assert P.TABLE1_PROBS["full"]["the"] == 0.499 and P.TABLE1_PROBS["laser"]["Spain"] == 0.300


def test_prepositions_verbatim():
    assert PREPOSITIONS[:4] == ("about", "above", "across", "after")
    assert PREPOSITIONS[-4:] == ("to", "under", "with", "without")
    assert PREPOSITION_SENTENCES[0] == "Inspired painter gazed at pristine canvas, envisioning next creation about"
    assert PREPOSITION_SENTENCES[1] == "Children's delighted squeals filled yard as they frolicked, stumbling across"
    assert PREPOSITION_SENTENCES[12] == "Crickets' evening chorus filled silent field from nearby meadow during"
    assert PREPOSITION_SENTENCES[37] == (
        "World-renowned chef meticulously garnished plate, each component strategically placed around"
    )
    assert PREPOSITION_SENTENCES[-1] == (
        "Seasoned actor inhaled deeply, embodying character as bright lights engulfed stage with"
    )
    assert all(s.isascii() and "\u2019" not in s for s in PREPOSITION_SENTENCES)  # ASCII apostrophes, as given
    # every sentence ends with a preposition of the list
    assert all(s.split()[-1] in PREPOSITIONS for s in PREPOSITION_SENTENCES)


def test_ioi_constants():
    assert IOI_NAMES[:5] == ("Michael", "Christopher", "Jessica", "Matthew", "Ashley")
    assert IOI_NAMES[-3:] == ("Allison", "Bradley", "Samuel")
    assert IOI_NAMES.index("Erin") + 1 == IOI_NAMES.index("Jamie")
    assert IOI_TEMPLATE.format(io="Mary", s="John") == GPT2_IOI.prompt
    assert Prompt("When Mary and John went to a store, John gave a drink to", "Mary") == GPT2_IOI
    assert GPT2_IOI_TOKENS == ("Mary", "them", "the", "John")
    assert " the " not in IOI_TEMPLATE  # footnote 1: "a store", so "the" never occurs in the context


def test_prompt_validation():
    with pytest.raises(TypeError):
        Prompt("Madrid is located in", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        Prompt("", "Spain")
    with pytest.raises(ValueError, match="whitespace"):
        Prompt("Madrid is located in ", "Spain")
    assert Prompt("Madrid is located in", " Spain") == MADRID  # the leading space is optional
    with pytest.raises(ValueError, match="whitespace"):
        Prompt("Madrid is located in", "Spain ")
    with pytest.raises(ValueError, match="whitespace"):
        Prompt("Madrid is located in", "  Spain")
    with pytest.raises(ValueError, match="differ"):
        IOIPrompt("When Mary and Mary ...", "Mary", "Mary")
    with pytest.raises(dataclasses.FrozenInstanceError):
        MADRID.answer = "France"  # type: ignore[misc]


# --------------------------------------------------------------------------- answer tokens


def test_answer_token_single_and_multi(cover_tok):
    spain = MADRID.answer_token(cover_tok)
    assert isinstance(spain, int) and isinstance(spain, AnswerToken)
    assert spain == cover_tok.convert_tokens_to_ids("ĠSpain") and not spain.multi_token
    assert spain.text == " Spain" and spain.ids == (int(spain),) and spain.id == int(spain)
    assert torch.arange(len(cover_tok))[spain].item() == spain  # usable as an index

    harbor = FACTUAL_20[3].answer_token(cover_tok)
    assert harbor.multi_token and harbor.text == " New" and len(harbor.ids) == 3
    assert int(harbor) == cover_tok.encode(" New")[0]
    assert "multi_token" in repr(harbor)
    assert pickle.loads(pickle.dumps(harbor)).ids == harbor.ids

    # Missing from the vocabulary: clear error rather than silently scoring <|endoftext|>
    with pytest.raises(ValueError, match="unknown token"):
        Prompt("x", "Zanzibar").answer_token(tiny_tokenizer())


def test_answer_token_accepts_a_model(tmp_path):
    model = pretrained.load(tiny_checkpoint(tmp_path / "m", "gpt_neox", vocab=prompt_vocab()), processing="raw")
    assert MADRID.answer_token(model) == model.to_single_token(" Spain")
    ioi = IOIPrompt.from_names("Mary", "John")
    assert ioi.io_token(model) == model.to_single_token(" Mary") == ioi.answer_token(model)
    assert ioi.s_token(model) == model.to_single_token(" John")
    with pytest.raises(TypeError, match="tokenizer"):
        MADRID.answer_token(object())


# --------------------------------------------------------------------------- IOI prompts


def test_ioi_prompts_deterministic_distinct_abb(cover_tok):
    a = ioi_prompts(cover_tok)
    assert len(a) == 100 and all(isinstance(p, IOIPrompt) for p in a)
    assert a == ioi_prompts(cover_tok, n=100, seed=0) == ioi_prompts(tiny_tokenizer(prompt_vocab()))
    assert a != ioi_prompts(cover_tok, seed=1)
    assert ioi_prompts(cover_tok, n=10) == a[:10]
    for p in a:
        assert p.io != p.s and p.io in IOI_NAMES and p.s in IOI_NAMES
        assert p.prompt == f"When {p.io} and {p.s} went to a store, {p.s} gave a drink to"
        assert p.answer == p.io and p.as_prompt() == Prompt(p.prompt, p.io)
        words = p.prompt.replace(",", "").split()
        assert words.count(p.io) == 1 and words.count(p.s) == 2  # ABB
        assert words.index(p.io) < words.index(p.s)
    # the documented generator: random.Random(seed).sample(pool, 2) per prompt
    rng = random.Random(0)
    assert [(p.io, p.s) for p in a] == [tuple(rng.sample(list(IOI_NAMES), 2)) for _ in range(100)]
    assert len({(p.io, p.s) for p in a}) > 90  # varied
    assert ioi_prompts(cover_tok, n=0) == []


def test_ioi_prompts_filter_to_single_token_names():
    keep = list(IOI_NAMES[::3])  # 33 names in the vocabulary, the other 66 unknown
    tok = tiny_tokenizer([*DEFAULT_WORDS, *keep, "When", "went", "store,", "gave", "drink"])
    in_default = [n for n in IOI_NAMES if n in DEFAULT_WORDS]  # Michael, John, Mary, Paul
    survivors = single_token_names(tok)
    assert set(survivors) == set(keep) | set(in_default)
    assert survivors == [n for n in IOI_NAMES if n in survivors]  # pool order kept
    used = {name for p in ioi_prompts(tok, n=200) for name in (p.io, p.s)}
    assert used <= set(survivors) and len(used) > 20
    # multi-token names are dropped too, not just unknown ones
    split = {" Matthew", " Christopher"}

    class Splitting:  # a BPE-like tokenizer that splits two names into two pieces
        unk_token_id = tok.unk_token_id

        def encode(self, text, add_special_tokens=True):
            return [5, 6] if text in split else tok.encode(text, add_special_tokens=add_special_tokens)

    assert "Matthew" in keep and "Christopher" not in keep
    assert single_token_names(Splitting()) == [n for n in survivors if n != "Matthew"]


def test_ioi_prompts_too_few_names():
    tok = tiny_tokenizer()  # DEFAULT_WORDS: only Michael, John, Mary, Paul of the pool
    with pytest.raises(ValueError, match=r"only 4 of 99 IOI names"):
        ioi_prompts(tok)
    assert len(ioi_prompts(tok, n=5, min_names=4)) == 5
    with pytest.raises(ValueError, match="min_names"):
        ioi_prompts(tok, min_names=1)
    with pytest.raises(ValueError, match="non-negative"):
        ioi_prompts(tok, n=-1)


# --------------------------------------------------------------------------- prompt files


def test_load_prompt_file_good(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text(
        '{"prompt": "Madrid is located in", "answer": "Spain"}\n'
        "\n"
        "   \n"
        '{"prompt": "The Galápagos Islands belong to", "answer": "Ecuador", "note": "extra keys are ignored"}\n',
        encoding="utf-8",
    )
    assert load_prompt_file(f) == [MADRID, FACTUAL_20[7]]
    assert load_prompt_file(str(f)) == [MADRID, FACTUAL_20[7]]


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("", r"no prompts"),
        ("\n  \n", r"no prompts"),
        ('{"prompt": "a", "answer": "b"}\n{"prompt": "a" "answer": "b"}\n', r"line 2: invalid JSON"),
        ('{"prompt": "a"}\n', r"line 1: missing key 'answer'"),
        ('\n{"answer": "b"}\n', r"line 2: missing key 'prompt'"),
        ('{"prompt": "a", "answer": 3}\n', r"line 1: 'answer' must be a string, got int"),
        ('{"prompt": null, "answer": "b"}\n', r"line 1: 'prompt' must be a string"),
        ('["a", "b"]\n', r"line 1: expected a JSON object"),
        ('{"prompt": "a", "answer": ""}\n', r"line 1: answer must be non-empty"),
        ('{"prompt": "a ", "answer": "b"}\n', r"line 1: prompt must not end with whitespace"),
    ],
)
def test_load_prompt_file_bad(tmp_path, content, pattern):
    f = tmp_path / "bad.jsonl"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=pattern) as err:
        load_prompt_file(f)
    assert str(f) in str(err.value)


def test_load_prompt_file_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_prompt_file(tmp_path / "nope.jsonl")


# --------------------------------------------------------------------------- covering vocabulary / checkpoint


def test_prompt_words_and_vocab():
    words = prompt_words()
    assert len(words) == len(set(words))
    for w in [
        "Madrid",
        "Spain",
        "Galápagos",
        "Harbor",
        "Bennelong",
        "Children's",
        "World-renowned",
        "store,",
        "the",
        "a",
        "them",
        "southern",
        "northern",
        "When",
        "drink",
        *IOI_NAMES,
        *PREPOSITIONS,
    ]:
        assert w in words, w
    vocab = prompt_vocab()
    assert vocab[: len(DEFAULT_WORDS)] == list(DEFAULT_WORDS)
    assert len(vocab) == len(set(vocab)) and set(words) <= set(vocab)
    assert prompt_vocab() == vocab


def test_covering_tokenizer(cover_tok):
    eot = cover_tok.convert_tokens_to_ids(EOT)
    for text in all_prompt_texts():
        ids = cover_tok.encode(text)
        assert eot not in ids, (text, cover_tok.convert_ids_to_tokens(ids))
        assert cover_tok.decode(ids) == text
    for word in [*IOI_NAMES, *GPT2_IOI_TOKENS, *P.MADRID_TOKENS, *(w for p in FACTUAL_20 for w in p.answer.split())]:
        assert len(cover_tok.encode(" " + word)) == 1, word
    assert single_token_names(cover_tok) == list(IOI_NAMES)
    assert cover_tok.convert_ids_to_tokens(cover_tok.encode("a store, John")) == ["a", "Ġstore", ",", "ĠJohn"]
    assert cover_tok.convert_ids_to_tokens(cover_tok.encode("Children's")) == ["Children", "'s"]


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
def test_covering_tiny_checkpoint(tmp_path, arch):
    model = pretrained.load(tiny_checkpoint(tmp_path / arch, arch, vocab=prompt_vocab()), processing="raw")
    eot = model.to_single_token(EOT)
    assert model.to_single_token(" Spain") == MADRID.answer_token(model)
    for word in [*IOI_NAMES, "the", "a", "them", *(p.answer.split()[0] for p in FACTUAL_20)]:
        model.to_single_token(" " + word)  # raises unless exactly one token
    for text in all_prompt_texts():
        toks = model.to_tokens(text, prepend_bos=False)[0]
        assert eot not in toks.tolist(), text
        assert model.to_string(toks) == text
    prompts = ioi_prompts(model)
    assert len(prompts) == 100 and prompts == ioi_prompts(model.tokenizer)
    with torch.no_grad():
        logits = model(model.to_tokens([p.prompt for p in prompts[:4]], prepend_bos=False))
    assert logits.shape[:2] == (4, 14) and torch.isfinite(logits).all()
