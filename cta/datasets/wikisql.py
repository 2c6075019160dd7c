"""The WikiSQL driver: ``*.jsonl`` questions and ``*.tables.jsonl`` tables through the protocol.

Each WikiSQL table is a one-table database holding its rows; a question's logical form
becomes SQL over the header names (:func:`cta.formats.wikisql.to_sql`). The written
artefact is the *remapped logical form*; its SQL over the perturbed header is what the
execution check runs.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cta.apply.sample import ValueMode
from cta.datasets.base import (
    DatasetFiles,
    DatasetRequest,
    DatasetRun,
    FormatDriver,
    bind_examples,
    finish_run,
    materialise,
    question_files,
    reads_databases,
    run_protocol,
    write_mappings,
)
from cta.families.model import Database, ProtocolResult, Variant, carried_columns
from cta.formats.tables import load_wikisql_table
from cta.formats.wikisql import (
    WikiSqlDataset,
    load_wikisql,
    remap,
    to_sql,
    wikisql_schema,
    write_db,
    write_jsonl,
)
from cta.sql.database import (
    NewColumn,
    SchemaError,
    SqlTable,
    perturbed_rows,
    read_rows,
    sqlite_fold,
)
from cta.sql.examples import PerturbedExample, SqlExample
from cta.table import ColumnType, InvalidTableError

__all__ = ["WIKISQL", "WikiSqlFormat"]


def _index_map(table: SqlTable, new_columns: Sequence[NewColumn]) -> dict[int, int]:
    """Old column index → new index (ADD shifts the columns after an inserted one)."""
    return {table.index(c.source): j for j, c in enumerate(new_columns) if c.source is not None}


class WikiSqlFormat(FormatDriver):
    """The WikiSQL driver (:class:`~cta.datasets.base.DatasetFormat`): its logical form holds
    one table, columns by index (renamed, moved, dropped or added by an edit), no
    expressions, no table names and no keys (see docs/families.md).

    Writes per kind and seed (or ``augment``) ``<name>_….jsonl`` + ``<name>_….tables.jsonl``
    + ``<name>_….db`` (WikiSQL's evaluator layout), ``mappings.jsonl`` and, with
    ``check_execution``, ``verification.json``. Tables WikiSQL cannot hold as a table
    (duplicate headers…) are reported per question.
    """

    name = "wikisql"
    holds = frozenset({"database", "dropped-columns"})
    cannot_hold = (
        "WikiSQL's logical form (one table, columns by index, no expressions) cannot hold it"
    )

    def load(self, files: DatasetFiles) -> WikiSqlDataset:
        return load_wikisql(files.required_questions("WikiSQL"), files.tables)

    def perturb(self, dataset: WikiSqlDataset, request: DatasetRequest) -> DatasetRun:
        return _perturb(dataset, request)


WIKISQL = WikiSqlFormat()


def _perturb(dataset: WikiSqlDataset, request: DatasetRequest) -> DatasetRun:
    say, values, out = request.say, request.values, request.out_dir
    WIKISQL.check(request.kinds)
    seeds = request.seeds
    seconds: dict[str, float] = {}
    databases: dict[str, Database] = {}
    invalid: dict[str, str] = {}
    for table_id in sorted({r["table_id"] for r in dataset.records}):
        obj = dataset.tables[table_id]
        try:
            natural = load_wikisql_table(obj)
            schema = wikisql_schema(obj)
        except (InvalidTableError, SchemaError) as exc:
            invalid[table_id] = f"invalid_table: {exc}"
            continue
        rows = [tuple(r) for r in obj.get("rows", [])]
        databases[table_id] = Database(
            table_id, schema, [natural], rows={schema.tables[0].name: rows}
        )
    examples: list[SqlExample] = []
    skipped: list[tuple[str, str, str]] = []
    record_of: dict[str, dict[str, Any]] = {}
    for i, record in enumerate(dataset.records):
        ex_id = f"{dataset.name}:{i}"
        table_id = record["table_id"]
        if table_id in invalid:
            skipped.append((ex_id, table_id, invalid[table_id]))
            continue
        table = databases[table_id].schema.tables[0]
        try:
            sql = to_sql(record["sql"], table.name, [c.name for c in table.columns])
        except InvalidTableError as exc:
            skipped.append((ex_id, table_id, f"malformed_sql: {exc}"))
            continue
        examples.append(SqlExample(ex_id, table_id, sql))
        record_of[ex_id] = record
    say(f"protocol: {len(examples)} examples × {len(request.kinds)} kinds × {len(seeds)} seeds")
    bound = bind_examples(examples, databases)
    with tempfile.TemporaryDirectory(prefix="cta-wikisql-") as tmp:
        planned = databases
        if reads_databases(request.kinds):  # they plan on the written originals (their cells)
            written = materialise(
                ProtocolResult([], {}, bound), databases, Path(tmp) / "original", examples
            )
            planned = {k: dataclasses.replace(db, path=written[k]) for k, db in databases.items()}
        result = run_protocol(
            examples, planned, request.proposer, request.kinds, seeds, values,
            judge=request.judge, holds=WIKISQL.holds, bound=bound,
            questions={i: str(r.get("question", "")) for i, r in record_of.items()},
        )  # fmt: skip
        # The family variants' cells, migrated the way their databases are.
        family_rows = _family_rows(result, databases, examples, Path(tmp), values)
    seconds["protocol"] = round(result.seconds, 3)
    result.examples += [
        PerturbedExample.of(ex_id, table_id, kind, seed, sql=None, problem=problem)
        for ex_id, table_id, problem in skipped
        for kind in request.kinds
        for seed in seeds
    ]

    # The artefact is the remapped logical form; its SQL replaces the rewriter's text.
    t0 = time.perf_counter()
    forms: dict[tuple[str, str, int], dict[str, Any]] = {}
    new_tables: dict[str, dict[str, Any]] = {}
    for pe in result.examples:
        if pe.sql is None or pe.perturbed_db_id == pe.db_id:
            continue
        variant = result.variants[pe.perturbed_db_id]
        table = databases[pe.db_id].schema.tables[0]
        new_columns = _columns_of(variant)
        if new_columns is None:
            new_table = variant.edit.schema.tables[0]
            form = remap(record_of[pe.id]["sql"], _family_index_map(table, variant))
            pe.sql = to_sql(form, new_table.name, [c.name for c in new_table.columns])
            forms[(pe.id, pe.kind, pe.seed)] = form
            if variant.db_id not in new_tables:
                new_tables[variant.db_id] = _family_table(
                    dataset.tables[pe.db_id], variant, table, family_rows[variant.db_id]
                )
            continue
        form = remap(record_of[pe.id]["sql"], _index_map(table, new_columns))
        pe.sql = to_sql(form, table.name, [c.name for c in new_columns])
        forms[(pe.id, pe.kind, pe.seed)] = form
        if variant.db_id not in new_tables:
            new_tables[variant.db_id] = _wikisql_table(
                dataset.tables[pe.db_id],
                variant,
                table,
                new_columns,
                databases[pe.db_id].rows or {},
                values,
            )

    def original(ex: SqlExample) -> dict[str, Any]:
        return record_of[ex.id]

    def perturbed(pe: PerturbedExample) -> dict[str, Any]:
        record = dict(record_of[pe.id])
        if pe.perturbed_db_id != pe.db_id:
            record["table_id"] = pe.perturbed_db_id
            record["sql"] = forms[(pe.id, pe.kind, pe.seed)]
        if pe.question is not None:
            record["question"] = pe.question
        return record

    files: list[str] = []
    questions = question_files(dataset.name, examples, result, request, original, perturbed)
    for stem, question_rows in questions.items():
        ids = list(dict.fromkeys(r["table_id"] for r in question_rows))
        tables = [new_tables.get(t) or dataset.tables[t] for t in ids]
        write_jsonl(out / f"{stem}.jsonl", question_rows)
        write_jsonl(out / f"{stem}.tables.jsonl", tables)
        write_db(out / f"{stem}.db", tables)
        files += [f"{stem}.jsonl", f"{stem}.tables.jsonl", f"{stem}.db"]
    write_mappings(out, result.examples, files)
    seconds["write"] = round(time.perf_counter() - t0, 3)

    @contextmanager
    def materialised() -> Iterator[dict[str, Path]]:
        with tempfile.TemporaryDirectory(prefix="cta-wikisql-") as tmp:
            yield materialise(result, databases, tmp, examples, values=values)

    n = len(dataset.records)
    return finish_run(request, n, examples, result, files, seconds, materialised)


def _wikisql_table(
    obj: Mapping[str, Any],
    variant: Variant,
    table: SqlTable,
    new_columns: Sequence[NewColumn],
    rows: Mapping[str, list[tuple[Any, ...]]],
    values: ValueMode,
) -> dict[str, Any]:
    """The ``tables.jsonl`` object of a perturbed WikiSQL table (same keys as the original)."""
    columns = []
    for column in new_columns:
        i = table.index(column.source) if column.source is not None else None
        renamed = i is not None and sqlite_fold(column.name) != sqlite_fold(str(column.source))
        columns.append((i, column.name if renamed or i is None else None, column.type))
    rows_out = perturbed_rows(
        table, rows.get(table.name, []), new_columns, seed=variant.seed, values=values
    )
    return _table_object(obj, variant.db_id, columns, rows_out)


def _columns_of(variant: Variant) -> tuple[NewColumn, ...] | None:
    """The table's new columns when a column perturbation is the whole edit (RPL, ADD: its
    table written from them); None for an edit its origin and labels describe."""
    perturbation = variant.edit.by_columns
    if perturbation is None:
        return None
    [(_, new_columns)] = list(perturbation.tables.items())
    return new_columns


def _family_rows(
    result: ProtocolResult,
    databases: Mapping[str, Database],
    examples: Sequence[SqlExample],
    tmp: Path,
    values: ValueMode,
) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of every family variant's table, migrated (or, for an added column,
    generated) the way its database is written."""
    family = {k: v for k, v in result.variants.items() if v.edit.by_columns is None}
    if not family:
        return {}
    paths = materialise(
        ProtocolResult([], family, result.bound), databases, tmp / "edited", examples
    )
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for db_id, variant in family.items():
        rows[db_id] = read_rows(paths[db_id], variant.edit.schema.tables[0])
    return rows


