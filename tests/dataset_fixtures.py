"""What the dataset, evaluation and family tests share.

* :func:`spider_entry` — a ``tables.json`` entry written one line per table, natural names
  the identifier's words as :func:`cta.words.name_words` splits them unless given;
  :func:`music_entry` — the singers-and-concerts one the dataset and evaluation tests share;
* :func:`name_proposer` — a stand-in for the pipeline's ``perturb_many``: RPL/ADD names
  looked up in a table, in the pipeline's answer shape, each scored at the settings'
  thresholds and kept only when the real decision rule (:mod:`cta.judge.decide`) keeps it;
* :func:`accept_all` — a judge that finds every pair equivalent;
* :func:`write_spider` — a Spider ``tables.json`` and question file on disk;
* :func:`family_context` and :func:`verified` — one database for a family to plan on, and
  an edit checked by execution.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cta.families.base import FamilyContext, rewrite_for, usage_of
from cta.families.model import DbEdit, materialise_edit
from cta.formats.spider import natural_tables, spider_schema
from cta.judge.decide import DecisionRule
from cta.results import ColumnPerturbations, Decision, PerturbationResult
from cta.settings import Settings
from cta.sql.database import create_database
from cta.sql.rewrite import bind_query
from cta.sql.verify import verify_query
from cta.table import Column, Table
from cta.words import name_words

Names = Mapping[str, tuple[list[str], list[str]]]
"""Natural column (or table) name, lower case → (RPL names, ADD names)."""

Proposer = Callable[[Sequence[Table]], list[PerturbationResult]]

PARSED_SQL: dict[str, Any] = {
    "except": None,
    "from": {"conds": [], "table_units": [["table_unit", 0]]},
    "groupBy": [],
    "having": [],
    "intersect": None,
    "limit": None,
    "orderBy": [],
    "select": [False, [[0, [0, [0, 2, False], None]]]],
    "union": None,
    "where": [[False, 3, [0, [0, 4, False], None], 20.0, None]],
}
"""Spider's parsed ``sql`` of ``SELECT <column 2> FROM <table 0> WHERE <column 4> > 20``."""


def _natural(identifier: str) -> str:
    return " ".join(name_words(identifier))


def _named(spec: str) -> tuple[str, str]:
    """``Identifier`` or ``Identifier/natural name``: the identifier and its natural name."""
    identifier, _, natural = spec.strip().partition("/")
    return identifier, natural or _natural(identifier)


def spider_entry(
    db_id: str,
    tables: Sequence[str],
    primary: Sequence[tuple[str, str]] = (),
    foreign: Sequence[tuple[tuple[str, str], tuple[str, str]]] = (),
) -> dict[str, Any]:
    """A ``tables.json`` entry from ``"table: Column type, Other/its natural name type, …"``
    per table (a table's natural name after ``/`` too); keys by (table, column) identifiers."""
    table_names: list[str] = []
    table_originals: list[str] = []
    names: list[list[Any]] = [[-1, "*"]]
    originals: list[list[Any]] = [[-1, "*"]]
    types = ["text"]
    index: dict[tuple[str, str], int] = {}
    for t, line in enumerate(tables):
        head, _, body = line.partition(":")
        table, natural_table = _named(head)
        table_originals.append(table)
        table_names.append(natural_table)
        for spec in body.split(","):
            named, _, col_type = spec.strip().rpartition(" ")
            column, natural = _named(named)
            index[(table, column)] = len(names)
            names.append([t, natural])
            originals.append([t, column])
            types.append(col_type)
    return {
        "db_id": db_id,
        "table_names": table_names,
        "table_names_original": table_originals,
        "column_names": names,
        "column_names_original": originals,
        "column_types": types,
        "primary_keys": [index[k] for k in primary],
        "foreign_keys": [[index[a], index[b]] for a, b in foreign],
    }


