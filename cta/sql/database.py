"""Relational schemas and SQLite databases: original, synthesised and perturbed.

- :class:`SqlSchema` — tables, SQL column identifiers, declared types, primary and foreign
  keys: what the SQL rewriter resolves names against and what a database is built from.
  Identifiers compare as SQLite compares them (ASCII case-insensitively).
- :class:`SchemaPerturbation` — how a perturbed schema derives from an original one: per
  table, its new column list, each column carried over from an old column (renamed or
  not) or added. :func:`perturb_schema` applies it (keys follow renamed columns, also the
  foreign keys of *other* tables that reference them).
- :func:`synthesise_rows` — rows for a schema that ships without data (Spider's
  ``tables.json``), seeded. Columns linked by a foreign key — or compared with ``=`` in a
  query, when the dataset's queries are given as ``links`` — share one value domain, so
  joins match; single-column primary keys take distinct values of their domain, so keys
  are unique and every foreign-key value exists in the referenced key (cycles and
  self-references need no special order). Literals harvested from the queries (``pools``)
  seed the domains and are drawn often, so ``WHERE name = 'Paris'`` sometimes matches
  rather than always returning nothing; numbers are generated around the literals.
  A schema that says what its cells look like (:class:`ColumnStatistics`: BIRD's sample
  values, ranges, null and unique fractions) has its domains drawn from that: the sample
  values first (all of a column's values when it has no more distinct ones than samples),
  then numbers and dates within the column's range, as many distinct values as its unique
  fraction says; cells are NULL as often as the column's null fraction says (never in a
  key).
- :func:`create_database` / :func:`materialise_perturbed` — SQLite files: tables with their
  declared types, ``PRIMARY KEY`` and ``FOREIGN KEY`` clauses; a perturbed database copies
  every row of the source, in rowid order, under the new schema and fills added columns
  with generated values (seeded, like the template column when types match) or NULLs.
  Views, indexes and triggers of a source database are not copied.

One file, because the schema model, its perturbation, row synthesis and materialisation
share the identifier rules (SQLite's case-insensitive names) and are read together.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from cta.seeding import seeded_rng
from cta.sql.identifiers import SQLITE_KEYWORDS, quote_identifier, sqlite_fold
from cta.sql.values import added_column_values, generate_value
from cta.table import ColumnType, ForeignKey, ProblemError

__all__ = [
    "SQLITE_KEYWORDS",
    "ColumnRef",
    "ColumnStatistics",
    "NewColumn",
    "SchemaError",
    "SchemaPerturbation",
    "SqlColumn",
    "SqlSchema",
    "SqlTable",
    "create_database",
    "declared_type",
    "materialise_perturbed",
    "perturb_schema",
    "perturbed_rows",
    "quote_identifier",
    "read_rows",
    "schema_from_sqlite",
    "sqlite_fold",
    "synthesis_note",
    "synthesise_rows",
]

_DECLARED = {
    ColumnType.NUMBER: "NUMERIC",
    ColumnType.TEXT: "TEXT",
    ColumnType.TIME: "TEXT",
    ColumnType.BOOLEAN: "BOOLEAN",
    ColumnType.OTHERS: "TEXT",
}

# Synthesised tables get between these many rows (seeded per table).
MIN_ROWS = 10
MAX_ROWS = 30


def synthesis_note(seed: int) -> str:
    """What a figure computed on databases made by :func:`synthesise_rows` must say beside it
    (stderr, manifests and every evaluation report built on them)."""
    return (
        f"synthesised from the schema: {MIN_ROWS}–{MAX_ROWS} rows a table, seed {seed} — EX is "
        "not comparable with scores on the dataset's own databases"
    )


# Share of a column's cells drawn from the literals its queries compare it with.
POOL_SHARE = 0.35


class SchemaError(ProblemError):
    """A schema or perturbation that cannot be built; ``problem`` names what is wrong."""


def declared_type(column_type: ColumnType) -> str:
    """The SQLite declared type used for a column of ``column_type`` we create."""
    return _DECLARED[column_type]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)


def _named(items: Iterable[_N], name: str) -> _N | None:
    """The first of ``items`` called ``name`` as SQLite compares identifiers, or ``None``."""
    key = sqlite_fold(name)
    return next((item for item in items if sqlite_fold(item.name) == key), None)


@dataclass(frozen=True, slots=True)
class ColumnRef:
    """A column of a base table, by SQL identifiers as the schema spells them."""

    table: str
    column: str


@dataclass(frozen=True)
class ColumnStatistics:
    """What a schema says of a column's cells, for synthesis: some of its values, its range
    (numbers, or ISO dates as strings), the share of NULL cells and of distinct values, and
    the number of distinct values (``None`` where unknown)."""

    sample_values: tuple[Any, ...] = ()
    min_value: Any = None
    max_value: Any = None
    null_fraction: float = 0.0
    unique_fraction: float | None = None
    unique_count: int | None = None

    @property
    def complete(self) -> bool:
        """Do the samples hold every distinct value of the column?"""
        return self.unique_count is not None and 0 < self.unique_count <= len(self.sample_values)


@dataclass(frozen=True)
class SqlColumn:
    """A column: its SQL identifier, its type and the SQLite type it is declared with."""

    name: str
    type: ColumnType = ColumnType.TEXT
    declared: str = ""

    @property
    def declaration(self) -> str:
        return self.declared or declared_type(self.type)


@dataclass(frozen=True)
class SqlTable:
    """A table: identifier, columns in order, primary key and foreign keys (identifiers)."""

    name: str
    columns: tuple[SqlColumn, ...]
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()

    def find(self, name: str) -> SqlColumn | None:
        """The column called ``name`` as SQLite resolves it, or ``None``."""
        return _named(self.columns, name)

    def index(self, name: str) -> int:
        key = sqlite_fold(name)
        for i, column in enumerate(self.columns):
            if sqlite_fold(column.name) == key:
                return i
        raise SchemaError("unknown_column", f"table {self.name!r} has no column {name!r}")


@dataclass(frozen=True)
class SqlSchema:
    """The tables of one database, and the quote its dataset's SQL writes an identifier that
    needs quoting with (``"``; BIRD's backtick), which a rewritten query follows."""

    tables: tuple[SqlTable, ...]
    quote: str = '"'

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for table in self.tables:
            key = sqlite_fold(table.name)
            if key in seen:
                raise SchemaError("duplicate_table", f"table {table.name!r} appears twice")
            seen.add(key)
            names: set[str] = set()
            for column in table.columns:
                ckey = sqlite_fold(column.name)
                if ckey in names:
                    raise SchemaError(
                        "duplicate_column", f"table {table.name!r} has column {column.name!r} twice"
                    )
                names.add(ckey)

    def find(self, name: str) -> SqlTable | None:
        """The table called ``name`` as SQLite resolves it, or ``None``."""
        return _named(self.tables, name)

    def table(self, name: str) -> SqlTable:
        found = self.find(name)
        if found is None:
            raise SchemaError("unknown_table", f"the schema has no table {name!r}")
        return found


# -- perturbations --------------------------------------------------------------------------
@dataclass(frozen=True)
class NewColumn:
    """A column of a perturbed table: carried over from ``source`` (renamed or not) or added.

    For an added column (``source is None``) ``template`` names the original column whose
    cells its generated values imitate when the types match (the ADD target).
    """

    name: str
    type: ColumnType
    source: str | None = None
    template: str | None = None
    label: str | None = None  # the natural name, for schemas that keep one (Spider)


@dataclass(frozen=True)
class SchemaPerturbation:
    """New column lists of the perturbed tables (tables not listed stay as they are)."""

    tables: Mapping[str, tuple[NewColumn, ...]] = field(default_factory=dict)

    def column_map(self, schema: SqlSchema) -> dict[ColumnRef, str]:
        """Original column → its identifier after the perturbation, for every column."""
        result: dict[ColumnRef, str] = {}
        for table in schema.tables:
            for column in table.columns:
                result[ColumnRef(table.name, column.name)] = column.name
        for table_name, columns in self.tables.items():
            table = schema.table(table_name)
            for new in columns:
                if new.source is not None:
                    old = table.find(new.source)
                    if old is None:
                        raise SchemaError(
                            "unknown_column", f"table {table.name!r} has no column {new.source!r}"
                        )
                    result[ColumnRef(table.name, old.name)] = new.name
        return result


def perturb_schema(schema: SqlSchema, perturbation: SchemaPerturbation) -> SqlSchema:
    """The schema after ``perturbation``; raises :class:`SchemaError` if it is inconsistent.

    Every original column must be carried over exactly once (a perturbation renames and
    adds, never drops); keys — also other tables' foreign keys — follow renamed columns.
    """
    mapping = perturbation.column_map(schema)
    by_fold = {(sqlite_fold(r.table), sqlite_fold(r.column)): new for r, new in mapping.items()}

    def renamed(table: str, column: str) -> str:
        return by_fold.get((sqlite_fold(table), sqlite_fold(column)), column)

    changed = {sqlite_fold(t): cols for t, cols in perturbation.tables.items()}
    tables = []
    for table in schema.tables:
        new_columns = changed.get(sqlite_fold(table.name))
        if new_columns is None:
            columns = table.columns
        else:
            carried = [sqlite_fold(c.source) for c in new_columns if c.source is not None]
            if sorted(carried) != sorted(sqlite_fold(c.name) for c in table.columns):
                raise SchemaError(
                    "dropped_column",
                    f"perturbation of {table.name!r} must carry every original column once",
                )
            columns = tuple(
                SqlColumn(
                    name=c.name,
                    type=c.type,
                    declared=(
                        table.columns[table.index(c.source)].declared
                        if c.source is not None
                        else ""
                    ),
                )
                for c in new_columns
            )
        tables.append(
            SqlTable(
                name=table.name,
                columns=columns,
                primary_key=tuple(renamed(table.name, c) for c in table.primary_key),
                foreign_keys=tuple(
                    ForeignKey(
                        column=renamed(table.name, fk.column),
                        ref_table=fk.ref_table,
                        ref_column=renamed(fk.ref_table, fk.ref_column),
                    )
                    for fk in table.foreign_keys
                ),
            )
        )
    for key in changed:
        if schema.find(key) is None:
            raise SchemaError("unknown_table", f"the schema has no table {key!r}")
    return SqlSchema(tuple(tables), schema.quote)


# -- reading and writing SQLite ------------------------------------------------------------------
def _connect(path: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path))
    # Spider databases hold some non-UTF-8 bytes; never fail on reading them.
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    return conn


