"""Small shared helpers of the CLI: reading a table argument, printing JSON stably."""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel

from cta.table import InvalidTableError, Table


def read_table(path: str) -> Table:
    """A table from a file (our JSON, CSV, WDC JSON…) or ``-`` for JSON on stdin."""
    if path == "-":
        try:
            return Table.parse(json.load(sys.stdin))
        except json.JSONDecodeError as exc:
            raise InvalidTableError("malformed_json", f"stdin: {exc}") from None
    from cta.formats.tables import load_any

    return load_any(path)


def print_json(obj: BaseModel | Any) -> None:
    """Deterministic JSON on stdout (sorted keys are not used: models keep field order)."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
