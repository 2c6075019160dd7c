"""API keys: a bearer key from ``Settings.api_keys`` on every route but health.

With keys set, a request without a known key gets 401, and the caller is identified by the
sha256 of its key — the only form stored with a job, so a job is visible to the key that
created it and to no other. With no keys set, there is no caller identity (the server then
binds loopback only; see ``cta serve``).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.errors import ServiceProblem

bearer = HTTPBearer(
    auto_error=False, description="An API key from the server's CTA_API_KEYS setting"
)


def key_hash(key: str) -> str:
    """The stored identity of an API key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str | None:
    """The caller's key hash (None when the server has no keys); 401 for a missing/unknown key."""
    return identify(request, credentials.credentials if credentials is not None else None)


def identify(request: Request, key: str | None) -> str | None:
    """The hash of ``key`` when it is one of the server's keys (None when the server has no
    keys); 401 otherwise. The one check behind the bearer header and the review cookie."""
    keys: list[str] = request.app.state.settings.api_keys
    if not keys:
        return None
    given = key.encode("utf-8") if key is not None else b""
    # Compare against every key in constant time, so timing reveals nothing about which.
    matched = False
    for known in keys:
        matched |= hmac.compare_digest(given, known.encode("utf-8"))
    if key is None or not matched:
        raise ServiceProblem(
            401,
            "unauthorized",
            "missing or unknown API key: send 'Authorization: Bearer <key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return key_hash(key)
