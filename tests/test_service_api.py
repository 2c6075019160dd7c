"""The HTTP API in-process over a stand-in pipeline: readiness, routes, batching, 429, auth, jobs."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dataset_fixtures import spider_entry
from fastapi.testclient import TestClient
from service_fakes import FakePipeline, running_app, wait_until, wtq_like_table

from service.app import create_app
from service.settings import ServiceSettings


def _settings(tmp_path: Path, **over: object) -> ServiceSettings:
    # The stand-in answers at once: seed the drain rate accordingly, so admission control
    # lets the concurrent requests these tests send into the queue.
    base: dict[str, object] = {"home": tmp_path, "engine_pairs_per_second": 100_000.0}
    return ServiceSettings(**{**base, **over})  # type: ignore[arg-type]


def test_healthz_answers_while_loading_and_readyz_turns_ready(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    loaded = threading.Event()

    def slow_factory(s: ServiceSettings) -> FakePipeline:
        loaded.wait(10)
        return FakePipeline(s)

    app = create_app(settings, slow_factory)
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["ready"] is False
        assert ready.headers["Retry-After"]
        early = client.post("/v1/perturb", json={"table": wtq_like_table()})
        assert early.status_code == 503 and early.json()["problem"] == "not_ready"
        loaded.set()
        wait_until(lambda: client.get("/readyz").status_code == 200)
        assert client.post("/v1/perturb", json={"table": wtq_like_table()}).status_code == 200


def test_a_pipeline_that_fails_to_load_is_reported_not_ready(tmp_path: Path) -> None:
    def broken(_: ServiceSettings) -> FakePipeline:
        raise FileNotFoundError("no index at /nowhere")

    app = create_app(_settings(tmp_path), broken)
    with TestClient(app) as client:
        wait_until(lambda: "failed" in client.get("/readyz").json()["detail"])
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "no index at /nowhere" in ready.json()["detail"]
        answer = client.post("/v1/judge", json={"pairs": [_pair("a", "b")]})
        assert answer.status_code == 503 and answer.json()["problem"] == "pipeline_failed"


def test_perturb_returns_entity_columns_and_samples_on_both_paths(tmp_path: Path) -> None:
    table = wtq_like_table()
    table["target_columns"] = ["Title", "Director"]
    body = {"table": table, "options": {"seed": 3, "samples": 2}}
    with running_app(_settings(tmp_path)) as (client, _):
        first = client.post("/v1/perturb", json=body)
        short = client.post("/perturb", json=body)
    assert first.status_code == 200 and short.status_code == 200
    assert first.json() == short.json()
    result = first.json()
    assert result["primary_entity"] == "filmography 0"
    assert [c["column"] for c in result["columns"]] == ["Title", "Director"]
    assert result["columns"][0]["replace"][0] == {
        "name": "Title alias",
        "type": "text",
        "e1": 0.9,
        "e2": 0.8,
        "association": None,  # an RPL name has no association score
        "source": "dictionary",
        "provenance": "",
    }
    kinds = [s["kind"] for s in result["samples"]]
    assert kinds == ["rpl", "rpl", "add", "add"]
    rpl = result["samples"][0]
    assert rpl["mapping"] == {"Title": "Title alias", "Director": "Director alias"}


def test_judge_scores_pairs_in_order_with_threshold_override(tmp_path: Path) -> None:
    pairs = [_pair("year", "Year"), _pair("year", "studio")]
    with running_app(_settings(tmp_path)) as (client, _):
        default = client.post("/v1/judge", json={"pairs": pairs}).json()["scores"]
        strict = client.post("/v1/judge", json={"pairs": pairs, "add_threshold": 0.1}).json()
    assert [s["verdict"] for s in default] == ["RPL", "ADD"]
    assert [s["verdict"] for s in strict["scores"]] == ["RPL", "NONE"]


def test_decisions_follow_the_real_rule_with_the_settings_aggregations(tmp_path: Path) -> None:
    # The stand-in scores "<column> alias" (0.9, 0.8) and decides with cta.judge.decide: the
    # thresholds come from the request, the aggregations from the settings.
    judge = {"pairs": [_pair("Title", "Title alias")], "rpl_threshold": 0.85}
    table = wtq_like_table()
    table["target_columns"] = ["Title"]
    perturb = {"table": table, "options": {"rpl_threshold": 0.85, "add_threshold": 0.15}}
    verdicts, kept = {}, {}
    for how in ("min", "max"):
        settings = _settings(tmp_path / how, rpl_aggregation=how)
        with running_app(settings) as (client, _):
            verdicts[how] = client.post("/v1/judge", json=judge).json()["scores"][0]["verdict"]
            column = client.post("/v1/perturb", json=perturb).json()["columns"][0]
        kept[how] = ([d["name"] for d in column["replace"]], [d["name"] for d in column["add"]])
    assert verdicts == {"min": "NONE", "max": "RPL"}  # min(0.9, 0.8) < 0.85 ≤ max(0.9, 0.8)
    # ADD: "Title note" is (0.2, 0.1) against its column but 0.3 against the others > 0.15
    assert kept == {"min": ([], []), "max": (["Title alias"], [])}


def test_concurrent_requests_are_batched_into_fewer_engine_calls(tmp_path: Path) -> None:
    settings = _settings(tmp_path, batch_wait_ms=50)
    with running_app(settings) as (client, fake):
        fake.gate = threading.Event()
        with ThreadPoolExecutor(8) as pool:
            futures = [
                pool.submit(client.post, "/v1/perturb", json={"table": wtq_like_table(i)})
                for i in range(8)
            ]
            wait_until(lambda: len(fake.calls) >= 1)
            fake.gate.set()
            answers = [f.result() for f in futures]
    assert [a.json()["table_id"] for a in answers] == [f"t{i}" for i in range(8)]
    sizes = [n for method, n in fake.calls if method == "perturb_many"]
    assert sum(sizes) == 8 and len(sizes) < 8 and max(sizes) > 1


def test_a_failing_table_does_not_fail_the_requests_batched_with_it(tmp_path: Path) -> None:
    poison = wtq_like_table(1)
    poison["columns"][0] = {"name": "poison"}  # type: ignore[index]
    with running_app(_settings(tmp_path, batch_wait_ms=50)) as (client, fake):
        fake.gate = threading.Event()
        with ThreadPoolExecutor(3) as pool:
            blocker = pool.submit(client.post, "/v1/perturb", json={"table": wtq_like_table(0)})
            wait_until(lambda: len(fake.calls) >= 1)
            good = pool.submit(client.post, "/v1/perturb", json={"table": wtq_like_table(2)})
            bad = pool.submit(client.post, "/v1/perturb", json={"table": poison})
            wait_until(lambda: client.app.state.batcher.depth == 2)  # type: ignore[attr-defined]
            fake.gate.set()
            assert blocker.result().status_code == 200
            assert good.result().status_code == 200
            assert bad.result().status_code == 500
            assert bad.result().json()["problem"] == "internal_error"


def test_a_full_queue_answers_429_with_retry_after(tmp_path: Path) -> None:
    with running_app(_settings(tmp_path, queue_size=2, batch_wait_ms=0)) as (client, fake):
        fake.gate = threading.Event()
        with ThreadPoolExecutor(4) as pool:
            running = pool.submit(client.post, "/v1/perturb", json={"table": wtq_like_table()})
            wait_until(lambda: len(fake.calls) >= 1)
            queued = [
                pool.submit(client.post, "/v1/perturb", json={"table": wtq_like_table(i)})
                for i in (1, 2)
            ]
            wait_until(lambda: client.app.state.batcher.depth == 2)  # type: ignore[attr-defined]
            refused = client.post("/v1/perturb", json={"table": wtq_like_table(3)})
            fake.gate.set()
            assert running.result().status_code == 200
            assert [q.result().status_code for q in queued] == [200, 200]
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["problem"] == "overloaded"
    assert "queue_size = 2" in refused.json()["message"]


def test_api_keys_guard_every_route_but_health_and_scope_jobs(tmp_path: Path) -> None:
    settings = _settings(tmp_path, api_keys=["key-one", "key-two"], inprocess_workers=0)
    one = {"Authorization": "Bearer key-one"}
    two = {"Authorization": "Bearer key-two"}
    with running_app(settings, workers=0) as (client, _):
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        missing = client.post("/v1/perturb", json={"table": wtq_like_table()})
        assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == "Bearer"
        wrong = {"Authorization": "Bearer key-three"}
        assert (
            client.post("/v1/judge", json={"pairs": [_pair("a", "b")]}, headers=wrong).status_code
            == 401
        )
        assert client.get("/v1/jobs", headers={"Authorization": "Basic a2V5"}).status_code == 401
        assert (
            client.post("/v1/perturb", json={"table": wtq_like_table()}, headers=one).status_code
            == 200
        )
        created = client.post("/v1/jobs", json={"tables": [wtq_like_table()]}, headers=one)
        assert created.status_code == 202
        location = created.headers["Location"]
        assert client.get(location, headers=one).status_code == 200
        for method, path in (
            ("GET", location),
            ("GET", f"{location}/results"),
            ("GET", f"{location}/manifest"),
            ("DELETE", location),
        ):
            other = client.request(method, path, headers=two)
            assert other.status_code == 404 and other.json()["problem"] == "not_found"
        assert client.get("/v1/jobs", headers=two).json()["jobs"] == []
        assert [j["id"] for j in client.get("/v1/jobs", headers=one).json()["jobs"]] == [
            created.json()["id"]
        ]
        stored = client.app.state.store  # type: ignore[attr-defined]
        with stored.engine.connect() as conn:
            owners = [row[0] for row in conn.exec_driver_sql("SELECT owner FROM jobs")]
        assert owners and "key-one" not in owners[0] and len(owners[0]) == 64


def test_a_job_carries_its_manifest_from_submission(tmp_path: Path) -> None:
    """Provenance of a job's results: tool, settings in force (no secrets), judge and index
    as configured, the seed and the request's hash; the same request, the same hash."""
    settings = _settings(tmp_path, api_keys=["key-one"], inprocess_workers=0)
    one = {"Authorization": "Bearer key-one"}
    body = {"tables": [wtq_like_table()], "options": {"seed": 3}}
    with running_app(settings, workers=0) as (client, _):
        first = client.post("/v1/jobs", json=body, headers=one).headers["Location"]
        again = client.post("/v1/jobs", json=body, headers=one).headers["Location"]
        other = client.post("/v1/jobs", json={"tables": [wtq_like_table(1)]}, headers=one)
        manifests = [
            client.get(f"{where}/manifest", headers=one).json()
            for where in (first, again, other.headers["Location"])
        ]
    m = manifests[0]
    assert m["tool"]["name"] == "cta-perturb" and m["command"] == "POST /v1/jobs"
    assert m["job_kind"] == "tables" and m["seeds"] == [3] and m["options"]["seed"] == 3
    assert m["judge"]["location"] == settings.resolved_judge_model()
    assert "api_keys" not in m["settings"] and "database_url" not in m["settings"]
    assert m["request_sha256"] == manifests[1]["request_sha256"] != manifests[2]["request_sha256"]


