"""ADVETA sampling of perturbed tables: RPL renames, ADD inserts, seeded and collision-free."""

from __future__ import annotations

import pytest

from cta.apply.sample import sample_perturbations
from cta.results import ColumnPerturbations, Decision, PerturbationResult
from cta.table import Column, ColumnType, ForeignKey, InvalidTableError, Table


def _d(name: str, ctype: ColumnType = ColumnType.TEXT) -> Decision:
    return Decision(name=name, type=ctype, e1=0.9, e2=0.9, source="dictionary")


def _table() -> Table:
    return Table(
        id="school.student",
        name="student",
        columns=[
            Column(name="student id", type=ColumnType.NUMBER, original_name="StuID"),
            Column(name="first name", original_name="Fname"),
            Column(name="age", type=ColumnType.NUMBER, original_name="Age"),
            Column(name="city code", original_name="city_code"),
        ],
        rows=[[1, "Ann", 20, "BAL"], [2, "Bob", 21, "PIT"], [3, "Cy", 19, "HKG"]],
        primary_key=["StuID"],
        foreign_keys=[ForeignKey(column="city_code", ref_table="city", ref_column="code")],
    )


def _result(replace: dict[str, list[str]], add: dict[str, list[Decision]]) -> PerturbationResult:
    names = list(dict.fromkeys([*replace, *add]))
    return PerturbationResult(
        table_id="school.student",
        primary_entity="student",
        entity_source="given",
        columns=[
            ColumnPerturbations(
                column=n,
                replace=[_d(x) for x in replace.get(n, [])],
                add=add.get(n, []),
            )
            for n in names
        ],
    )


def test_rpl_renames_every_target_with_a_candidate_and_updates_keys() -> None:
    result = _result(
        {"student id": ["pupil id"], "first name": ["given name", "forename"], "age": []}, {}
    )
    [sample] = sample_perturbations(_table(), result, "rpl", k=1, seed=0)
    assert sample.kind == "rpl"
    assert sample.mapping["student id"] == "pupil id"
    assert sample.mapping["first name"] in {"given name", "forename"}
    assert sample.unperturbed == {"age": "no_candidates", "city code": "no_candidates"}
    col = sample.table.columns[0]
    # the natural name verbatim; the identifier bare, in the schema's style (StuID, Fname)
    assert (col.name, col.original_name, col.type) == ("pupil id", "PupilID", ColumnType.NUMBER)
    assert sample.table.primary_key == ["pupil id"]
    # rows and untouched columns stay as they were
    assert sample.table.rows == _table().rows
    assert sample.table.columns[2] == _table().columns[2]


def test_rpl_skips_colliding_candidates_case_insensitively() -> None:
    # "AGE" collides with the age column, "Given Name" with the name given to "first name".
    result = _result({"first name": ["Given Name"], "city code": ["AGE", "given name"]}, {})
    [sample] = sample_perturbations(_table(), result, "rpl", k=1, seed=3)
    assert sample.mapping == {"first name": "Given Name"}
    assert sample.unperturbed == {
        "student id": "no_candidates",
        "age": "no_candidates",
        "city code": "name_collision",
    }
    assert sample.table.foreign_keys[0].column == "city_code"


def test_rpl_foreign_key_column_follows_the_rename() -> None:
    result = _result({"city code": ["town code"]}, {})
    [sample] = sample_perturbations(_table(), result, "rpl", k=1, seed=0, columns=["city code"])
    assert sample.table.foreign_keys == [
        ForeignKey(column="town code", ref_table="city", ref_column="code")
    ]
    assert sample.unperturbed == {}


def test_add_inserts_after_target_with_plausible_or_null_values() -> None:
    add = {
        "age": [_d("weight", ColumnType.NUMBER)],
        "first name": [_d("enrolment date", ColumnType.TIME)],
    }
    [sample] = sample_perturbations(_table(), _result({}, add), "add", k=1, seed=1)
    names = sample.table.column_names
    assert names == [
        "student id",
        "first name",
        "enrolment date",
        "age",
        "weight",
        "city code",
    ]
    assert sample.mapping == {"first name": "enrolment date", "age": "weight"}
    weight = sample.table.column_values(4)
    # same-typed target: within its range (19–21), integers like it
    assert all(isinstance(v, int) and 19 <= v <= 21 for v in weight)
    dates = sample.table.column_values(2)
    assert all(isinstance(v, str) and len(v) == 10 and v[4] == "-" for v in dates)
    assert sample.table.column("weight").original_name == "Weight"  # like Age, Fname
    # original cells unchanged
    assert [row[0] for row in sample.table.rows] == [1, 2, 3]

    [nulls] = sample_perturbations(_table(), _result({}, add), "add", k=1, seed=1, values="null")
    assert nulls.table.column_values(4) == [None, None, None]


def test_added_text_columns_are_left_empty_not_copied_or_invented() -> None:
    # "+ last name" beside "first name": no value of the table fits it, so NULL cells — not
    # the first names copied, not pseudo-words
    add = {"first name": [_d("last name", ColumnType.TEXT)]}
    [sample] = sample_perturbations(_table(), _result({}, add), "add", k=1, seed=1)
    index = sample.table.column_names.index("last name")
    assert sample.table.column_values(index) == [None, None, None]
    first = sample.table.column_values(sample.table.column_names.index("first name"))
    assert first and all(isinstance(v, str) and v for v in first)  # originals kept


def test_add_never_duplicates_a_name() -> None:
    add = {"age": [_d("first name")], "city code": [_d("height"), _d("Height")]}
    samples = sample_perturbations(_table(), _result({}, add), "add", k=4, seed=0)
    assert samples  # each adds a height column (the only name not already a column)
    for s in samples:
        assert s.unperturbed["age"] == "name_collision"
        assert [n.casefold() for n in s.table.column_names].count("height") == 1


def test_sampling_is_seeded_and_varies_with_seed_and_sample() -> None:
    names = [f"name {i}" for i in range(20)]
    result = _result({"first name": names, "age": [f"years {i}" for i in range(20)]}, {})
    a = sample_perturbations(_table(), result, "rpl", k=5, seed=7)
    b = sample_perturbations(_table(), result, "rpl", k=5, seed=7)
    assert [s.model_dump() for s in a] == [s.model_dump() for s in b]
    assert [s.sample for s in a] == [0, 1, 2, 3, 4]
    assert len({s.mapping["first name"] for s in a}) > 1
    other = sample_perturbations(_table(), result, "rpl", k=5, seed=8)
    assert [s.mapping for s in other] != [s.mapping for s in a]
    # per-column streams: restricting the columns does not change a column's draw
    only = sample_perturbations(_table(), result, "rpl", k=5, seed=7, columns=["age"])
    assert [s.mapping["age"] for s in only] == [s.mapping["age"] for s in a]


def test_bad_input_is_named() -> None:
    result = _result({"first name": ["given name"]}, {})
    with pytest.raises(InvalidTableError) as err:
        sample_perturbations(_table(), result, "rpl", k=1, seed=0, columns=["height"])
    assert err.value.problem == "unknown_column"
    with pytest.raises(ValueError):
        sample_perturbations(_table(), result, "swap", k=1, seed=0)  # type: ignore[arg-type]
