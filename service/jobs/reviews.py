"""Human review of a job's proposals: the names, the reviewers' votes, and what they export.

A *review item* is one name for one target column of one table of a job: an RPL or ADD name
the generator proposed (with its judge scores and candidate source), or one a reviewer added.
Items are copied from the job's results the first time the job is opened for review (and
for tables finished since), under the job row's lock, so two openers never copy twice.

Each reviewer (the API key's sha256; ``local`` on a server without keys) votes on an item:
accept or reject, and a label (equivalent / associated / neither). The item's name is shared:
renaming it bumps its ``version``, and every write names the version its author saw — a write
on an older version is refused with :class:`ReviewConflict` (HTTP 409) carrying the item as it
now is, so two reviewers never silently overwrite each other. Votes given on an older version
are *stale*: shown, never counted.

An item is *accepted* when its current accepts outnumber its current rejects; the exports
(:mod:`service.jobs.review_exports`) all read the same counts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, Field, model_validator
from sqlalchemy.engine import Connection

from cta.judge.decide import DecisionRule
from cta.results import PerturbationResult
from service.jobs.store import JobStore, utcnow
from service.jobs.tables import job_items, jobs, review_items, review_votes
from service.schemas import JobStatus

__all__ = [
    "LOCAL_REVIEWER",
    "REVIEWABLE_KINDS",
    "ItemView",
    "ReviewAction",
    "ReviewConflict",
    "ReviewJob",
    "Reviews",
]

LOCAL_REVIEWER = "local"
REVIEWABLE_KINDS = ("tables", "spider")

Decided = Literal["accept", "reject"]
Label = Literal["equivalent", "associated", "neither"]
#: the label a bare accept/reject implies, per kind
_IMPLIED: dict[tuple[str, str], Label] = {
    ("rpl", "accept"): "equivalent",
    ("add", "accept"): "associated",
    ("rpl", "reject"): "neither",
    ("add", "reject"): "neither",
}


class ReviewAction(BaseModel):
    """One reviewer's write on one item, on the ``version`` they saw."""

    action: Literal["accept", "reject", "clear", "label", "rename"]
    version: int = Field(ge=1, le=2**31 - 1)
    label: Label | None = None
    name: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _complete(self) -> ReviewAction:
        if self.action == "rename" and not (self.name or "").strip():
            raise ValueError("rename needs a non-blank 'name'")
        if self.action == "label" and self.label is None:
            raise ValueError("label needs 'label': equivalent, associated or neither")
        return self


class NewName(BaseModel):
    """A name a reviewer adds to a target column."""

    position: int = Field(ge=0, le=2**31 - 1)
    target: str = Field(min_length=1, max_length=512)
    kind: Literal["rpl", "add"]
    name: str = Field(min_length=1, max_length=200)

    @model_validator(mode="after")
    def _not_blank(self) -> NewName:
        if not self.name.strip():
            raise ValueError("'name' is blank")
        return self


@dataclass(slots=True)
class ItemView:
    """One review item as a reviewer sees it: the name, its scores and everyone's votes.

    A plain dataclass, not a model: a page builds thousands from database rows that are
    already valid (JSON via :meth:`as_json`)."""

    id: int
    position: int
    target: str
    kind: Literal["rpl", "add"]
    proposed: str
    name: str
    origin: Literal["generator", "reviewer"]
    source: str | None
    e1: float | None
    e2: float | None
    association: float | None
    version: int
    # distance of the deciding score to its threshold (None: a reviewer's own name)
    margin: float | None
    accepts: int = 0
    rejects: int = 0
    stale_votes: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    mine: Decided | None = None
    my_label: Label | None = None
    my_vote_stale: bool = False

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "accepted": self.accepted, "agreement": self.agreement}

    @property
    def accepted(self) -> bool:
        return self.accepts > self.rejects

    @property
    def agreement(self) -> float | None:
        """Share of the current votes that agree with the majority (None: under two votes)."""
        votes = self.accepts + self.rejects
        return max(self.accepts, self.rejects) / votes if votes >= 2 else None

    def label(self) -> Label | None:
        """The majority label of the current votes (an accept/reject implies one)."""
        if not self.labels:
            return None
        best = max(self.labels.values())
        winners = sorted(k for k, n in self.labels.items() if n == best)
        return winners[0] if len(winners) == 1 else None  # type: ignore[return-value]


class ReviewConflict(Exception):
    """A write named an older version of the item (or a name it already has)."""

    def __init__(self, message: str, item: ItemView) -> None:
        super().__init__(message)
        self.message = message
        self.item = item


