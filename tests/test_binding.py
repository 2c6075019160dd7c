"""The one SQL binding layer: its public surface, the folds and where they differ (no private
name crosses a module boundary anywhere: ``tests/test_architecture.py``)."""

from __future__ import annotations

import pytest

from cta.sql import binding
from cta.sql.binding import Binder, SqlRewriteError, bind_query, outer_scope
from cta.sql.database import ColumnRef, SqlColumn, SqlSchema, SqlTable
from cta.sql.identifiers import evaluator_fold, name_key, quote_like, sqlite_fold

SCHEMA = SqlSchema(
    (
        SqlTable("singer", (SqlColumn("id"), SqlColumn("name"), SqlColumn("country"))),
        SqlTable("concert", (SqlColumn("id"), SqlColumn("singer_id"), SqlColumn("year"))),
    )
)


def test_binding_exports_its_surface() -> None:
    assert binding.__all__ == sorted(binding.__all__)
    for name in binding.__all__:
        assert hasattr(binding, name)


def test_binder_binds_each_reference_to_its_from_item() -> None:
    sql = (
        "SELECT T1.name FROM singer AS T1 WHERE EXISTS "
        "(SELECT 1 FROM concert WHERE singer_id = T1.id AND year > 2010)"
    )
    binder = Binder(sql, SCHEMA)
    bound = {column.sql(): binder.bindings[id(column)].ref for column in binder.columns()}
    assert bound == {
        "T1.name": ColumnRef("singer", "name"),
        "singer_id": ColumnRef("concert", "singer_id"),
        "T1.id": ColumnRef("singer", "id"),
        "year": ColumnRef("concert", "year"),
    }
    inner = binder.scope_at(next(c for c in binder.columns() if c.name == "year"))
    assert outer_scope(inner) is binder.scope_at(next(c for c in binder.columns()))


def test_bind_query_reports_what_cannot_be_bound() -> None:
    with pytest.raises(SqlRewriteError) as caught:
        bind_query("SELECT id FROM singer JOIN concert", SCHEMA)
    assert caught.value.problem == "ambiguous_column"
    with pytest.raises(SqlRewriteError) as caught:
        bind_query("SELECT nope FROM singer", SCHEMA)
    assert caught.value.problem == "unknown_column"
    # sqlglot's own scope checks are reported the same way, never raised as sqlglot errors
    with pytest.raises(SqlRewriteError) as caught:
        bind_query("SELECT s.name FROM singer AS s JOIN concert AS s ON s.id = s.singer_id", SCHEMA)
    assert caught.value.problem == "unsupported"


def test_the_folds_differ_where_documented() -> None:
    assert sqlite_fold("Name") == evaluator_fold("Name") == "name"
    # non-ASCII letters: two identifiers to SQLite, one to the Spider evaluator
    assert sqlite_fold("AÑO") != sqlite_fold("año")
    assert evaluator_fold("AÑO") == evaluator_fold("año")
    # a new name collides for any reader: coarser than both folds
    assert name_key(" Straße ") == name_key("STRASSE")
    assert sqlite_fold("Straße") != sqlite_fold("STRASSE")


def test_quote_like_keeps_the_style_of_the_text() -> None:
    assert quote_like("home_city", "`") == "home_city"
    assert quote_like("home city", "`") == "`home city`"
    assert quote_like("a`b", "`") == "`a``b`"
    assert quote_like("home city", "[") == "[home city]"
    assert quote_like("x]y", "[") == '"x]y"'
    assert quote_like("home city", "") == '"home city"'
    assert quote_like("order", "`") == "`order`"
