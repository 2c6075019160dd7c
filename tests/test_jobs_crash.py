"""Crash safety with real ``cta worker`` processes: SIGKILL mid-job, restart, nothing lost or doubled.

The workers run the stand-in pipeline through the ``--pipeline`` hook (``CTA_FAKE_DELAY``
slows each table down so the kill lands mid-batch; ``CTA_FAKE_LOG`` records every table a
worker *ran*, so re-runs are visible while the store must hold each result exactly once).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from service_fakes import wtq_like_table
from test_jobs_store import pg_url  # noqa: F401  (fixture)

from cta.results import PerturbOptions
from service.jobs.store import JobStore
from service.jobs.submit import job_items
from service.schemas import TablesJobCreate
from service.settings import ServiceSettings

TESTS = Path(__file__).resolve().parent
CTA = Path(sys.executable).with_name("cta")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.sqlite3'}"
    else:
        yield request.getfixturevalue("pg_url")


def _submit(store: JobStore, n: int) -> str:
    request = TablesJobCreate(
        tables=[wtq_like_table(i) for i in range(n)], options=PerturbOptions(seed=2)
    )
    items = job_items(request, ServiceSettings())
    return store.create_job("tables", None, request.options, items).id


def _worker(
    tmp_path: Path, url: str, worker_id: str, *extra: str, lease: float = 300
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "CTA_HOME": str(tmp_path / "home"),
        "CTA_DATABASE_URL": url,
        "CTA_JOB_LEASE_SECONDS": str(lease),
        "CTA_JOB_POLL_SECONDS": "0.05",
        "CTA_FAKE_DELAY": "0.05",
        "CTA_FAKE_LOG": str(tmp_path / "ran.log"),
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [str(CTA), "worker", "--worker-id", worker_id, "--batch", "4"]
    cmd += ["--pipeline", "service_fakes:make_pipeline", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _done(store: JobStore, job_id: str) -> int:
    status = store.get_job(job_id, None)
    assert status is not None
    return status.done


def _kill_mid_batch(proc: subprocess.Popen[bytes], ran_log: Path, at: int) -> None:
    """SIGKILL once ``at`` tables have run: with batches of 4, the 4th batch is half done."""
    deadline = time.monotonic() + 60
    while not ran_log.exists() or len(ran_log.read_text().splitlines()) < at:
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "worker made no progress"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def _assert_each_table_done_once(store: JobStore, job_id: str, n: int) -> None:
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT position, status, result FROM job_items WHERE job_id = :j ORDER BY position"
            ),
            {"j": job_id},
        ).all()
    assert [r.position for r in rows] == list(range(n))
    assert all(r.status == "done" for r in rows)
    page = store.results(job_id, None, 0, 1000)
    assert page is not None
    assert [item.result.table_id for item in page.items if item.result] == [
        f"t{i}" for i in range(n)
    ]
    status = store.get_job(job_id, None)
    assert status is not None and (status.state, status.done, status.failed) == ("done", n, 0)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("db_url", "restart"),
    [
        ("sqlite", "same-id"),
        ("sqlite", "other-id"),
        pytest.param("postgres", "same-id", marks=pytest.mark.postgres),
    ],
    indirect=["db_url"],
)
def test_sigkilled_worker_resumes_and_finishes_every_table_once(
    tmp_path: Path, db_url: str, restart: str
) -> None:
    store = JobStore(db_url)
    store.migrate()
    job_id = _submit(store, 50)
    # "other-id": a new worker must wait for the dead one's leases to expire (1.5 s).
    lease = 300 if restart == "same-id" else 1.5
    first = _worker(tmp_path, db_url, "crashy", lease=lease)
    _kill_mid_batch(first, tmp_path / "ran.log", at=13)

    status = store.get_job(job_id, None)
    assert status is not None and status.done == 12 and status.running == 4

    second_id = "crashy" if restart == "same-id" else "rescuer"
    second = _worker(tmp_path, db_url, second_id, "--exit-when-idle", lease=lease)
    if restart == "other-id":
        # exit-when-idle would stop before the dead leases expire: keep it polling until done
        deadline = time.monotonic() + 60
        while _done(store, job_id) < 50:
            assert time.monotonic() < deadline
            if second.poll() is not None:
                second = _worker(tmp_path, db_url, second_id, "--exit-when-idle", lease=lease)
            time.sleep(0.1)
    assert second.wait(60) == 0, second.stderr.read().decode()[-2000:]  # type: ignore[union-attr]

    _assert_each_table_done_once(store, job_id, 50)
    ran = Counter((tmp_path / "ran.log").read_text().split()[1::2])
    assert set(ran) == {f"t{i}" for i in range(50)}
    assert ran["t12"] == 2  # ran before the kill and again after, yet stored once
    store.close()


@pytest.mark.slow
def test_two_worker_processes_never_run_the_same_table(tmp_path: Path, db_url: str) -> None:
    store = JobStore(db_url)
    store.migrate()
    job_id = _submit(store, 40)
    workers = [_worker(tmp_path, db_url, f"w{i}", "--exit-when-idle") for i in range(2)]
    for proc in workers:
        assert proc.wait(60) == 0, proc.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
    _assert_each_table_done_once(store, job_id, 40)
    words = (tmp_path / "ran.log").read_text().split()
    ran = Counter(words[1::2])
    assert sorted(ran.values()) == [1] * 40  # no crash: every table ran exactly once
    assert len(set(words[0::2])) == 2  # both processes took a share
    store.close()
