"""The one perturbation model: a database, an edit of it, the edited database (a variant),
and what a run over a dataset produced.

Every kind is a family in this model (:mod:`cta.families`), RPL and ADD too: each plans a
:class:`DbEdit`, per question (RPL and ADD, over the pipeline's proposals: each question's own
mentioned columns, ADVETA's protocol; identical edits share a variant) or per database (every
other family), and one runner (:func:`cta.families.run.run_families`) turns the edits into
variants and records. An edited database is a :class:`Variant`, a run a
:class:`ProtocolResult`, and a variant is written by :func:`materialise_variant`
(:func:`materialise_edit` for each database of a test suite).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cta.apply.sample import ValueMode
from cta.formats.spider import suite_member_target, suite_members
from cta.sql.database import (
    ColumnRef,
    ColumnStatistics,
    SchemaPerturbation,
    SqlSchema,
    SqlTable,
    create_database,
    materialise_perturbed,
    quote_identifier,
    sqlite_fold,
)
from cta.sql.examples import PerturbedExample
from cta.sql.rewrite import BoundQuery, SqlRewriteError
from cta.table import Table

__all__ = [
    "Database",
    "DbEdit",
    "Key",
    "ProtocolResult",
    "Variant",
    "carried_columns",
    "materialise_edit",
    "materialise_variant",
]

Key = tuple[str, str]
"""(table, column) as SQLite folds them; column ``""`` for the table itself."""


@dataclass
class Database:
    """A database of the dataset: schema, natural tables aligned with it, optional file."""

    db_id: str
    schema: SqlSchema
    tables: list[Table]
    path: Path | None = None
    rows: dict[str, list[tuple[Any, ...]]] | None = None  # cells by table, when no file
    entry: Mapping[str, Any] | None = None  # the Spider ``tables.json`` entry, when Spider
    statistics: Mapping[ColumnRef, ColumnStatistics] | None = None  # cells, for synthesis

    def __post_init__(self) -> None:
        if len(self.tables) != len(self.schema.tables):
            raise ValueError(
                f"{self.db_id}: {len(self.tables)} tables for a schema of {len(self.schema.tables)}"
            )


@dataclass
class DbEdit:
    """A perturbed database: schema, names, data migration and how queries follow."""

    schema: SqlSchema  # new schema, tables and columns in their new order
    operation: str  # one line for people: what changed
    origin: dict[Key, Key] = field(default_factory=dict)  # new (table, col) → old, carried ones
    labels: dict[Key, str] = field(default_factory=dict)  # natural names of new/renamed things
    fill: dict[str, str] = field(default_factory=dict)  # new table → SELECT over the original
    mapping: dict[str, dict[str, str]] = field(default_factory=dict)  # per table: old → new
    column_map: dict[ColumnRef, str] = field(default_factory=dict)
    table_map: dict[str, str] = field(default_factory=dict)
    expressions: dict[ColumnRef, str] = field(default_factory=dict)
    rewrite: Callable[[str], str] | None = None  # the family's own rewrite, when it has one
    question: Callable[[str], str | None] | None = None  # question rewrite (question-synonym)
    keeps_parsed_sql: bool = True  # Spider's parsed ``sql`` remaps by indices alone
    perturbation: SchemaPerturbation | None = None  # an added column: values generated
    # Planned per question (RPL, ADD): per table, the SQL identifiers' mapping (``mapping``
    # holds the natural names') and the mentioned columns left as they were, with why.
    sql_mapping: dict[str, dict[str, str]] = field(default_factory=dict)
    unperturbed: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def by_columns(self) -> SchemaPerturbation | None:
        """The column perturbation that is the whole edit — every edited table's new columns
        over the original's, natural names in their labels (RPL, ADD) — when the edit says
        nothing else (no ``origin``); None for an edit that ``origin`` and ``labels`` describe.
        A format writes the first from the perturbation, the second from the edit."""
        return self.perturbation if not self.origin else None

    def identity(self) -> tuple[Any, ...]:
        """What makes two per-question edits one database: the same column perturbation (an
        edit without one is a database of its own)."""
        if self.perturbation is None:
            return ("edit", id(self))
        return tuple(sorted(self.perturbation.tables.items()))


@dataclass
class Variant:
    """An edited database: its id, the database it comes from, kind, seed and the edit."""

    db_id: str
    source: str
    kind: str
    seed: int
    edit: DbEdit


@dataclass
class ProtocolResult:
    """Everything a run produced, in example order: one record per example × kind × seed,
    the edited databases by id, and each example's gold SQL bound to its schema (or why not)."""

    examples: list[PerturbedExample]
    variants: dict[str, Variant]
    bound: dict[str, BoundQuery | SqlRewriteError]
    seconds: float = 0.0


def materialise_edit(
    source: Path, target: Path, edit: DbEdit, old: SqlSchema, *, seed: int, values: ValueMode
) -> None:
    """Write the edited database: each new table filled by its ``SELECT`` on ``source``.

    A table without a fill is carried from the original table of the same (or, through
    ``table_map``, the old) name, columns matched through ``origin``. An edit that adds a
    column (``perturbation``) is written the way ADD's databases are (values generated).
    """
    if edit.perturbation is not None:
        materialise_perturbed(source, target, old, edit.perturbation, seed=seed, values=values)
        return
    inverse = {sqlite_fold(new): old_name for old_name, new in edit.table_map.items()}
    conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    rows: dict[str, list[tuple[Any, ...]]] = {}
    try:
        for table in edit.schema.tables:
            if table.name.lower().startswith("sqlite_"):
                continue  # SQLite's own tables (sqlite_sequence): it writes them itself
            sql = edit.fill.get(table.name)
            if sql is None:
                old_name = inverse.get(sqlite_fold(table.name), table.name)
                old_table = old.table(old_name)
                columns = []
                for c in table.columns:
                    src = edit.origin.get((sqlite_fold(table.name), sqlite_fold(c.name)))
                    if src is None or src[0] != sqlite_fold(old_table.name):
                        raise ValueError(f"{table.name}.{c.name}: no fill and no origin")
                    columns.append(
                        quote_identifier(old_table.columns[old_table.index(src[1])].name)
                    )
                sql = (
                    f"SELECT {', '.join(columns)} FROM {quote_identifier(old_table.name)}"
                    " ORDER BY rowid"
                )
            rows[table.name] = conn.execute(sql).fetchall()
    finally:
        conn.close()
    create_database(target, edit.schema, rows)


def carried_columns(edit: DbEdit, old: SqlTable, new: SqlTable) -> dict[int, int]:
    """Index in ``new`` (a table of the edit's schema) → index in ``old`` of every column
    the edit carries over from ``old`` (renamed or moved); an added column is absent."""
    out: dict[int, int] = {}
    for j, column in enumerate(new.columns):
        origin = edit.origin.get((sqlite_fold(new.name), sqlite_fold(column.name)))
        if origin is not None and origin[0] == sqlite_fold(old.name):
            found = old.find(origin[1])
            if found is not None:
                out[j] = old.index(found.name)
    return out


def materialise_variant(
    variant: Variant, source: Path, target: Path, old: SqlSchema, *, values: ValueMode
) -> None:
    """Write ``variant`` at ``target`` from its source database at ``source`` — and, when the
    source is a test suite (several ``.sqlite`` files beside it), every member the same way."""
    members = [(m, suite_member_target(m, variant.source, target)) for m in suite_members(source)]
    for src, dst in [(source, target), *members]:
        materialise_edit(src, dst, variant.edit, old, seed=variant.seed, values=values)
