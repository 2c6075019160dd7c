"""End to end: a real ``cta serve`` process on a loopback port, driven by the SDK and ``cta jobs``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import tiny_env_vars
from service_fakes import PETS, wtq_like_table

from cta.provenance import tree_sha256
from service.client import Client, ServiceError

TESTS = Path(__file__).resolve().parent
CTA = Path(sys.executable).with_name("cta")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CTA_HOME": str(home),
        "CTA_JOB_POLL_SECONDS": "0.05",
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        **extra,
    }


@contextmanager
def cta_serve(home: Path, *args: str, ready_timeout: float = 120, **env: str) -> Iterator[str]:
    """Run ``cta serve`` on a free loopback port until ready; SIGTERM it afterwards."""
    port = _free_port()
    log = home / f"serve-{port}.log"
    home.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [str(CTA), "serve", "--port", str(port), *args],
            env=_env(home, **env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + ready_timeout
            while True:
                assert proc.poll() is None, f"cta serve exited: {log.read_text()[-3000:]}"
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, f"not ready: {log.read_text()[-3000:]}"
                time.sleep(0.1)
            yield url
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        # uvicorn shuts down gracefully, then re-raises SIGTERM as its exit status
        assert code in (0, -signal.SIGTERM), log.read_text()[-3000:]
        assert "Application shutdown complete" in log.read_text()


def _exercise(url: str, tmp_path: Path, api_key: str | None = None) -> None:
    """The SDK and ``cta jobs submit --wait`` against a running service."""
    with Client(url, api_key=api_key) as cta:
        table = wtq_like_table()
        result = cta.perturb(table, seed=0, samples=1)
        assert result.table_id == "t0" and result.primary_entity
        names = [c["name"] for c in table["columns"]]  # type: ignore[attr-defined]
        assert [c.column for c in result.columns] == names
        assert result.samples and {s.kind for s in result.samples} <= {"rpl", "add"}
        scores = cta.judge(
            [{"entity": "film", "target": {"name": "year"}, "candidate": {"name": "year"}}]
        )
        assert len(scores) == 1 and 0.0 <= scores[0].e1 <= 1.0
        job = cta.submit([wtq_like_table(i) for i in range(3)])
        assert job.wait(timeout=120).done == 3
        # a 422 says where the problem is, in the one form of docs/api.md
        long_title = wtq_like_table()
        long_title["rows"][0][1] = "x" * 1000  # type: ignore[index]  # max_string_length 512
        with pytest.raises(ServiceError) as err:
            cta.perturb(long_title)
        assert (err.value.status_code, err.value.problem) == (422, "max_string_length")
        assert err.value.location == "body.table.rows.0.1"
        with pytest.raises(ServiceError) as bad_limit:
            cta.jobs(limit=0)
        assert (bad_limit.value.problem, bad_limit.value.location) == (
            "invalid_request",
            "query.limit",
        )

    dataset = tmp_path / "tables.jsonl"
    dataset.write_text("".join(json.dumps(wtq_like_table(i)) + "\n" for i in range(4)))
    out = tmp_path / "results.jsonl"
    submit = _cli(tmp_path, url, api_key, "submit", str(dataset), "--wait", "-o", str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(x["index"], x["status"]) for x in lines] == [(i, "done") for i in range(4)]
    assert "4 done, 0 failed" in submit.stderr
    job_id = submit.stderr.split("job ", 1)[1].split(":", 1)[0]
    # the job's provenance beside the results it wrote
    manifest = json.loads((tmp_path / "results.jsonl.manifest.json").read_text())
    assert manifest["job_id"] == job_id and manifest["tool"]["name"] == "cta-perturb"
    # the judge and the index by content where they exist (the stand-in's home has no index:
    # no hash, no guess)
    for part in ("judge", "index"):
        where = Path(manifest[part]["location"])
        assert manifest[part]["sha256"] == tree_sha256(where)
    assert manifest["judge"]["sha256"] is not None
    status = json.loads(_cli(tmp_path, url, api_key, "status", job_id).stdout)
    assert (status["id"], status["state"], status["done"]) == (job_id, "done", 4)
    results = _cli(tmp_path, url, api_key, "results", job_id).stdout.splitlines()
    assert [json.loads(line) for line in results] == lines

    # A dataset job from the command line: Spider tables.json + its question file.
    spider, questions = tmp_path / "tables.json", tmp_path / "questions.json"
    spider.write_text(json.dumps([PETS]))
    records = [{"db_id": "pets", "question": "Ages?", "query": "SELECT pet_age FROM Pets"}]
    questions.write_text(json.dumps(records))
    out = tmp_path / "dataset.jsonl"
    args = ("submit", str(spider), "--questions", str(questions), "--seeds", "2", "--wait")
    submit = _cli(tmp_path, url, api_key, *args, "-o", str(out))
    assert "1 databases submitted" in submit.stderr and "1 done, 0 failed" in submit.stderr
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert (line["table_id"], line["status"]) == ("pets", "done")
    mappings = line["dataset_result"]["mappings"]
    assert sorted((m["kind"], m["seed"]) for m in mappings) == [
        ("add", 0),
        ("add", 1),
        ("rpl", 0),
        ("rpl", 1),
    ]


def _cli(
    tmp_path: Path, url: str, api_key: str | None, *args: str
) -> subprocess.CompletedProcess[str]:
    key = ["--api-key", api_key] if api_key else []
    run = subprocess.run(
        [str(CTA), "jobs", *args, "--url", url, *key],
        env=_env(tmp_path / "client-home"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run


@pytest.mark.slow
def test_cta_serve_with_keys_end_to_end_over_the_stand_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with cta_serve(
        home, "--pipeline", "service_fakes:make_pipeline", CTA_API_KEYS='["e2e-key"]'
    ) as url:
        assert httpx.post(f"{url}/v1/judge", json={"pairs": []}).status_code == 401
        _exercise(url, tmp_path, api_key="e2e-key")


@pytest.mark.slow
def test_cta_serve_end_to_end_over_the_real_tiny_pipeline(tmp_path: Path, tiny_home: Path) -> None:
    # The lead's session fixture: a tiny real index, judge, vectors and WordNet.
    jobs_db = f"sqlite:///{tmp_path / 'jobs.sqlite3'}"
    with cta_serve(tmp_path / "svc", **tiny_env_vars(tiny_home), CTA_DATABASE_URL=jobs_db) as url:
        _exercise(url, tmp_path)
        with Client(url) as cta:
            # A dataset job: the protocol over one Spider database with the real engine.
            query = "SELECT Fname FROM Student WHERE StuID = 1"
            job = cta.submit_dataset([PETS], [{"db_id": "pets", "query": query}], seeds=[3])
            status = job.wait(timeout=300)
            (item,) = list(job.results())
    assert (status.done, status.failed) == (1, 0)
    result = item.dataset_result
    assert result is not None
    assert [(m.kind, m.seed) for m in result.mappings] == [("rpl", 3), ("add", 3)]
    assert all(m.sql is not None for m in result.mappings)
    assert {r["db_id"] for rs in result.questions.values() for r in rs} <= {
        e["db_id"] for e in result.tables
    } | {"pets"}


def test_cta_serve_refuses_a_public_bind_without_api_keys(tmp_path: Path) -> None:
    run = subprocess.run(
        [str(CTA), "serve", "--host", "0.0.0.0", "--port", "1"],
        env={**_env(tmp_path), "CTA_API_KEYS": "[]"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "refusing to bind 0.0.0.0" in run.stderr and "CTA_API_KEYS" in run.stderr
