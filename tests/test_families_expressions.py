"""Content equivalence, column split and column merge on tiny real databases: each edit is
planned from the cells, the data migrated, every gold query rewritten and executed on both
databases (the rewritten query must return what the original returned)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dataset_fixtures import family_context, spider_entry, verified

from cta.families.base import NotApplicable, rewrite_for
from cta.families.expressions import (
    REFERENCE_YEAR,
    ColumnMerge,
    ColumnSplit,
    ContentEquivalence,
    affinity,
)
from cta.families.model import DbEdit
from cta.sql.database import SqlColumn, SqlSchema, SqlTable, create_database, read_rows
from cta.sql.rewrite import SqlRewriteError
from cta.sql.verify import execute
from cta.table import ColumnType

# -- a singer database ------------------------------------------------------------------------------
SINGER_ENTRY = spider_entry(
    "concert_singer",
    [
        "singer: Singer_ID number, Name text, Country text, Age number, Is_male text, Birthday text",
        "concert: concert_ID number, concert_Name text, Year number",
        "singer_in_concert: concert_ID number, Singer_ID number",
    ],
    primary=[("singer", "Singer_ID"), ("concert", "concert_ID")],
    foreign=[
        (("singer_in_concert", "concert_ID"), ("concert", "concert_ID")),
        (("singer_in_concert", "Singer_ID"), ("singer", "Singer_ID")),
    ],
)
SINGER_ROWS: dict[str, list[tuple[Any, ...]]] = {
    "singer": [
        (1, "Joe Sharp", "Netherlands", 52, "T", "1972-03-01"),
        (2, "Rose White", "France", 41, "F", "1983-11-20"),
        (3, "John Nizinik", "France", 43, "T", "1981-07-04"),
        (4, "Justin Brown", "United States", 29, "T", "1995-01-31"),
        (5, "Tribal King", "France", 25, "F", "1999-12-09"),
        (6, "Mary Ann Lee", "Netherlands", None, None, None),
    ],
    "concert": [(1, "Auditions", 2014), (2, "Super bootcamp", 2014), (3, "Home Visits", 2015)],
    "singer_in_concert": [(1, 2), (1, 3), (1, 5), (2, 3), (2, 6), (3, 2), (3, 4)],
}
SINGER_QUERIES = [
    "SELECT Name, Country, Age FROM singer ORDER BY Age DESC",
    "SELECT T2.Name FROM singer_in_concert AS T1 JOIN singer AS T2"
    " ON T1.Singer_ID = T2.Singer_ID WHERE T2.Age > 30",
    "SELECT count(*) FROM singer WHERE Name LIKE '%White%'",
    "SELECT Name FROM singer WHERE Age = (SELECT max(Age) FROM singer)",
    "SELECT * FROM singer WHERE Name = 'Rose White'",
    "SELECT Country, count(*) FROM singer GROUP BY Country HAVING avg(Age) > 20",
    "SELECT name FROM (SELECT Name, Age FROM singer WHERE Age > 20) ORDER BY name",
    "SELECT Name FROM singer WHERE Age > 40 UNION SELECT Name FROM singer"
    " WHERE Country = 'France' ORDER BY Name",
    "SELECT T1.Name, count(*) FROM singer AS T1 JOIN singer_in_concert AS T2"
    " ON T1.Singer_ID = T2.Singer_ID GROUP BY T1.Name ORDER BY count(*) DESC, T1.Name",
    "SELECT DISTINCT Country FROM singer WHERE Age = '52' OR Age BETWEEN 25 AND 29",
    "SELECT avg(Age), min(Age), max(Age) FROM singer WHERE Country = 'France'",
    "SELECT Name FROM singer WHERE Is_male = 'T' AND Age IN (29, 43)",
    "SELECT count(*) FROM singer WHERE Is_male != 'F'",
    "SELECT Is_male, avg(Age) FROM singer GROUP BY Is_male",
    "SELECT concert_Name FROM concert WHERE concert_ID IN (SELECT T1.concert_ID"
    " FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.Singer_ID = T2.Singer_ID"
    " WHERE T2.Is_male = 'F')",
    "SELECT Name, Birthday FROM singer WHERE Birthday > '1990-01-01' OR Birthday IS NULL",
    "SELECT count(*) FROM singer WHERE Birthday LIKE '198%'",
    "SELECT Name FROM singer ORDER BY Birthday DESC LIMIT 2",
    "SELECT T1.* FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
    " WHERE T2.concert_ID = 1",
    "SELECT Name, Is_male FROM (SELECT * FROM singer) WHERE Age > 30 OR Age IS NULL",
    "SELECT s.Birthday FROM (SELECT * FROM singer) AS s JOIN singer_in_concert AS c"
    " ON s.Singer_ID = c.Singer_ID WHERE s.Name <> 'Rose White'",
    "WITH t AS (SELECT Name, Age, Birthday FROM singer) SELECT Name, Birthday FROM t WHERE Age < 50",
    "SELECT singer.Name FROM singer JOIN singer_in_concert"
    " ON singer.Singer_ID = singer_in_concert.Singer_ID WHERE singer.Is_male = 'T'",
    "SELECT Name FROM singer AS s WHERE EXISTS (SELECT 1 FROM singer_in_concert AS c"
    " WHERE c.Singer_ID = s.Singer_ID AND s.Name LIKE '%o%' AND s.Age > 20)",
    "SELECT Name FROM singer WHERE Singer_ID IN"
    " (SELECT Singer_ID FROM singer_in_concert WHERE Name <> 'x')",
    "SELECT Name AS n, Age AS a FROM singer ORDER BY n",
    "SELECT Name, count(*) FROM singer GROUP BY 1 ORDER BY 1",
    "SELECT Name FROM singer EXCEPT SELECT T2.Name FROM singer_in_concert AS T1"
    " JOIN singer AS T2 ON T1.Singer_ID = T2.Singer_ID WHERE T2.Age > 40",
    'SELECT Name FROM singer WHERE Age > (SELECT avg(Age) FROM singer) AND Is_male = "T"',
    "SELECT Is_male, Birthday, Age FROM singer ORDER BY Is_male, Birthday",
]


def test_content_equivalence_each_representation_rewrites_exactly(tmp_path: Path) -> None:
    ctx = family_context(tmp_path, SINGER_ENTRY, SINGER_ROWS, SINGER_QUERIES)
    family = ContentEquivalence()
    seen: dict[str, DbEdit] = {}
    for seed in range(12):
        edit = family.plan(ctx, seed)
        assert edit.operation == family.plan(ctx, seed).operation  # seeded
        assert not edit.keeps_parsed_sql
        [(ref, _)] = edit.expressions.items()
        seen.setdefault(ref.column, edit)
    # a person's name, an age, a two-valued text: Birthday is no content-equivalence target
    assert set(seen) == {"Name", "Age", "Is_male"}
    for column, edit in seen.items():
        target = verified(tmp_path, ctx, edit, SINGER_QUERIES)
        singer = edit.schema.table("singer")
        assert singer.find(column) is None or column == "Is_male"
        rows = read_rows(target, singer)
        names = [c.name for c in singer.columns]
        if column == "Name":
            assert names[1:3] == ["First_name", "Last_name"]
            assert [r[1:3] for r in rows][:2] == [("Joe", "Sharp"), ("Rose", "White")]
            assert rows[5][1:3] == ("Mary", "Ann Lee")  # split at the first space
            assert edit.labels[("singer", "first_name")] == "first name"
        elif column == "Age":
            i = names.index("Birth_year")
            ages = [r[3] for r in SINGER_ROWS["singer"]]
            assert [r[i] for r in rows] == [None if a is None else REFERENCE_YEAR - a for a in ages]
            assert str(REFERENCE_YEAR) in edit.operation
        else:
            i = names.index("Is_male")
            assert [r[i] for r in rows] == [1, 0, 1, 1, 0, None]
            assert singer.columns[i].type.value == "boolean"


def test_content_equivalence_rewrites_every_reference(tmp_path: Path) -> None:
    ctx = family_context(tmp_path, SINGER_ENTRY, SINGER_ROWS, SINGER_QUERIES)
    edit = next(
        e
        for e in (ContentEquivalence().plan(ctx, s) for s in range(12))
        if "Name" in {r.column for r in e.expressions}
    )
    sql = rewrite_for("SELECT Name FROM singer GROUP BY Name ORDER BY Name", ctx.schema, edit)
    assert "Name" not in sql.replace("First_name", "").replace("Last_name", "")
    assert sql.count("First_name || ' ' || Last_name") == 3
    star = rewrite_for("SELECT * FROM singer", ctx.schema, edit)
    assert "First_name" in star and "*" not in star


def test_content_equivalence_refuses_inexact_and_fileless(tmp_path: Path) -> None:
    rows = {
        **SINGER_ROWS,
        "singer": [
            (1, "Timbaland", "US", 52.5, "T", None),  # no space; a real age
            (2, "Rose White", "France", 41, "F", None),
            (3, "Cher ", "US", 43, "X", None),  # three values in Is_male
        ],
    }
    queries = ["SELECT Name, Age, Is_male FROM singer"]
    ctx = family_context(tmp_path, SINGER_ENTRY, rows, queries)
    with pytest.raises(NotApplicable, match="no candidate"):
        ContentEquivalence().plan(ctx, 0)
    ctx.path = None
    with pytest.raises(NotApplicable, match="no database file"):
        ContentEquivalence().plan(ctx, 0)


@pytest.mark.parametrize("declared", ["number", "text"])
def test_age_becomes_a_birth_year_only_with_numeric_affinity(tmp_path: Path, declared: str) -> None:
    """An age kept as text compares as text ('9' > '10'): no integer expression stands in."""
    entry = spider_entry(
        "people",
        [f"people: id number, Age {declared}"],
        primary=[("people", "id")],
    )
    queries = ["SELECT id FROM people WHERE Age > '10'", "SELECT max(Age) FROM people"]
    ctx = family_context(tmp_path, entry, {"people": [(1, 9), (2, 10), (3, 31)]}, queries)
    assert affinity("TEXT") == "TEXT" and affinity("int") == "INTEGER"
    if declared == "text":
        with pytest.raises(NotApplicable, match="no candidate"):
            ContentEquivalence().plan(ctx, 0)
        return
    edit = ContentEquivalence().plan(ctx, 0)
    assert [c.name for c in edit.schema.table("people").columns] == ["id", "birth_year"]
    verified(tmp_path, ctx, edit, queries)


def test_two_valued_text_rewrites_with_its_affinity(tmp_path: Path) -> None:
    """Comparisons with other values than the two and with numbers still answer the same."""
    entry = spider_entry(
        "club",
        ["member: id number, Level text, Tag text"],
        primary=[("member", "id")],
    )
    rows = {"member": [(1, "Gold", "1"), (2, "Silver", "1"), (3, "Gold", "0"), (4, None, "1")]}
    queries = [
        "SELECT id FROM member WHERE Level = 'Gold'",
        "SELECT id FROM member WHERE Level <> 'Bronze' ORDER BY id",
        "SELECT count(*) FROM member WHERE Level IS NULL",
        "SELECT Level, count(*) FROM member GROUP BY Level",
        "SELECT id FROM member WHERE Tag = 1",
        "SELECT id FROM member WHERE Tag > 0.5",  # text affinity: '0' < '0.5' < '1'
        "SELECT id FROM member WHERE Level = 'Gold' AND Tag = '1'",
        "SELECT max(Level), min(Tag) FROM member",
    ]
    ctx = family_context(tmp_path, entry, rows, queries)
    edits = [ContentEquivalence().plan(ctx, s) for s in range(8)]
    assert {next(iter(e.expressions)).column for e in edits} == {"Level", "Tag"}
    for edit in edits:
        verified(tmp_path, ctx, edit, queries)
    gold = next(
        e for e in edits if "Level_is_Gold" in e.operation or "Level_is_gold" in e.operation
    )
    assert gold.schema.table("member").find("Level") is None


def test_column_split_name_and_date(tmp_path: Path) -> None:
    ctx, family = family_context(tmp_path, SINGER_ENTRY, SINGER_ROWS, SINGER_QUERIES), ColumnSplit()
    seen: dict[str, DbEdit] = {}
    for seed in range(10):
        edit = family.plan(ctx, seed)
        [ref] = edit.expressions
        seen.setdefault(ref.column, edit)
    assert set(seen) == {"Name", "Birthday"}
    target = verified(tmp_path, ctx, seen["Birthday"], SINGER_QUERIES)
    singer = seen["Birthday"].schema.table("singer")
    names = [c.name for c in singer.columns]
    assert names[-3:] == ["Birthday_year", "Birthday_month", "Birthday_day"]
    assert [r[-3:] for r in read_rows(target, singer)][:2] == [(1972, 3, 1), (1983, 11, 20)]
    verified(tmp_path, ctx, seen["Name"], SINGER_QUERIES)


def test_column_split_refuses_dates_that_do_not_round_trip(tmp_path: Path) -> None:
    rows = {
        **SINGER_ROWS,
        "singer": [
            (1, "Timbaland", "US", 52, "T", "1972-3-1"),  # not zero-padded
            (2, "Rose White", "France", 41, "F", "1983-11-20"),
        ],
    }
    ctx = family_context(tmp_path, SINGER_ENTRY, rows, ["SELECT Name, Birthday FROM singer"])
    with pytest.raises(NotApplicable):
        ColumnSplit().plan(ctx, 0)


@pytest.mark.parametrize("declared", ["TEXT", "DATETIME"])
def test_date_splits_only_with_text_affinity(tmp_path: Path, declared: str) -> None:
    """A DATETIME column has NUMERIC affinity: ``d > 2019`` compares text with a number there
    (text is greater), and no text expression can carry that affinity."""
    entry = spider_entry("log", ["log: id number, d/date time"])
    rows: dict[str, list[tuple[Any, ...]]] = {"log": [(1, "2018-05-01"), (2, "2020-01-31")]}
    queries = ["SELECT id FROM log WHERE d > 2019", "SELECT d FROM log ORDER BY d"]
    ctx = family_context(tmp_path, entry, rows, queries)
    assert ctx.path is not None
    table = SqlTable("log", (SqlColumn("id", ColumnType.NUMBER), SqlColumn("d", declared=declared)))
    create_database(ctx.path, SqlSchema((table,)), rows)
    matched = execute(ctx.path, queries[0])
    assert matched == ([(1,), (2,)] if declared == "DATETIME" else [(2,)])
    if declared == "DATETIME":
        with pytest.raises(NotApplicable):
            ColumnSplit().plan(ctx, 0)
        return
    edit = ColumnSplit().plan(ctx, 0)
    assert [c.name for c in edit.schema.table("log").columns] == ["id", "year", "month", "day"]
    verified(tmp_path, ctx, edit, queries)


PEOPLE_ENTRY = spider_entry(
    "school",
    [
        "Student: StuID number, LName/last name text, Fname/first name text, Major text, "
        "city_code text",
        "Has_Pet: StuID number, PetID number",
    ],
    primary=[("Student", "StuID")],
    foreign=[(("Has_Pet", "StuID"), ("Student", "StuID"))],
)
PEOPLE_ROWS: dict[str, list[tuple[Any, ...]]] = {
    "Student": [
        (1001, "Smith", "Linda", "Math", "BAL"),
        (1002, "Kim", "Tracy", "Physics", "HKG"),
        (1003, "Jones", "Shiela", "Math", "WAS"),
        (1004, "Van Dyke", "Eric", "History", "BAL"),
        (1005, "Lee", "Sarah", "Math", "PIT"),
    ],
    "Has_Pet": [(1001, 2001), (1002, 2002), (1002, 2003), (1005, 2004)],
}
PEOPLE_QUERIES = [
    "SELECT Fname, LName FROM Student WHERE Major = 'Math' ORDER BY LName",
    "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID"
    " GROUP BY T1.StuID HAVING count(*) > 1",
    "SELECT count(*) FROM Student WHERE LName LIKE 'Van%' OR Fname = 'Sarah'",
    "SELECT * FROM Student WHERE city_code = 'BAL'",
    "SELECT Fname FROM Student WHERE StuID NOT IN (SELECT StuID FROM Has_Pet)",
    "SELECT city_code, count(*) FROM Student GROUP BY city_code ORDER BY city_code",
]


def test_column_merge_first_and_last_name(tmp_path: Path) -> None:
    ctx = family_context(tmp_path, PEOPLE_ENTRY, PEOPLE_ROWS, PEOPLE_QUERIES)
    edit = ColumnMerge().plan(ctx, 0)
    assert {r.column for r in edit.expressions} == {"Fname", "LName"}
    student = edit.schema.table("Student")
    assert [c.name for c in student.columns] == ["StuID", "Name", "Major", "city_code"]
    target = verified(tmp_path, ctx, edit, PEOPLE_QUERIES)
    assert read_rows(target, student)[3] == (1004, "Eric Van Dyke", "History", "BAL")
    assert edit.mapping["Student"] == {"LName": "Name", "Fname": "Name"}


def test_column_merge_joins_address_parts_with_a_free_separator_and_never_unrelated_ones(
    tmp_path: Path,
) -> None:
    rows = {
        **PEOPLE_ROWS,
        "Student": [
            (1001, "Smith", "Linda", "Math, Art", "BA L"),
            (1002, "Kim", "Tracy", "Physics", "HK G"),
            (1003, "Jones", "Shiela", "Math", "WAS"),
        ],
    }
    unrelated = ["SELECT Major, city_code FROM Student WHERE Major LIKE 'Math%' ORDER BY StuID"]
    with pytest.raises(NotApplicable, match="address/place pair"):
        ColumnMerge().plan(family_context(tmp_path / "u", PEOPLE_ENTRY, rows, unrelated), 0)

    entry = spider_entry(
        "shop",
        ["store: id number, line_1 text, line_2 text"],
        primary=[("store", "id")],
    )
    cells = {"store": [(1, "12 High St, Unit 4", "Leeds"), (2, "3 Low Rd", "York; North")]}
    queries = [
        "SELECT line_1, line_2 FROM store ORDER BY id",
        "SELECT count(*) FROM store WHERE line_2 = 'Leeds'",
    ]
    ctx = family_context(tmp_path / "a", entry, cells, queries)
    edit = ColumnMerge().plan(ctx, 0)
    verified(tmp_path / "a", ctx, edit, queries)
    # ' ' and ', ' occur in line 1; '; ' does not (it occurs only in line 2)
    assert "'; '" in edit.operation and "address" in edit.operation.lower()


def test_column_merge_handles_null_rows_and_refuses_half_missing_ones(tmp_path: Path) -> None:
    entry = spider_entry(
        "persons",
        ["person: id number, first_name text, last_name text"],
        primary=[("person", "id")],
    )
    queries = [
        "SELECT first_name, last_name FROM person ORDER BY id",
        "SELECT id FROM person WHERE last_name IS NULL",
        "SELECT count(*) FROM person WHERE first_name = 'Ann' AND last_name = ''",
    ]
    rows: dict[str, list[tuple[Any, ...]]] = {
        "person": [(1, "Ann", "Lee"), (2, None, None), (3, "Ann", ""), (4, "", "Ng")]
    }
    ctx = family_context(tmp_path, entry, rows, queries)
    edit = ColumnMerge().plan(ctx, 0)
    target = verified(tmp_path, ctx, edit, queries)
    assert [r[1] for r in read_rows(target, edit.schema.table("person"))] == [
        "Ann Lee",
        None,
        "Ann ",
        " Ng",
    ]
    half = family_context(
        tmp_path / "half", entry, {"person": [*rows["person"], (5, "Bo", None)]}, queries
    )
    with pytest.raises(NotApplicable, match="exactly"):
        ColumnMerge().plan(half, 0)


def test_expression_rewrite_refuses_using_join(tmp_path: Path) -> None:
    ctx = family_context(tmp_path, PEOPLE_ENTRY, PEOPLE_ROWS, PEOPLE_QUERIES)
    edit = ColumnMerge().plan(ctx, 0)
    with pytest.raises(SqlRewriteError):
        rewrite_for(
            "SELECT Fname FROM Student JOIN (SELECT StuID, 'x' AS Fname FROM Has_Pet) USING (Fname)",
            ctx.schema,
            edit,
        )
