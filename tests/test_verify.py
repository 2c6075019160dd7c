"""Execution checks: statuses, multiset vs ordered comparison, float tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from cta.sql.database import SqlColumn, SqlSchema, SqlTable, create_database
from cta.sql.verify import (
    ExecutionError,
    execute,
    has_top_level_order,
    same_results,
    verify_query,
)
from cta.table import ColumnType


@pytest.fixture()
def dbs(tmp_path: Path) -> tuple[Path, Path]:
    original = SqlSchema(
        (SqlTable("t", (SqlColumn("name"), SqlColumn("score", ColumnType.NUMBER))),)
    )
    renamed = SqlSchema(
        (SqlTable("t", (SqlColumn("full name"), SqlColumn("score", ColumnType.NUMBER))),)
    )
    rows = {"t": [("a", 1.0), ("b", 2.5), ("c", 2.5)]}
    create_database(tmp_path / "o.sqlite", original, rows)
    create_database(tmp_path / "p.sqlite", renamed, rows)
    return tmp_path / "o.sqlite", tmp_path / "p.sqlite"


def test_same_results_multiset_and_order() -> None:
    assert same_results([(1,), (2,)], [(2,), (1,)], ordered=False)
    assert not same_results([(1,), (2,)], [(2,), (1,)], ordered=True)
    assert not same_results([(1,), (1,)], [(1,)], ordered=False)  # multiplicity counts
    assert same_results([(0.1 + 0.2,)], [(0.3,)], ordered=True)
    assert not same_results([(0.3001,)], [(0.3,)], ordered=True)


def test_top_level_order() -> None:
    assert has_top_level_order("SELECT a FROM t ORDER BY a")
    assert has_top_level_order("SELECT a FROM t UNION SELECT a FROM u ORDER BY a")
    assert not has_top_level_order("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 2)")


def test_statuses(dbs: tuple[Path, Path]) -> None:
    o, p = dbs
    sql = "SELECT name FROM t WHERE score > 2"
    ok = verify_query(o, sql, p, 'SELECT "full name" FROM t WHERE score > 2')
    assert (ok.status, ok.rows) == ("ok", 2)
    wrong = verify_query(o, sql, p, 'SELECT "full name" FROM t WHERE score >= 1')
    assert wrong.status == "mismatch" and "2 rows originally, 3 after" in wrong.reason
    order = verify_query(
        o,
        "SELECT name FROM t ORDER BY name",
        p,
        'SELECT "full name" FROM t ORDER BY "full name" DESC',
    )
    assert order.status == "mismatch"
    stale = verify_query(o, sql, p, sql)  # the old name no longer exists
    assert stale.status == "rewrite_error" and "no such column: name" in stale.reason
    broken = verify_query(o, "SELECT nope FROM t", p, "SELECT nope FROM t")
    assert broken.status == "original_error"
    parse = verify_query(o, sql, p, None, "parse_error: invalid expression")
    assert parse.status == "parse_error"
    refused = verify_query(o, sql, p, None, "unsupported: USING join")
    assert (refused.status, refused.reason) == ("rewrite_error", "unsupported: USING join")


def test_execute_is_read_only_and_reports_errors(dbs: tuple[Path, Path]) -> None:
    o, _ = dbs
    with pytest.raises(ExecutionError):
        execute(o, "DELETE FROM t")
    assert len(execute(o, "SELECT * FROM t")) == 3
    with pytest.raises(ExecutionError):
        execute(o.with_name("missing.sqlite"), "SELECT 1")


def test_ties_cut_by_limit_are_not_a_mismatch(tmp_path: Path) -> None:
    schema = SqlSchema((SqlTable("t", (SqlColumn("name"), SqlColumn("score", ColumnType.NUMBER))),))
    rows = [("a", 3), ("b", 2), ("c", 2), ("d", 1)]
    create_database(tmp_path / "o.sqlite", schema, {"t": rows})
    # the same rows stored in another order stand for a plan that meets ties differently
    create_database(tmp_path / "p.sqlite", schema, {"t": [rows[0], rows[2], rows[1], rows[3]]})
    o, p = tmp_path / "o.sqlite", tmp_path / "p.sqlite"
    top2 = "SELECT name FROM t ORDER BY score DESC LIMIT 2"
    assert not same_results(execute(o, top2), execute(p, top2), ordered=True)
    tie = verify_query(o, top2, p, top2)
    assert tie.status == "ok" and "tied" in tie.reason
    # tied rows inside the result (not cut by LIMIT) must still be the same rows
    by_alias = "SELECT name, score AS s FROM t ORDER BY s DESC"
    assert verify_query(o, by_alias, p, by_alias).status == "ok"
    full = "SELECT name FROM t ORDER BY score DESC"
    wrong = "SELECT CASE WHEN name = 'c' THEN 'b' ELSE name END FROM t ORDER BY score DESC"
    assert verify_query(o, full, p, wrong).status == "mismatch"


def test_a_limit_without_order_may_keep_other_rows_of_the_same_result(tmp_path: Path) -> None:
    import sqlite3

    from cta.sql.verify import verify_query

    def db(name: str, rows: list[int]) -> Path:
        path = tmp_path / name
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE t (a INTEGER)")
            conn.executemany("INSERT INTO t VALUES (?)", [(r,) for r in rows])
        return path

    original = db("a.sqlite", list(range(10)))
    reordered = db("b.sqlite", list(reversed(range(10))))  # another plan: other rows first
    missing = db("c.sqlite", list(reversed(range(9))))
    sql = "SELECT a FROM t LIMIT 3"
    outcome = verify_query(original, sql, reordered, sql)
    assert outcome.status == "ok" and "LIMIT" in outcome.reason
    assert verify_query(original, sql, missing, sql).status == "mismatch"
    ordered = "SELECT a FROM t ORDER BY a DESC LIMIT 3"  # an ordered LIMIT is held to its rows
    assert verify_query(original, ordered, missing, ordered).status == "mismatch"
