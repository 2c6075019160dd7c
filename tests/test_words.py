"""The one language module: its granularities agree where they should, and nothing else\nlemmatises, counts word frequencies or splits camelCase; seeded streams."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cta.seeding import rng_for_key, seeded_rng
from cta.words import (
    column_words,
    inflect,
    inflections,
    is_past_participle,
    lemma_words,
    name_key,
    name_words,
    singular,
    split_name,
    word_zipf,
)

PLAIN = ["HTTPServer", "firstName", "first_name", "First Name", "StuID", "iPhone", "Q1Sales"]


@pytest.mark.parametrize("name", PLAIN)
def test_key_words_and_judge_text_agree_on_plain_names(name: str) -> None:
    """Without punctuation, comparing, splitting and what the judge reads are one split."""
    assert name_key(name) == " ".join(split_name(name)) == column_words(name)
    # Look-up words only refine it (letters and digits apart).
    assert "".join(name_words(name)) == name_key(name).replace(" ", "")


def test_an_acronym_before_a_word_is_a_word_everywhere() -> None:
    assert name_key("HTTPServer") == name_key("http_server") == name_key("Http Server")
    assert split_name("HTTPServer") == name_words("HTTPServer") == ["http", "server"]


@pytest.mark.parametrize(("name", "key"), [("IDs", "ids"), ("URLs", "urls"), ("IMDb", "imdb"),
                                         ("DVDsSold", "dvds sold"), ("XMLHttpRequest", "xml http request")])  # fmt: skip
def test_a_plural_or_brand_acronym_stays_one_word(name: str, key: str) -> None:
    assert name_key(name) == key == " ".join(split_name(name)) == column_words(name)


def test_punctuation_is_kept_by_the_key_and_dropped_by_the_split() -> None:
    assert name_key("No.") != name_key("No")
    assert split_name("price.sunshine") == ["price", "sunshine"]
    assert column_words("e-mail") == "e-mail" and name_key("e-mail") == "e mail"


# What only the language module may call: the lemmatiser, the frequency list, and a camelCase
# split of its own (a look-ahead for a capital).
LANGUAGE_ONLY = re.compile(r"^\s*(from|import) (lemminflect|wordfreq)\b|\(\?=\[A-Z\]\)", re.M)
ROOT = Path(__file__).resolve().parents[1]


def test_the_language_module_is_the_only_home() -> None:
    """No module but cta/words.py lemmatises, counts word frequencies or splits camelCase its
    own way (the language module's functions are used everywhere else)."""
    sources = [
        path
        for package in ("cta", "retriever", "service", "benchmarks")
        for path in sorted((ROOT / package).rglob("*.py"))
    ]
    assert len(sources) > 100
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
        for path in sources
        if path != ROOT / "cta" / "words.py"
        for match in LANGUAGE_ONLY.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
    assert LANGUAGE_ONLY.search((ROOT / "cta" / "words.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("word", "one"),
    [("cities", "city"), ("children", "child"), ("Players", "player"), ("status", "status"),
     ("people", "people"), ("actresses", "actress"), ("series", "series")],
)  # fmt: skip
def test_singular(word: str, one: str) -> None:
    assert singular(word) == one


def test_lemma_words_split_like_names_and_lemmatise() -> None:
    assert lemma_words("writtenBy") == lemma_words("written_by") == ["write", "by"]
    assert lemma_words("HTTPServers") == ["http", "server"]
    assert inflect("author", "NNS") == ("authors",)
    assert "came" in inflections("come")["VBD"]
    assert word_zipf("the") > 7 > word_zipf("qzxv") == 0


def test_a_seeded_stream_depends_only_on_its_key() -> None:
    first = [seeded_rng(0, "books", "title").random() for _ in range(2)]
    assert first[0] == first[1]
    assert seeded_rng(0, "books", "title").random() != seeded_rng(1, "books", "title").random()
    # The JSON key keeps parts apart that a plain join would merge.
    assert seeded_rng("a b", "c").random() != seeded_rng("a", "b c").random()
    assert rng_for_key("k").random() == rng_for_key("k").random()


@pytest.mark.parametrize(
    ("word", "participle"),
    [("published", True), ("born", True), ("built", True), ("speed", False), ("need", False)],
)
def test_a_past_participle_is_told_by_the_lemmatiser(word: str, participle: bool) -> None:
    assert is_past_participle(word) is participle
