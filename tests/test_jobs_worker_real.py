"""A ``cta worker`` process with the real (tiny) pipeline: results equal the in-process engine's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tiny_env_vars
from service_fakes import wtq_like_table

from cta.pipeline import Pipeline
from cta.results import PerturbOptions
from cta.table import Table
from service.jobs.store import JobStore
from service.jobs.submit import job_items
from service.schemas import TablesJobCreate
from service.settings import ServiceSettings

CTA = Path(sys.executable).with_name("cta")


@pytest.mark.slow
def test_worker_process_runs_the_default_pipeline_reproducibly(
    tmp_path: Path, tiny_home: Path, tiny_pipeline: Pipeline
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.sqlite3'}"
    store = JobStore(url)
    store.migrate()
    options = PerturbOptions(seed=7, samples=1)
    tables = [wtq_like_table(i, columns=4, rows=3) for i in range(3)]
    request = TablesJobCreate(tables=tables, options=options)
    job = store.create_job("tables", None, options, job_items(request, ServiceSettings()))

    run = subprocess.run(
        [str(CTA), "worker", "--exit-when-idle"],
        env={**os.environ, **tiny_env_vars(tiny_home), "CTA_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]

    page = store.results(job.id, None, 0, 10)
    assert page is not None and [i.status for i in page.items] == ["done"] * 3
    expected = tiny_pipeline.perturb_many([Table.parse(t) for t in tables], options)
    got = [item.result for item in page.items]
    assert [r.model_dump_json() for r in got if r] == [e.model_dump_json() for e in expected]
    store.close()