def _type_of(declared: str) -> ColumnType:
    upper = declared.upper()
    if any(t in upper for t in ("INT", "REAL", "FLOA", "DOUB", "NUM", "DEC")):
        return ColumnType.NUMBER
    if any(t in upper for t in ("DATE", "TIME", "YEAR")):
        return ColumnType.TIME
    if "BOOL" in upper or upper == "BIT":
        return ColumnType.BOOLEAN
    return ColumnType.TEXT


def schema_from_sqlite(path: str | Path) -> SqlSchema:
    """The schema of an SQLite file (tables, declared types, primary and foreign keys)."""
    conn = _connect(path)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
            )
        ]
        tables = []
        for name in names:
            info = conn.execute(f"PRAGMA table_info({quote_identifier(name)})").fetchall()
            columns = tuple(SqlColumn(r[1], _type_of(r[2] or ""), r[2] or "") for r in info)
            pk = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
            fks = tuple(
                ForeignKey(column=r[3], ref_table=r[2], ref_column=r[4] or "")
                for r in conn.execute(f"PRAGMA foreign_key_list({quote_identifier(name)})")
            )
            tables.append(SqlTable(name, columns, pk, fks))
    finally:
        conn.close()
    return SqlSchema(tuple(tables))


def _create_statement(table: SqlTable) -> str:
    parts = [f"{quote_identifier(c.name)} {c.declaration}" for c in table.columns]
    if table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(quote_identifier(c) for c in table.primary_key)})")
    for fk in table.foreign_keys:
        ref = f" ({quote_identifier(fk.ref_column)})" if fk.ref_column else ""
        parts.append(
            f"FOREIGN KEY ({quote_identifier(fk.column)}) "
            f"REFERENCES {quote_identifier(fk.ref_table)}{ref}"
        )
    return f"CREATE TABLE {quote_identifier(table.name)} (\n  " + ",\n  ".join(parts) + "\n)"


