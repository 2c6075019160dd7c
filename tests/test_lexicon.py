"""Dictionary replacement: WordNet synonyms, seeded sampling, stop rules, inflection, style."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from wordfreq import zipf_frequency

from cta import registry
from cta.components import ColumnContext, DictionaryReplacer, NameEquivalence
from cta.settings import Settings
from cta.table import ColumnType
from cta.wordnet import WordNetMissingError, load_wordnet
from cta.words import name_words, word_spans
from retriever.lexicon import WordNetReplacer


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cta-home")
    try:
        load_wordnet(Settings(home=path))
    except WordNetMissingError as error:
        pytest.skip(f"WordNet not installed: {error}")
    return path


def replacer(home: Path, **overrides: Any) -> WordNetReplacer:
    """A replacer over every sense of a word (the sampling mechanics need many synonyms);
    the tests of the sense choice pass ``dictionary_max_senses`` themselves."""
    settings = Settings(home=home, **{"dictionary_max_senses": 0, **overrides})
    return WordNetReplacer(load_wordnet(settings), settings)


def names(candidates: list[Any]) -> list[str]:
    return [c.name for c in candidates]


@pytest.mark.parametrize(
    ("column", "words"),
    [
        ("first_name", ["first", "name"]),
        ("firstName", ["first", "name"]),
        ("First Name", ["first", "name"]),
        ("HTTPServer2", ["http", "server", "2"]),
        ("charge ($)", ["charge"]),
        ("año de nacimiento", ["año", "de", "nacimiento"]),
    ],
)
def test_name_words(column: str, words: list[str]) -> None:
    assert name_words(column) == words
    assert [column[a:b].lower() for a, b in word_spans(column)] == words


def test_is_a_dictionary_replacer_registered_as_wordnet(home: Path) -> None:
    component = registry.create("lexicon", "wordnet", Settings(home=home))
    assert isinstance(component, WordNetReplacer)
    assert isinstance(component, DictionaryReplacer)


def test_candidates_are_dictionary_synonyms_in_sampling_order(home: Path) -> None:
    found = replacer(home).candidates("annual salary", seed=0)
    assert found
    assert len(set(names(found))) == len(found)
    assert all(c.source == "dictionary" for c in found)
    scores = [c.score for c in found]
    assert (
        scores[0] == 1.0
        and scores == sorted(scores, reverse=True)
        and len(set(scores)) == len(scores)
    )
    synonyms = set(replacer(home).synonyms("salary")) | {"salary"}
    modifiers = set(replacer(home).synonyms("annual", head=False)) | {"annual"}
    for candidate in found:
        first, *rest = candidate.name.split(" ", 1)
        assert first in modifiers and rest[0] in synonyms
        assert "→" in candidate.provenance
        for change in candidate.provenance.split(", "):
            old, new = change.split("→")
            assert old in {"annual", "salary"} and new in candidate.name
    assert "yearly salary" in names(found) or "yearly pay" in names(found)


def test_same_seed_same_candidates_different_seeds_differ(home: Path) -> None:
    lexicon = replacer(home)
    first = [c.model_dump() for c in lexicon.candidates("home town", seed=3)]
    assert first == [c.model_dump() for c in replacer(home).candidates("home town", seed=3)]
    by_seed = {tuple(names(lexicon.candidates("home town", seed=s))) for s in range(5)}
    assert len(by_seed) > 1


@pytest.mark.slow
def test_same_candidates_in_another_process(home: Path) -> None:
    code = (
        "import json, sys\n"
        "from cta.settings import Settings\n"
        "from cta.wordnet import load_wordnet\n"
        "from retriever.lexicon import WordNetReplacer\n"
        "s = Settings(home=sys.argv[1], dictionary_max_senses=0)\n"
        "r = WordNetReplacer(load_wordnet(s), s)\n"
        "print(json.dumps([c.model_dump() for c in r.candidates('date of birth', 11)]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(home)], capture_output=True, text=True, check=True, env=env
    )
    here = [c.model_dump() for c in replacer(home).candidates("date of birth", 11)]
    assert here and json.loads(out.stdout) == here


def test_keep_probability(home: Path) -> None:
    original = {"annual", "salary"}
    for seed in range(5):
        for candidate in replacer(home, dictionary_keep_prob=0.0).candidates("annual salary", seed):
            assert not original & set(candidate.name.split(" "))
    kept = [
        bool(original & set(c.name.split(" ")))
        for seed in range(5)
        for c in replacer(home, dictionary_keep_prob=0.8).candidates("annual salary", seed)
    ]
    assert any(kept)
    # A word kept with probability 1 is never replaced: nothing new can be sampled.
    assert replacer(home, dictionary_keep_prob=1.0).candidates("annual salary", 0) == []


def test_stops_at_max_candidates(home: Path) -> None:
    assert len(replacer(home, dictionary_max_candidates=3).candidates("home town", 0)) == 3
    assert len(replacer(home).candidates("home town", 0)) == 20


def test_stops_after_consecutive_repeats(home: Path) -> None:
    # "email" has a single synonym: after it is found, every draw is a repeat.
    lexicon = replacer(home)
    assert lexicon.synonyms("email") == ("electronic mail",)
    assert names(lexicon.candidates("email", 0)) == ["electronic mail"]
    # Fewer allowed repeats stop the sampling earlier.
    short = sum(
        len(replacer(home, dictionary_max_repeats=1).candidates("birth date", s)) for s in range(8)
    )
    long = sum(
        len(replacer(home, dictionary_max_repeats=8).candidates("birth date", s)) for s in range(8)
    )
    assert short < long


@pytest.mark.parametrize(
    "column", ["id", "x", "student_id", "address2", "GDP growth", "no. of seats"]
)
def test_identifiers_numbers_short_words_and_acronyms_are_kept(home: Path, column: str) -> None:
    lexicon = replacer(home)
    kept = {"id", "x", "2", "GDP", "no"} & set(name_words(column) + column.split())
    for seed in range(3):
        for candidate in lexicon.candidates(column, seed):
            for token in kept:
                assert token in candidate.name
    assert lexicon.candidates("id", 0) == []
    assert lexicon.candidates("x_2", 0) == []


def test_plural_stays_plural(home: Path) -> None:
    lexicon = replacer(home)
    plural, singular = lexicon.synonyms("salaries"), lexicon.synonyms("salary")
    assert "wages" in plural and "wage" not in plural
    assert "wage" in singular and "wages" not in singular
    assert {c.name for c in lexicon.candidates("salaries", 0)} <= set(plural)
    assert "costs" in lexicon.synonyms("prices") and "cost" in lexicon.synonyms("price")


def test_rare_words_filtered(home: Path) -> None:
    strict = replacer(home)
    loose = replacer(home, dictionary_min_zipf=0.0)
    for word in ("larger", "salaries", "cities"):
        kept, everything = set(strict.synonyms(word)), set(loose.synonyms(word))
        assert kept < everything
        for synonym in everything - kept:
            assert min(zipf_frequency(w, "en") for w in synonym.split(" ")) < 2.5
        for synonym in kept:
            assert min(zipf_frequency(w, "en") for w in synonym.split(" ")) >= 2.5


def test_named_entities_are_not_synonyms(home: Path) -> None:
    # "Price" is also the soprano Leontyne Price (an instance in WordNet).
    loose = replacer(home, dictionary_min_zipf=0.0)
    assert not any("leontyne" in s for s in loose.synonyms("price"))


def test_multi_word_synonyms_follow_the_column_style(home: Path) -> None:
    lexicon = replacer(home)
    styles = {
        "birth_date": lambda n: " " not in n and n == n.lower(),
        "birthDate": lambda n: " " not in n and "_" not in n and n[0].islower(),
        "BIRTH_DATE": lambda n: " " not in n and n == n.upper(),
        "Birth Date": lambda n: all(w[0].isupper() for w in n.split(" ")),
    }
    for column, check in styles.items():
        found = names(lexicon.candidates(column, 0))
        assert found and all(check(n) for n in found), (column, found)
    # A multi-word lemma (day_of_the_month, giving_birth) is split into words.
    assert any(n.count("_") >= 2 for n in names(lexicon.candidates("birth_date", 0)))


@pytest.mark.parametrize(
    ("name", "natural"),
    [
        ("list price", True),
        ("publishingHouse", True),
        ("E nitens", False),  # a lone letter and a rare word
        ("date1", False),  # a number glued to a word
        ("qxzv total", False),
        ("", False),
    ],
)
def test_natural_names_are_common_english_words(name: str, natural: bool) -> None:
    from cta.names import is_natural_name

    assert is_natural_name(name, 3.0) is natural


def test_humanise_writes_code_style_headers_as_words() -> None:
    from cta.names import humanise

    assert humanise("SalePrice") == "sale price"
    assert humanise("piecesOfMailPerCap") == "pieces of mail per cap"
    assert humanise("first_name") == "first name"
    assert humanise("Sale Price") == "Sale Price"  # written by a person: kept
    assert humanise("Date") == "Date"


# -- which senses give synonyms -------------------------------------------------------------------
def _most_frequent_synset(home: Path, word: str) -> Any:
    wordnet = load_wordnet(Settings(home=home))
    synsets = [s for s in wordnet.synsets(word, "n") if not s.instance_hypernyms()]
    counts = [sum(lem.count() for lem in s.lemmas() if lem.name().lower() == word) for s in synsets]
    return synsets[counts.index(max(counts))]


@pytest.mark.parametrize(("word", "wrong"), [("title", "championship"), ("club", "nightclub")])
def test_only_the_most_frequent_sense_gives_synonyms(home: Path, word: str, wrong: str) -> None:
    every = set(replacer(home).synonyms(word))
    frequent = set(replacer(home, dictionary_max_senses=1).synonyms(word))
    assert wrong in every and wrong not in frequent
    top = _most_frequent_synset(home, word)
    lemmas = {name.lower().replace("_", " ") for name in top.lemma_names()} - {word}
    assert frequent and frequent <= lemmas
    assert set(replacer(home, dictionary_max_senses=4).synonyms(word)) > frequent


def test_the_head_of_a_time_column_takes_only_time_senses(home: Path) -> None:
    lexicon = replacer(home)  # every sense: only the type restricts
    as_time = ColumnContext(name="date of birth", type=ColumnType.TIME)
    as_text = ColumnContext(name="date of birth", type=ColumnType.TEXT)
    wordnet = load_wordnet(Settings(home=home))
    not_time = {
        lemma.lower().replace("_", " ")
        for synset in wordnet.synsets("date", "n")
        if synset.lexname() != "noun.time"
        for lemma in synset.lemma_names()
    } - {"date"}
    assert {"escort", "engagement"} <= not_time

    def replaced_date(context: ColumnContext) -> set[str]:
        words = set()
        for seed in range(6):
            for cand in lexicon.candidates("date of birth", seed, context):
                words |= {
                    c.split("→")[1] for c in cand.provenance.split(", ") if c.startswith("date→")
                }
        return words

    timed, untyped = replaced_date(as_time), replaced_date(as_text)
    assert timed and not timed & not_time
    assert untyped & not_time  # the restriction is what removed them


def test_the_head_comes_before_a_post_modifier(home: Path) -> None:
    lexicon = replacer(home)
    context = ColumnContext(name="date joined", type=ColumnType.TIME)
    time_synonyms = set(lexicon.synonyms("date", head=True, column_type=ColumnType.TIME))
    found = lexicon.candidates("date joined", 0, context)
    dates = {
        c.split("→")[1] for f in found for c in f.provenance.split(", ") if c.startswith("date→")
    }
    assert dates and dates <= time_synonyms
    assert "escort" not in dates and "engagement" not in dates


def test_a_word_whose_senses_have_no_synonym_is_kept(home: Path) -> None:
    # "birth"'s most frequent sense (the time of birth) has no other lemma: no verb sense
    # ("give birth", "bear") stands in for it.
    lexicon = replacer(home, dictionary_max_senses=1)
    assert lexicon.synonyms("birth", head=False) == ()
    assert replacer(home).synonyms("birth", head=False)
    for seed in range(4):
        for cand in lexicon.candidates("date of birth", seed):
            assert cand.name.endswith("of birth")


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("wage", "salary", True),  # one synset
        ("head", "manager", True),  # head (a person in charge) is two levels above manager
        ("person", "author", True),
        ("annual wage", "annual salary", True),
        ("price", "discount", False),
        ("year", "month", False),
        ("height", "weight", False),
        ("annual wage", "monthly salary", False),  # two words differ
        ("points", "place of birth", False),  # no broader/narrower between multi-word lemmas
        # when one event happened: the event words name one verb sense (publish, issue)
        ("release year", "publication year", True),
        ("published", "publication year", True),
        ("opened", "year opened", True),
        ("founded", "foundation date", True),
        ("born", "birth date", True),  # an irregular participle, told by the lemmatiser
        ("speed", "speed date", False),  # a noun ending in -ed is no participle
        ("release year", "death year", False),
        ("birth date", "death date", False),
        ("start date", "end date", False),
        ("opened", "closed", False),
    ],
)
def test_same_meaning_in_dominant_senses(home: Path, a: str, b: str, same: bool) -> None:
    lexicon = replacer(home, dictionary_max_senses=1)
    assert isinstance(lexicon, NameEquivalence)
    assert lexicon.same_meaning(a, b) is same
    assert lexicon.same_meaning(b, a) is same


@pytest.mark.parametrize(
    ("part", "whole", "entity", "held"),
    [
        # a kind of the row's own name: a component of its full name
        ("first name", "employee name", "employee", True),
        ("last name", "employee name", "employee", True),
        ("given name", "employee name", "employee", True),
        ("surname", "name", "football player", True),
        ("middle name", "name", "person", True),
        # WordNet's meronyms: a part of the whole's head noun
        ("zip code", "address", "customer", True),
        ("postcode", "address", "customer", True),
        # another thing's name, no WordNet sense of its own, or no part of it
        ("first name", "manager name", "employee", False),
        ("birth date", "hire date", "employee", False),
        ("bonus", "salary", "employee", False),
        ("city", "address", "customer", False),
        ("month", "publication year", "book", False),
        ("employee name", "first name", "employee", False),
    ],
)
def test_part_of_a_column(home: Path, part: str, whole: str, entity: str, held: bool) -> None:
    """The ADD guard's containment check (issue 35): a new column that holds a part of an
    existing column's values is no addition."""
    from cta.components import NamePart
    from cta.judge.add_rule import add_clash

    lexicon = replacer(home, dictionary_max_senses=1)
    assert isinstance(lexicon, NamePart)
    assert lexicon.part_of(part, whole, entity) is held
    clash = add_clash(part, whole, entity, part_of=[lexicon.part_of])
    assert (clash == "part_of") is held or clash not in (None, "part_of")
