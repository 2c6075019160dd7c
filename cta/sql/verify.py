"""Execution checks: the rewritten query on the perturbed database returns what the original
query returned on the original database.

Results are compared as multisets of rows (``collections.Counter``), or as sequences when
the query's top-level SELECT has an ORDER BY. Floats are rounded to 6 decimals before the
comparison (SQLite's ``avg`` over the same rows can differ in the last bits when the plan
differs). Every outcome is a :class:`Verification` with a status:

``ok`` (also when rows tied on the ORDER BY keys swap places, or when a LIMIT without ORDER
BY keeps other rows of the same result) · ``mismatch`` (both ran, results differ) · ``original_error`` (the original query
fails on the original database — nothing to compare) · ``parse_error`` (the query could
not be parsed/bound, so it was not rewritten) · ``rewrite_error`` (it could not be
rewritten safely, or the rewritten query fails on the perturbed database).
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import sqlglot
from pydantic import BaseModel
from sqlglot import exp
from sqlglot.errors import SqlglotError

from cta.sql.identifiers import sqlite_fold

__all__ = [
    "ExecutionError",
    "Status",
    "Verification",
    "check",
    "equal_up_to_limit",
    "equal_up_to_ties",
    "execute",
    "has_top_level_order",
    "same_results",
    "verify_query",
]

Status = Literal["ok", "mismatch", "original_error", "rewrite_error", "parse_error"]

# Queries are stopped after this many seconds (a cross join over a big table can run away).
DEFAULT_TIMEOUT = 30.0


class ExecutionError(RuntimeError):
    """A query SQLite refused or interrupted; the message is SQLite's."""


class Verification(BaseModel):
    """The outcome of one check."""

    status: Status
    reason: str = ""
    rows: int = 0  # rows the original query returned (0 when it failed)


def execute(
    db_path: str | Path, sql: str, timeout: float = DEFAULT_TIMEOUT
) -> list[tuple[Any, ...]]:
    """Run ``sql`` on the SQLite file read-only; raises :class:`ExecutionError`."""
    path = Path(db_path)
    if not path.is_file():
        raise ExecutionError(f"no database file {path}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    deadline = time.monotonic() + timeout
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error as exc:
        if isinstance(exc, sqlite3.OperationalError) and str(exc) == "interrupted":
            raise ExecutionError(f"timed out after {timeout:g} s") from None
        raise ExecutionError(str(exc)) from None
    finally:
        conn.close()


def _normalise(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(round(v, 6) if isinstance(v, float) else v for v in row)


def same_results(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]], ordered: bool) -> bool:
    """Equal as sequences (``ordered``) or as multisets of rows, floats rounded."""
    left = [_normalise(r) for r in a]
    right = [_normalise(r) for r in b]
    if ordered:
        return left == right
    return Counter(left) == Counter(right)


def has_top_level_order(sql: str) -> bool:
    """Does the outermost query order its rows (ORDER BY on the top-level SELECT/compound)?"""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return False
    return isinstance(tree, exp.Query) and tree.args.get("order") is not None


def _difference(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]], ordered: bool) -> str:
    if len(a) != len(b):
        return f"{len(a)} rows originally, {len(b)} after the rewrite"
    if ordered:
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if _normalise(x) != _normalise(y):
                return f"row {i} differs: {tuple(x)!r} vs {tuple(y)!r}"
    missing = Counter(_normalise(r) for r in a) - Counter(_normalise(r) for r in b)
    first = next(iter(missing), None)
    return f"row {first!r} missing after the rewrite" if first else "rows differ"


def _keyed(sql: str) -> tuple[str, int, bool] | None:
    """``sql`` with its ORDER BY keys appended to the result columns (``None`` if unsafe).

    Returns the keyed query, the number of keys and whether LIMIT/OFFSET cut the rows.
    Only a plain top-level SELECT without DISTINCT qualifies (extra columns would change
    what DISTINCT or a compound SELECT compares).
    """
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None
    order = tree.args.get("order")
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or order is None:
        return None
    projections = list(tree.expressions)
    aliases = {sqlite_fold(p.alias): p.this for p in projections if isinstance(p, exp.Alias)}
    keyed = tree.copy()
    for i, term in enumerate(order.expressions):
        key = term.this
        if isinstance(key, exp.Literal) and not key.is_string:
            position = int(key.this) - 1
            if not 0 <= position < len(projections):
                return None
            key = projections[position].unalias()
        elif isinstance(key, exp.Column) and not key.table and sqlite_fold(key.name) in aliases:
            key = aliases[sqlite_fold(key.name)]
        keyed = keyed.select(exp.alias_(key.copy(), f"__cta_key_{i}", quoted=True), copy=False)
    cut = tree.args.get("limit") is not None or tree.args.get("offset") is not None
    return keyed.sql(dialect="sqlite"), len(order.expressions), cut