def _insert(conn: sqlite3.Connection, table: SqlTable, rows: Iterable[Sequence[Any]]) -> None:
    marks = ", ".join("?" for _ in table.columns)
    conn.executemany(f"INSERT INTO {quote_identifier(table.name)} VALUES ({marks})", rows)


def _internal(name: str) -> bool:
    """SQLite reserves ``sqlite_*`` names (Spider lists ``sqlite_sequence`` as a table)."""
    return sqlite_fold(name).startswith("sqlite_")


def create_database(
    path: str | Path, schema: SqlSchema, rows: Mapping[str, Sequence[Sequence[Any]]]
) -> None:
    """Write an SQLite file with ``schema`` and ``rows`` (per table name); replaces ``path``.

    Tables named ``sqlite_*`` are internal to SQLite and skipped.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = _connect(path)
    # A fresh file written in one go: no journal or fsync needed until it is complete.
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    try:
        for table in schema.tables:
            if _internal(table.name):
                continue
            conn.execute(_create_statement(table))
            _insert(conn, table, rows.get(table.name, ()))
        conn.commit()
    finally:
        conn.close()


def read_rows(path: str | Path, table: SqlTable) -> list[tuple[Any, ...]]:
    """Every row of ``table`` in ``path``, columns in schema order, in rowid order."""
    cols = ", ".join(quote_identifier(c.name) for c in table.columns)
    conn = _connect(path)
    try:
        return conn.execute(f"SELECT {cols} FROM {quote_identifier(table.name)}").fetchall()
    finally:
        conn.close()


def perturbed_rows(
    table: SqlTable,
    rows: Sequence[Sequence[Any]],
    new_columns: Sequence[NewColumn],
    *,
    seed: int,
    values: Literal["generate", "null"] = "generate",
) -> list[tuple[Any, ...]]:
    """``rows`` of ``table`` under its new column list: carried cells, then added ones.

    Added columns get generated values (:func:`~cta.sql.values.added_column_values`: seeded
    from ``seed`` and the table/column names, within the template column's range when the
    types match, NULL for text) — or NULLs.
    """
    cells: list[list[Any]] = []
    for column in new_columns:
        if column.source is not None:
            i = table.index(column.source)
            cells.append([row[i] for row in rows])
        elif values == "null":
            cells.append([None] * len(rows))
        else:
            template: list[Any] = []
            if column.template is not None:
                t = table.index(column.template)
                if table.columns[t].type == column.type:
                    template = [row[t] for row in rows]
            rng = seeded_rng(seed, table.name, column.name, "values")
            cells.append(added_column_values(column.type, len(rows), rng, template))
    return [tuple(col[r] for col in cells) for r in range(len(rows))]


def materialise_perturbed(
    source: str | Path,
    target: str | Path,
    schema: SqlSchema,
    perturbation: SchemaPerturbation,
    *,
    seed: int,
    values: Literal["generate", "null"] = "generate",
) -> SqlSchema:
    """Write the perturbed database of ``source`` to ``target``; returns the new schema.

    Every row is copied, in rowid order, under the new schema (:func:`perturbed_rows`).
    """
    new_schema = perturb_schema(schema, perturbation)
    changed = {sqlite_fold(t): cols for t, cols in perturbation.tables.items()}
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for table in schema.tables:
        if _internal(table.name):
            continue
        old_rows = read_rows(source, table)
        new_columns = changed.get(sqlite_fold(table.name))
        if new_columns is None:
            rows[table.name] = old_rows
        else:
            rows[table.name] = perturbed_rows(
                table, old_rows, new_columns, seed=seed, values=values
            )
    create_database(target, new_schema, rows)
    return new_schema


# -- synthesis -------------------------------------------------------------------------------------
class _Domains:
    """Union-find over columns: linked columns share one value domain."""

    def __init__(self) -> None:
        self.parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(self, key: tuple[str, str]) -> tuple[str, str]:
        root = self.parent.setdefault(key, key)
        if root != key:
            root = self.parent[key] = self.find(root)
        return root

    def union(self, a: tuple[str, str], b: tuple[str, str]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # smallest key as root: independent of the order links arrive in
            self.parent[max(ra, rb)] = min(ra, rb)


def _key(table: str, column: str) -> tuple[str, str]:
    return (sqlite_fold(table), sqlite_fold(column))


def _near_literals(literals: Sequence[Any], rng: random.Random) -> float | int:
    """A number in the neighbourhood of the numeric literals a column is compared with."""
    low, high = min(literals), max(literals)
    span = max(abs(high - low), abs(high) * 0.5, 2.0)
    value = rng.uniform(low - span, high + span)
    if all(isinstance(v, int) for v in literals):
        return int(round(value))
    return round(value, 2)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _in_range(column_type: ColumnType, stats: ColumnStatistics, rng: random.Random) -> Any:
    """A value within the column's range (numbers, ISO dates), else ``None``."""
    low, high = stats.min_value, stats.max_value
    if _is_number(low) and _is_number(high) and low <= high:
        if isinstance(low, int) and isinstance(high, int):
            return rng.randint(low, high)
        return round(rng.uniform(low, high), 2)
    if column_type is ColumnType.TIME and isinstance(low, str) and isinstance(high, str):
        try:
            first = dt.date.fromisoformat(low[:10]).toordinal()
            last = dt.date.fromisoformat(high[:10]).toordinal()
        except ValueError:
            return None
        if first > last:
            return None
        day = dt.date.fromordinal(rng.randint(first, last)).isoformat()
        if len(low) > 10:  # a date-time: the same layout as the column's
            clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            return f"{day}{low[10]}{clock}"
        return day
    return None


