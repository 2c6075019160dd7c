"""BIRD datasets: ``dev.json``, ``dev_tables.json`` and ``dev_databases/``, read and written.

Input. BIRD ships a question file (``dev.json``: ``question_id``, ``db_id``, ``question``,
``evidence``, ``SQL``, ``difficulty``; only ``db_id`` and ``SQL`` are required, every key is
kept), a schema file in Spider's shape (``dev_tables.json``: ``db_id``,
``table_names_original``, ``table_names``, ``column_names_original``, ``column_names``,
``column_types`` — SQLite's type names, ``integer``, ``real``, ``text``, ``date`` —,
``primary_keys``, ``foreign_keys``) and a folder per database,
``dev_databases/<db_id>/<db_id>.sqlite`` with ``database_description/<table>.csv`` beside it
(header ``original_column_name,column_name,column_description,data_format,
value_description``: the identifier, its natural name, what it means, its type and what its
values mean). The databases folder is ``--db-dir``, else ``dev_databases`` beside
``dev_tables.json``; a database without its ``.sqlite`` file is synthesised. Column
statistics for that synthesis (sample values, ranges, null and unique fractions, in the
shape of the BIRD mini-dev's ``dev_tables_cleaned.json``) are read by
:func:`load_statistics`.

Output (``cta dataset perturb --format bird``; ``cta eval --format bird`` reads it). The out
folder holds ``dev_tables.json`` (the original entries, then one per perturbed database,
``<db_id>_<kind>_s<seed>_v<n>`` as the Spider driver names them),
``dev_databases/<db_id>/<db_id>.sqlite`` and ``dev_databases/<db_id>/database_description/
<table>.csv`` for originals and perturbed databases alike, the question files
``<name>_original.json`` and ``<name>_<kind>_s<seed>.json`` (``<name>`` the question file's
stem; every BIRD key kept, ``SQL`` and ``evidence`` rewritten, ``db_id`` the perturbed
database's, plus ``kind``, ``seed`` and ``source_index``, the record's position in the input),
beside each its gold file ``<stem>_gold.sql`` (``SQL<TAB>db_id`` a line, BIRD's
``dev_gold.sql``), ``mappings.jsonl`` (every question × kind × seed: what changed or why
not), ``verification.json`` with ``--verify``, and ``manifest.json`` (inputs, settings, and
whether the databases were given or synthesised, with the synthesis seeds).

Evidence and descriptions follow the schema: :func:`cta.formats.mentions.rewrite_mentions`
rewrites every mention of a renamed column or table — its identifier bare, qualified,
backticked or double-quoted, or its natural name — and :func:`perturbed_descriptions` writes
the description rows of a perturbed database (a renamed column's row renamed, a row per
added column).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cta.formats.mentions import Rename, rewrite_mentions
from cta.sql.database import ColumnRef, ColumnStatistics, sqlite_fold
from cta.table import InvalidTableError

__all__ = [
    "DATABASES",
    "DESCRIPTIONS",
    "DESCRIPTION_FIELDS",
    "BirdDataset",
    "bird_from_metadata",
    "description_path",
    "load_bird",
    "load_statistics",
    "original_descriptions",
    "perturbed_descriptions",
    "read_descriptions",
    "renames_between",
    "write_descriptions",
]

DATABASES = "dev_databases"
"""The databases folder of BIRD's layout (beside ``dev_tables.json``)."""
DESCRIPTIONS = "database_description"
"""The folder of a database's description CSVs (beside its ``.sqlite``)."""
DESCRIPTION_FIELDS = (
    "original_column_name",
    "column_name",
    "column_description",
    "data_format",
    "value_description",
)
"""The header of a description CSV, in BIRD's order."""

Description = dict[str, str]
"""One row of a description CSV."""


