"""The Spider driver: ``tables.json``, question files and ``database/`` through the protocol.

Every kind is a family of :mod:`cta.families`, run by :func:`cta.datasets.base.run_protocol`
on the written original databases; Spider holds every edit. The
same code serves ``cta dataset perturb --format spider`` (files: :func:`perturb_spider`) and
the service's dataset jobs (one database in memory: :func:`perturb_spider_database`, its
entry checked at submission by :func:`spider_database`).
"""

from __future__ import annotations

import dataclasses
import re
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
    bind_examples,
    finish_run,
    materialise,
    question_files,
    reads_databases,
    run_protocol,
    write_mappings,
)
from cta.families import NEEDS, entry_of
from cta.families.model import Database, ProtocolResult
from cta.families.naming import EquivalenceJudge
from cta.formats.spider import (
    SpiderDataset,
    gold_line,
    load_spider,
    perturbed_entry,
    perturbed_record,
    remap_tables,
    sql_schema,
    write_json,
)
from cta.formats.spider_grammar import evaluator_form, evaluator_problem, spider_tables_of
from cta.formats.spider_schema import parse_spider_entry, spider_tables
from cta.reports import SpiderDatabaseResult
from cta.sql.database import synthesis_note
from cta.sql.examples import PerturbedExample, SqlExample
from cta.table import InvalidTableError

__all__ = [
    "SPIDER",
    "SpiderFormat",
    "perturb_spider",
    "perturb_spider_database",
    "question_text",
    "spider_database",
    "spider_inputs",
    "tagged",
]


def spider_database(entry: Mapping[str, Any], path: Path | None = None) -> Database:
    """One ``tables.json`` entry as a protocol :class:`Database` (its file at ``path``, if any).

    Raises :class:`~cta.table.InvalidTableError` (or the ``ValueError``/``IndexError`` of a
    key that is not a column index) for an entry that cannot be read; the service checks a
    dataset job's entries with it at submission.
    """
    parsed = parse_spider_entry(entry)
    tables = spider_tables(parsed)
    return Database(db_id=parsed.db_id, schema=sql_schema(parsed), tables=tables, path=path)


def spider_inputs(dataset: SpiderDataset) -> tuple[list[SqlExample], dict[str, Database]]:
    """Examples and databases of a :class:`~cta.formats.spider.SpiderDataset`."""
    examples = [
        SqlExample(id=f"{dataset.name}:{i}", db_id=r["db_id"], sql=r["query"])
        for i, r in enumerate(dataset.records)
    ]
    databases = {
        db_id: spider_database(dataset.schemas[db_id], dataset.database(db_id))
        for db_id in sorted({ex.db_id for ex in examples})
    }
    return examples, databases


class SpiderFormat(FormatDriver):
    """The Spider driver (:class:`~cta.datasets.base.DatasetFormat`): it holds every edit, so
    every family of :mod:`cta.families` runs on it (``request.judge`` is the judge's
    equivalence rule, needed by ``abbreviation``).

    Writes ``tables.json`` (original and perturbed entries), ``database/<db_id>/…sqlite``
    (originals copied or synthesised, perturbed ones materialised — data migrated), per kind
    and seed ``<name>_<kind>_s<seed>.json`` (with ``augment``: ``<name>_augmented_s<seed>.json``
    — original, RPL and ADD record per pair), ``<name>_original.json`` (the input questions),
    beside each question file its gold file ``<stem>_gold.sql`` (``SQL<TAB>db_id``, as Spider
    ships ``dev_gold.sql``; every record says whether the official evaluator reads its
    query: ``evaluator_reads``/``evaluator_problem``),
    ``mappings.jsonl`` (every example × kind × seed: mapping or operation, rewritten SQL,
    problem or why it is unchanged) and, with ``check_execution``, ``verification.json``.
    Examples whose SQL could not be rewritten are left out of the CTA question files and
    listed in ``mappings.jsonl``; a family keeps them with their original SQL.
    """

    name = "spider"
    holds = frozenset(n for n in NEEDS if n != "judge")

    def load(self, files: DatasetFiles) -> SpiderDataset:
        return load_spider(files.tables, files.required_questions("Spider"), files.db_dir)

    def perturb(self, dataset: SpiderDataset, request: DatasetRequest) -> DatasetRun:
        say, values, out = request.say, request.values, request.out_dir
        seconds: dict[str, float] = {}
        examples, databases = spider_inputs(dataset)
        synthesised = sorted(
            d for d, db in databases.items() if db.path is None and db.rows is None
        )
        note = synthesis_note(request.synthesis_seed) if synthesised else None
        if synthesised and request.require_databases:
            where = f"under {dataset.db_dir}" if dataset.db_dir is not None else "(no --db-dir)"
            raise InvalidTableError(
                "databases_required",
                f"{len(synthesised)} databases have no SQLite file {where} "
                f"({', '.join(synthesised[:3])}{'…' if len(synthesised) > 3 else ''}); "
                "they would be synthesised",
            )
        if note is not None:
            say(f"databases: {len(synthesised)} of {len(databases)} {note}")
        t0 = time.perf_counter()
        bound = bind_examples(examples, databases)
        # The originals first: families plan on them (some read their cells).
        say(f"databases: {len(databases)} originals")
        written = materialise(
            ProtocolResult([], {}, bound), databases, out / "database", examples,
            request.synthesis_seed, values,
        )  # fmt: skip
        seconds["databases"] = round(time.perf_counter() - t0, 3)
        databases = _with_originals(databases, dataset.schemas, written)
        records = _SpiderRecords(dataset.records, examples)
        say(
            f"protocol: {len(examples)} examples × {len(request.kinds)} kinds × "
            f"{len(request.seeds)} seeds"
        )
        result = run_protocol(
            examples, databases, request.proposer, request.kinds, request.seeds, values,
            judge=request.judge, holds=self.holds, bound=bound, questions=records.questions(),
        )  # fmt: skip
        seconds["protocol"] = round(result.seconds, 3)
        t0 = time.perf_counter()
        say(f"databases: {len(result.variants)} perturbed")
        paths = materialise(
            result, databases, out / "database", examples, request.synthesis_seed, values
        )
        seconds["databases"] += round(time.perf_counter() - t0, 3)
        records.add_variants(dataset.schemas, result)

        grammar = _GrammarTables([*dataset.schemas.values(), *records.entries])
        result.examples[:] = grammar.respell(result.examples)
        t0 = time.perf_counter()
        files = ["tables.json"]
        write_json(out / "tables.json", [dataset.schemas[d] for d in databases] + records.entries)
        questions = question_files(
            dataset.name, examples, result, request, records.original, records.perturbed
        )
        questions[f"{dataset.name}_original"] = [records.original(ex) for ex in examples]
        for stem, rows in questions.items():
            for row in rows:
                grammar.mark(row)
            write_json(out / f"{stem}.json", rows)
            gold = "".join(gold_line(r["query"], r["db_id"]) for r in rows)
            (out / f"{stem}_gold.sql").write_text(gold, encoding="utf-8")
            files += [f"{stem}.json", f"{stem}_gold.sql"]
        write_mappings(out, result.examples, files)
        seconds["write"] = round(time.perf_counter() - t0, 3)
        run = finish_run(
            request, len(examples), examples, result, files, seconds, lambda: nullcontext(paths)
        )
        return run.model_copy(update={"synthesised": synthesised, "databases": note})


