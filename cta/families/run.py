"""The one runner of the families (:func:`cta.datasets.base.run_protocol` calls it): every
example × family × seed, one record each, in one loop over the families.

A family plans where its scope says. Per question (RPL, ADD): one edit per question and seed;
questions whose edits are identical share one edited database, ``<db_id>_<kind>_s<seed>_v<n>``
(``n`` counting the distinct edits of that database, kind and seed in question order); a
question the family has nothing to change for keeps the original database, with why per
mentioned column (``unperturbed``), and one whose SQL cannot be rewritten says so
(``problem``, ADVETA's records). Per database (every other family): one edited database per
database and seed, ``<db_id>_<kind>_s<seed>_v0``, shared by every question of the database;
an item whose gold SQL cannot be rewritten exactly, or whose database the family cannot apply
to, keeps the original database and SQL and says why (``unchanged``): a family never writes a
broken gold query. ``question-synonym`` keeps database and SQL and rewrites the question.

The records come per-question families first, then per-database ones, each in example × kind
× seed order.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from cta.families.base import (
    Family,
    FamilyContext,
    Need,
    NotApplicable,
    Scope,
    rewrite_for,
    usage_of,
)
from cta.families.model import Database, DbEdit, ProtocolResult, Variant
from cta.sql.examples import PerturbedExample, SqlExample
from cta.sql.rewrite import BoundQuery, SqlRewriteError, rewrite_query

__all__ = ["run_families", "unheld_by"]


def unheld_by(edit: DbEdit, holds: Collection[Need]) -> str | None:
    """Why a format holding ``holds`` cannot hold ``edit`` (None when it can): a second table,
    an expression or the family's own rewrite where the format holds none."""
    if "several-tables" not in holds and len(edit.schema.tables) > 1:
        return "the format cannot hold a second table"
    if "expressions" not in holds and (edit.expressions or edit.rewrite is not None):
        return "the format cannot hold an expression"
    return None


def run_families(
    examples: Sequence[SqlExample],
    databases: Mapping[str, Database],
    bound: Mapping[str, BoundQuery | SqlRewriteError],
    families: Mapping[str, Family],
    seeds: Sequence[int],
    questions: Mapping[str, str] | None = None,
    *,
    scopes: Mapping[str, Scope],
    holds: Collection[Need] | None = None,
) -> ProtocolResult:
    """Apply every family under every seed to every example (see the module docstring).

    ``bound`` holds each example's gold SQL bound to its schema (or why it could not be);
    ``questions`` the question text per example id (for ``question-synonym``); ``scopes``
    each family's planning scope; ``holds``, when given, what the format can hold: a
    per-database edit beyond it leaves its database's questions as they were.
    """
    started = time.perf_counter()
    by_db: dict[str, list[SqlExample]] = {}
    for ex in examples:
        by_db.setdefault(ex.db_id, []).append(ex)
    contexts: dict[str, FamilyContext] = {}
    for db_id, exs in by_db.items():
        db = databases[db_id]
        queries = [bound[ex.id] for ex in exs]
        contexts[db_id] = FamilyContext(
            db_id=db_id,
            schema=db.schema,
            tables=db.tables,
            entry=db.entry,
            usage=usage_of(queries),
            queries=[q for q in queries if isinstance(q, BoundQuery)],
            path=db.path,
        )

    run = _Run(examples, databases, bound, contexts, seeds, questions or {}, holds)
    ordered = sorted(families.items(), key=lambda item: scopes[item[0]] != "question")
    for kind, family in ordered:
        if scopes[kind] == "question":
            run.per_question(kind, family)
        else:
            run.per_database(kind, family)
    # example × kind × seed within each scope (the sort is stable: kinds, then seeds, as run)
    position = {ex.id: i for i, ex in enumerate(examples)}
    run.out.sort(key=lambda pe: (scopes[pe.kind] != "question", position[pe.id]))
    # the edited databases in the order of the records that first name them
    variants = {pe.perturbed_db_id: run.variants.get(pe.perturbed_db_id) for pe in run.out}
    found = {k: v for k, v in variants.items() if v is not None}
    return ProtocolResult(run.out, found, dict(bound), time.perf_counter() - started)


