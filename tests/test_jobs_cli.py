"""``cta jobs submit`` reads a dataset as a Spider job or as tables, by its content."""

from __future__ import annotations

import json
from pathlib import Path

from service_fakes import wtq_like_table

from cta.cli.jobs import read_dataset

SPIDER_DB = {
    "db_id": "pets",
    "table_names": ["pet"],
    "table_names_original": ["Pets"],
    "column_names": [[-1, "*"], [0, "pet id"]],
    "column_names_original": [[-1, "*"], [0, "PetID"]],
    "column_types": ["text", "number"],
    "primary_keys": [1],
    "foreign_keys": [],
}


def test_a_spider_tables_json_is_sent_as_a_spider_job(tmp_path: Path) -> None:
    path = tmp_path / "tables.json"
    path.write_text(json.dumps([SPIDER_DB]))
    assert read_dataset(path) == ("spider", [SPIDER_DB])


def test_table_files_and_folders_are_sent_as_tables(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_text(json.dumps(wtq_like_table(1)) + "\n")
    (tmp_path / "a.json").write_text(json.dumps(wtq_like_table(0)))
    (tmp_path / "c.csv").write_text("city,population\nOslo,700000\n")
    (tmp_path / "notes.txt").write_text("ignored")
    kind, tables = read_dataset(tmp_path)
    assert kind == "tables"
    assert [t["id"] for t in tables[:2]] == ["t0", "t1"]
    assert [c["name"] for c in tables[2]["columns"]] == ["city", "population"]
    kind, single = read_dataset(tmp_path / "b.jsonl")
    assert (kind, [t["id"] for t in single]) == ("tables", ["t1"])
