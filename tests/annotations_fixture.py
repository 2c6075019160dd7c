"""A tiny annotations directory in the format of ``data/annotations`` (two train tables, one dev)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import columns

TINY_TABLES = [
    {
        "id": "csv:novels.csv",
        "split": "train",
        "name": "novels",
        "entity": "novel",
        "columns": columns("title", "writer", "year:number"),
        "rows": [["Dune", "Herbert", 1965]],
        "targets": {
            "writer": {
                "equivalent": ["author", "novelist"],
                "associated": ["publisher", "editor"],
                "neither": ["scribe", "Writer Notes mm", "typist"],
            },
            "year": {
                "equivalent": ["publication year"],
                "associated": ["pages"],
                "neither": ["twelvemonth", "class"],
            },
        },
    },
    {
        "id": "csv:singers.csv",
        "split": "train",
        "name": "singers",
        "entity": "singer",
        "columns": columns("singer_name", "age:number"),
        "rows": [],
        "targets": {
            "singer_name": {
                "equivalent": ["name"],
                "associated": ["genre"],
                "neither": ["vocalist"],
            }
        },
    },
    {
        "id": "csv:concerts.csv",
        "split": "dev",
        "name": "concerts",
        "entity": "concert",
        "columns": columns("venue", "capacity:number"),
        "rows": [],
        "targets": {
            "venue": {"equivalent": ["location"], "associated": ["stage"], "neither": ["locale"]}
        },
    },
]

TINY_THESAURUS = [
    {
        "name": "title",
        "sense": "name of a work",
        "type": "text",
        "equivalent": ["name", "book title"],
        "associated": ["author", "genre"],
        "tables_seen": 3,
    },
    {
        "name": "price",
        "sense": "amount asked for an item",
        "type": "number",
        "equivalent": ["cost"],
        "associated": ["discount", "tax"],
        "tables_seen": 2,
    },
]


def write_tiny_annotations(directory: Path) -> Path:
    """Write ``tables.jsonl`` and ``thesaurus.jsonl`` under ``directory`` and return it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tables.jsonl").write_text(
        "".join(json.dumps(t) + "\n" for t in TINY_TABLES), encoding="utf-8"
    )
    (directory / "thesaurus.jsonl").write_text(
        "".join(json.dumps(t) + "\n" for t in TINY_THESAURUS), encoding="utf-8"
    )
    return directory
