"""What reviewers kept of a job, in the forms it leaves the service in.

* :func:`accepted_results` — per table, the job's result with the accepted names only
  (renames applied, reviewers' names in): the curated dataset's proposer;
* :func:`annotation_rows` — the labels as rows of ``data/annotations/tables.jsonl``
  (:class:`cta.annotations.AnnotatedTable`), which judge training reads;
* :func:`acceptance_rates` — the generator's human acceptance rate per kind and per
  candidate source.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import sqlalchemy as sa

from cta.results import ColumnPerturbations, Decision, PerturbationResult
from cta.table import ColumnType
from service.jobs.reviews import LOCAL_REVIEWER, ItemView, Reviews
from service.jobs.tables import job_items

__all__ = ["acceptance_rates", "accepted_results", "annotation_rows"]


def accepted_results(
    reviews: Reviews, job_id: str, owner: str | None
) -> dict[str, PerturbationResult]:
    """Per table id: the job's result with accepted names only (renames applied, added
    names in), best first: what the curated dataset is perturbed with."""
    review = reviews.open(job_id, owner, LOCAL_REVIEWER, rows=0)
    if review is None:
        raise KeyError(job_id)
    with reviews.store._read() as conn:
        results = {
            row.position: PerturbationResult.model_validate_json(row.result)
            for row in conn.execute(
                sa.select(job_items.c.position, job_items.c.result).where(
                    job_items.c.job_id == job_id, job_items.c.status == "done"
                )
            )
        }
    curated: dict[str, PerturbationResult] = {}
    for table in review.tables:
        result = results[table.position]
        proposed = {
            (kind, column.column, d.name): d
            for column in result.columns
            for kind, decisions in (("rpl", column.replace), ("add", column.add))
            for d in decisions
        }
        types = dict(zip(table.header, table.types, strict=True))
        columns = []
        for column in table.columns:
            kept = [i for i in column.items if i.accepted]
            kept.sort(key=lambda i: (-(i.accepts - i.rejects), i.id))
            columns.append(
                ColumnPerturbations(
                    column=column.target,
                    replace=[_decision(i, proposed, types) for i in kept if i.kind == "rpl"],
                    add=[_decision(i, proposed, types) for i in kept if i.kind == "add"],
                )
            )
        key = result.table_id if result.table_id is not None else str(table.position)
        curated[key] = result.model_copy(update={"columns": columns, "samples": []})
    return curated


def annotation_rows(
    reviews: Reviews, job_id: str, owner: str | None, split: Literal["train", "dev"] = "train"
) -> list[dict[str, Any]] | None:
    """The reviews as rows of ``data/annotations/tables.jsonl`` (:class:`AnnotatedTable`):
    per table with a labelled name, every target's names by majority label."""
    review = reviews.open(job_id, owner, LOCAL_REVIEWER, rows=1000)
    if review is None:
        return None
    rows = []
    for table in review.tables:
        targets: dict[str, dict[str, list[str]]] = {}
        for column in table.columns:
            judged: dict[str, list[str]] = {"equivalent": [], "associated": [], "neither": []}
            for item in column.items:
                label = item.label()
                if label is not None and item.name not in judged[label]:
                    judged[label].append(item.name)
            if any(judged.values()):
                targets[column.target] = judged
        if not targets:
            continue
        rows.append(
            {
                "id": f"review:{job_id}:{table.table_id or table.position}",
                "split": split,
                "name": table.title,
                "entity": table.entity,
                "columns": [
                    {"name": n, "type": t} for n, t in zip(table.header, table.types, strict=True)
                ],
                "rows": table.rows,
                "targets": targets,
            }
        )
    return rows


def acceptance_rates(reviews: Reviews, job_id: str, owner: str | None) -> dict[str, Any] | None:
    """Acceptance rates of the generator's names per kind and per candidate source (and
    how many names reviewers added or renamed)."""
    review = reviews.open(job_id, owner, LOCAL_REVIEWER, rows=0)
    if review is None:
        return None
    generated = [i for i in review.items if i.origin == "generator"]
    return {
        "job_id": job_id,
        "items": len(review.items),
        "proposed": len(generated),
        "added_by_reviewers": len(review.items) - len(generated),
        "renamed": sum(1 for i in generated if i.name != i.proposed),
        "agreement": review.agreement,
        "by_kind": _rates(generated, lambda i: i.kind),
        "by_source": _rates(generated, lambda i: i.source or "unknown"),
    }


def _rates(items: Iterable[ItemView], key: Any) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[ItemView]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    out = {}
    for name, group in sorted(groups.items()):
        reviewed = [i for i in group if i.accepts + i.rejects]
        accepted = sum(1 for i in reviewed if i.accepted)
        out[name] = {
            "proposed": len(group),
            "reviewed": len(reviewed),
            "accepted": accepted,
            "acceptance_rate": accepted / len(reviewed) if reviewed else None,
        }
    return out


def _decision(
    item: ItemView, proposed: dict[tuple[str, str, str], Decision], types: dict[str, str]
) -> Decision:
    """The accepted name as a judged decision: the generator's (renamed if a reviewer renamed
    it), or, for a reviewer's own name, one that stands as certain — no judge scores, and the
    thesaurus (the human-written source) as its source, the provenance saying so."""
    original = proposed.get((item.kind, item.target, item.proposed))
    if original is not None:
        return original.model_copy(update={"name": item.name})
    column_type = types.get(item.target, "text") if item.kind == "rpl" else "text"
    return Decision(
        name=item.name,
        type=ColumnType(column_type),
        e1=1.0,
        e2=1.0,
        source="thesaurus",
        provenance="added by a reviewer",
    )