@dataclass
class ReviewColumn:
    position: int
    target: str
    items: list[ItemView]

    @property
    def margin(self) -> float:
        margins = [i.margin for i in self.items if i.margin is not None]
        return min(margins) if margins else float("inf")


@dataclass
class ReviewTable:
    position: int
    table_id: str | None
    title: str
    entity: str
    entity_source: str
    header: list[str]
    types: list[str]
    rows: list[list[Any]]
    columns: list[ReviewColumn]


@dataclass
class ReviewJob:
    """A job opened for review: its tables, their columns and items, and the counts."""

    status: JobStatus
    tables: list[ReviewTable]
    failed: int = 0
    waiting: int = 0
    items: list[ItemView] = field(default_factory=list)

    @property
    def reviewed_by_me(self) -> int:
        return sum(1 for i in self.items if i.mine is not None and not i.my_vote_stale)

    @property
    def agreement(self) -> float | None:
        """Share of the items with two or more current votes on which all agree."""
        shared = [i for i in self.items if i.accepts + i.rejects >= 2]
        if not shared:
            return None
        return sum(1 for i in shared if i.accepts == 0 or i.rejects == 0) / len(shared)

    def columns(self, order: Literal["table", "margin"] = "table") -> list[ReviewColumn]:
        """Every column with items, in table order or nearest thresholds first (columns by
        their nearest name, and the names within each column likewise)."""
        found = [c for t in self.tables for c in t.columns if c.items]
        if order == "margin":
            found = [
                ReviewColumn(c.position, c.target, sorted(c.items, key=_by_margin)) for c in found
            ]
            found.sort(key=lambda c: (c.margin, c.position, c.target))
        return found


def _by_margin(item: ItemView) -> tuple[float, int]:
    return (item.margin if item.margin is not None else float("inf"), item.id)


