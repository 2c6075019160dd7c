"""Small shared helpers of the CLI: settings, reading a table argument, printing JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cta.settings import Settings, get_settings
from cta.table import InvalidTableError, Table


def settings_with_index(index: str | None) -> Settings:
    """The process settings, with ``--index DIR`` (when given) as the retriever's index."""
    settings = get_settings()
    if index:
        settings = settings.model_copy(update={"index_dir": Path(index)})
    return settings


def read_table(path: str) -> Table:
    """A table from a file (our JSON, CSV, WDC JSON…) or ``-`` for JSON on stdin."""
    if path == "-":
        try:
            return Table.parse(json.load(sys.stdin))
        except json.JSONDecodeError as exc:
            raise InvalidTableError("malformed_json", f"stdin: {exc}") from None
    from cta.formats.tables import load_any

    return load_any(path)


def read_table_or_report(path: str, command: str) -> Table | None:
    """:func:`read_table`, printing ``cta COMMAND: invalid table: …`` on stderr when invalid."""
    try:
        return read_table(path)
    except InvalidTableError as exc:
        print(f"cta {command}: invalid table: {exc}", file=sys.stderr)
        return None


def print_json(obj: BaseModel | Any) -> None:
    """JSON on stdout in the models' field order, so equal results print equal bytes."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
