"""WikiSQL datasets: ``<split>.jsonl`` questions and ``<split>.tables.jsonl`` tables.

A question's SQL is WikiSQL's logical form ``{"sel": i, "agg": a, "conds": [[i, op, v]…]}``
over column *indices*; :func:`to_sql` turns it into SQLite text over a table whose columns
are the header names, so the generic rewriter and execution checks apply. A perturbed
table gets a suffixed id (``1-1000181-1_add_s0_v0``); RPL renames its header entries and
leaves indices alone, ADD inserts columns and shifts the indices of the question's
``sel``/``conds`` (:func:`remap`). :func:`write_db` writes the SQLite layout WikiSQL's
``evaluate.py`` reads (tables ``table_<id>``, columns ``col0``, ``col1``…).
"""

from __future__ import annotations

import copy
import json
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cta.formats.reading import json_lines
from cta.formats.tables import normalise_name
from cta.sql.database import SqlColumn, SqlSchema, SqlTable, quote_identifier
from cta.table import ColumnType, InvalidTableError

__all__ = [
    "AGG_OPS",
    "COND_OPS",
    "WikiSqlDataset",
    "load_wikisql",
    "remap",
    "sql_table_name",
    "to_sql",
    "wikisql_schema",
    "write_db",
    "write_jsonl",
]

AGG_OPS = ("", "MAX", "MIN", "COUNT", "SUM", "AVG")
COND_OPS = ("=", ">", "<", "OP")


@dataclass
class WikiSqlDataset:
    """Tables by id and question records of one split."""

    name: str
    tables: dict[str, dict[str, Any]]
    records: list[dict[str, Any]]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidTableError("invalid_json", f"{path}: {exc}") from None
    out = []
    for n, obj in json_lines(text, path):
        if not isinstance(obj, dict):
            raise InvalidTableError("malformed_dataset", f"{path}:{n}: not an object")
        out.append(obj)
    return out


def load_wikisql(questions: str | Path, tables: str | Path | None = None) -> WikiSqlDataset:
    """Read a WikiSQL split; ``tables`` defaults to ``<split>.tables.jsonl`` beside it."""
    questions_path = Path(questions)
    stem = questions_path.name.removesuffix(".jsonl")
    tables_path = Path(tables) if tables else questions_path.with_name(f"{stem}.tables.jsonl")
    table_objs = {}
    for obj in _read_jsonl(tables_path):
        if not isinstance(obj.get("id"), str) or not isinstance(obj.get("header"), list):
            raise InvalidTableError("malformed_table", f"{tables_path}: table without id/header")
        table_objs[obj["id"]] = obj
    records = _read_jsonl(questions_path)
    for i, record in enumerate(records):
        sql = record.get("sql")
        if not isinstance(sql, dict) or "sel" not in sql or "conds" not in sql:
            raise InvalidTableError("malformed_dataset", f"{questions_path}:{i + 1}: no sql")
        if record.get("table_id") not in table_objs:
            raise InvalidTableError(
                "unknown_table",
                f"{questions_path}:{i + 1}: table {record.get('table_id')!r} not in {tables_path}",
            )
    return WikiSqlDataset(name=stem, tables=table_objs, records=records)


def sql_table_name(table_id: str) -> str:
    """WikiSQL's SQLite table name for a table id (``table_1_1000181_1``)."""
    return "table_" + re.sub(r"\W", "_", table_id)


def _column_type(types: Sequence[Any], i: int) -> ColumnType:
    return ColumnType.NUMBER if i < len(types) and types[i] == "real" else ColumnType.TEXT


def wikisql_schema(table: Mapping[str, Any]) -> SqlSchema:
    """A one-table schema whose column identifiers are the (whitespace-normalised) headers."""
    types = table.get("types") or []
    columns = tuple(
        SqlColumn(normalise_name(h), _column_type(types, i)) for i, h in enumerate(table["header"])
    )
    return SqlSchema((SqlTable(sql_table_name(table["id"]), columns),))


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def to_sql(sql: Mapping[str, Any], table_name: str, columns: Sequence[str]) -> str:
    """The SQLite text of a WikiSQL logical form over columns named ``columns``."""
    try:
        sel = columns[int(sql["sel"])]
        agg = AGG_OPS[int(sql.get("agg", 0))]
        conds = [(columns[int(c)], COND_OPS[int(op)], v) for c, op, v in sql["conds"]]
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise InvalidTableError(
            "malformed_dataset", f"bad WikiSQL sql {dict(sql)}: {exc}"
        ) from None
    target = f"{agg}({quote_identifier(sel)})" if agg else quote_identifier(sel)
    text = f"SELECT {target} FROM {quote_identifier(table_name)}"
    if conds:
        text += " WHERE " + " AND ".join(
            f"{quote_identifier(c)} {op} {_literal(v)}" for c, op, v in conds
        )
    return text


def remap(sql: Mapping[str, Any], index_map: Mapping[int, int]) -> dict[str, Any]:
    """The logical form with column indices moved by ``index_map``."""
    out = copy.deepcopy(dict(sql))
    out["sel"] = index_map[int(sql["sel"])]
    out["conds"] = [[index_map[int(c)], op, v] for c, op, v in sql["conds"]]
    return out


def write_jsonl(path: str | Path, objs: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object per line, as WikiSQL ships them."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for obj in objs:
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")


def write_db(path: str | Path, tables: Iterable[Mapping[str, Any]]) -> None:
    """The SQLite file WikiSQL's evaluator reads: ``table_<id>(col0, col1, …)``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(str(path))
    try:
        for table in tables:
            types = table.get("types") or []
            cols = ", ".join(
                f"col{i} {'REAL' if _column_type(types, i) is ColumnType.NUMBER else 'TEXT'}"
                for i in range(len(table["header"]))
            )
            name = quote_identifier(sql_table_name(table["id"]))
            conn.execute(f"CREATE TABLE {name} ({cols})")
            marks = ", ".join("?" for _ in table["header"])
            conn.executemany(f"INSERT INTO {name} VALUES ({marks})", table.get("rows", []))
        conn.commit()
    finally:
        conn.close()