SPIDER = SpiderFormat()


def perturb_spider(
    dataset: SpiderDataset,
    proposer: Proposer,
    out_dir: str | Path,
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    **options: Any,
) -> DatasetRun:
    """:meth:`SpiderFormat.perturb`, the rest of the :class:`~cta.datasets.base.DatasetRequest`
    as keyword arguments (``check_execution=True``, ``progress=…``)."""
    request = DatasetRequest(proposer, Path(out_dir), kinds, seeds, **options)
    return SPIDER.perturb(dataset, request)


class _SpiderRecords:
    """Perturbed Spider entries and question records, for CTA variants and family edits."""

    def __init__(self, records: Sequence[Mapping[str, Any]], examples: Sequence[SqlExample]):
        """``records[i]`` is the question record of ``examples[i]``."""
        self.record_of = {ex.id: records[i] for i, ex in enumerate(examples)}
        self.index_of = {ex.id: i for i, ex in enumerate(examples)}
        self.entries: list[dict[str, Any]] = []
        self.index_maps: dict[str, dict[int, int]] = {}
        self.table_maps: dict[str, dict[int, int]] = {}
        self.drops_parsed: set[str] = set()

    def add_variants(
        self, schemas: Mapping[str, Mapping[str, Any]], result: ProtocolResult
    ) -> None:
        """The ``tables.json`` entry of every variant, in the run's order: from its column
        perturbation when that is the whole edit (RPL, ADD), else from the edit (with the table indices it
        moved, and whether Spider's parsed ``sql`` can follow it)."""
        for variant in result.variants.values():
            edit = variant.edit
            if edit.by_columns is not None:
                entry, index_map = perturbed_entry(
                    schemas[variant.source], variant.db_id, edit.by_columns
                )
                self.entries.append(entry)
                self.index_maps[variant.db_id] = index_map
                continue
            entry, index_map, table_map = entry_of(schemas[variant.source], variant.db_id, edit)
            self.entries.append(entry)
            self.index_maps[variant.db_id] = index_map
            self.table_maps[variant.db_id] = table_map
            if not edit.keeps_parsed_sql:
                self.drops_parsed.add(variant.db_id)

    def questions(self) -> dict[str, str]:
        """The question text of every example (what ``question-synonym`` rewrites)."""
        return {i: question_text(r) for i, r in self.record_of.items()}

    def original(self, ex: SqlExample) -> dict[str, Any]:
        """The input record of one example, tagged as the original."""
        return tagged(self.record_of[ex.id], "original", None, self.index_of[ex.id])

    def perturbed(self, pe: PerturbedExample) -> dict[str, Any]:
        """The question record of one perturbed item, tagged with kind, seed and source."""
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


