"""The annotated columns and the column-header thesaurus (``data/annotations/``), typed.

Two files written for this project (see their README, CC BY-SA 4.0):

* ``tables.jsonl`` — real tables (Spider train schemas, WikiTableQuestions) whose target
  columns carry names judged *equivalent* (an RPL), *associated* (an ADD) or *neither*
  (wrong sense, broader/narrower, junk); split ``train`` / ``dev`` (``dev`` is evaluation
  data: never train on it);
* ``thesaurus.jsonl`` — frequent column headers with their usual sense and type, up to six
  equivalent and five associated column names.

This module is the one reader of both: judge training, candidate sources and benchmarks all
go through it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cta.jsonl import read_objects
from cta.table import ColumnType, NamedColumn

Split = Literal["train", "dev"]
TABLES_FILE = "tables.jsonl"
THESAURUS_FILE = "thesaurus.jsonl"


class AnnotatedColumn(NamedColumn):
    """A column of an annotated table."""


class TargetAnnotation(BaseModel):
    """The judged names of one target column."""

    model_config = ConfigDict(frozen=True)
    equivalent: tuple[str, ...] = ()
    associated: tuple[str, ...] = ()
    neither: tuple[str, ...] = ()


class AnnotatedTable(BaseModel):
    """One annotated table: its columns, primary entity and per-target judged names."""

    model_config = ConfigDict(frozen=True)
    id: str
    split: Split
    name: str
    entity: str
    columns: tuple[AnnotatedColumn, ...]
    rows: tuple[tuple[object, ...], ...] = ()
    targets: dict[str, TargetAnnotation] = Field(default_factory=dict)

    def column_type(self, name: str) -> ColumnType:
        """The type of the column called ``name`` (text when the table does not list it)."""
        for column in self.columns:
            if column.name == name:
                return column.type
        return ColumnType.TEXT


class ThesaurusEntry(BaseModel):
    """A frequent column header with its usual sense, type, equivalent and associated names."""

    model_config = ConfigDict(frozen=True)
    name: str
    sense: str = ""
    type: ColumnType = ColumnType.TEXT
    equivalent: tuple[str, ...] = ()
    associated: tuple[str, ...] = ()
    tables_seen: int = 0


class AnnotationsError(ValueError):
    """The annotation files are missing or malformed (the message names file and line)."""


def load_annotated_tables(
    directory: Path | str, split: Split | None = None
) -> tuple[AnnotatedTable, ...]:
    """The annotated tables of ``directory/tables.jsonl`` (one ``split``, or all), in file order."""
    tables = _tables(str(Path(directory).resolve()))
    return tables if split is None else tuple(t for t in tables if t.split == split)


def load_thesaurus(directory: Path | str) -> tuple[ThesaurusEntry, ...]:
    """The entries of ``directory/thesaurus.jsonl``, in file order."""
    return _thesaurus(str(Path(directory).resolve()))


@lru_cache(maxsize=4)
def _tables(directory: str) -> tuple[AnnotatedTable, ...]:
    return tuple(AnnotatedTable.model_validate(row) for row in _rows(Path(directory) / TABLES_FILE))


@lru_cache(maxsize=4)
def _thesaurus(directory: str) -> tuple[ThesaurusEntry, ...]:
    return tuple(
        ThesaurusEntry.model_validate(row) for row in _rows(Path(directory) / THESAURUS_FILE)
    )


def _rows(path: Path) -> list[dict[str, object]]:
    return [row for _, row in read_objects(path, AnnotationsError)]
