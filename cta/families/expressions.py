"""Families that change how a column's content is represented: Dr.Spider's
DBcontent-equivalence, and schema evolution's column split and column merge.

Each replaces one or two columns a gold query mentions by new columns holding the same
information, migrates the data from the original database with SQLite expressions, and
rewrites every reference to a replaced column into an expression over the new columns
(:func:`cta.sql.rewrite.rewrite_query`'s ``expressions``):

- a person's name ``Name`` → ``first_name``, ``last_name``, read back as
  ``first_name || ' ' || last_name`` (every name has a space, split at the first one);
- an age → ``birth_year``, read back as ``REFERENCE_YEAR - birth_year``: the reference year
  (:data:`REFERENCE_YEAR`) is a constant of this module, stated in the edit's operation
  text and stored nowhere in the database;
- a two-valued text column (``'T'``/``'F'``, ``'Yes'``/``'No'``, ``'M'``/``'F'``) → a 0/1
  column, read back with a ``CASE``;
- an ISO date text ``'YYYY-MM-DD'`` → year, month and day integers, read back with
  ``printf('%04d-%02d-%02d', …)``;
- two text columns → one, joined by a separator that never occurs in the first one's
  values, each read back with ``substr``/``instr``.

Exactness. A replacement is only made when the reconstruction gives back every cell of the
original column — the same value *and* the same storage class, NULLs included — and when
every comparison a query could make gives the same answer. The first is checked on the
original file, in SQLite itself: the migrated values are computed, read back through the
reconstruction and compared with ``IS`` and ``typeof``. The second is a matter of *type
affinity*: a column compared with a literal converts the literal to its affinity
(``age = '25'`` is true for the integer 25 in a NUMERIC column), an expression does not.
Each reconstruction is wrapped in ``CAST(… AS <affinity>)`` — SQLite gives a CAST the
affinity of its type — which is the identity on the values it is applied to (text read
back as TEXT, integers as INTEGER or NUMERIC); a column whose affinity no such CAST can
give without changing a value (dates declared ``DATETIME``, NUMERIC affinity, holding
text) is left alone, and so is a table whose definition declares a collation.

One file, because the three families share the type-affinity rules and the reconstruction
expressions that make a migrated column read back exactly.
"""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from random import Random
from typing import Any

from cta.families.base import FamilyContext, NotApplicable
from cta.families.model import DbEdit, Key
from cta.families.naming import styled_identifier
from cta.seeding import seeded_rng
from cta.sql.database import (
    ColumnRef,
    SqlColumn,
    SqlSchema,
    SqlTable,
    declared_type,
    quote_identifier,
    sqlite_fold,
)
from cta.table import ColumnType
from cta.words import name_words, singular

__all__ = [
    "REFERENCE_YEAR",
    "ColumnMerge",
    "ColumnSplit",
    "ContentEquivalence",
    "affinity",
    "column_affinities",
    "key_columns",
    "original_rows",
]

REFERENCE_YEAR = 2024
"""The year an age is counted from: ``age = REFERENCE_YEAR - birth_year``. A constant of the
family (stated in each edit's operation text), not a value of the perturbed database."""

PERSON_WORDS = frozenset(
    """person people individual human singer player employee staff student pupil teacher
    customer client author writer poet artist painter actor actress director driver manager
    member host editor journalist pilot musician conductor captain representative candidate
    physician doctor nurse patient owner professor instructor lecturer faculty technician
    gymnast perpetrator architect coach wrestler entrepreneur investor chairman president
    governor senator user visitor guest resident passenger traveler traveller tourist
    participant contestant winner friend scientist engineer programmer dancer referee judge
    lawyer agent broker seller buyer shopper commander soldier king queen ruler mayor minister
    delegate head advisor supervisor worker clerk officer volunteer reviewer critic climber
    swimmer runner athlete boxer jockey cyclist skier photographer composer vocalist rapper
    performer speaker debater voter invigilator mentor tutor trainee intern applicant
    employer landlord tenant citizen inventor founder ceo""".split()
)
"""Nouns naming people: a ``name`` column of a table of them, or a ``<noun> name`` column,
holds a person's name."""

_FIRST_WORDS = frozenset({"first", "given", "fore", "forename", "personal"})
_LAST_WORDS = frozenset({"last", "family", "surname", "sur"})
_TRUE_VALUES = frozenset({"t", "true", "y", "yes", "1"})
_FALSE_VALUES = frozenset({"f", "false", "n", "no", "0"})
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_WORD_VALUE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?: [A-Za-z0-9]+)*")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEPARATORS = (" ", ", ", "; ", " | ", " / ", "|")


