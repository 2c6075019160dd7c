"""Liveness and readiness (no API key needed)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from service.schemas import Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    """Always 200 while the process serves requests."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Models and index are loaded",
    responses={503: {"model": Readiness, "description": "Still loading, or failed to load"}},
)
def readyz(request: Request, response: Response) -> Readiness:
    """200 only once the pipeline (index, vectors, lexicon, judge) is loaded."""
    host = request.app.state.host
    if not host.ready:
        response.status_code = 503
        response.headers["Retry-After"] = "5"
    return Readiness(ready=host.ready, detail=host.detail)
