"""The WikiTableQuestions driver: CSV tables and TSV questions through the protocol.

WTQ questions come with answers, not SQL, so no column is known to be "mentioned":
every column of a table is a target, and all questions of a table share its perturbed
table ``csv/…/<n>_<kind>_s<seed>.csv`` (answers stay valid: RPL renames headers, ADD
inserts a column, no cell of the original columns changes).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from pydantic import BaseModel

from cta.apply.sample import sample_perturbations
from cta.datasets.base import (
    DatasetFiles,
    DatasetRequest,
    DatasetRun,
    FormatDriver,
    families_of,
    summarise,
    write_mappings,
)
from cta.families import family_spec
from cta.families.base import FamilyContext, NotApplicable, Usage
from cta.families.model import DbEdit, Variant, carried_columns, materialise_variant
from cta.formats.tables import normalise_name
from cta.formats.wtq import WtqDataset, load_wtq, write_csv, write_tsv
from cta.results import Kind
from cta.sql.database import (
    SchemaError,
    SqlColumn,
    SqlSchema,
    SqlTable,
    create_database,
    read_rows,
    sqlite_fold,
)
from cta.table import Column, Table

__all__ = ["WTQ", "WtqFamilyMapping", "WtqFormat", "WtqMapping"]


class WtqMapping(BaseModel):
    """One table under one perturbation (WTQ has no SQL: every column is a target)."""

    context: str
    kind: str
    seed: int
    perturbed_context: str
    mapping: dict[str, str]
    unperturbed: dict[str, str]


class WtqFamilyMapping(BaseModel):
    """One table (or, for ``question-synonym``, its questions) under one family and seed."""

    context: str
    kind: str
    seed: int
    perturbed_context: str
    operation: str | None = None
    unchanged: str | None = None


class WtqFormat(FormatDriver):
    """The WTQ driver (:class:`~cta.datasets.base.DatasetFormat`). Its answers are computed
    from the cells, so an edit may rename, move or add columns, or reword the question —
    never drop a column, change a cell, name a table or declare a key. WTQ has no SQL: the
    per-question kinds (RPL, ADD) are drawn per table over every column, and every other
    family is planned once per table.

    Writes the original and perturbed CSVs, per kind and seed (or ``augment``)
    ``<name>_….tsv`` and ``mappings.jsonl`` (one line per table × kind × seed). A family sees
    every column as used (a WTQ answer may come from any of them), so it never drops one.
    """

    name = "wtq"
    holds = frozenset({"database"})
    cannot_hold = "WTQ has no SQL, and its answers are computed from the cells"

    def load(self, files: DatasetFiles) -> WtqDataset:
        return load_wtq(files.tables, files.questions)

    def perturb(self, dataset: WtqDataset, request: DatasetRequest) -> DatasetRun:
        return _perturb(dataset, request)


WTQ = WtqFormat()


def _perturb(dataset: WtqDataset, request: DatasetRequest) -> DatasetRun:
    started = time.perf_counter()
    WTQ.check(request.kinds)
    kinds = [k for k in request.kinds if family_spec(k).scope == "question"]
    family_kinds = [k for k in request.kinds if k not in kinds]
    seeds, out = request.seeds, request.out_dir
    contexts = list(dataset.tables)
    request.say(f"proposer: {len(contexts)} tables")
    results = request.proposer([dataset.tables[c] for c in contexts]) if contexts else []
    if len(results) != len(contexts):
        raise ValueError(f"proposer returned {len(results)} results for {len(contexts)} tables")
    files: list[str] = []
    mappings: list[WtqMapping] = []
    moved: dict[tuple[str, str, int], str] = {}
    for context, proposal in zip(contexts, results, strict=True):
        table = dataset.tables[context]
        write_csv(out / context, table)
        files.append(context)
        for kind in kinds:
            for seed in seeds:
                [pt] = sample_perturbations(
                    table, proposal, cast(Kind, kind), 1, seed, values=request.values
                )
                target = context
                if pt.mapping:
                    target = f"{context.removesuffix('.csv')}_{kind}_s{seed}.csv"
                    write_csv(out / target, pt.table)
                    files.append(target)
                moved[(context, kind, seed)] = target
                mappings.append(
                    WtqMapping(
                        context=context,
                        kind=kind,
                        seed=seed,
                        perturbed_context=target,
                        mapping=dict(pt.mapping),
                        unperturbed=dict(pt.unperturbed),
                    )
                )
    questions: dict[tuple[str, str, int], str] = {}  # (question id, kind, seed) → new wording
    family_mappings: list[WtqFamilyMapping] = []
    if family_kinds:
        family_mappings = _families(dataset, request, family_kinds, moved, questions, files)

    def perturbed(record: dict[str, str], kind: str, seed: int) -> dict[str, str]:
        new = {**record, "context": moved[(record["context"], kind, seed)]}
        wording = questions.get((record["id"], kind, seed))
        if wording is not None:
            new["utterance"] = wording
        return new

    if dataset.records:
        groups: dict[str, list[dict[str, str]]] = {}
        for seed in seeds:
            if request.augment:
                rows = []
                for record in dataset.records:
                    rows.append(record)
                    for name in request.kinds:
                        rows.append(perturbed(record, name, seed))
                groups[f"{dataset.name}_augmented_s{seed}"] = rows
            else:
                for name in request.kinds:
                    groups[f"{dataset.name}_{name}_s{seed}"] = [
                        perturbed(r, name, seed) for r in dataset.records
                    ]
        for stem, rows in groups.items():
            write_tsv(out / f"{stem}.tsv", dataset.header, rows)
            files.append(f"{stem}.tsv")
    write_mappings(out, [*mappings, *family_mappings], files)
    changed = sum(1 for m in mappings if m.mapping)
    changed += sum(1 for m in family_mappings if m.unchanged is None)
    edited = changed - sum(
        1 for m in family_mappings if m.kind == "question-synonym" and not m.unchanged
    )
    entries = len(mappings) + len(family_mappings)
    counts = (entries, changed, 0, entries - changed, edited)
    seconds = {"total": round(time.perf_counter() - started, 3)}
    return summarise(out, len(dataset.records), counts, files, seconds)


def _families(
    dataset: WtqDataset,
    request: DatasetRequest,
    kinds: Sequence[str],
    moved: dict[tuple[str, str, int], str],
    questions: dict[tuple[str, str, int], str],
    files: list[str],
) -> list[WtqFamilyMapping]:
    """The request's families over every table and seed: edited tables written beside the
    originals (``<n>_<kind>_s<seed>.csv``, cells migrated as a database's are), reworded
    questions in ``questions``; one mapping per table × kind × seed."""
    families = families_of(kinds, request.proposer, request.judge)
    by_context: dict[str, list[dict[str, str]]] = {}
    for record in dataset.records:
        by_context.setdefault(record["context"], []).append(record)
    out: list[WtqFamilyMapping] = []
    with tempfile.TemporaryDirectory(prefix="cta-wtq-") as tmp:
        for n, (context, table) in enumerate(dataset.tables.items()):
            try:
                schema = SqlSchema(
                    (
                        SqlTable(
                            f"t{n}",
                            tuple(SqlColumn(normalise_name(c.name), c.type) for c in table.columns),
                        ),
                    )
                )
            except SchemaError as exc:
                schema, problem = None, f"not_applicable: the table cannot be a database ({exc})"
            source = Path(tmp) / "original" / str(n) / f"t{n}.sqlite"  # alone: no test suite
            if schema is not None:
                create_database(
                    source, schema, {schema.tables[0].name: [tuple(r) for r in table.rows]}
                )
                sql_table = schema.tables[0]
                keys = frozenset(
                    (sqlite_fold(sql_table.name), sqlite_fold(c.name)) for c in sql_table.columns
                )
                ctx = FamilyContext(
                    db_id=context,
                    schema=schema,
                    tables=[table],
                    entry=None,
                    usage=Usage(keys, frozenset({sqlite_fold(sql_table.name)}), frozenset()),
                    queries=[],
                    path=source,
                )
            for kind, family in families.items():
                for seed in request.seeds:
                    moved[(context, kind, seed)] = context
                    item = WtqFamilyMapping(
                        context=context, kind=kind, seed=seed, perturbed_context=context
                    )
                    if schema is None:
                        out.append(item.model_copy(update={"unchanged": problem}))
                        continue
                    try:
                        edit = family.plan(ctx, seed)
                    except NotApplicable as exc:
                        out.append(item.model_copy(update={"unchanged": f"not_applicable: {exc}"}))
                        continue
                    if edit.question is not None:
                        reworded = 0
                        for record in by_context.get(context, []):
                            new = edit.question(record["utterance"])
                            if new is not None:
                                questions[(record["id"], kind, seed)] = new
                                reworded += 1
                        update = {
                            "operation": f"{edit.operation} ({reworded} of {len(by_context.get(context, []))} questions)"
                        }
                        if not reworded:
                            update = {"unchanged": "no schema word of a question has a synonym"}
                        out.append(item.model_copy(update=update))
                        continue
                    target = f"{context.removesuffix('.csv')}_{kind}_s{seed}.csv"
                    variant = Variant(target, context, kind, seed, edit)
                    written = Path(tmp) / "edited" / f"{kind}_s{seed}_{n}.sqlite"
                    materialise_variant(variant, source, written, schema, values=request.values)
                    write_csv(request.out_dir / target, _edited_table(table, schema, edit, written))
                    files.append(target)
                    moved[(context, kind, seed)] = target
                    out.append(
                        item.model_copy(
                            update={"perturbed_context": target, "operation": edit.operation}
                        )
                    )
    return out


def _edited_table(table: Table, schema: SqlSchema, edit: DbEdit, written: Path) -> Table:
    """The natural table of an edited database: columns in the edit's order, each under the
    name the edit gives it (or its own), cells as the written database holds them."""
    old = schema.tables[0]
    new = edit.schema.tables[0]
    carried = carried_columns(edit, old, new)
    columns = []
    for j, column in enumerate(new.columns):
        natural = table.columns[carried[j]] if j in carried else None
        label = edit.labels.get((sqlite_fold(new.name), sqlite_fold(column.name)))
        name = label or (natural.name if natural is not None else column.name)
        columns.append(Column(name=name, type=natural.type if natural is not None else column.type))
    rows = [list(r) for r in read_rows(written, new)]
    return table.model_copy(update={"columns": columns, "rows": rows, "target_columns": None})
