"""Gold-SQL rewriting on hand-written hard queries: exact text and execution equivalence."""

from __future__ import annotations

from pathlib import Path

import pytest

from cta.sql.database import (
    NewColumn,
    SchemaPerturbation,
    SqlColumn,
    SqlSchema,
    SqlTable,
    create_database,
    materialise_perturbed,
    perturb_schema,
)
from cta.sql.rewrite import SqlRewriteError, bind_query, rewrite_query
from cta.sql.verify import execute, has_top_level_order, same_results
from cta.table import ColumnType, ForeignKey

N, T = ColumnType.NUMBER, ColumnType.TEXT

SINGER = SqlTable(
    "singer",
    (
        SqlColumn("singer_id", N),
        SqlColumn("name", T),
        SqlColumn("country", T),
        SqlColumn("age", N),
        SqlColumn("Home Town", T),
    ),
    primary_key=("singer_id",),
)
CONCERT = SqlTable(
    "concert",
    (
        SqlColumn("concert_id", N),
        SqlColumn("name", T),
        SqlColumn("singer_id", N),
        SqlColumn("year", N),
    ),
    primary_key=("concert_id",),
    foreign_keys=(ForeignKey(column="singer_id", ref_table="singer", ref_column="singer_id"),),
)
SCHEMA = SqlSchema((SINGER, CONCERT))
ROWS = {
    "singer": [
        (1, "Ann", "France", 30, "Lyon"),
        (2, "Bob", "Spain", 25, "Madrid"),
        (3, "Cy", "France", 41, "Paris"),
        (4, "Di", "Peru", 25, "Lima"),
    ],
    "concert": [
        (10, "Gala", 1, 2014),
        (11, "Rock", 1, 2015),
        (12, "Jazz", 2, 2015),
        (13, "Folk", 3, 2016),
        (14, "Ann", 4, 2014),
    ],
}


def _carry(table: SqlTable, renames: dict[str, str], added: dict[str, str] | None = None):
    """New columns of ``table``: renamed ones, and an added column after some targets."""
    out = []
    for c in table.columns:
        out.append(NewColumn(name=renames.get(c.name, c.name), type=c.type, source=c.name))
        if added and c.name in added:
            out.append(NewColumn(name=added[c.name], type=T, source=None, template=c.name))
    return tuple(out)


@pytest.fixture(scope="module")
def original_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rewrite") / "original.sqlite"
    create_database(path, SCHEMA, ROWS)
    return path


def _check(original_db: Path, tmp_path: Path, perturbation: SchemaPerturbation, sql: str) -> str:
    """Rewrite ``sql``, then execute both and require the same result."""
    new_schema = perturb_schema(SCHEMA, perturbation)
    rewritten = rewrite_query(sql, SCHEMA, new_schema, perturbation.column_map(SCHEMA))
    target = tmp_path / "perturbed.sqlite"
    materialise_perturbed(original_db, target, SCHEMA, perturbation, seed=0)
    expected = execute(original_db, sql)
    got = execute(target, rewritten)
    assert expected, f"weak test: {sql!r} returns nothing"
    assert same_results(expected, got, has_top_level_order(sql)), (rewritten, expected, got)
    return rewritten


RPL = SchemaPerturbation(
    {
        "singer": _carry(
            SINGER,
            {"name": "full name", "age": "order", "Home Town": "city #1", "country": 'nation "x"'},
        ),
        "concert": _carry(CONCERT, {"year": "% year"}),
    }
)

