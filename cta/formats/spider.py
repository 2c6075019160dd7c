"""Spider datasets: ``tables.json``, question files and ``database/<db_id>/<db_id>.sqlite``.

Reading keeps every entry and record as loaded, so writing gives back files with the same
keys and layout the Spider tools (evaluation script, parsers' preprocessing) expect. A
perturbed database is a new ``tables.json`` entry whose ``db_id`` carries a suffix
(``concert_singer_rpl_s0_v0``); its ``column_names`` hold the natural names the parser
sees and ``column_names_original`` the SQL identifiers — for a renamed or added column the
candidate name verbatim (quoted in SQL when needed). Global column indices shift when
columns are added, so primary keys, foreign keys and the parsed ``sql`` of a question
record (when present) are remapped; ``query_toks``/``query_toks_no_value`` (when present)
are re-tokenised from the rewritten query.

Question files come in the original format (``question``, ``query``, ``sql``…) or the
Spider-Syn one (``SpiderQuestion``, ``SpiderSynQuestion``, ``query``); only ``db_id`` and
``query`` are required and other keys are kept as they are.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cta.formats.spider_schema import (
    SpiderSchema,
    is_sqlite_type_name,
    load_spider_database,
    parse_spider_entry,
    spider_column_type,
)
from cta.sql.database import (
    NewColumn,
    SchemaPerturbation,
    SqlColumn,
    SqlSchema,
    SqlTable,
    sqlite_fold,
)
from cta.table import InvalidTableError, Table

__all__ = [
    "SpiderDataset",
    "database_path",
    "gold_line",
    "suite_member_target",
    "suite_members",
    "load_spider",
    "natural_tables",
    "perturbed_entry",
    "perturbed_record",
    "query_tokens",
    "remap_sql",
    "remap_tables",
    "spider_schema",
    "sql_schema",
    "write_json",
]


@dataclass
class SpiderDataset:
    """Schemas by ``db_id`` (``tables.json`` entries) and question records of one file."""

    name: str
    schemas: dict[str, dict[str, Any]]
    records: list[dict[str, Any]]
    db_dir: Path | None = None
    tables_path: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def database(self, db_id: str) -> Path | None:
        """The SQLite file of ``db_id`` under ``db_dir``, if the dataset ships one."""
        if self.db_dir is None:
            return None
        path = database_path(self.db_dir, db_id)
        return path if path.is_file() else None


def database_path(db_dir: str | Path, db_id: str) -> Path:
    """Spider's layout: ``<db_dir>/<db_id>/<db_id>.sqlite``."""
    return Path(db_dir) / db_id / f"{db_id}.sqlite"


def suite_members(main: Path) -> list[Path]:
    """The other databases of a test suite (test-suite-sql-eval's layout: several ``.sqlite``
    files in a database's folder, every one of which a query must agree on): each
    ``*.sqlite`` beside ``main``, sorted by name; empty for a plain Spider folder."""
    return sorted(p for p in main.parent.glob("*.sqlite") if p.name != main.name and p.is_file())


def suite_member_target(member: Path, source_id: str, target_main: Path) -> Path:
    """Where a suite member of database ``source_id`` goes beside ``target_main`` (the
    perturbed database's main file): its name with the database id swapped."""
    db_id = target_main.stem
    name = member.name
    if name.startswith(source_id):
        name = db_id + name[len(source_id) :]
    elif not name.startswith(db_id):
        name = f"{db_id}_{name}"
    return target_main.parent / name


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidTableError("invalid_json", f"{path}: {exc}") from None


def load_spider(
    tables: str | Path, questions: str | Path, db_dir: str | Path | None = None
) -> SpiderDataset:
    """Read a Spider ``tables.json`` and one question file (list of records)."""
    tables_path, questions_path = Path(tables), Path(questions)
    entries = _read_json(tables_path)
    if not isinstance(entries, list):
        raise InvalidTableError("malformed_table", f"{tables_path}: expected a JSON list")
    schemas: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("db_id"), str):
            raise InvalidTableError("malformed_table", f"{tables_path}: entry without db_id")
        schemas[entry["db_id"]] = entry
    records = _read_json(questions_path)
    if not isinstance(records, list):
        raise InvalidTableError("malformed_dataset", f"{questions_path}: expected a JSON list")
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise InvalidTableError("malformed_dataset", f"{questions_path}[{i}]: not an object")
        for key in ("db_id", "query"):
            if not isinstance(record.get(key), str):
                raise InvalidTableError(
                    "malformed_dataset", f"{questions_path}[{i}]: missing string {key!r}"
                )
        if record["db_id"] not in schemas:
            raise InvalidTableError(
                "unknown_database",
                f"{questions_path}[{i}]: db_id {record['db_id']!r} is not in {tables_path}",
            )
    return SpiderDataset(
        name=questions_path.stem,
        schemas=schemas,
        records=records,
        db_dir=Path(db_dir) if db_dir is not None else None,
        tables_path=tables_path,
    )


