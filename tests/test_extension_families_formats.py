"""A new perturbation family and a new dataset format are each one file plus one registration
line: a toy of each, defined here, is registered, chosen by name and run by the real drivers
(verified by execution, for the family), refused by a format that cannot hold what it needs,
and named by the HTTP API's kinds."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from dataset_fixtures import accept_all, name_proposer, spider_entry
from pydantic import ValidationError

from cta.apply.sample import sample_perturbations
from cta.datasets import (
    DatasetFiles,
    DatasetRequest,
    DatasetRun,
    dataset_format,
    perturb_dataset,
    register_format,
    unregister_format,
)
from cta.datasets.base import FormatDriver, summarise
from cta.families import (
    DbEdit,
    FamilyContext,
    NotApplicable,
    family_kinds,
    family_spec,
    held_kinds,
    register_family,
    unregister_family,
)
from cta.registry import UnknownNameError
from cta.results import Kind
from cta.sql.database import NewColumn, SchemaPerturbation, SqlSchema, perturb_schema
from cta.table import InvalidTableError, Table
from service.schemas import DatasetJobCreate

# -- a toy family: every table's columns in reverse order ---------------------------------------


class ReverseColumns:
    kind = "reverse-columns"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        if all(len(t.columns) < 2 for t in ctx.schema.tables):
            raise NotApplicable("no table has two columns")
        tables = tuple(
            dataclasses.replace(t, columns=tuple(reversed(t.columns))) for t in ctx.schema.tables
        )
        schema = SqlSchema(tables)
        origin = {
            (t.name.lower(), c.name.lower()): (t.name.lower(), c.name.lower())
            for t in tables
            for c in t.columns
        }
        return DbEdit(schema=schema, operation="columns in reverse order", origin=origin)


class SuffixFirstColumn:
    """Planned per question: the first column the question's gold SQL mentions gets ``_x``."""

    kind = "suffix-first"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        [query] = ctx.queries
        if not query.columns:
            raise NotApplicable("the query mentions no column")
        first = query.columns[0]
        table = ctx.schema.table(first.table)
        columns = tuple(
            NewColumn(
                f"{c.name}_x" if c.name.lower() == first.column.lower() else c.name,
                c.type,
                source=c.name,
                label=ctx.natural(table.name, c.name) + (" x" if c.name == first.column else ""),
            )
            for c in table.columns
        )
        perturbation = SchemaPerturbation({table.name: columns})
        return DbEdit(
            schema=perturb_schema(ctx.schema, perturbation),
            operation="first mentioned column suffixed",
            column_map=perturbation.column_map(ctx.schema),
            perturbation=perturbation,
        )


# -- a toy format: a JSON list of tables, holding no database edit (RPL/ADD only) ----------------


class TableListFormat(FormatDriver):
    name = "table-list"

    def load(self, files: DatasetFiles) -> list[Table]:
        return [Table.parse(t) for t in json.loads(Path(files.tables).read_text())]

    def perturb(self, dataset: list[Table], request: DatasetRequest) -> DatasetRun:
        self.check(request.kinds)  # what it holds: the kinds that need no database
        kinds = [cast(Kind, k) for k in request.kinds]
        results = request.proposer(dataset)
        out = request.out_dir
        out.mkdir(parents=True, exist_ok=True)
        lines = [
            sample_perturbations(table, result, kind, 1, seed)[0].model_dump_json()
            for table, result in zip(dataset, results, strict=True)
            for kind in kinds
            for seed in request.seeds
        ]
        (out / "perturbed.jsonl").write_text("\n".join(lines) + "\n")
        n = len(lines)
        return summarise(out, len(dataset), (n, n, 0, 0, n), ["perturbed.jsonl"], {})


@pytest.fixture
def toys() -> Iterator[None]:
    register_family("reverse-columns", lambda tools: ReverseColumns())
    register_format(TableListFormat())
    yield
    unregister_family("reverse-columns")
    unregister_format("table-list")


ENTRY = spider_entry(
    "shop",
    ["item: Item_ID number, Name text, Price number", "sale: Sale_ID number, Item_ID number"],
    primary=[("item", "Item_ID"), ("sale", "Sale_ID")],
    foreign=[(("sale", "Item_ID"), ("item", "Item_ID"))],
)
QUESTIONS = [
    {"db_id": "shop", "question": "Names of cheap items?", "query": "SELECT name FROM item WHERE price < 5"},
    {"db_id": "shop", "question": "Everything sold.", "query": "SELECT * FROM sale"},
]  # fmt: skip
propose = name_proposer({"name": (["title"], []), "price": (["cost"], ["discount"])})