CASES = [
    # same-named column in two tables: only singer.name changes
    (
        "SELECT T1.name, T2.name FROM singer AS T1 JOIN concert AS T2 "
        "ON T1.singer_id = T2.singer_id",
        'SELECT T1."full name", T2.name FROM singer AS T1 JOIN concert AS T2 '
        "ON T1.singer_id = T2.singer_id",
    ),
    # unqualified references bound through the join, reserved word and % quoted
    (
        "SELECT age, year FROM singer JOIN concert ON singer.singer_id = concert.singer_id "
        "WHERE year > 2014",
        'SELECT "order", "% year" FROM singer JOIN concert ON singer.singer_id = '
        'concert.singer_id WHERE "% year" > 2014',
    ),
    # self-join with aliases, case-insensitive names
    (
        "SELECT a.NAME, b.Name FROM singer AS a JOIN singer AS b ON a.AGE = b.age "
        "WHERE a.singer_id < b.singer_id",
        'SELECT a."full name", b."full name" FROM singer AS a JOIN singer AS b '
        'ON a."order" = b."order" WHERE a.singer_id < b.singer_id',
    ),
    # nested subqueries
    (
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM concert "
        "WHERE year > (SELECT min(year) FROM concert))",
        'SELECT "full name" FROM singer WHERE singer_id IN (SELECT singer_id FROM concert '
        'WHERE "% year" > (SELECT min("% year") FROM concert))',
    ),
    # correlated subquery through an outer alias
    (
        "SELECT name FROM singer AS s WHERE age >= (SELECT avg(age) FROM singer "
        "WHERE country = s.country)",
        'SELECT "full name" FROM singer AS s WHERE "order" >= (SELECT avg("order") FROM singer '
        'WHERE "nation ""x""" = s."nation ""x""")',
    ),
    # quoted original names keep their quotes; a bare one that now needs quoting takes the
    # query's identifier quotes (backticks); a double-quoted string literal stays a literal
    (
        'SELECT "Home Town" FROM singer WHERE country = "France" ORDER BY `Home Town`',
        'SELECT "city #1" FROM singer WHERE `nation "x"` = "France" ORDER BY `city #1`',
    ),
    # GROUP BY / HAVING / ORDER BY with a result alias
    (
        "SELECT country, count(*) AS n FROM singer GROUP BY country HAVING n >= 1 "
        "ORDER BY n DESC, country",
        'SELECT "nation ""x""", count(*) AS n FROM singer GROUP BY "nation ""x""" '
        'HAVING n >= 1 ORDER BY n DESC, "nation ""x"""',
    ),
    # an alias named like the renamed column wins in ORDER BY
    (
        "SELECT max(age) AS age FROM singer GROUP BY country ORDER BY age",
        'SELECT max("order") AS age FROM singer GROUP BY "nation ""x""" ORDER BY age',
    ),
    # set operation: only the singer branch renames
    (
        "SELECT name FROM singer UNION SELECT name FROM concert ORDER BY name",
        'SELECT "full name" FROM singer UNION SELECT name FROM concert ORDER BY name',
    ),
    (
        "SELECT name FROM singer WHERE age > 26 INTERSECT SELECT name FROM concert",
        'SELECT "full name" FROM singer WHERE "order" > 26 INTERSECT SELECT name FROM concert',
    ),
    # derived table passing a renamed column through
    (
        "SELECT T.name FROM (SELECT name, age FROM singer) AS T WHERE T.age < 40",
        'SELECT T."full name" FROM (SELECT "full name", "order" FROM singer) AS T '
        'WHERE T."order" < 40',
    ),
    # JOIN without ON, LIKE, !=
    (
        "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 WHERE T1.singer_id = "
        "T2.singer_id AND T1.name LIKE '%n%' AND T2.year != 2016",
        'SELECT T1."full name" FROM singer AS T1 JOIN concert AS T2 WHERE T1.singer_id = '
        'T2.singer_id AND T1."full name" LIKE \'%n%\' AND T2."% year" != 2016',
    ),
]


@pytest.mark.parametrize(("sql", "expected"), CASES)
def test_rpl_rewrites_every_reference(
    original_db: Path, tmp_path: Path, sql: str, expected: str
) -> None:
    assert _check(original_db, tmp_path, RPL, sql) == expected