def spider_schema(entry: Mapping[str, Any]) -> SqlSchema:
    """The relational schema of a ``tables.json`` entry (SQL identifiers and keys)."""
    return sql_schema(parse_spider_entry(entry))


def sql_schema(parsed: SpiderSchema) -> SqlSchema:
    """The relational schema of a parsed ``tables.json`` entry; a column whose type is an
    SQLite type name (BIRD's ``integer``, ``real``, ``date``) is declared with it."""
    columns = parsed.columns
    pks, fks = parsed.keys()
    return SqlSchema(
        tuple(
            SqlTable(
                name=name,
                columns=tuple(
                    SqlColumn(
                        columns[i].original,
                        spider_column_type(columns[i].type),
                        columns[i].type.upper() if is_sqlite_type_name(columns[i].type) else "",
                    )
                    for i in parsed.table_columns(t)
                ),
                primary_key=tuple(pks.get(t, [])),
                foreign_keys=tuple(fks.get(t, [])),
            )
            for t, name in enumerate(parsed.table_originals)
        )
    )


def natural_tables(entry: Mapping[str, Any]) -> list[Table]:
    """The tables of an entry as :class:`~cta.table.Table` (natural names, identifiers)."""
    return load_spider_database(entry)


def perturbed_entry(
    entry: Mapping[str, Any], db_id: str, perturbation: SchemaPerturbation
) -> tuple[dict[str, Any], dict[int, int]]:
    """The ``tables.json`` entry of a perturbed database and the old→new column indices."""
    table_names = entry["table_names_original"]
    old_columns = entry["column_names"]
    old_originals = entry["column_names_original"]
    old_types = entry["column_types"]
    changed = {sqlite_fold(t): cols for t, cols in perturbation.tables.items()}
    by_table: dict[int, list[int]] = {t: [] for t in range(len(table_names))}
    for i, (t, _) in enumerate(old_originals):
        if int(t) >= 0:
            by_table[int(t)].append(i)

    names: list[list[Any]] = [copy.deepcopy(old_columns[0])]
    originals: list[list[Any]] = [copy.deepcopy(old_originals[0])]
    types: list[str] = [old_types[0]]
    index_map = {0: 0}
    for t, table in enumerate(table_names):
        new_columns: Sequence[NewColumn] | None = changed.get(sqlite_fold(table))
        olds = by_table[t]
        if new_columns is None:
            for i in olds:
                index_map[i] = len(names)
                names.append([t, old_columns[i][1]])
                originals.append([t, old_originals[i][1]])
                types.append(old_types[i])
            continue
        by_identifier = {sqlite_fold(old_originals[i][1]): i for i in olds}
        for column in new_columns:
            if column.source is not None:
                i = by_identifier[sqlite_fold(column.source)]
                index_map[i] = len(names)
                renamed = sqlite_fold(column.name) != sqlite_fold(column.source)
                natural = column.label if renamed and column.label else old_columns[i][1]
                names.append([t, natural])
                originals.append([t, column.name])
                types.append(old_types[i])
            else:
                names.append([t, column.label or column.name])
                originals.append([t, column.name])
                types.append(column.type.value)
    new = dict(entry)
    new["db_id"] = db_id
    new["column_names"] = names
    new["column_names_original"] = originals
    new["column_types"] = types
    new["primary_keys"] = [
        [index_map[int(i)] for i in pk] if isinstance(pk, list) else index_map[int(pk)]
        for pk in entry.get("primary_keys", [])
    ]
    new["foreign_keys"] = [
        [index_map[int(a)], index_map[int(b)]] for a, b in entry.get("foreign_keys", [])
    ]
    return new, index_map


# -- question records ---------------------------------------------------------------------------
def _remap_col_unit(unit: Any, index_map: Mapping[int, int]) -> Any:
    # col_unit = [agg_id, col_id, is_distinct]
    if isinstance(unit, list) and len(unit) == 3 and isinstance(unit[1], int):
        return [unit[0], index_map.get(unit[1], unit[1]), unit[2]]
    return unit


def _remap_val_unit(unit: Any, index_map: Mapping[int, int]) -> Any:
    # val_unit = [unit_op, col_unit1, col_unit2]
    if isinstance(unit, list) and len(unit) == 3:
        return [unit[0], _remap_col_unit(unit[1], index_map), _remap_col_unit(unit[2], index_map)]
    return unit