def test_a_registered_family_runs_by_name_and_is_verified(toys: None, tmp_path: Path) -> None:
    assert "reverse-columns" in family_kinds()
    tables, questions = tmp_path / "tables.json", tmp_path / "dev.json"
    tables.write_text(json.dumps([ENTRY]))
    questions.write_text(json.dumps(QUESTIONS))
    run = perturb_dataset(
        "spider", tables, questions, tmp_path / "out", propose, ["reverse-columns"], [0],
        check_execution=True, judge=accept_all,
    )  # fmt: skip
    assert run.verification is not None
    assert run.verification["executable"] == 2 and run.verification["equivalent_share"] == 1.0
    entry = next(
        e
        for e in json.loads((tmp_path / "out" / "tables.json").read_text())
        if e["db_id"] == "shop_reverse-columns_s0_v0"
    )
    item = [name for t, name in entry["column_names_original"] if t == 0]
    assert item == ["Price", "Name", "Item_ID"]
    items = (tmp_path / "out" / "mappings.jsonl").read_text().splitlines()
    assert [json.loads(line)["operation"] for line in items] == ["columns in reverse order"] * 2


def test_a_registered_format_runs_by_name(toys: None, tmp_path: Path) -> None:
    source = tmp_path / "tables.json"
    source.write_text(
        json.dumps(
            [
                {
                    "name": "shop",
                    "columns": [{"name": "name"}, {"name": "price", "type": "number"}],
                    "rows": [["pen", 2]],
                }
            ]
        )
    )
    run = perturb_dataset("table-list", source, None, tmp_path / "out", propose, ["rpl"], [0, 1])
    assert run.examples == 1 and run.perturbed == 2
    lines = [json.loads(x) for x in (tmp_path / "out" / "perturbed.jsonl").read_text().splitlines()]
    assert [line["mapping"] for line in lines] == [{"name": "title", "price": "cost"}] * 2
    with pytest.raises(InvalidTableError, match="runs no family; it holds rpl, add"):
        perturb_dataset("table-list", source, None, tmp_path / "o2", propose, ["shuffle"], [0])


def test_a_registered_family_runs_where_its_needs_are_held(toys: None, tmp_path: Path) -> None:
    # it needs a database and nothing more: WikiSQL holds it, the toy format does not
    tables, questions = tmp_path / "dev.tables.jsonl", tmp_path / "dev.jsonl"
    tables.write_text(
        json.dumps({"id": "1-1", "header": ["Name", "Price"], "types": ["text", "real"],
                    "rows": [["pen", 2], ["ink", 7]]}) + "\n"
    )  # fmt: skip
    questions.write_text(
        json.dumps({"table_id": "1-1", "question": "Price of pen?", "phase": 1,
                    "sql": {"sel": 1, "agg": 0, "conds": [[0, 0, "pen"]]}}) + "\n"
    )  # fmt: skip
    out = tmp_path / "out"
    run = perturb_dataset(
        "wikisql", tables, questions, out, propose, ["reverse-columns"], [0], check_execution=True
    )
    assert run.verification is not None and run.verification["equivalent_share"] == 1.0
    [record] = [
        json.loads(x) for x in (out / "dev_reverse-columns_s0.jsonl").read_text().splitlines()
    ]
    assert record["sql"]["sel"] == 0 and record["sql"]["conds"] == [[1, 0, "pen"]]
    with pytest.raises(InvalidTableError, match="it holds rpl, add \\(") as refused:
        perturb_dataset("table-list", tables, None, tmp_path / "o2", propose, ["reverse-columns"])
    assert refused.value.problem == "unsupported_kind"
    register_family("needs-keys", lambda tools: ReverseColumns(), needs=("database", "keys"))
    try:
        with pytest.raises(InvalidTableError, match="kind 'needs-keys': WikiSQL"):
            perturb_dataset("wikisql", tables, questions, tmp_path / "o3", propose, ["needs-keys"])
    finally:
        unregister_family("needs-keys")


