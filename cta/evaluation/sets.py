"""Reading a folder written by ``cta dataset perturb --format spider``, in any layout.

The default layout holds ``tables.json`` (original and perturbed entries), ``database/<db_id>/
<db_id>.sqlite``, ``<name>_original.json`` (the input questions) and, per kind and seed,
``<name>_<kind>_s<seed>.json``. Every question record carries ``kind`` (``original`` for the
input), ``seed`` (null for the input) and ``source_index`` (its position in the input file),
which pairs a perturbed question with its original. Kinds are read from the records — any
kind the protocol writes is evaluated, none is assumed. A file whose records mix kinds (the
``--augment`` training sets) is not an evaluation set and is skipped. The ``hf`` layout holds
the same sets as ``data/<stem>.parquet`` (each row's ``record``: the whole record) with the
databases in ``databases.zip``; the ``drspider`` layout is read by :func:`_load_drspider`.

The ``bird`` layout (``cta dataset perturb --format bird``, :mod:`cta.formats.bird`) holds the
same sets beside ``dev_tables.json`` instead of ``tables.json``, with the databases in
``dev_databases/<db_id>/<db_id>.sqlite``; its records keep BIRD's keys — the gold query is
``SQL``, and ``difficulty`` (``simple``, ``moderate``, ``challenging``) and ``question_id``
are carried into every question. Such a folder is scored as BIRD scores (EX only, result
sets compared as sets: :mod:`cta.evaluation.execution`).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cta.formats.bird import DATABASES as BIRD_DATABASES
from cta.formats.drspider import (
    DATABASES,
    POST_DATABASES,
    POST_QUESTIONS,
    POST_TABLES,
    is_drspider,
    set_folders,
)
from cta.formats.spider import database_path
from cta.formats.spider_schema import SpiderSchema
from cta.provenance import file_sha256, read_manifest, tree_sha256
from cta.table import InvalidTableError

__all__ = [
    "EvalDirectory",
    "Question",
    "QuestionSet",
    "load_directory",
    "question_from_record",
    "question_text",
]

ORIGINAL = "original"
HF_DATA = "data"  # the hf layout: data/<set>.parquet, tables.json, databases.zip
HF_SUFFIX = ".parquet"
HF_DATABASES = "databases.zip"
_SEEDED = re.compile(r"^(?P<rest>.+)_s(?P<seed>\d+)$")
_QUESTION_KEYS = ("question", "SpiderQuestion")
_GOLD_KEYS = ("query", "SQL")  # Spider's key, BIRD's
BIRD_TABLES = "dev_tables.json"
SPIDER, BIRD = "spider", "bird"


def question_text(record: dict[str, Any]) -> str:
    """The NL question of a record (Spider's ``question`` or Spider-Syn's ``SpiderQuestion``)."""
    for key in _QUESTION_KEYS:
        if isinstance(record.get(key), str):
            return str(record[key])
    return ""


@dataclass(frozen=True)
class Question:
    """One question of a set, as a model sees it (plus the gold SQL it is scored against)."""

    set: str  # the set's file stem: dev_original, dev_rpl_s0…
    position: int  # index in the set's file (the test-suite line number)
    source_index: int  # index in the original file: pairs pre and post
    kind: str
    seed: int | None
    db_id: str
    question: str
    gold: str
    difficulty: str | None = None  # BIRD's simple, moderate, challenging
    question_id: int | str | None = None  # BIRD's question_id

    @property
    def id(self) -> str:
        return f"{self.set}:{self.position}"


@dataclass
class QuestionSet:
    """The questions of one file: a dataset name, a kind and a seed."""

    name: str  # dev, train_spider…
    stem: str
    kind: str
    seed: int | None
    questions: list[Question] = field(default_factory=list)

    @property
    def is_original(self) -> bool:
        return self.kind == ORIGINAL


@dataclass
class EvalDirectory:
    """A perturbed dataset folder: schemas by ``db_id``, databases and question sets, and
    the manifest each set came with (by set stem; none for a folder written without one)."""

    root: Path
    entries: dict[str, dict[str, Any]]
    sets: list[QuestionSet]
    skipped: list[str] = field(default_factory=list)  # files that are not evaluation sets
    db_dirs: dict[str, Path] = field(default_factory=dict)  # db_id → its databases' folder
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    unaccounted: list[str] = field(default_factory=list)  # sets their manifest does not list
    not_evaluated: dict[str, str] = field(default_factory=dict)  # set stem → why it is not
    databases: str | None = None  # what the databases are when synthesised (the manifest's)
    layout: str = SPIDER  # "bird": BIRD's files, scored as BIRD scores
    _schemas: dict[str, SpiderSchema] = field(default_factory=dict, repr=False)

    def database(self, db_id: str) -> Path:
        return database_path(self.db_dirs.get(db_id, self.root / "database"), db_id)

    def database_folders(self) -> list[Path]:
        """The folders the databases of the sets are read from."""
        db_ids = {q.db_id for s in self.sets for q in s.questions}
        return sorted({self.database(d).parent.parent for d in db_ids})

    def schema(self, db_id: str) -> SpiderSchema:
        """The parsed ``tables.json`` entry of ``db_id`` (cached)."""
        if db_id not in self._schemas:
            self._schemas[db_id] = SpiderSchema.from_entry(self.entries[db_id])
        return self._schemas[db_id]

    def leave_out(self, reasons: Mapping[str, str]) -> None:
        """Set aside the sets ``reasons`` names (stem → why): they are listed in
        ``not_evaluated`` and never scored. A perturbed set whose original is set aside goes
        too — its pre half has nothing to pair with."""
        gone = {s.name for s in self.sets if s.is_original and s.stem in reasons}
        kept = []
        for s in self.sets:
            if s.stem in reasons:
                self.not_evaluated[s.stem] = reasons[s.stem]
            elif s.name in gone:
                original = f"{s.name}_original"
                self.not_evaluated[s.stem] = f"its original set {original} is not evaluated"
            else:
                kept.append(s)
        self.sets = kept


def _read_list(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidTableError("invalid_json", f"{path}: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InvalidTableError("malformed_dataset", f"{path}: expected a JSON list of records")
    return data


def question_from_record(
    stem: str,
    position: int,
    record: dict[str, Any],
    entries: dict[str, Any],
    where: str,
    tables: str = "tables.json",
) -> Question:
    """A :class:`Question` from a question record (Spider's ``query`` or BIRD's ``SQL``);
    raises when the record is unusable."""
    db_id = record.get("db_id")
    gold = next((record[k] for k in _GOLD_KEYS if isinstance(record.get(k), str)), None)
    if not isinstance(db_id, str) or not isinstance(gold, str):
        raise InvalidTableError("malformed_dataset", f"{where}: needs db_id and query (or SQL)")
    if db_id not in entries:
        raise InvalidTableError("unknown_database", f"{where}: db_id {db_id!r} is not in {tables}")
    source = record.get("source_index")
    if not isinstance(source, int):
        raise InvalidTableError(
            "missing_source_index",
            f"{where}: no source_index (written by an older cta dataset perturb?)",
        )
    seed = record.get("seed")
    difficulty = record.get("difficulty")
    question_id = record.get("question_id")
    return Question(
        set=stem,
        position=position,
        source_index=source,
        kind=str(record.get("kind")),
        seed=seed if isinstance(seed, int) else None,
        db_id=db_id,
        question=question_text(record),
        gold=gold,
        difficulty=difficulty if isinstance(difficulty, str) else None,
        question_id=question_id if isinstance(question_id, int | str) else None,
    )


def _questions(
    path: Path,
    stem: str,
    records: Sequence[dict[str, Any]],
    entries: dict[str, Any],
    tables: str = "tables.json",
) -> list[Question]:
    return [
        question_from_record(stem, i, r, entries, f"{path}[{i}]", tables)
        for i, r in enumerate(records)
    ]


def load_directory(root: str | Path, only: Sequence[str] | None = None) -> EvalDirectory:
    """Read a ``cta dataset perturb`` folder in any of its layouts (the default, ``drspider``,
    ``hf``, ``bird``); ``only`` keeps these set stems (and originals).

    Raises :class:`~cta.table.InvalidTableError` when the folder is not one.
    """
    root = Path(root)
    if not root.is_dir():
        raise InvalidTableError("not_found", f"{root}: no such folder")
    if is_drspider(root):
        directory = _load_drspider(root, only)
    elif any((root / HF_DATA).glob(f"*_original{HF_SUFFIX}")):
        directory = _load_files(root, root / HF_DATA, HF_SUFFIX, _read_parquet, only)
        directory.db_dirs = dict.fromkeys(directory.entries, _hf_databases(root))
    elif (root / BIRD_TABLES).is_file() and not (root / "tables.json").is_file():
        directory = _load_files(root, root, ".json", _read_list, only, BIRD_TABLES)
        directory.db_dirs = dict.fromkeys(directory.entries, root / BIRD_DATABASES)
        directory.layout = BIRD
    else:
        directory = _load_files(root, root, ".json", _read_list, only)
    directory.databases = synthesised_note(read_manifest(root))
    return directory


def synthesised_note(manifest: Mapping[str, Any] | None) -> str | None:
    """What the databases of a ``cta dataset perturb`` folder are, from its manifest, when
    they were synthesised (:func:`cta.sql.database.synthesis_note`); None otherwise."""
    databases = (manifest or {}).get("databases")
    note = databases.get("note") if isinstance(databases, dict) else None
    return note if isinstance(note, str) else None


def _load_files(
    root: Path,
    folder: Path,
    suffix: str,
    read: Callable[[Path], list[dict[str, Any]]],
    only: Sequence[str] | None,
    tables_file: str = "tables.json",
) -> EvalDirectory:
    """The default layout (``<name>_…json`` beside ``tables.json``), the ``hf`` one (the
    same sets as ``data/<name>_…parquet``) or the ``bird`` one (beside ``dev_tables.json``)."""
    tables = root / tables_file
    if not tables.is_file():
        raise InvalidTableError("not_a_perturbed_dataset", f"{root}: no {tables_file}")
    entries = {e["db_id"]: e for e in _read_list(tables) if isinstance(e.get("db_id"), str)}
    end = f"_original{suffix}"
    names = sorted(p.name[: -len(end)] for p in folder.glob(f"*{end}"))
    if not names:
        raise InvalidTableError(
            "not_a_perturbed_dataset",
            f"{root}: no <name>_original.json, data/<name>_original.parquet nor Spider-<name>/ "
            "(written by cta dataset perturb --format spider)",
        )
    sets: list[QuestionSet] = []
    skipped: list[str] = []
    for name in names:
        original = folder / f"{name}{end}"
        stem = original.stem
        sets.append(
            QuestionSet(
                name,
                stem,
                ORIGINAL,
                None,
                _questions(original, stem, read(original), entries, tables_file),
            )
        )
        for path in sorted(folder.glob(f"{name}_*{suffix}"), key=_set_order):
            stem = path.stem
            match = _SEEDED.match(stem)
            if (
                path == original
                or match is None
                or any(stem.startswith(f"{other}_") and len(other) > len(name) for other in names)
            ):
                continue
            if only is not None and stem not in only:
                continue
            records = read(path)
            kinds = {str(r.get("kind")) for r in records}
            if len(kinds) > 1 or ORIGINAL in kinds:
                skipped.append(path.name)  # an --augment training file mixes kinds
                continue
            kind = kinds.pop() if kinds else match["rest"][len(name) + 1 :]
            seed = int(match["seed"])
            sets.append(
                QuestionSet(
                    name, stem, kind, seed, _questions(path, stem, records, entries, tables_file)
                )
            )
    directory = EvalDirectory(root, entries, sets, skipped)
    manifest = read_manifest(root)
    if manifest is not None:
        listed = manifest.get("outputs") or {}
        for s in sets:
            # the default layout lists each set's file; hf its data/ folder as one tree
            file = f"{s.stem}{suffix}" if folder == root else folder.name
            digest = file_sha256(root / file) if folder == root else tree_sha256(folder)
            if listed.get(file) == digest:
                directory.manifests[s.stem] = manifest
            else:
                directory.unaccounted.append(
                    file if folder == root else f"{folder.name}/{s.stem}{suffix}"
                )
    return directory


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    """The question records of an ``hf`` set file (its ``record`` column: the whole record)."""
    import pyarrow.parquet as pq

    try:
        column = pq.read_table(path, columns=["record"]).column("record").to_pylist()
        records = [json.loads(text) for text in column]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise InvalidTableError("malformed_dataset", f"{path}: {exc}") from None
    if not all(isinstance(r, dict) for r in records):
        raise InvalidTableError("malformed_dataset", f"{path}: a record is not a JSON object")
    return records


def _hf_databases(root: Path) -> Path:
    """The databases of an ``hf`` folder: ``databases.zip`` extracted once into a cache
    folder named by its hash (the export stays as published)."""
    archive = root / HF_DATABASES
    if not archive.is_file():
        raise InvalidTableError("not_a_perturbed_dataset", f"{root}: no {HF_DATABASES}")
    target = Path(tempfile.gettempdir()) / "cta-hf-databases" / file_sha256(archive)[:16]
    if not (target / "database").is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent))
        try:
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(staging)
            staging.replace(target)
        except (OSError, zipfile.BadZipFile) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if not (target / "database").is_dir():  # another process may have won the race
                raise InvalidTableError("unreadable_databases", f"{archive}: {exc}") from None
    return target / "database"


def _load_drspider(root: Path, only: Sequence[str] | None) -> EvalDirectory:
    """Dr.Spider's layout (:mod:`cta.formats.drspider`): ``Spider-<name>/`` and a folder per
    set; every folder's tables and databases make one directory."""
    [base] = sorted(root.glob("Spider-*/tables.json"))[:1]
    name = base.parent.name[len("Spider-") :]
    entries: dict[str, dict[str, Any]] = {}
    db_dirs: dict[str, Path] = {}
    for e in _read_list(base):
        entries[e["db_id"]] = e
        db_dirs[e["db_id"]] = base.parent / DATABASES
    folders = set_folders(root)
    for folder in folders:
        if (folder / POST_TABLES).is_file():
            for e in _read_list(folder / POST_TABLES):
                if e["db_id"] not in entries:
                    entries[e["db_id"]] = e
                    db_dirs[e["db_id"]] = folder / POST_DATABASES
    stem = base.parent.name
    original = base.parent / "questions.json"
    sets = [
        QuestionSet(
            name, stem, ORIGINAL, None, _questions(original, stem, _read_list(original), entries)
        )
    ]
    manifest = read_manifest(root)
    directory = EvalDirectory(root, entries, sets, db_dirs=db_dirs)
    for folder in folders:
        if only is not None and folder.name not in only:
            continue
        records = _read_list(folder / POST_QUESTIONS)
        match = _SEEDED.match(folder.name)
        kinds = {str(r.get("kind")) for r in records}
        kind = kinds.pop() if len(kinds) == 1 else (folder.name.split("_", 1)[-1])
        seed = int(match["seed"]) if match else None
        questions = _questions(folder / POST_QUESTIONS, folder.name, records, entries)
        sets.append(QuestionSet(name, folder.name, kind, seed, questions))
        # a set folder carries its own manifest (which lists its questions file)
        own = read_manifest(folder)
        if own is None:
            if manifest is not None:
                directory.unaccounted.append(folder.name)
            continue
        listed = (own.get("outputs") or {}).get(POST_QUESTIONS)
        if listed == file_sha256(folder / POST_QUESTIONS):
            directory.manifests[folder.name] = own
        else:
            directory.unaccounted.append(folder.name)
    return directory


def _set_order(path: Path) -> tuple[str, int]:
    match = _SEEDED.match(path.stem)
    return (match["rest"], int(match["seed"])) if match else (path.stem, -1)
