"""Table loaders: CSV, Spider schemas, WikiSQL, WDC web tables, pandas and our own JSON.

Every loader returns validated :class:`cta.table.Table` objects and raises
:class:`cta.table.InvalidTableError` whose ``problem`` names what is wrong:

``no_columns``, ``empty_column_name``, ``duplicate_column_name``, ``ragged_rows`` (from the
table model), ``not_utf8`` (a file that is not UTF-8), ``invalid_csv``, ``invalid_json``,
``malformed_table`` (JSON of the wrong shape) and ``unknown_format`` (:func:`load_tables`).

Cell values are JSON-serialisable: numpy scalars become Python numbers, NaN/NaT/NA become
``None`` and timestamps ISO-8601 strings. CSV cells stay the strings of the file.

Column types are inferred from values by :func:`infer_column_type`: empty cells and null
markers (``-``, ``n/a``…) are ignored; a type wins when at least 90% of the remaining values
parse as it, tried in the order boolean → number → time → text. Years (``1969``) are numbers,
as in Spider and WikiSQL; only values that look like dates or clock times (``2010-05-01``,
``May 1, 2010``, ``12:30``) make a ``time`` column.

One file, because every loader shares the cell normalisation and the type inference that
make their tables identical whatever the source format.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cta.sql.database import sqlite_fold
from cta.table import Column, ColumnType, ForeignKey, InvalidTableError, Table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "infer_column_type",
    "is_sqlite_type_name",
    "json_lines",
    "json_value",
    "load_any",
    "load_csv",
    "load_dataframe",
    "load_spider_database",
    "load_spider_tables",
    "load_table_json",
    "load_tables",
    "load_wdc_table",
    "load_wikisql_table",
    "normalise_name",
    "parse_spider_entry",
    "spider_column_type",
    "spider_tables",
    "SpiderColumn",
    "SpiderSchema",
]

# Share of non-empty values that must parse as a type for the column to get it.
TYPE_MAJORITY = 0.9

_NULL_MARKERS = frozenset({"", "-", "–", "—", "n/a", "na", "nan", "null", "none", "?"})
_BOOLEANS = frozenset({"true", "false", "yes", "no", "t", "f", "y", "n"})
_NUMBER = re.compile(
    r"^[+\-−]?[$£€¥]?\s?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][+\-]?\d+)?\s?%?$", re.ASCII
)
_MONTH = (
    r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|june"
    r"|july|august|september|october|november|december)\.?"
)
_TIME_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\d{4}-\d{1,2}-\d{1,2}([ t]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?(z|[+\-]\d{2}:?\d{2})?$",
        r"^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}$",
        rf"^{_MONTH}\s+\d{{1,2}}(st|nd|rd|th)?,?\s+\d{{4}}$",
        rf"^\d{{1,2}}(st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}$",
        rf"^{_MONTH},?\s+\d{{4}}$",
        rf"^{_MONTH}\s+\d{{1,2}}(st|nd|rd|th)?$",
        rf"^\d{{1,2}}(st|nd|rd|th)?\s+{_MONTH}$",
        r"^\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?\s*([ap]\.?m\.?)?$",
    )
)
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
_WIKISQL_TYPES = {"real": ColumnType.NUMBER, "text": ColumnType.TEXT}


# -- values and types --------------------------------------------------------------------------
def normalise_name(name: str) -> str:
    """Collapse whitespace (WTQ headers hold line breaks inside quoted cells)."""
    return " ".join(str(name).split())


def json_value(value: Any) -> Any:
    """A JSON-serialisable cell: numpy → Python, NaN/NaT/NA → None, timestamps → ISO strings."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    # pandas' missing markers before datetime: NaT *is* a datetime subclass.
    pd = sys.modules.get("pandas")
    if pd is not None:
        if value is pd.NaT or value is pd.NA:
            return None
        if isinstance(value, pd.Timedelta):
            return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return json_value(float(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    # numpy scalars: .item() gives the Python value.
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return json_value(item())
        except (TypeError, ValueError):
            pass
    return str(value)


def _is_null(text: str) -> bool:
    return text.strip().casefold() in _NULL_MARKERS


def _is_number(text: str) -> bool:
    return bool(_NUMBER.match(text)) and any(c.isdigit() for c in text)


def _is_time(text: str) -> bool:
    return any(p.match(text) for p in _TIME_PATTERNS)


def infer_column_type(values: Iterable[Any]) -> ColumnType:
    """Infer a column type from its cells (see the module docstring for the rule)."""
    kinds: list[Any] = []
    for value in values:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, bool):
            kinds.append(ColumnType.BOOLEAN)
        elif isinstance(value, int | float | Decimal):
            kinds.append(ColumnType.NUMBER)
        elif isinstance(value, dt.date | dt.datetime | dt.time):
            kinds.append(ColumnType.TIME)
        else:
            text = str(value).strip()
            if _is_null(text):
                continue
            kinds.append(text)
    if not kinds:
        return ColumnType.TEXT
    need = TYPE_MAJORITY * len(kinds)
    checks = (
        (ColumnType.BOOLEAN, lambda s: s.casefold() in _BOOLEANS),
        (ColumnType.NUMBER, _is_number),
        (ColumnType.TIME, _is_time),
    )
    for ctype, check in checks:
        # `is`: a cell reading "number" must not count as the NUMBER member (a StrEnum).
        hits = sum(1 for k in kinds if k is ctype or (isinstance(k, str) and check(k)))
        if hits >= need:
            return ctype
    return ColumnType.TEXT


# -- files ---------------------------------------------------------------------------------
def _read_text(path: str | Path) -> str:
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidTableError(
            "not_utf8", f"{path} is not UTF-8 (invalid byte at offset {exc.start})"
        ) from None


def _read_json(path: str | Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidTableError("invalid_json", f"{path}: {exc}") from None


def _parse_json_line(line: str, where: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidTableError("invalid_json", f"{where}: {exc}") from None


def json_lines(text: str, where: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of JSON Lines text (``invalid_json``,
    naming ``where:line``, for a line that is not JSON)."""
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield n, _parse_json_line(line, f"{where}:{n}")


def _require(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, Mapping) or key not in obj:
        raise InvalidTableError("malformed_table", f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise InvalidTableError("malformed_table", f"{where}: {key!r} has the wrong type")
    return value


def _text(obj: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string field with whitespace collapsed, else None."""
    value = obj.get(key)
    if not isinstance(value, str):
        return None
    return normalise_name(value) or None


def _build(where: str, **fields: Any) -> Table:
    """Validate a table, naming ``where`` it came from in the error."""
    try:
        return Table.parse(fields)
    except InvalidTableError as exc:
        raise InvalidTableError(exc.problem, f"{where}: {exc.message}") from None


def _typed_columns(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[Column]:
    width = len(names)
    columns = []
    for i, name in enumerate(names):
        values = (row[i] for row in rows if len(row) == width)
        columns.append(Column(name=name, type=infer_column_type(values)))
    return columns


# -- CSV ---------------------------------------------------------------------------------------
def _csv_rows(text: str, escapechar: str | None, where: str) -> list[list[str]]:
    try:
        if escapechar is None:
            reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        else:
            reader = csv.reader(
                io.StringIO(text, newline=""),
                strict=True,
                escapechar=escapechar,
                doublequote=False,
            )
        return [row for row in reader if row]
    except csv.Error as exc:
        raise InvalidTableError("invalid_csv", f"{where}: {exc}") from None


def load_csv(
    path: str | Path,
    name: str | None = None,
    *,
    escapechar: str | None = None,
    max_rows: int | None = None,
) -> Table:
    """Load a CSV file: the first row is the header, the others are rows.

    ``name`` defaults to the file name without extension, underscores read as spaces
    (``school_students.csv`` → ``school students``).

    Header names have their whitespace collapsed (WTQ headers span lines). Quotes follow
    RFC 4180 (``""``); when that fails to parse, backslash-escaped quotes (``\\"``, as in WTQ)
    are tried before giving up with ``invalid_csv``. Pass ``escapechar="\\\\"`` to force the
    backslash dialect. Types are inferred from all rows; ``max_rows`` keeps only the first
    rows afterwards.
    """
    text = _read_text(path)
    if escapechar is None:
        try:
            rows = _csv_rows(text, None, str(path))
        except InvalidTableError:
            rows = _csv_rows(text, "\\", str(path))
    else:
        rows = _csv_rows(text, escapechar, str(path))
    if not rows:
        raise InvalidTableError("no_columns", f"{path} is empty: no header row")
    header = [normalise_name(h) for h in rows[0]]
    body = rows[1:]
    return _build(
        str(path),
        name=name or Path(path).stem.replace("_", " "),
        columns=_typed_columns(header, body),
        rows=body[:max_rows] if max_rows is not None else body,
        source=f"csv:{Path(path).name}",
    )


# -- pandas --------------------------------------------------------------------------------------
def _dtype_type(series: pd.Series) -> ColumnType | None:
    from pandas.api import types as pdt

    dtype = series.dtype
    if pdt.is_bool_dtype(dtype):
        return ColumnType.BOOLEAN
    if pdt.is_datetime64_any_dtype(dtype):
        return ColumnType.TIME
    if pdt.is_numeric_dtype(dtype) or pdt.is_timedelta64_dtype(dtype):
        return ColumnType.NUMBER
    return None  # object / string / category: decided from the values


def load_dataframe(
    df: pd.DataFrame, name: str | None = None, *, max_rows: int | None = None
) -> Table:
    """A table from a pandas DataFrame; types from dtypes, object columns from their values.

    The index is ignored (``reset_index()`` first to keep it). Tuple column labels
    (MultiIndex) are joined with spaces. ``max_rows`` keeps only the first rows (the
    dtype-based types still describe the whole column).
    """
    names = [
        normalise_name(" ".join(str(p) for p in label) if isinstance(label, tuple) else label)
        for label in df.columns
    ]
    head = df if max_rows is None else df.head(max_rows)
    rows = [[json_value(v) for v in row] for row in head.itertuples(index=False, name=None)]
    columns = []
    for i, col_name in enumerate(names):
        ctype = _dtype_type(df.iloc[:, i])
        if ctype is None:
            ctype = infer_column_type(row[i] for row in rows)
        columns.append(Column(name=col_name, type=ctype))
    return _build(
        f"DataFrame {name or ''}".strip(), name=name, columns=columns, rows=rows, source="dataframe"
    )


# -- Spider --------------------------------------------------------------------------------------
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
    db_id = _require(entry, "db_id", str, "spider database")
    where = f"spider database {db_id!r}"
    table_names = _require(entry, "table_names", list, where)
    table_originals = _require(entry, "table_names_original", list, where)
    col_names = _require(entry, "column_names", list, where)
    col_originals = _require(entry, "column_names_original", list, where)
    col_types = _require(entry, "column_types", list, where)
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
            _build(
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
    data = _read_json(path_or_obj) if isinstance(path_or_obj, str | Path) else list(path_or_obj)
    if not isinstance(data, list):
        raise InvalidTableError("malformed_table", "Spider tables.json must be a JSON list")
    return [table for entry in data for table in load_spider_database(entry)]


# -- WikiSQL -----------------------------------------------------------------------------------
def load_wikisql_table(line: str | Mapping[str, Any]) -> Table:
    """One line of WikiSQL ``*.tables.jsonl`` (``id``, ``header``, ``types``, ``rows``).

    ``name`` is the page title (else section title, else caption); ``caption`` is the caption
    (else section title). ``types`` (``real``/``text``) are used when present, else inferred.
    """
    obj = _parse_json_line(line, "WikiSQL table") if isinstance(line, str) else line
    table_id = _require(obj, "id", str, "WikiSQL table")
    where = f"WikiSQL table {table_id!r}"
    header = [normalise_name(h) for h in _require(obj, "header", list, where)]
    rows = [[json_value(v) for v in row] for row in _require(obj, "rows", list, where)]
    types = obj.get("types")
    if isinstance(types, list) and len(types) == len(header):
        columns = [
            Column(name=h, type=_WIKISQL_TYPES.get(str(t), ColumnType.TEXT))
            for h, t in zip(header, types, strict=True)
        ]
    else:
        columns = _typed_columns(header, rows)
    return _build(
        where,
        id=table_id,
        name=_text(obj, "page_title") or _text(obj, "section_title") or _text(obj, "caption"),
        caption=_text(obj, "caption") or _text(obj, "section_title"),
        columns=columns,
        rows=rows,
        source="wikisql",
    )


# -- WDC web tables -------------------------------------------------------------------------------
def load_wdc_table(obj_or_path: str | Path | Mapping[str, Any]) -> Table:
    """A Web Data Commons web table (the 2015 JSON format).

    ``relation`` is a list of the HTML table's columns. For ``HORIZONTAL`` tables each of them
    is one attribute; for ``VERTICAL`` tables each is one entity, so the relation is
    transposed first. When ``hasHeader`` is true the header is the row ``headerRowIndex``
    (default 0) and the rows above it are dropped; when false, columns are named
    ``column 1``, ``column 2``… and every row is data. ``name`` is the page title,
    ``caption`` the table title.
    """
    obj = _read_json(obj_or_path) if isinstance(obj_or_path, str | Path) else obj_or_path
    relation = _require(obj, "relation", list, "WDC table")
    if not relation or not all(isinstance(c, list) for c in relation):
        raise InvalidTableError("no_columns", "WDC table has an empty relation")
    if len({len(c) for c in relation}) != 1:
        raise InvalidTableError("ragged_rows", "WDC relation columns differ in length")
    cells = [[json_value(v) for v in col] for col in relation]
    if str(obj.get("tableOrientation", "HORIZONTAL")).upper() == "VERTICAL":
        cells = [list(col) for col in zip(*cells, strict=True)]
    n_rows = len(cells[0])
    if obj.get("hasHeader", True):
        h = int(obj.get("headerRowIndex", 0) or 0)
        if not 0 <= h < n_rows:
            raise InvalidTableError("no_columns", f"WDC header row {h} is out of range")
        header = [normalise_name("" if col[h] is None else str(col[h])) for col in cells]
        first = h + 1
    else:
        header = [f"column {i + 1}" for i in range(len(cells))]
        first = 0
    rows = [[col[r] for col in cells] for r in range(first, n_rows)]
    return _build(
        "WDC table",
        name=_text(obj, "pageTitle") or _text(obj, "title"),
        caption=_text(obj, "title"),
        columns=_typed_columns(header, rows),
        rows=rows,
        source=f"wdc:{_text(obj, 'url') or ''}".rstrip(":"),
    )


# -- our own JSON and dispatch ------------------------------------------------------------------
def load_table_json(path_or_obj: str | Path | Mapping[str, Any]) -> Table:
    """A table in our own JSON form (the :class:`cta.table.Table` model)."""
    data = _read_json(path_or_obj) if isinstance(path_or_obj, str | Path) else path_or_obj
    return Table.parse(data)


def _tables_from_json(data: Any, where: str) -> list[Table]:
    if isinstance(data, Mapping):
        if "relation" in data:
            return [load_wdc_table(data)]
        if "header" in data and "rows" in data:
            return [load_wikisql_table(data)]
        if "db_id" in data:
            return load_spider_database(data)
        return [load_table_json(data)]
    if isinstance(data, list) and data and all(isinstance(e, Mapping) for e in data):
        return [t for entry in data for t in _tables_from_json(entry, where)]
    raise InvalidTableError("unknown_format", f"{where}: not a table, Spider schema or WDC table")


def load_tables(path: str | Path) -> list[Table]:
    """All tables of a file, dispatching on extension and content.

    ``.csv`` → :func:`load_csv`; ``.jsonl`` → one table per line; ``.json`` → our Table JSON,
    a WDC table (``relation``), a WikiSQL table (``header`` + ``rows``), a Spider database
    (``db_id``) or a list of those (Spider ``tables.json``).
    """
    p = Path(path)
    suffix = p.suffix.casefold()
    if suffix == ".csv":
        return [load_csv(p)]
    if suffix == ".jsonl":
        tables = []
        for n, data in json_lines(_read_text(p), p):
            tables.extend(_tables_from_json(data, f"{p}:{n}"))
        return tables
    if suffix == ".json":
        return _tables_from_json(_read_json(p), str(p))
    raise InvalidTableError("unknown_format", f"{p}: expected .csv, .json or .jsonl")


def load_any(path: str | Path) -> Table:
    """The single table in a file (see :func:`load_tables`); several tables are an error."""
    tables = load_tables(path)
    if len(tables) != 1:
        raise InvalidTableError(
            "not_one_table", f"{path} holds {len(tables)} tables; expected exactly one"
        )
    return tables[0]