def question_text(record: Mapping[str, Any]) -> str:
    """The question of a Spider record (Spider's key, else Spider-Syn's original one)."""
    for key in _QUESTION_KEYS:
        if isinstance(record.get(key), str):
            return str(record[key])
    return ""


def _set_question(record: dict[str, Any], question: str) -> None:
    """Put a rewritten question where :func:`question_text` read it (tokens too)."""
    for key in _QUESTION_KEYS:
        if isinstance(record.get(key), str):
            record[key] = question
            break
    if "question_toks" in record:
        record["question_toks"] = re.findall(r"\w+|[^\w\s]", question)


def _with_originals(
    databases: Mapping[str, Database],
    entries: Mapping[str, Mapping[str, Any]],
    written: Mapping[str, Path],
) -> dict[str, Database]:
    """The databases as written (a family reads their cells) with their ``tables.json``
    entries (a family writes its edit's entry from them)."""
    return {
        db_id: dataclasses.replace(db, entry=entries.get(db_id), path=written.get(db_id))
        for db_id, db in databases.items()
    }


class _GrammarTables:
    """Marks question records with whether the official Spider evaluator reads their gold
    query: ``evaluator_reads`` (bool) and ``evaluator_problem`` (why not, else null) — a set
    with one unreadable line stops that evaluator (:mod:`cta.formats.spider_grammar`)."""

    def __init__(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.entries = {str(e["db_id"]): e for e in entries}
        self.tables: dict[str, dict[str, set[str]]] = {}

    def _tables(self, db_id: str) -> dict[str, set[str]]:
        if db_id not in self.tables:
            self.tables[db_id] = spider_tables_of(self.entries[db_id])
        return self.tables[db_id]

    def respell(self, examples: Sequence[PerturbedExample]) -> list[PerturbedExample]:
        """Each rewritten query the evaluator would stop on, in an equivalent spelling it
        reads where one exists (:func:`~cta.formats.spider_grammar.evaluator_form`: an
        alias of its own per branch of a set operation); verification then runs that."""
        out = []
        for pe in examples:
            if pe.sql is not None and pe.perturbed_db_id != pe.db_id:
                tables = self._tables(pe.perturbed_db_id)
                if evaluator_problem(pe.sql, tables) is not None:
                    better = evaluator_form(pe.sql, tables)
                    if better is not None:
                        pe = pe.model_copy(update={"sql": better})
            out.append(pe)
        return out

    def mark(self, record: dict[str, Any]) -> dict[str, Any]:
        problem = evaluator_problem(str(record["query"]), self._tables(str(record["db_id"])))
        record["evaluator_reads"] = problem is None
        record["evaluator_problem"] = problem
        return record


def tagged(
    record: Mapping[str, Any], kind: str, seed: int | None, source_index: int
) -> dict[str, Any]:
    """A question record with where it comes from: ``kind`` (``original`` for the input),
    ``seed`` (None for the input) and ``source_index`` (its position in the input file)."""
    return {**record, "kind": kind, "seed": seed, "source_index": source_index}


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
    question records (each needs a string ``query``), in memory: what :class:`SpiderFormat`
    writes for that database, without the SQLite files. Example ids are
    ``<db_id>:<position in records>``. Families that read cells plan on a database
    synthesised the way the CLI synthesises one (in a temporary folder).

    Raises :class:`~cta.table.InvalidTableError` for an entry or record that cannot be read.
    """
    db_id = entry.get("db_id")
    if not isinstance(db_id, str) or not db_id:
        raise InvalidTableError("invalid_spider", "a Spider entry needs a string db_id")
    for i, record in enumerate(records):
        if not isinstance(record.get("query"), str):
            raise InvalidTableError(
                "invalid_record", f"{db_id}: question record {i} has no string 'query'"
            )
    databases = {db_id: spider_database(entry)}
    entries = {db_id: entry}
    examples = [
        SqlExample(id=f"{db_id}:{i}", db_id=db_id, sql=str(r["query"]))
        for i, r in enumerate(records)
    ]
    builder = _SpiderRecords(records, examples)
    SPIDER.check(kinds)
    bound = bind_examples(examples, databases)
    with tempfile.TemporaryDirectory(prefix="cta-families-") as tmp:
        if reads_databases(kinds):  # families that plan on a written original (its cells)
            written = materialise(ProtocolResult([], {}, bound), databases, tmp, examples)
            databases = _with_originals(databases, entries, written)
        result = run_protocol(
            examples, databases, proposer, kinds, seeds, values,
            judge=judge, holds=SPIDER.holds, bound=bound, questions=builder.questions(),
        )  # fmt: skip
    builder.add_variants(entries, result)
    questions: dict[str, list[dict[str, Any]]] = {
        f"{kind}_s{seed}": [] for kind in kinds for seed in seeds
    }
    grammar = _GrammarTables([entry, *builder.entries])
    result.examples[:] = grammar.respell(result.examples)
    for pe in result.examples:
        if pe.sql is not None:
            questions[f"{pe.kind}_s{pe.seed}"].append(grammar.mark(builder.perturbed(pe)))
    return SpiderDatabaseResult(
        db_id=db_id, tables=builder.entries, questions=questions, mappings=result.examples
    )
