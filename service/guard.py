"""The request guard: what every request passes before a route sees it, and after it fails.

One pure-ASGI middleware, outermost of the app's own, so its rules hold for every route:

* **URL text**: a path or query string with a NUL, another control character or a lone
  surrogate (``/v1/jobs/%00``) → 400 ``invalid_text`` naming where;
* **body size**: over ``max_body_bytes`` by ``Content-Length`` or by streamed size → 413;
* **encoding and type**: a ``Content-Encoding`` other than identity → 415
  ``unsupported_encoding``; a body that is not ``application/json`` → 415
  ``unsupported_media_type``;
* **JSON**: bytes that are not UTF-8 → 400 ``invalid_utf8``; nesting deeper than
  :data:`MAX_DEPTH` → 400 ``too_deep``; ``NaN``/``Infinity`` → 422 ``non_finite_number``
  (JSON has no such numbers, and they would silently come back as ``null``), nor numbers
  that overflow to them (``1e400``); a number over 100 characters → 422 ``number_too_long``;
  a string or key with a lone surrogate, NUL or control character → 422 ``invalid_text``
  (:mod:`cta.text`). Each of these 422s names the value's location (``body.table.rows.0.1``,
  as :func:`service.errors.location` writes it). Syntax errors are left to the route's own
  422 ``malformed_json``;
* **faults**: an exception no handler mapped becomes a 500 Problem sent by the guard itself,
  so the server sees a finished response and keeps the connection alive (Starlette's error
  middleware re-raises, after which uvicorn drops the connection and the client's next
  pooled request is reset).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cta.text import escape, find_bad_text, text_problem
from service.errors import problem_response

log = logging.getLogger(__name__)

MAX_DEPTH = 64  # arrays/objects nested deeper than any table, job or pair needs

_JSON_TYPES = ("application/json",)


MAX_NUMBER_DIGITS = 100  # longer numbers are no seed, count or cell anyone means


class _BadNumber:
    """A number the API refuses, left in place of its value while parsing, so that the
    refusal can name the path it sits at."""

    __slots__ = ("message", "problem")

    def __init__(self, problem: str, message: str) -> None:
        self.problem = problem
        self.message = message


def _reject_constant(constant: str) -> Any:
    return _BadNumber(
        "non_finite_number", f"{constant} is not a JSON number; send a finite number or null"
    )


def _parse_float(text: str) -> float | _BadNumber:
    if len(text) > MAX_NUMBER_DIGITS:
        return _BadNumber("number_too_long", f"a number of {len(text)} characters")
    value = float(text)
    if not math.isfinite(value):
        return _BadNumber(
            "non_finite_number", f"{text} overflows to infinity; send a finite number or null"
        )
    return value


def _parse_int(text: str) -> int | _BadNumber:
    if len(text) > MAX_NUMBER_DIGITS:
        return _BadNumber(
            "number_too_long",
            f"an integer of {len(text)} digits (at most {MAX_NUMBER_DIGITS} are read)",
        )
    return int(text)


def _first_bad_number(value: Any) -> tuple[str, _BadNumber] | None:
    """The location and refusal of the first refused number in ``value`` (document order)."""
    stack: list[tuple[str, Any]] = [("body", value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, _BadNumber):
            return where, node
        if isinstance(node, dict):
            stack.extend((f"{where}.{escape(k)}", v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((f"{where}.{i}", node[i]) for i in range(len(node) - 1, -1, -1))
    return None


class RequestGuard:
    """See the module docstring; ``max_bytes`` is the body limit (``max_body_bytes``)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._check_url(scope)
        if refusal is None:
            headers = dict(scope.get("headers") or [])
            refusal = self._check_headers(headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        body, refusal = await self._read_body(scope, receive, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if body is None:  # the client left while sending
            return
        if body:
            refusal = self._check_json(headers, body)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self._run(scope, _replay(body, receive), send)

    # -- the checks ------------------------------------------------------------------------
    @staticmethod
    def _check_url(scope: Scope) -> Any:
        texts = []
        raw_path = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "replace")
        for where, raw in (("path", raw_path), ("query string", scope.get("query_string") or b"")):
            try:
                # The server decodes %-escapes leniently (bad UTF-8 → U+FFFD); decode strictly.
                texts.append((where, unquote_to_bytes(raw).decode("utf-8")))
            except UnicodeDecodeError as exc:
                message = f"{where}: not UTF-8 text (invalid byte at {exc.start})"
                return problem_response(400, "invalid_text", message)
        for where, text in texts:
            problem = text_problem(text)
            if problem is not None:
                return problem_response(400, "invalid_text", f"{where}: {problem}")
        return None

    def _check_headers(self, headers: dict[bytes, bytes]) -> Any:
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return problem_response(400, "bad_request", "invalid Content-Length header")
            if size > self.max_bytes:
                return self._too_large()
        encoding = headers.get(b"content-encoding", b"identity").decode("latin-1").strip()
        if encoding.lower() not in ("", "identity"):
            return problem_response(
                415,
                "unsupported_encoding",
                f"Content-Encoding {encoding!r} is not supported; send the JSON uncompressed",
            )
        return None

    async def _read_body(
        self, scope: Scope, receive: Receive, headers: dict[bytes, bytes]
    ) -> tuple[bytes | None, Any]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return None, self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), None

    @staticmethod
    def _check_json(headers: dict[bytes, bytes], body: bytes) -> Any:
        media = headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip().lower()
        if media not in _JSON_TYPES and not media.endswith("+json"):
            shown = media or "none"
            return problem_response(
                415,
                "unsupported_media_type",
                f"Content-Type {shown!r}: the API takes application/json bodies",
            )
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return problem_response(
                400, "invalid_utf8", f"the body is not UTF-8: invalid byte at {exc.start}"
            )
        try:
            value = json.loads(
                text,
                parse_constant=_reject_constant,
                parse_float=_parse_float,
                parse_int=_parse_int,
            )
        except RecursionError:
            return _too_deep()
        except ValueError:
            return None  # a syntax error: the route answers 422 malformed_json with its place
        number = _first_bad_number(value)
        if number is not None:
            where, bad = number
            return problem_response(422, bad.problem, bad.message, location=where)
        if _depth_over(value, MAX_DEPTH):
            return _too_deep()
        found = find_bad_text(value, "body")
        if found is not None:
            where, problem = found
            return problem_response(422, "invalid_text", problem, location=where)
        return None

    def _too_large(self) -> Any:
        return problem_response(
            413, "max_body_bytes", f"request body exceeds max_body_bytes = {self.max_bytes} bytes"
        )

    # -- running the app ---------------------------------------------------------------------
    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise  # the response is half sent: only closing the connection is honest
            response = problem_response(500, "internal_error", "internal error")
            await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _too_deep() -> Any:
    return problem_response(
        400, "too_deep", f"the JSON body nests arrays/objects deeper than {MAX_DEPTH} levels"
    )


def _depth_over(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