def test_a_job_runs_to_done_and_keeps_failed_items(tmp_path: Path) -> None:
    tables = [wtq_like_table(i) for i in range(5)]
    tables.insert(2, {"id": "broken", "columns": [{"name": "a"}, {"name": "A"}]})
    with running_app(_settings(tmp_path, job_poll_seconds=0.05)) as (client, _):
        created = client.post("/v1/jobs", json={"tables": tables, "options": {"seed": 1}})
        assert created.status_code == 202
        status = created.json()
        assert status["total"] == 6 and status["failed"] == 1 and status["state"] == "queued"
        location = created.headers["Location"]
        wait_until(lambda: client.get(location).json()["state"] == "done")
        final = client.get(location).json()
        first = client.get(f"{location}/results", params={"limit": 4}).json()
        rest = client.get(f"{location}/results", params={"offset": first["next_offset"]}).json()
    assert (final["done"], final["failed"], final["total"]) == (5, 1, 6)
    assert final["started_at"] and final["finished_at"]
    items = first["items"] + rest["items"]
    assert [i["index"] for i in items] == list(range(6)) and rest["next_offset"] is None
    broken = items[2]
    assert broken["status"] == "failed" and broken["table_id"] == "broken"
    assert broken["error"]["problem"] == "duplicate_column_name"
    assert [i["result"]["table_id"] for i in items if i["status"] == "done"] == [
        "t0",
        "t1",
        "t2",
        "t3",
        "t4",
    ]


