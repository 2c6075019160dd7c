"""The Spider schema model: one ``tables.json`` entry read once (:class:`SpiderSchema`,
:func:`parse_spider_entry`), for the drivers, the families and the evaluation alike, and the
tables it holds (:func:`load_spider_database`, :func:`load_spider_tables`).

Spider's ``column_types`` names (``text``, ``number``, ``time``…) map to :class:`ColumnType`;
BIRD's ``dev_tables.json`` has Spider's shape with SQLite's type names there
(:func:`spider_column_type`, :func:`is_sqlite_type_name`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from cta.formats.reading import build_table, read_json, require_key
from cta.sql.database import sqlite_fold
from cta.table import Column, ColumnType, ForeignKey, InvalidTableError, Table

__all__ = [
    "SpiderColumn",
    "SpiderSchema",
    "is_sqlite_type_name",
    "load_spider_database",
    "load_spider_tables",
    "parse_spider_entry",
    "spider_column_type",
    "spider_tables",
]

_SPIDER_TYPES = {t.value: t for t in ColumnType}
# BIRD's ``dev_tables.json`` has Spider's shape with SQLite's type names in ``column_types``.
_SQLITE_TYPE_NAMES = {
    "integer": ColumnType.NUMBER,
    "real": ColumnType.NUMBER,
    "numeric": ColumnType.NUMBER,
    "float": ColumnType.NUMBER,
    "double": ColumnType.NUMBER,
    "date": ColumnType.TIME,
    "datetime": ColumnType.TIME,
    "timestamp": ColumnType.TIME,
}


def spider_column_type(name: Any) -> ColumnType:
    """The column type a Spider ``column_types`` entry names — Spider's names, or SQLite's
    as BIRD writes them (``integer``, ``real``, ``date``…); unknown names: ``others``."""
    text = str(name)
    return _SPIDER_TYPES.get(text) or _SQLITE_TYPE_NAMES.get(text.lower(), ColumnType.OTHERS)


def is_sqlite_type_name(name: Any) -> bool:
    """Whether a ``column_types`` entry is an SQLite type name (BIRD) rather than one of
    Spider's own (``number``, ``time``…): such a name is the column's declared type."""
    return str(name).lower() in _SQLITE_TYPE_NAMES


@dataclass(frozen=True)
class SpiderColumn:
    """One column of a Spider entry: its table (``-1`` for ``*``), natural name, SQL
    identifier and Spider type name, at its global index."""

    table: int
    name: str
    original: str
    type: str


@dataclass(frozen=True)
class SpiderSchema:
    """One ``tables.json`` entry, read once (:func:`parse_spider_entry`): names, columns by
    global index (``0`` is ``*``), keys, and lookups by SQL identifier (compared the way SQLite
    compares them) — the one Spider schema model, for the drivers, the families and the
    evaluation alike. :func:`cta.formats.spider.sql_schema` turns it into the format-neutral
    relational :class:`~cta.sql.database.SqlSchema` that SQL is bound against.

    ``primary_keys`` and ``foreign_keys`` hold global column indices in entry order (a
    composite primary key contributes each of its columns).
    """

    db_id: str
    table_names: tuple[str, ...]
    table_originals: tuple[str, ...]
    columns: tuple[SpiderColumn, ...]
    primary_keys: tuple[int, ...]
    foreign_keys: tuple[tuple[int, int], ...]

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> SpiderSchema:
        """Read one ``tables.json`` entry (:func:`parse_spider_entry`)."""
        return parse_spider_entry(entry)

    @cached_property
    def _tables(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for t, name in enumerate(self.table_originals):
            found.setdefault(sqlite_fold(name), t)
        return found

    @cached_property
    def _columns(self) -> dict[tuple[int, str], int]:
        found: dict[tuple[int, str], int] = {}
        for i, col in enumerate(self.columns):
            if col.table >= 0:
                found.setdefault((col.table, sqlite_fold(col.original)), i)
        return found

    def table_columns(self, table: int) -> list[int]:
        """Global indices of the columns of ``table``, in schema order."""
        return [i for i, c in enumerate(self.columns) if c.table == table]

    def table_index(self, name: str) -> int | None:
        """The table an SQL identifier names, or None."""
        return self._tables.get(sqlite_fold(name))

    def column_index(self, table: int, name: str) -> int | None:
        """The column ``name`` of table ``table`` (SQL identifier), or None."""
        return self._columns.get((table, sqlite_fold(name)))

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

    def keys(self) -> tuple[dict[int, list[str]], dict[int, list[ForeignKey]]]:
        """By table index: the SQL identifiers of its primary key, and its foreign keys
        (``ref_table`` the referenced table's identifier)."""
        columns = self.columns
        pks: dict[int, list[str]] = {}
        for i in self.primary_keys:
            pks.setdefault(columns[i].table, []).append(columns[i].original)
        fks: dict[int, list[ForeignKey]] = {}
        for src, dst in self.foreign_keys:
            ref_table = self.table_originals[columns[dst].table]
            fk = ForeignKey(
                column=columns[src].original, ref_table=ref_table, ref_column=columns[dst].original
            )
            fks.setdefault(columns[src].table, []).append(fk)
        return pks, fks


def parse_spider_entry(entry: Mapping[str, Any]) -> SpiderSchema:
    """Read one Spider ``tables.json`` entry: the one parser every Spider reader goes through.

    Raises :class:`InvalidTableError` (``malformed_table``) for a missing key, column or
    table lists of different lengths and a key naming an absent column; a key that is not
    an integer raises ``ValueError``/``IndexError`` as Python does.
    """
    db_id = require_key(entry, "db_id", str, "spider database")
    where = f"spider database {db_id!r}"
    table_names = require_key(entry, "table_names", list, where)
    table_originals = require_key(entry, "table_names_original", list, where)
    col_names = require_key(entry, "column_names", list, where)
    col_originals = require_key(entry, "column_names_original", list, where)
    col_types = require_key(entry, "column_types", list, where)
    if not (len(col_names) == len(col_originals) == len(col_types)):
        raise InvalidTableError("malformed_table", f"{where}: column lists differ in length")
    if len(table_names) != len(table_originals):
        raise InvalidTableError("malformed_table", f"{where}: table lists differ in length")

    def owner(i: int) -> str:
        try:
            _, original = col_originals[i]
        except (IndexError, TypeError, ValueError):
            raise InvalidTableError(
                "malformed_table", f"{where}: bad column reference {i}"
            ) from None
        return str(original)

    pks: list[int] = []
    for pk in entry.get("primary_keys", []):
        for i in pk if isinstance(pk, list) else [pk]:
            owner(int(i))
            pks.append(int(i))
    fks: list[tuple[int, int]] = []
    for pair in entry.get("foreign_keys", []):
        src = int(pair[0])
        owner(src)
        dst = int(pair[1])
        owner(dst)
        fks.append((src, dst))
    columns = []
    for i, (pair, ctype) in enumerate(zip(col_names, col_types, strict=True)):
        t = int(pair[0])
        columns.append(SpiderColumn(t, str(pair[1]), owner(i) if t >= 0 else "*", str(ctype)))
    return SpiderSchema(
        db_id=db_id,
        table_names=tuple(str(t) for t in table_names),
        table_originals=tuple(str(t) for t in table_originals),
        columns=tuple(columns),
        primary_keys=tuple(pks),
        foreign_keys=tuple(fks),
    )


def load_spider_database(entry: Mapping[str, Any]) -> list[Table]:
    """One table per table of a Spider database (one entry of ``tables.json``).

    ``Column.name`` is the natural name (``column_names``) and ``original_name`` the schema
    identifier (``column_names_original``). Keys use schema identifiers: ``primary_key``
    and ``ForeignKey.column`` are original column names, ``ref_table`` the original table
    name (``Table.column`` resolves either spelling). Table ids are ``db_id.table``.
    """
    return spider_tables(parse_spider_entry(entry))


def spider_tables(parsed: SpiderSchema) -> list[Table]:
    """The tables of a parsed Spider entry (see :func:`load_spider_database`)."""
    where = f"spider database {parsed.db_id!r}"
    pks, fks = parsed.keys()
    tables = []
    for t, (natural, original) in enumerate(
        zip(parsed.table_names, parsed.table_originals, strict=True)
    ):
        tables.append(
            build_table(
                f"{where} table {original!r}",
                id=f"{parsed.db_id}.{original}",
                name=natural,
                columns=[
                    Column(name=c.name, type=spider_column_type(c.type), original_name=c.original)
                    for c in parsed.columns
                    if c.table == t  # "*" has table -1
                ],
                primary_key=pks.get(t, []),
                foreign_keys=fks.get(t, []),
                source=f"spider:{parsed.db_id}",
            )
        )
    return tables


def load_spider_tables(path_or_obj: str | Path | Sequence[Mapping[str, Any]]) -> list[Table]:
    """Every table of every database of a Spider ``tables.json`` (path or parsed list)."""
    data = read_json(path_or_obj) if isinstance(path_or_obj, str | Path) else list(path_or_obj)
    if not isinstance(data, list):
        raise InvalidTableError("malformed_table", "Spider tables.json must be a JSON list")
    return [table for entry in data for table in load_spider_database(entry)]
