"""SQL identifiers for renamed and added columns: bare, in the schema's style, never reserved,
and a Spider entry keeps the natural name and the identifier apart."""

from __future__ import annotations

import sqlite3

import pytest

from cta.apply.sample import sample_perturbations
from cta.results import ColumnPerturbations, Decision, PerturbationResult
from cta.sql.identifiers import (
    EVALUATOR_KEYWORDS,
    RESERVED_WORDS,
    identifier_style,
    is_bare_identifier,
    sql_identifier,
)
from cta.table import Column, ColumnType, Table


@pytest.mark.parametrize(
    ("schema", "natural", "expected"),
    [
        (["singer_id", "song_name"], "age in years", "age_in_years"),
        (["Singer_ID", "Song_Name"], "age in years", "Age_in_Years"),
        (["Singer_ID", "Song_release_year", "Name"], "age in years", "Age_in_years"),
        (["StuID", "LName", "Fname"], "home city", "HomeCity"),
        (["stuId", "lastName"], "home city", "homeCity"),
        (["ID", "NAME"], "home city", "HOME_CITY"),
        (["id", "name"], "% of votes", "percent_of_votes"),
        (["id", "name"], "1st place", "col_1st_place"),
        (["id", "name"], "player's name", "players_name"),
        (["id", "name"], "Café owner", "cafe_owner"),
    ],
)
def test_identifier_follows_the_schema_style(
    schema: list[str], natural: str, expected: str
) -> None:
    ident = sql_identifier(natural, identifier_style(schema))
    assert ident == expected
    assert is_bare_identifier(ident)


@pytest.mark.parametrize("word", sorted(EVALUATOR_KEYWORDS | {"Order", "Avg", "Count", "Group"}))
def test_no_identifier_is_a_reserved_word(word: str) -> None:
    for schema in (["id", "name"], ["Stadium_ID", "Name"], ["StuID", "Fname"]):
        ident = sql_identifier(word, identifier_style(schema))
        assert ident.upper() not in RESERVED_WORDS, ident
        assert is_bare_identifier(ident)
        # SQLite reads it bare as a column
        conn = sqlite3.connect(":memory:")
        conn.execute(f"CREATE TABLE t ({ident} TEXT)")
        assert conn.execute(f"SELECT {ident} FROM t").fetchall() == []


def test_rpl_and_add_give_natural_names_and_identifiers_apart() -> None:
    table = Table(
        name="singer",
        columns=[
            Column(name="singer id", type=ColumnType.NUMBER, original_name="Singer_ID"),
            Column(name="age", type=ColumnType.NUMBER, original_name="Age"),
            Column(name="song name", original_name="Song_Name"),
        ],
        rows=[[1, 30, "a"], [2, 40, "b"]],
        target_columns=["age", "song name"],
    )
    result = PerturbationResult(
        table_id="concert_singer.singer",
        primary_entity="singer",
        entity_source="given",
        columns=[
            ColumnPerturbations(
                column="age",
                replace=[
                    Decision(
                        name="age in years",
                        type=ColumnType.NUMBER,
                        e1=0.9,
                        e2=0.9,
                        source="dictionary",
                    )
                ],
                add=[
                    Decision(
                        name="average", type=ColumnType.NUMBER, e1=0.1, e2=0.1, source="retriever"
                    )
                ],
            ),
            ColumnPerturbations(
                column="song name",
                replace=[
                    Decision(
                        name="order", type=ColumnType.TEXT, e1=0.9, e2=0.9, source="dictionary"
                    )
                ],
                add=[
                    Decision(
                        name="count", type=ColumnType.NUMBER, e1=0.1, e2=0.1, source="retriever"
                    )
                ],
            ),
        ],
    )
    [rpl] = sample_perturbations(table, result, "rpl", k=1, seed=0)
    age, song = rpl.table.column("age in years"), rpl.table.column("order")
    assert (age.name, age.original_name) == ("age in years", "Age_in_Years")
    assert (song.name, song.original_name) == ("order", "Order_")
    [add] = sample_perturbations(table, result, "add", k=1, seed=0)
    added = {c.name: c.original_name for c in add.table.columns}
    assert added["average"] == "Average"
    assert added["count"] == "Count_"
    for column in [*rpl.table.columns, *add.table.columns]:
        assert column.original_name is not None and is_bare_identifier(column.original_name)


def test_a_candidate_whose_identifier_is_taken_is_not_drawn() -> None:
    # "first name" would become first_name, which the table already has
    table = Table(
        name="people",
        columns=[
            Column(name="given name", original_name="given_name"),
            Column(name="first", original_name="first_name"),
        ],
        rows=[["a", "b"]],
        target_columns=["given name"],
    )
    result = PerturbationResult(
        table_id="people",
        primary_entity="person",
        entity_source="given",
        columns=[
            ColumnPerturbations(
                column="given name",
                replace=[
                    Decision(
                        name="first name", type=ColumnType.TEXT, e1=0.9, e2=0.9, source="dictionary"
                    )
                ],
            )
        ],
    )
    [rpl] = sample_perturbations(table, result, "rpl", k=1, seed=0)
    assert rpl.unperturbed == {"given name": "name_collision"}
