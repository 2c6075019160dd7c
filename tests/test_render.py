"""The summary ``cta perturb`` prints on a terminal: every column, its RPL/ADD names, and the
sampled tables with their new headers — checked against real pipeline results."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
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


# -- the grid of a sample (text_table), read back by position ------------------------------------
GRID_HEADERS = ["id", "a header far wider than any of its cells", "note", "price", "flag", "gone"]
GRID_ROWS: list[list[object]] = [
    [7, "x", "short", 14.99, True, None],
    [1234, "y", "a cell much longer than the limit", 8.5, False, None],
    [56, "z\n  wrapped", "[bold]markup[/] :smile:", 100.0, True, None],
    [9, "w", "unseen", 1.0, True, None],
    [10, "v", "unseen", 2.0, False, None],
    [11, "u", "unseen", 3.0, True, None],
]


def _display(value: object, max_cell: int) -> str:
    """What a cell should show: NULL, true/false, whitespace collapsed, cut with … ."""
    if value is None:
        text = "NULL"
    elif isinstance(value, bool):
        text = str(value).lower()
    else:
        text = " ".join(str(value).split())
    return text if len(text) <= max_cell else text[: max_cell - 1] + ELLIPSIS


def _read_grid(text: str) -> tuple[list[list[list[str]]], str | None]:
    """The blocks of a ``text_table`` as rows (header first) of raw cells, padding kept, cut
    where the ``+`` of the rule under the header stands; and its ``(N more rows)`` line."""
    lines = text.split("\n")
    more = lines.pop() if lines and lines[-1].startswith("(") else None
    blocks = []
    for block in "\n".join(lines).split("\n\n"):
        head, rule, *body = block.split("\n")
        assert re.fullmatch(r"-+(\+-+)*", rule), rule
        cuts = [i for i, c in enumerate(rule) if c == "+"]
        bounds = list(zip([0, *(c + 1 for c in cuts)], [*cuts, len(rule)], strict=True))
        rows = []
        for line in [head, *body]:
            assert len(line) <= len(rule), line
            line = line.ljust(len(rule))
            assert all(line[c] == "|" for c in cuts), (line, rule)
            rows.append([line[a:b] for a, b in bounds])
        blocks.append(rows)
    return blocks, more


def _left(cell: str) -> int:
    return len(cell) - len(cell.lstrip())


@pytest.mark.parametrize("width", [30, 45, 60, 200])
def test_a_grid_keeps_headers_cuts_cells_aligns_numbers_and_fits(width: int) -> None:
    max_rows, max_cell = 3, 12
    text = text_table(GRID_HEADERS, GRID_ROWS, max_rows=max_rows, max_cell=max_cell, width=width)
    assert "\x1b" not in text and all(line == line.rstrip() for line in text.splitlines())
    blocks, more = _read_grid(text)
    assert more == f"({len(GRID_ROWS) - max_rows} more rows)"
    columns = [
        [row[i] for row in block] for block in blocks for i in range(len(block[0]))
    ]  # each column: its header cell, then its cells, across the blocks
    assert [c[0].strip() for c in columns] == GRID_HEADERS  # every header, whole, in order
    assert all(_left(c[0]) <= 1 for c in columns)  # headers left-aligned, over numbers too
    for index, column in enumerate(columns):
        values = [row[index] for row in GRID_ROWS[:max_rows]]
        assert [c.strip() for c in column[1:]] == [_display(v, max_cell) for v in values]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            assert len({len(c.rstrip()) for c in column[1:]}) == 1  # one right edge
            assert len({_left(c) for c in column[1:]}) > 1  # not a left edge
        else:
            assert len({_left(c) for c in column}) == 1  # one left edge, header included
    assert any(ELLIPSIS in c for column in columns for c in column)  # something was cut
    widest_header = max(len(h) for h in GRID_HEADERS)
    for block in text.split("\n\n"):
        block_width = max(len(line) for line in block.splitlines() if not line.startswith("("))
        assert block_width <= max(width, widest_header)
    assert len(blocks) == 1 or width < sum(len(h) + 3 for h in GRID_HEADERS)


def test_a_grid_splits_into_balanced_blocks() -> None:
    """Four equal columns where three fit: two blocks of two, not three and a stray one."""
    headers = [c * 10 for c in "abcd"]
    fits_three = 3 * 10 + 2 * 3
    blocks, _ = _read_grid(text_table(headers, [[1, 2, 3, 4]], width=fits_three))
    assert [len(block[0]) for block in blocks] == [2, 2]
    blocks, _ = _read_grid(text_table(headers, [[1, 2, 3, 4]], width=fits_three + 13))
    assert [len(block[0]) for block in blocks] == [4]


def test_a_header_wider_than_the_grid_is_shown_whole() -> None:
    header = "a header " * 8
    text = text_table(["n", header.strip()], [[1, "cell"]], width=20)
    blocks, _ = _read_grid(text)
    assert [block[0][0].strip() for block in blocks] == ["n", header.strip()]


def test_more_rows_line_only_for_two_or_more_hidden_rows() -> None:
    for total, shown, more in [(3, 3, None), (4, 4, None), (5, 3, "(2 more rows)")]:
        blocks, line = _read_grid(text_table(["n"], [[i] for i in range(total)], max_rows=3))
        assert len(blocks[0]) - 1 == shown and line == more


def test_a_grid_is_plain_text_whatever_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same bytes with a narrow COLUMNS, colour forced, a dumb TTY: no escape codes, no cut."""
    headers = [f"column number {i}" for i in range(6)]
    rows = [[i * 1000 + j for j in range(6)] for i in range(5)]
    plain = text_table(headers, rows, width=120)
    assert max(len(line) for line in plain.splitlines()) > 80  # wider than a default console
    for name, value in [
        ("COLUMNS", "20"),
        ("FORCE_COLOR", "1"),
        ("TTY_COMPATIBLE", "1"),
        ("TERM", "dumb"),
        ("COLORTERM", "truecolor"),
    ]:
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    again = text_table(headers, rows, width=120)
    assert again == plain and "\x1b" not in again
    blocks, _ = _read_grid(again)
    assert [c.strip() for block in blocks for c in block[0]] == headers


def test_a_grid_measures_wide_characters_in_cells() -> None:
    """East Asian wide characters take two cells: blocks fit and cuts count cells."""

    def cells(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    text = text_table(["名前", "city"], [["日本語のテキスト" * 3, "東京"]], max_cell=10, width=14)
    lines = text.splitlines()
    assert all(cells(line) <= 14 for line in lines)
    cut = next(line for line in lines if ELLIPSIS in line).strip()
    assert cells(cut) <= 10 and cut.startswith("日本語")
    assert "名前" in text and "city" in text and "東京" in text


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
