"""WikiTableQuestions-style data: CSV tables under a root folder and TSV question files.

Layout as WTQ ships it: ``<root>/csv/204-csv/590.csv`` tables (every field quoted, quotes
escaped with a backslash) and ``<root>/data/*.tsv`` questions with a header line
``id  utterance  context  targetValue`` where ``context`` is the table path relative to the
root. Question fields are kept exactly as read (WTQ's own escapes included); only
``context`` changes when a question is pointed at a perturbed table. Tables are read with
:func:`cta.formats.tables.load_csv` (header whitespace collapsed, types inferred).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cta.formats.tables import load_csv
from cta.table import InvalidTableError, Table

__all__ = ["WtqDataset", "load_wtq", "write_csv", "write_tsv"]

_REQUIRED = ("id", "utterance", "context")


@dataclass
class WtqDataset:
    """Tables by context path and the question rows (dicts keyed by the TSV header)."""

    name: str
    root: Path
    tables: dict[str, Table]
    header: list[str]
    records: list[dict[str, str]]


def _read_tsv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidTableError("invalid_tsv", f"{path}: {exc}") from None
    if not lines:
        raise InvalidTableError("invalid_tsv", f"{path} is empty")
    header = lines[0].split("\t")
    missing = [k for k in _REQUIRED if k not in header]
    if missing:
        raise InvalidTableError("invalid_tsv", f"{path}: header lacks {', '.join(missing)}")
    records = []
    for n, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise InvalidTableError(
                "invalid_tsv", f"{path}:{n}: {len(fields)} fields, header has {len(header)}"
            )
        records.append(dict(zip(header, fields, strict=True)))
    return header, records


def load_wtq(root: str | Path, questions: str | Path | None = None) -> WtqDataset:
    """Tables and questions; without ``questions`` every ``csv/**/*.csv`` under ``root``."""
    root = Path(root)
    header: list[str] = list(_REQUIRED) + ["targetValue"]
    records: list[dict[str, str]] = []
    if questions is not None:
        header, records = _read_tsv(Path(questions))
        contexts = sorted({r["context"] for r in records})
        name = Path(questions).stem
    else:
        contexts = sorted(p.relative_to(root).as_posix() for p in root.glob("csv/**/*.csv"))
        name = "tables"
    tables = {}
    for context in contexts:
        path = root / context
        if not path.is_file():
            raise InvalidTableError("unknown_table", f"{context}: no such table under {root}")
        tables[context] = load_csv(path).model_copy(update={"id": context})
    return WtqDataset(name=name, root=root, tables=tables, header=header, records=records)


def write_csv(path: str | Path, table: Table) -> None:
    """A table as WTQ writes CSV: every field quoted, quotes escaped with a backslash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(
            fh, quoting=csv.QUOTE_ALL, doublequote=False, escapechar="\\", lineterminator="\n"
        )
        writer.writerow(table.column_names)
        for row in table.rows:
            writer.writerow(["" if v is None else v for v in row])


def write_tsv(path: str | Path, header: Sequence[str], records: Sequence[dict[str, str]]) -> None:
    """Question rows with the header line, fields as read (no re-escaping)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(header)] + ["\t".join(r[k] for k in header) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
