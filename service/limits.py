"""Request limits: columns, rows and string lengths of a table, pairs of a request (422).

Each refusal names the setting that refused it (``max_columns``, ``max_rows``,
``max_string_length``, ``max_batch_pairs``), so a client knows which knob the operator set.
The body size (``max_body_bytes``, 413) is checked by :mod:`service.guard`.
"""

from __future__ import annotations

from cta.results import JudgePair
from cta.table import InvalidTableError, Table, table_strings
from service.errors import ServiceProblem, invalid
from service.settings import ServiceSettings


class LimitExceeded(InvalidTableError):
    """A limit a table or a judge request exceeds, at ``path``: the keys and list indices
    inside what was checked, dot-joined (``rows.0.1``; ``columns`` for the count)."""

    def __init__(self, problem: str, path: str, detail: str, message: str | None = None) -> None:
        super().__init__(problem, message or detail)
        self.path = path
        self.detail = detail

    def within(self, where: str) -> ServiceProblem:
        """The 422 of a request whose checked part sits at ``where`` (``body.table``)."""
        return invalid(f"{where}.{self.path}", self.problem, self.detail)


def check_table_limits(table: Table, settings: ServiceSettings) -> None:
    """Raise :class:`LimitExceeded` naming the limit a table exceeds."""
    if len(table.columns) > settings.max_columns:
        raise LimitExceeded(
            "max_columns",
            "columns",
            f"table has {len(table.columns)} columns; max_columns = {settings.max_columns}",
        )
    if len(table.rows) > settings.max_rows:
        raise LimitExceeded(
            "max_rows", "rows", f"table has {len(table.rows)} rows; max_rows = {settings.max_rows}"
        )
    for where, text in table_strings(table):
        _check_length(where, text, settings.max_string_length)


def check_pair_limits(pairs: list[JudgePair], settings: ServiceSettings) -> None:
    """Raise :class:`LimitExceeded` when a judge request exceeds a limit (paths from the
    request body: ``pairs.0.entity``)."""
    if len(pairs) > settings.max_batch_pairs:
        raise LimitExceeded(
            "max_batch_pairs",
            "pairs",
            f"{len(pairs)} pairs in one request; max_batch_pairs = {settings.max_batch_pairs}",
        )
    for i, pair in enumerate(pairs):
        _check_length(f"pairs.{i}.entity", pair.entity or "", settings.max_string_length)
        _check_length(f"pairs.{i}.target.name", pair.target.name, settings.max_string_length)
        _check_length(f"pairs.{i}.candidate.name", pair.candidate.name, settings.max_string_length)


def _check_length(where: str, text: str, limit: int) -> None:
    if len(text) > limit:
        detail = f"{len(text)} characters; max_string_length = {limit}"
        raise LimitExceeded("max_string_length", where, detail, f"{where} has {detail}")
