"""The summary ``cta perturb`` prints on a terminal: every column, its RPL/ADD names, and the
sampled tables with their new headers — checked against real pipeline results."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cta.cli.render import ADDED_MARK, ELLIPSIS, NONE_MARK, render_summary, text_table
from cta.pipeline import Pipeline
from cta.results import (
    ColumnPerturbations,
    Decision,
    PerturbationResult,
    PerturbedTable,
    PerturbOptions,
)
from cta.table import Table

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_HEADING = re.compile(r"^(RPL|ADD) sample (\d+) \(seed (\d+)\)$")

BOOKS = {
    "name": "books",
    "columns": [
        {"name": "title", "type": "text"},
        {"name": "author", "type": "text"},
        {"name": "publisher", "type": "text"},
        {"name": "publication year", "type": "number"},
        {"name": "price", "type": "number"},
    ],
    "rows": [
        ["The Silent Orchard", "Mara Lindqvist", "Harbor Press", 2011, 14.99],
        ["Iron and Salt", "Teodor Vance", "Northgate", 1998, 18.5],
        ["Small Hours", "Ines Okafor", "Harbor Press", 2019, 11.0],
        ["Dune", "Frank Herbert", "Chilton", 1965, 9.5],
        ["Emma", "Jane Austen", "Murray", 1815, 7.0],
    ],
}


# -- reading the summary back -----------------------------------------------------------------
def _blocks(text: str) -> list[str]:
    return text.rstrip("\n").split("\n\n")


def _items(lines: list[str], prefix: str, sep: str) -> list[str]:
    """The items of a wrapped ``prefix item, item, …`` line (continuation lines joined)."""
    joined = " ".join(line.strip() for line in lines)
    assert joined.startswith(prefix.strip()), (prefix, joined)
    return joined[len(prefix.strip()) :].strip().split(sep)


def _column_sections(text: str) -> dict[str, dict[str, list[str]]]:
    """``{column: {"RPL": names, "ADD": names}}`` from the column block of a summary."""
    block = _blocks(text)[2]
    sections: dict[str, dict[str, list[list[str]]]] = {}
    current: list[str] | None = None
    column = ""
    for line in block.splitlines():
        if not line.startswith(" "):
            column = line
            sections[column] = {}
        elif line.startswith(("  RPL  ", "  ADD  ")):
            current = [line]
            sections[column].setdefault(line.split()[0], []).append(current)
        else:
            assert current is not None and line.startswith("       "), line
            current.append(line)
    return {
        col: {kind: _items(lines[0], kind, ", ") for kind, lines in parts.items()}
        for col, parts in sections.items()
    }


def _sample_sections(text: str) -> list[dict[str, object]]:
    """Each sample: kind, seed, its mapping items, and the header cells of its grid blocks."""
    samples: list[dict[str, object]] = []
    for block in _blocks(text):
        lines = block.splitlines()
        heading = SAMPLE_HEADING.match(lines[0])
        if heading:
            detail = "\n".join(lines[1:])
            samples.append(
                {"kind": heading[1], "seed": int(heading[3]), "detail": detail, "grids": []}
            )
        elif samples and len(lines) >= 2 and re.fullmatch(r"  -[-+]*", lines[1]):
            grids = samples[-1]["grids"]
            assert isinstance(grids, list)
            grids.append(lines)
    return samples


def _mapping_items(detail: str, label: str) -> list[str]:
    lines = detail.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {label}: "))
    own = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * (len(label) + 4)):
            break
        own.append(line)
    return _items(own, f"{label}:", " · ")


def _expected_names(names: list[str], max_names: int = 8) -> list[str]:
    if not names:
        return [NONE_MARK]
    if len(names) <= max_names:
        return names
    return [*names[:max_names], f"{ELLIPSIS} (+{len(names) - max_names} more)"]


def check_summary(text: str, result: PerturbationResult, table: Table) -> None:
    """Every column of the table appears; each target's names; each sample's table."""
    assert text.splitlines()[0].startswith(f"{table.title} · {len(table.columns)} columns")
    sections = _column_sections(text)
    assert list(sections) == [c.column for c in result.columns]
    for column in result.columns:
        assert sections[column.column]["RPL"] == _expected_names([d.name for d in column.replace])
        assert sections[column.column]["ADD"] == _expected_names([d.name for d in column.add])
    targets = {c.column for c in result.columns}
    for name in table.column_names:
        if name not in targets:
            assert re.search(
                rf"^not perturbed \(not targets\): .*\b{re.escape(name)}\b", text, re.M
            )

    samples = _sample_sections(text)
    assert len(samples) == len(result.samples)
    for shown, sample in zip(samples, result.samples, strict=True):
        assert shown["kind"] == sample.kind.upper() and shown["seed"] == sample.seed
        detail = shown["detail"]
        assert isinstance(detail, str)
        grids = shown["grids"]
        assert isinstance(grids, list)
        if not sample.mapping:
            assert "unchanged" in detail and grids == []
            continue
        added = set(sample.mapping.values()) if sample.kind == "add" else set()
        if sample.kind == "rpl":
            pairs = [f"{old} → {new}" for old, new in sample.mapping.items()]
            assert _mapping_items(detail, "renamed") == pairs
        else:
            pairs = [f"{ADDED_MARK}{new} (beside {old})" for old, new in sample.mapping.items()]
            assert _mapping_items(detail, "added") == pairs
        headers = [cell.strip() for grid in grids for cell in grid[0].split(" | ")]
        assert headers == [
            f"{ADDED_MARK}{n}" if n in added else n for n in sample.table.column_names
        ]
        first_cells = [cell.strip() for grid in grids for cell in grid[2].split(" | ")]
        expected_first = ["NULL" if v is None else str(v) for v in sample.table.rows[0]]
        assert [c.rstrip(ELLIPSIS) for c in first_cells] == [
            e[: len(c.rstrip(ELLIPSIS))] for c, e in zip(first_cells, expected_first, strict=True)
        ]
        for name, why in sample.unperturbed.items():
            assert name in detail and why.replace("_", " ") in detail


# -- the pure renderer, on hand-made results -----------------------------------------------------
def _decision(name: str) -> Decision:
    return Decision(name=name, e1=0.9, e2=0.9, source="retriever")


def test_long_name_lists_are_cut_and_empty_ones_marked() -> None:
    table = Table.parse(BOOKS)
    many = [f"name {i}" for i in range(11)]
    result = PerturbationResult(
        table_id=None,
        primary_entity="book",
        entity_source="table-name",
        columns=[
            ColumnPerturbations(column="title", replace=[_decision(n) for n in many]),
            ColumnPerturbations(column="price", add=[_decision("discount")]),
        ],
    )
    text = render_summary(result, table)
    sections = _column_sections(text)
    assert sections["title"]["RPL"] == [*many[:8], f"{ELLIPSIS} (+3 more)"]
    assert sections["title"]["ADD"] == [NONE_MARK]
    assert sections["price"] == {"RPL": [NONE_MARK], "ADD": ["discount"]}
    assert "not perturbed (not targets): author, publisher, publication year" in text
    assert render_summary(result, table, max_names=None).count("name 10") == 1
    assert "primary entity: book (from the table name)" in text.splitlines()[0]


def test_sampled_tables_split_into_blocks_that_fit_and_cut_rows() -> None:
    table = Table.parse(BOOKS)
    wide = table.model_copy(
        update={
            "columns": [c.model_copy(update={"name": f"{c.name} renamed"}) for c in table.columns]
        }
    )
    sample = PerturbedTable(
        kind="rpl",
        seed=3,
        mapping={n: f"{n} renamed" for n in table.column_names},
        table=wide,
    )
    result = PerturbationResult(
        table_id=None,
        primary_entity="book",
        entity_source="given",
        columns=[ColumnPerturbations(column=n) for n in table.column_names],
        samples=[sample],
    )
    text = render_summary(result, table, width=60)
    check_summary(text, result, table)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "(2 more rows)" in text  # five rows, three shown
    grid = text_table(["n", "name"], [[1, "a"], [22, "b"]])
    assert grid.splitlines()[2:] == [" 1 | a", "22 | b"]  # numbers right-aligned
    assert "(1 more row)" not in text_table(["a"], [[1], [2], [3], [4]])  # shown instead


def test_a_sample_without_any_name_says_so() -> None:
    table = Table.parse(BOOKS)
    sample = PerturbedTable(kind="add", seed=0, unperturbed={"title": "no_candidates"}, table=table)
    result = PerturbationResult(
        table_id="t",
        primary_entity="book",
        entity_source="predicted",
        columns=[ColumnPerturbations(column="title")],
        samples=[sample],
    )
    text = render_summary(result)
    assert text.splitlines()[0] == "t · primary entity: book (predicted from the columns)"
    assert "ADD sample 1 (seed 0)\n  unchanged: no target column has a usable ADD name" in text


# -- on the real pipeline --------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    ("over", "thresholds"),
    [
        ({}, {"rpl_threshold": 0.0, "add_threshold": 1.0}),  # every candidate is both
        ({"target_columns": ["author", "price"]}, {"rpl_threshold": 0.0, "add_threshold": 1.0}),
        ({}, {}),  # the settings' thresholds
    ],
)
def test_summary_of_real_results(
    tiny_pipeline: Pipeline, over: dict[str, object], thresholds: dict[str, float]
) -> None:
    table = Table.parse({**BOOKS, **over})
    result = tiny_pipeline.perturb(table, PerturbOptions(seed=0, samples=2, **thresholds))
    assert sum(len(c.replace) + len(c.add) for c in result.columns) >= 1
    assert len(result.samples) == 4
    if thresholds:
        assert all(c.replace and c.add for c in result.columns)
        assert all(s.mapping for s in result.samples)
    text = render_summary(result, table)
    check_summary(text, result, table)
    for name in table.column_names:
        assert name in text


@pytest.mark.slow
def test_cli_prints_a_summary_on_a_terminal_and_json_otherwise(
    tiny_pipeline: Pipeline,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cta.cli.main import main

    monkeypatch.setattr(Pipeline, "from_settings", classmethod(lambda cls, s: tiny_pipeline))
    path = tmp_path / "books.json"
    path.write_text(json.dumps(BOOKS))
    argv = ["perturb", str(path), "--samples", "1"]

    assert main(argv) == 0  # stdout is not a terminal here: JSON
    as_json = json.loads(capsys.readouterr().out)
    result = PerturbationResult.model_validate(as_json)
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == as_json

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(argv) == 0
    summary = capsys.readouterr().out
    check_summary(summary, result, Table.parse(BOOKS))
    assert main([*argv, "--format", "summary"]) == 0
    assert capsys.readouterr().out == summary
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == as_json


@pytest.mark.slow
def test_cli_stderr_is_quiet(tiny_env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "books.json"
    path.write_text(json.dumps(BOOKS))
    cmd = [sys.executable, "-m", "cta.cli.main", "perturb", str(path), "--format", "summary"]
    proc = subprocess.run(cmd, env=tiny_env, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("books · 5 columns, 5 rows · primary entity: book")
    for noise in ("lifecycle", "Loading weights", "LOAD REPORT", "Warning", " INFO ", "Traceback"):
        assert noise not in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("name", ["books", "employees", "football_matches"])
def test_showcase_tables_are_valid_and_realistic(name: str) -> None:
    from cta.formats.tables import load_any

    table = load_any(ROOT / "examples" / f"{name}.json")
    assert table.name and 6 <= len(table.columns) <= 9 and 3 <= len(table.rows) <= 5
    for index, column in enumerate(table.columns):
        values = table.column_values(index)
        assert all(v is not None and v != "" for v in values), column.name
