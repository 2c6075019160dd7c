"""The families' half of the one runner (:func:`cta.datasets.base.run_protocol` calls it):
every example × family × seed, one record each.

Per database, family and seed there is one edited database, ``<db_id>_<kind>_s<seed>_v0``
(the family plans once per database, so every question of the database shares it). An item
whose gold SQL cannot be rewritten exactly, or whose database the family cannot apply to,
keeps the original database and SQL and says why (``unchanged``): a family never writes a
broken gold query. ``question-synonym`` keeps database and SQL and rewrites the question.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from cta.families.base import Family, FamilyContext, NotApplicable, rewrite_for, usage_of
from cta.families.model import Database, DbEdit, ProtocolResult, Variant
from cta.sql.examples import PerturbedExample, SqlExample
from cta.sql.rewrite import BoundQuery, SqlRewriteError

__all__ = ["run_families"]


def run_families(
    examples: Sequence[SqlExample],
    databases: Mapping[str, Database],
    bound: Mapping[str, BoundQuery | SqlRewriteError],
    families: Mapping[str, Family],
    seeds: Sequence[int],
    questions: Mapping[str, str] | None = None,
) -> ProtocolResult:
    """Apply every family under every seed to every example (see the module docstring).

    ``bound`` holds each example's gold SQL bound to its schema (or why it could not be);
    ``questions`` the question text per example id (for ``question-synonym``).
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

    planned: dict[tuple[str, str, int], DbEdit | str] = {}
    for kind, family in families.items():
        for seed in seeds:
            for db_id, ctx in contexts.items():
                try:
                    planned[(kind, db_id, seed)] = family.plan(ctx, seed)
                except NotApplicable as exc:
                    planned[(kind, db_id, seed)] = f"not_applicable: {exc}"

    variants: dict[str, Variant] = {}
    out: list[PerturbedExample] = []
    for ex in examples:
        b = bound[ex.id]
        schema = databases[ex.db_id].schema
        for kind in families:
            for seed in seeds:
                base = PerturbedExample.of(ex.id, ex.db_id, kind, seed, sql=ex.sql)
                plan = planned[(kind, ex.db_id, seed)]
                if isinstance(plan, str):
                    out.append(base.model_copy(update={"unchanged": plan}))
                    continue
                if isinstance(b, SqlRewriteError):
                    out.append(base.model_copy(update={"unchanged": f"gold SQL not bound: {b}"}))
                    continue
                if plan.question is not None:
                    text = (questions or {}).get(ex.id, "")
                    new = plan.question(text) if text else None
                    if new is None:
                        out.append(
                            base.model_copy(
                                update={"unchanged": "no schema word of the question has a synonym"}
                            )
                        )
                    else:
                        out.append(
                            base.model_copy(update={"question": new, "operation": plan.operation})
                        )
                    continue
                try:
                    sql = rewrite_for(ex.sql, schema, plan)
                except SqlRewriteError as exc:
                    out.append(base.model_copy(update={"unchanged": f"not rewritten: {exc}"}))
                    continue
                variant_id = f"{ex.db_id}_{kind}_s{seed}_v0"
                variants.setdefault(variant_id, Variant(variant_id, ex.db_id, kind, seed, plan))
                out.append(
                    base.model_copy(
                        update={
                            "perturbed_db_id": variant_id,
                            "sql": sql,
                            "operation": plan.operation,
                            "mapping": plan.mapping,
                        }
                    )
                )
    return ProtocolResult(out, variants, dict(bound), seconds=time.perf_counter() - started)
