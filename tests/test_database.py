"""Schemas, synthesised databases and perturbed SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cta.sql.database import (
    ColumnRef,
    NewColumn,
    SchemaError,
    SchemaPerturbation,
    SqlColumn,
    SqlSchema,
    SqlTable,
    create_database,
    materialise_perturbed,
    perturb_schema,
    quote_identifier,
    read_rows,
    schema_from_sqlite,
    synthesise_rows,
)
from cta.table import ColumnType, ForeignKey

N, T = ColumnType.NUMBER, ColumnType.TEXT

DEPT = SqlTable(
    "department",
    (SqlColumn("dept_id", N), SqlColumn("name", T), SqlColumn("head", N)),
    primary_key=("dept_id",),
    # a cycle: department.head → staff.staff_id → department
    foreign_keys=(ForeignKey(column="head", ref_table="staff", ref_column="staff_id"),),
)
STAFF = SqlTable(
    "staff",
    (
        SqlColumn("staff_id", N),
        SqlColumn("name", T),
        SqlColumn("dept_id", N),
        SqlColumn("boss", N),
        SqlColumn("hired", ColumnType.TIME),
    ),
    primary_key=("staff_id",),
    foreign_keys=(
        ForeignKey(column="dept_id", ref_table="department", ref_column="dept_id"),
        ForeignKey(column="boss", ref_table="staff", ref_column="staff_id"),  # self-reference
    ),
)
SCHEMA = SqlSchema((DEPT, STAFF))


def test_quote_identifier() -> None:
    assert quote_identifier("name") == "name"
    assert quote_identifier("first name") == '"first name"'
    assert quote_identifier("order") == '"order"'
    assert quote_identifier("Select") == '"Select"'
    assert quote_identifier("no.#") == '"no.#"'
    assert quote_identifier('say "hi"') == '"say ""hi"""'
    assert quote_identifier("2nd") == '"2nd"'


def test_schema_rejects_duplicates_case_insensitively() -> None:
    with pytest.raises(SchemaError) as err:
        SqlSchema((SqlTable("t", (SqlColumn("Name"), SqlColumn("name"))),))
    assert err.value.problem == "duplicate_column"


def test_synthesised_rows_are_seeded_key_unique_and_fk_consistent() -> None:
    pools = {ColumnRef("staff", "name"): ["Ada Lovelace"], ColumnRef("department", "name"): ["HR"]}
    rows = synthesise_rows(SCHEMA, seed=3, pools=pools)
    assert rows == synthesise_rows(SCHEMA, seed=3, pools=pools)
    assert rows != synthesise_rows(SCHEMA, seed=4, pools=pools)
    depts, staff = rows["department"], rows["staff"]
    assert 10 <= len(depts) <= 30 and 10 <= len(staff) <= 30
    dept_ids = [r[0] for r in depts]
    staff_ids = [r[0] for r in staff]
    assert len(set(dept_ids)) == len(dept_ids) and len(set(staff_ids)) == len(staff_ids)
    assert {r[2] for r in staff} <= set(dept_ids)  # staff.dept_id → department
    assert {r[3] for r in staff} <= set(staff_ids)  # self-reference
    assert {r[2] for r in depts} <= set(staff_ids)  # cycle back
    # the literals the queries compare with appear, so WHERE clauses can match
    assert "Ada Lovelace" in {r[1] for r in staff}
    assert "HR" in {r[1] for r in depts}
    assert all(isinstance(r[4], str) and r[4][4] == "-" for r in staff)


def test_links_from_joins_share_a_domain() -> None:
    a = SqlTable("a", (SqlColumn("code", T), SqlColumn("x", N)))
    b = SqlTable("b", (SqlColumn("a_code", T), SqlColumn("y", N)))
    schema = SqlSchema((a, b))
    rows = synthesise_rows(
        schema, seed=0, links=[(ColumnRef("a", "code"), ColumnRef("b", "a_code"))]
    )
    # both draw from one domain: joins on the link match
    assert {r[0] for r in rows["b"]} & {r[0] for r in rows["a"]}
    unlinked = synthesise_rows(schema, seed=0)
    assert not {r[0] for r in unlinked["b"]} & {r[0] for r in unlinked["a"]}


def test_create_and_read_back_schema(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    create_database(path, SCHEMA, synthesise_rows(SCHEMA, seed=0))
    read = schema_from_sqlite(path)
    assert [t.name for t in read.tables] == ["department", "staff"]
    staff = read.table("STAFF")
    assert [c.name for c in staff.columns] == [c.name for c in STAFF.columns]
    assert staff.primary_key == ("staff_id",)
    assert set(staff.foreign_keys) == set(STAFF.foreign_keys)
    assert staff.columns[0].type is ColumnType.NUMBER


def _perturbation() -> SchemaPerturbation:
    return SchemaPerturbation(
        {
            "staff": (
                NewColumn("staff key", N, source="staff_id", label="staff key"),
                NewColumn("name", T, source="name"),
                NewColumn("nickname", T, source=None, template="name"),
                NewColumn("dept_id", N, source="dept_id"),
                NewColumn("boss", N, source="boss"),
                NewColumn("hired", ColumnType.TIME, source="hired"),
            )
        }
    )


def test_perturb_schema_renames_keys_everywhere() -> None:
    new = perturb_schema(SCHEMA, _perturbation())
    staff = new.table("staff")
    assert [c.name for c in staff.columns][:3] == ["staff key", "name", "nickname"]
    assert staff.primary_key == ("staff key",)
    assert (
        ForeignKey(column="boss", ref_table="staff", ref_column="staff key") in staff.foreign_keys
    )
    # another table's foreign key follows the rename
    assert new.table("department").foreign_keys == (
        ForeignKey(column="head", ref_table="staff", ref_column="staff key"),
    )
    dropped = SchemaPerturbation({"staff": (NewColumn("staff_id", N, source="staff_id"),)})
    with pytest.raises(SchemaError) as err:
        perturb_schema(SCHEMA, dropped)
    assert err.value.problem == "dropped_column"


def test_materialise_copies_rows_and_fills_added_columns(tmp_path: Path) -> None:
    source = tmp_path / "orig.sqlite"
    rows = synthesise_rows(SCHEMA, seed=1)
    create_database(source, SCHEMA, rows)
    target = tmp_path / "new.sqlite"
    new = materialise_perturbed(source, target, SCHEMA, _perturbation(), seed=5)
    staff = read_rows(target, new.table("staff"))
    assert [(r[0], r[1], r[3], r[4], r[5]) for r in staff] == [tuple(r) for r in rows["staff"]]
    nicknames = [r[2] for r in staff]
    # a text column added beside another: no plausible value can be made, so NULL — never the
    # other column's names copied, never invented words
    assert nicknames == [None] * len(staff)
    assert read_rows(target, new.table("department")) == rows["department"]
    # keys preserved in the file
    conn = sqlite3.connect(target)
    ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'staff'").fetchone()[0]
    conn.close()
    assert 'PRIMARY KEY ("staff key")' in ddl
    assert 'REFERENCES staff ("staff key")' in ddl
    # seeded: same bytes of data again, NULLs on request
    again = tmp_path / "again.sqlite"
    materialise_perturbed(source, again, SCHEMA, _perturbation(), seed=5)
    assert read_rows(again, new.table("staff")) == staff
    nulls = tmp_path / "nulls.sqlite"
    materialise_perturbed(source, nulls, SCHEMA, _perturbation(), seed=5, values="null")
    assert {r[2] for r in read_rows(nulls, new.table("staff"))} == {None}
