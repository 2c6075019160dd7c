"""Hostile inputs for the service, each with the answer it must get; the runner that sends
them and the Markdown table of their answers (benchmarks/results/service_bad_inputs.md).

Every input is one a client can legitimately send over HTTP: bad text (lone surrogates, NUL,
control characters) in every place a string goes, bytes that are not UTF-8, compressed or
non-JSON bodies, absurd nesting, non-finite numbers, loosely typed numbers, tables the engine
cannot use, Spider payloads of the wrong shape, hostile URLs, wrong methods and bad API keys.
Each must get a 4xx whose ``problem`` names what is wrong, never a 5xx — on the SQLite and the
PostgreSQL jobs store alike. A few odd-but-valid inputs (emoji, zero-width and
right-to-left characters, nested cells) reach the engine and must get their 200.

By design, a bad *table* or *database* inside a job does not reject the job: the job is
accepted (202) and that entry becomes a failed item whose problem the case checks through
``GET /v1/jobs/{id}/results``; bad *text* anywhere in a body is refused by the request guard
before any route (422 ``invalid_text`` with its JSON path).

:func:`run_store` starts the app in-process with small limits (:data:`LIMITS`) and an API key.
``tests/test_service_bad_inputs.py`` runs every case over the real pipeline on the tiny
fixture home, on both stores; ``benchmarks/service_bad_inputs.py`` runs them over the stand-in
pipeline (``service_fakes``) and writes the table. Imported as a top-level module with
``tests/`` on ``sys.path`` (as pytest and that script put it). The cases are
:mod:`bad_input_cases` (how a case is written; malformed requests) and :mod:`bad_input_requests`
(well-formed requests); :data:`CASES` holds them in the order of the committed table, which
:func:`render` writes from them and the runner's answers.
"""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bad_input_cases import API_KEY, BAD_TEXT_CASES, BEARER, BODY_CASES, LIMITS, NUMBER_CASES, Case
from bad_input_requests import JOB_CASES, TABLE_CASES, URL_CASES, VALID_CASES

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "benchmarks" / "results" / "service_bad_inputs.md"

POSTGRES_ENV = "CTA_TEST_POSTGRES_URL"
POSTGRES_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"

#: the stores every case runs on, as the table's column headers name them
STORES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


CASES: list[Case] = [
    *BAD_TEXT_CASES,
    *BODY_CASES,
    *NUMBER_CASES,
    *TABLE_CASES,
    *JOB_CASES,
    *URL_CASES,
    *VALID_CASES,
]


# -- running ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The answer one case got on one store. ``problem`` and ``message`` are the Problem's,
    or — for a case with ``item`` — the failed item's (its status when it did not fail)."""

    case: Case
    status: int
    problem: str
    message: str
    allow: str | None = None

    @property
    def expected(self) -> bool:
        case = self.case
        return (
            (self.status, self.problem) == (case.status, case.problem)
            and (case.allow is None or self.allow == case.allow)
            and (self.status < 300 or bool(self.message))
        )


def send(client: Any, case: Case) -> Any:
    """Send ``case`` through ``client`` (a Starlette TestClient); the raw response."""
    headers = dict(case.headers)
    if case.auth is not None:
        headers["Authorization"] = case.auth
    kwargs: dict[str, Any] = {"headers": headers}
    if case.json is not None:
        kwargs["json"] = case.json
    if case.content is not None:
        body = case.content
        kwargs["content"] = (
            iter([body[i : i + 4096] for i in range(0, len(body), 4096)]) if case.chunked else body
        )
    return client.request(case.method, case.path, **kwargs)


