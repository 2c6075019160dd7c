"""A Spider ``tables.json`` entry as the evaluation reads it: names, keys, column lookup.

Column indices are Spider's global ones (``0`` is ``*``); identifiers compare the way
SQLite compares them (ASCII case folded, :func:`~cta.sql.database.sqlite_fold`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cta.formats.tables import SpiderColumn, parse_spider_entry
from cta.sql.database import sqlite_fold

__all__ = ["SchemaColumn", "SpiderSchema"]

SchemaColumn = SpiderColumn
"""One column: its table (``-1`` for ``*``), natural name, SQL identifier and type."""


@dataclass(frozen=True)
class SpiderSchema:
    """The parts of a ``tables.json`` entry evaluation needs (read by
    :func:`~cta.formats.tables.parse_spider_entry`), with lookups by SQL identifier."""

    db_id: str
    table_names: tuple[str, ...]
    table_originals: tuple[str, ...]
    columns: tuple[SchemaColumn, ...]
    primary_keys: frozenset[int] = frozenset()
    foreign_keys: tuple[tuple[int, int], ...] = ()
    _tables: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _columns: dict[tuple[int, str], int] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> SpiderSchema:
        """Read one ``tables.json`` entry (raises ``ValueError`` — an
        :class:`~cta.table.InvalidTableError` — when malformed)."""
        parsed = parse_spider_entry(entry)
        schema = cls(
            db_id=parsed.db_id,
            table_names=parsed.table_names,
            table_originals=parsed.table_originals,
            columns=parsed.columns,
            primary_keys=frozenset(parsed.primary_keys),
            foreign_keys=parsed.foreign_keys,
        )
        for t, name in enumerate(schema.table_originals):
            schema._tables.setdefault(sqlite_fold(name), t)
        for i, col in enumerate(schema.columns):
            if col.table >= 0:
                schema._columns.setdefault((col.table, sqlite_fold(col.original)), i)
        return schema

    def table_index(self, name: str) -> int | None:
        """The table an SQL identifier names, or None."""
        return self._tables.get(sqlite_fold(name))

    def column_index(self, table: int, name: str) -> int | None:
        """The column ``name`` of table ``table`` (SQL identifier), or None."""
        return self._columns.get((table, sqlite_fold(name)))

    def table_columns(self, table: int) -> list[int]:
        """Global indices of the columns of ``table``, in schema order."""
        return [i for i, c in enumerate(self.columns) if c.table == table]

    def column_key(self, index: int) -> str:
        """Spider's evaluation key: ``__table.column__`` (lower case), ``__all__`` for ``*``."""
        col = self.columns[index]
        if col.table < 0:
            return "__all__"
        table = self.table_originals[col.table].lower()
        return f"__{table}.{col.original.lower()}__"

    def table_key(self, table: int) -> str:
        """Spider's evaluation key of a table: ``__table__`` (lower case)."""
        return f"__{self.table_originals[table].lower()}__"

    def foreign_key_map(self) -> dict[str, str]:
        """Spider's ``kmap``: every column of a foreign-key cluster → the cluster's first.

        Clusters grow the way the Spider evaluation script grows them: a pair joins the first
        cluster holding either of its columns.
        """
        clusters: list[set[int]] = []
        for a, b in self.foreign_keys:
            for cluster in clusters:
                if a in cluster or b in cluster:
                    break
            else:
                cluster = set()
                clusters.append(cluster)
            cluster.update((a, b))
        kmap: dict[str, str] = {}
        for cluster in clusters:
            first = min(cluster)
            for i in cluster:
                kmap[self.column_key(i)] = self.column_key(first)
        return kmap

    def is_key(self, index: int) -> bool:
        """Is the column a primary key or part of a foreign key?"""
        return index in self.primary_keys or any(index in fk for fk in self.foreign_keys)
