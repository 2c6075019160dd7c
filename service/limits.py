"""Request limits: body size (413), and columns, rows and string lengths of a table (422).

Each refusal names the setting that refused it (``max_body_bytes``, ``max_columns``,
``max_rows``, ``max_string_length``), so a client knows which knob the operator set.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cta.judge.nli import JudgePair
from cta.settings import Settings
from cta.table import InvalidTableError, Table
from service.errors import problem_response


class BodySizeLimit:
    """ASGI middleware: refuse bodies over ``max_bytes`` by Content-Length and by streamed size.

    The body is read (up to the limit) before the app sees it, so an oversized chunked
    upload is refused with a 413 rather than cut off mid-parse.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_bytes
            except ValueError:
                await problem_response(400, "bad_request", "invalid Content-Length header")(
                    scope, receive, send
                )
                return
            if too_big:
                await self._refuse(scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(
            413,
            "max_body_bytes",
            f"request body exceeds max_body_bytes = {self.max_bytes} bytes",
        )
        await response(scope, receive, send)


def check_table_limits(table: Table, settings: Settings) -> None:
    """Raise :class:`InvalidTableError` naming the limit a table exceeds."""
    if len(table.columns) > settings.max_columns:
        raise InvalidTableError(
            "max_columns",
            f"table has {len(table.columns)} columns; max_columns = {settings.max_columns}",
        )
    if len(table.rows) > settings.max_rows:
        raise InvalidTableError(
            "max_rows", f"table has {len(table.rows)} rows; max_rows = {settings.max_rows}"
        )
    for where, text in _table_strings(table):
        _check_length(where, text, settings.max_string_length)


def check_pair_limits(pairs: list[JudgePair], settings: Settings) -> None:
    """Raise :class:`InvalidTableError` when a judge request exceeds a limit."""
    if len(pairs) > settings.max_batch_pairs:
        raise InvalidTableError(
            "max_batch_pairs",
            f"{len(pairs)} pairs in one request; max_batch_pairs = {settings.max_batch_pairs}",
        )
    for i, pair in enumerate(pairs):
        _check_length(f"pairs.{i}.entity", pair.entity or "", settings.max_string_length)
        _check_length(f"pairs.{i}.target.name", pair.target.name, settings.max_string_length)
        _check_length(f"pairs.{i}.candidate.name", pair.candidate.name, settings.max_string_length)


def _check_length(where: str, text: str, limit: int) -> None:
    if len(text) > limit:
        raise InvalidTableError(
            "max_string_length",
            f"{where} has {len(text)} characters; max_string_length = {limit}",
        )


def _table_strings(table: Table) -> Iterator[tuple[str, str]]:
    for key in ("id", "name", "caption", "primary_entity", "source"):
        value = getattr(table, key)
        if isinstance(value, str):
            yield key, value
    for i, col in enumerate(table.columns):
        yield f"columns.{i}.name", col.name
        if col.original_name:
            yield f"columns.{i}.original_name", col.original_name
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row):
            yield from _cell_strings(f"rows.{r}.{c}", cell)
    for i, question in enumerate(table.questions):
        yield f"questions.{i}", question
    for i, name in enumerate(table.target_columns or []):
        yield f"target_columns.{i}", name


def _cell_strings(where: str, cell: Any) -> Iterator[tuple[str, str]]:
    # Cells are JSON values; a nested list or object is measured as a whole.
    if isinstance(cell, str):
        yield where, cell
    elif isinstance(cell, list | dict):
        yield where, repr(cell)
