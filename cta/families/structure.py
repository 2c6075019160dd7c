"""MT-Teql's schema transformations that keep every name: shuffle, opaque keys, remove an
unused column, normalise an unused column into a linked table (MT-Teql §3–4).

Each keeps the data (rows are migrated as they are) and each keeps the answer of every gold
query: ``shuffle`` only reorders (a ``SELECT *`` is spelled out in the original order),
``opaque-keys`` only drops key declarations, and the other two touch only a column that no
query mentions and no ``SELECT *`` covers.
"""

from __future__ import annotations

import dataclasses

from cta.families.base import FamilyContext, NotApplicable
from cta.families.model import DbEdit, Key
from cta.seeding import seeded_rng
from cta.sql.database import (
    ColumnRef,
    SqlColumn,
    SqlSchema,
    SqlTable,
    quote_identifier,
    sqlite_fold,
)
from cta.table import ForeignKey

__all__ = ["Normalise", "OpaqueKeys", "RemoveColumn", "Shuffle"]


def _identity_origin(schema: SqlSchema) -> dict[Key, Key]:
    return {
        (sqlite_fold(t.name), sqlite_fold(c.name)): (sqlite_fold(t.name), sqlite_fold(c.name))
        for t in schema.tables
        for c in t.columns
    }


class Shuffle:
    """Column order within every table and the table order, permuted (seeded)."""

    kind = "shuffle"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        movable = len(ctx.schema.tables) > 1 or any(len(t.columns) > 1 for t in ctx.schema.tables)
        if not movable:
            raise NotApplicable("a single table with a single column: nothing to shuffle")
        rng = seeded_rng(seed, ctx.db_id, self.kind)
        for _ in range(100):  # a small schema may draw its own order: draw again
            tables = []
            for table in ctx.schema.tables:
                columns = list(table.columns)
                rng.shuffle(columns)
                tables.append(dataclasses.replace(table, columns=tuple(columns)))
            rng.shuffle(tables)
            if [t.name for t in tables] != [t.name for t in ctx.schema.tables] or any(
                new.columns != ctx.schema.table(new.name).columns for new in tables
            ):
                break
        schema = SqlSchema(tuple(tables))
        order = ", ".join(t.name for t in tables)
        return DbEdit(
            schema=schema,
            operation=f"tables reordered ({order}) and the columns of each table shuffled",
            origin=_identity_origin(schema),
        )


class OpaqueKeys:
    """Every primary- and foreign-key declaration removed; names, data and SQL unchanged."""

    kind = "opaque-keys"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        pks = sum(1 for t in ctx.schema.tables if t.primary_key)
        fks = sum(len(t.foreign_keys) for t in ctx.schema.tables)
        if not pks and not fks:
            raise NotApplicable("the database declares no primary or foreign key")
        schema = SqlSchema(
            tuple(
                dataclasses.replace(t, primary_key=(), foreign_keys=()) for t in ctx.schema.tables
            )
        )
        return DbEdit(
            schema=schema,
            operation=f"{pks} primary and {fks} foreign key declarations removed",
            origin=_identity_origin(schema),
        )


def _free_columns(
    ctx: FamilyContext, *, keep_keys: bool = True
) -> list[tuple[SqlTable, SqlColumn]]:
    """Columns no gold query uses, that are no key and not a table's only other column."""
    out = []
    for table in ctx.schema.tables:
        keys = {sqlite_fold(c) for c in table.primary_key}
        keys |= {sqlite_fold(fk.column) for fk in table.foreign_keys}
        for other in ctx.schema.tables:
            keys |= {
                sqlite_fold(fk.ref_column)
                for fk in other.foreign_keys
                if sqlite_fold(fk.ref_table) == sqlite_fold(table.name)
            }
        if len(table.columns) < 2:
            continue
        for column in table.columns:
            if keep_keys and sqlite_fold(column.name) in keys:
                continue
            if ctx.usage.free(table.name, column.name):
                out.append((table, column))
    return out


class RemoveColumn:
    """One column that no gold query of the database uses (nor a ``SELECT *``), dropped."""

    kind = "remove-column"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        if ctx.usage.unbound:
            raise NotApplicable(f"{ctx.usage.unbound} gold queries could not be bound")
        free = _free_columns(ctx)
        if not free:
            raise NotApplicable("every non-key column is used by some gold query")
        table, column = seeded_rng(seed, ctx.db_id, self.kind).choice(free)
        tables = []
        for t in ctx.schema.tables:
            if t is table:
                t = dataclasses.replace(t, columns=tuple(c for c in t.columns if c is not column))
            tables.append(t)
        schema = SqlSchema(tuple(tables))
        return DbEdit(
            schema=schema,
            operation=f"column {table.name}.{column.name} removed (no gold query uses it)",
            origin=_identity_origin(schema),
            mapping={table.name: {column.name: ""}},
        )


class Normalise:
    """One unused column moved into a new table ``<table>_<column>`` keyed by the table's
    primary key, with a foreign key back to it (MT-Teql's normalisation)."""

    kind = "normalise"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        if ctx.usage.unbound:
            raise NotApplicable(f"{ctx.usage.unbound} gold queries could not be bound")
        names = {sqlite_fold(t.name) for t in ctx.schema.tables}
        free = [
            (t, c)
            for t, c in _free_columns(ctx)
            if len(t.primary_key) == 1 and sqlite_fold(f"{t.name}_{c.name}") not in names
        ]
        if not free:
            raise NotApplicable("no unused column of a table with a single-column primary key")
        table, column = seeded_rng(seed, ctx.db_id, self.kind).choice(free)
        pk = table.columns[table.index(table.primary_key[0])]
        new_name = f"{table.name}_{column.name}"
        moved = SqlTable(
            name=new_name,
            columns=(pk, column),
            primary_key=(pk.name,),
            foreign_keys=(ForeignKey(column=pk.name, ref_table=table.name, ref_column=pk.name),),
        )
        tables = []
        for t in ctx.schema.tables:
            if t is table:
                t = dataclasses.replace(t, columns=tuple(c for c in t.columns if c is not column))
            tables.append(t)
        tables.append(moved)
        schema = SqlSchema(tuple(tables))
        origin = _identity_origin(schema)
        origin[(sqlite_fold(new_name), sqlite_fold(pk.name))] = (
            sqlite_fold(table.name),
            sqlite_fold(pk.name),
        )
        origin[(sqlite_fold(new_name), sqlite_fold(column.name))] = (
            sqlite_fold(table.name),
            sqlite_fold(column.name),
        )
        fill = {
            new_name: (
                f"SELECT {quote_identifier(pk.name)}, {quote_identifier(column.name)} "
                f"FROM {quote_identifier(table.name)} ORDER BY rowid"
            )
        }
        natural_table = ctx.natural(table.name)
        natural_column = ctx.natural(table.name, column.name)
        return DbEdit(
            schema=schema,
            operation=(
                f"column {table.name}.{column.name} moved to new table {new_name}"
                f"({pk.name}, {column.name}) linked by {pk.name}"
            ),
            origin=origin,
            labels={(sqlite_fold(new_name), ""): f"{natural_table} {natural_column}"},
            fill=fill,
            mapping={table.name: {column.name: f"{new_name}.{column.name}"}},
            column_map={ColumnRef(table.name, column.name): column.name},
        )
