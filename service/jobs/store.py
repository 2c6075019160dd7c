"""The jobs store: jobs and their tables in SQLite (WAL) or PostgreSQL, via SQLAlchemy 2.

Crash safety rests on three rules:

* a worker **claims** items atomically — one ``UPDATE … WHERE id IN (SELECT … LIMIT n)``
  under ``BEGIN IMMEDIATE`` on SQLite, the same with ``FOR UPDATE SKIP LOCKED`` on
  PostgreSQL — and holds them under a **lease** that expires;
* a claimed item is **committed** (result and status in one transaction) only while the
  worker still holds it (``WHERE status='running' AND lease_owner=:me``), so a table is
  done exactly once even when a lease expired and another worker re-ran it;
* items of a worker that died (SIGKILL, OOM) are claimed again after their lease expires,
  or at once when the worker restarts under the same name (:meth:`JobStore.release`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cta.reports import EvalDatabaseResult, SpiderDatabaseResult
from cta.results import PerturbationResult, PerturbOptions
from service.jobs.tables import job_items, jobs
from service.migrations import upgrade
from service.schemas import ItemError, JobItem, JobKind, JobResultsPage, JobStatus
from service.settings import ServiceSettings

__all__ = ["ClaimedItem", "JobStore", "NewItem", "utcnow"]

_OPEN = ("pending", "running")


def utcnow() -> datetime:
    """Naive UTC now: what both back-ends store (SQLite has no time zones)."""
    return datetime.now(UTC).replace(tzinfo=None)


def _aware(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class NewItem:
    """One table of a new job: its JSON, or the error that already failed it at submission."""

    payload: str
    table_id: str | None = None
    error: ItemError | None = None


@dataclass(frozen=True)
class ClaimedItem:
    """An item a worker holds under lease, with what it needs to run it."""

    id: int
    job_id: str
    position: int
    kind: JobKind
    payload: str
    options: PerturbOptions
    attempts: int


class JobStore:
    """Jobs, their items, claims and leases over one SQLAlchemy engine."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = _create_engine(url)
        self.is_postgres = self.engine.dialect.name == "postgresql"

    @classmethod
    def from_settings(cls, settings: ServiceSettings) -> JobStore:
        """The store at ``settings.resolved_database_url()``, migrated to the latest schema."""
        store = cls(settings.resolved_database_url())
        store.migrate()
        return store

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        """A write transaction (on SQLite: BEGIN IMMEDIATE, so writers queue, never fail)."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read-only snapshot (on SQLite: a deferred BEGIN, readers never wait for writers)."""
        with self.engine.connect() as conn:
            yield conn.execution_options(cta_read_only=True)

    # -- schema ----------------------------------------------------------------------------
    def migrate(self) -> None:
        """Bring the database to the latest Alembic revision (safe to run concurrently)."""
        with self._tx() as conn:
            if self.is_postgres:
                # One migrator at a time across processes; released at commit.
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(742031)"))
            upgrade(conn)

    # -- submission and queries ---------------------------------------------------------------
    def create_job(
        self,
        kind: JobKind,
        owner: str | None,
        options: PerturbOptions,
        items: Sequence[NewItem],
        manifest: dict[str, Any] | None = None,
    ) -> JobStatus:
        """Store a job and its items; items with an error are failed from the start;
        ``manifest`` is its provenance (:mod:`cta.provenance`), kept as submitted."""
        job_id = uuid.uuid4().hex
        now = utcnow()
        all_failed = all(item.error is not None for item in items)
        with self._tx() as conn:
            conn.execute(
                jobs.insert().values(
                    id=job_id,
                    kind=kind,
                    owner=owner,
                    options=options.model_dump_json(),
                    manifest=None if manifest is None else json.dumps(manifest, sort_keys=True),
                    state="done" if all_failed else "queued",
                    total=len(items),
                    created_at=now,
                    finished_at=now if all_failed else None,
                )
            )
            rows = [
                {
                    "job_id": job_id,
                    "position": i,
                    "status": "failed" if item.error else "pending",
                    "table_id": item.table_id,
                    "payload": item.payload,
                    "attempts": 0,
                    "error": item.error.model_dump_json() if item.error else None,
                    "finished_at": now if item.error else None,
                }
                for i, item in enumerate(items)
            ]
            for start in range(0, len(rows), 1000):
                conn.execute(job_items.insert(), rows[start : start + 1000])
            status = self._status(conn, job_id, owner)
        assert status is not None
        return status

    def get_job(self, job_id: str, owner: str | None) -> JobStatus | None:
        """The job's status, or None when it does not exist or belongs to another key."""
        with self._read() as conn:
            return self._status(conn, job_id, owner)

    def manifest(self, job_id: str, owner: str | None) -> dict[str, Any] | None:
        """The job's manifest (``{}`` for a job made before manifests), or None when it does
        not exist or belongs to another key."""
        with self._read() as conn:
            row = conn.execute(
                sa.select(jobs.c.manifest).where(jobs.c.id == job_id, _owned(owner))
            ).one_or_none()
        if row is None:
            return None
        return dict(json.loads(row.manifest)) if row.manifest else {}

    def list_jobs(self, owner: str | None, limit: int = 100) -> list[JobStatus]:
        """The owner's jobs, newest first."""
        with self._read() as conn:
            ids = conn.execute(
                sa.select(jobs.c.id)
                .where(_owned(owner))
                .order_by(jobs.c.created_at.desc(), jobs.c.id)
                .limit(limit)
            ).scalars()
            found = [self._status(conn, job_id, owner) for job_id in list(ids)]
        return [s for s in found if s is not None]

    def _status(self, conn: Connection, job_id: str, owner: str | None) -> JobStatus | None:
        job = conn.execute(sa.select(jobs).where(jobs.c.id == job_id, _owned(owner))).one_or_none()
        if job is None:
            return None
        counts = dict.fromkeys(("pending", "running", "done", "failed", "cancelled"), 0)
        for status, n in conn.execute(
            sa.select(job_items.c.status, sa.func.count())
            .where(job_items.c.job_id == job_id)
            .group_by(job_items.c.status)
        ):
            counts[status] = n
        return JobStatus(
            id=job.id,
            kind=job.kind,
            state=job.state,
            total=job.total,
            created_at=job.created_at.replace(tzinfo=UTC),
            started_at=_aware(job.started_at),
            finished_at=_aware(job.finished_at),
            **counts,
        )

    def results(
        self, job_id: str, owner: str | None, offset: int, limit: int
    ) -> JobResultsPage | None:
        """Items ``offset … offset+limit-1`` of a job in table order (None: no such job)."""
        with self._read() as conn:
            job = conn.execute(
                sa.select(jobs.c.total, jobs.c.kind).where(jobs.c.id == job_id, _owned(owner))
            ).one_or_none()
            if job is None:
                return None
            rows = conn.execute(
                sa.select(
                    job_items.c.position,
                    job_items.c.status,
                    job_items.c.table_id,
                    job_items.c.attempts,
                    job_items.c.result,
                    job_items.c.error,
                )
                .where(
                    job_items.c.job_id == job_id,
                    job_items.c.position >= offset,
                    job_items.c.position < offset + limit,
                )
                .order_by(job_items.c.position)
            ).all()
        dataset = job.kind == "dataset"
        evaluation = job.kind == "eval"
        items = [
            JobItem(
                index=row.position,
                status=row.status,
                table_id=row.table_id,
                attempts=row.attempts,
                result=(
                    PerturbationResult.model_validate_json(row.result)
                    if row.result and not dataset and not evaluation
                    else None
                ),
                eval_result=(
                    EvalDatabaseResult.model_validate_json(row.result)
                    if row.result and evaluation
                    else None
                ),
                dataset_result=(
                    SpiderDatabaseResult.model_validate_json(row.result)
                    if row.result and dataset
                    else None
                ),
                error=ItemError.model_validate_json(row.error) if row.error else None,
            )
            for row in rows
        ]
        end = offset + limit
        return JobResultsPage(
            job_id=job_id,
            offset=offset,
            limit=limit,
            total=job.total,
            next_offset=end if end < job.total else None,
            items=items,
        )

    def cancel(self, job_id: str, owner: str | None) -> JobStatus | None:
        """Cancel the job's pending and running items (a running one's result is discarded)."""
        now = utcnow()
        with self._tx() as conn:
            updated = conn.execute(
                jobs.update()
                .where(jobs.c.id == job_id, _owned(owner), jobs.c.state.in_(("queued", "running")))
                .values(state="cancelled", finished_at=now)
            ).rowcount
            if updated:
                conn.execute(
                    job_items.update()
                    .where(job_items.c.job_id == job_id, job_items.c.status.in_(_OPEN))
                    .values(
                        status="cancelled", lease_owner=None, lease_expires_at=None, finished_at=now
                    )
                )
            return self._status(conn, job_id, owner)

    # -- the worker's side -------------------------------------------------------------------
    def claim(
        self, worker: str, n: int, lease_seconds: float, max_attempts: int
    ) -> list[ClaimedItem]:
        """Atomically take up to ``n`` runnable items (pending, or running with a dead lease)."""
        now = utcnow()
        expires = now + timedelta(seconds=lease_seconds)
        dead_lease = sa.and_(job_items.c.status == "running", job_items.c.lease_expires_at < now)
        runnable = sa.or_(job_items.c.status == "pending", dead_lease)
        with self._tx() as conn:
            self._give_up(conn, runnable, max_attempts, now)
            # A materialised CTE runs once: as a plain IN (subquery), PostgreSQL may re-run
            # the LIMIT/SKIP LOCKED select while updating and take more than n rows.
            picked = (
                sa.select(job_items.c.id)
                .where(runnable)
                .order_by(job_items.c.id)
                .limit(n)
                .with_for_update(skip_locked=True)
                .cte("picked")
                .prefix_with("MATERIALIZED", dialect="postgresql")
            )
            rows = conn.execute(
                job_items.update()
                .where(job_items.c.id.in_(sa.select(picked.c.id)), runnable)
                .values(
                    status="running",
                    lease_owner=worker,
                    lease_expires_at=expires,
                    attempts=job_items.c.attempts + 1,
                )
                .returning(
                    job_items.c.id,
                    job_items.c.job_id,
                    job_items.c.position,
                    job_items.c.payload,
                    job_items.c.attempts,
                )
            ).all()
            if not rows:
                return []
            job_ids = sorted({row.job_id for row in rows})
            meta = {
                row.id: row
                for row in conn.execute(
                    sa.select(jobs.c.id, jobs.c.kind, jobs.c.options).where(jobs.c.id.in_(job_ids))
                )
            }
            conn.execute(
                jobs.update()
                .where(jobs.c.id.in_(job_ids), jobs.c.state == "queued")
                .values(state="running", started_at=now)
            )
        options = {
            job_id: PerturbOptions.model_validate_json(meta[job_id].options) for job_id in meta
        }
        return sorted(
            (
                ClaimedItem(
                    id=row.id,
                    job_id=row.job_id,
                    position=row.position,
                    kind=meta[row.job_id].kind,
                    payload=row.payload,
                    options=options[row.job_id],
                    attempts=row.attempts,
                )
                for row in rows
            ),
            key=lambda item: item.id,
        )

    def _give_up(self, conn: Connection, runnable: Any, max_attempts: int, now: datetime) -> None:
        """Fail items that were claimed ``max_attempts`` times without finishing."""
        doomed = conn.execute(
            job_items.update()
            .where(runnable, job_items.c.attempts >= max_attempts)
            .values(
                status="failed",
                lease_owner=None,
                lease_expires_at=None,
                finished_at=now,
                error=ItemError(
                    problem="worker_lost",
                    message=f"gave up after {max_attempts} attempts: the worker running this "
                    "table stopped before finishing it (crash, kill or lease expiry)",
                ).model_dump_json(),
            )
            .returning(job_items.c.job_id)
        ).scalars()
        for job_id in sorted(set(doomed)):
            self._finish_if_complete(conn, job_id, now)

    def complete(
        self,
        item: ClaimedItem,
        worker: str,
        result: PerturbationResult | SpiderDatabaseResult | EvalDatabaseResult,
    ) -> bool:
        """Commit an item's result; False when the worker no longer holds it (nothing written)."""
        return self._commit(item, worker, "done", result=result.model_dump_json())

    def fail(self, item: ClaimedItem, worker: str, error: ItemError) -> bool:
        """Record an item's error; False when the worker no longer holds it."""
        return self._commit(item, worker, "failed", error=error.model_dump_json())

    def _commit(self, item: ClaimedItem, worker: str, status: str, **values: Any) -> bool:
        now = utcnow()
        with self._tx() as conn:
            # Lock the job row first: two workers finishing a job's last items one after the
            # other must each see the other's commit when deciding whether the job is done.
            conn.execute(sa.select(jobs.c.id).where(jobs.c.id == item.job_id).with_for_update())
            updated = conn.execute(
                job_items.update()
                .where(
                    job_items.c.id == item.id,
                    job_items.c.status == "running",
                    job_items.c.lease_owner == worker,
                )
                .values(
                    status=status,
                    lease_owner=None,
                    lease_expires_at=None,
                    finished_at=now,
                    **values,
                )
            ).rowcount
            if updated:
                self._finish_if_complete(conn, item.job_id, now)
        return bool(updated)

    def _finish_if_complete(self, conn: Connection, job_id: str, now: datetime) -> None:
        open_items = (
            sa.select(job_items.c.id)
            .where(job_items.c.job_id == job_id, job_items.c.status.in_(_OPEN))
            .exists()
        )
        conn.execute(
            jobs.update()
            .where(jobs.c.id == job_id, jobs.c.state.in_(("queued", "running")), ~open_items)
            .values(state="done", finished_at=now)
        )

    def renew(self, items: Sequence[ClaimedItem], worker: str, lease_seconds: float) -> int:
        """Extend the leases ``worker`` still holds on ``items``; how many it still holds.

        A worker renews while a long batch runs, so a slow batch is not mistaken for a dead
        worker; an item whose lease was already taken over is left alone.
        """
        if not items:
            return 0
        expires = utcnow() + timedelta(seconds=lease_seconds)
        with self._tx() as conn:
            return conn.execute(
                job_items.update()
                .where(
                    job_items.c.id.in_([item.id for item in items]),
                    job_items.c.status == "running",
                    job_items.c.lease_owner == worker,
                )
                .values(lease_expires_at=expires)
            ).rowcount

    def release(self, worker: str) -> int:
        """Return a worker's running items to the queue (a restarted worker's stale leases)."""
        with self._tx() as conn:
            return conn.execute(
                job_items.update()
                .where(job_items.c.status == "running", job_items.c.lease_owner == worker)
                .values(status="pending", lease_owner=None, lease_expires_at=None)
            ).rowcount


def _owned(owner: str | None) -> Any:
    """Rows visible to ``owner`` (the sha256 of an API key, or None without keys)."""
    return jobs.c.owner.is_(None) if owner is None else jobs.c.owner == owner


def _create_engine(url: str) -> Engine:
    sa_url = sa.make_url(url)
    if sa_url.get_backend_name() != "sqlite":
        return sa.create_engine(url, pool_pre_ping=True)
    if not sa_url.database or sa_url.database == ":memory:":
        raise ValueError("the jobs store needs a SQLite file (workers share it), not :memory:")
    Path(sa_url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite would defer it).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Writers take the lock up front: claims and commits must not interleave, and a
        # deferred transaction that reads then writes fails under WAL instead of waiting.
        # Readers stay deferred: under WAL they read a snapshot without blocking anyone.
        read_only = conn.get_execution_options().get("cta_read_only", False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine
