"""What every perturbation family shares: the edit of one database, how it is applied.

A family (MT-Teql's schema transformations, Dr.Spider's abbreviation and content
equivalence, schema evolution's table renames and column splits, Spider-Syn's question
synonyms) turns one database, under one seed, into a :class:`DbEdit`: the new schema in its
new order, the natural names the parser sees, how each new table is filled from the
original database (an SQLite ``SELECT`` — data is migrated, never regenerated, except for a
column the family adds), and how a gold query follows (renamed tables and columns, columns
replaced by expressions, or the family's own rewrite). :func:`rewrite_for` applies it to one
query and checks that the result binds against the new schema; :func:`cta.families.model.materialise_edit`
writes the database; :func:`entry_of` writes its ``tables.json`` entry.

A family that cannot apply to a database says why (:class:`NotApplicable`); the protocol
then leaves that database's questions unperturbed with that reason.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from cta.families.model import DbEdit, Key
from cta.formats.spider_schema import parse_spider_entry
from cta.sql.database import (
    ColumnRef,
    SqlSchema,
    quote_identifier,
    sqlite_fold,
)
from cta.sql.rewrite import BoundQuery, SqlRewriteError, bind_query, rewrite_query
from cta.table import Table

__all__ = [
    "NEEDS",
    "Family",
    "FamilyContext",
    "Need",
    "NotApplicable",
    "Scope",
    "Usage",
    "entry_of",
    "rewrite_for",
    "usage_of",
]

Scope = Literal["question", "database"]
"""Where a family plans: one edit per question and seed (RPL, ADD: each question's own
mentioned columns) or one per database and seed (every other family)."""

Need = Literal[
    "database",
    "dropped-columns",
    "several-tables",
    "merged-tables",
    "table-names",
    "keys",
    "expressions",
    "judge",
]
"""What a family needs. All but ``judge`` are what a format must hold for it to run there
(a driver's ``holds``): ``database`` — planned over a database the format builds (its schema,
gold queries and cells), which every family but RPL and ADD is; ``dropped-columns`` — a
column leaves its table; ``several-tables`` — the edit has, or adds, a second table;
``merged-tables`` — two tables become one; ``table-names`` — a table is renamed;
``keys`` — key declarations change; ``expressions`` — a column is read back through an
expression, or queries are rewritten by the family's own rule. ``judge``: the judge's
equivalence rule must be given (``missing_judge`` without)."""

NEEDS: tuple[Need, ...] = Need.__args__  # type: ignore[attr-defined]
"""Every need, in the order of :data:`Need`."""


class NotApplicable(Exception):  # noqa: N818 — a verdict, not a failure
    """The family has nothing to change in this database (or, planned per question, for this
    question); ``str(exc)`` says why, ``unperturbed`` per table which mentioned columns were
    left as they were and why (what a per-question record carries)."""

    def __init__(self, reason: str, unperturbed: Mapping[str, Mapping[str, str]] | None = None):
        super().__init__(reason)
        self.unperturbed = {t: dict(c) for t, c in (unperturbed or {}).items()}


@dataclass(frozen=True)
class Usage:
    """What the gold queries of one database use (folded names)."""

    columns: frozenset[Key]
    tables: frozenset[str]
    star_tables: frozenset[str]
    unbound: int = 0

    def free(self, table: str, column: str) -> bool:
        """No query mentions the column, and no query selects ``*`` over its table."""
        t = sqlite_fold(table)
        return (t, sqlite_fold(column)) not in self.columns and t not in self.star_tables


def _star_tables(sql: str) -> set[str]:
    """Tables a ``SELECT *`` / ``T.*`` of the query may cover (every table it names)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return set()
    for select in tree.find_all(exp.Select):
        for proj in select.expressions:
            if isinstance(proj, exp.Star) or (
                isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)
            ):
                return {sqlite_fold(t.name) for t in tree.find_all(exp.Table)}
    return set()


def usage_of(queries: Sequence[BoundQuery | SqlRewriteError]) -> Usage:
    """The columns and tables ``queries`` use (a star counts as every column of its tables)."""
    columns: set[Key] = set()
    tables: set[str] = set()
    stars: set[str] = set()
    unbound = 0
    for q in queries:
        if isinstance(q, SqlRewriteError):
            unbound += 1
            continue
        for ref in q.columns:
            columns.add((sqlite_fold(ref.table), sqlite_fold(ref.column)))
        try:
            tables |= {
                sqlite_fold(t.name)
                for t in sqlglot.parse_one(q.sql, read="sqlite").find_all(exp.Table)
            }
        except SqlglotError:
            pass
        stars |= _star_tables(q.sql)
    return Usage(frozenset(columns), frozenset(tables), frozenset(stars), unbound)


@dataclass
class FamilyContext:
    """One database as a family sees it."""

    db_id: str
    schema: SqlSchema
    tables: list[Table]  # natural names, aligned with ``schema.tables``
    entry: Mapping[str, Any] | None  # the Spider entry, when the dataset is Spider
    usage: Usage
    queries: list[BoundQuery]  # the bound gold queries of the database
    path: Path | None = None  # the original SQLite file, for families that read cells
    # Planned per question: every database of the run, all its gold queries (what a family
    # that asks the pipeline once for the whole run asks about).
    run: Mapping[str, FamilyContext] | None = None

    def natural(self, table: str, column: str = "") -> str:
        """The natural name of a table (``column=""``) or of one of its columns."""
        for t, sql_table in enumerate(self.schema.tables):
            if sqlite_fold(sql_table.name) == sqlite_fold(table):
                if not column:
                    return self.tables[t].name or sql_table.name
                return self.tables[t].column(sql_table.columns[sql_table.index(column)].name).name
        raise KeyError(table)

    def cells(self, table: str, column: str) -> list[Any]:
        """Every cell of a column of the original database (empty when there is no file)."""
        if self.path is None:
            return []
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
        try:
            sql = f"SELECT {quote_identifier(column)} FROM {quote_identifier(table)}"
            return [r[0] for r in conn.execute(sql)]
        finally:
            conn.close()