def music_entry(concert_name: str = "Name") -> dict[str, Any]:
    """The ``music`` database the dataset and evaluation tests perturb: singers and their
    concerts, the concert's name column called ``concert_name``."""
    return spider_entry(
        "music",
        [
            "singer: Singer_ID number, Name text, Country text, Age number",
            f"concert: concert_ID number, {concert_name} text, Singer_ID number, Year number",
        ],
        primary=[("singer", "Singer_ID"), ("concert", "concert_ID")],
        foreign=[(("concert", "Singer_ID"), ("singer", "Singer_ID"))],
    )


def _no_names(name: str) -> tuple[list[str], list[str]]:
    return [], []


def name_proposer(
    names: Names, default: Callable[[str], tuple[list[str], list[str]]] = _no_names
) -> Proposer:
    """The pipeline's answer from ``names`` (``default`` for a column it lacks)."""
    settings = Settings()
    rpl, add = settings.rpl_threshold, settings.add_threshold
    # Scored at the thresholds: the weakest candidates the real rule keeps, so it keeps all.
    rule = DecisionRule.from_settings(settings, rpl, add)
    keeps_rpl = rule.is_rpl(rpl, rpl)
    keeps_add = rule.passes_add([(add, add)])

    def judged(col: Column) -> ColumnPerturbations:
        found = names.get(col.name.lower())
        rpl_names, add_names = found if found is not None else default(col.name)
        scored = [
            Decision(name=n, type=col.type, e1=rpl, e2=rpl, source="dictionary") for n in rpl_names
        ]
        added = [
            Decision(name=n, type=col.type, e1=add, e2=add, source="retriever") for n in add_names
        ]
        return ColumnPerturbations(
            column=col.name, replace=scored if keeps_rpl else [], add=added if keeps_add else []
        )

    def propose(tables: Sequence[Table]) -> list[PerturbationResult]:
        return [
            PerturbationResult(
                table_id=table.id,
                primary_entity=table.name or "",
                entity_source="given",
                columns=[judged(col) for col in table.targets()],
            )
            for table in tables
        ]

    return propose


def accept_all(pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
    """A judge that finds every (entity, name, other name) pair equivalent."""
    return [True] * len(pairs)


def write_spider(
    folder: Path, entries: Sequence[Mapping[str, Any]], questions: Sequence[Mapping[str, Any]]
) -> tuple[Path, Path]:
    """``tables.json`` and ``dev.json`` under ``folder``; their paths."""
    tables, dev = folder / "tables.json", folder / "dev.json"
    tables.write_text(json.dumps(entries))
    dev.write_text(json.dumps(questions))
    return tables, dev


def family_context(
    tmp_path: Path,
    entry: dict[str, Any],
    rows: dict[str, list[tuple[Any, ...]]],
    queries: list[str],
) -> FamilyContext:
    """The context a family plans on: ``entry`` with ``rows`` in a database file."""
    schema = spider_schema(entry)
    path = tmp_path / "original.sqlite"
    create_database(path, schema, rows)
    bound = [bind_query(q, schema) for q in queries]
    return FamilyContext(
        db_id=entry["db_id"],
        schema=schema,
        tables=natural_tables(entry),
        entry=entry,
        usage=usage_of(bound),
        queries=bound,
        path=path,
    )


def verified(tmp_path: Path, ctx: FamilyContext, edit: DbEdit, queries: list[str]) -> Path:
    """Materialise ``edit`` and check every query: rewritten, it returns the same rows."""
    assert ctx.path is not None
    target = tmp_path / f"perturbed_{abs(hash(edit.operation))}.sqlite"
    materialise_edit(ctx.path, target, edit, ctx.schema, seed=0, values="null")
    for query in queries:
        rewritten = rewrite_for(query, ctx.schema, edit)
        result = verify_query(ctx.path, query, target, rewritten)
        assert result.status == "ok", (query, rewritten, result.reason)
        assert result.rows > 0, f"{query!r} returns nothing: the check would be vacuous"
    return target
