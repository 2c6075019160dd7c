"""Sampling perturbed tables from judged candidates — the ADVETA protocol (docs/method.md §4).

In each sample, every target column that has at least one candidate is perturbed once with
a randomly chosen candidate:

- **RPL** renames the column. ``Column.name`` becomes the candidate and, when the column has
  a schema identifier (``original_name``, e.g. Spider's ``column_names_original``), the
  identifier becomes the candidate written as an identifier in the style of the table's
  own (:func:`~cta.sql.identifiers.sql_identifier`: ``home city`` → ``home_city`` beside
  ``singer_id``, ``HomeCity`` beside ``StuID``; bare, never a reserved word), so a parser
  reads the natural name and the gold SQL uses a plain identifier.
  Primary- and foreign-key entries naming the column follow the rename.
- **ADD** inserts a new column right after its target with the candidate's name and type
  (and an identifier made the same way); its cells are generated plausible values
  (:mod:`cta.sql.values`, seeded) or ``NULL``.

A candidate whose name or identifier collides (case-insensitively, as SQLite compares
identifiers) with a column of the table — original names, identifiers or names given
earlier in the same sample — is skipped and another is drawn; when none is left the column stays as it was and
:attr:`~cta.results.PerturbedTable.unperturbed` says why (``no_candidates`` /
``name_collision``).

Randomness is seeded *per column*: ``random.Random`` seeded from a SHA-256 digest of
``(seed, sample index, table id, column name)`` — never ``hash()``, which is salted per
process. So the same column gets the same candidate under the same seed whatever other
columns are perturbed alongside it, which lets the dataset protocol share perturbed
databases between questions of one database.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

from cta.names import NameStyle
from cta.results import Decision, Kind, PerturbationResult, PerturbedTable
from cta.seeding import seeded_rng
from cta.sql.identifiers import identifier_style, name_key, sql_identifier
from cta.sql.values import added_column_values
from cta.table import Column, ForeignKey, Table

__all__ = ["ValueMode", "candidate_pools", "sample_perturbations"]

ValueMode = Literal["generate", "null"]


def _names(column: Column) -> set[str]:
    names = {name_key(column.name)}
    if column.original_name:
        names.add(name_key(column.original_name))
    return names


def candidate_pools(
    table: Table, result: PerturbationResult, kind: Kind
) -> dict[int, list[Decision]]:
    """Candidates of ``kind`` per column index of ``table`` (columns matched by name or identifier)."""
    pools: dict[int, list[Decision]] = {}
    index = {id(col): i for i, col in enumerate(table.columns)}
    for entry in result.columns:
        i = index[id(table.column(entry.column))]
        decisions = entry.replace if kind == "rpl" else entry.add
        pools.setdefault(i, []).extend(decisions)
    return pools


def _targets(table: Table, columns: Sequence[str] | None) -> list[int]:
    """Indices of the columns to perturb, in table order, each once."""
    index = {id(col): i for i, col in enumerate(table.columns)}
    chosen = table.targets() if columns is None else [table.column(n) for n in columns]
    return sorted({index[id(col)] for col in chosen})


def _draw(
    pool: Sequence[Decision], rng: random.Random, taken: set[str], style: NameStyle | None
) -> tuple[Decision | None, str]:
    """A random candidate whose name (and identifier, when ``style`` makes one) is free, or
    ``None`` and the reason."""
    if not pool:
        return None, "no_candidates"
    order = list(pool)
    rng.shuffle(order)
    for decision in order:
        name = decision.name.strip()
        if not name or name_key(name) in taken:
            continue
        if style is not None and name_key(sql_identifier(name, style)) in taken:
            continue
        return decision, ""
    return None, "name_collision"


def _renamed_key(name: str, renames: dict[str, str]) -> str:
    return renames.get(name_key(name), name)


def sample_perturbations(
    table: Table,
    result: PerturbationResult,
    kind: Kind,
    k: int,
    seed: int,
    columns: Sequence[str] | None = None,
    values: ValueMode = "generate",
) -> list[PerturbedTable]:
    """Draw ``k`` perturbed tables of ``kind`` from ``result`` (ADVETA protocol).

    ``columns`` restricts the perturbed columns (default: ``table.targets()``). Raises
    :class:`InvalidTableError` (``unknown_column``) when ``columns`` or ``result`` name a
    column the table does not have, and ``ValueError`` for a bad ``kind``/``k``/``values``.
    """
    if kind not in ("rpl", "add"):
        raise ValueError(f"kind must be 'rpl' or 'add', not {kind!r}")
    if values not in ("generate", "null"):
        raise ValueError(f"values must be 'generate' or 'null', not {values!r}")
    if k < 0:
        raise ValueError(f"k must be >= 0, not {k}")
    pools = candidate_pools(table, result, kind)
    targets = _targets(table, columns)
    return [_sample(table, targets, pools, kind, seed, sample, values) for sample in range(k)]


def _sample(
    table: Table,
    targets: list[int],
    pools: dict[int, list[Decision]],
    kind: Kind,
    seed: int,
    sample: int,
    values: ValueMode,
) -> PerturbedTable:
    table_key = table.id or table.name or ""
    taken: set[str] = set().union(*(_names(c) for c in table.columns))
    identifiers = [c.original_name for c in table.columns if c.original_name]
    style = identifier_style(identifiers) if identifiers else None
    chosen: dict[int, Decision] = {}
    chosen_ids: dict[int, str] = {}  # the new columns' identifiers (tables that have them)
    unperturbed: dict[str, str] = {}
    for i in targets:
        column = table.columns[i]
        rng = seeded_rng(seed, sample, table_key, column.name)
        decision, reason = _draw(pools.get(i, []), rng, taken, style)
        if decision is None:
            unperturbed[column.name] = reason
            continue
        chosen[i] = decision
        taken.add(name_key(decision.name))
        if style is not None:
            chosen_ids[i] = sql_identifier(decision.name.strip(), style)
            taken.add(name_key(chosen_ids[i]))
    if kind == "rpl":
        new, mapping = _replace(table, chosen, chosen_ids)
    else:
        new, mapping = _add(table, chosen, chosen_ids, seed, sample, values)
    return PerturbedTable(
        kind=kind, seed=seed, sample=sample, mapping=mapping, unperturbed=unperturbed, table=new
    )


def _replace(
    table: Table, chosen: dict[int, Decision], identifiers: dict[int, str]
) -> tuple[Table, dict[str, str]]:
    columns = list(table.columns)
    mapping: dict[str, str] = {}
    # old name or identifier (folded) → the new identifier, for keys and target lists
    renames: dict[str, str] = {}
    for i, decision in chosen.items():
        old = columns[i]
        new_name = decision.name.strip()
        columns[i] = Column(
            name=new_name,
            type=old.type,
            original_name=identifiers[i] if old.original_name is not None else None,
        )
        mapping[old.name] = new_name
        for name in _names(old):
            renames[name] = new_name
    self_names = {
        name_key(n) for n in (table.name, table.id, (table.id or "").rsplit(".", 1)[-1]) if n
    }
    foreign_keys = [
        ForeignKey(
            column=_renamed_key(fk.column, renames),
            ref_table=fk.ref_table,
            ref_column=(
                _renamed_key(fk.ref_column, renames)
                if name_key(fk.ref_table) in self_names
                else fk.ref_column
            ),
        )
        for fk in table.foreign_keys
    ]
    targets = (
        None
        if table.target_columns is None
        else [_renamed_key(n, renames) for n in table.target_columns]
    )
    new_table = table.model_copy(
        update={
            "columns": columns,
            "primary_key": [_renamed_key(n, renames) for n in table.primary_key],
            "foreign_keys": foreign_keys,
            "target_columns": targets,
        }
    )
    return Table.parse(new_table.model_dump()), mapping


def _add(
    table: Table,
    chosen: dict[int, Decision],
    identifiers: dict[int, str],
    seed: int,
    sample: int,
    values: ValueMode,
) -> tuple[Table, dict[str, str]]:
    table_key = table.id or table.name or ""
    columns: list[Column] = []
    cells: list[list[object]] = []  # per output column, its cells
    mapping: dict[str, str] = {}
    for i, column in enumerate(table.columns):
        columns.append(column)
        cells.append(table.column_values(i))
        decision = chosen.get(i)
        if decision is None:
            continue
        name = decision.name.strip()
        columns.append(
            Column(
                name=name,
                type=decision.type,
                original_name=identifiers[i] if column.original_name is not None else None,
            )
        )
        if values == "null":
            cells.append([None] * len(table.rows))
        else:
            # Its own stream, so value generation never changes which candidate is drawn.
            rng = seeded_rng(seed, sample, table_key, column.name, "values")
            template = table.column_values(i) if decision.type == column.type else []
            cells.append(added_column_values(decision.type, len(table.rows), rng, template))
        mapping[column.name] = name
    rows = [[col[r] for col in cells] for r in range(len(table.rows))]
    new_table = table.model_copy(update={"columns": columns, "rows": rows})
    return Table.parse(new_table.model_dump()), mapping