def _family_index_map(table: SqlTable, variant: Variant) -> dict[int, int]:
    """Old column index → new index of the columns a family's edit carries over."""
    out: dict[int, int] = {}
    for j, i in carried_columns(variant.edit, table, variant.edit.schema.tables[0]).items():
        out.setdefault(i, j)
    return out


def _family_table(
    obj: Mapping[str, Any], variant: Variant, table: SqlTable, rows: list[tuple[Any, ...]]
) -> dict[str, Any]:
    """The ``tables.jsonl`` object of a table a family edited (same keys as the original):
    header in the edit's order, a renamed or added column under the name the edit gives it."""
    old_of = {j: i for i, j in _family_index_map(table, variant).items()}
    new = variant.edit.schema.tables[0]
    columns = []
    for j, column in enumerate(new.columns):
        label = variant.edit.labels.get((sqlite_fold(new.name), sqlite_fold(column.name)))
        i = old_of.get(j)
        columns.append((i, label or (column.name if i is None else None), column.type))
    return _table_object(obj, variant.db_id, columns, rows)


def _table_object(
    obj: Mapping[str, Any],
    table_id: str,
    columns: Sequence[tuple[int | None, str | None, ColumnType]],
    rows: Iterable[Sequence[Any]],
) -> dict[str, Any]:
    """A ``tables.jsonl`` object with the keys of ``obj``: per new column, the original
    column it carries (its index, or None for an added one), the name it now has (None: the
    original header as written) and its type; the rows in that order."""
    header = list(obj["header"])
    types = list(obj.get("types") or [])
    new_header, new_types = [], []
    for i, name, kind in columns:
        new_header.append(name if name is not None else header[i] if i is not None else "")
        if i is not None:
            new_types.append(types[i] if i < len(types) else "text")
        else:
            new_types.append("real" if kind is ColumnType.NUMBER else "text")
    out = dict(obj)
    out["id"] = table_id
    out["header"] = new_header
    if "types" in obj:
        out["types"] = new_types
    out["rows"] = [list(r) for r in rows]
    return out
