"""Table loaders: each format, type inference, and every bad-input case of every loader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cta.formats.spider_schema import load_spider_database, load_spider_tables
from cta.formats.tables import (
    infer_column_type,
    json_value,
    load_any,
    load_csv,
    load_dataframe,
    load_table_json,
    load_tables,
    load_wdc_table,
    load_wikisql_table,
)
from cta.table import ColumnType, ForeignKey, InvalidTableError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
LATIN1 = "name,città\nRoma,Italia\n".encode("latin-1")


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# -- type inference -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1969", "1971", "", "–"], ColumnType.NUMBER),  # years are numbers; nulls ignored
        (["1,234", "$5", "-3.5", "12%", "1e3"], ColumnType.NUMBER),
        (["2010-05-01", "May 1, 2010", "1 June 2011", "12:30"], ColumnType.TIME),
        (["yes", "No", "TRUE", "f"], ColumnType.BOOLEAN),
        (["Rome", "Paris", "12"], ColumnType.TEXT),
        ([None, "", "n/a"], ColumnType.TEXT),
        ([1, 2.5, None], ColumnType.NUMBER),
        ([True, False], ColumnType.BOOLEAN),
        (["number", "number"], ColumnType.TEXT),  # words, not typed cells
        ([str(i) for i in range(19)] + ["unknown"], ColumnType.NUMBER),  # 95% ≥ 90%
        ([str(i) for i in range(8)] + ["a", "b"], ColumnType.TEXT),  # 80% < 90%
    ],
)
def test_infer_column_type(values: list[Any], expected: ColumnType) -> None:
    assert infer_column_type(values) == expected


def test_json_value_makes_cells_serialisable() -> None:
    cells = [
        np.int64(3),
        np.float32(1.5),
        np.bool_(True),
        float("nan"),
        pd.NaT,
        pd.NA,
        pd.Timestamp("2020-01-02 03:04:05"),
    ]
    out = [json_value(c) for c in cells]
    assert out == [3, 1.5, True, None, None, None, "2020-01-02T03:04:05"]
    assert [type(v) for v in out[:3]] == [int, float, bool]


# -- CSV ---------------------------------------------------------------------------------------
def test_load_csv_wtq_style(tmp_path: Path) -> None:
    # Multi-line quoted header cells and backslash-escaped quotes, as in WTQ.
    content = (
        '"Year","Title","Chart-Positions\nUK","Released","Live"\n'
        '"1969","Episode: \\"Pilot\\"","60","1969-05-01","yes"\n'
        '"1971","Illusion","–","1971-02-03","no"\n'
        '"1972","Prologue","","1972-09-10","no"\n'
    )
    table = load_csv(write(tmp_path / "t.csv", content), "Renaissance")
    assert table.name == "Renaissance"
    assert table.column_names == ["Year", "Title", "Chart-Positions UK", "Released", "Live"]
    assert [c.type for c in table.columns] == [
        ColumnType.NUMBER,
        ColumnType.TEXT,
        ColumnType.NUMBER,
        ColumnType.TIME,
        ColumnType.BOOLEAN,
    ]
    assert table.rows[0][1] == 'Episode: "Pilot"'
    assert len(table.rows) == 3


def test_load_csv_rfc_quotes_and_max_rows(tmp_path: Path) -> None:
    content = 'name,quote\nAnn,"she said ""hi"""\nBob,x\nCy,y\n'
    table = load_csv(write(tmp_path / "school_pupils.csv", content), max_rows=2)
    assert table.name == "school pupils"  # from the file name
    assert table.rows == [["Ann", 'she said "hi"'], ["Bob", "x"]]


# -- every bad input of every loader ------------------------------------------------------------
def _csv(problem: str, tmp: Path) -> Any:
    content: str | bytes = {
        "no_columns": "",
        "duplicate_column_name": "a,A\n1,2\n",
        "empty_column_name": "a, \n1,2\n",
        "ragged_rows": "a,b\n1,2\n3\n",
        "not_utf8": LATIN1,
        "invalid_csv": 'a,b\n"unterminated,2\n',
    }[problem]
    return load_csv(write(tmp / "t.csv", content))


def _table_json(problem: str, tmp: Path) -> Any:
    content: str | bytes = {
        "no_columns": json.dumps({"columns": []}),
        "duplicate_column_name": json.dumps({"columns": [{"name": "a"}, {"name": "a"}]}),
        "empty_column_name": json.dumps({"columns": [{"name": "a"}, {"name": ""}]}),
        "ragged_rows": json.dumps({"columns": [{"name": "a"}], "rows": [[1, 2]]}),
        "not_utf8": b'{"name": "caf\xe9", "columns": [{"name": "a"}]}',
        "invalid_json": '{"columns": [',
    }[problem]
    return load_table_json(write(tmp / "t.json", content))


