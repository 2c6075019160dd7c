"""Batch jobs: submit (202 + Location), poll, page through results, cancel.

The store is synchronous (SQLAlchemy); these routes are plain ``def`` so FastAPI runs them
in its thread pool, off the event loop.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Body, Depends, Query, Request, Response
from fastapi.responses import PlainTextResponse

from cta.evaluation.report import markdown
from cta.evaluation.scoring import build_report, sets_of
from cta.provenance import build_manifest
from cta.reports import ItemResult
from service.auth import caller
from service.errors import ServiceProblem
from service.jobs.store import JobStore
from service.jobs.submit import UNSCORED_SETS, job_items
from service.routes import problems
from service.schemas import EvalReport, JobCreate, JobList, JobResultsPage, JobStatus

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

Caller = Annotated[str | None, Depends(caller)]

T = TypeVar("T")


def _store(request: Request) -> JobStore:
    store: JobStore = request.app.state.store
    return store


def not_found(job_id: str) -> ServiceProblem:
    return ServiceProblem(404, "not_found", f"no job {job_id!r}")


_JOB_ID = re.compile(r"[0-9a-f]{32}")


def checked_job_id(job_id: str) -> str:
    """``job_id`` when it can name a job (the store's uuid4 hex), else 404 without a query."""
    if _JOB_ID.fullmatch(job_id) is None:
        raise not_found(job_id)
    return job_id


def _found(answer: T | None, job_id: str) -> T:
    """The store's ``answer``, or 404 when the caller has no job ``job_id``."""
    if answer is None:
        raise not_found(job_id)
    return answer


@router.post(
    "",
    status_code=202,
    summary="Submit a batch job (tables, a Spider tables.json payload, or a Spider dataset)",
    responses=problems(400, 401, 413, 415, 422),
)
def submit_job(
    request: Request,
    response: Response,
    owner: Caller,
    body: Annotated[JobCreate, Body()],
) -> JobStatus:
    """Accept a job; poll ``Location`` for its status. Invalid tables (or databases) become
    failed items."""
    settings = request.app.state.settings
    items = job_items(body, settings)
    manifest = build_manifest(
        "POST /v1/jobs",
        settings,
        {},
        seeds=list(getattr(body, "seeds", None) or [body.options.seed]),
        extra={
            "job_kind": body.kind,
            "options": body.options.model_dump(mode="json"),
            "request_sha256": hashlib.sha256(
                body.model_dump_json(exclude={"options"}).encode("utf-8")
            ).hexdigest(),
        },
    )
    status = _store(request).create_job(body.kind, owner, body.options, items, manifest)
    response.headers["Location"] = f"/v1/jobs/{status.id}"
    return status


@router.get("", summary="The caller's jobs, newest first", responses=problems(400, 401, 422))
def list_jobs(
    request: Request,
    owner: Caller,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JobList:
    return JobList(jobs=_store(request).list_jobs(owner, limit))


@router.get("/{job_id}", summary="Status, counts and timestamps", responses=problems(400, 401, 404))
def get_job(request: Request, owner: Caller, job_id: str) -> JobStatus:
    return _found(_store(request).get_job(checked_job_id(job_id), owner), job_id)


@router.get(
    "/{job_id}/results",
    summary="One item per table, in table order, paginated",
    responses=problems(400, 401, 404, 422),
)
def job_results(
    request: Request,
    owner: Caller,
    job_id: str,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JobResultsPage:
    """Each item has its result, or its error (``problem`` + ``message``), or is still
    pending/running; failed tables are listed, never dropped. Follow ``next_offset``."""
    return _found(_store(request).results(checked_job_id(job_id), owner, offset, limit), job_id)


@router.get(
    "/{job_id}/manifest",
    summary="The job's provenance: tool version and commit, settings, judge and index hashes",
    responses=problems(400, 401, 404),
)
def job_manifest(request: Request, owner: Caller, job_id: str) -> dict[str, Any]:
    """What made the job's results, recorded at submission (``cta.provenance``): the
    project's version and commit, the settings in force (no secrets), the judge's and the
    index's content hashes, the seed and the sha256 of the request; ``{}`` for a job
    submitted before manifests were kept."""
    return _found(_store(request).manifest(checked_job_id(job_id), owner), job_id)


@router.delete(
    "/{job_id}", summary="Cancel a job's remaining tables", responses=problems(400, 401, 404)
)
def cancel_job(request: Request, owner: Caller, job_id: str) -> JobStatus:
    """Pending and running tables become ``cancelled``; finished ones keep their results."""
    return _found(_store(request).cancel(checked_job_id(job_id), owner), job_id)


@router.get(
    "/{job_id}/report",
    summary="An eval job's report: pre/post, drops, robustness per kind and seed",
    response_model=EvalReport,
    responses={
        **problems(400, 401, 404, 422),
        200: {"content": {"text/markdown": {"schema": {"type": "string"}}}},
    },
)
def job_report(
    request: Request,
    owner: Caller,
    job_id: str,
    format: Annotated[Literal["json", "markdown"], Query()] = "json",
) -> Any:
    """The report of the items done so far (``cta eval``'s JSON, or its markdown)."""
    store = _store(request)
    status = _found(store.get_job(checked_job_id(job_id), owner), job_id)
    if status.kind != "eval":
        raise ServiceProblem(404, "not_an_eval_job", f"job {job_id!r} is a {status.kind} job")
    items: list[ItemResult] = []
    model = ""
    databases: str | None = None
    not_evaluated: dict[str, str] = {}
    offset: int | None = 0
    while offset is not None:
        page = _found(store.results(job_id, owner, offset, 1000), job_id)
        for item in page.items:
            if item.eval_result is not None:
                items.extend(item.eval_result.items)
                model = model or item.eval_result.model
                databases = databases or item.eval_result.databases
            elif item.error is not None and item.error.problem in UNSCORED_SETS:
                not_evaluated[str(item.table_id)] = item.error.message
        offset = page.next_offset
    report = build_report(
        sets_of(items),
        items,
        model,
        linking=model == "lexical-probe",
        directory=f"job {job_id}",
        not_evaluated=not_evaluated,
        databases=databases,
    )
    if format == "markdown":
        return PlainTextResponse(markdown(report, plot_file=None), media_type="text/markdown")
    return report
