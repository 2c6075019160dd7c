"""The review pages (``/review``): people accept, reject, rename, add and label the names a
job proposes, and export what they kept.

Server-rendered HTML (Jinja2 templates, one small script, one stylesheet, all served from
the package: no build step, no CDN). The pages are not part of ``openapi.yaml``: they are a
user interface, and their JSON writes (``POST …/items/{id}``, ``POST …/names``) exist for
that interface only.

Authentication is the API's: a request is identified by ``Authorization: Bearer <key>`` or,
for a browser, by the same key in an HttpOnly, ``SameSite=Strict`` cookie set by the login
form (``POST /review/login``); the reviewer is that key's identity, and a job is visible only
to the key that submitted it. Writes take JSON bodies only (the request guard answers 415
otherwise), so a cross-site form cannot post one with the cookie. Errors are the API's
:class:`~service.schemas.Problem` answers (an HTML page for the page routes), never a 500.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, Field

from service.auth import bearer, identify
from service.errors import ServiceProblem, invalid, location
from service.jobs.review_exports import acceptance_rates, accepted_results, annotation_rows
from service.jobs.reviews import (
    LOCAL_REVIEWER,
    REVIEWABLE_KINDS,
    NewName,
    ReviewAction,
    ReviewConflict,
    Reviews,
)
from service.routes.jobs import checked_job_id, not_found

router = APIRouter(prefix="/review", include_in_schema=False)

ASSETS = Path(__file__).resolve().parent.parent / "review"
templates = Jinja2Templates(directory=str(ASSETS / "templates"))
COOKIE = "cta_review_key"
REVIEWER_COOKIE = "cta_reviewer"
REVIEWER_HEADER = "X-CTA-Reviewer"
_REVIEWER_NAME = re.compile(r"[\w .@+-]{1,64}")


class Login(BaseModel):
    key: str = Field(min_length=1, max_length=4096)
    reviewer: str | None = Field(
        default=None,
        pattern=r"^[\w .@+-]{1,64}$",
        description="Your name, to tell apart the people who share one API key",
    )


def _key(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str | None:
    if credentials is not None:
        return credentials.credentials
    return request.cookies.get(COOKIE)


def reviewer(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str | None:
    """The caller's key hash, from the bearer header or the review cookie (None: no keys)."""
    return identify(request, _key(request, credentials))


Owner = Annotated[str | None, Depends(reviewer)]


def _who(request: Request, owner: str | None) -> str:
    """The reviewer: the key's identity, then ``:name`` when a name was given (at login, or
    in the ``X-CTA-Reviewer`` header), so that people sharing one key vote apart."""
    identity = owner if owner is not None else LOCAL_REVIEWER
    header = request.headers.get(REVIEWER_HEADER)
    name = header or request.cookies.get(REVIEWER_COOKIE)
    if not name:
        return identity
    if _REVIEWER_NAME.fullmatch(name) is None:
        raise invalid(
            location("header", REVIEWER_HEADER) if header else location("cookie", REVIEWER_COOKIE),
            "invalid_reviewer",
            "1 to 64 letters, digits, spaces or . @ + - _",
        )
    return f"{identity}:{name}"


def _reviews(request: Request) -> Reviews:
    reviews: Reviews = request.app.state.reviews
    return reviews


def _page_owner(
    request: Request, credentials: HTTPAuthorizationCredentials | None
) -> str | None | Response:
    """The owner of a page request, or the login page's redirect when it has no valid key."""
    try:
        return identify(request, _key(request, credentials))
    except ServiceProblem:
        target = quote(
            str(request.url.path) + ("?" + request.url.query if request.url.query else "")
        )
        return RedirectResponse(f"/review/login?next={target}", status_code=303)


def _error_page(request: Request, problem: ServiceProblem) -> HTMLResponse:
    return templates.TemplateResponse(
        request,
        "error.html",
        {"problem": problem.problem, "message": problem.message},
        status_code=problem.status_code,
    )


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/review") -> HTMLResponse:
    # Only a path of this site: never an open redirect.
    target = next if next.startswith("/review") else "/review"
    return templates.TemplateResponse(
        request,
        "login.html",
        {"next": target, "keys": bool(request.app.state.settings.api_keys)},
    )


@router.post("/login", status_code=204)
def login(request: Request, body: Annotated[Login, Body()]) -> Response:
    """Check the key (401 if unknown) and keep it in an HttpOnly cookie for the pages."""
    identify(request, body.key)
    response = Response(status_code=204)
    secure = request.url.scheme == "https"
    response.set_cookie(
        COOKIE, body.key, httponly=True, samesite="strict", secure=secure, path="/review"
    )
    if body.reviewer:
        response.set_cookie(
            REVIEWER_COOKIE,
            body.reviewer,
            httponly=True,
            samesite="strict",
            secure=secure,
            path="/review",
        )
    else:
        response.delete_cookie(REVIEWER_COOKIE, path="/review")
    return response


@router.post("/logout", status_code=204)
def logout() -> Response:
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/review")
    response.delete_cookie(REVIEWER_COOKIE, path="/review")
    return response