def equal_up_to_ties(
    original_db: str | Path,
    original_sql: str,
    perturbed_db: str | Path,
    rewritten_sql: str,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """Why two ordered results differing row by row are still equivalent, or ``""``.

    SQL leaves the order of rows with equal ORDER BY keys undefined, and a LIMIT may cut
    through such a tie (a different plan on the perturbed schema picks other tied rows).
    Both queries are re-run with their keys appended: the key sequences must be equal,
    each group of tied rows must hold the same rows — except a group LIMIT/OFFSET cuts
    through (first or last), which only has to be as long.
    """
    left, right = _keyed(original_sql), _keyed(rewritten_sql)
    if left is None or right is None or left[1:] != right[1:]:
        return ""
    n, cut = left[1], left[2]
    try:
        a = [_normalise(r) for r in execute(original_db, left[0], timeout)]
        b = [_normalise(r) for r in execute(perturbed_db, right[0], timeout)]
    except ExecutionError:
        return ""
    if [r[-n:] for r in a] != [r[-n:] for r in b]:
        return ""
    groups: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(a) + 1):
        if i == len(a) or a[i][-n:] != a[start][-n:]:
            groups.append((start, i))
            start = i
    for g, (lo, hi) in enumerate(groups):
        partial = cut and (g == 0 or g == len(groups) - 1)
        if not partial and Counter(a[lo:hi]) != Counter(b[lo:hi]):
            return ""
    return "equal up to the order of rows tied on the ORDER BY keys"


def _unlimited(sql: str) -> str | None:
    """``sql`` without the LIMIT/OFFSET of its unordered top-level SELECT (``None`` when it
    has none, or orders its rows)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Query) or tree.args.get("order") is not None:
        return None
    if tree.args.get("limit") is None and tree.args.get("offset") is None:
        return None
    bare = tree.copy()
    bare.set("limit", None)
    bare.set("offset", None)
    return bare.sql(dialect="sqlite")


def equal_up_to_limit(
    original_db: str | Path,
    original_sql: str,
    perturbed_db: str | Path,
    rewritten_sql: str,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """Why two results of a LIMIT over unordered rows differ yet are equivalent, or ``""``.

    Without ORDER BY, which rows a LIMIT keeps is up to the plan, and a perturbed schema
    (keys dropped, columns moved) may change the plan. The queries are re-run without the
    LIMIT: equal results there (as bags of rows) mean both kept as many rows of one result.
    """
    left, right = _unlimited(original_sql), _unlimited(rewritten_sql)
    if left is None or right is None:
        return ""
    try:
        a = execute(original_db, left, timeout)
        b = execute(perturbed_db, right, timeout)
    except ExecutionError:
        return ""
    if not same_results(a, b, ordered=False):
        return ""
    return "equal up to which rows a LIMIT without ORDER BY keeps"


def check(
    expected: Sequence[Sequence[Any]] | ExecutionError,
    ordered: bool,
    perturbed_db: str | Path | None,
    rewritten_sql: str | None,
    rewrite_problem: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    original: tuple[str | Path, str] | None = None,
) -> Verification:
    """Check a rewritten query against the original's result (or the error it raised).

    ``rewritten_sql`` is ``None`` when the rewrite failed; ``rewrite_problem`` is then
    ``"<problem>: <message>"`` from :class:`~cta.sql.rewrite.SqlRewriteError`. With
    ``original`` (database, query), an ordered mismatch gets a second look: rows that tie
    on the ORDER BY keys may come in any order (:func:`equal_up_to_ties`).
    """
    if isinstance(expected, ExecutionError):
        return Verification(status="original_error", reason=str(expected))
    if rewritten_sql is None or perturbed_db is None:
        problem = rewrite_problem or "not rewritten"
        status: Status = "parse_error" if problem.startswith("parse_error") else "rewrite_error"
        return Verification(status=status, reason=problem, rows=len(expected))
    try:
        got = execute(perturbed_db, rewritten_sql, timeout)
    except ExecutionError as exc:
        return Verification(
            status="rewrite_error", reason=f"rewritten query fails: {exc}", rows=len(expected)
        )
    if same_results(expected, got, ordered):
        return Verification(status="ok", rows=len(expected))
    if ordered and original is not None:
        tie = equal_up_to_ties(original[0], original[1], perturbed_db, rewritten_sql, timeout)
        if tie:
            return Verification(status="ok", reason=tie, rows=len(expected))
    if not ordered and original is not None and len(got) == len(expected):
        kept = equal_up_to_limit(original[0], original[1], perturbed_db, rewritten_sql, timeout)
        if kept:
            return Verification(status="ok", reason=kept, rows=len(expected))
    return Verification(
        status="mismatch", reason=_difference(expected, got, ordered), rows=len(expected)
    )


def verify_query(
    original_db: str | Path,
    original_sql: str,
    perturbed_db: str | Path | None,
    rewritten_sql: str | None,
    rewrite_problem: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Verification:
    """Run the original query on the original database and :func:`check` the rewrite."""
    expected: list[tuple[Any, ...]] | ExecutionError
    try:
        expected = execute(original_db, original_sql, timeout)
    except ExecutionError as exc:
        expected = exc
    ordered = has_top_level_order(original_sql)
    return check(
        expected,
        ordered,
        perturbed_db,
        rewritten_sql,
        rewrite_problem,
        timeout,
        original=(original_db, original_sql),
    )
