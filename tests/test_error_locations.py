"""Every 422 names where the problem is in one form (docs/api.md, "Where a 422 is"):
``location`` is the part of the request (``body``, ``query``, ``path``, ``header``,
``cookie``) and then the keys and list indices that lead to the value, dot-joined; the
message begins with it, and every entry of ``errors`` uses it too.

Checked over every 422 of the hostile-input catalogue (``tests/bad_inputs.py``) and the
422s it does not hold (limits, job-level refusals, the review routes), on the stand-in
engine: each location must have the form and lead, in the body that was sent, to the value
it names (a missing field: to the object that lacks it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bad_input_cases
import bad_inputs
import pytest
from fastapi.testclient import TestClient
from service_fakes import running_app

from service.settings import ServiceSettings

FORM = re.compile(r"(body|query|path|header|cookie)(\.[^.]+)*")
AUTH = {"Authorization": bad_inputs.BEARER}
TABLE = {
    "name": "films",
    "columns": [{"name": "title"}, {"name": "year"}],
    "rows": [["Heat", 1995]],
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = ServiceSettings(
        home=tmp_path_factory.mktemp("home"),
        api_keys=[bad_inputs.API_KEY],
        max_request_pairs=10_000,
        eval_endpoints=["http://127.0.0.1:1/"],
        **bad_inputs.LIMITS,  # type: ignore[arg-type]
    )
    with running_app(settings, workers=0) as (client, _):
        yield client


def _body_of(case: bad_inputs.Case) -> Any:
    """The JSON a case sent (None when it sent none, or bytes that are not JSON)."""
    if case.json is not None:
        return case.json
    try:
        return json.loads(case.content or b"")
    except ValueError:
        return None


def _leads_to_a_value(where: str, body: Any, missing_ok: bool) -> bool:
    """Whether ``where`` (body.…) walks ``body`` to a value; with ``missing_ok``, the last
    key may be absent from the object that should hold it (a required field)."""
    steps = where.split(".")[1:]
    node = body
    for i, step in enumerate(steps):
        if step.startswith("<key "):  # a bad key is named, not walked into
            return isinstance(node, dict) and i == len(steps) - 1
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return missing_ok and i == len(steps) - 1 and isinstance(node, dict)
        # a tagged union's tag (``kind=…``) or any other made-up step fails above
    return True


def _check(answer: Any, body: Any) -> str:
    """Assert that a 422 answer names its location in the one form; return it."""
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    where = problem.get("location")
    assert isinstance(where, str) and FORM.fullmatch(where), problem
    assert problem["message"].startswith(f"{where}: "), problem
    assert "loc" not in json.dumps(problem.get("errors") or []).replace('"location"', ""), problem
    for error in problem.get("errors") or []:
        assert FORM.fullmatch(error["location"]), problem
    missing = "Field required" in problem["message"]
    if where.startswith("body.") and body is not None:
        assert _leads_to_a_value(where, body, missing), (where, body)
        for error in problem.get("errors") or []:
            if error["location"].startswith("body."):
                missing = error["type"] == "missing"
                assert _leads_to_a_value(error["location"], body, missing), (error, body)
    return where


def test_every_422_of_the_hostile_input_catalogue_names_its_location_in_the_one_form(
    client: TestClient,
) -> None:
    checked: dict[str, int] = {}
    parts: set[str] = set()
    for case in bad_inputs.CASES:
        if case.status != 422:
            continue
        answer = bad_inputs.send(client, case)
        where = _check(answer, _body_of(case))
        parts.add(where.split(".")[0])
        route = case.path.split("?")[0]
        checked[route] = checked.get(route, 0) + 1
    assert sum(checked.values()) >= 80, checked
    assert {"/v1/perturb", "/v1/judge", "/v1/jobs"} <= set(checked), checked
    assert parts == {"body", "query"}, parts


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        # A value deep in the body, wherever the guard, the schema or a limit refuses it.
        ("/v1/perturb", {"table": {**TABLE, "rows": [["Heat", "x\x00"]]}}, "body.table.rows.0.1"),
        ("/v1/perturb", {"table": {**TABLE, "rows": [["x" * 65, 1]]}}, "body.table.rows.0.0"),
        ("/v1/perturb", {"table": {**TABLE, "rows": [[1, 2]] * 21}}, "body.table.rows"),
        ("/v1/perturb", {"table": {**TABLE, "rows": [["Heat"]]}}, "body.table"),
        ("/v1/perturb", {"table": TABLE, "options": {"seed": -1}}, "body.options.seed"),
        ("/v1/judge", {"pairs": []}, "body.pairs"),
        ("/v1/judge", {"pairs": [bad_input_cases.make_pair()] * 5}, "body.pairs"),
        (
            "/v1/judge",
            {"pairs": [bad_input_cases.make_pair(entity="e" * 65)]},
            "body.pairs.0.entity",
        ),
        # A job's kind is no place in the body: no ``tables.tables``, no ``dataset.seeds``.
        ("/v1/jobs", {"kind": "tables", "tables": []}, "body.tables"),
        ("/v1/jobs", {"tables": [TABLE] * 4}, "body.tables"),
        ("/v1/jobs", bad_input_cases.make_dataset(seeds=["0"]), "body.seeds.0"),
        (
            "/v1/jobs",
            {"kind": "spider", "spider": [bad_input_cases.make_spider()] * 4},
            "body.spider",
        ),
        (
            "/v1/jobs",
            {
                "kind": "eval",
                "spider": [bad_input_cases.make_spider()],
                "sets": {"dev_original": []},
                "endpoint": "http://elsewhere.example/sql",
            },
            "body.endpoint",
        ),
        ("/v1/jobs", {"kind": "nope"}, "body"),
    ],
)
def test_a_refused_value_is_named_by_its_json_path_under_body(
    client: TestClient, path: str, body: Any, where: str
) -> None:
    assert _check(client.post(path, json=body, headers=AUTH), body) == where


def test_query_path_and_header_values_are_named_by_their_part_of_the_request(
    client: TestClient,
) -> None:
    answer = client.get("/v1/jobs?limit=0", headers=AUTH)
    assert _check(answer, None) == "query.limit"
    job = client.post("/v1/jobs", json={"tables": [TABLE]}, headers=AUTH)
    assert job.status_code == 202, job.text
    job_id = job.json()["id"]
    item = client.post(
        f"/review/jobs/{job_id}/items/0", json={"action": "accept", "version": 1}, headers=AUTH
    )
    assert _check(item, None) == "path.item_id"
    named = client.post(
        f"/review/jobs/{job_id}/items/1",
        json={"action": "accept", "version": 1},
        headers={**AUTH, "X-CTA-Reviewer": "<b>"},
    )
    assert _check(named, None) == "header.X-CTA-Reviewer"


def test_the_form_is_documented_where_clients_read_it() -> None:
    api = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text("utf-8")
    assert "body.table.rows.0.1" in api and "query.limit" in api and "`location`" in api
