"""The table model every stage speaks: a named table of typed columns, rows and context.

A :class:`Table` is validated on construction; invalid input raises
:class:`InvalidTableError` with a machine-readable ``problem`` and a message naming it.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cta.text import find_bad_text, text_problem
from cta.words import name_key


class ColumnType(StrEnum):
    """Column types as in the paper's template ``{TPE} {column} ({type})``."""

    TEXT = "text"
    NUMBER = "number"
    TIME = "time"
    BOOLEAN = "boolean"
    OTHERS = "others"


class ProblemError(ValueError):
    """Bad input with a machine-readable ``problem`` code and a message naming it."""

    def __init__(self, problem: str, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.message = message

    def __str__(self) -> str:
        return f"{self.problem}: {self.message}"


class InvalidTableError(ProblemError):
    """A table that cannot be used; ``problem`` is a short code, the message names it."""


class NamedColumn(BaseModel):
    """A column reduced to what names it: its name and type. The one column shape every
    layer shares: a table's :class:`Column`, the judge's column, an annotated column."""

    model_config = ConfigDict(frozen=True)

    name: str
    type: ColumnType = ColumnType.TEXT


class Column(NamedColumn):
    """One column: its display name and type; ``original_name`` keeps a schema identifier."""

    original_name: str | None = Field(
        default=None, description="Identifier in the source schema (e.g. Spider `breed_code`)"
    )


class ForeignKey(BaseModel):
    """``column`` of this table references ``ref_table.ref_column``."""

    model_config = ConfigDict(frozen=True)

    column: str
    ref_table: str
    ref_column: str


class Table(BaseModel):
    """A table with its context: caption, primary entity, questions and gold SQL."""

    id: str | None = None
    name: str | None = Field(default=None, description="Table name or caption")
    caption: str | None = None
    columns: list[Column] = Field(json_schema_extra={"minItems": 1})
    rows: list[list[Any]] = Field(default_factory=list)
    primary_entity: str | None = None
    target_columns: list[str] | None = Field(
        default=None, description="Columns to perturb (default: all)"
    )
    questions: list[str] = Field(default_factory=list)
    sql: list[str] = Field(default_factory=list, description="Gold SQL, aligned with questions")
    primary_key: list[str] = Field(default_factory=list)
    foreign_keys: list[ForeignKey] = Field(default_factory=list)
    source: str | None = Field(default=None, description="Where the table came from")

    @model_validator(mode="after")
    def _check(self) -> Table:
        check_table(self)
        return self

    # -- convenience -------------------------------------------------------------------
    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def title(self) -> str:
        """Best human-readable title: name, then caption, then empty."""
        return self.name or self.caption or ""

    def column(self, name: str) -> Column:
        """Look a column up by name: its name or SQL identifier, case-insensitively (as SQLite
        resolves names), else by :func:`name_key` (``first_name`` finds ``First Name``), the
        key :func:`check_table` tells columns apart by. The one lookup: validation uses it too."""
        folded = name.casefold()
        for col in self.columns:
            if col.name.casefold() == folded or (col.original_name or "").casefold() == folded:
                return col
        key = name_key(name)
        for col in self.columns:
            if name_key(col.name) == key or (
                col.original_name is not None and name_key(col.original_name) == key
            ):
                return col
        raise InvalidTableError("unknown_column", f"table has no column named {name!r}")

    def targets(self) -> list[Column]:
        """The columns to perturb: ``target_columns`` if given, else every column."""
        if self.target_columns is None:
            return list(self.columns)
        return [self.column(n) for n in self.target_columns]

    def column_values(self, index: int) -> list[Any]:
        return [row[index] for row in self.rows]

    @classmethod
    def parse(cls, data: Any) -> Table:
        """Validate arbitrary JSON-like data, turning pydantic errors into :class:`InvalidTableError`."""
        if isinstance(data, Table):
            return data
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                ctx = err.get("ctx") or {}
                inner = ctx.get("error")
                if isinstance(inner, InvalidTableError):
                    raise inner from None
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "table"
            raise InvalidTableError("malformed_table", f"{where}: {first['msg']}") from None


def check_table(table: Table) -> None:
    """Raise :class:`InvalidTableError` for no columns, empty/duplicate names, ragged rows,
    and text no stage can use (:mod:`cta.text`: lone surrogates, NUL, control characters).

    Names are duplicates when they share a :func:`name_key` (``first_name``, ``First Name``
    and ``firstName`` are one column to every stage), not only when they are equal.
    """
    if not table.columns:
        raise InvalidTableError("no_columns", "table has no columns")
    for where, text in table_strings(table):
        problem = text_problem(text)
        if problem is not None:
            raise InvalidTableError("invalid_text", f"{where}: {problem}")
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row):
            found = find_bad_text(cell, f"rows.{r}.{c}") if isinstance(cell, list | dict) else None
            if found is not None:
                raise InvalidTableError("invalid_text", f"{found[0]}: {found[1]}")
    seen: dict[str, int] = {}
    for i, col in enumerate(table.columns):
        if not col.name or not col.name.strip():
            raise InvalidTableError("empty_column_name", f"column {i} has an empty name")
        key = name_key(col.name)
        if key in seen:
            first = table.columns[seen[key]].name
            same = "appears twice" if first == col.name else f"is the same name as {first!r}"
            raise InvalidTableError(
                "duplicate_column_name",
                f"column name {col.name!r} {same} (columns {seen[key]} and {i})",
            )
        seen[key] = i
    width = len(table.columns)
    for r, row in enumerate(table.rows):
        if len(row) != width:
            raise InvalidTableError(
                "ragged_rows", f"row {r} has {len(row)} cells but the table has {width} columns"
            )
    if table.target_columns is not None:
        for name in table.target_columns:
            try:
                table.column(name)  # the lookup every stage makes: valid here, found there
            except InvalidTableError:
                raise InvalidTableError(
                    "unknown_column", f"target column {name!r} is not a column of the table"
                ) from None
    if table.sql and table.questions and len(table.sql) != len(table.questions):
        raise InvalidTableError(
            "misaligned_sql",
            f"{len(table.questions)} questions but {len(table.sql)} SQL queries",
        )


def table_strings(table: Table) -> Iterator[tuple[str, str]]:
    """Every string of a table with its path (``columns.2.name``, ``rows.0.1`` …); a cell
    holding a list or an object is given as a whole (its ``repr``)."""
    for key in ("id", "name", "caption", "primary_entity", "source"):
        value = getattr(table, key)
        if isinstance(value, str):
            yield key, value
    for i, col in enumerate(table.columns):
        yield f"columns.{i}.name", col.name
        if col.original_name:
            yield f"columns.{i}.original_name", col.original_name
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row):
            if isinstance(cell, str):
                yield f"rows.{r}.{c}", cell
            elif isinstance(cell, list | dict):
                yield f"rows.{r}.{c}", repr(cell)
    for i, question in enumerate(table.questions):
        yield f"questions.{i}", question
    for i, query in enumerate(table.sql):
        yield f"sql.{i}", query
    for i, name in enumerate(table.target_columns or []):
        yield f"target_columns.{i}", name
    for i, name in enumerate(table.primary_key):
        yield f"primary_key.{i}", name
    for i, fk in enumerate(table.foreign_keys):
        yield f"foreign_keys.{i}.column", fk.column
        yield f"foreign_keys.{i}.ref_table", fk.ref_table
        yield f"foreign_keys.{i}.ref_column", fk.ref_column
