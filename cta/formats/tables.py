"""Table loaders: CSV, WikiSQL, WDC web tables, pandas and our own JSON (a Spider schema's
tables: :mod:`cta.formats.spider_schema`).

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

Every loader shares the cell normalisation and the type inference below, which make their
tables identical whatever the source format; reading files and the errors of malformed ones
are :mod:`cta.formats.reading`.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cta.formats.reading import (
    build_table,
    json_lines,
    parse_json_line,
    read_json,
    read_text,
    require_key,
)
from cta.formats.spider_schema import load_spider_database
from cta.table import Column, ColumnType, InvalidTableError, Table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "infer_column_type",
    "json_value",
    "load_any",
    "load_csv",
    "load_dataframe",
    "load_table_json",
    "load_tables",
    "load_wdc_table",
    "load_wikisql_table",
    "normalise_name",
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
def _text(obj: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string field with whitespace collapsed, else None."""
    value = obj.get(key)
    if not isinstance(value, str):
        return None
    return normalise_name(value) or None


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
    text = read_text(path)
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
    return build_table(
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
    return build_table(
        f"DataFrame {name or ''}".strip(), name=name, columns=columns, rows=rows, source="dataframe"
    )


# -- WikiSQL -----------------------------------------------------------------------------------
def load_wikisql_table(line: str | Mapping[str, Any]) -> Table:
    """One line of WikiSQL ``*.tables.jsonl`` (``id``, ``header``, ``types``, ``rows``).

    ``name`` is the page title (else section title, else caption); ``caption`` is the caption
    (else section title). ``types`` (``real``/``text``) are used when present, else inferred.
    """
    obj = parse_json_line(line, "WikiSQL table") if isinstance(line, str) else line
    table_id = require_key(obj, "id", str, "WikiSQL table")
    where = f"WikiSQL table {table_id!r}"
    header = [normalise_name(h) for h in require_key(obj, "header", list, where)]
    rows = [[json_value(v) for v in row] for row in require_key(obj, "rows", list, where)]
    types = obj.get("types")
    if isinstance(types, list) and len(types) == len(header):
        columns = [
            Column(name=h, type=_WIKISQL_TYPES.get(str(t), ColumnType.TEXT))
            for h, t in zip(header, types, strict=True)
        ]
    else:
        columns = _typed_columns(header, rows)
    return build_table(
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
    obj = read_json(obj_or_path) if isinstance(obj_or_path, str | Path) else obj_or_path
    relation = require_key(obj, "relation", list, "WDC table")
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
    return build_table(
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
    data = read_json(path_or_obj) if isinstance(path_or_obj, str | Path) else path_or_obj
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
        for n, data in json_lines(read_text(p), p):
            tables.extend(_tables_from_json(data, f"{p}:{n}"))
        return tables
    if suffix == ".json":
        return _tables_from_json(read_json(p), str(p))
    raise InvalidTableError("unknown_format", f"{p}: expected .csv, .json or .jsonl")


def load_any(path: str | Path) -> Table:
    """The single table in a file (see :func:`load_tables`); several tables are an error."""
    tables = load_tables(path)
    if len(tables) != 1:
        raise InvalidTableError(
            "not_one_table", f"{path} holds {len(tables)} tables; expected exactly one"
        )
    return tables[0]
