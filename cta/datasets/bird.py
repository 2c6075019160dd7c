"""The BIRD driver: ``dev.json``, ``dev_tables.json`` and ``dev_databases/`` through the protocol.

A BIRD schema is a Spider schema with descriptions beside it, so the protocol runs as for
Spider (:mod:`cta.datasets.spider`): RPL and ADD over the pipeline's proposals, the families
BIRD can hold planned on the written originals, gold SQL bound and rewritten, perturbed
databases materialised. What BIRD adds is written here: each question's ``evidence``
rewritten wherever it mentions a renamed column or table, the description CSVs of every
perturbed database, BIRD's type names in ``dev_tables.json``, and — where the databases are
synthesised — verification on several synthesis seeds (``verify_seeds``), each check
recording the seed of the databases it ran on. The layout written is described in
:mod:`cta.formats.bird`.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from cta.apply.sample import ValueMode
from cta.datasets.base import (
    DatasetFiles,
    DatasetRequest,
    DatasetRun,
    FormatDriver,
    Proposer,
    VerificationReport,
    bind_examples,
    combine_reports,
    finish_run,
    materialise,
    question_files,
    reads_databases,
    run_protocol,
    verify,
    write_mappings,
)
from cta.datasets.registry import register_format
from cta.datasets.spider import spider_database, tagged
from cta.families import entry_of
from cta.families.model import Database, ProtocolResult, Variant
from cta.families.naming import EquivalenceJudge
from cta.formats.bird import (
    DATABASES,
    BirdDataset,
    load_bird,
    original_descriptions,
    perturbed_descriptions,
    renames_between,
    write_descriptions,
)
from cta.formats.mentions import Rename, rewrite_mentions
from cta.formats.spider import gold_line, perturbed_entry, write_json
from cta.reports import SpiderDatabaseResult
from cta.sql.database import SqlSchema, sqlite_fold, synthesis_note
from cta.sql.examples import PerturbedExample, SqlExample
from cta.sql.rewrite import BoundQuery, SqlRewriteError
from cta.table import ColumnType, InvalidTableError

__all__ = ["BIRD", "BirdFormat", "bird_inputs", "perturb_bird_database"]

_BIRD_TYPE = {
    ColumnType.NUMBER: "real",
    ColumnType.TIME: "date",
    ColumnType.BOOLEAN: "integer",
    ColumnType.TEXT: "text",
    ColumnType.OTHERS: "text",
}


def bird_inputs(dataset: BirdDataset) -> tuple[list[SqlExample], dict[str, Database]]:
    """Examples and databases of a :class:`~cta.formats.bird.BirdDataset` (example ids
    ``<name>:<position>``; a database's statistics beside its schema)."""
    examples = [
        SqlExample(id=f"{dataset.name}:{i}", db_id=r["db_id"], sql=r["SQL"])
        for i, r in enumerate(dataset.records)
    ]
    databases = {}
    for db_id in sorted({ex.db_id for ex in examples}):
        try:
            db = spider_database(
                _distinct_naturals(dataset.entries[db_id]), dataset.database(db_id)
            )
        except (ValueError, IndexError) as exc:
            raise InvalidTableError("malformed_table", f"{db_id}: {exc}") from None
        databases[db_id] = dataclasses.replace(
            db,
            schema=dataclasses.replace(db.schema, quote="`"),  # BIRD quotes with backticks
            statistics=dataset.statistics.get(db_id),
        )
    return examples, databases


def _distinct_naturals(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` with natural names unique within each table, as a table needs them: BIRD
    names some columns alike (``KCT``, ``RVVT`` and ``LAC`` are each "measure of degree of
    coagulation"); each of those is told apart by its identifier (``… (KCT)``)."""
    names = entry.get("column_names")
    originals = entry.get("column_names_original")
    if not isinstance(names, list) or not isinstance(originals, list):
        return dict(entry)
    seen: dict[tuple[Any, str], int] = {}
    for pair in names:
        if isinstance(pair, list) and len(pair) == 2:
            key = (pair[0], str(pair[1]).casefold())
            seen[key] = seen.get(key, 0) + 1
    distinct = []
    for pair, original in zip(names, originals, strict=False):
        if (
            isinstance(pair, list)
            and len(pair) == 2
            and seen[(pair[0], str(pair[1]).casefold())] > 1
        ):
            distinct.append([pair[0], f"{pair[1]} ({original[1]})"])
        else:
            distinct.append(pair)
    return {**entry, "column_names": distinct}


class BirdFormat(FormatDriver):
    """The BIRD driver (:class:`~cta.datasets.base.DatasetFormat`); writes the layout of
    :mod:`cta.formats.bird`. It holds the edits that rename, move, add, drop or re-key
    columns and tables, which a question's evidence can follow by renaming its mentions; not
    those that merge tables or read a column back through an expression, after which the
    evidence would name columns the database no longer has."""

    name = "bird"
    holds = frozenset({"database", "dropped-columns", "several-tables", "table-names", "keys"})
    cannot_hold = (
        "BIRD's evidence names columns and tables in free text, which cannot follow a "
        "merged table or a column read back through an expression"
    )

    def load(self, files: DatasetFiles) -> BirdDataset:
        return load_bird(
            files.tables, files.required_questions("BIRD"), files.db_dir, files.statistics
        )

    def perturb(self, dataset: BirdDataset, request: DatasetRequest) -> DatasetRun:
        self.check(request.kinds)
        return _perturb(dataset, request)


BIRD = BirdFormat()
register_format(BIRD)


def _perturb(dataset: BirdDataset, request: DatasetRequest) -> DatasetRun:
    say, values, out = request.say, request.values, request.out_dir
    seconds: dict[str, float] = {}
    examples, databases = bird_inputs(dataset)
    synthesised = sorted(d for d, db in databases.items() if db.path is None)
    if synthesised and request.require_databases:
        where = f"under {dataset.db_dir}" if dataset.db_dir is not None else "(no --db-dir)"
        raise InvalidTableError(
            "databases_required",
            f"{len(synthesised)} databases have no SQLite file {where} "
            f"({', '.join(synthesised[:3])}{'…' if len(synthesised) > 3 else ''}); "
            "they would be synthesised",
        )
    seeds_of_synthesis = [request.synthesis_seed + k for k in range(max(request.verify_seeds, 1))]
    note = synthesis_note(request.synthesis_seed) if synthesised else None
    if note is not None:
        with_stats = sum(1 for d in synthesised if databases[d].statistics)
        say(
            f"databases: {len(synthesised)} of {len(databases)} {note}; "
            f"{with_stats} from column statistics"
        )
    t0 = time.perf_counter()
    bound = bind_examples(examples, databases)
    unbound = sum(1 for b in bound.values() if isinstance(b, SqlRewriteError))
    if unbound:
        say(f"gold SQL: {unbound} of {len(examples)} not bound (reasons in mappings.jsonl)")
    db_root = out / DATABASES
    say(f"databases: {len(databases)} originals")
    written = materialise(
        ProtocolResult([], {}, bound), databases, db_root, examples, request.synthesis_seed, values
    )
    seconds["databases"] = round(time.perf_counter() - t0, 3)
    originals = {
        db_id: dataclasses.replace(db, entry=dataset.entries[db_id], path=written.get(db_id))
        for db_id, db in databases.items()
    }
    records = _BirdRecords(dataset, examples, bound)
    say(
        f"protocol: {len(examples)} examples × {len(request.kinds)} kinds × "
        f"{len(request.seeds)} seeds"
    )
    result = run_protocol(
        examples, originals, request.proposer, request.kinds, request.seeds, values,
        judge=request.judge, holds=BIRD.holds, bound=bound, questions=records.questions(),
    )  # fmt: skip
    seconds["protocol"] = round(result.seconds, 3)
    t0 = time.perf_counter()
    say(f"databases: {len(result.variants)} perturbed")
    paths = materialise(result, originals, db_root, examples, request.synthesis_seed, values)
    seconds["databases"] += round(time.perf_counter() - t0, 3)
    records.add_variants(result)

    t0 = time.perf_counter()
    files = ["dev_tables.json", DATABASES]
    write_json(out / "dev_tables.json", [dataset.entries[d] for d in databases] + records.entries)
    for db_id in databases:
        given = dataset.descriptions.get(db_id, {})
        write_descriptions(db_root, db_id, original_descriptions(dataset.entries[db_id], given))
    for db_id, described in records.descriptions.items():
        write_descriptions(db_root, db_id, described)
    questions = question_files(
        dataset.name, examples, result, request, records.original, records.perturbed
    )
    questions[f"{dataset.name}_original"] = [records.original(ex) for ex in examples]
    for stem, rows in questions.items():
        write_json(out / f"{stem}.json", rows)
        gold = "".join(gold_line(r["SQL"], r["db_id"]) for r in rows)
        (out / f"{stem}_gold.sql").write_text(gold, encoding="utf-8")
        files += [f"{stem}.json", f"{stem}_gold.sql"]
    write_mappings(out, result.examples, files)
    seconds["write"] = round(time.perf_counter() - t0, 3)

    def verifier(paths: Mapping[str, Path]) -> VerificationReport:
        """Every check on the written databases, and again on databases synthesised with
        each further seed (the checks of synthesised databases only)."""
        started = time.perf_counter()
        made = set(synthesised)
        given = _on(result, set(databases) - made)
        reports = [verify(given, examples, paths)] if given.examples else []
        if made:
            again = _on(result, made)
            reports.append(verify(again, examples, paths, synthesis_seed=seeds_of_synthesis[0]))
            fresh = {d: dataclasses.replace(originals[d], path=None) for d in made}
            own = [ex for ex in examples if ex.db_id in made]
            for seed in seeds_of_synthesis[1:]:
                say(f"verify: synthesis seed {seed}")
                with tempfile.TemporaryDirectory(prefix="cta-bird-") as tmp:
                    other = materialise(again, fresh, tmp, own, seed, values)
                    reports.append(verify(again, own, other, synthesis_seed=seed))
        seconds["verify"] = round(time.perf_counter() - started, 3)
        return combine_reports(reports)

    run = finish_run(
        request, len(examples), examples, result, files, seconds, lambda: nullcontext(paths),
        verifier,
    )  # fmt: skip
    return run.model_copy(
        update={
            "synthesised": synthesised,
            "databases": note,
            "synthesis_seeds": seeds_of_synthesis
            if synthesised and request.check_execution
            else ([request.synthesis_seed] if synthesised else []),
        }
    )


def _on(result: ProtocolResult, db_ids: set[str]) -> ProtocolResult:
    """The part of ``result`` over the databases ``db_ids`` (and their variants)."""
    variants = {k: v for k, v in result.variants.items() if v.source in db_ids}
    items = [pe for pe in result.examples if pe.db_id in db_ids]
    return ProtocolResult(items, variants, result.bound)


class _BirdRecords:
    """BIRD's question records, perturbed entries and description rows, for CTA variants and
    family edits."""

    def __init__(
        self,
        dataset: BirdDataset,
        examples: Sequence[SqlExample],
        bound: Mapping[str, BoundQuery | SqlRewriteError],
    ) -> None:
        self.dataset = dataset
        self.record_of = {ex.id: dataset.records[i] for i, ex in enumerate(examples)}
        self.index_of = {ex.id: i for i, ex in enumerate(examples)}
        self.bound = bound
        self.entries: list[dict[str, Any]] = []
        self.renames: dict[str, list[Rename]] = {}
        self.descriptions: dict[str, dict[str, list[dict[str, str]]]] = {}

    def add_variants(self, result: ProtocolResult) -> None:
        """The ``dev_tables.json`` entry, renames and description rows of every variant."""
        for variant in result.variants.values():
            source = self.dataset.entries[variant.source]
            table_map: dict[int, int] | None = None
            if variant.edit.by_columns is not None:
                entry, index_map = perturbed_entry(source, variant.db_id, variant.edit.by_columns)
            else:
                entry, index_map, _ = entry_of(source, variant.db_id, variant.edit)
                table_map = _table_places(source, entry, variant.edit.table_map)
            entry["column_types"] = _bird_types(entry, variant, source)
            renames = renames_between(source, entry, index_map, table_map)
            rows = self.dataset.descriptions.get(variant.source, {})
            self.entries.append(entry)
            self.renames[variant.db_id] = renames
            self.descriptions[variant.db_id] = perturbed_descriptions(
                source, entry, index_map, rows, renames
            )

    def questions(self) -> dict[str, str]:
        """The question text of every example (what ``question-synonym`` rewrites)."""
        return {i: str(r.get("question") or "") for i, r in self.record_of.items()}

    def original(self, ex: SqlExample) -> dict[str, Any]:
        """The input record of one example, tagged as the original."""
        return tagged(self.record_of[ex.id], "original", None, self.index_of[ex.id])

    def perturbed(self, pe: PerturbedExample) -> dict[str, Any]:
        """The record of one perturbed item: its database, SQL, evidence (and question)."""
        assert pe.sql is not None
        record = dict(self.record_of[pe.id])
        record["db_id"] = pe.perturbed_db_id
        record["SQL"] = pe.sql
        renames = self.renames.get(pe.perturbed_db_id, [])
        if renames and isinstance(record.get("evidence"), str):
            tables = self.dataset.entries[pe.db_id]["table_names_original"]
            record["evidence"] = rewrite_mentions(
                record["evidence"], renames, self._kept(pe.id, renames), tables
            )
        if pe.question is not None:
            record["question"] = pe.question
        return tagged(record, pe.kind, pe.seed, self.index_of[pe.id])

    def _kept(self, example_id: str, renames: Sequence[Rename]) -> set[str]:
        """Identifiers of columns the gold SQL mentions that kept their name."""
        b = self.bound.get(example_id)
        if not isinstance(b, BoundQuery):
            return set()
        renamed = {(sqlite_fold(r.table), sqlite_fold(r.old)) for r in renames if r.table}
        return {
            ref.column
            for ref in b.columns
            if (sqlite_fold(ref.table), sqlite_fold(ref.column)) not in renamed
        }


def _table_places(
    source: Mapping[str, Any], entry: Mapping[str, Any], renamed: Mapping[str, str]
) -> dict[int, int]:
    """Old → new index of every table of ``source`` still in ``entry`` (``renamed``: old →
    new identifier of the tables an edit renamed)."""
    new = {sqlite_fold(str(t)): i for i, t in enumerate(entry["table_names_original"])}
    folded = {sqlite_fold(o): n for o, n in renamed.items()}
    out = {}
    for t, name in enumerate(source["table_names_original"]):
        target = sqlite_fold(folded.get(sqlite_fold(str(name)), str(name)))
        if target in new:
            out[t] = new[target]
    return out


def _bird_types(entry: Mapping[str, Any], variant: Variant, source: Mapping[str, Any]) -> list[str]:
    """The variant's ``column_types`` in BIRD's names: a carried column keeps its type; a
    new one gets its declared type, else its template's (ADD beside an ``integer`` column),
    else the SQLite name of its kind (``real``, ``date``, ``text``)."""
    schema: SqlSchema = variant.edit.schema
    source_types = {
        (sqlite_fold(source["table_names_original"][t]), sqlite_fold(c)): ty
        for (t, c), ty in zip(source["column_names_original"], source["column_types"], strict=True)
        if t >= 0
    }
    templates: dict[tuple[str, str], str] = {}
    perturbation = variant.edit.perturbation
    if perturbation is not None:
        for table, columns in perturbation.tables.items():
            for c in columns:
                if c.source is None and c.template is not None:
                    templates[(sqlite_fold(table), sqlite_fold(c.name))] = c.template
    out = []
    for (t, name), ty in zip(entry["column_names_original"], entry["column_types"], strict=True):
        if t < 0 or str(ty) in _BIRD_TYPE.values() or str(ty) in ("integer", "datetime"):
            out.append(str(ty))
            continue
        table = schema.tables[t]
        key = (sqlite_fold(table.name), sqlite_fold(name))
        column = table.find(name)
        template = templates.get(key)
        template_type = source_types.get((key[0], sqlite_fold(template))) if template else None
        if column is not None and column.declared:
            out.append(column.declared.lower())
        elif (
            template_type is not None
            and column is not None
            and (ColumnType.NUMBER if template_type in ("integer", "real") else None) is column.type
        ):
            out.append(template_type)
        elif column is not None:
            out.append(_BIRD_TYPE[column.type])
        else:
            out.append(str(ty))
    return out


def perturb_bird_database(
    entry: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    proposer: Proposer,
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    values: ValueMode = "generate",
    judge: EquivalenceJudge | None = None,
    descriptions: Mapping[str, Sequence[Mapping[str, str]]] | None = None,
) -> SpiderDatabaseResult:
    """The protocol over one BIRD database (a ``dev_tables.json`` entry), its question records
    (each with a string ``SQL``) and, optionally, its description rows by table, in memory:
    what :class:`BirdFormat` writes for that database, without the SQLite files — the
    perturbed entries, the records per kind and seed (``SQL`` and ``evidence`` rewritten),
    every mapping and the perturbed databases' description rows. Example ids are
    ``<db_id>:<position in records>``.

    Raises :class:`~cta.table.InvalidTableError` for an entry, record or kind it cannot take.
    """
    BIRD.check(kinds)
    db_id = entry.get("db_id")
    if not isinstance(db_id, str) or not db_id:
        raise InvalidTableError("invalid_bird", "a BIRD entry needs a string db_id")
    for i, record in enumerate(records):
        if not isinstance(record.get("SQL"), str):
            raise InvalidTableError(
                "invalid_record", f"{db_id}: question record {i} has no string 'SQL'"
            )
    rows = {str(t): [dict(r) for r in rs] for t, rs in (descriptions or {}).items()}
    dataset = BirdDataset(
        name=db_id,
        entries={db_id: dict(entry)},
        records=[dict(r, db_id=db_id) for r in records],
        descriptions={db_id: rows} if rows else {},
    )
    examples, databases = bird_inputs(dataset)
    bound = bind_examples(examples, databases)
    builder = _BirdRecords(dataset, examples, bound)
    with tempfile.TemporaryDirectory(prefix="cta-bird-") as tmp:
        if reads_databases(kinds):  # they plan on a written original (some read its cells)
            written = materialise(ProtocolResult([], {}, bound), databases, tmp, examples)
            databases = {
                d: dataclasses.replace(db, entry=dataset.entries[d], path=written.get(d))
                for d, db in databases.items()
            }
        result = run_protocol(
            examples, databases, proposer, kinds, seeds, values,
            judge=judge, holds=BIRD.holds, bound=bound, questions=builder.questions(),
        )  # fmt: skip
    builder.add_variants(result)
    questions: dict[str, list[dict[str, Any]]] = {f"{k}_s{s}": [] for k in kinds for s in seeds}
    for pe in result.examples:
        if pe.sql is not None:
            questions[f"{pe.kind}_s{pe.seed}"].append(builder.perturbed(pe))
    return SpiderDatabaseResult(
        db_id=db_id,
        tables=builder.entries,
        questions=questions,
        mappings=result.examples,
        descriptions=builder.descriptions,
    )
