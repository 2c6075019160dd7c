"""The CTA HTTP service: the FastAPI app, batch jobs, and the client SDK.

``create_app`` builds the app (``cta serve`` runs it); :class:`Client` / :class:`AsyncClient`
call it. Everything else is internal to the package.
"""

from __future__ import annotations

from service.app import create_app
from service.client import AsyncClient, AsyncJob, Client, Job, ServiceError

__all__ = ["AsyncClient", "AsyncJob", "Client", "Job", "ServiceError", "create_app"]