def _body(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {"raw": response.text[:200]}
    return body if isinstance(body, dict) else {"raw": body}


def run_case(client: Any, case: Case) -> Outcome:
    """Send ``case`` through ``client`` (a Starlette TestClient) and read its answer."""
    response = send(client, case)
    body = _body(response)
    allow = response.headers.get("allow")
    if case.item is not None and response.status_code == 202:
        page = client.get(
            f"/v1/jobs/{body['id']}/results", headers={"Authorization": BEARER}
        ).json()
        items = {item["index"]: item for item in page["items"]}
        item = items.get(case.item, {"status": "absent"})
        error = item.get("error") or {}
        problem = error.get("problem") or f"item {item['status']}"
        return Outcome(case, response.status_code, problem, error.get("message", ""), allow)
    problem = str(body.get("problem", ""))
    message = str(body.get("message", "")) if response.status_code >= 300 else ""
    return Outcome(case, response.status_code, problem, message, allow)


def run_cases(client: Any, cases: list[Case] | None = None) -> list[Outcome]:
    return [run_case(client, case) for case in cases or CASES]


def postgres_base_url() -> str:
    return os.environ.get(POSTGRES_ENV) or POSTGRES_DEFAULT


def postgres_unreachable(base: str | None = None) -> str | None:
    """Why PostgreSQL at ``base`` cannot be used (None when it can)."""
    import sqlalchemy as sa

    base = base or postgres_base_url()
    try:
        engine = sa.create_engine(base, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        engine.dispose()
    except Exception as exc:  # any failure to connect means "not here"
        return f"PostgreSQL at {base} is unreachable: {type(exc).__name__}: {exc}".splitlines()[0]
    return None


@contextmanager
def store_url(store: str, scratch: Path) -> Iterator[str]:
    """A fresh jobs database: a SQLite file under ``scratch``, or a PostgreSQL schema of its
    own (dropped afterwards) at :func:`postgres_base_url`."""
    if store == "sqlite":
        yield f"sqlite:///{scratch / 'jobs.sqlite3'}"
        return
    import sqlalchemy as sa

    base = postgres_base_url()
    schema = f"cta_bad_inputs_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        url = sa.make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


def run_store(
    store: str,
    factory: Callable[[Any], Any] | None = None,
    home: Path | None = None,
    cases: list[Case] | None = None,
) -> list[Outcome]:
    """Start the app with :data:`LIMITS`, an API key and the jobs store ``store`` ("sqlite"
    or "postgres") over the pipeline ``factory`` builds (default: the stand-in) in ``home``
    (default: a temporary one); wait until it is ready; run every case."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import ServiceSettings

    build: Any  # the stand-in or a real factory: anything with the Pipeline surface
    if factory is None:
        from service_fakes import FakePipeline  # a sibling module: tests/ is on sys.path

        build = FakePipeline
    else:
        build = factory
    with (
        tempfile.TemporaryDirectory(prefix="cta-bad-inputs-") as tmp,
        store_url(store, Path(tmp)) as url,
    ):
        settings = ServiceSettings(
            home=home or Path(tmp),
            database_url=url,
            api_keys=[API_KEY],
            **LIMITS,  # type: ignore[arg-type]
        )
        app = create_app(settings, build, inprocess_workers=0)
        with TestClient(app, raise_server_exceptions=False) as client:
            _wait_ready(client)
            return run_cases(client, cases)


def _wait_ready(client: Any, timeout: float = 120.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while client.get("/readyz").status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the app was not ready within {timeout} s")
        time.sleep(0.05)


# -- the table -------------------------------------------------------------------------------


def _cell(text: str, limit: int = 160) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render(results: dict[str, list[Outcome]]) -> str:
    """The Markdown table of cases and answers: one status column per store run."""
    stores = [s for s in STORES if s in results]
    first = results[stores[0]]
    limits = ", ".join(f"`{k}={v}`" for k, v in LIMITS.items())
    names = " | ".join(STORES[s] for s in stores)
    lines = [
        "# Hostile inputs and the service's answers",
        "",
        f"Generated by `benchmarks/service_bad_inputs.py` (checked by "
        f"`tests/test_service_bad_inputs.py`, over the real pipeline on the tiny fixture home). "
        f"{len(first)} cases, each run against the SQLite and the PostgreSQL jobs store; "
        f"limits in force: {limits}, one API key. A `202` case is a job accepted with a failed "
        "item: its problem and message are the item's (`GET /v1/jobs/{id}/results`). A `405` "
        "carries `Allow` with every method of the path.",
        "",
        f"| # | input | {names} | problem | message |",
        "|---|---|" + "---|" * len(stores) + "---|---|",
    ]
    for i, out in enumerate(first):
        statuses = " | ".join(str(results[s][i].status) for s in stores)
        problem = f"`{out.problem}`" if out.problem else ""
        message = out.message
        if out.allow and out.status == 405:
            message = f"{message} (Allow: {out.allow})"
        lines.append(
            f"| {i + 1} | {_cell(out.case.what, 80)} | {statuses} | {problem} | {_cell(message)} |"
        )
    return "\n".join(lines) + "\n"


def drop_store_column(markdown: str, store: str) -> str:
    """``markdown`` without the status column of ``store`` (to compare the rest of the
    committed table when that store cannot be reached)."""
    lines = markdown.splitlines(keepends=True)
    header = next((i for i, line in enumerate(lines) if line.startswith("| # |")), None)
    if header is None:
        return markdown
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", lines[header])]
    if STORES[store] not in cells:
        return markdown
    col = cells.index(STORES[store])
    out = lines[:header]
    for line in lines[header:]:
        if not line.startswith("|"):
            out.append(line)
            continue
        parts = re.split(r"(?<!\\)\|", line)
        del parts[col]
        out.append("|".join(parts))
    return "".join(out)