def _domain_value(
    column_type: ColumnType,
    literals: Sequence[Any],
    rng: random.Random,
    stats: Sequence[ColumnStatistics] = (),
) -> Any:
    numbers = [v for v in literals if _is_number(v)]
    if column_type is ColumnType.NUMBER and numbers:
        return _near_literals(numbers, rng)
    for stat in stats:
        value = _in_range(column_type, stat, rng)
        if value is not None:
            return value
    return generate_value(column_type, rng)


def _value_key(value: Any) -> Any:
    """Equality as a NUMERIC column sees it: ``'1'``, ``1`` and ``1.0`` are one value."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


def _distinct(values: Iterable[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for v in values:
        key = _value_key(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def synthesise_rows(
    schema: SqlSchema,
    seed: int,
    pools: Mapping[ColumnRef, Sequence[Any]] | None = None,
    links: Sequence[tuple[ColumnRef, ColumnRef]] = (),
    statistics: Mapping[ColumnRef, ColumnStatistics] | None = None,
) -> dict[str, list[tuple[Any, ...]]]:
    """Seeded rows for every table of ``schema`` (see the module docstring for the rule).

    ``pools`` maps columns to literals the queries compare them with; ``links`` are column
    pairs the queries join on (beside the declared foreign keys); ``statistics`` what the
    schema says of a column's cells.
    """
    pools = pools or {}
    stats_of = {_key(r.table, r.column): s for r, s in (statistics or {}).items()}
    domains = _Domains()
    for table in schema.tables:
        for column in table.columns:
            domains.find(_key(table.name, column.name))
        for fk in table.foreign_keys:
            ref = schema.find(fk.ref_table)
            if ref is not None and ref.find(fk.ref_column) is not None:
                domains.union(_key(table.name, fk.column), _key(ref.name, fk.ref_column))
    for a, b in links:
        domains.union(_key(a.table, a.column), _key(b.table, b.column))

    literal_of: dict[tuple[str, str], list[Any]] = {}
    for column_ref, values in pools.items():
        literal_of.setdefault(_key(column_ref.table, column_ref.column), []).extend(values)

    n_rows = {
        t.name: seeded_rng(seed, "rows", sqlite_fold(t.name)).randint(MIN_ROWS, MAX_ROWS)
        for t in schema.tables
    }
    members: dict[tuple[str, str], list[tuple[SqlTable, SqlColumn]]] = {}
    for table in schema.tables:
        for column in table.columns:
            members.setdefault(domains.find(_key(table.name, column.name)), []).append(
                (table, column)
            )

    # One value domain per class: the class's literals first, then generated values. A
    # class with a single-column key is as big as the smallest keyed table, so every
    # value of it exists in every key column (foreign keys draw only from it); bigger key
    # columns continue with spare values beyond the domain.
    domain_of: dict[tuple[str, str], list[Any]] = {}
    spare_of: dict[tuple[str, str], list[Any]] = {}
    keyed_of: dict[tuple[str, str], bool] = {}
    for root in sorted(members):
        group = members[root]
        keyed = [n_rows[t.name] for t, c in group if _single_key(t, c)]
        size = min(keyed) if keyed else max(n_rows[t.name] for t, _ in group)
        wanted = max(n_rows[t.name] for t, _ in group)
        column_type = _class_type(group)
        literals = _distinct(v for t, c in group for v in literal_of.get(_key(t.name, c.name), []))
        stats = [stats_of[k] for k in (_key(t.name, c.name) for t, c in group) if k in stats_of]
        samples = _distinct(v for s in stats for v in s.sample_values if v is not None)
        values = _distinct([*literals, *samples])[:size]
        if stats and not keyed and all(s.complete for s in stats):
            wanted = len(values) or wanted  # the samples are every value the column holds
        elif stats and not keyed:
            # as many distinct values as the column's unique fraction says (its samples at least)
            shares = [s.unique_fraction for s in stats if s.unique_fraction is not None]
            if shares:
                wanted = min(wanted, max(math.ceil(max(shares) * wanted), len(values), 1))
        keys = {_value_key(v) for v in values}
        rng = seeded_rng(seed, "domain", *root)
        attempts = 0
        while len(values) < wanted and attempts < 50 * wanted:
            attempts += 1
            # the column's range first; when it holds no more new values, anything
            value = _domain_value(
                column_type, literals, rng, stats if attempts < 20 * wanted else ()
            )
            if _value_key(value) not in keys:
                keys.add(_value_key(value))
                values.append(value)
        domain_of[root], spare_of[root] = values[:size], values[size:]
        keyed_of[root] = bool(keyed)

    rows: dict[str, list[tuple[Any, ...]]] = {}
    for table in schema.tables:
        rows[table.name] = _table_rows(
            table, n_rows[table.name], seed, domains, domain_of, spare_of, keyed_of, literal_of
        )
        _blank(table, rows[table.name], seed, stats_of)
    return rows


def _blank(
    table: SqlTable,
    rows: list[tuple[Any, ...]],
    seed: int,
    stats_of: Mapping[tuple[str, str], ColumnStatistics],
) -> None:
    """Cells set to NULL as often as each column's null fraction says (keys never)."""
    keys = {sqlite_fold(c) for c in table.primary_key}
    for i, column in enumerate(table.columns):
        stats = stats_of.get(_key(table.name, column.name))
        if stats is None or stats.null_fraction <= 0 or sqlite_fold(column.name) in keys:
            continue
        rng = seeded_rng(seed, "nulls", sqlite_fold(table.name), sqlite_fold(column.name))
        for r, row in enumerate(rows):
            if rng.random() < stats.null_fraction:
                rows[r] = (*row[:i], None, *row[i + 1 :])


