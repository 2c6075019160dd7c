"""The ADVETA protocol over a text-to-SQL dataset (METHOD.md §4).

For every NL–SQL pair, every kind (RPL, ADD) and every seed, the tables of its database
are perturbed: every column its gold SQL mentions gets a randomly chosen candidate of the
pipeline (:func:`cta.apply.sample.sample_perturbations`); the gold SQL is rewritten
(:func:`cta.apply.rewrite.rewrite_query`); the perturbed database is materialised and,
on request, every rewritten query is executed against it and compared with the original
query on the original database (:mod:`cta.apply.verify`).

Perturbed databases. Different questions of one database mention different columns, so
a faithful protocol needs one perturbed database per *distinct perturbation* rather than
one per database and seed. Because candidates are drawn per column (the same column gets
the same candidate under the same seed, whichever question asks), questions that mention
the same columns share one perturbed database: ``<db_id>_<kind>_s<seed>_v<n>``, ``n``
counting the distinct perturbations of that database, kind and seed in question order. A
question whose SQL mentions no column (``SELECT count(*) FROM t``) keeps the original
database. The proposer is called once, with every table whose columns some question
mentions (``Table.target_columns`` = those columns).

The protocol core is format-neutral (:func:`run_protocol` over :class:`SqlExample` and
:class:`Database`); :func:`perturb_spider` drives it for Spider files.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from cta.apply.database import (
    ColumnRef,
    NewColumn,
    SchemaError,
    SchemaPerturbation,
    SqlSchema,
    SqlTable,
    create_database,
    materialise_perturbed,
    perturb_schema,
    perturbed_rows,
    sqlite_fold,
    synthesise_rows,
)
from cta.apply.examples import PerturbedExample, SqlExample
from cta.apply.rewrite import BoundQuery, SqlRewriteError, bind_query, rewrite_query
from cta.apply.sample import ValueMode, sample_perturbations
from cta.apply.verify import (
    ExecutionError,
    Status,
    Verification,
    check,
    execute,
    has_top_level_order,
)
from cta.families import entry_of, make_families, materialise_edit
from cta.families.naming import EquivalenceJudge
from cta.families.run import FamilyDatabase, FamilyResult, run_families
from cta.results import Kind, PerturbationResult, PerturbedTable
from cta.table import ColumnType, InvalidTableError, Table

__all__ = [
    "Database",
    "DatasetFormat",
    "DatasetRun",
    "PerturbedExample",
    "ProtocolResult",
    "Proposer",
    "SpiderDatabaseResult",
    "SqlExample",
    "Variant",
    "VerificationRecord",
    "VerificationReport",
    "materialise",
    "perturb_dataset",
    "perturb_spider",
    "perturb_spider_database",
    "perturb_wikisql",
    "perturb_wtq",
    "run_protocol",
    "spider_inputs",
    "verify",
]

Proposer = Callable[[Sequence[Table]], list[PerturbationResult]]
"""Judged candidates for tables (the CTA pipeline's ``perturb_many``, or a stand-in)."""


@dataclass
class Database:
    """A database of the dataset: schema, natural tables aligned with it, optional file."""

    db_id: str
    schema: SqlSchema
    tables: list[Table]
    path: Path | None = None
    rows: dict[str, list[tuple[Any, ...]]] | None = None  # cells by table, when no file

    def __post_init__(self) -> None:
        if len(self.tables) != len(self.schema.tables):
            raise ValueError(
                f"{self.db_id}: {len(self.tables)} tables for a schema of {len(self.schema.tables)}"
            )


@dataclass
class Variant:
    """A perturbed database: which database, kind and seed, and how it differs."""

    db_id: str
    source: str
    kind: str
    seed: int
    perturbation: SchemaPerturbation
    schema: SqlSchema


@dataclass
class ProtocolResult:
    """Everything :func:`run_protocol` produced, in example order."""

    examples: list[PerturbedExample]
    variants: dict[str, Variant]
    bound: dict[str, BoundQuery | SqlRewriteError]
    seconds: float = 0.0


# -- the protocol -----------------------------------------------------------------------------------
def _new_columns(
    original: Table, perturbed: PerturbedTable, schema_columns: Sequence[Any]
) -> tuple[NewColumn, ...]:
    """The perturbed table as :class:`NewColumn` entries over the original identifiers."""
    ids = [c.original_name or c.name for c in original.columns]
    types = [c.type for c in schema_columns]
    out: list[NewColumn] = []
    if perturbed.kind == "rpl":
        for old_id, col_type, new in zip(ids, types, perturbed.table.columns, strict=True):
            out.append(
                NewColumn(
                    name=new.original_name or new.name, type=col_type, source=old_id, label=new.name
                )
            )
        return tuple(out)
    j = 0
    for new in perturbed.table.columns:
        if j < len(original.columns) and new == original.columns[j]:
            out.append(NewColumn(name=ids[j], type=types[j], source=ids[j], label=new.name))
            j += 1
        else:
            out.append(
                NewColumn(
                    name=new.original_name or new.name,
                    type=new.type,
                    source=None,
                    template=ids[j - 1],
                    label=new.name,
                )
            )
    return tuple(out)


def _targets(
    databases: Mapping[str, Database],
    bound: Mapping[str, BoundQuery | SqlRewriteError],
    examples: Sequence[SqlExample],
) -> dict[tuple[str, int], list[str]]:
    """Per (db, table index): identifiers of the columns some gold SQL mentions, table order."""
    mentioned: dict[tuple[str, int], set[str]] = {}
    for ex in examples:
        b = bound[ex.id]
        if isinstance(b, BoundQuery):
            db = databases[ex.db_id]
            for ref in b.columns:
                t = _table_index(db, ref.table)
                mentioned.setdefault((ex.db_id, t), set()).add(sqlite_fold(ref.column))
    out: dict[tuple[str, int], list[str]] = {}
    for (db_id, t), names in mentioned.items():
        table = databases[db_id].schema.tables[t]
        out[(db_id, t)] = [c.name for c in table.columns if sqlite_fold(c.name) in names]
    return dict(sorted(out.items()))


def _table_index(db: Database, name: str) -> int:
    key = sqlite_fold(name)
    for i, table in enumerate(db.schema.tables):
        if sqlite_fold(table.name) == key:
            return i
    raise KeyError(name)


@dataclass
class _Sampled:
    """The perturbation of one example's tables under one kind and seed."""

    changes: dict[str, tuple[NewColumn, ...]]
    mapping: dict[str, dict[str, str]]
    sql_mapping: dict[str, dict[str, str]]
    unperturbed: dict[str, dict[str, str]]


def _sample_tables(
    bound: BoundQuery,
    db: Database,
    request_of: Mapping[tuple[str, int], Table],
    result_of: Mapping[tuple[str, int], PerturbationResult],
    kind: Kind,
    seed: int,
    values: ValueMode,
) -> _Sampled:
    """Perturb every table the query mentions: each of its mentioned columns once."""
    sampled = _Sampled({}, {}, {}, {})
    for t, table in enumerate(db.schema.tables):
        mentioned = [
            r.column for r in bound.columns if sqlite_fold(r.table) == sqlite_fold(table.name)
        ]
        if not mentioned:
            continue
        natural_table = request_of[(db.db_id, t)]
        columns = [natural_table.column(c).name for c in mentioned]
        [pt] = sample_perturbations(
            natural_table, result_of[(db.db_id, t)], kind, 1, seed, columns=columns, values=values
        )
        if pt.unperturbed:
            sampled.unperturbed[table.name] = dict(pt.unperturbed)
        if not pt.mapping:
            continue
        new_columns = _new_columns(natural_table, pt, table.columns)
        sampled.changes[table.name] = new_columns
        sampled.mapping[table.name] = dict(pt.mapping)
        sampled.sql_mapping[table.name] = _sql_mapping(natural_table, pt, new_columns)
    return sampled


def run_protocol(
    examples: Sequence[SqlExample],
    databases: Mapping[str, Database],
    proposer: Proposer,
    kinds: Sequence[Kind] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    values: ValueMode = "generate",
) -> ProtocolResult:
    """Perturb every example once per kind and seed (see the module docstring)."""
    started = time.perf_counter()
    ids = [ex.id for ex in examples]
    if len(set(ids)) != len(ids):
        raise ValueError("example ids must be unique")
    bound: dict[str, BoundQuery | SqlRewriteError] = {}
    cache: dict[tuple[str, str], BoundQuery | SqlRewriteError] = {}
    for ex in examples:
        key = (ex.db_id, ex.sql)
        if key not in cache:
            try:
                cache[key] = bind_query(ex.sql, databases[ex.db_id].schema)
            except SqlRewriteError as exc:
                cache[key] = exc
        bound[ex.id] = cache[key]

    # One proposer call over every table a gold SQL touches, targets = mentioned columns.
    targets = _targets(databases, bound, examples)
    requests: list[Table] = []
    for (db_id, t), identifiers in targets.items():
        source_table = databases[db_id].tables[t]
        natural = [source_table.column(i).name for i in identifiers]
        requests.append(source_table.model_copy(update={"target_columns": natural}))
    results = proposer(requests) if requests and kinds else []
    if not kinds:
        requests, targets = [], {}
    if len(results) != len(requests):
        raise ValueError(f"proposer returned {len(results)} results for {len(requests)} tables")
    result_of = dict(zip(targets, results, strict=True))
    request_of = dict(zip(targets, requests, strict=True))

    variants: dict[str, Variant] = {}
    variant_of: dict[tuple[Any, ...], str] = {}
    counts: Counter[tuple[str, str, int]] = Counter()
    column_maps: dict[str, dict[ColumnRef, str]] = {}
    out: list[PerturbedExample] = []
    for ex in examples:
        b = bound[ex.id]
        db = databases[ex.db_id]
        for kind in kinds:
            for seed in seeds:
                if isinstance(b, SqlRewriteError):
                    out.append(
                        PerturbedExample(
                            id=ex.id,
                            kind=kind,
                            seed=seed,
                            db_id=ex.db_id,
                            perturbed_db_id=ex.db_id,
                            sql=None,
                            problem=str(b),
                        )
                    )
                    continue
                sampled = _sample_tables(b, db, request_of, result_of, kind, seed, values)
                if not sampled.changes:
                    out.append(
                        PerturbedExample(
                            id=ex.id,
                            kind=kind,
                            seed=seed,
                            db_id=ex.db_id,
                            perturbed_db_id=ex.db_id,
                            sql=ex.sql,
                            unperturbed=sampled.unperturbed,
                        )
                    )
                    continue
                signature = (ex.db_id, kind, seed, tuple(sorted(sampled.changes.items())))
                variant_id = variant_of.get(signature)
                if variant_id is None:
                    n = counts[(ex.db_id, kind, seed)]
                    counts[(ex.db_id, kind, seed)] += 1
                    variant_id = f"{ex.db_id}_{kind}_s{seed}_v{n}"
                    perturbation = SchemaPerturbation(sampled.changes)
                    variants[variant_id] = Variant(
                        db_id=variant_id,
                        source=ex.db_id,
                        kind=kind,
                        seed=seed,
                        perturbation=perturbation,
                        schema=perturb_schema(db.schema, perturbation),
                    )
                    column_maps[variant_id] = perturbation.column_map(db.schema)
                    variant_of[signature] = variant_id
                variant = variants[variant_id]
                try:
                    sql: str | None = rewrite_query(
                        ex.sql, db.schema, variant.schema, column_maps[variant_id]
                    )
                    problem = None
                except SqlRewriteError as exc:
                    sql, problem = None, str(exc)
                out.append(
                    PerturbedExample(
                        id=ex.id,
                        kind=kind,
                        seed=seed,
                        db_id=ex.db_id,
                        perturbed_db_id=variant_id,
                        sql=sql,
                        problem=problem,
                        mapping=sampled.mapping,
                        sql_mapping=sampled.sql_mapping,
                        unperturbed=sampled.unperturbed,
                    )
                )
    return ProtocolResult(out, variants, bound, seconds=time.perf_counter() - started)


def _sql_mapping(
    original: Table, perturbed: PerturbedTable, new_columns: Sequence[NewColumn]
) -> dict[str, str]:
    """The mapping between SQL identifiers (RPL: old → new; ADD: target → added)."""
    if perturbed.kind == "rpl":
        return {
            c.source: c.name for c in new_columns if c.source is not None and c.name != c.source
        }
    return {c.template: c.name for c in new_columns if c.source is None and c.template}


# -- databases -------------------------------------------------------------------------------------
def materialise(
    result: ProtocolResult,
    databases: Mapping[str, Database],
    db_dir: str | Path,
    examples: Sequence[SqlExample] = (),
    synthesis_seed: int = 0,
    values: ValueMode = "generate",
) -> dict[str, Path]:
    """Write every database the result needs under ``db_dir`` (Spider layout); their paths.

    Originals are copied when the dataset ships a file, written from ``Database.rows``
    when it ships cells, else synthesised from the schema (seeded by ``synthesis_seed``,
    literal pools and join links from ``examples``' SQL).
    """
    db_dir = Path(db_dir)
    needed = sorted({v.source for v in result.variants.values()} | {e.db_id for e in examples})
    pools: dict[str, dict[ColumnRef, list[Any]]] = {d: {} for d in needed}
    links: dict[str, list[tuple[ColumnRef, ColumnRef]]] = {d: [] for d in needed}
    for ex in examples:
        b = result.bound.get(ex.id)
        if isinstance(b, BoundQuery) and ex.db_id in pools:
            for ref, vals in b.literals.items():
                pools[ex.db_id].setdefault(ref, []).extend(vals)
            links[ex.db_id].extend(b.links)
    paths: dict[str, Path] = {}
    for db_id in needed:
        db = databases[db_id]
        target = db_dir / db_id / f"{db_id}.sqlite"
        if db.path is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            if db.path.resolve() != target.resolve():
                shutil.copyfile(db.path, target)
        elif db.rows is not None:
            create_database(target, db.schema, db.rows)
        else:
            rows = synthesise_rows(db.schema, synthesis_seed, pools[db_id], links[db_id])
            create_database(target, db.schema, rows)
        paths[db_id] = target
    for variant in result.variants.values():
        target = db_dir / variant.db_id / f"{variant.db_id}.sqlite"
        materialise_perturbed(
            paths[variant.source],
            target,
            databases[variant.source].schema,
            variant.perturbation,
            seed=variant.seed,
            values=values,
        )
        paths[variant.db_id] = target
    return paths


# -- verification ---------------------------------------------------------------------------------
class VerificationRecord(BaseModel):
    """The execution check of one example under one perturbation."""

    id: str
    kind: str
    seed: int
    db_id: str
    perturbed_db_id: str
    status: Status
    reason: str = ""
    rows: int = 0


class VerificationReport(BaseModel):
    """Every check, and the shares the issue asks for."""

    checks: int
    by_status: dict[str, int]
    by_kind: dict[str, dict[str, int]]
    executable: int = Field(description="Checks whose original query SQLite executes")
    equivalent: int = Field(description="… of which rewritten and execution-equivalent")
    equivalent_share: float
    equivalent_up_to_ties: int = Field(
        description="… of which only equal once rows tied on the ORDER BY keys may swap"
    )
    nonempty_share: float = Field(description="Share of executable checks with a non-empty result")
    records: list[VerificationRecord]


def verify(
    result: ProtocolResult,
    examples: Sequence[SqlExample],
    paths: Mapping[str, Path],
    timeout: float = 30.0,
) -> VerificationReport:
    """Execute every original and rewritten query and compare (see :mod:`cta.apply.verify`)."""
    by_id = {ex.id: ex for ex in examples}
    expected: dict[str, tuple[list[tuple[Any, ...]] | ExecutionError, bool]] = {}
    records: list[VerificationRecord] = []
    for pe in result.examples:
        ex = by_id[pe.id]
        if pe.id not in expected:
            try:
                rows: list[tuple[Any, ...]] | ExecutionError = execute(
                    paths[ex.db_id], ex.sql, timeout
                )
            except ExecutionError as exc:
                rows = exc
            expected[pe.id] = (rows, has_top_level_order(ex.sql))
        rows_or_error, ordered = expected[pe.id]
        outcome: Verification = check(
            rows_or_error,
            ordered,
            paths.get(pe.perturbed_db_id),
            pe.sql,
            pe.problem,
            timeout,
            original=(paths[ex.db_id], ex.sql),
        )
        records.append(
            VerificationRecord(
                id=pe.id,
                kind=pe.kind,
                seed=pe.seed,
                db_id=pe.db_id,
                perturbed_db_id=pe.perturbed_db_id,
                status=outcome.status,
                reason=outcome.reason,
                rows=outcome.rows,
            )
        )
    return _report(records)


def _report(records: Sequence[VerificationRecord]) -> VerificationReport:
    by_status = Counter(r.status for r in records)
    by_kind: dict[str, Counter[str]] = {}
    for r in records:
        by_kind.setdefault(r.kind, Counter())[r.status] += 1
    executable = [r for r in records if r.status != "original_error"]
    ok = sum(1 for r in executable if r.status == "ok")
    nonempty = sum(1 for r in executable if r.rows > 0)
    return VerificationReport(
        checks=len(records),
        by_status=dict(sorted(by_status.items())),
        by_kind={k: dict(sorted(v.items())) for k, v in sorted(by_kind.items())},
        executable=len(executable),
        equivalent=ok,
        equivalent_share=round(ok / len(executable), 6) if executable else 0.0,
        equivalent_up_to_ties=sum(1 for r in executable if r.status == "ok" and r.reason),
        nonempty_share=round(nonempty / len(executable), 6) if executable else 0.0,
        records=list(records),
    )


# -- Spider -----------------------------------------------------------------------------------------
def spider_inputs(dataset: Any) -> tuple[list[SqlExample], dict[str, Database]]:
    """Examples and databases of a :class:`~cta.formats.spider.SpiderDataset`."""
    from cta.formats.spider import natural_tables, spider_schema

    examples = [
        SqlExample(id=f"{dataset.name}:{i}", db_id=r["db_id"], sql=r["query"])
        for i, r in enumerate(dataset.records)
    ]
    databases: dict[str, Database] = {}
    for db_id in sorted({ex.db_id for ex in examples}):
        entry = dataset.schemas[db_id]
        databases[db_id] = Database(
            db_id=db_id,
            schema=spider_schema(entry),
            tables=natural_tables(entry),
            path=dataset.database(db_id),
        )
    return examples, databases


class DatasetRun(BaseModel):
    """What a ``perturb_*`` driver wrote and measured."""

    out_dir: str
    examples: int
    perturbed: int = Field(description="Example × kind × seed entries")
    rewritten: int
    not_rewritten: int
    unchanged: int = Field(description="Entries whose SQL mentions no column (original table)")
    variants: int = Field(description="Perturbed databases / tables written")
    files: list[str]
    seconds: dict[str, float]
    verification: dict[str, Any] | None = None


def _run_summary(
    out: Path,
    n_examples: int,
    result: ProtocolResult,
    files: list[str],
    seconds: dict[str, float],
    verification: dict[str, Any] | None,
) -> DatasetRun:
    return DatasetRun(
        out_dir=str(out),
        examples=n_examples,
        perturbed=len(result.examples),
        rewritten=sum(1 for pe in result.examples if pe.sql is not None),
        not_rewritten=sum(1 for pe in result.examples if pe.sql is None),
        unchanged=sum(1 for pe in result.examples if pe.perturbed_db_id == pe.db_id),
        variants=len(result.variants),
        files=files,
        seconds=seconds,
        verification=verification,
    )


def _verify_into(
    out: Path,
    result: ProtocolResult,
    examples: Sequence[SqlExample],
    paths: Mapping[str, Path],
    seconds: dict[str, float],
    files: list[str],
) -> dict[str, Any]:
    """Run :func:`verify`, write ``verification.json``; the summary with its problems."""
    t0 = time.perf_counter()
    report = verify(result, examples, paths)
    seconds["verify"] = round(time.perf_counter() - t0, 3)
    (out / "verification.json").write_text(report.model_dump_json(indent=1) + "\n")
    files.append("verification.json")
    summary = report.model_dump(exclude={"records"})
    summary["problems"] = [r.model_dump() for r in report.records if r.status != "ok"]
    return summary


def _per_kind_seed(
    result: ProtocolResult,
) -> dict[tuple[str, int], dict[str, PerturbedExample]]:
    grouped: dict[tuple[str, int], dict[str, PerturbedExample]] = {}
    for pe in result.examples:
        grouped.setdefault((pe.kind, pe.seed), {})[pe.id] = pe
    return grouped


def _question_files(
    name: str,
    examples: Sequence[SqlExample],
    result: ProtocolResult,
    kinds: Sequence[str],
    seeds: Sequence[int],
    augment: bool,
    original: Callable[[SqlExample], dict[str, Any]],
    perturbed: Callable[[PerturbedExample], dict[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Question files by name: per kind and seed, or (``augment``) original+RPL+ADD per seed.

    Entries that could not be rewritten are left out (they are listed in mappings.jsonl).
    """
    grouped = _per_kind_seed(result)
    files: dict[str, list[dict[str, Any]]] = {}
    if augment:
        for seed in seeds:
            rows: list[dict[str, Any]] = []
            for ex in examples:
                rows.append(original(ex))
                for kind in kinds:
                    found = grouped.get((kind, seed), {}).get(ex.id)
                    if found is not None and found.sql is not None:
                        rows.append(perturbed(found))
            files[f"{name}_augmented_s{seed}"] = rows
        return files
    for kind in kinds:
        for seed in seeds:
            entries = grouped.get((kind, seed), {})
            files[f"{name}_{kind}_s{seed}"] = [
                perturbed(entries[ex.id])
                for ex in examples
                if ex.id in entries and entries[ex.id].sql is not None
            ]
    return files


def perturb_spider(
    dataset: Any,
    proposer: Proposer,
    out_dir: str | Path,
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    *,
    augment: bool = False,
    check_execution: bool = False,
    values: ValueMode = "generate",
    synthesis_seed: int = 0,
    progress: Callable[[str], None] | None = None,
    judge: EquivalenceJudge | None = None,
) -> DatasetRun:
    """The ADVETA protocol and the other families over a Spider dataset, into ``out_dir``.

    ``kinds``: ``rpl``/``add`` (CTA) and any family of :mod:`cta.families` (``judge`` is the
    judge's equivalence rule, needed by ``abbreviation``). Writes ``tables.json`` (original
    and perturbed entries), ``database/<db_id>/…sqlite`` (originals copied or synthesised,
    perturbed ones materialised — data migrated), per kind and seed
    ``<name>_<kind>_s<seed>.json`` (with ``augment``: ``<name>_augmented_s<seed>.json`` —
    original, RPL and ADD record per pair), ``<name>_original.json`` (the input questions),
    ``mappings.jsonl`` (every example × kind × seed: mapping or operation, rewritten SQL,
    problem or why it is unchanged) and, with ``check_execution``, ``verification.json``.
    Examples whose SQL could not be rewritten are left out of the CTA question files and
    listed in ``mappings.jsonl``; a family keeps them with their original SQL.
    """
    from cta.formats.spider import write_json

    say = progress or (lambda _: None)
    out = Path(out_dir)
    seconds: dict[str, float] = {}
    cta_kinds = [cast(Kind, k) for k in kinds if k in ("rpl", "add")]
    family_kinds = [k for k in kinds if k not in ("rpl", "add")]
    examples, databases = spider_inputs(dataset)
    say(f"protocol: {len(examples)} examples × {len(kinds)} kinds × {len(seeds)} seeds")
    result = run_protocol(examples, databases, proposer, cta_kinds, seeds, values)
    seconds["protocol"] = round(result.seconds, 3)

    t0 = time.perf_counter()
    say(f"databases: {len(databases)} originals, {len(result.variants)} perturbed")
    paths = materialise(result, databases, out / "database", examples, synthesis_seed, values)
    seconds["databases"] = round(time.perf_counter() - t0, 3)

    record_of = {ex.id: dataset.records[i] for i, ex in enumerate(examples)}
    records = _SpiderRecords(record_of, {ex.id: i for i, ex in enumerate(examples)})
    records.add_protocol(dataset.schemas, result)
    if family_kinds:
        t0 = time.perf_counter()
        families = _run_family_kinds(
            family_kinds,
            examples,
            databases,
            dataset.schemas,
            paths,
            result,
            proposer,
            judge,
            seeds,
            {i: _question_text(r) for i, r in record_of.items()},
        )
        say(f"families: {len(families.variants)} databases edited")
        for variant in families.variants.values():
            target = out / "database" / variant.db_id / f"{variant.db_id}.sqlite"
            materialise_edit(
                paths[variant.source],
                target,
                variant.edit,
                databases[variant.source].schema,
                seed=variant.seed,
                values=values,
            )
            paths[variant.db_id] = target
        seconds["families"] = round(time.perf_counter() - t0, 3)
        records.add_families(dataset.schemas, families)
        result = ProtocolResult(
            result.examples + families.examples, result.variants, result.bound, result.seconds
        )

    t0 = time.perf_counter()
    entries = [dataset.schemas[d] for d in databases] + records.entries
    files = ["tables.json"]
    write_json(out / "tables.json", entries)

    def original(ex: SqlExample) -> dict[str, Any]:
        return tagged(record_of[ex.id], "original", None, records.index_of[ex.id])

    questions = _question_files(
        dataset.name, examples, result, kinds, seeds, augment, original, records.perturbed
    )
    questions[f"{dataset.name}_original"] = [original(ex) for ex in examples]
    for stem, rows in questions.items():
        write_json(out / f"{stem}.json", rows)
        files.append(f"{stem}.json")
    _write_jsonl(out / "mappings.jsonl", (pe.model_dump_json() for pe in result.examples))
    files.append("mappings.jsonl")
    seconds["write"] = round(time.perf_counter() - t0, 3)

    verification = None
    if check_execution:
        say(f"verify: {len(result.examples)} checks")
        verification = _verify_into(out, result, examples, paths, seconds, files)
    return _run_summary(out, len(examples), result, files, seconds, verification)


class _SpiderRecords:
    """Perturbed Spider entries and question records, for CTA variants and family edits."""

    def __init__(self, record_of: Mapping[str, Mapping[str, Any]], index_of: Mapping[str, int]):
        self.record_of = record_of
        self.index_of = index_of
        self.entries: list[dict[str, Any]] = []
        self.index_maps: dict[str, dict[int, int]] = {}
        self.table_maps: dict[str, dict[int, int]] = {}
        self.drops_parsed: set[str] = set()

    def add_protocol(
        self, schemas: Mapping[str, Mapping[str, Any]], result: ProtocolResult
    ) -> None:
        entries, index_maps = _perturbed_entries(schemas, result)
        self.entries += entries
        self.index_maps.update(index_maps)

    def add_families(self, schemas: Mapping[str, Mapping[str, Any]], result: FamilyResult) -> None:
        for variant in result.variants.values():
            entry, index_map, table_map = entry_of(
                schemas[variant.source], variant.db_id, variant.edit
            )
            self.entries.append(entry)
            self.index_maps[variant.db_id] = index_map
            self.table_maps[variant.db_id] = table_map
            if not variant.edit.keeps_parsed_sql:
                self.drops_parsed.add(variant.db_id)

    def perturbed(self, pe: PerturbedExample) -> dict[str, Any]:
        """The question record of one perturbed item, tagged with kind, seed and source."""
        from cta.formats.spider import perturbed_record, remap_tables

        assert pe.sql is not None
        target = pe.perturbed_db_id
        record = perturbed_record(
            self.record_of[pe.id], target, pe.sql, self.index_maps.get(target)
        )
        if target in self.table_maps and isinstance(record.get("sql"), dict):
            record["sql"] = remap_tables(record["sql"], self.table_maps[target])
        if target in self.drops_parsed:
            record.pop("sql", None)  # Spider's parsed form cannot follow this edit
        if pe.question is not None:
            _set_question(record, pe.question)
        return tagged(record, pe.kind, pe.seed, self.index_of[pe.id])


_QUESTION_KEYS = ("question", "SpiderQuestion", "SpiderSynQuestion")
"""Where a Spider record holds its question: Spider's key, then Spider-Syn's original one
(its hand-written synonym version last)."""


def _question_text(record: Mapping[str, Any]) -> str:
    for key in _QUESTION_KEYS:
        if isinstance(record.get(key), str):
            return str(record[key])
    return ""


def _set_question(record: dict[str, Any], question: str) -> None:
    """Put a rewritten question where :func:`_question_text` read it (tokens too)."""
    for key in _QUESTION_KEYS:
        if isinstance(record.get(key), str):
            record[key] = question
            break
    if "question_toks" in record:
        record["question_toks"] = re.findall(r"\w+|[^\w\s]", question)


def _run_family_kinds(
    kinds: Sequence[str],
    examples: Sequence[SqlExample],
    databases: Mapping[str, Database],
    entries: Mapping[str, Mapping[str, Any]],
    paths: Mapping[str, Path],
    result: ProtocolResult,
    proposer: Proposer,
    judge: EquivalenceJudge | None,
    seeds: Sequence[int],
    questions: Mapping[str, str],
) -> FamilyResult:
    """The families of ``kinds`` over the examples, planned on the written originals."""
    if "abbreviation" in kinds and judge is None:
        raise InvalidTableError("missing_judge", "the abbreviation family needs the judge")

    def no_judge(pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        raise InvalidTableError("missing_judge", "this family needs the judge")

    families = make_families(kinds, proposer, judge or no_judge)
    dbs = {
        db_id: FamilyDatabase(db_id, db.schema, db.tables, entries.get(db_id), paths.get(db_id))
        for db_id, db in databases.items()
    }
    return run_families(examples, dbs, result.bound, families, seeds, questions)


def tagged(
    record: Mapping[str, Any], kind: str, seed: int | None, source_index: int
) -> dict[str, Any]:
    """A question record with where it comes from: ``kind`` (``original`` for the input),
    ``seed`` (None for the input) and ``source_index`` (its position in the input file)."""
    return {**record, "kind": kind, "seed": seed, "source_index": source_index}


def _perturbed_entries(
    schemas: Mapping[str, Mapping[str, Any]], result: ProtocolResult
) -> tuple[list[dict[str, Any]], dict[str, dict[int, int]]]:
    """The ``tables.json`` entry of every perturbed database, and its old→new column indices."""
    from cta.formats.spider import perturbed_entry

    entries: list[dict[str, Any]] = []
    index_maps: dict[str, dict[int, int]] = {}
    for variant in result.variants.values():
        entry, index_map = perturbed_entry(
            schemas[variant.source], variant.db_id, variant.perturbation
        )
        entries.append(entry)
        index_maps[variant.db_id] = index_map
    return entries, index_maps


class SpiderDatabaseResult(BaseModel):
    """One Spider database through the protocol, in memory: what a service dataset job returns.

    The same content :func:`perturb_spider` writes to files, for one database and without the
    SQLite files: the perturbed ``tables.json`` entries, the rewritten question records per
    kind and seed, and every example × kind × seed mapping (with the problem when its SQL
    could not be rewritten).
    """

    db_id: str
    tables: list[dict[str, Any]] = Field(
        description="tables.json entries of the perturbed databases (db_id suffixed)"
    )
    questions: dict[str, list[dict[str, Any]]] = Field(
        description="Rewritten question records by '<kind>_s<seed>', in input order"
    )
    mappings: list[PerturbedExample] = Field(
        description="Every record × kind × seed: mapping applied, rewritten SQL or problem"
    )


def perturb_spider_database(
    entry: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    proposer: Proposer,
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    values: ValueMode = "generate",
    judge: EquivalenceJudge | None = None,
) -> SpiderDatabaseResult:
    """The protocol (and the families of ``kinds``) over one Spider database entry and its
    question records (each needs a string ``query``); example ids are
    ``<db_id>:<position in records>``. Families that read cells plan on a database
    synthesised the way the CLI synthesises one (in a temporary folder).

    Raises :class:`~cta.table.InvalidTableError` for an entry or record that cannot be read.
    """
    from cta.formats.spider import natural_tables, spider_schema

    db_id = entry.get("db_id")
    if not isinstance(db_id, str) or not db_id:
        raise InvalidTableError("invalid_spider", "a Spider entry needs a string db_id")
    for i, record in enumerate(records):
        if not isinstance(record.get("query"), str):
            raise InvalidTableError(
                "invalid_record", f"{db_id}: question record {i} has no string 'query'"
            )
    database = Database(db_id=db_id, schema=spider_schema(entry), tables=natural_tables(entry))
    examples = [
        SqlExample(id=f"{db_id}:{i}", db_id=db_id, sql=str(r["query"]))
        for i, r in enumerate(records)
    ]
    cta_kinds = [cast(Kind, k) for k in kinds if k in ("rpl", "add")]
    family_kinds = [k for k in kinds if k not in ("rpl", "add")]
    result = run_protocol(examples, {db_id: database}, proposer, cta_kinds, seeds, values)
    record_of = {ex.id: records[i] for i, ex in enumerate(examples)}
    builder = _SpiderRecords(record_of, {ex.id: i for i, ex in enumerate(examples)})
    builder.add_protocol({db_id: entry}, result)
    if family_kinds:
        with tempfile.TemporaryDirectory(prefix="cta-families-") as tmp:
            bare = ProtocolResult([], {}, result.bound)
            paths = materialise(bare, {db_id: database}, tmp, examples)
            families = _run_family_kinds(
                family_kinds,
                examples,
                {db_id: database},
                {db_id: entry},
                paths,
                result,
                proposer,
                judge,
                seeds,
                {i: _question_text(r) for i, r in record_of.items()},
            )
        builder.add_families({db_id: entry}, families)
        result = ProtocolResult(result.examples + families.examples, result.variants, result.bound)
    questions: dict[str, list[dict[str, Any]]] = {
        f"{kind}_s{seed}": [] for kind in kinds for seed in seeds
    }
    for pe in result.examples:
        if pe.sql is not None:
            questions[f"{pe.kind}_s{pe.seed}"].append(builder.perturbed(pe))
    return SpiderDatabaseResult(
        db_id=db_id, tables=builder.entries, questions=questions, mappings=result.examples
    )


# -- WikiSQL ----------------------------------------------------------------------------------------
def _index_map(table: SqlTable, new_columns: Sequence[NewColumn]) -> dict[int, int]:
    """Old column index → new index (ADD shifts the columns after an inserted one)."""
    return {table.index(c.source): j for j, c in enumerate(new_columns) if c.source is not None}


def perturb_wikisql(
    dataset: Any,
    proposer: Proposer,
    out_dir: str | Path,
    kinds: Sequence[Kind] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    *,
    augment: bool = False,
    check_execution: bool = False,
    values: ValueMode = "generate",
    progress: Callable[[str], None] | None = None,
) -> DatasetRun:
    """The ADVETA protocol over a :class:`~cta.formats.wikisql.WikiSqlDataset`.

    Each WikiSQL table is a one-table database holding its rows; a question's logical form
    becomes SQL over the header names (:func:`cta.formats.wikisql.to_sql`). The written
    artefact is the *remapped logical form*; its SQL over the perturbed header is what the
    execution check runs. Writes per kind and seed (or ``augment``)
    ``<name>_….jsonl`` + ``<name>_….tables.jsonl`` + ``<name>_….db`` (WikiSQL's evaluator
    layout), ``mappings.jsonl`` and, with ``check_execution``, ``verification.json``.
    Tables WikiSQL cannot hold as a table (duplicate headers…) are reported per question.
    """
    import tempfile

    from cta.formats.tables import load_wikisql_table
    from cta.formats.wikisql import remap, to_sql, wikisql_schema, write_db, write_jsonl

    say = progress or (lambda _: None)
    out = Path(out_dir)
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
    say(f"protocol: {len(examples)} examples × {len(kinds)} kinds × {len(seeds)} seeds")
    result = run_protocol(examples, databases, proposer, kinds, seeds, values)
    for ex_id, table_id, problem in skipped:
        for kind in kinds:
            for seed in seeds:
                result.examples.append(
                    PerturbedExample(
                        id=ex_id,
                        kind=kind,
                        seed=seed,
                        db_id=table_id,
                        perturbed_db_id=table_id,
                        sql=None,
                        problem=problem,
                    )
                )
    seconds["protocol"] = round(result.seconds, 3)

    # The artefact is the remapped logical form; its SQL replaces the rewriter's text.
    t0 = time.perf_counter()
    forms: dict[tuple[str, str, int], dict[str, Any]] = {}
    new_tables: dict[str, dict[str, Any]] = {}
    for pe in result.examples:
        if pe.sql is None or pe.perturbed_db_id == pe.db_id:
            continue
        variant = result.variants[pe.perturbed_db_id]
        table = databases[pe.db_id].schema.tables[0]
        [(_, new_columns)] = list(variant.perturbation.tables.items())
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
        return record

    files: list[str] = []
    questions = _question_files(
        dataset.name, examples, result, kinds, seeds, augment, original, perturbed
    )
    for stem, question_rows in questions.items():
        ids = list(dict.fromkeys(r["table_id"] for r in question_rows))
        tables = [new_tables.get(t) or dataset.tables[t] for t in ids]
        write_jsonl(out / f"{stem}.jsonl", question_rows)
        write_jsonl(out / f"{stem}.tables.jsonl", tables)
        write_db(out / f"{stem}.db", tables)
        files += [f"{stem}.jsonl", f"{stem}.tables.jsonl", f"{stem}.db"]
    _write_jsonl(out / "mappings.jsonl", (pe.model_dump_json() for pe in result.examples))
    files.append("mappings.jsonl")
    seconds["write"] = round(time.perf_counter() - t0, 3)

    verification = None
    if check_execution:
        say(f"verify: {len(result.examples)} checks")
        with tempfile.TemporaryDirectory(prefix="cta-wikisql-") as tmp:
            paths = materialise(result, databases, tmp, examples, values=values)
            verification = _verify_into(out, result, examples, paths, seconds, files)
    return _run_summary(out, len(dataset.records), result, files, seconds, verification)


def _wikisql_table(
    obj: Mapping[str, Any],
    variant: Variant,
    table: SqlTable,
    new_columns: Sequence[NewColumn],
    rows: Mapping[str, list[tuple[Any, ...]]],
    values: ValueMode,
) -> dict[str, Any]:
    """The ``tables.jsonl`` object of a perturbed WikiSQL table (same keys as the original)."""
    header = list(obj["header"])
    types = list(obj.get("types") or [])
    new_header, new_types = [], []
    for column in new_columns:
        if column.source is not None:
            i = table.index(column.source)
            renamed = sqlite_fold(column.name) != sqlite_fold(column.source)
            new_header.append(column.name if renamed else header[i])
            new_types.append(types[i] if i < len(types) else "text")
        else:
            new_header.append(column.name)
            new_types.append("real" if column.type is ColumnType.NUMBER else "text")
    new = dict(obj)
    new["id"] = variant.db_id
    new["header"] = new_header
    if "types" in obj:
        new["types"] = new_types
    new["rows"] = [
        list(r)
        for r in perturbed_rows(
            table, rows.get(table.name, []), new_columns, seed=variant.seed, values=values
        )
    ]
    return new


# -- WikiTableQuestions ------------------------------------------------------------------------------
class WtqMapping(BaseModel):
    """One table under one perturbation (WTQ has no SQL: every column is a target)."""

    context: str
    kind: str
    seed: int
    perturbed_context: str
    mapping: dict[str, str]
    unperturbed: dict[str, str]


def perturb_wtq(
    dataset: Any,
    proposer: Proposer,
    out_dir: str | Path,
    kinds: Sequence[Kind] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    *,
    augment: bool = False,
    values: ValueMode = "generate",
    progress: Callable[[str], None] | None = None,
) -> DatasetRun:
    """The protocol over WTQ-style CSV tables and questions.

    WTQ questions come with answers, not SQL, so no column is known to be "mentioned":
    every column of a table is a target, and all questions of a table share its perturbed
    table ``csv/…/<n>_<kind>_s<seed>.csv`` (answers stay valid: RPL renames headers, ADD
    inserts a column, no cell of the original columns changes). Writes the original and
    perturbed CSVs, per kind and seed (or ``augment``) ``<name>_….tsv`` and
    ``mappings.jsonl`` (one line per table × kind × seed).
    """
    from cta.formats.wtq import write_csv, write_tsv

    say = progress or (lambda _: None)
    out = Path(out_dir)
    started = time.perf_counter()
    contexts = list(dataset.tables)
    say(f"proposer: {len(contexts)} tables")
    results = proposer([dataset.tables[c] for c in contexts]) if contexts else []
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
                [pt] = sample_perturbations(table, proposal, kind, 1, seed, values=values)
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
    if dataset.records:
        groups: dict[str, list[dict[str, str]]] = {}
        for seed in seeds:
            if augment:
                rows = []
                for record in dataset.records:
                    rows.append(record)
                    for kind in kinds:
                        rows.append({**record, "context": moved[(record["context"], kind, seed)]})
                groups[f"{dataset.name}_augmented_s{seed}"] = rows
            else:
                for kind in kinds:
                    groups[f"{dataset.name}_{kind}_s{seed}"] = [
                        {**r, "context": moved[(r["context"], kind, seed)]} for r in dataset.records
                    ]
        for stem, rows in groups.items():
            write_tsv(out / f"{stem}.tsv", dataset.header, rows)
            files.append(f"{stem}.tsv")
    _write_jsonl(out / "mappings.jsonl", (m.model_dump_json() for m in mappings))
    files.append("mappings.jsonl")
    changed = sum(1 for m in mappings if m.mapping)
    return DatasetRun(
        out_dir=str(out),
        examples=len(dataset.records),
        perturbed=len(mappings),
        rewritten=changed,
        not_rewritten=0,
        unchanged=len(mappings) - changed,
        variants=changed,
        files=files,
        seconds={"total": round(time.perf_counter() - started, 3)},
    )


DatasetFormat = Literal["spider", "wikisql", "wtq"]


def perturb_dataset(
    fmt: DatasetFormat,
    tables: str | Path,
    questions: str | Path | None,
    out_dir: str | Path,
    proposer: Proposer,
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    *,
    db_dir: str | Path | None = None,
    augment: bool = False,
    check_execution: bool = False,
    values: ValueMode = "generate",
    synthesis_seed: int = 0,
    progress: Callable[[str], None] | None = None,
    judge: EquivalenceJudge | None = None,
) -> DatasetRun:
    """Load a dataset of format ``fmt`` and run its driver — the one entry point of the CLI
    (``cta dataset perturb``) and of the service's dataset jobs.

    ``tables``: Spider ``tables.json`` · WikiSQL ``*.tables.jsonl`` · the WTQ root folder.
    ``questions``: the question file (required for Spider and WikiSQL; optional for WTQ).
    """
    if fmt == "spider":
        from cta.formats.spider import load_spider

        if questions is None:
            raise InvalidTableError("missing_questions", "Spider needs a question file")
        spider = load_spider(tables, questions, db_dir)
        return perturb_spider(
            spider,
            proposer,
            out_dir,
            kinds,
            seeds,
            augment=augment,
            check_execution=check_execution,
            values=values,
            synthesis_seed=synthesis_seed,
            progress=progress,
            judge=judge,
        )
    families = [k for k in kinds if k not in ("rpl", "add")]
    if families:
        raise InvalidTableError(
            "unsupported_kind", f"kind {families[0]!r}: the families need the Spider format"
        )
    cta_kinds = [cast(Kind, k) for k in kinds]
    if fmt == "wikisql":
        from cta.formats.wikisql import load_wikisql

        if questions is None:
            raise InvalidTableError("missing_questions", "WikiSQL needs a question file")
        wikisql = load_wikisql(questions, tables)
        return perturb_wikisql(
            wikisql,
            proposer,
            out_dir,
            cta_kinds,
            seeds,
            augment=augment,
            check_execution=check_execution,
            values=values,
            progress=progress,
        )
    if fmt == "wtq":
        from cta.formats.wtq import load_wtq

        wtq = load_wtq(tables, questions)
        return perturb_wtq(
            wtq,
            proposer,
            out_dir,
            cta_kinds,
            seeds,
            augment=augment,
            values=values,
            progress=progress,
        )
    raise InvalidTableError(
        "unknown_format", f"dataset format must be spider, wikisql or wtq, not {fmt!r}"
    )


def _write_jsonl(path: Path, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