class Reviews:
    """Review items and votes in the jobs database of ``store``."""

    def __init__(self, store: JobStore, rule: DecisionRule) -> None:
        self.store = store
        self.rule = rule

    # -- reading ------------------------------------------------------------------------------
    def open(
        self, job_id: str, owner: str | None, reviewer: str, rows: int = 3
    ) -> ReviewJob | None:
        """The job for review (items copied from new results first); None: no such job."""
        status = self.store.get_job(job_id, owner)
        if status is None:
            return None
        if status.kind in REVIEWABLE_KINDS:
            self._materialise(job_id)
        with self.store._read() as conn:
            found = conn.execute(
                sa.select(
                    job_items.c.position,
                    job_items.c.status,
                    job_items.c.table_id,
                    job_items.c.payload,
                    job_items.c.result,
                )
                .where(job_items.c.job_id == job_id)
                .order_by(job_items.c.position)
            ).all()
            views = self._views(conn, job_id, reviewer)
        by_column: dict[tuple[int, str], list[ItemView]] = {}
        for view in views:
            by_column.setdefault((view.position, view.target), []).append(view)
        tables: list[ReviewTable] = []
        failed = waiting = 0
        for row in found:
            if row.status != "done" or status.kind not in REVIEWABLE_KINDS:
                failed += row.status in ("failed", "cancelled")
                waiting += row.status in ("pending", "running")
                continue
            table = json.loads(row.payload)
            result = json.loads(row.result)
            header = [c["name"] for c in table["columns"]]
            targets = [c["column"] for c in result.get("columns", [])]
            tables.append(
                ReviewTable(
                    position=row.position,
                    table_id=row.table_id,
                    title=table.get("name") or table.get("caption") or row.table_id or "",
                    entity=result.get("primary_entity", ""),
                    entity_source=result.get("entity_source", ""),
                    header=header,
                    types=[c.get("type", "text") for c in table["columns"]],
                    rows=table.get("rows", [])[:rows],
                    columns=[
                        ReviewColumn(row.position, t, by_column.get((row.position, t), []))
                        for t in targets
                    ],
                )
            )
        return ReviewJob(status, tables, failed, waiting, views)

    def item(self, job_id: str, item_id: int, reviewer: str) -> ItemView | None:
        with self.store._read() as conn:
            views = self._views(conn, job_id, reviewer, item_id)
        return views[0] if views else None

    def _views(
        self, conn: Connection, job_id: str, reviewer: str, item_id: int | None = None
    ) -> list[ItemView]:
        query = sa.select(review_items).where(review_items.c.job_id == job_id)
        if item_id is not None:
            query = query.where(review_items.c.id == item_id)
        items = conn.execute(query.order_by(review_items.c.position, review_items.c.id)).all()
        votes_query = (
            sa.select(review_votes, review_items.c.version.label("item_version"))
            .join(review_items, review_items.c.id == review_votes.c.item_id)
            .where(review_items.c.job_id == job_id)
        )
        if item_id is not None:
            votes_query = votes_query.where(review_items.c.id == item_id)
        votes: dict[int, list[Any]] = {}
        for vote in conn.execute(votes_query):
            votes.setdefault(vote.item_id, []).append(vote)
        return [self._view(item, votes.get(item.id, []), reviewer) for item in items]

    def _view(self, item: Any, votes: Sequence[Any], reviewer: str) -> ItemView:
        view = ItemView(
            id=item.id,
            position=item.position,
            target=item.target,
            kind=item.kind,
            proposed=item.proposed,
            name=item.name,
            origin=item.origin,
            source=item.source,
            e1=item.e1,
            e2=item.e2,
            association=item.association,
            version=item.version,
            margin=self._margin(item.kind, item.e1, item.e2, item.association),
        )
        labels: Counter[str] = Counter()
        for vote in votes:
            current = vote.version == item.version
            if vote.reviewer == reviewer:
                view.mine, view.my_label, view.my_vote_stale = (
                    vote.decision,
                    vote.label,
                    not current,
                )
            if not current:
                view.stale_votes += 1
                continue
            view.accepts += vote.decision == "accept"
            view.rejects += vote.decision == "reject"
            label = vote.label or (_IMPLIED[(item.kind, vote.decision)] if vote.decision else None)
            if label:
                labels[label] += 1
        view.labels = dict(labels)
        return view

    def _margin(
        self, kind: str, e1: float | None, e2: float | None, association: float | None
    ) -> float | None:
        """How far the score that decided this name lies from its threshold."""
        if e1 is None or e2 is None:
            return None
        if kind == "rpl":
            return abs(min(e1, e2) - self.rule.rpl_threshold)
        margin = abs(max(e1, e2) - self.rule.add_threshold)
        if association is not None and self.rule.add_association is not None:
            margin = min(margin, abs(association - self.rule.add_association))
        return margin

    # -- copying proposals in -----------------------------------------------------------------
    def _materialise(self, job_id: str) -> None:
        """Copy the proposals of done tables that have no review items yet."""
        with self.store._read() as conn:
            if not self._new_positions(conn, job_id):
                return
        with self.store._tx() as conn:
            # One copier at a time per job (on SQLite, BEGIN IMMEDIATE already serialises).
            conn.execute(sa.select(jobs.c.id).where(jobs.c.id == job_id).with_for_update())
            new = self._new_positions(conn, job_id)
            if not new:
                return
            now = utcnow()
            rows: list[dict[str, Any]] = []
            for position, result_json in conn.execute(
                sa.select(job_items.c.position, job_items.c.result).where(
                    job_items.c.job_id == job_id, job_items.c.position.in_(new)
                )
            ):
                result = PerturbationResult.model_validate_json(result_json)
                for column in result.columns:
                    for kind, decisions in (("rpl", column.replace), ("add", column.add)):
                        seen: set[str] = set()
                        for d in decisions:
                            if d.name in seen:
                                continue
                            seen.add(d.name)
                            rows.append(
                                {
                                    "job_id": job_id,
                                    "position": position,
                                    "target": column.column,
                                    "kind": kind,
                                    "proposed": d.name,
                                    "name": d.name,
                                    "origin": "generator",
                                    "source": d.source,
                                    "e1": d.e1,
                                    "e2": d.e2,
                                    "association": d.association,
                                    "version": 1,
                                    "updated_at": now,
                                }
                            )
            for start in range(0, len(rows), 1000):
                conn.execute(review_items.insert(), rows[start : start + 1000])

    def _new_positions(self, conn: Connection, job_id: str) -> list[int]:
        """Done tables with proposals not yet copied (a table without any name is re-read:
        cheap, and it keeps no marker row)."""
        copied = sa.select(review_items.c.position).where(
            review_items.c.job_id == job_id, review_items.c.position == job_items.c.position
        )
        return list(
            conn.execute(
                sa.select(job_items.c.position).where(
                    job_items.c.job_id == job_id,
                    job_items.c.status == "done",
                    job_items.c.result.is_not(None),
                    job_items.c.result.contains('"name"'),
                    ~copied.exists(),
                )
            ).scalars()
        )

    # -- writing ------------------------------------------------------------------------------
    def act(
        self, job_id: str, item_id: int, reviewer: str, action: ReviewAction
    ) -> ItemView | None:
        """Apply ``action``; None when the job has no such item. Raises :class:`ReviewConflict`
        when the item's version is no longer ``action.version``."""
        now = utcnow()
        with self.store._tx() as conn:
            item = conn.execute(
                sa.select(review_items)
                .where(review_items.c.job_id == job_id, review_items.c.id == item_id)
                .with_for_update()
            ).one_or_none()
            if item is None:
                return None
            if item.version != action.version:
                conflict = True
            else:
                conflict = False
                self._apply(conn, item, reviewer, action, now)
        view = self.item(job_id, item_id, reviewer)
        assert view is not None
        if conflict:
            who = "another reviewer" if item.updated_by != reviewer else "you, elsewhere"
            raise ReviewConflict(
                f"this name was changed by {who} to {view.name!r} (version {view.version}, "
                f"you had version {action.version}); nothing was saved — look again and redo",
                view,
            )
        return view

    def _apply(
        self, conn: Connection, item: Any, reviewer: str, action: ReviewAction, now: Any
    ) -> None:
        version = item.version
        if action.action == "rename":
            name = (action.name or "").strip()
            if name != item.name:
                version += 1
                conn.execute(
                    review_items.update()
                    .where(review_items.c.id == item.id)
                    .values(name=name, version=version, updated_by=reviewer, updated_at=now)
                )
            # Renaming is accepting the new name.
            self._vote(conn, item.id, reviewer, version, now, decision="accept", label=None)
        elif action.action == "clear":
            conn.execute(
                review_votes.delete().where(
                    review_votes.c.item_id == item.id, review_votes.c.reviewer == reviewer
                )
            )
        elif action.action == "label":
            assert action.label is not None  # the model checks it
            decision = "accept" if _IMPLIED[(item.kind, "accept")] == action.label else "reject"
            self._vote(conn, item.id, reviewer, version, now, decision, action.label)
        else:
            self._vote(conn, item.id, reviewer, version, now, action.action, None)

    def _vote(
        self,
        conn: Connection,
        item_id: int,
        reviewer: str,
        version: int,
        now: Any,
        decision: str,
        label: str | None,
    ) -> None:
        values = {"decision": decision, "label": label, "version": version, "updated_at": now}
        updated = conn.execute(
            review_votes.update()
            .where(review_votes.c.item_id == item_id, review_votes.c.reviewer == reviewer)
            .values(**values)
        ).rowcount
        if not updated:
            conn.execute(review_votes.insert().values(item_id=item_id, reviewer=reviewer, **values))

    def add_name(self, job_id: str, reviewer: str, new: NewName) -> ItemView | None:
        """Add a reviewer's own name (accepted by them); None: no such table or column.
        Raises :class:`ReviewConflict` when the column already has that name."""
        name = new.name.strip()
        now = utcnow()
        with self.store._tx() as conn:
            # Two reviewers adding the same name at once: the second waits, then finds it.
            conn.execute(sa.select(jobs.c.id).where(jobs.c.id == job_id).with_for_update())
            result = conn.execute(
                sa.select(job_items.c.result).where(
                    job_items.c.job_id == job_id,
                    job_items.c.position == new.position,
                    job_items.c.status == "done",
                )
            ).scalar_one_or_none()
            if result is None or new.target not in {
                c.column for c in PerturbationResult.model_validate_json(result).columns
            }:
                return None
            existing = conn.execute(
                sa.select(review_items.c.id).where(
                    review_items.c.job_id == job_id,
                    review_items.c.position == new.position,
                    review_items.c.target == new.target,
                    review_items.c.kind == new.kind,
                    sa.or_(review_items.c.proposed == name, review_items.c.name == name),
                )
            ).scalar_one_or_none()
            if existing is None:
                item_id = conn.execute(
                    review_items.insert()
                    .values(
                        job_id=job_id,
                        position=new.position,
                        target=new.target,
                        kind=new.kind,
                        proposed=name,
                        name=name,
                        origin="reviewer",
                        version=1,
                        updated_by=reviewer,
                        updated_at=now,
                    )
                    .returning(review_items.c.id)
                ).scalar_one()
                self._vote(conn, item_id, reviewer, 1, now, "accept", None)
        if existing is not None:
            view = self.item(job_id, existing, reviewer)
            assert view is not None
            raise ReviewConflict(f"column {new.target!r} already has the name {name!r}", view)
        return self.item(job_id, item_id, reviewer)