def test_a_spider_job_makes_one_item_per_table_and_records_bad_databases(tmp_path: Path) -> None:
    good = spider_entry(
        "pets",
        [
            "Student/student: StuID/student id number, Fname/first name text",
            "Pets/pet: PetID/pet id number, pet_age number",
        ],
        primary=[("Student", "StuID"), ("Pets", "PetID")],
    )
    bad = {"db_id": "broken", "table_names": ["x"]}
    with running_app(_settings(tmp_path, job_poll_seconds=0.05)) as (client, _):
        created = client.post("/v1/jobs", json={"kind": "spider", "spider": [good, bad]})
        assert created.status_code == 202
        location = created.headers["Location"]
        wait_until(lambda: client.get(location).json()["state"] == "done")
        items = client.get(f"{location}/results").json()["items"]
    assert [(i["table_id"], i["status"]) for i in items] == [
        ("pets.Student", "done"),
        ("pets.Pets", "done"),
        ("broken", "failed"),
    ]
    assert items[1]["result"]["columns"][0]["column"] == "pet id"
    assert "broken" in items[2]["error"]["message"]


def test_cancel_stops_a_job_and_keeps_its_items_listed(tmp_path: Path) -> None:
    with running_app(_settings(tmp_path), workers=0) as (client, _):
        created = client.post("/v1/jobs", json={"tables": [wtq_like_table(i) for i in range(3)]})
        location = created.headers["Location"]
        cancelled = client.delete(location).json()
        again = client.delete(location).json()
        items = client.get(f"{location}/results").json()["items"]
    assert cancelled["state"] == "cancelled" and cancelled["cancelled"] == 3
    assert again == cancelled
    assert [i["status"] for i in items] == ["cancelled"] * 3


