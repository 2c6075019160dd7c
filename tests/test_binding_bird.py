"""BIRD's SQL dialect through the binder and the rewriter: backticked and bracketed
identifiers with spaces and punctuation, CAST … AS REAL, IIF, SUBSTR, STRFTIME, window
functions, CTEs, nested aggregates, CASE WHEN, LIMIT. The queries are written here in BIRD's
style over a schema of our own; each rename is checked by running both queries."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from cta.sql.binding import bind_query
from cta.sql.database import (
    ColumnRef,
    NewColumn,
    SchemaPerturbation,
    SqlColumn,
    SqlSchema,
    SqlTable,
    create_database,
    perturb_schema,
)
from cta.sql.rewrite import rewrite_query
from cta.sql.verify import execute, has_top_level_order, same_results
from cta.table import ColumnType

N, T = ColumnType.NUMBER, ColumnType.TEXT
SCHEMA = SqlSchema(
    (
        SqlTable(
            "schools",
            (
                SqlColumn("CDSCode", T, "TEXT"),
                SqlColumn("County", T, "TEXT"),
                SqlColumn("Enrollment (Ages 5-17)", N, "INTEGER"),
                SqlColumn("Charter School (Y/N)", N, "INTEGER"),
                SqlColumn("OpenDate", T, "DATE"),
            ),
        ),
        SqlTable(
            "scores",
            (
                SqlColumn("cds", T, "TEXT"),
                SqlColumn("AvgMath", N, "REAL"),
                SqlColumn("NumTested", N, "INTEGER"),
                SqlColumn("County", T, "TEXT"),
            ),
        ),
    )
)
ROWS: dict[str, list[tuple[Any, ...]]] = {
    "schools": [
        ("01", "Alameda", 120, 1, "1999-08-01"),
        ("02", "Alameda", 80, 0, "2004-09-15"),
        ("03", "Fresno", 200, 0, "2004-01-10"),
        ("04", "Kern", 50, 1, "2011-07-30"),
    ],
    "scores": [
        ("01", 512.5, 40, "Alameda"),
        ("02", 430.0, 12, "Alameda"),
        ("03", 480.25, 90, "Fresno"),
        ("04", 390.0, 5, "Kern"),
    ],
}


def _renamed(renames: dict[ColumnRef, str]) -> tuple[SqlSchema, SchemaPerturbation]:
    tables = {}
    for table in SCHEMA.tables:
        tables[table.name] = tuple(
            NewColumn(renames.get(ColumnRef(table.name, c.name), c.name), c.type, source=c.name)
            for c in table.columns
        )
    perturbation = SchemaPerturbation(tables)
    return perturb_schema(SCHEMA, perturbation), perturbation


def _same_answer(tmp_path: Path, sql: str, new_sql: str, new_schema: SqlSchema) -> None:
    create_database(tmp_path / "a.sqlite", SCHEMA, ROWS)
    create_database(tmp_path / "b.sqlite", new_schema, ROWS)
    before = execute(tmp_path / "a.sqlite", sql)
    after = execute(tmp_path / "b.sqlite", new_sql)
    assert before, "the check needs rows"
    assert same_results(before, after, has_top_level_order(sql))


RENAMES = {
    ColumnRef("schools", "Enrollment (Ages 5-17)"): "Pupils [5-17] enrolled",
    ColumnRef("schools", "Charter School (Y/N)"): "Is Charter",
    ColumnRef("schools", "OpenDate"): "Opening Date",
    ColumnRef("schools", "County"): "County Name",
    ColumnRef("scores", "AvgMath"): "Average Math Score",
    ColumnRef("scores", "NumTested"): "TestTakers",
}

CASES = [
    # backticked names with spaces and brackets; CAST … AS REAL division; LIMIT
    (
        "SELECT T1.County, CAST(T1.`Enrollment (Ages 5-17)` AS REAL) / T2.NumTested AS ratio "
        "FROM schools AS T1 INNER JOIN scores AS T2 ON T1.CDSCode = T2.cds "
        "ORDER BY ratio DESC LIMIT 2",
        "SELECT T1.`County Name`, CAST(T1.`Pupils [5-17] enrolled` AS REAL) / T2.TestTakers "
        "AS ratio FROM schools AS T1 INNER JOIN scores AS T2 ON T1.CDSCode = T2.cds "
        "ORDER BY ratio DESC LIMIT 2",
    ),
    # IIF inside SUM, a percentage as BIRD writes it
    (
        "SELECT CAST(SUM(IIF(`Charter School (Y/N)` = 1, 1, 0)) AS REAL) * 100 / COUNT(CDSCode) "
        "FROM schools",
        "SELECT CAST(SUM(IIF(`Is Charter` = 1, 1, 0)) AS REAL) * 100 / COUNT(CDSCode) FROM schools",
    ),
    # STRFTIME and SUBSTR over a renamed date; a name that now needs quoting gets backticks
    # because the query quotes identifiers with them
    (
        "SELECT COUNT(*) FROM schools WHERE STRFTIME('%Y', OpenDate) = '2004' "
        "AND SUBSTR(`CDSCode`, 1, 1) = '0'",
        "SELECT COUNT(*) FROM schools WHERE STRFTIME('%Y', `Opening Date`) = '2004' "
        "AND SUBSTR(`CDSCode`, 1, 1) = '0'",
    ),
    # CASE WHEN in an aggregate, a nested aggregate in a subquery, a double-quoted string
    (
        'SELECT SUM(CASE WHEN County = "Alameda" THEN `Enrollment (Ages 5-17)` ELSE 0 END) '
        "FROM schools WHERE `Enrollment (Ages 5-17)` < "
        "(SELECT MAX(`Enrollment (Ages 5-17)`) FROM schools)",
        'SELECT SUM(CASE WHEN `County Name` = "Alameda" THEN `Pupils [5-17] enrolled` ELSE 0 '
        "END) FROM schools WHERE `Pupils [5-17] enrolled` < "
        "(SELECT MAX(`Pupils [5-17] enrolled`) FROM schools)",
    ),
    # a CTE and a window function; scores.County (same name, another table) untouched; a
    # query that quotes no identifier gets the default quote
    (
        "WITH ranked AS (SELECT cds, County, RANK() OVER (PARTITION BY County ORDER BY "
        "AvgMath DESC) AS r FROM scores) SELECT T1.County, T2.cds FROM schools AS T1 "
        "JOIN ranked AS T2 ON T1.CDSCode = T2.cds WHERE T2.r = 1",
        "WITH ranked AS (SELECT cds, County, RANK() OVER (PARTITION BY County ORDER BY "
        '"Average Math Score" DESC) AS r FROM scores) SELECT T1."County Name", T2.cds FROM '
        "schools AS T1 JOIN ranked AS T2 ON T1.CDSCode = T2.cds WHERE T2.r = 1",
    ),
    # bracketed identifiers keep brackets, and a bare one renamed takes them
    (
        "SELECT [Charter School (Y/N)], AVG(T2.AvgMath) FROM schools AS T1 JOIN scores AS T2 "
        "ON T1.CDSCode = T2.cds GROUP BY [Charter School (Y/N)]",
        "SELECT [Is Charter], AVG(T2.[Average Math Score]) FROM schools AS T1 JOIN scores AS T2 "
        "ON T1.CDSCode = T2.cds GROUP BY [Is Charter]",
    ),
]


@pytest.mark.parametrize(("sql", "expected"), CASES)
def test_bird_style_queries_are_bound_and_rewritten(
    tmp_path: Path, sql: str, expected: str
) -> None:
    new_schema, perturbation = _renamed(RENAMES)
    out = rewrite_query(sql, SCHEMA, new_schema, perturbation.column_map(SCHEMA))
    assert out == expected
    _same_answer(tmp_path, sql, out, new_schema)


def test_a_bare_query_takes_the_schema_quote(tmp_path: Path) -> None:
    sql = "SELECT County FROM schools WHERE OpenDate LIKE '2004%'"
    new_schema, perturbation = _renamed(RENAMES)
    mapping = perturbation.column_map(SCHEMA)
    assert rewrite_query(sql, SCHEMA, new_schema, mapping, quote="`") == (
        "SELECT `County Name` FROM schools WHERE `Opening Date` LIKE '2004%'"
    )
    assert rewrite_query(sql, SCHEMA, new_schema, mapping) == (
        'SELECT "County Name" FROM schools WHERE "Opening Date" LIKE \'2004%\''
    )
    _same_answer(tmp_path, sql, rewrite_query(sql, SCHEMA, new_schema, mapping), new_schema)


def test_the_schema_quote_is_the_default(tmp_path: Path) -> None:
    sql = "SELECT County FROM schools WHERE OpenDate LIKE '2004%'"
    new_schema, perturbation = _renamed(RENAMES)
    bird = dataclasses.replace(SCHEMA, quote="`")
    assert perturb_schema(bird, perturbation).quote == "`"
    out = rewrite_query(sql, bird, new_schema, perturbation.column_map(SCHEMA))
    assert out == "SELECT `County Name` FROM schools WHERE `Opening Date` LIKE '2004%'"
    _same_answer(tmp_path, sql, out, new_schema)


def test_an_added_column_that_would_capture_a_backticked_name_is_qualified(
    tmp_path: Path,
) -> None:
    # scores gains a column called like schools' `Enrollment (Ages 5-17)`
    sql = (
        "SELECT `Enrollment (Ages 5-17)` FROM schools AS T1 JOIN scores AS T2 "
        "ON T1.CDSCode = T2.cds WHERE T2.AvgMath > 400"
    )
    columns = {
        "scores": (
            *(NewColumn(c.name, c.type, source=c.name) for c in SCHEMA.table("scores").columns),
            NewColumn("Enrollment (Ages 5-17)", N),
        )
    }
    perturbation = SchemaPerturbation(columns)
    new_schema = perturb_schema(SCHEMA, perturbation)
    out = rewrite_query(sql, SCHEMA, new_schema, perturbation.column_map(SCHEMA))
    assert out.startswith("SELECT T1.`Enrollment (Ages 5-17)` FROM schools")
    rows = {**ROWS, "scores": [(*r, 7) for r in ROWS["scores"]]}
    create_database(tmp_path / "a.sqlite", SCHEMA, ROWS)
    create_database(tmp_path / "b.sqlite", new_schema, rows)
    assert execute(tmp_path / "a.sqlite", sql) == execute(tmp_path / "b.sqlite", out)


def test_bind_query_reads_literals_inside_bird_functions() -> None:
    bound = bind_query(
        "SELECT SUM(IIF(T1.County = 'Kern', 1, 0)) FROM schools AS T1 INNER JOIN scores AS T2 "
        "ON T1.CDSCode = T2.cds WHERE T2.`NumTested` BETWEEN 10 AND 50 "
        "AND STRFTIME('%Y', T1.OpenDate) = '2011'",
        SCHEMA,
    )
    assert bound.columns == (
        ColumnRef("schools", "County"),
        ColumnRef("schools", "CDSCode"),
        ColumnRef("scores", "cds"),
        ColumnRef("scores", "NumTested"),
        ColumnRef("schools", "OpenDate"),
    )
    assert bound.literals[ColumnRef("schools", "County")] == ["Kern"]
    assert bound.literals[ColumnRef("scores", "NumTested")] == [10, 50]
    assert bound.links == ((ColumnRef("schools", "CDSCode"), ColumnRef("scores", "cds")),)
