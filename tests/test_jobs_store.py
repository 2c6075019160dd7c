"""The jobs store on SQLite and PostgreSQL: migrations, atomic claims, leases, guarded commits."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from cta.results import PerturbationResult, PerturbOptions
from service.jobs.store import JobStore, NewItem
from service.schemas import ItemError

PG_ENV = "CTA_TEST_POSTGRES_URL"


def postgres_url_with_schema(base: str, schema: str) -> str:
    """``base`` with ``search_path`` set to ``schema`` (one schema per test, dropped after)."""
    url = sa.make_url(base)
    return url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


@pytest.fixture
def pg_url() -> Iterator[str]:
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"{PG_ENV} is not set (the CI script sets it to the local PostgreSQL)")
    schema = f"cta_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        yield postgres_url_with_schema(base, schema)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JobStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'jobs.sqlite3'}"
    else:
        url = request.getfixturevalue("pg_url")
    store = JobStore(url)
    store.migrate()
    yield store
    store.close()


def _items(n: int) -> list[NewItem]:
    return [NewItem(payload=f'{{"n": {i}}}', table_id=f"t{i}") for i in range(n)]


def _result(table_id: str) -> PerturbationResult:
    return PerturbationResult(
        table_id=table_id, primary_entity="film", entity_source="given", columns=[]
    )


def test_migrations_create_the_schema_and_rerun_cleanly(store: JobStore) -> None:
    store.migrate()  # a second run is a no-op
    with store.engine.connect() as conn:
        version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
        names = set(sa.inspect(conn).get_table_names())
    assert version == "0003"
    assert {"jobs", "job_items", "review_items", "review_votes", "alembic_version"} <= names


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    store = JobStore(f"sqlite:///{tmp_path / 'j.sqlite3'}")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()


def test_sqlite_readers_do_not_wait_for_a_writer(tmp_path: Path) -> None:
    store = JobStore(f"sqlite:///{tmp_path / 'j.sqlite3'}")
    store.migrate()
    job = store.create_job("tables", None, PerturbOptions(), _items(2))
    with store.engine.begin():  # a writer holds the write lock (BEGIN IMMEDIATE)
        started = time.monotonic()
        status = store.get_job(job.id, None)
        page = store.results(job.id, None, 0, 10)
        assert time.monotonic() - started < 1.0
    assert status is not None and status.pending == 2
    assert page is not None and len(page.items) == 2
    store.close()


def test_claims_never_overlap_and_commits_finish_the_job(store: JobStore) -> None:
    job = store.create_job("tables", None, PerturbOptions(seed=4), _items(5))
    first = store.claim("a", 3, 60, 3)
    second = store.claim("b", 3, 60, 3)
    assert [i.position for i in first] == [0, 1, 2]
    assert [i.position for i in second] == [3, 4]
    assert store.claim("c", 3, 60, 3) == []
    assert first[0].options == PerturbOptions(seed=4) and first[0].attempts == 1
    running = store.get_job(job.id, None)
    assert running is not None and running.state == "running" and running.running == 5
    for item in first:
        assert store.complete(item, "a", _result(f"t{item.position}"))
    assert not store.complete(second[0], "a", _result("x"))  # not a's item
    assert store.fail(second[0], "b", ItemError(problem="boom", message="engine fault"))
    for item in second[1:]:
        assert store.complete(item, "b", _result(f"t{item.position}"))
    done = store.get_job(job.id, None)
    assert done is not None
    assert (done.state, done.done, done.failed, done.total) == ("done", 4, 1, 5)
    assert done.finished_at is not None and done.started_at is not None
    page = store.results(job.id, None, 0, 10)
    assert page is not None and page.next_offset is None
    assert [i.status for i in page.items] == ["done", "done", "done", "failed", "done"]
    assert page.items[3].error == ItemError(problem="boom", message="engine fault")


def test_an_expired_lease_is_reclaimed_and_the_late_commit_is_refused(store: JobStore) -> None:
    store.create_job("tables", None, PerturbOptions(), _items(1))
    (slow,) = store.claim("slow", 1, 0.05, 5)
    assert store.claim("fast", 1, 60, 5) == []  # lease still valid
    time.sleep(0.1)
    (again,) = store.claim("fast", 1, 60, 5)
    assert again.id == slow.id and again.attempts == 2
    assert not store.complete(slow, "slow", _result("late"))  # guard: slow lost the lease
    assert store.complete(again, "fast", _result("t0"))
    assert not store.complete(again, "fast", _result("twice"))  # done exactly once


def test_a_restarted_worker_releases_its_own_leases_at_once(store: JobStore) -> None:
    store.create_job("tables", None, PerturbOptions(), _items(2))
    store.claim("w1", 2, 3600, 5)
    assert store.claim("w2", 2, 3600, 5) == []
    assert store.release("w1") == 2
    assert [i.position for i in store.claim("w1", 2, 3600, 5)] == [0, 1]


def test_a_table_that_keeps_killing_workers_fails_after_max_attempts(store: JobStore) -> None:
    job = store.create_job("tables", None, PerturbOptions(), _items(1))
    for attempt in (1, 2):
        (item,) = store.claim(f"w{attempt}", 1, 0.01, 2)
        assert item.attempts == attempt
        time.sleep(0.03)
    assert store.claim("w3", 1, 0.01, 2) == []
    status = store.get_job(job.id, None)
    assert status is not None and (status.state, status.failed) == ("done", 1)
    page = store.results(job.id, None, 0, 1)
    assert page is not None and page.items[0].error is not None
    assert page.items[0].error.problem == "worker_lost"


def test_cancel_discards_a_running_result_and_stops_claims(store: JobStore) -> None:
    job = store.create_job("tables", "owner-hash", PerturbOptions(), _items(3))
    (item,) = store.claim("w", 1, 60, 3)
    assert store.cancel(job.id, None) is None  # another owner cannot see or cancel it
    status = store.cancel(job.id, "owner-hash")
    assert status is not None and (status.state, status.cancelled) == ("cancelled", 3)
    assert not store.complete(item, "w", _result("t0"))
    assert store.claim("w", 3, 60, 3) == []


def test_items_failed_at_submission_are_counted_and_kept(store: JobStore) -> None:
    bad = NewItem(payload="{}", table_id=None, error=ItemError(problem="no_columns", message="x"))
    job = store.create_job("tables", None, PerturbOptions(), [bad])
    assert (job.state, job.failed, job.total) == ("done", 1, 1)
    assert [i.position for i in store.claim("w", 5, 60, 3)] == []


def test_concurrent_workers_take_every_item_exactly_once(store: JobStore) -> None:
    job = store.create_job("tables", None, PerturbOptions(), _items(60))
    claimed: list[int] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        while items := store.claim(name, 3, 60, 3):
            with lock:
                claimed.extend(i.id for i in items)
            for item in items:
                assert store.complete(item, name, _result(f"t{item.position}"))

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == 60 and len(set(claimed)) == 60
    status = store.get_job(job.id, None)
    assert status is not None and (status.state, status.done) == ("done", 60)


def test_a_renewed_lease_is_not_reclaimed_and_a_lost_one_is_not_renewed(store: JobStore) -> None:
    store.create_job("tables", None, PerturbOptions(), _items(2))
    held = store.claim("slow", 2, 1.0, 5)
    time.sleep(0.6)
    assert store.renew(held, "slow", 1.0) == 2
    time.sleep(0.6)  # past the first lease, inside the renewed one
    assert store.claim("fast", 2, 60, 5) == []
    time.sleep(0.6)
    taken = store.claim("fast", 1, 60, 5)
    assert [t.id for t in taken] == [held[0].id]
    assert store.renew(held, "slow", 60) == 1  # only the item "slow" still holds
    assert store.complete(held[1], "slow", _result("t1"))


def test_a_worker_renews_its_leases_while_a_slow_batch_runs(tmp_path: Path) -> None:
    from service_fakes import FakePipeline, wtq_like_table

    from service.host import PipelineHost
    from service.jobs.submit import job_items
    from service.jobs.worker import JobWorker
    from service.schemas import TablesJobCreate
    from service.settings import ServiceSettings

    settings = ServiceSettings(home=tmp_path, job_lease_seconds=2.0, job_claim_batch=2)
    store = JobStore(f"sqlite:///{tmp_path / 'jobs.sqlite3'}")
    store.migrate()
    request = TablesJobCreate(tables=[wtq_like_table(i) for i in range(2)])
    job = store.create_job("tables", None, request.options, job_items(request, settings))
    host = PipelineHost(settings, lambda s: FakePipeline(s, delay=2.5))  # 5 s ≫ the lease
    host.load()
    worker = JobWorker(store, host, settings, name="slow")
    thread = threading.Thread(target=worker.run_once)
    thread.start()
    while (status := store.get_job(job.id, None)) is not None and status.running < 2:
        time.sleep(0.01)  # the worker claims first; from then on its leases must hold
    stolen = []
    while thread.is_alive():
        stolen += store.claim("thief", 2, 60, 5)
        time.sleep(0.2)
    thread.join()
    page = store.results(job.id, None, 0, 10)
    store.close()
    assert stolen == []
    assert page is not None and [(i.status, i.attempts) for i in page.items] == [("done", 1)] * 2