def _wdc(problem: str, tmp: Path) -> Any:
    relations = {
        "no_columns": [],
        "duplicate_column_name": [["Club", "Barca"], ["club", "Madrid"]],
        "empty_column_name": [["Club", "Barca"], ["", "Spain"]],
        "ragged_rows": [["Club", "Barca", "Juve"], ["Country", "Spain"]],
    }
    if problem == "not_utf8":
        return load_wdc_table(write(tmp / "t.json", b'{"relation": [["caf\xe9"]]}'))
    if problem == "invalid_json":
        return load_wdc_table(write(tmp / "t.json", '{"relation": [["a"]'))
    return load_wdc_table({"relation": relations[problem], "hasHeader": True})


def _wikisql(problem: str, tmp: Path) -> Any:
    base = {"id": "1-1", "header": ["a", "b"], "types": ["text", "real"], "rows": [["x", 1]]}
    if problem == "not_utf8":  # file-level: the .jsonl path of load_tables
        return load_tables(write(tmp / "t.tables.jsonl", b'{"id": "caf\xe9"}\n'))
    if problem == "invalid_json":
        return load_wikisql_table('{"id": "1-1", "header": [')
    changes = {
        "no_columns": {"header": [], "types": [], "rows": []},
        "duplicate_column_name": {"header": ["a", "A"]},
        "empty_column_name": {"header": ["a", "  "]},
        "ragged_rows": {"rows": [["x", 1], ["y"]]},
    }[problem]
    return load_wikisql_table(json.dumps({**base, **changes}))


def _spider_entry(columns: list[list[Any]]) -> dict[str, Any]:
    return {
        "db_id": "db",
        "table_names": ["singer"],
        "table_names_original": ["Singer"],
        "column_names": [[-1, "*"], *columns],
        "column_names_original": [[-1, "*"], *[[t, n.replace(" ", "_")] for t, n in columns]],
        "column_types": ["text"] * (len(columns) + 1),
        "primary_keys": [],
        "foreign_keys": [],
    }


def _spider(problem: str, tmp: Path) -> Any:
    if problem == "not_utf8":
        return load_spider_tables(write(tmp / "tables.json", b'[{"db_id": "caf\xe9"}]'))
    if problem == "invalid_json":
        return load_spider_tables(write(tmp / "tables.json", '[{"db_id": '))
    if problem == "malformed_table":  # Spider has no rows, so "ragged" is a bad schema
        entry = _spider_entry([[0, "name"]])
        entry["column_types"] = ["text"]
        return load_spider_database(entry)
    columns = {
        "no_columns": [],
        "duplicate_column_name": [[0, "name"], [0, "Name"]],
        "empty_column_name": [[0, "name"], [0, " "]],
    }[problem]
    return load_spider_tables([_spider_entry(columns)])


def _dataframe(problem: str, tmp: Path) -> Any:
    frames = {
        "no_columns": pd.DataFrame(),
        "duplicate_column_name": pd.DataFrame([[1, 2]], columns=["a", "a"]),
        "empty_column_name": pd.DataFrame([[1, 2]], columns=["a", ""]),
    }
    return load_dataframe(frames[problem])


COMMON = ["no_columns", "duplicate_column_name", "empty_column_name"]
CASES: list[tuple[str, Callable[[str, Path], Any], str]] = [
    *[("csv", _csv, p) for p in [*COMMON, "ragged_rows", "not_utf8", "invalid_csv"]],
    *[("json", _table_json, p) for p in [*COMMON, "ragged_rows", "not_utf8", "invalid_json"]],
    *[("wdc", _wdc, p) for p in [*COMMON, "ragged_rows", "not_utf8", "invalid_json"]],
    *[("wikisql", _wikisql, p) for p in [*COMMON, "ragged_rows", "not_utf8", "invalid_json"]],
    *[("spider", _spider, p) for p in [*COMMON, "malformed_table", "not_utf8", "invalid_json"]],
    *[("dataframe", _dataframe, p) for p in COMMON],
]


