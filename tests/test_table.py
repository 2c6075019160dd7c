"""The table model: validation errors name the problem; lookups follow SQLite's case rules."""

from __future__ import annotations

import pytest

from cta.table import ColumnType, InvalidTableError, Table


def _table(**over: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": "books",
        "columns": [{"name": "title"}, {"name": "pages", "type": "number"}],
        "rows": [["A", 1], ["B", 2]],
    }
    data.update(over)
    return data


def test_valid_table_parses_with_types() -> None:
    table = Table.parse(_table())
    assert table.column_names == ["title", "pages"]
    assert table.column("PAGES").type is ColumnType.NUMBER
    assert [c.name for c in table.targets()] == ["title", "pages"]


@pytest.mark.parametrize(
    ("over", "problem"),
    [
        ({"columns": []}, "no_columns"),
        ({"columns": [{"name": "a"}, {"name": "A"}], "rows": []}, "duplicate_column_name"),
        ({"columns": [{"name": " "}], "rows": []}, "empty_column_name"),
        ({"rows": [["A", 1], ["B"]]}, "ragged_rows"),
        ({"target_columns": ["author"]}, "unknown_column"),
        ({"questions": ["q1", "q2"], "sql": ["SELECT 1"]}, "misaligned_sql"),
        ({"columns": "title"}, "malformed_table"),
        ({"columns": [{"name": "a", "type": "colour"}], "rows": []}, "malformed_table"),
    ],
)
def test_invalid_tables_raise_typed_error(over: dict[str, object], problem: str) -> None:
    with pytest.raises(InvalidTableError) as err:
        Table.parse(_table(**over))
    assert err.value.problem == problem
    assert problem in str(err.value)


def test_targets_restrict_to_named_columns() -> None:
    table = Table.parse(_table(target_columns=["Pages"]))
    assert [c.name for c in table.targets()] == ["pages"]


def test_unknown_column_lookup_names_the_column() -> None:
    table = Table.parse(_table())
    with pytest.raises(InvalidTableError, match="'author'"):
        table.column("author")


@pytest.mark.parametrize("target", ["first_name", "firstName", "FIRST NAME", "first-name"])
def test_a_target_that_validates_is_found(target: str) -> None:
    # Validation and lookup share one key: a target accepted by name_key is found by it.
    table = Table.parse(
        {"columns": [{"name": "First Name"}, {"name": "age"}], "target_columns": [target]}
    )
    assert [c.name for c in table.targets()] == ["First Name"]
    assert table.column(target).name == "First Name"


def test_an_exact_name_wins_over_a_key_match() -> None:
    # `Name` is an SQL identifier of one column and, by key, the name of none other.
    table = Table.parse(
        {"columns": [{"name": "title", "original_name": "Name"}, {"name": "author"}]}
    )
    assert table.column("name").name == "title"
    assert table.column("NAME").name == "title"