@dataclass
class BirdDataset:
    """Schemas by ``db_id`` (``dev_tables.json`` entries), question records, description
    rows by database and table identifier, column statistics by database, and where the
    databases lie."""

    name: str
    entries: dict[str, dict[str, Any]]
    records: list[dict[str, Any]]
    descriptions: dict[str, dict[str, list[Description]]] = field(default_factory=dict)
    statistics: dict[str, dict[ColumnRef, ColumnStatistics]] = field(default_factory=dict)
    db_dir: Path | None = None
    tables_path: Path | None = None

    def database(self, db_id: str) -> Path | None:
        """The SQLite file of ``db_id``, if the dataset ships one."""
        if self.db_dir is None:
            return None
        path = self.db_dir / db_id / f"{db_id}.sqlite"
        return path if path.is_file() else None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidTableError("invalid_json", f"{path}: {exc}") from None


def load_bird(
    tables: str | Path,
    questions: str | Path,
    db_dir: str | Path | None = None,
    statistics: str | Path | None = None,
) -> BirdDataset:
    """Read ``dev_tables.json``, a question file and the description CSVs (from ``db_dir``,
    else ``dev_databases`` beside ``tables``); ``statistics`` a column-statistics file."""
    tables_path, questions_path = Path(tables), Path(questions)
    data = _read_json(tables_path)
    if not isinstance(data, list):
        raise InvalidTableError("malformed_table", f"{tables_path}: expected a JSON list")
    entries: dict[str, dict[str, Any]] = {}
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("db_id"), str):
            raise InvalidTableError("malformed_table", f"{tables_path}: entry without db_id")
        entries[entry["db_id"]] = entry
    records = _read_json(questions_path)
    if not isinstance(records, list):
        raise InvalidTableError("malformed_dataset", f"{questions_path}: expected a JSON list")
    for i, record in enumerate(records):
        where = f"{questions_path}[{i}]"
        if not isinstance(record, dict):
            raise InvalidTableError("malformed_dataset", f"{where}: not an object")
        for key in ("db_id", "SQL"):
            if not isinstance(record.get(key), str):
                raise InvalidTableError("malformed_dataset", f"{where}: missing string {key!r}")
        if not isinstance(record.get("evidence", ""), str):
            raise InvalidTableError("malformed_dataset", f"{where}: 'evidence' is not a string")
        if record["db_id"] not in entries:
            raise InvalidTableError(
                "unknown_database",
                f"{where}: db_id {record['db_id']!r} is not in {tables_path}",
            )
    root = Path(db_dir) if db_dir is not None else tables_path.parent / DATABASES
    used = sorted({r["db_id"] for r in records})
    descriptions = {}
    if root.is_dir():
        for db_id in used:
            folder = root / db_id / DESCRIPTIONS
            if folder.is_dir():
                descriptions[db_id] = read_descriptions(folder, entries[db_id])
    return BirdDataset(
        name=questions_path.stem,
        entries=entries,
        records=records,
        descriptions=descriptions,
        statistics=load_statistics(statistics) if statistics is not None else {},
        db_dir=root if root.is_dir() else None,
        tables_path=tables_path,
    )