def test_jobs_over_max_tables_per_job_are_refused(tmp_path: Path) -> None:
    with running_app(_settings(tmp_path, max_tables_per_job=2), workers=0) as (client, _):
        answer = client.post("/v1/jobs", json={"tables": [wtq_like_table(i) for i in range(3)]})
    assert answer.status_code == 422
    assert answer.json()["problem"] == "max_tables_per_job"
    assert "max_tables_per_job = 2" in answer.json()["message"]


def test_streamed_body_over_the_limit_is_refused_without_content_length(tmp_path: Path) -> None:
    def chunks():  # type: ignore[no-untyped-def]
        for _ in range(10):
            yield b" " * 500

    with running_app(_settings(tmp_path, max_body_bytes=2000)) as (client, _):
        answer = client.post(
            "/v1/perturb", content=chunks(), headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 413
    assert answer.json() == {
        "problem": "max_body_bytes",
        "message": "request body exceeds max_body_bytes = 2000 bytes",
    }


@pytest.mark.parametrize("workers", [0])
def test_job_submission_works_before_the_pipeline_is_ready(tmp_path: Path, workers: int) -> None:
    never = threading.Event()

    def blocked(s: ServiceSettings) -> FakePipeline:
        never.wait(5)
        return FakePipeline(s)

    app = create_app(_settings(tmp_path), blocked, inprocess_workers=workers)
    with TestClient(app) as client:
        created = client.post("/v1/jobs", json={"tables": [wtq_like_table()]})
        assert created.status_code == 202
        assert client.get(created.headers["Location"]).json()["pending"] == 1
        never.set()


def _pair(target: str, candidate: str) -> dict[str, object]:
    return {"entity": "film", "target": {"name": target}, "candidate": {"name": candidate}}
