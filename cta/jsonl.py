"""JSON Lines files of one object a line, read with errors that name the file and the line.

The shipped data folders (``data/annotations``, ``data/entity-schemas``) are written this way;
each reader passes its own error type, so a bad file is refused in the reader's own words.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["read_objects"]


def read_objects(path: Path, error: type[ValueError]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of every non-blank line of ``path``; ``error`` (one line,
    ``file:line``) for a missing file, a line that is not JSON, or one that is not an object."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"file not found: {path}") from None
    except OSError as exc:
        raise error(f"{path}: {exc.strerror or exc}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise error(f"{path}:{n}: not a JSON object")
        yield n, obj
