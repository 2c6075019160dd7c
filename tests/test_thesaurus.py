"""The column-header thesaurus as a registered candidate source."""

from __future__ import annotations

from pathlib import Path

import pytest

from cta import registry
from cta.annotations import ThesaurusEntry, load_thesaurus
from cta.components import CandidateSource, ColumnContext, NameEquivalence
from cta.settings import Settings
from cta.table import Column, ColumnType, Table
from cta.words import name_key
from retriever.thesaurus import ThesaurusSource, name_variants

ENTRIES = [
    ThesaurusEntry(
        name="price",
        type=ColumnType.NUMBER,
        equivalent=("cost", "unit price", "Sale_Price"),
        associated=("discount", "release date", "manufacturer", "number of units"),
    ),
    ThesaurusEntry(name="title", equivalent=("name", "work title"), associated=("year",)),
    ThesaurusEntry(name="author", equivalent=("writer",), associated=("publisher",)),
    ThesaurusEntry(name="manufacturer", type=ColumnType.TEXT, equivalent=("maker",)),
]


@pytest.fixture
def source() -> ThesaurusSource:
    return ThesaurusSource(ENTRIES)


def context(
    name: str, kind: ColumnType = ColumnType.TEXT, entity: str | None = None
) -> ColumnContext:
    return ColumnContext(name=name, type=kind, entity=entity)


@pytest.mark.parametrize(
    ("column", "entity", "header"),
    [
        ("price", None, "price"),
        ("Price", None, "price"),
        ("PRICE", None, "price"),
        ("prices", None, "price"),  # plural
        ("Authors", None, "author"),
        ("book_title", "book", "title"),  # the entity dropped
        ("Book Titles", "book", "title"),
        ("book title", None, None),  # without the entity, nothing to drop
        ("album title", "book", None),  # another word is not the entity
        ("writer", None, None),  # an equivalent is not a header
    ],
)
def test_columns_match_headers_through_name_key(
    source: ThesaurusSource, column: str, entity: str | None, header: str | None
) -> None:
    entry = source.entry(column, entity)
    assert (entry.name if entry else None) == header


def test_name_variants_start_with_the_name_key() -> None:
    variants = list(name_variants("Book_Titles", "book"))
    assert variants[0] == name_key("Book_Titles") == "book titles"
    assert "titles" in variants and "title" in variants
    assert len(variants) == len(set(variants))


def test_an_optional_plural_ending_is_the_word() -> None:
    variants = list(name_variants("Driver(s)"))
    assert variants[:3] == ["driver(s)", "driver", "drivers"]
    assert list(name_variants("Matches(es)"))[1:3] == ["matches", "match"]
    # no plural of a word that is no word (``no.s``)
    assert list(name_variants("No.")) == ["no."]


def test_equivalents_are_rpl_and_associated_are_add_candidates(source: ThesaurusSource) -> None:
    proposal = source.propose(context("price", ColumnType.NUMBER))
    assert [c.name for c in proposal.equivalent] == list(ENTRIES[0].equivalent)
    assert [c.name for c in proposal.associated] == list(ENTRIES[0].associated)
    for cand in [*proposal.equivalent, *proposal.associated]:
        assert cand.source == "thesaurus" and cand.provenance == "thesaurus:price"
    # A rename keeps its column's type; an associated column is typed by its name, else by
    # its own header, else text.
    assert {c.type for c in proposal.equivalent} == {ColumnType.NUMBER}
    types = {c.name: c.type for c in proposal.associated}
    assert types == {
        "discount": ColumnType.TEXT,
        "release date": ColumnType.TIME,
        "manufacturer": ColumnType.TEXT,
        "number of units": ColumnType.NUMBER,
    }
    scores = [c.score for c in proposal.equivalent]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)


def test_a_column_without_header_gets_nothing(source: ThesaurusSource) -> None:
    proposal = source.propose(context("horsepower"))
    assert proposal.equivalent == [] and proposal.associated == []


def test_same_meaning_is_what_the_column_header_lists(source: ThesaurusSource) -> None:
    assert isinstance(source, NameEquivalence)
    assert source.same_meaning("cost", "price") and source.same_meaning("Unit Prices", "price")
    assert source.same_meaning("sale price", "prices")
    assert source.same_meaning("maker", "manufacturer")
    assert not source.same_meaning("discount", "price")  # associated, not equivalent
    assert not source.same_meaning("writer", "price")
    # One way: "title" lists "name", which says nothing of "title" beside a column "name".
    assert source.same_meaning("name", "title") and not source.same_meaning("title", "name")


def test_registered_by_name_over_the_repository_thesaurus() -> None:
    settings = Settings()
    assert "thesaurus" in registry.names("source")
    assert "thesaurus" in settings.candidate_sources
    component = registry.create("source", "thesaurus", settings)
    assert isinstance(component, CandidateSource) and component.name == "thesaurus"
    assert len(component.entries) == len(load_thesaurus(settings.resolved_annotations_dir()))
    books = Table(
        name="books",
        columns=[Column(name="title"), Column(name="price", type=ColumnType.NUMBER)],
    )
    proposal = component.propose(ColumnContext.of(books, books.columns[1], "book"))
    assert proposal.equivalent and proposal.associated


def test_the_annotations_folder_is_a_setting(tmp_path: Path) -> None:
    (tmp_path / "thesaurus.jsonl").write_text(ENTRIES[2].model_dump_json() + "\n")
    component = registry.create("source", "thesaurus", Settings(annotations_dir=tmp_path))
    assert [e.name for e in component.entries] == ["author"]
