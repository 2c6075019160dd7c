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

import logging
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cta.apply.database import (
    ColumnRef,
    NewColumn,
    SchemaPerturbation,
    SqlSchema,
    create_database,
    materialise_perturbed,
    perturb_schema,
    sqlite_fold,
    synthesise_rows,
)
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
from cta.results import Kind, PerturbationResult, PerturbedTable
from cta.table import Table

__all__ = [
    "Database",
    "PerturbedExample",
    "ProtocolResult",
    "Proposer",
    "SqlExample",
    "VerificationRecord",
    "VerificationReport",
    "materialise",
    "perturb_spider",
    "run_protocol",
    "verify",
]

log = logging.getLogger(__name__)

Proposer = Callable[[Sequence[Table]], list[PerturbationResult]]
"""Judged candidates for tables (the CTA pipeline's ``perturb_many``, or a stand-in)."""


@dataclass(frozen=True)
class SqlExample:
    """One NL–SQL pair: an id, its database and its gold SQL."""

    id: str
    db_id: str
    sql: str


@dataclass
class Database:
    """A database of the dataset: schema, natural tables aligned with it, optional file."""

    db_id: str
    schema: SqlSchema
    tables: list[Table]
    path: Path | None = None

    def __post_init__(self) -> None:
        if len(self.tables) != len(self.schema.tables):
            raise ValueError(
                f"{self.db_id}: {len(self.tables)} tables for a schema of {len(self.schema.tables)}"
            )


class PerturbedExample(BaseModel):
    """One example under one perturbation: the rewritten SQL and the mapping applied."""

    id: str
    kind: Kind
    seed: int
    db_id: str
    perturbed_db_id: str
    sql: str | None = Field(description="Rewritten gold SQL; None when it could not be")
    problem: str | None = Field(default=None, description="Why the SQL was not rewritten")
    mapping: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Per table: RPL old → new name, ADD target → added name (natural names)",
    )
    sql_mapping: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="The same mapping between SQL identifiers"
    )
    unperturbed: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Per table: mentioned columns left as they were → why"
    )


