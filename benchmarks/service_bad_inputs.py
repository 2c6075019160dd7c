"""Bad inputs sent to the service and the answer each got → benchmarks/results/service_bad_inputs.md.

Runs the app in-process with small limits (the pipeline is never reached by these inputs
except where a valid table is needed; a stand-in serves those). ``tests/test_service_bad_inputs.py``
runs the same cases, asserts the expected status and problem of each (never a 5xx) and
that the committed table is current. Regenerate with::

    .venv/bin/python benchmarks/service_bad_inputs.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "benchmarks" / "results" / "service_bad_inputs.md"

LIMITS = {
    "max_body_bytes": 20_000,
    "max_columns": 8,
    "max_rows": 20,
    "max_string_length": 64,
    "max_batch_pairs": 4,
    "max_tables_per_job": 3,
}


def _table(**over: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "name": "films",
        "columns": [{"name": "title"}, {"name": "year", "type": "number"}],
        "rows": [["Heat", 1995]],
    }
    table.update(over)
    return table


def _pair(**over: Any) -> dict[str, Any]:
    return {
        "entity": "film",
        "target": {"name": "year"},
        "candidate": {"name": "release year"},
        **over,
    }


@dataclass(frozen=True)
class Case:
    """One bad request and the answer it must get."""

    what: str
    method: str
    path: str
    status: int
    problem: str
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


_JSON = {"Content-Type": "application/json"}

CASES = [
    Case(
        "malformed JSON",
        "POST",
        "/v1/perturb",
        422,
        "malformed_json",
        content=b'{"table": ',
        headers=_JSON,
    ),
    Case(
        "JSON array instead of an object",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        json=[_table()],
    ),
    Case("missing `table`", "POST", "/v1/perturb", 422, "invalid_request", json={"options": {}}),
    Case(
        "misspelt field `tabel`",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        json={"tabel": _table()},
    ),
    Case(
        "`columns` is a string",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        json={"table": _table(columns="title,year")},
    ),
    Case(
        "`rows` is a number",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        json={"table": _table(rows=5)},
    ),
    Case(
        "unknown column type",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        json={"table": _table(columns=[{"name": "hue", "type": "colour"}], rows=[])},
    ),
    Case(
        "no columns",
        "POST",
        "/v1/perturb",
        422,
        "no_columns",
        json={"table": _table(columns=[], rows=[])},
    ),
    Case(
        "empty column name",
        "POST",
        "/v1/perturb",
        422,
        "empty_column_name",
        json={"table": _table(columns=[{"name": " "}, {"name": "year"}])},
    ),
    Case(
        "duplicate column names (case-insensitive)",
        "POST",
        "/v1/perturb",
        422,
        "duplicate_column_name",
        json={"table": _table(columns=[{"name": "Year"}, {"name": "year"}])},
    ),
    Case(
        "ragged rows",
        "POST",
        "/v1/perturb",
        422,
        "ragged_rows",
        json={"table": _table(rows=[["Heat"]])},
    ),
    Case(
        "unknown target column",
        "POST",
        "/v1/perturb",
        422,
        "unknown_column",
        json={"table": _table(target_columns=["director"])},
    ),
    Case(
        "questions and SQL misaligned",
        "POST",
        "/v1/perturb",
        422,
        "misaligned_sql",
        json={"table": _table(questions=["q1", "q2"], sql=["SELECT 1"])},
    ),
    Case(
        "`samples` over its maximum (20)",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        json={"table": _table(), "options": {"samples": 100}},
    ),
    Case(
        "negative seed",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        json={"table": _table(), "options": {"seed": -1}},
    ),
    Case(
        "threshold NaN",
        "POST",
        "/v1/perturb",
        422,
        "invalid_request",
        content=b'{"table": {"columns": [{"name": "a"}]}, "options": {"rpl_threshold": NaN}}',
        headers=_JSON,
    ),
    Case(
        "body over max_body_bytes (Content-Length)",
        "POST",
        "/v1/perturb",
        413,
        "max_body_bytes",
        json={"table": _table(caption="x" * 30_000)},
    ),
    Case(
        "invalid Content-Length header",
        "POST",
        "/v1/perturb",
        400,
        "bad_request",
        content=b"{}",
        headers={**_JSON, "Content-Length": "lots"},
    ),
    Case(
        "too many columns",
        "POST",
        "/v1/perturb",
        422,
        "max_columns",
        json={"table": _table(columns=[{"name": f"c{i}"} for i in range(9)], rows=[])},
    ),
    Case(
        "too many rows",
        "POST",
        "/v1/perturb",
        422,
        "max_rows",
        json={"table": _table(rows=[["Heat", 1995]] * 21)},
    ),
    Case(
        "over-long cell string",
        "POST",
        "/v1/perturb",
        422,
        "max_string_length",
        json={"table": _table(rows=[["H" * 65, 1995]])},
    ),
    Case(
        "JSON nested 5,000 deep",
        "POST",
        "/v1/perturb",
        400,
        "bad_request",
        content=b'{"table": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
        headers=_JSON,
    ),
    Case("judge: empty pair list", "POST", "/v1/judge", 422, "invalid_request", json={"pairs": []}),
    Case(
        "judge: pair without candidate",
        "POST",
        "/v1/judge",
        422,
        "invalid_request",
        json={"pairs": [{"target": {"name": "a"}}]},
    ),
    Case(
        "judge: more pairs than max_batch_pairs",
        "POST",
        "/v1/judge",
        422,
        "max_batch_pairs",
        json={"pairs": [_pair()] * 5},
    ),
    Case(
        "judge: threshold above 1",
        "POST",
        "/v1/judge",
        422,
        "invalid_request",
        json={"pairs": [_pair()], "rpl_threshold": 1.5},
    ),
    Case("jobs: empty table list", "POST", "/v1/jobs", 422, "invalid_request", json={"tables": []}),
    Case(
        "jobs: unknown kind",
        "POST",
        "/v1/jobs",
        422,
        "invalid_request",
        json={"kind": "csv", "tables": [_table()]},
    ),
    Case(
        "jobs: Spider payload not a list",
        "POST",
        "/v1/jobs",
        422,
        "invalid_request",
        json={"kind": "spider", "spider": {"db_id": "x"}},
    ),
    Case(
        "jobs: dataset job without question records",
        "POST",
        "/v1/jobs",
        422,
        "invalid_request",
        json={"kind": "dataset", "spider": [{"db_id": "x"}]},
    ),
    Case(
        "jobs: dataset job with an unknown perturbation kind",
        "POST",
        "/v1/jobs",
        422,
        "invalid_request",
        json={
            "kind": "dataset",
            "spider": [{"db_id": "x"}],
            "questions": [{"db_id": "x", "query": "SELECT 1"}],
            "kinds": ["swap"],
        },
    ),
    Case(
        "jobs: more tables than max_tables_per_job",
        "POST",
        "/v1/jobs",
        422,
        "max_tables_per_job",
        json={"tables": [_table()] * 4},
    ),
    Case("jobs: unknown job id", "GET", "/v1/jobs/0123456789abcdef", 404, "not_found"),
    Case("jobs: cancel an unknown job", "DELETE", "/v1/jobs/nope", 404, "not_found"),
    Case("jobs: negative offset", "GET", "/v1/jobs/nope/results?offset=-1", 422, "invalid_request"),
    Case(
        "jobs: limit not a number", "GET", "/v1/jobs/nope/results?limit=ten", 422, "invalid_request"
    ),
    Case("jobs: limit over 1000", "GET", "/v1/jobs?limit=5000", 422, "invalid_request"),
    Case("wrong method", "PUT", "/v1/perturb", 405, "method_not_allowed", json={}),
    Case("unknown route", "GET", "/v2/perturb", 404, "not_found"),
]


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: int
    body: dict[str, Any]


def run_cases(client: Any) -> list[Outcome]:
    """Send every case through ``client`` (a Starlette TestClient)."""
    outcomes = []
    for case in CASES:
        kwargs: dict[str, Any] = {"headers": case.headers}
        if case.json is not None:
            kwargs["json"] = case.json
        if case.content is not None:
            kwargs["content"] = case.content
        response = client.request(case.method, case.path, **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = {"raw": response.text[:200]}
        outcomes.append(Outcome(case, response.status_code, body))
    return outcomes


def render(outcomes: list[Outcome]) -> str:
    """The Markdown table of cases and answers."""
    limits = ", ".join(f"`{k}={v}`" for k, v in LIMITS.items())
    lines = [
        "# Bad inputs and the service's answers",
        "",
        f"Generated by `benchmarks/service_bad_inputs.py` (checked by "
        f"`tests/test_service_bad_inputs.py`). Limits in force: {limits}.",
        "",
        "| # | input | status | problem | message |",
        "|---|---|---|---|---|",
    ]
    for i, out in enumerate(outcomes, 1):
        message = str(out.body.get("message", out.body)).replace("|", "\\|").replace("\n", " ")
        if len(message) > 160:
            message = message[:157] + "..."
        problem = out.body.get("problem", "")
        lines.append(f"| {i} | {out.case.what} | {out.status} | `{problem}` | {message} |")
    return "\n".join(lines) + "\n"


def run_all() -> list[Outcome]:
    """Start the app with :data:`LIMITS` and a stand-in pipeline; run every case."""
    sys.path.insert(0, str(REPO / "tests"))
    from fastapi.testclient import TestClient
    from service_fakes import FakePipeline

    from cta.settings import Settings
    from service.app import create_app

    home = Path(tempfile.mkdtemp(prefix="cta-bad-inputs-"))
    settings = Settings(home=home, **LIMITS)  # type: ignore[arg-type]
    app = create_app(settings, FakePipeline, inprocess_workers=0)  # type: ignore[arg-type]
    with TestClient(app, raise_server_exceptions=False) as client:
        return run_cases(client)


def main() -> None:
    outcomes = run_all()
    OUTPUT.write_text(render(outcomes), encoding="utf-8")
    print(json.dumps({"cases": len(outcomes), "written": str(OUTPUT)}))


if __name__ == "__main__":
    main()