# -- description CSVs ----------------------------------------------------------------------------
def _decode(data: bytes) -> str:
    """BIRD's description files are mostly UTF-8, some Windows-1252."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def read_descriptions(folder: str | Path, entry: Mapping[str, Any]) -> dict[str, list[Description]]:
    """The rows of every ``<table>.csv`` in ``folder``, by the table identifier of ``entry``
    the file names (compared as SQLite compares names); files naming no table are ignored."""
    tables = {sqlite_fold(str(t)): str(t) for t in entry.get("table_names_original", [])}
    out: dict[str, list[Description]] = {}
    for path in sorted(Path(folder).glob("*.csv")):
        table = tables.get(sqlite_fold(path.stem.strip()))
        if table is None:
            continue
        reader = csv.DictReader(io.StringIO(_decode(path.read_bytes()), newline=""))
        try:
            rows = [
                {f: (row.get(f) or "").strip() for f in DESCRIPTION_FIELDS}
                for row in reader
                if any((v or "").strip() for v in row.values() if isinstance(v, str))
            ]
        except csv.Error as exc:
            raise InvalidTableError("invalid_csv", f"{path}: {exc}") from None
        out[table] = rows
    return out


def description_path(db_dir: str | Path, db_id: str, table: str) -> Path:
    """Where the description CSV of ``table`` lies: ``<db_dir>/<db_id>/database_description/
    <table>.csv``."""
    return Path(db_dir) / db_id / DESCRIPTIONS / f"{table}.csv"


def write_descriptions(
    db_dir: str | Path, db_id: str, tables: Mapping[str, Sequence[Mapping[str, str]]]
) -> list[Path]:
    """Write one description CSV per table (BIRD's header and column order); the paths."""
    paths = []
    for table, rows in tables.items():
        path = description_path(db_dir, db_id, table)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=DESCRIPTION_FIELDS, lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow({f: row.get(f, "") for f in DESCRIPTION_FIELDS})
        paths.append(path)
    return paths


def _entry_columns(entry: Mapping[str, Any]) -> list[tuple[int, str, str, str]]:
    """(table index, identifier, natural name, type) of every column but ``*``."""
    out = []
    for (t, original), (_, natural), ctype in zip(
        entry["column_names_original"], entry["column_names"], entry["column_types"], strict=True
    ):
        if int(t) >= 0:
            out.append((int(t), str(original), str(natural), str(ctype)))
    return out


def _row_of(rows: Sequence[Description], identifier: str) -> Description | None:
    key = sqlite_fold(identifier.strip())
    return next((r for r in rows if sqlite_fold(r["original_column_name"]) == key), None)


def perturbed_descriptions(
    entry: Mapping[str, Any],
    new_entry: Mapping[str, Any],
    index_map: Mapping[int, int],
    rows: Mapping[str, Sequence[Description]],
    renames: Sequence[Rename] = (),
) -> dict[str, list[Description]]:
    """The description rows of a perturbed database, by its table identifiers: each carried
    column's row (from ``rows``, the original's, by table and identifier) under its new
    identifier and — when renamed — natural name, its descriptions' mentions of renamed
    columns rewritten (:func:`rewrite_mentions`); a row for each added column, its natural
    name as its description. ``index_map`` maps the original's column indices to the
    perturbed entry's (``0`` is ``*``)."""
    old_columns = _entry_columns(entry)
    old_tables = [str(t) for t in entry["table_names_original"]]
    origin = {j: i for i, j in index_map.items() if i > 0}
    out: dict[str, list[Description]] = {str(t): [] for t in new_entry["table_names_original"]}
    new_tables = [str(t) for t in new_entry["table_names_original"]]
    for j, (t, identifier, natural, ctype) in enumerate(_entry_columns(new_entry), start=1):
        table = new_tables[t]
        i = origin.get(j)
        if i is None:
            out[table].append(
                {
                    "original_column_name": identifier,
                    "column_name": natural,
                    "column_description": natural,
                    "data_format": ctype,
                    "value_description": "",
                }
            )
            continue
        old_t, old_id, old_natural, old_type = old_columns[i - 1]
        found = _row_of(rows.get(old_tables[old_t], ()), old_id)
        row = dict(found) if found is not None else _blank_row(old_id, old_natural, old_type)
        renamed = natural != old_natural or identifier != old_id
        row["original_column_name"] = identifier
        if renamed:
            row["column_name"] = natural
        for key in ("column_description", "value_description"):
            row[key] = rewrite_mentions(row.get(key, ""), renames)
        out[table].append(row)
    return out


def _blank_row(identifier: str, natural: str, ctype: str) -> Description:
    return {
        "original_column_name": identifier,
        "column_name": natural if natural != identifier else "",
        "column_description": "",
        "data_format": ctype,
        "value_description": "",
    }


def original_descriptions(
    entry: Mapping[str, Any], rows: Mapping[str, Sequence[Description]]
) -> dict[str, list[Description]]:
    """The description rows of an original database: the given ones, a blank row (names and
    type) for a column they lack."""
    return perturbed_descriptions(
        entry, entry, {i: i for i in range(len(entry["column_names"]))}, rows
    )


def renames_between(
    entry: Mapping[str, Any],
    new_entry: Mapping[str, Any],
    index_map: Mapping[int, int],
    table_map: Mapping[int, int] | None = None,
) -> list[Rename]:
    """The tables and columns of ``entry`` whose identifier or natural name differs in
    ``new_entry`` (``index_map``/``table_map``: old → new column and table indices; tables
    keep their places without one)."""
    out: list[Rename] = []
    old_tables, new_tables = entry["table_names_original"], new_entry["table_names_original"]
    old_naturals, new_naturals = entry["table_names"], new_entry["table_names"]
    places = table_map if table_map is not None else {t: t for t in range(len(old_tables))}
    for t, u in places.items():
        if u < len(new_tables) and (
            old_tables[t] != new_tables[u] or old_naturals[t] != new_naturals[u]
        ):
            out.append(Rename(old_tables[t], new_tables[u], old_naturals[t], new_naturals[u]))
    old_columns, new_columns = _entry_columns(entry), _entry_columns(new_entry)
    for i, j in index_map.items():
        if i <= 0 or j <= 0:
            continue
        t, old_id, old_natural, _ = old_columns[i - 1]
        _, new_id, new_natural, _ = new_columns[j - 1]
        if old_id != new_id or old_natural != new_natural:
            out.append(Rename(old_id, new_id, old_natural, new_natural, str(old_tables[t])))
    return out


# -- statistics and a BIRD layout from them --------------------------------------------------------
def _fraction(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _statistics_of(column: Mapping[str, Any]) -> ColumnStatistics:
    samples = column.get("sample_values") or []
    count = column.get("unique_count")
    return ColumnStatistics(
        sample_values=tuple(v for v in samples if isinstance(v, str | int | float)),
        min_value=column.get("min_value"),
        max_value=column.get("max_value"),
        null_fraction=_fraction(column.get("null_fraction")) or 0.0,
        unique_fraction=_fraction(column.get("unique_fraction")),
        unique_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
    )


def _metadata(path_or_data: str | Path | Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    data = (
        _read_json(Path(path_or_data))
        if isinstance(path_or_data, str | Path)
        else list(path_or_data)
    )
    where = str(path_or_data) if isinstance(path_or_data, str | Path) else "statistics"
    if not isinstance(data, list) or not all(
        isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("tables"), list)
        for d in data
    ):
        raise InvalidTableError(
            "malformed_statistics", f"{where}: expected a list of {{name, tables}} databases"
        )
    return data


def load_statistics(
    path_or_data: str | Path | Sequence[Mapping[str, Any]],
) -> dict[str, dict[ColumnRef, ColumnStatistics]]:
    """Column statistics by database, from a file in the shape of the BIRD mini-dev's
    ``dev_tables_cleaned.json`` (a list of ``{name, tables: [{name, columns: [{name,
    sample_values, min_value, max_value, null_fraction, unique_fraction, unique_count}]}]}``)."""
    out: dict[str, dict[ColumnRef, ColumnStatistics]] = {}
    for db in _metadata(path_or_data):
        stats = out.setdefault(str(db["name"]), {})
        for table in db["tables"]:
            for column in table.get("columns", []):
                if isinstance(column, dict) and isinstance(column.get("name"), str):
                    ref = ColumnRef(str(table["name"]), column["name"])
                    stats[ref] = _statistics_of(column)
    return out


def _foreign_keys(db: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(table, column, referenced table, referenced column) of a metadata database: every
    many-to-one link, and a one-to-one link into the referenced table's key (from the smaller
    table when both ends are keys)."""
    pk = {
        sqlite_fold(t["name"]): {sqlite_fold(c) for c in t.get("primary_key", [])}
        for t in db["tables"]
    }
    rows = {sqlite_fold(t["name"]): t.get("row_count") or 0 for t in db["tables"]}
    out = []
    for table in db["tables"]:
        for column in table["columns"]:
            for fk in column.get("foreign_keys", []):
                ref_t, ref_c = fk["reference_table"], fk["reference_column"]
                t, r = sqlite_fold(table["name"]), sqlite_fold(ref_t)
                relation = fk.get("relationship")
                keep = relation == "many-to-one"
                if relation == "one-to-one" and sqlite_fold(ref_c) in pk.get(r, set()):
                    own_key = sqlite_fold(column["name"]) in pk.get(t, set())
                    keep = not own_key or (rows.get(t, 0), t) < (rows.get(r, 0), r)
                if keep:
                    out.append((table["name"], column["name"], ref_t, ref_c))
    return out


def bird_from_metadata(
    metadata: str | Path | Sequence[Mapping[str, Any]], db_ids: Sequence[str] | None = None
) -> tuple[list[dict[str, Any]], dict[str, dict[str, list[Description]]]]:
    """BIRD's ``dev_tables.json`` entries and description rows (by database and table) made
    from a statistics file (:func:`load_statistics`' shape, which also holds each column's
    natural name, type, description, value description and keys), for ``db_ids`` (default:
    all, in file order). A column without a natural name is named by its identifier, as
    BIRD's own ``dev_tables.json`` names it."""
    entries: list[dict[str, Any]] = []
    descriptions: dict[str, dict[str, list[Description]]] = {}
    for db in _metadata(metadata):
        db_id = str(db["name"])
        if db_ids is not None and db_id not in db_ids:
            continue
        tables = [str(t["name"]) for t in db["tables"]]
        originals: list[list[Any]] = [[-1, "*"]]
        naturals: list[list[Any]] = [[-1, "*"]]
        types = ["text"]
        index: dict[tuple[str, str], int] = {}
        rows: dict[str, list[Description]] = {}
        for t, table in enumerate(db["tables"]):
            for column in table["columns"]:
                name = str(column["name"])
                natural = str(column.get("original_name") or name)
                index[(sqlite_fold(table["name"]), sqlite_fold(name))] = len(originals)
                originals.append([t, name])
                naturals.append([t, natural])
                types.append(str(column.get("type") or "text"))
                rows.setdefault(str(table["name"]), []).append(
                    {
                        "original_column_name": name,
                        "column_name": str(column.get("original_name") or ""),
                        "column_description": str(column.get("description") or ""),
                        "data_format": str(column.get("type") or "text"),
                        "value_description": str(column.get("value_description") or ""),
                    }
                )
        primary_keys: list[Any] = []
        for table in db["tables"]:
            key = [
                index[(sqlite_fold(table["name"]), sqlite_fold(c))]
                for c in table.get("primary_key", [])
            ]
            if len(key) == 1:
                primary_keys.append(key[0])
            elif key:
                primary_keys.append(key)
        foreign_keys = [
            [index[(sqlite_fold(a), sqlite_fold(b))], index[(sqlite_fold(c), sqlite_fold(d))]]
            for a, b, c, d in _foreign_keys(db)
            if (sqlite_fold(c), sqlite_fold(d)) in index
        ]
        entries.append(
            {
                "db_id": db_id,
                "table_names_original": tables,
                "table_names": tables,
                "column_names_original": originals,
                "column_names": naturals,
                "column_types": types,
                "primary_keys": primary_keys,
                "foreign_keys": foreign_keys,
            }
        )
        descriptions[db_id] = rows
    return entries, descriptions
