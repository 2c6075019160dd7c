"""HTTP routes, thin over the engine host, the batcher and the jobs store."""

from __future__ import annotations

from typing import Any

from service.schemas import Problem

_DESCRIPTIONS = {
    400: "Unusable bytes or URL: a body that is not UTF-8 (`invalid_utf8`), JSON nested deeper "
    "than 64 levels (`too_deep`), a path or query with a NUL, control character or lone "
    "surrogate (`invalid_text`), or an invalid Content-Length (`bad_request`)",
    401: "Missing or unknown API key",
    404: "No such job (or it belongs to another key)",
    413: "Request body over max_body_bytes",
    415: "Body not `application/json` (`unsupported_media_type`) or compressed "
    "(`unsupported_encoding`)",
    422: "Invalid request or table; `problem` names the rule or limit (text with a NUL, control "
    "character or lone surrogate: `invalid_text`; NaN or Infinity: `non_finite_number`) and "
    "`location` where it is (`body.table.rows.0.1`, `query.limit`), as the message begins",
    429: "Overloaded: the estimated wait is over max_queue_seconds (or the queue is full); "
    "retry after Retry-After seconds, the measured time for the backlog to drain enough",
    503: "Pipeline not loaded yet (or failed to load); retry after Retry-After seconds",
}


def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given error codes, all answering a Problem."""
    return {code: {"model": Problem, "description": _DESCRIPTIONS[code]} for code in codes}