def test_a_family_planned_per_question_shares_a_database_per_distinct_edit(
    tmp_path: Path,
) -> None:
    register_family("suffix-first", lambda tools: SuffixFirstColumn(), scope="question", needs=())
    try:
        tables, questions = tmp_path / "tables.json", tmp_path / "dev.json"
        tables.write_text(json.dumps([ENTRY]))
        extra = [
            {"db_id": "shop", "question": "Names?", "query": "SELECT name FROM item"},
            {"db_id": "shop", "question": "Prices?", "query": "SELECT price FROM item"},
        ]
        questions.write_text(json.dumps([*QUESTIONS, *extra]))
        run = perturb_dataset(
            "spider", tables, questions, tmp_path / "out", propose, ["suffix-first", "shuffle"],
            [0], check_execution=True,
        )  # fmt: skip
        assert run.verification is not None and run.verification["equivalent_share"] == 1.0
        items = [
            json.loads(line)
            for line in (tmp_path / "out" / "mappings.jsonl").read_text().splitlines()
        ]
        # per-question families first; the two questions naming `name` first share a
        # database, `price` first makes another, and `SELECT *` names no column: its question
        # keeps the original
        assert [(i["kind"], i["perturbed_db_id"]) for i in items] == [
            ("suffix-first", "shop_suffix-first_s0_v0"),
            ("suffix-first", "shop"),
            ("suffix-first", "shop_suffix-first_s0_v0"),
            ("suffix-first", "shop_suffix-first_s0_v1"),
        ] + [("shuffle", "shop_shuffle_s0_v0")] * 4
        assert items[0]["sql"] == "SELECT Name_x FROM item WHERE price < 5"
    finally:
        unregister_family("suffix-first")


def test_the_http_api_names_and_checks_the_registered_kinds(toys: None) -> None:
    schema = DatasetJobCreate.model_json_schema()
    assert schema["properties"]["kinds"]["items"]["enum"] == list(family_kinds())
    assert family_kinds()[:2] == ("rpl", "add") and "reverse-columns" in family_kinds()
    assert [family_spec(k).scope for k in ("rpl", "add", "reverse-columns")] == [
        "question",
        "question",
        "database",
    ]
    job = {"kind": "dataset", "spider": [ENTRY], "questions": QUESTIONS}
    assert DatasetJobCreate.model_validate({**job, "kinds": ["reverse-columns"]}).kinds == [
        "reverse-columns"
    ]
    with pytest.raises(ValidationError, match="unknown kind 'reverse'; the kinds are rpl, add"):
        DatasetJobCreate.model_validate({**job, "kinds": ["reverse"]})


def test_unregistered_names_are_refused_and_the_built_ins_match_the_wire_kinds(
    tmp_path: Path,
) -> None:
    with pytest.raises(UnknownNameError, match="table-list") as fmt:
        dataset_format("table-list")
    assert fmt.value.problem == "unknown_format"
    tables, questions = tmp_path / "tables.json", tmp_path / "dev.json"
    tables.write_text(json.dumps([ENTRY]))
    questions.write_text(json.dumps(QUESTIONS))
    with pytest.raises(UnknownNameError, match="no family named 'reverse-columns'") as family:
        perturb_dataset("spider", tables, questions, tmp_path / "out", propose, ["reverse-columns"])
    assert family.value.problem == "unknown_family"
    with pytest.raises(ValueError, match="cannot name a family"):
        register_family("all", lambda tools: ReverseColumns())
    with pytest.raises(ValueError, match="unknown needs cells"):
        register_family("x", lambda tools: ReverseColumns(), needs=("cells",))  # type: ignore[arg-type]


def test_what_each_format_holds_is_what_docs_families_says() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "families.md").read_text()
    rows = {
        line.split("|")[1].split()[0]: line.split("|")[3]
        for line in docs.splitlines()
        if line.startswith(("| Spider", "| WikiSQL", "| WTQ", "| BIRD"))
    }
    papers = [k for k in family_kinds() if family_spec(k).scope == "database"]
    for label, name in (
        ("Spider", "spider"),
        ("WikiSQL", "wikisql"),
        ("WTQ", "wtq"),
        ("BIRD", "bird"),
    ):
        held = [k for k in held_kinds(dataset_format(name).holds) if k in papers]
        said = papers if rows[label].strip() == "yes" else re.findall(r"`([a-z-]+)`", rows[label])
        assert held == said, name