def test_add_expands_stars_and_keeps_results(original_db: Path, tmp_path: Path) -> None:
    add = SchemaPerturbation({"singer": _carry(SINGER, {}, {"age": "weight"})})
    assert (
        _check(original_db, tmp_path, add, "SELECT * FROM singer WHERE age > 26")
        == 'SELECT singer_id, name, country, age, "Home Town" FROM singer WHERE age > 26'
    )
    assert _check(
        original_db,
        tmp_path,
        add,
        "SELECT T1.*, T2.year FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id",
    ) == (
        'SELECT T1.singer_id, T1.name, T1.country, T1.age, T1."Home Town", T2.year '
        "FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id"
    )
    # count(*) and stars of tables without new columns stay as written
    sql = "SELECT count(*) FROM (SELECT * FROM concert) WHERE year = 2015"
    assert _check(original_db, tmp_path, add, sql) == sql


def test_add_qualifies_references_a_new_column_would_capture(
    original_db: Path, tmp_path: Path
) -> None:
    # concert gains "age" and "country": the unqualified singer columns become ambiguous
    add = SchemaPerturbation({"concert": _carry(CONCERT, {}, {"name": "age", "year": "country"})})
    sql = (
        "SELECT name, age FROM singer WHERE singer_id IN "
        "(SELECT singer_id FROM concert WHERE country = 'France' OR year = 2015)"
    )
    rewritten = _check(original_db, tmp_path, add, sql)
    assert rewritten == (
        "SELECT name, age FROM singer WHERE singer_id IN "
        "(SELECT singer_id FROM concert WHERE singer.country = 'France' OR year = 2015)"
    )
    join = "SELECT age FROM singer JOIN concert ON singer.singer_id = concert.singer_id"
    assert _check(original_db, tmp_path, add, join).startswith("SELECT singer.age FROM")


def test_double_quoted_literal_that_would_name_a_column_becomes_a_string(
    original_db: Path, tmp_path: Path
) -> None:
    add = SchemaPerturbation({"singer": _carry(SINGER, {}, {"country": "France"})})
    sql = 'SELECT name FROM singer WHERE country = "France"'
    assert _check(original_db, tmp_path, add, sql) == (
        "SELECT name FROM singer WHERE country = 'France'"
    )


def test_bind_reports_mentions_literals_and_joins() -> None:
    bound = bind_query(
        "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id "
        "WHERE T2.year BETWEEN 2014 AND 2015 AND T1.country = \"France\" AND T1.name LIKE 'A%'",
        SCHEMA,
    )
    names = [(r.table, r.column) for r in bound.columns]
    assert names == [
        ("singer", "name"),
        ("singer", "singer_id"),
        ("concert", "singer_id"),
        ("concert", "year"),
        ("singer", "country"),
    ]
    literals = {(r.table, r.column): v for r, v in bound.literals.items()}
    assert literals[("concert", "year")] == [2014, 2015]
    assert literals[("singer", "country")] == ["France"]
    assert literals[("singer", "name")] == ["A"]
    assert [(a.table, b.table) for a, b in bound.links] == [("singer", "concert")]


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT FROM WHERE", "parse_error"),
        ("SELECT name FROM singers", "unknown_table"),
        ("SELECT height FROM singer", "unknown_column"),
        ("SELECT T9.name FROM singer AS T1", "unknown_table"),
        (
            "SELECT name FROM singer JOIN concert ON singer.singer_id = concert.singer_id",
            "ambiguous_column",
        ),
    ],
)
def test_unbindable_queries_are_reported_not_passed_through(sql: str, problem: str) -> None:
    with pytest.raises(SqlRewriteError) as err:
        rewrite_query(sql, SCHEMA, perturb_schema(SCHEMA, RPL), RPL.column_map(SCHEMA))
    assert err.value.problem == problem


def test_using_join_on_a_renamed_column_is_refused() -> None:
    sql = "SELECT year FROM singer JOIN concert USING (singer_id)"
    rpl = SchemaPerturbation({"singer": _carry(SINGER, {"singer_id": "singer key"})})
    with pytest.raises(SqlRewriteError) as err:
        rewrite_query(sql, SCHEMA, perturb_schema(SCHEMA, rpl), rpl.column_map(SCHEMA))
    assert err.value.problem == "unsupported"
