"""The dataset layer: the ADVETA protocol over a text-to-SQL dataset (docs/method.md §4), what
every format driver shares, and the :class:`DatasetFormat` protocol a driver provides.

Every kind is a family (:mod:`cta.families`): RPL and ADD plan one edit per question over
the pipeline's proposals (ADVETA's protocol, :mod:`cta.families.proposed`), the others one
edit per database. :func:`run_protocol` binds every gold query, builds the families the
kinds name and runs them (:func:`cta.families.run.run_families`); the perturbed databases are
materialised and, on request, every rewritten query is executed against its database and
compared with the original query on the original database (:mod:`cta.sql.verify`). A driver
states what its format can hold (:class:`FormatDriver`: ``holds``); a kind whose family needs
more is refused before anything is read.

The protocol core is format-neutral (:func:`run_protocol` over :class:`SqlExample` and
:class:`Database`); the drivers (:mod:`cta.datasets.spider`, :mod:`cta.datasets.wikisql`,
:mod:`cta.datasets.wtq`) read a format's files into it and write its outputs back.

One file, because the protocol core, the :class:`DatasetFormat` protocol and the outputs
every driver shares are one contract; the format drivers live in their own modules.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field

from cta.apply.sample import ValueMode
from cta.families import family_spec, held_kinds, make_families
from cta.families.base import Family, Need
from cta.families.model import Database, ProtocolResult, materialise_variant
from cta.families.naming import EquivalenceJudge
from cta.families.run import run_families
from cta.formats.spider import suite_members
from cta.results import PerturbationResult
from cta.sql.database import ColumnRef, create_database, synthesise_rows
from cta.sql.examples import PerturbedExample, SqlExample
from cta.sql.rewrite import BoundQuery, SqlRewriteError, bind_query
from cta.sql.verify import (
    ExecutionError,
    Status,
    Verification,
    check,
    execute,
    has_top_level_order,
)
from cta.table import InvalidTableError, Table

__all__ = [
    "DatasetFiles",
    "DatasetFormat",
    "DatasetRequest",
    "DatasetRun",
    "Proposer",
    "VerificationRecord",
    "VerificationReport",
    "FormatDriver",
    "combine_reports",
    "finish_run",
    "materialise",
    "question_files",
    "families_of",
    "reads_databases",
    "bind_examples",
    "run_protocol",
    "summarise",
    "verify",
    "write_mappings",
]

Proposer = Callable[[Sequence[Table]], list[PerturbationResult]]
"""Judged candidates for tables (the CTA pipeline's ``perturb_many``, or a stand-in)."""


@dataclass(frozen=True)
class DatasetFiles:
    """Where a dataset lies: the format's table file or folder (Spider ``tables.json``,
    WikiSQL ``*.tables.jsonl``, the WTQ root), its question file, Spider's (BIRD's)
    databases and BIRD's column statistics (for synthesis)."""

    tables: str | Path
    questions: str | Path | None = None
    db_dir: str | Path | None = None
    statistics: str | Path | None = None

    def required_questions(self, fmt: str) -> str | Path:
        """The question file of a format that needs one (``missing_questions`` without)."""
        if self.questions is None:
            raise InvalidTableError("missing_questions", f"{fmt} needs a question file")
        return self.questions


@dataclass(frozen=True)
class DatasetRequest:
    """What to run over a dataset and where to write it: the arguments of ``cta dataset
    perturb`` beside its input files."""

    proposer: Proposer
    out_dir: Path
    kinds: Sequence[str] = ("rpl", "add")
    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    augment: bool = False
    check_execution: bool = False
    values: ValueMode = "generate"
    synthesis_seed: int = 0
    progress: Callable[[str], None] | None = None
    judge: EquivalenceJudge | None = None
    require_databases: bool = False  # refuse to synthesise a database the dataset lacks
    verify_seeds: int = 1  # synthesised databases are verified on this many synthesis seeds

    def say(self, message: str) -> None:
        """Report progress (a no-op without a ``progress`` callback)."""
        if self.progress is not None:
            self.progress(message)


D = TypeVar("D")


class DatasetFormat(Protocol[D]):
    """What a format's driver provides: what the format can hold (``holds``: the
    :data:`~cta.families.base.Need` it meets), a check of the kinds before anything is read,
    reading the files into a dataset ``D``, running the protocol over it and writing the
    outputs."""

    name: str
    holds: frozenset[Need]

    def check(self, kinds: Sequence[str]) -> None:
        """Raise :class:`~cta.table.InvalidTableError` for a kind the format cannot run."""
        ...

    def load(self, files: DatasetFiles) -> D:
        """Read the dataset."""
        ...

    def perturb(self, dataset: D, request: DatasetRequest) -> DatasetRun:
        """Run the protocol over ``dataset`` and write its outputs under ``request.out_dir``."""
        ...


class FormatDriver:
    """The base of a driver: ``holds`` what its format can hold (by default none of a
    database's edits: RPL and ADD alone), ``cannot_hold`` why it holds no more."""

    holds: frozenset[Need] = frozenset()
    cannot_hold = "this format runs no family"

    def check(self, kinds: Sequence[str]) -> None:
        """``unsupported_kind`` for the first of ``kinds`` whose family needs what the format
        cannot hold (``unknown_family`` for a kind none registered)."""
        held = held_kinds(self.holds)
        for kind in kinds:
            family_spec(kind)
            if kind not in held:
                raise InvalidTableError(
                    "unsupported_kind",
                    f"kind {kind!r}: {self.cannot_hold}; it holds {', '.join(held)} "
                    "(docs/families.md)",
                )


def families_of(
    kinds: Sequence[str],
    proposer: Proposer,
    judge: EquivalenceJudge | None,
    values: ValueMode = "generate",
) -> dict[str, Family]:
    """The families ``kinds`` name, built over the proposer and the judge; ``missing_judge``
    when one needs the judge and there is none."""
    for kind in kinds:
        if "judge" in family_spec(kind).needs and judge is None:
            raise InvalidTableError("missing_judge", f"the {kind} family needs the judge")

    def no_judge(pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        raise InvalidTableError("missing_judge", "this family needs the judge")

    return make_families(kinds, proposer, judge or no_judge, values)


def reads_databases(kinds: Sequence[str]) -> bool:
    """Whether a family of ``kinds`` plans over a written database (some read its cells)."""
    return any("database" in family_spec(k).needs for k in kinds)


# -- the protocol -----------------------------------------------------------------------------------
def bind_examples(
    examples: Sequence[SqlExample], databases: Mapping[str, Database]
) -> dict[str, BoundQuery | SqlRewriteError]:
    """Each example's gold SQL bound to its database's schema (or why it cannot be)."""
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
    return bound


def run_protocol(
    examples: Sequence[SqlExample],
    databases: Mapping[str, Database],
    proposer: Proposer,
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    values: ValueMode = "generate",
    *,
    judge: EquivalenceJudge | None = None,
    holds: Collection[Need] | None = None,
    bound: Mapping[str, BoundQuery | SqlRewriteError] | None = None,
    questions: Mapping[str, str] | None = None,
) -> ProtocolResult:
    """The one runner: every example once per kind and seed, one record each.

    Every kind is a family, built over ``proposer`` and ``judge`` (:func:`families_of`) and
    run by :func:`cta.families.run.run_families`, per question or per database as it was
    registered: the databases' ``path`` is the written original a family reads cells from,
    ``questions`` the question text per example id, ``holds`` what the format can hold (an
    edit beyond it leaves its questions as they were). The records come the per-question
    families (RPL, ADD) first, then the others, each in example × kind × seed order.
    ``bound`` is :func:`bind_examples`'s result when the caller already has it.
    """
    if bound is None:
        bound = bind_examples(examples, databases)
    families = families_of(kinds, proposer, judge, values)
    scopes = {k: family_spec(k).scope for k in families}
    return run_families(
        examples, databases, bound, families, seeds, questions, scopes=scopes, holds=holds
    )


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
    literal pools and join links from ``examples``' SQL, cells as ``Database.statistics``
    describe them).
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
                for member in suite_members(db.path):  # a test suite: every database
                    shutil.copyfile(member, target.parent / member.name)
        elif db.rows is not None:
            create_database(target, db.schema, db.rows)
        else:
            rows = synthesise_rows(
                db.schema, synthesis_seed, pools[db_id], links[db_id], db.statistics
            )
            create_database(target, db.schema, rows)
        paths[db_id] = target
    for variant in result.variants.values():
        target = db_dir / variant.db_id / f"{variant.db_id}.sqlite"
        old = databases[variant.source].schema
        materialise_variant(variant, paths[variant.source], target, old, values=values)
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
    synthesis_seed: int | None = Field(
        default=None, description="The seed of the synthesised databases it ran on, if any"
    )


class VerificationReport(BaseModel):
    """Every check, and the shares the issue asks for."""

    checks: int
    by_status: dict[str, int]
    by_kind: dict[str, dict[str, int]]
    executable: int = Field(description="Checks whose original query SQLite executes")
    equivalent: int = Field(description="… of which rewritten and execution-equivalent")
    equivalent_share: float
    equivalent_up_to_ties: int = Field(
        description="… of which only equal once rows tied on the ORDER BY keys may swap, or "
        "once a LIMIT without ORDER BY may keep other rows of the same result"
    )
    nonempty_share: float = Field(description="Share of executable checks with a non-empty result")
    records: list[VerificationRecord]


def verify(
    result: ProtocolResult,
    examples: Sequence[SqlExample],
    paths: Mapping[str, Path],
    timeout: float = 30.0,
    synthesis_seed: int | None = None,
) -> VerificationReport:
    """Execute every original and rewritten query and compare (see :mod:`cta.sql.verify`);
    ``synthesis_seed`` marks the records when ``paths`` are synthesised databases."""
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
        item = pe.model_dump(include={"id", "kind", "seed", "db_id", "perturbed_db_id"})
        records.append(
            VerificationRecord(**item, **outcome.model_dump(), synthesis_seed=synthesis_seed)
        )
    return _report(records)


def combine_reports(reports: Iterable[VerificationReport]) -> VerificationReport:
    """One report over the checks of several (one per set of databases they ran on)."""
    return _report([r for report in reports for r in report.records])


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


class DatasetRun(BaseModel):
    """What a driver wrote and measured."""

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
    synthesised: list[str] = Field(
        default_factory=list,
        description="Original databases synthesised from the schema (the dataset has no file)",
    )
    databases: str | None = Field(
        default=None, description="What the databases are when synthesised (synthesis_note)"
    )
    synthesis_seeds: list[int] = Field(
        default_factory=list,
        description="The seeds of the synthesised databases every check ran on",
    )


def _verify_into(
    out: Path,
    result: ProtocolResult,
    examples: Sequence[SqlExample],
    paths: Mapping[str, Path],
    seconds: dict[str, float],
    files: list[str],
    report: VerificationReport | None = None,
) -> dict[str, Any]:
    """Run :func:`verify` (unless ``report`` is given), write ``verification.json``; the
    summary with its problems."""
    t0 = time.perf_counter()
    if report is None:
        report = verify(result, examples, paths)
    seconds["verify"] = seconds.get("verify", 0.0) + round(time.perf_counter() - t0, 3)
    (out / "verification.json").write_text(report.model_dump_json(indent=1) + "\n")
    files.append("verification.json")
    summary = report.model_dump(exclude={"records"})
    summary["problems"] = [r.model_dump() for r in report.records if r.status != "ok"]
    return summary


def write_mappings(out: Path, items: Iterable[BaseModel], files: list[str]) -> None:
    """Write ``mappings.jsonl``: one JSON line per item (example × kind × seed)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "mappings.jsonl").open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(item.model_dump_json() + "\n")
    files.append("mappings.jsonl")


def finish_run(
    request: DatasetRequest,
    n_examples: int,
    examples: Sequence[SqlExample],
    result: ProtocolResult,
    files: list[str],
    seconds: dict[str, float],
    databases: Callable[[], AbstractContextManager[Mapping[str, Path]]],
    verifier: Callable[[Mapping[str, Path]], VerificationReport] | None = None,
) -> DatasetRun:
    """Verify ``examples`` on the databases ``databases()`` yields (with
    ``check_execution``; by ``verifier`` when given, else :func:`verify`), and sum the run
    over ``n_examples`` input examples up."""
    verification = None
    if request.check_execution:
        request.say(f"verify: {len(result.examples)} checks")
        with databases() as paths:
            report = verifier(paths) if verifier is not None else None
            verification = _verify_into(
                request.out_dir, result, examples, paths, seconds, files, report
            )
    items = result.examples
    rewritten = sum(1 for pe in items if pe.sql is not None)
    unchanged = sum(1 for pe in items if pe.perturbed_db_id == pe.db_id)
    counts = (len(items), rewritten, len(items) - rewritten, unchanged, len(result.variants))
    return summarise(request.out_dir, n_examples, counts, files, seconds, verification)


def summarise(
    out: Path,
    n_examples: int,
    counts: tuple[int, int, int, int, int],
    files: list[str],
    seconds: dict[str, float],
    verification: dict[str, Any] | None = None,
) -> DatasetRun:
    """The :class:`DatasetRun` of ``n_examples`` input examples; ``counts``: entries,
    rewritten, not rewritten, unchanged, variants."""
    values = (str(out), n_examples, *counts, files, seconds, verification)
    names = list(DatasetRun.model_fields)[: len(values)]
    return DatasetRun.model_validate(dict(zip(names, values, strict=True)))


def _per_kind_seed(
    result: ProtocolResult,
) -> dict[tuple[str, int], dict[str, PerturbedExample]]:
    grouped: dict[tuple[str, int], dict[str, PerturbedExample]] = {}
    for pe in result.examples:
        grouped.setdefault((pe.kind, pe.seed), {})[pe.id] = pe
    return grouped


def question_files(
    name: str,
    examples: Sequence[SqlExample],
    result: ProtocolResult,
    request: DatasetRequest,
    original: Callable[[SqlExample], dict[str, Any]],
    perturbed: Callable[[PerturbedExample], dict[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Question files by name: per kind and seed, or (``augment``) original+RPL+ADD per seed.

    Entries that could not be rewritten are left out (they are listed in mappings.jsonl).
    """
    kinds, seeds = request.kinds, request.seeds
    grouped = _per_kind_seed(result)
    files: dict[str, list[dict[str, Any]]] = {}
    if request.augment:
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
