"""A Spider ``tables.json`` entry as the evaluation reads it: names, keys, column lookup.

Column indices are Spider's global ones (``0`` is ``*``); identifiers compare the way
SQLite compares them (ASCII case folded, :func:`~cta.apply.database.sqlite_fold`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cta.apply.database import sqlite_fold

__all__ = ["SchemaColumn", "SpiderSchema"]


@dataclass(frozen=True)
class SchemaColumn:
    """One column: its table (``-1`` for ``*``), natural name, SQL identifier and type."""

    table: int
    name: str
    original: str
    type: str


@dataclass(frozen=True)
class SpiderSchema:
    """The parts of a ``tables.json`` entry evaluation needs."""

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
        """Read one ``tables.json`` entry (raises ``KeyError``/``ValueError`` when malformed)."""
        names = entry["column_names"]
        originals = entry["column_names_original"]
        types = entry["column_types"]
        if not len(names) == len(originals) == len(types):
            raise ValueError(f"{entry.get('db_id')}: column lists differ in length")
        columns = tuple(
            SchemaColumn(int(o[0]), str(n[1]), str(o[1]), str(t))
            for n, o, t in zip(names, originals, types, strict=True)
        )
        pks: set[int] = set()
        for pk in entry.get("primary_keys", []):
            pks.update(int(i) for i in (pk if isinstance(pk, list) else [pk]))
        schema = cls(
            db_id=str(entry["db_id"]),
            table_names=tuple(str(t) for t in entry["table_names"]),
            table_originals=tuple(str(t) for t in entry["table_names_original"]),
            columns=columns,
            primary_keys=frozenset(pks),
            foreign_keys=tuple((int(a), int(b)) for a, b in entry.get("foreign_keys", [])),
        )
        for t, name in enumerate(schema.table_originals):
            schema._tables.setdefault(sqlite_fold(name), t)
        for i, col in enumerate(columns):
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