@dataclass
class Variant:
    """A perturbed database: which database, kind and seed, and how it differs."""

    db_id: str
    source: str
    kind: Kind
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
    extra: dict[str, Any] = field(default_factory=dict)


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
        table = databases[db_id].tables[t]
        natural = [table.column(i).name for i in identifiers]
        requests.append(table.model_copy(update={"target_columns": natural}))
    results = proposer(requests) if requests else []
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
                changes: dict[str, tuple[NewColumn, ...]] = {}
                mapping: dict[str, dict[str, str]] = {}
                sql_mapping: dict[str, dict[str, str]] = {}
                unperturbed: dict[str, dict[str, str]] = {}
                for t, table in enumerate(db.schema.tables):
                    mentioned = [
                        r.column
                        for r in b.columns
                        if sqlite_fold(r.table) == sqlite_fold(table.name)
                    ]
                    if not mentioned:
                        continue
                    natural_table = request_of[(ex.db_id, t)]
                    columns = [natural_table.column(c).name for c in mentioned]
                    [pt] = sample_perturbations(
                        natural_table,
                        result_of[(ex.db_id, t)],
                        kind,
                        1,
                        seed,
                        columns=columns,
                        values=values,
                    )
                    if pt.unperturbed:
                        unperturbed[table.name] = dict(pt.unperturbed)
                    if not pt.mapping:
                        continue
                    new_columns = _new_columns(natural_table, pt, table.columns)
                    changes[table.name] = new_columns
                    mapping[table.name] = dict(pt.mapping)
                    sql_mapping[table.name] = _sql_mapping(natural_table, pt, new_columns)
                if not changes:
                    out.append(
                        PerturbedExample(
                            id=ex.id,
                            kind=kind,
                            seed=seed,
                            db_id=ex.db_id,
                            perturbed_db_id=ex.db_id,
                            sql=ex.sql,
                            unperturbed=unperturbed,
                        )
                    )
                    continue
                signature = (ex.db_id, kind, seed, tuple(sorted(changes.items())))
                variant_id = variant_of.get(signature)
                if variant_id is None:
                    n = counts[(ex.db_id, kind, seed)]
                    counts[(ex.db_id, kind, seed)] += 1
                    variant_id = f"{ex.db_id}_{kind}_s{seed}_v{n}"
                    perturbation = SchemaPerturbation(changes)
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
                        mapping=mapping,
                        sql_mapping=sql_mapping,
                        unperturbed=unperturbed,
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

    Originals are copied when the dataset ships a file, else synthesised from the schema
    (seeded by ``synthesis_seed``, literal pools and join links from ``examples``' SQL).
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
    kind: Kind
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
            rows_or_error, ordered, paths.get(pe.perturbed_db_id), pe.sql, pe.problem, timeout
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


class SpiderRun(BaseModel):
    """What :func:`perturb_spider` wrote and measured."""

    out_dir: str
    examples: int
    perturbed: int = Field(description="Example × kind × seed entries")
    rewritten: int
    not_rewritten: int
    unchanged: int = Field(description="Entries whose SQL mentions no column (original db)")
    variants: int = Field(description="Perturbed databases written")
    files: list[str]
    seconds: dict[str, float]
    verification: dict[str, Any] | None = None


def perturb_spider(
    dataset: Any,
    proposer: Proposer,
    out_dir: str | Path,
    kinds: Sequence[Kind] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    *,
    augment: bool = False,
    check_execution: bool = False,
    values: ValueMode = "generate",
    synthesis_seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> SpiderRun:
    """The ADVETA protocol over a Spider dataset, written to ``out_dir``.

    Writes ``tables.json`` (original and perturbed entries), ``database/<db_id>/…sqlite``,
    per kind and seed ``<name>_<kind>_s<seed>.json`` (with ``augment``:
    ``<name>_augmented_s<seed>.json`` — original, RPL and ADD record per pair),
    ``mappings.jsonl`` (every example × kind × seed: mapping, rewritten SQL or problem)
    and, with ``check_execution``, ``verification.json``. Examples whose SQL could not be
    rewritten are left out of the question files and listed in ``mappings.jsonl``.
    """
    from cta.formats.spider import perturbed_entry, perturbed_record, write_json

    say = progress or (lambda _: None)
    out = Path(out_dir)
    seconds: dict[str, float] = {}
    examples, databases = spider_inputs(dataset)
    say(f"protocol: {len(examples)} examples × {len(kinds)} kinds × {len(seeds)} seeds")
    result = run_protocol(examples, databases, proposer, kinds, seeds, values)
    seconds["protocol"] = round(result.seconds, 3)

    t0 = time.perf_counter()
    say(f"databases: {len(databases)} originals, {len(result.variants)} perturbed")
    paths = materialise(result, databases, out / "database", examples, synthesis_seed, values)
    seconds["databases"] = round(time.perf_counter() - t0, 3)

    t0 = time.perf_counter()
    entries = [dataset.schemas[d] for d in databases]
    index_maps: dict[str, dict[int, int]] = {}
    for variant in result.variants.values():
        entry, index_map = perturbed_entry(
            dataset.schemas[variant.source], variant.db_id, variant.perturbation
        )
        entries.append(entry)
        index_maps[variant.db_id] = index_map
    files = ["tables.json"]
    write_json(out / "tables.json", entries)

    record_of = {ex.id: dataset.records[i] for i, ex in enumerate(examples)}
    grouped: dict[tuple[str, int], list[PerturbedExample]] = {}
    for pe in result.examples:
        grouped.setdefault((pe.kind, pe.seed), []).append(pe)

    def record(pe: PerturbedExample) -> dict[str, Any]:
        assert pe.sql is not None
        return perturbed_record(
            record_of[pe.id], pe.perturbed_db_id, pe.sql, index_maps.get(pe.perturbed_db_id)
        )

    if augment:
        for seed in seeds:
            rows: list[dict[str, Any]] = []
            per_kind = {k: {pe.id: pe for pe in grouped.get((k, seed), [])} for k in kinds}
            for ex in examples:
                rows.append(record_of[ex.id])
                for k in kinds:
                    pe = per_kind[k].get(ex.id)
                    if pe is not None and pe.sql is not None:
                        rows.append(record(pe))
            name = f"{dataset.name}_augmented_s{seed}.json"
            write_json(out / name, rows)
            files.append(name)
    else:
        for (kind, seed), pes in grouped.items():
            name = f"{dataset.name}_{kind}_s{seed}.json"
            write_json(out / name, [record(pe) for pe in pes if pe.sql is not None])
            files.append(name)
    _write_jsonl(out / "mappings.jsonl", (pe.model_dump_json() for pe in result.examples))
    files.append("mappings.jsonl")
    seconds["write"] = round(time.perf_counter() - t0, 3)

    verification = None
    if check_execution:
        t0 = time.perf_counter()
        say(f"verify: {len(result.examples)} checks")
        report = verify(result, examples, paths)
        seconds["verify"] = round(time.perf_counter() - t0, 3)
        (out / "verification.json").write_text(report.model_dump_json(indent=1) + "\n")
        files.append("verification.json")
        verification = report.model_dump(exclude={"records"})
        verification["problems"] = [r.model_dump() for r in report.records if r.status != "ok"]

    return SpiderRun(
        out_dir=str(out),
        examples=len(examples),
        perturbed=len(result.examples),
        rewritten=sum(1 for pe in result.examples if pe.sql is not None),
        not_rewritten=sum(1 for pe in result.examples if pe.sql is None),
        unchanged=sum(1 for pe in result.examples if pe.perturbed_db_id == pe.db_id),
        variants=len(result.variants),
        files=files,
        seconds=seconds,
        verification=verification,
    )


def _write_jsonl(path: Path, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
