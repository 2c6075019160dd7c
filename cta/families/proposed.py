"""CTA's RPL and ADD as families: each question's mentioned columns renamed to, or given beside
them, a name the pipeline proposes (ADVETA's protocol; docs/method.md §4).

They plan per question. For every kind and seed, every table a question's gold SQL mentions is
perturbed: each of its mentioned columns gets a randomly chosen candidate of the pipeline
(:func:`cta.apply.sample.sample_perturbations`). Because candidates are drawn per column (the
same column gets the same candidate under the same seed, whichever question asks), questions
that mention the same columns share one edited database. The pipeline is asked once for the
whole run (:class:`MentionedProposals`, shared by RPL and ADD): every table some gold query
mentions, its targets (``Table.target_columns``) the columns mentioned. A question whose SQL
mentions no column (``SELECT count(*) FROM t``) keeps the original database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from cta.apply.sample import ValueMode, sample_perturbations
from cta.families.base import FamilyContext, NotApplicable
from cta.families.model import DbEdit
from cta.results import Kind, PerturbationResult, PerturbedTable
from cta.sql.database import NewColumn, SchemaPerturbation, perturb_schema, sqlite_fold
from cta.table import Table

__all__ = ["MentionedProposals", "ProposedColumns"]

_OPERATIONS = {
    "rpl": "RPL: mentioned columns renamed",
    "add": "ADD: a column added beside each mentioned one",
}


class MentionedProposals:
    """The pipeline's judged candidates for every table some gold query of the run mentions
    (targets: the mentioned columns), asked in one call the first time any is needed."""

    def __init__(self, proposer: Callable[[Sequence[Table]], list[PerturbationResult]]) -> None:
        self._proposer = proposer
        self._asked: dict[tuple[str, int], tuple[Table, PerturbationResult]] | None = None

    def of(
        self, run: Mapping[str, FamilyContext], db_id: str, t: int
    ) -> tuple[Table, PerturbationResult]:
        """The request (the natural table, its targets set) and result of table ``t`` of
        ``db_id``, over the databases of ``run``."""
        if self._asked is None:
            targets = _targets(run)
            requests: list[Table] = []
            for (db, i), identifiers in targets.items():
                source_table = run[db].tables[i]
                natural = [source_table.column(c).name for c in identifiers]
                requests.append(source_table.model_copy(update={"target_columns": natural}))
            results = self._proposer(requests) if requests else []
            if len(results) != len(requests):
                raise ValueError(
                    f"proposer returned {len(results)} results for {len(requests)} tables"
                )
            self._asked = {k: (q, r) for k, q, r in zip(targets, requests, results, strict=True)}
        return self._asked[(db_id, t)]


def _targets(run: Mapping[str, FamilyContext]) -> dict[tuple[str, int], list[str]]:
    """Per (db, table index): identifiers of the columns some gold SQL mentions, table order."""
    out: dict[tuple[str, int], list[str]] = {}
    for db_id, ctx in run.items():
        for t, table in enumerate(ctx.schema.tables):
            key = sqlite_fold(table.name)
            names = {c for tk, c in ctx.usage.columns if tk == key}
            found = [c.name for c in table.columns if sqlite_fold(c.name) in names]
            if found:
                out[(db_id, t)] = found
    return dict(sorted(out.items()))


@dataclass
class ProposedColumns:
    """RPL (``kind="rpl"``) or ADD (``kind="add"``) over the pipeline's proposals."""

    kind: str  # rpl or add
    proposals: MentionedProposals
    values: ValueMode = "generate"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        """The edit of one question's tables: each of its mentioned columns once."""
        assert ctx.run is not None, "RPL and ADD are planned per question"
        [bound] = ctx.queries
        changes: dict[str, tuple[NewColumn, ...]] = {}
        mapping: dict[str, dict[str, str]] = {}
        sql_mapping: dict[str, dict[str, str]] = {}
        unperturbed: dict[str, dict[str, str]] = {}
        for t, table in enumerate(ctx.schema.tables):
            mentioned = [
                r.column for r in bound.columns if sqlite_fold(r.table) == sqlite_fold(table.name)
            ]
            if not mentioned:
                continue
            natural_table, result = self.proposals.of(ctx.run, ctx.db_id, t)
            columns = [natural_table.column(c).name for c in mentioned]
            [pt] = sample_perturbations(
                natural_table,
                result,
                cast(Kind, self.kind),
                1,
                seed,
                columns=columns,
                values=self.values,
            )
            if pt.unperturbed:
                unperturbed[table.name] = dict(pt.unperturbed)
            if not pt.mapping:
                continue
            new_columns = _new_columns(natural_table, pt, table.columns)
            changes[table.name] = new_columns
            mapping[table.name] = dict(pt.mapping)
            sql_mapping[table.name] = _sql_mapping(pt, new_columns)
        if not changes:
            raise NotApplicable("no mentioned column has a candidate", unperturbed)
        perturbation = SchemaPerturbation(changes)
        return DbEdit(
            schema=perturb_schema(ctx.schema, perturbation),
            operation=_OPERATIONS[self.kind],
            mapping=mapping,
            column_map=perturbation.column_map(ctx.schema),
            perturbation=perturbation,
            sql_mapping=sql_mapping,
            unperturbed=unperturbed,
        )


def _new_columns(
    original: Table, perturbed: PerturbedTable, schema_columns: Sequence[Any]
) -> tuple[NewColumn, ...]:
    """The perturbed table as :class:`NewColumn` entries over the original identifiers."""
    ids = [c.original_name or c.name for c in original.columns]
    types = [c.type for c in schema_columns]
    out: list[NewColumn] = []
    if perturbed.kind == "rpl":
        for old_id, col_type, new in zip(ids, types, perturbed.table.columns, strict=True):
            out.append(
                NewColumn(
                    name=new.original_name or new.name, type=col_type, source=old_id, label=new.name
                )
            )
        return tuple(out)
    j = 0
    for new in perturbed.table.columns:
        if j < len(original.columns) and new == original.columns[j]:
            out.append(NewColumn(name=ids[j], type=types[j], source=ids[j], label=new.name))
            j += 1
        else:
            out.append(
                NewColumn(
                    name=new.original_name or new.name,
                    type=new.type,
                    source=None,
                    template=ids[j - 1],
                    label=new.name,
                )
            )
    return tuple(out)


def _sql_mapping(perturbed: PerturbedTable, new_columns: Sequence[NewColumn]) -> dict[str, str]:
    """The mapping between SQL identifiers (RPL: old → new; ADD: target → added)."""
    if perturbed.kind == "rpl":
        return {
            c.source: c.name for c in new_columns if c.source is not None and c.name != c.source
        }
    return {c.template: c.name for c in new_columns if c.source is None and c.template}
