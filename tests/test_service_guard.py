"""The request guard over a real uvicorn server: a fault keeps the connection, bad text and
bad bodies are refused before any route, and a 405 names every method of the path."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import httpx
import pytest
from service_fakes import FakePipeline, serving, wtq_like_table

from cta.results import PerturbationResult, PerturbOptions
from cta.table import Table
from cta.text import escape, find_bad_text, text_problem
from service.client import Client
from service.settings import ServiceSettings


class FaultyPipeline(FakePipeline):
    """The stand-in pipeline with a genuine fault on tables named ``boom``."""

    def perturb_many(
        self,
        tables: Sequence[Table],
        options: PerturbOptions | None = None,
        *args: object,
        **kwargs: object,
    ) -> list[PerturbationResult]:
        if any(t.name == "boom" for t in tables):
            raise RuntimeError("a fault inside the engine")
        return super().perturb_many(tables, options)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = ServiceSettings(home=tmp_path_factory.mktemp("guard"), max_body_bytes=50_000)
    with serving(settings, FaultyPipeline(settings)) as (base, _):
        yield base


def test_a_fault_answers_500_and_the_same_connection_serves_the_next_request(url: str) -> None:
    boom = {"table": {**wtq_like_table(), "name": "boom"}}
    fine = {"table": wtq_like_table()}
    ports = []
    with httpx.Client(base_url=url) as client:
        for body in (boom, fine, boom, fine):
            response = client.post("/v1/perturb", json=body)
            ports.append(response.extensions["network_stream"].get_extra_info("client_addr"))
            expected = 500 if body is boom else 200
            assert response.status_code == expected, response.text
            if expected == 500:
                assert response.json() == {"problem": "internal_error", "message": "internal error"}
    assert len(set(ports)) == 1, f"the connection was replaced: {ports}"


def test_the_sdk_submits_a_job_right_after_a_fault_on_its_pooled_connection(url: str) -> None:
    with Client(url, retries=0) as sdk:
        with pytest.raises(Exception, match="internal"):
            sdk.perturb({**wtq_like_table(), "name": "boom"})
        job = sdk.submit([wtq_like_table()])
        assert job.status.total == 1 and job.status.state == "queued"


@pytest.mark.parametrize(
    ("method", "path", "problem"),
    [
        ("GET", "/v1/jobs/%00", "invalid_text"),
        ("DELETE", "/v1/jobs/a%00b", "invalid_text"),
        ("GET", "/v1/jobs/x/results?offset=%01", "invalid_text"),
        ("GET", "/v1/jobs/%ED%A0%80", "invalid_text"),
    ],
)
def test_bad_text_in_the_url_is_a_400_naming_it(
    url: str, method: str, path: str, problem: str
) -> None:
    response = httpx.request(method, url + path)
    assert response.status_code == 400 and response.json()["problem"] == problem
    assert "path" in response.json()["message"] or "query" in response.json()["message"]


def test_a_job_id_that_cannot_exist_is_404_without_a_query(url: str) -> None:
    response = httpx.get(url + "/v1/jobs/not-a-job")
    assert response.status_code == 404 and response.json()["problem"] == "not_found"


def test_405_lists_every_method_of_the_path(url: str) -> None:
    response = httpx.put(url + "/v1/jobs", json={})
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, POST"
    assert "GET, POST" in response.json()["message"]


@pytest.mark.parametrize(
    ("content", "headers", "status", "problem"),
    [
        (b'{"table": {"columns": [{"name": "ti\\ud800tle"}]}}', {}, 422, "invalid_text"),
        (
            b'{"table": {"columns": [{"name": "a"}], "rows": [["x\\u0000"]]}}',
            {},
            422,
            "invalid_text",
        ),
        (b'{"table": {"columns": [{"name": "a"}], "rows": [[NaN]]}}', {}, 422, "non_finite_number"),
        (b'{"table": {"columns": [{"name": "\xff"}]}}', {}, 400, "invalid_utf8"),
        (b"[" * 100 + b"]" * 100, {}, 400, "too_deep"),
        (b"\x1f\x8b\x08\x00", {"Content-Encoding": "gzip"}, 415, "unsupported_encoding"),
        (b"table=1", {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
    ],
)
def test_bad_bodies_are_refused_with_their_own_problem(
    url: str, content: bytes, headers: dict[str, str], status: int, problem: str
) -> None:
    sent = {"Content-Type": "application/json", **headers}
    response = httpx.post(url + "/v1/perturb", content=content, headers=sent)
    assert (response.status_code, response.json()["problem"]) == (status, problem)


def test_text_rules() -> None:
    assert text_problem("release year\tof the film\n") is None
    assert text_problem("naïve café — 東京") is None
    assert "NUL" in (text_problem("a\x00") or "")
    assert "surrogate U+DC80" in (text_problem("x\udc80") or "")
    assert "U+0085" in (text_problem("next\x85line") or "")
    found = find_bad_text({"table": {"rows": [["ok", {"k\x01": 1}]]}})
    assert found is not None and found[0] == "table.rows.0.1.<key k\\u0001>"
    assert escape("a\x00\ud800b") == "a\\u0000\\ud800b"