def _remap_value(value: Any, index_map: Mapping[int, int]) -> Any:
    if isinstance(value, dict):
        return remap_sql(value, index_map)
    if isinstance(value, list):
        return _remap_col_unit(value, index_map)
    return value


def _remap_conditions(conds: Any, index_map: Mapping[int, int]) -> Any:
    # [cond_unit, "and"/"or", cond_unit, …]; cond_unit = [not_op, op_id, val_unit, val1, val2]
    out = []
    for item in conds or []:
        if isinstance(item, list) and len(item) == 5:
            not_op, op_id, val_unit, v1, v2 = item
            out.append(
                [
                    not_op,
                    op_id,
                    _remap_val_unit(val_unit, index_map),
                    _remap_value(v1, index_map),
                    _remap_value(v2, index_map),
                ]
            )
        else:
            out.append(item)
    return out


def remap_sql(sql: Mapping[str, Any], index_map: Mapping[int, int]) -> dict[str, Any]:
    """Spider's parsed ``sql`` with column indices moved by ``index_map`` (tables unchanged)."""
    out = dict(sql)
    if "select" in sql:
        distinct, items = sql["select"]
        out["select"] = [
            distinct,
            [[agg, _remap_val_unit(unit, index_map)] for agg, unit in items],
        ]
    if "from" in sql:
        frm = dict(sql["from"])
        frm["table_units"] = [
            [kind, remap_sql(x, index_map) if isinstance(x, dict) else x]
            for kind, x in sql["from"].get("table_units", [])
        ]
        frm["conds"] = _remap_conditions(sql["from"].get("conds"), index_map)
        out["from"] = frm
    for key in ("where", "having"):
        if key in sql:
            out[key] = _remap_conditions(sql[key], index_map)
    if "groupBy" in sql:
        out["groupBy"] = [_remap_col_unit(u, index_map) for u in sql["groupBy"] or []]
    if sql.get("orderBy"):
        direction, units = sql["orderBy"]
        out["orderBy"] = [direction, [_remap_val_unit(u, index_map) for u in units]]
    for key in ("intersect", "union", "except"):
        if isinstance(sql.get(key), dict):
            out[key] = remap_sql(sql[key], index_map)
    return out


def remap_tables(sql: Any, table_index_map: Mapping[int, int]) -> Any:
    """Spider's parsed ``sql`` with table indices (``["table_unit", i]``) moved."""
    if isinstance(sql, dict):
        out = {}
        for key, value in sql.items():
            if key == "table_units" and isinstance(value, list):
                out[key] = [
                    [kind, table_index_map.get(x, x)]
                    if kind == "table_unit" and isinstance(x, int)
                    else [kind, remap_tables(x, table_index_map)]
                    for kind, x in value
                ]
            else:
                out[key] = remap_tables(value, table_index_map)
        return out
    if isinstance(sql, list):
        return [remap_tables(v, table_index_map) for v in sql]
    return sql


_TOKEN = re.compile(
    r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|[A-Za-z_][\w]*(?:\.(?:[A-Za-z_]\w*|"(?:[^"]|"")*"|\*))?|\d+(?:\.\d+)?|!=|<>|>=|<=|\|\||\S""",
)


def query_tokens(sql: str) -> list[str]:
    """Spider-style ``query_toks``: words, ``alias.column``, quoted strings, punctuation."""
    return _TOKEN.findall(sql)


def _no_value_tokens(tokens: Sequence[str]) -> list[str]:
    out = []
    for tok in tokens:
        is_value = tok[0] in "'\"" or re.fullmatch(r"\d+(?:\.\d+)?", tok) is not None
        out.append("value" if is_value else tok.lower())
    return out


def perturbed_record(
    record: Mapping[str, Any],
    db_id: str,
    query: str,
    index_map: Mapping[int, int] | None,
) -> dict[str, Any]:
    """A question record for a perturbed database: same keys, new ``db_id`` and ``query``."""
    new = copy.deepcopy(dict(record))
    new["db_id"] = db_id
    new["query"] = query
    if index_map is not None and isinstance(record.get("sql"), dict):
        new["sql"] = remap_sql(record["sql"], index_map)
    if "query_toks" in record:
        new["query_toks"] = query_tokens(query)
    if "query_toks_no_value" in record:
        new["query_toks_no_value"] = _no_value_tokens(query_tokens(query))
    return new


def gold_line(sql: str | None, db_id: str) -> str:
    """One line of a Spider gold file (``dev_gold.sql``): the query on one line, a tab, the
    database id."""
    return f"{' '.join((sql or '').split())}\t{db_id}\n"


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON as Spider ships it (indented, UTF-8), creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
