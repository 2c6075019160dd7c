"""One name-normalisation module: its granularities agree where they should."""

from __future__ import annotations

import pytest

from cta import context, names, table
from cta.words import column_words, name_key, name_words, split_name

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


def test_no_other_module_defines_its_own() -> None:
    """The older homes only re-export the one implementation."""
    assert table.name_key is name_key
    assert context.split_name is split_name
    assert names.name_words is name_words
