"""Every error answers with a :class:`~service.schemas.Problem`; only genuine faults are 500s.

Bad input maps to 4xx with a code naming the problem: invalid tables (``InvalidTableError``
→ 422 with its own code), request validation (422), limits (413/422 naming the setting),
unknown routes and jobs (404), auth (401), overload (429 with ``Retry-After``) and a pipeline
not loaded yet (503 with ``Retry-After``).

Every 422 names where the problem is in one form, :func:`location`: the part of the request
(``body``, ``query``, ``path``, ``header`` or ``cookie``) and then, dot-joined, the keys and
list indices that lead to it (``body.table.rows.0.1``, ``body.pairs.0.entity``,
``query.limit``; ``body`` alone for the body as a whole). It is the answer's ``location`` and
the start of its ``message``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from cta.table import InvalidTableError
from service.batching import Overloaded
from service.host import PipelineNotReady
from service.schemas import UNION_TAG, Problem

log = logging.getLogger(__name__)

_HTTP_PROBLEMS = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "too_large",
    415: "unsupported_media_type",
}


class ServiceProblem(Exception):
    """An HTTP error with a problem code, raised by routes and dependencies."""

    def __init__(
        self,
        status_code: int,
        problem: str,
        message: str,
        headers: dict[str, str] | None = None,
        location: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.problem = problem
        self.message = message
        self.headers = headers
        self.location = location


def location(part: str, *path: str | int) -> str:
    """Where in a request a problem is: ``part`` (``body``, ``query``, ``path``, ``header``,
    ``cookie``) and the keys and list indices that lead to it, dot-joined
    (``body.table.rows.0.1``)."""
    return ".".join([part, *(str(p) for p in path)])


def invalid(where: str, problem: str, message: str) -> ServiceProblem:
    """A 422 at ``where`` (a :func:`location`)."""
    return ServiceProblem(422, problem, message, location=where)


def problem_response(
    status_code: int,
    problem: str,
    message: str,
    headers: dict[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
    location: str | None = None,
) -> JSONResponse:
    """A JSON :class:`Problem` response; with ``location``, the message starts with it."""
    if location is not None:
        message = f"{location}: {message}"
    body = Problem(problem=problem, message=message, location=location, errors=errors)
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True), status_code=status_code, headers=headers
    )


def _location(loc: Sequence[Any]) -> str:
    """A validation error's ``loc`` as a :func:`location`, without the tags of the unions it
    went through (``("body", "kind=tables", "tables", 0)`` is ``body.tables.0``)."""
    parts = [p for p in loc if not (isinstance(p, str) and p.startswith(UNION_TAG))]
    return location(*parts) if parts else "body"


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app fully matches on the request's path (asked of
    the routes themselves, so included routers count too)."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes
        )
    ]


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into Problem responses."""

    @app.exception_handler(ServiceProblem)
    async def _service_problem(_: Request, exc: ServiceProblem) -> JSONResponse:
        return problem_response(
            exc.status_code, exc.problem, exc.message, exc.headers, location=exc.location
        )

    @app.exception_handler(InvalidTableError)
    async def _invalid_table(_: Request, exc: InvalidTableError) -> JSONResponse:
        # Routes that know where a table sits raise ``invalid`` instead; this is the body.
        return problem_response(422, exc.problem, exc.message, location="body")

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors: list[dict[str, Any]] = [dict(e) for e in exc.errors()]
        for err in errors:
            inner = (err.get("ctx") or {}).get("error")
            if isinstance(inner, InvalidTableError):
                where = _location(err.get("loc", ()))
                return problem_response(422, inner.problem, inner.message, location=where)
        first: dict[str, Any] = errors[0] if errors else {"loc": (), "msg": "invalid", "type": ""}
        if first.get("type") == "json_invalid":
            where = first.get("loc", ())[-1]
            detail = (first.get("ctx") or {}).get("error", "invalid JSON")
            return problem_response(
                422,
                "malformed_json",
                f"malformed JSON at character {where}: {detail}",
                location="body",
            )
        message = str(first.get("msg", "invalid"))
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        slim = [
            {
                "location": _location(e.get("loc", ())),
                "msg": e.get("msg", ""),
                "type": e.get("type", ""),
            }
            for e in errors[:20]
        ]
        return problem_response(
            422,
            "invalid_request",
            message,
            errors=jsonable_encoder(slim),
            location=_location(first.get("loc", ())),
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        problem = _HTTP_PROBLEMS.get(exc.status_code, f"http_{exc.status_code}")
        headers = dict(exc.headers or {})
        message = str(exc.detail)
        if exc.status_code == 405:
            # Starlette names only the first route that matched the path; the path may
            # have several (GET and POST /v1/jobs are two routes).
            allowed = _allowed_methods(request)
            headers["Allow"] = ", ".join(allowed)
            message = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
        return problem_response(exc.status_code, problem, message, headers or None)

    @app.exception_handler(Overloaded)
    async def _overloaded(_: Request, exc: Overloaded) -> JSONResponse:
        return problem_response(
            429, "overloaded", str(exc), headers={"Retry-After": str(exc.retry_after)}
        )

    @app.exception_handler(PipelineNotReady)
    async def _not_ready(_: Request, exc: PipelineNotReady) -> JSONResponse:
        problem = "pipeline_failed" if exc.failed else "not_ready"
        return problem_response(503, problem, str(exc), headers={"Retry-After": "5"})

    @app.exception_handler(Exception)
    async def _fault(request: Request, exc: Exception) -> JSONResponse:
        # Only genuine server faults get here; bad input is mapped above.
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(500, "internal_error", f"internal error ({type(exc).__name__})")
