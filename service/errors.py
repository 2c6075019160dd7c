"""Every error answers with a :class:`~service.schemas.Problem`; only genuine faults are 500s.

Bad input maps to 4xx with a code naming the problem: invalid tables (``InvalidTableError``
→ 422 with its own code), request validation (422, with the field path), limits (413/422
naming the setting), unknown routes and jobs (404), auth (401), overload (429 with
``Retry-After``) and a pipeline not loaded yet (503 with ``Retry-After``).
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
from service.schemas import Problem

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
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.problem = problem
        self.message = message
        self.headers = headers


def problem_response(
    status_code: int,
    problem: str,
    message: str,
    headers: dict[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> JSONResponse:
    """A JSON :class:`Problem` response."""
    body = Problem(problem=problem, message=message, errors=errors)
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True), status_code=status_code, headers=headers
    )


def _location(loc: Sequence[Any]) -> str:
    return ".".join(str(p) for p in loc) or "request"


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
        return problem_response(exc.status_code, exc.problem, exc.message, exc.headers)

    @app.exception_handler(InvalidTableError)
    async def _invalid_table(_: Request, exc: InvalidTableError) -> JSONResponse:
        return problem_response(422, exc.problem, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors: list[dict[str, Any]] = [dict(e) for e in exc.errors()]
        for err in errors:
            inner = (err.get("ctx") or {}).get("error")
            if isinstance(inner, InvalidTableError):
                where = _location(err.get("loc", ()))
                return problem_response(422, inner.problem, f"{where}: {inner.message}")
        first: dict[str, Any] = errors[0] if errors else {"loc": (), "msg": "invalid", "type": ""}
        if first.get("type") == "json_invalid":
            where = first.get("loc", ())[-1]
            detail = (first.get("ctx") or {}).get("error", "invalid JSON")
            return problem_response(
                422, "malformed_json", f"malformed JSON at character {where}: {detail}"
            )
        problem = "invalid_request"
        message = f"{_location(first.get('loc', ()))}: {first.get('msg', 'invalid')}"
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        slim = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in errors[:20]
        ]
        return problem_response(422, problem, message, errors=jsonable_encoder(slim))

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
