"""Reading the files tables come in, with the loaders' errors
(:class:`cta.table.InvalidTableError`): ``not_utf8`` for a file that is not UTF-8,
``invalid_json`` for text that is not JSON (a JSON Lines file names the line),
``malformed_table`` for JSON of the wrong shape, and the table model's own problems named with
where the table came from."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cta.table import InvalidTableError, Table

__all__ = ["build_table", "json_lines", "parse_json_line", "read_json", "read_text", "require_key"]


def read_text(path: str | Path) -> str:
    """A file's text (``not_utf8`` when it is not UTF-8; a BOM is dropped)."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidTableError(
            "not_utf8", f"{path} is not UTF-8 (invalid byte at offset {exc.start})"
        ) from None


def read_json(path: str | Path) -> Any:
    """A JSON file's value (``invalid_json`` when it is not JSON)."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidTableError("invalid_json", f"{path}: {exc}") from None


def parse_json_line(line: str, where: str) -> Any:
    """One line of JSON (``invalid_json``, naming ``where``, when it is not)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidTableError("invalid_json", f"{where}: {exc}") from None


def json_lines(text: str, where: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of JSON Lines text (``invalid_json``,
    naming ``where:line``, for a line that is not JSON)."""
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield n, parse_json_line(line, f"{where}:{n}")


def require_key(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]``, which must exist and be a ``kind`` (``malformed_table``, naming
    ``where``)."""
    if not isinstance(obj, Mapping) or key not in obj:
        raise InvalidTableError("malformed_table", f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise InvalidTableError("malformed_table", f"{where}: {key!r} has the wrong type")
    return value


def build_table(where: str, **fields: Any) -> Table:
    """Validate a table, naming ``where`` it came from in the error."""
    try:
        return Table.parse(fields)
    except InvalidTableError as exc:
        raise InvalidTableError(exc.problem, f"{where}: {exc.message}") from None