# -- the original file ------------------------------------------------------------------------------
def original_rows(path: Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of a read-only query on the original SQLite file."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    try:
        return conn.execute(sql, tuple(params)).fetchall()
    finally:
        conn.close()


def affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type (https://sqlite.org/datatype3.html)."""
    upper = declared.upper()
    if "INT" in upper:
        return "INTEGER"
    if any(t in upper for t in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in upper or not upper.strip():
        return "BLOB"
    if any(t in upper for t in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def column_affinities(path: Path, table: str) -> dict[str, str] | None:
    """Folded column → affinity as the original file declares them; None when the table's
    definition declares a collation (an expression would not carry it)."""
    found = original_rows(
        path,
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
        (table,),
    )
    if not found or re.search(r"\bCOLLATE\b", str(found[0][0] or ""), re.IGNORECASE):
        return None
    info = original_rows(path, f"PRAGMA table_info({quote_identifier(table)})")
    return {sqlite_fold(str(r[1])): affinity(str(r[2] or "")) for r in info}


def key_columns(schema: SqlSchema) -> set[Key]:
    """Every column a primary or foreign key declaration names, on either side."""
    keys: set[Key] = set()
    for table in schema.tables:
        t = sqlite_fold(table.name)
        keys |= {(t, sqlite_fold(c)) for c in table.primary_key}
        for fk in table.foreign_keys:
            keys.add((t, sqlite_fold(fk.column)))
            keys.add((sqlite_fold(fk.ref_table), sqlite_fold(fk.ref_column)))
    return keys


# -- replacements ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """A new column: its definition, natural name and how it is computed from the row."""

    column: SqlColumn
    label: str
    fill: str  # SQLite expression over the original table's (unqualified) columns
    storage: str  # the storage class of its non-NULL values: "text" or "integer"


@dataclass(frozen=True)
class Replacement:
    """Columns of one table replaced by new ones, which take the first one's place."""

    table: SqlTable
    columns: tuple[str, ...]  # original identifiers
    parts: tuple[Part, ...]
    templates: dict[str, str]  # original identifier → expression over the parts, {t} qualifier
    operation: str


def _text_part(name: str, label: str, fill: str) -> Part:
    return Part(
        SqlColumn(name, ColumnType.TEXT, declared_type(ColumnType.TEXT)), label, fill, "text"
    )


def _integer_part(name: str, label: str, fill: str, kind: ColumnType = ColumnType.NUMBER) -> Part:
    return Part(SqlColumn(name, kind, "INTEGER"), label, fill, "integer")


def _words(natural: str) -> list[str]:
    return [w.lower() for w in name_words(natural)]


def _person_name(ctx: FamilyContext, table: SqlTable, column: SqlColumn) -> bool:
    """Does the natural name say the column holds a person's (full) name?"""
    words = _words(ctx.natural(table.name, column.name))
    if not words or words[-1] != "name":
        return False
    if words in (["full", "name"], ["person", "name"], ["people", "name"]):
        return True
    if len(words) == 2 and singular(words[0]) in PERSON_WORDS:
        return True
    if words == ["name"]:
        return any(singular(w) in PERSON_WORDS for w in _words(ctx.natural(table.name)))
    return False


def _non_null(cells: Sequence[Any]) -> list[Any]:
    return [c for c in cells if c is not None]


def _all_text(cells: Sequence[Any]) -> bool:
    values = _non_null(cells)
    return bool(values) and all(isinstance(v, str) for v in values)


class _Namer:
    """New identifiers for a table in its style, never clashing with the columns that stay."""

    def __init__(self, table: SqlTable, replaced: Sequence[str]) -> None:
        self.table = table
        gone = {sqlite_fold(c) for c in replaced}
        self.taken = {sqlite_fold(c.name) for c in table.columns if sqlite_fold(c.name) not in gone}

    def __call__(self, *naturals: str) -> tuple[str, str] | None:
        """The first of ``naturals`` that makes a free identifier: (identifier, natural)."""
        for natural in naturals:
            ident = styled_identifier(natural, self.table, self.taken)
            if ident is not None and _PLAIN.fullmatch(ident):
                self.taken.add(sqlite_fold(ident))
                return ident, natural
        return None


def _cast(expression: str, aff: str) -> str:
    return f"CAST({expression} AS {aff})"


def _name_split(ctx: FamilyContext, table: SqlTable, column: SqlColumn) -> Replacement | None:
    """``Name`` → first name, last name (split at the first space)."""
    cells = ctx.cells(table.name, column.name)
    if not _all_text(cells) or not all(0 < v.find(" ") < len(v) - 1 for v in _non_null(cells)):
        return None
    natural = ctx.natural(table.name, column.name)
    prefix = " ".join(w for w in _words(natural) if w not in ("name", "full"))
    namer = _Namer(table, [column.name])
    first = namer("first name", f"{prefix} first name".strip(), f"{natural} first")
    last = namer("last name", f"{prefix} last name".strip(), f"{natural} last")
    if first is None or last is None:
        return None
    c = quote_identifier(column.name)
    parts = (
        _text_part(first[0], first[1], f"substr({c}, 1, instr({c}, ' ') - 1)"),
        _text_part(last[0], last[1], f"substr({c}, instr({c}, ' ') + 1)"),
    )
    f, la = quote_identifier(first[0]), quote_identifier(last[0])
    template = _cast(f"{{t}}{f} || ' ' || {{t}}{la}", "TEXT")
    return Replacement(
        table,
        (column.name,),
        parts,
        {column.name: template},
        f"{table.name}.{column.name} split into {first[0]}, {last[0]} at the first space "
        f"({column.name} = {first[0]} || ' ' || {last[0]})",
    )


def _age(ctx: FamilyContext, table: SqlTable, column: SqlColumn, aff: str) -> Replacement | None:
    """``age`` → birth year, counted back from :data:`REFERENCE_YEAR`."""
    words = _words(ctx.natural(table.name, column.name))
    if not words or words[-1] != "age" or {"average", "avg", "mean", "min", "max"} & set(words):
        return None
    if aff not in ("INTEGER", "NUMERIC"):
        return None
    values = _non_null(ctx.cells(table.name, column.name))
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    named = _Namer(table, [column.name])("birth year", "year of birth")
    if named is None:
        return None
    c, b = quote_identifier(column.name), quote_identifier(named[0])
    return Replacement(
        table,
        (column.name,),
        (_integer_part(named[0], named[1], f"{REFERENCE_YEAR} - {c}"),),
        {column.name: _cast(f"{REFERENCE_YEAR} - {{t}}{b}", aff)},
        f"{table.name}.{column.name} replaced by {named[0]} "
        f"({column.name} = {REFERENCE_YEAR} - {named[0]}; reference year {REFERENCE_YEAR}, "
        "stored nowhere in the database)",
    )


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _two_valued(
    ctx: FamilyContext, table: SqlTable, column: SqlColumn, rng_choice: Callable[[list[str]], str]
) -> Replacement | None:
    """A text column with exactly two values → a 0/1 column (1 for one of them)."""
    cells = ctx.cells(table.name, column.name)
    if not _all_text(cells):
        return None
    values = sorted(set(_non_null(cells)))
    if len(values) != 2:
        return None
    natural = ctx.natural(table.name, column.name)
    folded = [v.strip().lower() for v in values]
    namer = _Namer(table, [column.name])
    if set(folded) <= _TRUE_VALUES | _FALSE_VALUES and (
        bool(set(folded) & _TRUE_VALUES) and bool(set(folded) & _FALSE_VALUES)
    ):
        # a truth value written as text: the same question, answered 1/0
        positive = values[0] if folded[0] in _TRUE_VALUES else values[1]
        words = _words(natural)
        stem = " ".join(words[1:] if words[:1] in (["is"], ["if"], ["has"]) else words)
        named = namer(f"is {stem}", f"{natural} flag")
    else:
        usable = [v for v in values if _WORD_VALUE.fullmatch(v)]
        if not usable:
            return None
        positive = rng_choice(usable)
        named = namer(f"{natural} is {positive}", f"is {positive}")
    if named is None:
        return None
    negative = values[1] if positive == values[0] else values[0]
    c, b = quote_identifier(column.name), quote_identifier(named[0])
    p, n = _sql_string(positive), _sql_string(negative)
    fill = f"CASE WHEN {c} IS NULL THEN NULL WHEN {c} = {p} THEN 1 ELSE 0 END"
    template = _cast(
        f"CASE WHEN {{t}}{b} IS NULL THEN NULL WHEN {{t}}{b} THEN {p} ELSE {n} END", "TEXT"
    )
    return Replacement(
        table,
        (column.name,),
        (_integer_part(named[0], named[1], fill, ColumnType.BOOLEAN),),
        {column.name: template},
        f"{table.name}.{column.name} ({p}/{n}) replaced by boolean {named[0]} "
        f"(1 for {p}, 0 for {n})",
    )


def _date_split(ctx: FamilyContext, table: SqlTable, column: SqlColumn) -> Replacement | None:
    """An ISO date text → year, month and day integers."""
    cells = ctx.cells(table.name, column.name)
    if not _all_text(cells) or not all(_ISO_DATE.fullmatch(v) for v in _non_null(cells)):
        return None
    natural = ctx.natural(table.name, column.name)
    namer = _Namer(table, [column.name])
    bare = _words(natural) == ["date"]
    named = []
    for unit in ("year", "month", "day"):
        n = namer(unit, f"{natural} {unit}") if bare else namer(f"{natural} {unit}")
        if n is None:
            return None
        named.append(n)
    c = quote_identifier(column.name)
    fills = (
        f"CAST(substr({c}, 1, 4) AS INTEGER)",
        f"CAST(substr({c}, 6, 2) AS INTEGER)",
        f"CAST(substr({c}, 9, 2) AS INTEGER)",
    )
    y, m, d = (quote_identifier(n[0]) for n in named)
    template = _cast(
        f"CASE WHEN {{t}}{y} IS NULL THEN NULL "
        f"ELSE printf('%04d-%02d-%02d', {{t}}{y}, {{t}}{m}, {{t}}{d}) END",
        "TEXT",
    )
    names = ", ".join(n[0] for n in named)
    return Replacement(
        table,
        (column.name,),
        tuple(_integer_part(n[0], n[1], f) for n, f in zip(named, fills, strict=True)),
        {column.name: template},
        f"{table.name}.{column.name} split into {names} "
        f"({column.name} = printf('%04d-%02d-%02d', {names}))",
    )


def _merge(
    ctx: FamilyContext, table: SqlTable, a: SqlColumn, b: SqlColumn, person: bool
) -> Replacement | None:
    """Two text columns → one, ``a || sep || b``; ``sep`` never occurs in ``a``'s values."""
    first = _non_null(ctx.cells(table.name, a.name))
    second = ctx.cells(table.name, b.name)
    if not _all_text(first) or not _all_text(second):
        return None
    separators = (" ",) if person else _SEPARATORS
    sep = next((s for s in separators if not any(s in v for v in first)), None)
    if sep is None:
        return None
    namer = _Namer(table, [a.name, b.name])
    na, nb = ctx.natural(table.name, a.name), ctx.natural(table.name, b.name)
    place = (
        "address"
        if {"address", "line", "street", "road"} & set(_words(na) + _words(nb))
        else "location"
    )
    named = namer("name", "full name") if person else namer(place, f"{na} and {nb}")
    if named is None:
        return None
    ca, cb, m = quote_identifier(a.name), quote_identifier(b.name), quote_identifier(named[0])
    s = _sql_string(sep)
    templates = {
        a.name: _cast(f"substr({{t}}{m}, 1, instr({{t}}{m}, {s}) - 1)", "TEXT"),
        b.name: _cast(f"substr({{t}}{m}, instr({{t}}{m}, {s}) + {len(sep)})", "TEXT"),
    }
    return Replacement(
        table,
        (a.name, b.name),
        (_text_part(named[0], named[1], f"{ca} || {s} || {cb}"),),
        templates,
        f"{table.name}.{a.name} and {table.name}.{b.name} merged into {named[0]} "
        f"({named[0]} = {a.name} || {s} || {b.name})",
    )


# -- exactness and the edit ------------------------------------------------------------------------
def _mismatches(path: Path, r: Replacement) -> int:
    """Rows of the original table whose replaced cells the new columns do not give back
    exactly (value and storage class), or whose new cells are not of their stated class."""
    inner = [f"{quote_identifier(c)} AS __cta_o{i}" for i, c in enumerate(r.columns)]
    inner += [f"{p.fill} AS {quote_identifier(p.column.name)}" for p in r.parts]
    checks = []
    for i, c in enumerate(r.columns):
        back = r.templates[c].replace("{t}", "")
        checks.append(f"(({back}) IS __cta_o{i} AND typeof({back}) = typeof(__cta_o{i}))")
    for p in r.parts:
        name = quote_identifier(p.column.name)
        checks.append(f"typeof({name}) IN ('null', '{p.storage}')")
    sql = (
        f"SELECT count(*) FROM (SELECT {', '.join(inner)} FROM {quote_identifier(r.table.name)}) "
        f"WHERE NOT ({' AND '.join(checks)})"
    )
    return int(original_rows(path, sql)[0][0])


def _edit(ctx: FamilyContext, r: Replacement) -> DbEdit:
    gone = {sqlite_fold(c) for c in r.columns}
    first = sqlite_fold(r.columns[0])
    tkey = sqlite_fold(r.table.name)
    columns: list[SqlColumn] = []
    fills: list[str] = []
    for column in r.table.columns:
        key = sqlite_fold(column.name)
        if key == first:
            columns.extend(p.column for p in r.parts)
            fills.extend(f"{p.fill} AS {quote_identifier(p.column.name)}" for p in r.parts)
        elif key not in gone:
            columns.append(column)
            fills.append(quote_identifier(column.name))
    new_table = dataclasses.replace(r.table, columns=tuple(columns))
    schema = SqlSchema(tuple(new_table if t is r.table else t for t in ctx.schema.tables))
    origin: dict[Key, Key] = {}
    for table in schema.tables:
        t = sqlite_fold(table.name)
        for column in table.columns:
            c = sqlite_fold(column.name)
            if t != tkey or all(c != sqlite_fold(p.column.name) for p in r.parts):
                origin[(t, c)] = (t, c)
    new_names = ", ".join(p.column.name for p in r.parts)
    return DbEdit(
        schema=schema,
        operation=r.operation,
        origin=origin,
        labels={(tkey, sqlite_fold(p.column.name)): p.label for p in r.parts},
        fill={
            new_table.name: f"SELECT {', '.join(fills)} FROM {quote_identifier(r.table.name)} "
            "ORDER BY rowid"
        },
        mapping={r.table.name: {c: new_names for c in r.columns}},
        expressions={ColumnRef(r.table.name, c): r.templates[c] for c in r.columns},
        keeps_parsed_sql=False,
    )


Builder = Callable[[], Replacement | None]


def _candidates(
    ctx: FamilyContext, *, pairs: bool = False
) -> Iterator[tuple[SqlTable, list[SqlColumn], dict[str, str]]]:
    """Tables with their mentioned non-key columns (or every non-key column, for pairs) and
    the columns' affinities; tables that cannot carry a replacement are skipped."""
    assert ctx.path is not None
    keys = key_columns(ctx.schema)
    for table in ctx.schema.tables:
        t = sqlite_fold(table.name)
        if t.startswith("sqlite_"):
            continue  # SQLite's own tables
        mentioned = [
            c
            for c in table.columns
            if (t, sqlite_fold(c.name)) in ctx.usage.columns
            and (t, sqlite_fold(c.name)) not in keys
        ]
        if not mentioned:
            continue
        affinities = column_affinities(ctx.path, table.name)
        if affinities is None:
            continue
        free = [c for c in table.columns if (t, sqlite_fold(c.name)) not in keys]
        yield table, free if pairs else mentioned, affinities


def _choose(ctx: FamilyContext, builders: list[Builder], what: str) -> DbEdit:
    """The first of ``builders`` (in their given order) whose replacement is exact; ``what``
    names the candidates sought, for the reason when there is none."""
    assert ctx.path is not None
    inexact = 0
    for build in builders:
        r = build()
        if r is None:
            continue
        if _mismatches(ctx.path, r):
            inexact += 1
            continue
        return _edit(ctx, r)
    if inexact:
        raise NotApplicable(f"{inexact} candidates ({what}), none reconstructs every cell exactly")
    raise NotApplicable(f"no candidate: {what}")


def _choose_seeded(
    ctx: FamilyContext,
    seed: int,
    kind: str,
    options: Callable[[SqlTable, SqlColumn, str, Random], list[Builder]],
    what: str,
) -> DbEdit:
    """:func:`_choose` among the ``options`` of every mentioned column (given its table,
    SQLite affinity and the family's seeded generator), in an order the seed shuffles."""
    _need_cells(ctx)
    rng = seeded_rng(seed, ctx.db_id, kind)
    builders = [
        builder
        for table, columns, affinities in _candidates(ctx)
        for column in columns
        for builder in options(table, column, affinities.get(sqlite_fold(column.name), ""), rng)
    ]
    rng.shuffle(builders)
    return _choose(ctx, builders, what)


def _need_cells(ctx: FamilyContext) -> None:
    if ctx.path is None:
        raise NotApplicable("no database file: the cells cannot be checked or migrated")


class ContentEquivalence:
    """Dr.Spider's DBcontent-equivalence: one mentioned column replaced by an equivalent
    representation — a person's name by first and last name, an age by a birth year, a
    two-valued text column by a boolean — chosen among the applicable ones by the seed."""

    kind = "content-equivalence"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        def options(table: SqlTable, column: SqlColumn, aff: str, rng: Random) -> list[Builder]:
            found: list[Builder] = []
            if aff == "TEXT" and _person_name(ctx, table, column):
                found.append(partial(_name_split, ctx, table, column))
            found.append(partial(_age, ctx, table, column, aff))
            if aff == "TEXT":
                found.append(partial(_two_valued, ctx, table, column, rng.choice))
            return found

        what = "a mentioned person's name, age or two-valued text column"
        return _choose_seeded(ctx, seed, self.kind, options, what)


class ColumnSplit:
    """Schema evolution's column split: a mentioned column becomes two or three — a person's
    full name first and last name, an ISO date year, month and day (seeded choice)."""

    kind = "column-split"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        def options(table: SqlTable, column: SqlColumn, aff: str, rng: Random) -> list[Builder]:
            if aff != "TEXT":
                return []
            name = (
                [partial(_name_split, ctx, table, column)]
                if _person_name(ctx, table, column)
                else []
            )
            return [*name, partial(_date_split, ctx, table, column)]

        what = "a mentioned person's name or ISO date text column"
        return _choose_seeded(ctx, seed, self.kind, options, what)


def _name_pair(words_a: list[str], words_b: list[str]) -> bool:
    """First name + last name (given/family, forename/surname), in this order."""
    return bool(
        words_a
        and words_b
        and (words_a[-1] in ("name", "forename") or words_a[0] in ("forename",))
        and (words_b[-1] in ("name", "surname") or words_b[0] in ("surname",))
        and set(words_a) & _FIRST_WORDS
        and set(words_b) & _LAST_WORDS
    )


_PLACE_WORDS = frozenset(
    "address line street road city town village state province county region district "
    "zip postcode postal country suburb".split()
)


def _place_pair(words_a: list[str], words_b: list[str]) -> bool:
    """Two parts of an address or a place (``line 1`` + ``line 2``, ``city`` + ``country``):
    columns a schema designer would merge into one ``address``/``location``."""
    return bool(
        words_a
        and words_b
        and words_a[-1] in _PLACE_WORDS | {"1", "2", "3"}
        and words_b[-1] in _PLACE_WORDS | {"1", "2", "3"}
        and set(words_a) & _PLACE_WORDS
        and set(words_b) & _PLACE_WORDS
    )


class ColumnMerge:
    """Schema evolution's column merge: two text columns of one table, at least one of them
    mentioned, that a designer would hold as one — first and last name into ``name`` joined
    by a space, two parts of an address or place (``city`` + ``country``) joined by a
    separator none of the first column's values contains. Unrelated columns are never
    merged. A person's name pair is preferred; among pairs of a kind the seed chooses."""

    kind = "column-merge"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        _need_cells(ctx)
        rng = seeded_rng(seed, ctx.db_id, self.kind)
        names: list[Builder] = []
        others: list[Builder] = []
        for table, columns, affinities in _candidates(ctx, pairs=True):
            t = sqlite_fold(table.name)
            text = [c for c in columns if affinities.get(sqlite_fold(c.name)) == "TEXT"]
            for i, a in enumerate(text):
                for b in text[i + 1 :]:
                    if (t, sqlite_fold(a.name)) not in ctx.usage.columns and (
                        t,
                        sqlite_fold(b.name),
                    ) not in ctx.usage.columns:
                        continue
                    wa = _words(ctx.natural(table.name, a.name))
                    wb = _words(ctx.natural(table.name, b.name))
                    if _name_pair(wa, wb):
                        names.append(partial(_merge, ctx, table, a, b, True))
                    elif _name_pair(wb, wa):
                        names.append(partial(_merge, ctx, table, b, a, True))
                    elif _place_pair(wa, wb):
                        others.append(partial(_merge, ctx, table, a, b, False))
        rng.shuffle(names)
        rng.shuffle(others)
        return _choose(
            ctx,
            names + others,
            "a first/last name or address/place pair of text columns, one mentioned",
        )