def _fillers(column: SqlColumn, taken: Sequence[Any], n: int) -> list[Any]:
    """``n`` key values beyond a domain that ran out: numbers after its largest for a number
    column (an ``INTEGER PRIMARY KEY`` takes nothing else), else ``<column>_<j>``."""
    if column.type is ColumnType.NUMBER:
        top = max((int(v) for v in taken if _is_number(v)), default=0)
        return [top + 1 + j for j in range(n)]
    return [f"{column.name}_{j}" for j in range(n)]


def _single_key(table: SqlTable, column: SqlColumn) -> bool:
    return len(table.primary_key) == 1 and sqlite_fold(table.primary_key[0]) == sqlite_fold(
        column.name
    )


def _class_type(group: Sequence[tuple[SqlTable, SqlColumn]]) -> ColumnType:
    """The type of a linked class: its key columns' type, else the most common one."""
    keyed = [
        c.type for t, c in group if sqlite_fold(c.name) in {sqlite_fold(k) for k in t.primary_key}
    ]
    types = keyed or [c.type for _, c in group]
    return max(sorted(set(types)), key=types.count)


def _table_rows(
    table: SqlTable,
    n: int,
    seed: int,
    domains: _Domains,
    domain_of: Mapping[tuple[str, str], list[Any]],
    spare_of: Mapping[tuple[str, str], list[Any]],
    keyed_of: Mapping[tuple[str, str], bool],
    literal_of: Mapping[tuple[str, str], list[Any]],
) -> list[tuple[Any, ...]]:
    rng = seeded_rng(seed, "table", sqlite_fold(table.name))
    pk = [table.index(c) for c in table.primary_key]
    columns: list[list[Any]] = []
    for i, column in enumerate(table.columns):
        key = _key(table.name, column.name)
        root = domains.find(key)
        domain = domain_of[root]
        if pk == [i]:
            # single-column key: the whole domain (literals among it), then spare values
            order = list(domain)
            rng.shuffle(order)
            order += spare_of[root]
            order += _fillers(column, order, max(n - len(order), 0))
            columns.append(order[:n])
            continue
        literals = literal_of.get(key, [])
        if keyed_of[root]:
            # a foreign key only takes values its referenced key holds
            allowed = {_value_key(v) for v in domain}
            literals = [v for v in literals if _value_key(v) in allowed]
        cells = []
        for _ in range(n):
            if literals and rng.random() < POOL_SHARE:
                cells.append(rng.choice(literals))
            else:
                cells.append(rng.choice(domain))
        columns.append(cells)
    rows = [tuple(col[r] for col in columns) for r in range(n)]
    if len(pk) > 1:
        # composite key: drop rows repeating a key tuple (rare with 10–30 rows)
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for row in rows:
            key = tuple(row[i] for i in pk)
            if key not in seen:
                seen.add(key)
                unique.append(row)
        rows = unique
    return rows
