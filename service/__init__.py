"""The CTA HTTP service: the FastAPI app, batch jobs, and the client SDK.

``create_app`` builds the app (``cta serve`` runs it); :class:`Client` / :class:`AsyncClient`
call it. Everything else is internal to the package. Names load on first use, so the SDK
(``from service.client import Client``) needs httpx and pydantic only, never FastAPI,
SQLAlchemy or the engine.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

_EXPORTS = {
    "AsyncClient": "service.client",
    "AsyncJob": "service.client",
    "Client": "service.client",
    "Job": "service.client",
    "ServiceError": "service.client",
    "create_app": "service.app",
}

if _TYPE_CHECKING:
    from service.app import create_app
    from service.client import AsyncClient, AsyncJob, Client, Job, ServiceError

__all__ = ["AsyncClient", "AsyncJob", "Client", "Job", "ServiceError", "create_app"]


def __getattr__(name: str) -> _Any:
    if name in _EXPORTS:
        value = getattr(_import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'service' has no attribute {name!r}")