class Family(Protocol):
    """A perturbation family: one database and seed in, one edit out (or a reason not to).

    Planned per question (its scope, declared where it is registered), ``ctx`` is the
    question's view of its database: ``queries`` its one bound gold query, ``usage`` what
    that query uses, ``run`` every database of the run."""

    kind: str

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        """The edit of ``ctx``'s database under ``seed``; raises :class:`NotApplicable`."""
        ...


# -- applying an edit -------------------------------------------------------------------------------
def rewrite_for(sql: str, old: SqlSchema, edit: DbEdit) -> str:
    """``sql`` for the edited database; raises :class:`SqlRewriteError` when it cannot be
    rewritten, or when the result would not bind against the new schema."""
    if edit.rewrite is not None:
        new_sql = edit.rewrite(sql)
    else:
        new_sql = rewrite_query(
            sql,
            old,
            edit.schema,
            edit.column_map,
            table_map=edit.table_map,
            expressions=edit.expressions,
        )
    try:
        bind_query(new_sql, edit.schema)
    except SqlRewriteError as exc:
        raise SqlRewriteError(
            exc.problem, f"the rewritten query does not bind: {exc.message}"
        ) from None
    return new_sql


def carried_origin(old: SqlSchema, new: SqlSchema, edit: DbEdit) -> dict[Key, Key]:
    """``origin`` for columns that a rename (``table_map``/``column_map``) carries over."""
    out: dict[Key, Key] = {}
    for table in old.tables:
        new_table = edit.table_map.get(table.name, table.name)
        found = new.find(new_table)
        if found is None:
            continue
        for column in table.columns:
            name = edit.column_map.get(ColumnRef(table.name, column.name), column.name)
            if found.find(name) is not None:
                out[(sqlite_fold(found.name), sqlite_fold(name))] = (
                    sqlite_fold(table.name),
                    sqlite_fold(column.name),
                )
    return out


def entry_of(
    old_entry: Mapping[str, Any], db_id: str, edit: DbEdit
) -> tuple[dict[str, Any], dict[int, int], dict[int, int]]:
    """The Spider ``tables.json`` entry of an edited database, with the old → new column and
    table indices of what was carried (for remapping Spider's parsed ``sql``)."""
    old = parse_spider_entry(old_entry)
    old_tables = [sqlite_fold(t) for t in old.table_originals]
    old_columns = {
        (old_tables[c.table], sqlite_fold(c.original)): i
        for i, c in enumerate(old.columns)
        if c.table >= 0
    }
    inverse_tables = {sqlite_fold(n): sqlite_fold(o) for o, n in edit.table_map.items()}
    table_names: list[str] = []
    table_originals: list[str] = []
    names: list[list[Any]] = [[-1, "*"]]
    originals: list[list[Any]] = [[-1, "*"]]
    types: list[str] = ["text"]
    index_map = {0: 0}
    table_index: dict[int, int] = {}
    position: dict[Key, int] = {}
    for t, table in enumerate(edit.schema.tables):
        tkey = sqlite_fold(table.name)
        old_t = inverse_tables.get(tkey, tkey)
        label = edit.labels.get((tkey, ""))
        if label is None and old_t in old_tables:
            label = old.table_names[old_tables.index(old_t)]
            table_index[old_tables.index(old_t)] = t
        table_names.append(label or table.name)
        table_originals.append(table.name)
        for column in table.columns:
            key = (tkey, sqlite_fold(column.name))
            src = edit.origin.get(key)
            old_i = old_columns.get(src) if src is not None else None
            natural = edit.labels.get(key)
            if natural is None and old_i is not None:
                natural = old.columns[old_i].name
            position[key] = len(names)
            if old_i is not None:
                index_map.setdefault(old_i, len(names))  # a copied key keeps its first place
            names.append([t, natural or column.name])
            originals.append([t, column.name])
            types.append(
                old.columns[old_i].type
                if old_i is not None and key not in edit.labels
                else column.type.value
            )
    primary_keys: list[Any] = []
    foreign_keys: list[list[int]] = []
    for table in edit.schema.tables:
        tkey = sqlite_fold(table.name)
        pk = [position[(tkey, sqlite_fold(c))] for c in table.primary_key]
        if len(pk) == 1:
            primary_keys.append(pk[0])
        elif pk:
            primary_keys.append(pk)
        for fk in table.foreign_keys:
            a = position.get((tkey, sqlite_fold(fk.column)))
            b = position.get((sqlite_fold(fk.ref_table), sqlite_fold(fk.ref_column)))
            if a is not None and b is not None:
                foreign_keys.append([a, b])
    entry = dict(old_entry)  # the entry's own keys keep their places
    entry.update(db_id=db_id, table_names=table_names, table_names_original=table_originals)
    entry.update(column_names=names, column_names_original=originals, column_types=types)
    entry.update(primary_keys=primary_keys, foreign_keys=foreign_keys)
    return entry, index_map, table_index
