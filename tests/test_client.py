"""The client SDK in-process against the app (sync over TestClient, async over ASGITransport)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from service_fakes import PETS, FakePipeline, running_app, wtq_like_table

import service
from cta.results import JudgeColumn, JudgePair
from cta.table import Table
from service.app import create_app
from service.client import AsyncClient, AsyncJob, Client, Job, ServiceError
from service.settings import ServiceSettings


def test_public_names_are_exactly_the_sdk_and_the_app_factory() -> None:
    assert service.__all__ == sorted(service.__all__)
    assert service.__all__ == [
        "AsyncClient",
        "AsyncJob",
        "Client",
        "Job",
        "ServiceError",
        "create_app",
    ]


def test_sync_client_perturb_judge_and_a_job_with_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        result = cta.perturb(Table.parse(wtq_like_table()), seed=1, samples=1)
        assert result.primary_entity == "filmography 0"
        assert [s.kind for s in result.samples] == ["rpl", "add"]
        pair = JudgePair(
            entity="film", target=JudgeColumn(name="year"), candidate=JudgeColumn(name="Year")
        )
        scores = cta.judge([pair, {"target": {"name": "a"}, "candidate": {"name": "b"}}])
        assert [s.verdict for s in scores] == ["RPL", "ADD"]

        tables = [wtq_like_table(i) for i in range(7)] + [{"id": "empty", "columns": []}]
        job = cta.submit(tables, {"seed": 5})
        status = job.wait(progress=True, poll_interval=0.05, timeout=30)
        items = list(job.results(page_size=3))
        assert cta.job(job.id).status == status
        assert [j.id for j in cta.jobs()] == [job.id]
    assert (status.state, status.done, status.failed) == ("done", 7, 1)
    assert [i.index for i in items] == list(range(8))
    assert items[7].error is not None and items[7].error.problem == "no_columns"
    assert all(i.result is not None for i in items[:7])
    assert "job " in capsys.readouterr().err  # the tqdm bar


def test_sync_client_raises_service_errors_with_the_problem_code(tmp_path: Path) -> None:
    with running_app(ServiceSettings(home=tmp_path), workers=0) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        bad = wtq_like_table()
        bad["target_columns"] = ["Nope"]
        with pytest.raises(ServiceError) as err:
            cta.perturb(bad)
        assert (err.value.status_code, err.value.problem) == (422, "unknown_column")
        assert err.value.location == "body.table"  # a table that breaks a rule of its own
        with pytest.raises(ServiceError) as invalid:
            cta.judge([{"target": {"name": "a"}}])
        assert (invalid.value.problem, invalid.value.location) == (
            "invalid_request",
            "body.pairs.0.candidate",
        )
        with pytest.raises(ServiceError) as missing:
            cta.job("0" * 32)
        assert (missing.value.status_code, missing.value.location) == (404, None)
        job = cta.submit([wtq_like_table()])
        assert job.cancel().state == "cancelled"


def test_async_client_against_the_app_in_process(tmp_path: Path) -> None:
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)

    def slow_to_load(s: ServiceSettings) -> FakePipeline:
        time.sleep(0.3)
        return FakePipeline(s)

    app = create_app(settings, slow_to_load)

    async def scenario() -> tuple[list[str], list[int]]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            cta = AsyncClient("http://testserver", transport=transport, max_backoff=0.1)
            async with cta:
                assert await cta.health()  # the process answers before the models load
                assert not (await cta.ready()).ready
                # the first answers are 503 (still loading): the client retries them
                results = await asyncio.gather(*(cta.perturb(wtq_like_table(i)) for i in range(4)))
                job = await cta.submit([wtq_like_table(i) for i in range(3)])
                await job.wait(poll_interval=0.05, timeout=30)
                indices = [item.index async for item in job.results(page_size=2)]
                listed = await cta.jobs()
                assert [j.id for j in listed] == [job.id] and listed[0].state == "done"
        return [r.table_id or "" for r in results], indices

    ids, indices = asyncio.run(scenario())
    assert ids == ["t0", "t1", "t2", "t3"]
    assert indices == [0, 1, 2]


_SDK_IMPORT = r'''
import json, re, sys
from importlib import metadata


def third_party():
    names = {m.split(".")[0] for m in sys.modules if not m.startswith("_")}
    return names - set(sys.stdlib_module_names) - {"cta", "service"}


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def brought_by(*dists):
    """What importing them loads, and every distribution they require, transitively
    (pydantic loads some of its own only when a model needs them)."""
    for dist in dists:
        __import__(dist)
    loaded = third_party()
    seen, todo = set(), [norm(d) for d in dists]
    while todo:
        dist = todo.pop()
        if dist in seen:
            continue
        seen.add(dist)
        try:
            requires = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:  # a requirement for another Python
            continue
        for req in requires:
            if "extra ==" not in req:
                todo.append(norm(re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0]))
    modules = metadata.packages_distributions()
    return loaded | {m for m, ds in modules.items() if {norm(d) for d in ds} & seen}


allowed = brought_by("httpx", "pydantic")
from service.client import AsyncClient, Client  # noqa: E402
from service import Client as Exported  # noqa: E402

assert Exported is Client and AsyncClient is not None
print(json.dumps({"outside": sorted(third_party() - allowed), "loaded": sorted(third_party())}))
'''


def test_the_sdk_loads_httpx_and_pydantic_only() -> None:
    # In a fresh interpreter: importing the SDK loads no third-party package beyond what httpx
    # and pydantic bring; none of the server's (FastAPI, SQLAlchemy) or the engine's.
    run = subprocess.run(
        [sys.executable, "-c", _SDK_IMPORT], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["outside"] == [], found["outside"]
    assert {"httpx", "pydantic"} <= set(found["loaded"])
    assert not {"fastapi", "starlette", "sqlalchemy", "sqlglot", "numpy", "torch"} & set(
        found["loaded"]
    )


def test_the_async_client_offers_every_call_of_the_sync_one() -> None:
    def public(cls: type) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_")}

    # close/aclose are the one pair spelled differently (httpx's own names)
    assert public(Client) - {"close"} == public(AsyncClient) - {"aclose"}
    assert public(Job) == public(AsyncJob)


def _scripted(*answers: httpx.Response | type[Exception]) -> tuple[httpx.Client, list[str]]:
    seen: list[str] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        answer = queue.pop(0)
        if isinstance(answer, httpx.Response):
            return answer
        raise answer("scripted", request=request)  # type: ignore[call-arg]

    return httpx.Client(transport=httpx.MockTransport(handler)), seen


_OK_JUDGE = httpx.Response(200, json={"scores": [{"e1": 0.9, "e2": 0.9, "verdict": "RPL"}]})
_PAIR = {"target": {"name": "a"}, "candidate": {"name": "b"}}


def test_retries_429_503_and_refused_connections_then_succeeds() -> None:
    http, seen = _scripted(
        httpx.Response(
            429, headers={"Retry-After": "0"}, json={"problem": "overloaded", "message": "m"}
        ),
        httpx.Response(503, json={"problem": "not_ready", "message": "m"}),
        httpx.ConnectError,
        _OK_JUDGE,
    )
    cta = Client("http://svc", http_client=http, backoff=0)
    assert cta.judge([_PAIR])[0].verdict == "RPL"
    assert seen == ["POST /v1/judge"] * 4


def test_gives_up_after_the_retry_budget_with_the_last_error() -> None:
    busy = httpx.Response(
        429, headers={"Retry-After": "0"}, json={"problem": "overloaded", "message": "full"}
    )
    http, seen = _scripted(busy, busy, busy)
    cta = Client("http://svc", http_client=http, retries=2, backoff=0)
    with pytest.raises(ServiceError) as err:
        cta.judge([_PAIR])
    assert (err.value.status_code, err.value.problem, len(seen)) == (429, "overloaded", 3)


def test_a_job_submission_is_not_retried_after_the_request_may_have_arrived() -> None:
    http, seen = _scripted(httpx.ReadError)
    cta = Client("http://svc", http_client=http, backoff=0)
    with pytest.raises(httpx.ReadError):
        cta.submit([wtq_like_table()])
    assert seen == ["POST /v1/jobs"]
    http, seen = _scripted(httpx.ReadError, _OK_JUDGE)  # pure operations are retried
    assert Client("http://svc", http_client=http, backoff=0).judge([_PAIR])[0].e1 == 0.9


def test_a_dataset_job_returns_rewritten_sql_perturbed_schemas_and_every_problem(
    tmp_path: Path,
) -> None:
    questions = [
        {
            "db_id": "pets",
            "question": "Names?",
            "query": "SELECT Fname FROM Student WHERE StuID = 1",
        },
        {"db_id": "pets", "question": "Broken", "query": "SELEC Fname FROM"},
        {
            "db_id": "pets",
            "question": "Old pets",
            "query": "SELECT PetID FROM Pets WHERE pet_age > 3",
        },
        {"db_id": "ghost", "question": "?", "query": "SELECT 1"},
        {"question": "no database", "query": "SELECT 1"},
    ]
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        job = cta.submit_dataset([PETS], questions, kinds=["rpl", "add"], seeds=[0, 1])
        status = job.wait(poll_interval=0.05, timeout=30)
        items = list(job.results())
    assert status.kind == "dataset" and (status.done, status.failed) == (1, 2)
    assert [(i.table_id, i.status) for i in items] == [
        ("pets", "done"),
        ("ghost", "failed"),
        (None, "failed"),
    ]
    assert items[1].error is not None and items[1].error.problem == "unknown_database"
    assert items[2].error is not None and "1 question records" in items[2].error.message
    result = items[0].dataset_result
    assert result is not None and items[0].result is None
    assert sorted(result.questions) == ["add_s0", "add_s1", "rpl_s0", "rpl_s1"]
    # Records 0 and 2 are rewritten under every kind and seed; record 1 is reported, not lost.
    assert len(result.mappings) == 3 * 2 * 2
    broken = [m for m in result.mappings if m.id == "pets:1"]
    assert all(m.sql is None and m.problem for m in broken) and len(broken) == 4
    entries = {e["db_id"]: e for e in result.tables}
    for key, records in result.questions.items():
        assert [r["question"] for r in records] == ["Names?", "Old pets"]
        for record in records:
            mapping = next(
                m
                for m in result.mappings
                if f"{m.kind}_s{m.seed}" == key
                and m.perturbed_db_id == record["db_id"]
                and m.sql == record["query"]
            )
            renamed = {
                old: new for table in mapping.sql_mapping.values() for old, new in table.items()
            }
            assert renamed, "every mentioned column is perturbed by the stand-in's candidates"
            originals = {name for _, name in entries[record["db_id"]]["column_names_original"]}
            if key.startswith("rpl"):
                # The renamed identifiers replace the originals in the SQL and in the schema.
                for old, new in renamed.items():
                    assert new in record["query"] and old not in record["query"]
                    assert new in originals and old not in originals
            else:
                assert set(renamed.values()) <= originals and set(renamed) <= originals


def test_a_dataset_job_runs_the_families_and_says_why_an_item_is_unchanged(
    tmp_path: Path,
) -> None:
    questions = [
        {"db_id": "pets", "question": "Names?", "query": "SELECT Fname FROM Student"},
        {"db_id": "pets", "question": "Old pets", "query": "SELECT * FROM Pets WHERE pet_age > 3"},
    ]
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    kinds = ["shuffle", "opaque-keys", "remove-column", "table-rename"]
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        job = cta.submit_dataset([PETS], questions, kinds=kinds, seeds=[0])
        status = job.wait(poll_interval=0.05, timeout=30)
        [item] = list(job.results())
    assert status.kind == "dataset" and item.status == "done"
    result = item.dataset_result
    assert result is not None and sorted(result.questions) == sorted(f"{k}_s0" for k in kinds)
    by_kind = {m.kind: [x for x in result.mappings if x.kind == m.kind] for m in result.mappings}
    # shuffle and opaque keys apply to every item; the only unused column (Student.StuID) is
    # a key, so remove-column says why it left the database as it was
    for kind in ("shuffle", "opaque-keys"):
        assert all(m.operation and m.perturbed_db_id == f"pets_{kind}_s0_v0" for m in by_kind[kind])
        assert [r["kind"] for r in result.questions[f"{kind}_s0"]] == [kind, kind]
    assert all(
        m.unchanged and m.unchanged.startswith("not_applicable") for m in by_kind["remove-column"]
    )
    entries = {e["db_id"]: e for e in result.tables}
    assert {"pets_shuffle_s0_v0", "pets_opaque-keys_s0_v0"} <= set(entries)
    shuffled = entries["pets_shuffle_s0_v0"]
    pets = shuffled["table_names_original"].index("Pets")
    order = [n for t, n in shuffled["column_names_original"] if t == pets]
    star = result.questions["shuffle_s0"][1]["query"]
    # a star over Pets is spelled out exactly when Pets' columns moved
    assert ("*" in star) == (order == ["PetID", "pet_age"])
    assert star.startswith("SELECT PetID, pet_age") or "*" in star
