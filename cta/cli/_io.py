"""Small shared helpers of the CLI: settings, reading a table argument, errors, printing JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cta.formats.tables import load_any
from cta.settings import Settings, get_settings
from cta.table import InvalidTableError, Table

# Exit status of a command given bad input (a missing file, malformed JSON, a bad option).
EXIT_USAGE = 2


def error(message: str) -> int:
    """Print ``cta: error: MESSAGE`` (one line) on stderr; return :data:`EXIT_USAGE`."""
    print(f"cta: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_USAGE


def describe_error(exc: BaseException) -> str:
    """One line for an error: ``PATH: reason`` for a file the system refused, else its text."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror.lower()}"
    return str(exc) or type(exc).__name__


def settings_with_index(index: str | None) -> Settings:
    """The process settings, with ``--index DIR`` (when given) as the retriever's index."""
    settings = get_settings()
    if index:
        settings = settings.model_copy(update={"index_dir": Path(index)})
    return settings


def check_input_path(path: str | Path, what: str = "file") -> None:
    """Raise :class:`InvalidTableError` unless ``path`` exists and is a ``what`` (file/folder)."""
    p = Path(path)
    if not p.exists():
        raise InvalidTableError("not_found", f"{path}: no such file or folder")
    if what == "file" and p.is_dir():
        raise InvalidTableError("is_a_folder", f"{path}: is a folder, expected a file")
    if what == "folder" and not p.is_dir():
        raise InvalidTableError("not_a_folder", f"{path}: is a file, expected a folder")


def read_table(path: str) -> Table:
    """A table from a file (our JSON, CSV, WDC JSON…) or ``-`` for JSON on stdin."""
    if path == "-":
        try:
            return Table.parse(json.load(sys.stdin))
        except json.JSONDecodeError as exc:
            raise InvalidTableError("malformed_json", f"stdin: {exc}") from None
    check_input_path(path)
    try:
        return load_any(path)
    except OSError as exc:
        raise InvalidTableError("unreadable", f"{path}: {exc.strerror or exc}") from None


def describe_table_error(path: str, exc: InvalidTableError) -> str:
    """``PATH: message (problem)``, naming the file once whether or not the message did."""
    label = "stdin" if path == "-" else path
    message = exc.message
    if message.startswith(f"{label}: "):
        message = message[len(label) + 2 :]
    elif label in message:
        return f"{message} ({exc.problem})"
    return f"{label}: {message} ({exc.problem})"


def read_table_or_report(path: str) -> Table | None:
    """:func:`read_table`, printing ``cta: error: PATH: … (problem)`` on stderr when invalid."""
    try:
        return read_table(path)
    except InvalidTableError as exc:
        error(describe_table_error(path, exc))
        return None


def print_json(obj: BaseModel | Any) -> None:
    """JSON on stdout in the models' field order, so equal results print equal bytes."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
