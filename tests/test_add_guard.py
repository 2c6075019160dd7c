"""The lexical half of the ADD rule: a name that already names a column is never an ADD."""

from __future__ import annotations

import pytest

from cta.judge.add_rule import add_clash, is_new_column


@pytest.mark.parametrize(
    ("candidate", "column", "entity", "clash"),
    [
        ("year", "publication year", "book", "sub_phrase"),
        ("Date", "Date of birth", None, "sub_phrase"),
        ("Years", "year", None, "same_name"),
        ("Publication_Year", "publication year", None, "same_name"),
        ("book title", "title", "book", "entity_phrase"),
        ("player name", "name", "football player", "entity_phrase"),
        ("publication date", "publication year", "book", "same_time"),
        ("Birth Year", "Date of Birth", None, "same_time"),
        ("Birth Place", "Place of Birth", None, "same_name"),
        ("Year joined", "Date joined", None, "same_time"),
        ("Join Year", "Date Joined", None, "same_time"),
        ("date", "publication year", "book", "same_time"),
        # different columns
        ("birth", "date of birth", None, None),  # a part without the head word
        ("publication", "publication year", "book", None),
        ("team name", "name", "player", None),  # another entity's name
        ("discount", "price", "book", None),
        ("month", "publication year", "book", None),
        ("release date", "publication year", "book", None),  # another event
        ("race time", "race date", None, None),  # a duration, not when
        ("date", "price", "book", None),
    ],
)
def test_lexical_clashes(
    candidate: str, column: str, entity: str | None, clash: str | None
) -> None:
    assert add_clash(candidate, column, entity) == clash


def test_known_equivalents_clash_through_every_component_that_knows() -> None:
    calls: list[tuple[str, str]] = []

    def thesaurus(a: str, b: str) -> bool:
        calls.append((a, b))
        return {a, b} == {"income", "salary"}

    def wordnet(a: str, b: str) -> bool:
        return {a, b} == {"head", "manager"}

    knows = [thesaurus, wordnet]
    assert add_clash("income", "salary", None, knows) == "same_meaning"
    assert add_clash("head", "manager", None, knows) == "same_meaning"
    assert add_clash("bonus", "salary", None, knows) is None
    assert ("bonus", "salary") in calls
    # Without the components, nothing in the names alone says so.
    assert add_clash("income", "salary") is None


def test_a_new_column_clashes_with_no_column_of_the_table() -> None:
    columns = ["title", "author", "publisher", "publication year", "pages", "price"]
    assert not is_new_column("year", columns, "book")
    assert not is_new_column("Pages", columns, "book")
    assert not is_new_column("book price", columns, "book")
    assert is_new_column("genre", columns, "book")
    assert is_new_column("isbn", columns, "book")
    # Every column is checked, not only the one the candidate was proposed for.
    assert not is_new_column(
        "wage", [*columns, "salary"], "book", [lambda a, b: {a, b} == {"wage", "salary"}]
    )


def test_one_new_column_spelled_twice_by_two_sources_is_proposed_once() -> None:
    """``birth date`` from the entity schema and ``date of birth`` from the thesaurus name one
    new column: it is a candidate once, as the better-ranked source spells it; a different
    column of the same sources stays."""
    from cta.judge.add_rule import candidates
    from cta.results import Candidate, ColumnCandidates
    from cta.table import Table

    def named(name: str, source: str, score: float) -> Candidate:
        return Candidate.model_validate(
            {"name": name, "type": "time", "score": score, "source": source}
        )

    table = Table.model_validate(
        {"name": "employees", "columns": [{"name": "employee name"}, {"name": "salary"}]}
    )
    column = ColumnCandidates(
        column="employee name",
        associated=[
            named("birth date", "entity-schema", 1.0),
            named("hire date", "entity-schema", 0.9),
            named("Date of Birth", "thesaurus", 0.8),
            named("hire dates", "thesaurus", 0.7),
        ],
    )
    kept = candidates(
        column, table, "employee", fits=lambda c: True, same_meaning=(), min_shared_columns=1
    )
    assert [(c.name, c.source) for c in kept] == [
        ("birth date", "entity-schema"),
        ("hire date", "entity-schema"),
    ]