@pytest.mark.parametrize(("fmt", "load", "problem"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_bad_input_names_the_problem(
    fmt: str, load: Callable[[str, Path], Any], problem: str, tmp_path: Path
) -> None:
    with pytest.raises(InvalidTableError) as err:
        load(problem, tmp_path)
    assert err.value.problem == problem
    assert problem in str(err.value)


# -- Spider ------------------------------------------------------------------------------------
SPIDER_DB = {
    "db_id": "concert",
    "table_names": ["stadium", "concert"],
    "table_names_original": ["stadium", "concert"],
    "column_names": [
        [-1, "*"],
        [0, "stadium id"],
        [0, "name"],
        [0, "capacity"],
        [1, "concert id"],
        [1, "stadium id"],
        [1, "date"],
    ],
    "column_names_original": [
        [-1, "*"],
        [0, "Stadium_ID"],
        [0, "Name"],
        [0, "Capacity"],
        [1, "concert_ID"],
        [1, "Stadium_ID"],
        [1, "Date"],
    ],
    "column_types": ["text", "number", "text", "number", "number", "text", "time"],
    "primary_keys": [1, 4],
    "foreign_keys": [[5, 1]],
}


def test_load_spider_database() -> None:
    stadium, concert = load_spider_database(SPIDER_DB)
    assert stadium.id == "concert.stadium" and stadium.source == "spider:concert"
    assert stadium.column_names == ["stadium id", "name", "capacity"]
    assert [c.original_name for c in stadium.columns] == ["Stadium_ID", "Name", "Capacity"]
    assert [c.type for c in concert.columns] == [
        ColumnType.NUMBER,
        ColumnType.TEXT,
        ColumnType.TIME,
    ]
    assert stadium.primary_key == ["Stadium_ID"] and concert.primary_key == ["concert_ID"]
    assert concert.foreign_keys == [
        ForeignKey(column="Stadium_ID", ref_table="stadium", ref_column="Stadium_ID")
    ]
    assert stadium.foreign_keys == []
    # Keys resolve through either spelling.
    assert concert.column("Stadium_ID").name == "stadium id"


def test_load_spider_tables_from_path(tmp_path: Path) -> None:
    path = write(tmp_path / "tables.json", json.dumps([SPIDER_DB]))
    assert [t.id for t in load_spider_tables(path)] == ["concert.stadium", "concert.concert"]
    assert [t.id for t in load_tables(path)] == ["concert.stadium", "concert.concert"]


def test_load_real_spider_tables() -> None:
    path = SHARED / "spider" / "tables.json"
    if not path.exists():
        pytest.skip(f"Spider data not present at {path}")
    tables = load_spider_tables(path)
    assert len(tables) == 876
    assert len({t.id for t in tables}) == 876


# -- WikiSQL ------------------------------------------------------------------------------------
def test_load_wikisql_table() -> None:
    line = json.dumps(
        {
            "id": "1-10015132-11",
            "header": ["Player", "No.", "Years in\nToronto"],
            "types": ["text", "real", "text"],
            "rows": [["Aleksandar Radojević", 25, "1999-2000"]],
            "page_title": "Toronto Raptors all-time roster",
            "section_title": "R",
            "caption": "R",
            "name": "table_10015132_11",
        }
    )
    table = load_wikisql_table(line)
    assert table.id == "1-10015132-11"
    assert table.name == "Toronto Raptors all-time roster" and table.caption == "R"
    assert table.column_names == ["Player", "No.", "Years in Toronto"]
    assert [c.type for c in table.columns] == [
        ColumnType.TEXT,
        ColumnType.NUMBER,
        ColumnType.TEXT,
    ]
    assert load_wikisql_table(json.loads(line)) == table


# -- WDC ---------------------------------------------------------------------------------------
WDC = {
    "relation": [
        ["#", "1", "2", "3"],
        ["Club", "Barcelona", "Real Madrid", "Bayern München"],
        ["Points", "2037", "2008", "1973"],
    ],
    "pageTitle": "FootballDatabase - Club Rankings",
    "title": "",
    "url": "http://example.org/clubs",
    "hasHeader": True,
    "headerPosition": "FIRST_ROW",
    "headerRowIndex": 0,
    "tableOrientation": "HORIZONTAL",
}


def test_load_wdc_horizontal(tmp_path: Path) -> None:
    table = load_wdc_table(write(tmp_path / "t.json", json.dumps(WDC)))
    assert table.name == "FootballDatabase - Club Rankings" and table.caption is None
    assert table.column_names == ["#", "Club", "Points"]
    assert table.rows[1] == ["2", "Real Madrid", "2008"]
    assert table.column("Points").type == ColumnType.NUMBER


def test_load_wdc_vertical_is_transposed() -> None:
    # A vertical table: each HTML column is an entity, the first holds attribute names.
    vertical = {
        "relation": [
            ["Name", "Born", "Club"],
            ["Messi", "1987", "Barcelona"],
            ["Xavi", "1980", "Barcelona"],
        ],
        "hasHeader": True,
        "tableOrientation": "VERTICAL",
        "title": "Players",
    }
    table = load_wdc_table(vertical)
    assert table.column_names == ["Name", "Born", "Club"]
    assert table.rows == [["Messi", "1987", "Barcelona"], ["Xavi", "1980", "Barcelona"]]
    assert table.name == "Players" and table.caption == "Players"


def test_load_wdc_without_header_names_columns() -> None:
    table = load_wdc_table({**WDC, "hasHeader": False})
    assert table.column_names == ["column 1", "column 2", "column 3"]
    assert len(table.rows) == 4


# -- pandas ------------------------------------------------------------------------------------
def test_load_dataframe_types_and_values() -> None:
    df = pd.DataFrame(
        {
            "when": pd.to_datetime(["2020-01-01", None]),
            "x": [1.0, float("nan")],
            "n": np.array([1, 2], dtype=np.int64),
            "ok": [True, False],
            "day": ["2020-01-02", "May 3, 2021"],
            "city": pd.Categorical(["Rome", "Oslo"]),
        }
    )
    table = load_dataframe(df, "things")
    assert table.name == "things"
    assert [c.type for c in table.columns] == [
        ColumnType.TIME,
        ColumnType.NUMBER,
        ColumnType.NUMBER,
        ColumnType.BOOLEAN,
        ColumnType.TIME,
        ColumnType.TEXT,
    ]
    assert table.rows == [
        ["2020-01-01T00:00:00", 1.0, 1, True, "2020-01-02", "Rome"],
        [None, None, 2, False, "May 3, 2021", "Oslo"],
    ]
    json.dumps(table.model_dump(mode="json"))  # every cell is JSON-serialisable


def test_load_dataframe_multiindex_columns_and_max_rows() -> None:
    df = pd.DataFrame([[1, 2], [3, 4], [5, 6]])
    df.columns = pd.MultiIndex.from_tuples([("sales", "2020"), ("sales", "2021")])
    table = load_dataframe(df, max_rows=2)
    assert table.column_names == ["sales 2020", "sales 2021"]
    assert table.rows == [[1, 2], [3, 4]]


# -- our JSON and dispatch ---------------------------------------------------------------------
def test_load_table_json_and_dispatch(tmp_path: Path) -> None:
    data = {"name": "pets", "columns": [{"name": "name"}, {"name": "age", "type": "number"}]}
    path = write(tmp_path / "pets.json", json.dumps(data))
    assert load_table_json(path) == load_table_json(data) == load_any(path)
    assert load_any(write(tmp_path / "c.json", json.dumps(WDC))).column_names == [
        "#",
        "Club",
        "Points",
    ]
    assert load_any(write(tmp_path / "t.csv", "a,b\n1,2\n")).column_names == ["a", "b"]
    lines = "\n".join(
        json.dumps({"id": f"1-{i}", "header": ["a"], "rows": [[i]]}) for i in range(3)
    )
    assert [t.id for t in load_tables(write(tmp_path / "w.tables.jsonl", lines + "\n"))] == [
        "1-0",
        "1-1",
        "1-2",
    ]


def test_load_any_wants_exactly_one_table(tmp_path: Path) -> None:
    path = write(tmp_path / "tables.json", json.dumps([SPIDER_DB]))
    with pytest.raises(InvalidTableError) as err:
        load_any(path)
    assert err.value.problem == "not_one_table"


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(InvalidTableError) as err:
        load_tables(write(tmp_path / "t.xlsx", "x"))
    assert err.value.problem == "unknown_format"
    with pytest.raises(InvalidTableError) as err:
        load_tables(write(tmp_path / "t.json", "42"))
    assert err.value.problem == "unknown_format"


def test_load_real_wtq_csv() -> None:
    path = SHARED / "wtq" / "csv" / "200-csv" / "0.csv"
    if not path.exists():
        pytest.skip(f"WTQ data not present at {path}")
    table = load_csv(path)
    assert table.column_names[:3] == ["Year", "Title", "Chart-Positions UK"]
    assert table.column("Year").type == ColumnType.NUMBER