@router.get("", response_class=HTMLResponse)
def jobs_page(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Response:
    owner = _page_owner(request, credentials)
    if isinstance(owner, Response):
        return owner
    found = request.app.state.store.list_jobs(owner, 200)
    return templates.TemplateResponse(
        request,
        "jobs.html",
        {"jobs": found, "reviewable": REVIEWABLE_KINDS, "keys": owner is not None},
    )


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    job_id: str,
    order: Annotated[Literal["table", "margin"], Query()] = "table",
    page: Annotated[int | None, Query(ge=1, le=10**6)] = None,
) -> Response:
    owner = _page_owner(request, credentials)
    if isinstance(owner, Response):
        return owner
    size = request.app.state.settings.review_page_columns
    try:
        review = _reviews(request).open(
            checked_job_id(job_id),
            owner,
            _who(request, owner),
            request.app.state.settings.review_rows,
        )
        if review is None:
            raise not_found(job_id)
        columns = review.columns(order)
        pages = max(1, -(-len(columns) // size))
        if page is None:
            # Resume: the page of the first column with a name this reviewer has not judged.
            left = [
                i
                for i, c in enumerate(columns)
                if any(v.mine is None or v.my_vote_stale for v in c.items)
            ]
            page = left[0] // size + 1 if left else 1
        elif page > pages:
            raise ServiceProblem(404, "not_found", f"page {page}: the job has {pages} pages")
    except ServiceProblem as problem:
        return _error_page(request, problem)
    shown = columns[(page - 1) * size : page * size]
    on_page = sum(1 for c in shown for v in c.items if v.mine is not None and not v.my_vote_stale)
    return templates.TemplateResponse(
        request,
        "job.html",
        {
            "review": review,
            "columns": shown,
            "tables": {table.position: table for table in review.tables},
            "order": order,
            "page": page,
            "pages": pages,
            "done_elsewhere": review.reviewed_by_me - on_page,
            "reviewer": request.headers.get(REVIEWER_HEADER)
            or request.cookies.get(REVIEWER_COOKIE),
            "reviewable": review.status.kind in REVIEWABLE_KINDS,
            "keys": owner is not None,
        },
    )


def _conflict(exc: ReviewConflict) -> JSONResponse:
    return JSONResponse(
        {"problem": "conflict", "message": exc.message, "item": exc.item.as_json()},
        status_code=409,
    )


@router.post("/jobs/{job_id}/items/{item_id}")
def act(
    request: Request,
    owner: Owner,
    job_id: str,
    item_id: Annotated[int, PathParam(ge=1, le=2**31 - 1)],
    body: Annotated[ReviewAction, Body()],
) -> Any:
    """Accept, reject, clear, label or rename one name, on the version the reviewer saw
    (409 ``conflict`` with the item as it now is when that version is gone)."""
    reviews = _reviews(request)
    if request.app.state.store.get_job(checked_job_id(job_id), owner) is None:
        raise not_found(job_id)
    try:
        view = reviews.act(job_id, item_id, _who(request, owner), body)
    except ReviewConflict as exc:
        return _conflict(exc)
    if view is None:
        raise ServiceProblem(404, "not_found", f"job {job_id!r} has no review item {item_id}")
    return view.as_json()


@router.post("/jobs/{job_id}/names", status_code=201)
def add_name(request: Request, owner: Owner, job_id: str, body: Annotated[NewName, Body()]) -> Any:
    """Add one's own RPL or ADD name to a target column (409 when it already has it)."""
    if request.app.state.store.get_job(checked_job_id(job_id), owner) is None:
        raise not_found(job_id)
    try:
        view = _reviews(request).add_name(job_id, _who(request, owner), body)
    except ReviewConflict as exc:
        return _conflict(exc)
    if view is None:
        raise ServiceProblem(
            404,
            "not_found",
            f"job {job_id!r} has no finished table {body.position} with target {body.target!r}",
        )
    return JSONResponse(view.as_json(), status_code=201)


@router.get("/jobs/{job_id}/export/annotations.jsonl")
def export_annotations(
    request: Request,
    owner: Owner,
    job_id: str,
    split: Annotated[Literal["train", "dev"], Query()] = "train",
) -> Response:
    """The reviews as ``data/annotations/tables.jsonl`` rows (one table a line)."""
    rows = annotation_rows(_reviews(request), checked_job_id(job_id), owner, split)
    if rows is None:
        raise not_found(job_id)
    return Response(
        "".join(_jsonl(row) for row in rows),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="review-{job_id}.jsonl"'},
    )


@router.get("/jobs/{job_id}/export/rates.json")
def export_rates(request: Request, owner: Owner, job_id: str) -> Any:
    """Acceptance rates of the generator's names per kind and per candidate source."""
    rates = acceptance_rates(_reviews(request), checked_job_id(job_id), owner)
    if rates is None:
        raise not_found(job_id)
    return JSONResponse(
        rates, headers={"Content-Disposition": f'attachment; filename="rates-{job_id}.json"'}
    )


@router.get("/jobs/{job_id}/export/accepted.json")
def export_accepted(request: Request, owner: Owner, job_id: str) -> Any:
    """Per table id, its result with the accepted names only: what ``cta review export``
    perturbs a dataset with."""
    try:
        curated = accepted_results(_reviews(request), checked_job_id(job_id), owner)
    except KeyError:
        raise not_found(job_id) from None
    return {key: result.model_dump(mode="json") for key, result in curated.items()}


def _jsonl(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"