class _Run:
    """The records and variants of one run, family by family."""

    def __init__(
        self,
        examples: Sequence[SqlExample],
        databases: Mapping[str, Database],
        bound: Mapping[str, BoundQuery | SqlRewriteError],
        contexts: Mapping[str, FamilyContext],
        seeds: Sequence[int],
        questions: Mapping[str, str],
        holds: Collection[Need] | None,
    ) -> None:
        self.examples, self.databases, self.bound = examples, databases, bound
        self.contexts, self.seeds, self.questions, self.holds = contexts, seeds, questions, holds
        self.out: list[PerturbedExample] = []
        self.variants: dict[str, Variant] = {}

    def per_question(self, kind: str, family: Family) -> None:
        variant_of: dict[tuple[Any, ...], str] = {}
        counts: Counter[tuple[str, int]] = Counter()
        for ex in self.examples:
            b = self.bound[ex.id]
            db = self.databases[ex.db_id]
            for seed in self.seeds:
                item = partial(PerturbedExample.of, ex.id, ex.db_id, kind, seed)
                if isinstance(b, SqlRewriteError):
                    self.out.append(item(sql=None, problem=str(b)))
                    continue
                ctx = replace(
                    self.contexts[ex.db_id], usage=usage_of([b]), queries=[b], run=self.contexts
                )
                try:
                    edit = family.plan(ctx, seed)
                except NotApplicable as exc:
                    self.out.append(item(sql=ex.sql, unperturbed=exc.unperturbed))
                    continue
                signature = (ex.db_id, seed, edit.identity())
                variant_id = variant_of.get(signature)
                if variant_id is None:
                    n = counts[(ex.db_id, seed)]
                    counts[(ex.db_id, seed)] += 1
                    variant_id = f"{ex.db_id}_{kind}_s{seed}_v{n}"
                    self.variants[variant_id] = Variant(variant_id, ex.db_id, kind, seed, edit)
                    variant_of[signature] = variant_id
                shared = self.variants[variant_id].edit  # the question's own edit says the rest
                try:
                    sql: str | None = rewrite_query(
                        ex.sql,
                        db.schema,
                        shared.schema,
                        shared.column_map,
                        table_map=shared.table_map,
                        expressions=shared.expressions,
                    )
                    problem = None
                except SqlRewriteError as exc:
                    sql, problem = None, str(exc)
                self.out.append(
                    item(
                        perturbed_db_id=variant_id,
                        sql=sql,
                        problem=problem,
                        mapping=edit.mapping,
                        sql_mapping=edit.sql_mapping,
                        unperturbed=edit.unperturbed,
                    )
                )

    def per_database(self, kind: str, family: Family) -> None:
        planned: dict[tuple[str, int], DbEdit | str] = {}
        for seed in self.seeds:
            for db_id, ctx in self.contexts.items():
                try:
                    edit = family.plan(ctx, seed)
                except NotApplicable as exc:
                    planned[(db_id, seed)] = f"not_applicable: {exc}"
                    continue
                unheld = unheld_by(edit, self.holds) if self.holds is not None else None
                planned[(db_id, seed)] = f"not_applicable: {unheld}" if unheld else edit
        for ex in self.examples:
            b = self.bound[ex.id]
            schema = self.databases[ex.db_id].schema
            for seed in self.seeds:
                base = PerturbedExample.of(ex.id, ex.db_id, kind, seed, sql=ex.sql)
                plan = planned[(ex.db_id, seed)]
                if isinstance(plan, str):
                    self.out.append(base.model_copy(update={"unchanged": plan}))
                    continue
                if isinstance(b, SqlRewriteError):
                    self.out.append(
                        base.model_copy(update={"unchanged": f"gold SQL not bound: {b}"})
                    )
                    continue
                if plan.question is not None:
                    text = self.questions.get(ex.id, "")
                    new = plan.question(text) if text else None
                    if new is None:
                        why = "no schema word of the question has a synonym"
                        self.out.append(base.model_copy(update={"unchanged": why}))
                    else:
                        self.out.append(
                            base.model_copy(update={"question": new, "operation": plan.operation})
                        )
                    continue
                try:
                    sql = rewrite_for(ex.sql, schema, plan)
                except SqlRewriteError as exc:
                    self.out.append(base.model_copy(update={"unchanged": f"not rewritten: {exc}"}))
                    continue
                variant_id = f"{ex.db_id}_{kind}_s{seed}_v0"
                self.variants.setdefault(
                    variant_id, Variant(variant_id, ex.db_id, kind, seed, plan)
                )
                self.out.append(
                    base.model_copy(
                        update={
                            "perturbed_db_id": variant_id,
                            "sql": sql,
                            "operation": plan.operation,
                            "mapping": plan.mapping,
                        }
                    )
                )
