"""Flatten on a tiny concert database: the referenced table merged into the referencing one
(data migrated by the key), queries that join the two rewritten to one table and checked by
execution, queries that need the dropped table's own rows refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dataset_fixtures import family_context, spider_entry

from cta.families.base import FamilyContext, NotApplicable, rewrite_for
from cta.families.flatten import Flatten
from cta.families.model import DbEdit, materialise_edit
from cta.sql.database import read_rows
from cta.sql.rewrite import SqlRewriteError
from cta.sql.verify import verify_query

ENTRY = spider_entry(
    "concert_singer",
    [
        "stadium: Stadium_ID number, Location text, Name text, Capacity number, "
        "Year/opening year number",
        "singer: Singer_ID number, Name text, Country text",
        "concert: concert_ID number, concert_Name text, Theme text, Stadium_ID number, Year number",
        "singer_in_concert: concert_ID number, Singer_ID number",
    ],
    primary=[("stadium", "Stadium_ID"), ("singer", "Singer_ID"), ("concert", "concert_ID")],
    foreign=[
        (("concert", "Stadium_ID"), ("stadium", "Stadium_ID")),
        (("singer_in_concert", "concert_ID"), ("concert", "concert_ID")),
        (("singer_in_concert", "Singer_ID"), ("singer", "Singer_ID")),
    ],
)
ROWS: dict[str, list[tuple[Any, ...]]] = {
    "stadium": [
        (1, "Raith Rovers", "Stark's Park", 10104, 1990),
        (2, "Ayr United", "Somerset Park", 11998, 1888),
        (3, "East Fife", "Bayview Stadium", 2000, 1998),
        (4, "Queen's Park", "Hampden Park", 52500, 1903),  # no concert: lost by the flatten
    ],
    "singer": [
        (1, "Joe Sharp", "Netherlands"),
        (2, "Rose White", "France"),
        (3, "Tribal King", "France"),
    ],
    "concert": [
        (1, "Auditions", "Free choice", 1, 2014),
        (2, "Super bootcamp", "Free choice 2", 2, 2014),
        (3, "Home Visits", "Bleeding Love", 2, 2015),
        (4, "Week 1", "Wide Awake", 3, 2014),
        (5, "Week 2", "Happy Tonight", 1, 2015),
    ],
    "singer_in_concert": [(1, 2), (1, 3), (2, 3), (3, 1), (4, 2), (5, 1), (5, 3)],
}
JOINS = "concert AS T1 JOIN stadium AS T2 ON T1.Stadium_ID = T2.Stadium_ID"
REWRITTEN = [
    f"SELECT T2.Name, T2.Capacity FROM {JOINS} WHERE T1.Year >= 2014",
    f"SELECT T2.Name, count(*) FROM {JOINS} GROUP BY T1.Stadium_ID",
    "SELECT T1.concert_Name FROM concert AS T1, stadium AS T2 WHERE T2.Stadium_ID = T1.Stadium_ID"
    " AND T2.Capacity > 5000 ORDER BY T1.concert_Name",
    "SELECT Name FROM stadium JOIN concert ON stadium.Stadium_ID = concert.Stadium_ID"
    " WHERE concert.Year = 2014",
    "SELECT * FROM concert JOIN stadium ON concert.Stadium_ID = stadium.Stadium_ID"
    " WHERE concert.Theme LIKE 'Free%'",
    "SELECT T3.Name, T1.Singer_ID FROM singer_in_concert AS T1 JOIN concert AS T2"
    " ON T1.concert_ID = T2.concert_ID JOIN stadium AS T3 ON T2.Stadium_ID = T3.Stadium_ID",
    "SELECT * FROM concert",
    "SELECT Name FROM singer AS S JOIN singer_in_concert AS SC ON S.Singer_ID = SC.Singer_ID"
    " JOIN concert AS C ON SC.concert_ID = C.concert_ID WHERE C.Year = 2014",
    f"SELECT T2.Year, T1.Year FROM {JOINS} ORDER BY T1.concert_ID",
    f"SELECT Year FROM (SELECT T2.Year FROM {JOINS}) ORDER BY Year",
    f"SELECT count(*) FROM (SELECT * FROM {JOINS}) WHERE Capacity > 5000",
    f"SELECT T1.concert_Name FROM {JOINS} WHERE EXISTS (SELECT 1 FROM singer_in_concert AS S"
    " WHERE S.concert_ID = T1.concert_ID AND T2.Capacity > 10500)",
    f"SELECT T2.Stadium_ID, count(*) FROM {JOINS} GROUP BY T2.Stadium_ID ORDER BY count(*) DESC,"
    " T2.Stadium_ID",
    f"SELECT T2.Name FROM {JOINS} WHERE T1.Year = 2014 INTERSECT SELECT T2.Name FROM {JOINS}"
    " WHERE T1.Year = 2015",
    "SELECT T1.concert_Name FROM concert AS T1 JOIN stadium AS T2"
    " ON T1.Stadium_ID = T2.Stadium_ID AND T2.Capacity > 4000",
    "SELECT T1.Name, T3.Singer_ID FROM stadium AS T1 JOIN singer_in_concert AS T3 JOIN concert AS T2"
    " ON T1.Stadium_ID = T2.Stadium_ID AND T2.concert_ID = T3.concert_ID",
    f'SELECT T2.Location FROM {JOINS} WHERE T1.Theme = "Free choice"',
    f"SELECT T2.Location, avg(T2.Capacity) FROM {JOINS} GROUP BY T2.Location HAVING count(*) > 1",
    f"SELECT T2.Name, T1.*, T2.Capacity FROM {JOINS} WHERE T2.Location <> 'East Fife'",
]
REFUSED = [
    "SELECT concert_Name FROM concert WHERE Stadium_ID IN"
    " (SELECT Stadium_ID FROM stadium WHERE Capacity > 5000)",
    "SELECT count(*) FROM stadium",
    "SELECT Name FROM stadium WHERE Stadium_ID NOT IN (SELECT Stadium_ID FROM concert)",
    "SELECT T1.Name FROM stadium AS T1 JOIN concert AS T2 ON T1.Year = T2.Year",
    "SELECT T2.Location FROM concert AS T1 LEFT JOIN stadium AS T2 ON T1.Stadium_ID = T2.Stadium_ID",
    f"SELECT T2.Name FROM {JOINS} WHERE T2.Capacity > (SELECT avg(Capacity) FROM stadium)",
]


def stadium_edit(ctx: FamilyContext) -> DbEdit:
    """The seeded edit that merges ``stadium`` into ``concert`` (other seeds pick other keys)."""
    for seed in range(30):
        edit = Flatten().plan(ctx, seed)
        if edit.schema.find("stadium") is None:
            return edit
    raise AssertionError("no seed flattens stadium into concert")


def test_flatten_rewrites_joins_and_migrates_rows(tmp_path: Path) -> None:
    ctx = family_context(tmp_path, ENTRY, ROWS, REWRITTEN + REFUSED)
    edit = stadium_edit(ctx)
    assert not edit.keeps_parsed_sql and edit.rewrite is not None
    concert = edit.schema.table("concert")
    assert [c.name for c in concert.columns] == [
        "concert_ID",
        "concert_Name",
        "Theme",
        "Stadium_ID",
        "Year",
        "Location",
        "Name",
        "Capacity",
        "Stadium_opening_year",  # concert has a Year of its own
    ]
    assert edit.labels[("concert", "stadium_opening_year")] == "stadium opening year"
    assert edit.origin[("concert", "capacity")] == ("stadium", "capacity")
    assert not concert.foreign_keys  # its key to stadium went with stadium
    target = tmp_path / "flat.sqlite"
    assert ctx.path is not None
    materialise_edit(ctx.path, target, edit, ctx.schema, seed=0, values="null")
    assert read_rows(target, concert)[2] == (
        3,
        "Home Visits",
        "Bleeding Love",
        2,
        2015,
        "Ayr United",
        "Somerset Park",
        11998,
        1888,
    )
    for query in REWRITTEN:
        rewritten = rewrite_for(query, ctx.schema, edit)
        assert "stadium" not in rewritten.lower().replace("stadium_id", "").replace(
            "stadium_opening_year", ""
        ), rewritten
        result = verify_query(ctx.path, query, target, rewritten)
        assert result.status == "ok", (query, rewritten, result.reason)
        assert result.rows > 0, query


def test_flatten_qualifies_names_the_merged_table_could_capture(tmp_path: Path) -> None:
    ctx = family_context(tmp_path, ENTRY, ROWS, REWRITTEN)
    edit = stadium_edit(ctx)
    rewritten = rewrite_for(REWRITTEN[7], ctx.schema, edit)
    assert rewritten.startswith("SELECT S.Name FROM"), rewritten
    star = rewrite_for("SELECT * FROM concert", ctx.schema, edit)
    assert star == "SELECT concert_ID, concert_Name, Theme, Stadium_ID, Year FROM concert"


@pytest.mark.parametrize("query", REFUSED)
def test_flatten_refuses_queries_that_need_the_dropped_rows(tmp_path: Path, query: str) -> None:
    ctx = family_context(tmp_path, ENTRY, ROWS, REWRITTEN + REFUSED)
    edit = stadium_edit(ctx)
    with pytest.raises(SqlRewriteError) as info:
        rewrite_for(query, ctx.schema, edit)
    assert info.value.problem == "unsupported"


def test_every_seeded_flatten_is_exact_or_refused(tmp_path: Path) -> None:
    """Whatever key the seed picks, a query is either refused or gives the same rows."""
    ctx = family_context(tmp_path, ENTRY, ROWS, REWRITTEN + REFUSED)
    assert ctx.path is not None
    merged = set()
    for seed in range(12):
        edit = Flatten().plan(ctx, seed)
        gone = {t.name for t in ctx.schema.tables} - {t.name for t in edit.schema.tables}
        if frozenset(gone) in merged:
            continue
        merged.add(frozenset(gone))
        target = tmp_path / f"flat_{len(merged)}.sqlite"
        materialise_edit(ctx.path, target, edit, ctx.schema, seed=0, values="null")
        [dropped] = gone
        rewritten = 0
        for query in REWRITTEN + REFUSED:
            try:
                sql = rewrite_for(query, ctx.schema, edit)
            except SqlRewriteError:
                continue
            result = verify_query(ctx.path, query, target, sql)
            assert result.status == "ok", (edit.operation, query, sql, result.reason)
            rewritten += f" {dropped} " in f" {query} "  # a join through the dropped table
        assert rewritten, edit.operation
    assert {"stadium", "singer", "concert"} == {t for g in merged for t in g}


def test_flatten_refuses_keys_that_do_not_match_exactly_one_row(tmp_path: Path) -> None:
    queries = [f"SELECT T2.Name FROM {JOINS}"]
    dangling = {**ROWS, "concert": [*ROWS["concert"], (6, "Week 3", "Tonight", 9, 2016)]}
    with pytest.raises(NotApplicable, match="exactly one"):
        Flatten().plan(family_context(tmp_path / "a", ENTRY, dangling, queries), 0)
    null_key = {**ROWS, "concert": [*ROWS["concert"], (6, "Week 3", "Tonight", None, 2016)]}
    with pytest.raises(NotApplicable, match="exactly one"):
        Flatten().plan(family_context(tmp_path / "b", ENTRY, null_key, queries), 0)
    twice = {**ROWS, "stadium": [*ROWS["stadium"], (1, "Raith", "Other Park", 10, 2000)]}
    undeclared = dict(ENTRY, primary_keys=[])  # a repeated stadium id
    with pytest.raises(NotApplicable, match="exactly one"):
        Flatten().plan(family_context(tmp_path / "c", undeclared, twice, queries), 0)
    ctx = family_context(tmp_path / "d", ENTRY, ROWS, queries)
    ctx.path = None
    with pytest.raises(NotApplicable, match="no database file"):
        Flatten().plan(ctx, 0)


def test_flatten_needs_a_gold_query_joining_the_tables(tmp_path: Path) -> None:
    ctx = family_context(
        tmp_path, ENTRY, ROWS, ["SELECT count(*) FROM stadium", "SELECT * FROM concert"]
    )
    with pytest.raises(NotApplicable, match="joins"):
        Flatten().plan(ctx, 0)
