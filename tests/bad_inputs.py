"""Hostile inputs for the service, each with the answer it must get; the runner that sends
them and the Markdown table of their answers (benchmarks/results/service_bad_inputs.md).

Every input is one a client can legitimately send over HTTP: bad text (lone surrogates, NUL,
control characters) in every place a string goes, bytes that are not UTF-8, compressed or
non-JSON bodies, absurd nesting, non-finite numbers, loosely typed numbers, tables the engine
cannot use, Spider payloads of the wrong shape, hostile URLs, wrong methods and bad API keys.
Each must get a 4xx whose ``problem`` names what is wrong, never a 5xx — on the SQLite and the
PostgreSQL jobs store alike. A few odd-but-valid inputs (emoji, zero-width and
right-to-left characters, nested cells) reach the engine and must get their 200.

By design, a bad *table* or *database* inside a job does not reject the job: the job is
accepted (202) and that entry becomes a failed item whose problem the case checks through
``GET /v1/jobs/{id}/results``; bad *text* anywhere in a body is refused by the request guard
before any route (422 ``invalid_text`` with its JSON path).

:func:`run_store` starts the app in-process with small limits (:data:`LIMITS`) and an API key.
``tests/test_service_bad_inputs.py`` runs every case over the real pipeline on the tiny
fixture home, on both stores; ``benchmarks/service_bad_inputs.py`` runs them over the stand-in
pipeline (``service_fakes``) and writes the table. Imported as a top-level module with
``tests/`` on ``sys.path`` (as pytest and that script put it). It is one file because the
catalogue is: the cases are numbered in order in the committed table, which
:func:`render` writes from :data:`CASES` and the runner's answers.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "benchmarks" / "results" / "service_bad_inputs.md"

LIMITS = {
    "max_body_bytes": 20_000,
    "max_columns": 8,
    "max_rows": 20,
    "max_string_length": 64,
    "max_batch_pairs": 4,
    "max_tables_per_job": 3,
}

API_KEY = "bad-inputs-key"
BEARER = f"Bearer {API_KEY}"

POSTGRES_ENV = "CTA_TEST_POSTGRES_URL"
POSTGRES_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"

#: the stores every case runs on, as the table's column headers name them
STORES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


# -- building blocks -------------------------------------------------------------------------


def _table(**over: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "name": "films",
        "columns": [{"name": "title"}, {"name": "year", "type": "number"}],
        "rows": [["Heat", 1995]],
    }
    table.update(over)
    return table


def _pair(**over: Any) -> dict[str, Any]:
    return {
        "entity": "film",
        "target": {"name": "year"},
        "candidate": {"name": "release year"},
        **over,
    }


def _spider(**over: Any) -> dict[str, Any]:
    """A one-table Spider ``tables.json`` entry (db ``pets``)."""
    entry: dict[str, Any] = {
        "db_id": "pets",
        "table_names": ["pet"],
        "table_names_original": ["Pets"],
        "column_names": [[-1, "*"], [0, "pet id"], [0, "pet age"]],
        "column_names_original": [[-1, "*"], [0, "PetID"], [0, "pet_age"]],
        "column_types": ["text", "number", "number"],
        "primary_keys": [1],
        "foreign_keys": [],
    }
    entry.update(over)
    return entry


def _question(**over: Any) -> dict[str, Any]:
    return {"db_id": "pets", "query": "SELECT pet_age FROM Pets", "question": "How old?", **over}


def _spider_job(**over: Any) -> dict[str, Any]:
    """A Spider job's body: the one-table database, with ``over`` in its entry."""
    return {"kind": "spider", "spider": [_spider(**over)]}


def _dataset(**over: Any) -> dict[str, Any]:
    """A dataset job's body: the one-table database and one question record about it."""
    return {"kind": "dataset", "spider": [_spider()], "questions": [_question()], **over}


#: a Spider database with no tables at all (``load_spider_database`` gives no table)
EMPTY_DB = _spider(
    db_id="x",
    table_names=[],
    table_names_original=[],
    column_names=[[-1, "*"]],
    column_names_original=[[-1, "*"]],
    column_types=["text"],
    primary_keys=[],
    foreign_keys=[],
)

NAME_TRIO = [{"name": "first_name"}, {"name": "First Name"}, {"name": "firstName"}]


def _nested(depth: int) -> bytes:
    """``{"table": [[…]]}``: arrays nested so that the innermost sits ``depth`` levels deep."""
    return b'{"table": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


@dataclass(frozen=True)
class Case:
    """One hostile request and the answer it must get.

    ``problem`` is the Problem code of the answer, or — with ``item`` — the problem of the
    job's failed item at that index (the request itself is accepted, 202). ``allow`` is the
    ``Allow`` header a 405 must carry. ``auth`` is the Authorization header sent (None: none);
    ``chunked`` streams the body without a Content-Length.
    """

    what: str
    method: str
    path: str
    status: int
    problem: str
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth: str | None = BEARER
    item: int | None = None
    allow: str | None = None
    chunked: bool = False


_JSON = {"Content-Type": "application/json"}


def _text(
    what: str, path: str, body: Any, problem: str = "invalid_text", status: int = 422
) -> Case:
    """A case whose body is ``body`` serialised with every non-ASCII or control character
    as a ``\\uXXXX`` escape — how JSON carries a lone surrogate (``"ti\\ud800tle"``)."""
    raw = json.dumps(body, ensure_ascii=True).encode("ascii")
    return Case(what, "POST", path, status, problem, content=raw, headers=_JSON)


def _raw(what: str, path: str, content: bytes, status: int, problem: str, **kw: Any) -> Case:
    return Case(what, "POST", path, status, problem, content=content, headers=_JSON, **kw)


def _encoded(what: str, path: str, content: bytes, encoding: str) -> Case:
    """A JSON body under a ``Content-Encoding`` the service does not decode (415)."""
    headers = {**_JSON, "Content-Encoding": encoding}
    return Case(what, "POST", path, 415, "unsupported_encoding", content=content, headers=headers)


def _typed(what: str, path: str, content: bytes, content_type: str) -> Case:
    """A body of a media type other than JSON (415)."""
    headers = {"Content-Type": content_type}
    return Case(what, "POST", path, 415, "unsupported_media_type", content=content, headers=headers)


P, J, JOBS = "/v1/perturb", "/v1/judge", "/v1/jobs"

# -- bad text: lone surrogates, NUL, control characters --------------------------------------

BAD_TEXT_CASES = [
    _text(
        "lone surrogate in a column name",
        P,
        {"table": _table(columns=[{"name": "ti\ud800tle"}], rows=[])},
    ),
    _text(
        "lone low surrogate (U+DC00) in a column name",
        P,
        {"table": _table(columns=[{"name": "\udc00"}], rows=[])},
    ),
    _text("lone surrogate in a cell", P, {"table": _table(rows=[["He\ud800at", 1995]])}),
    _text("lone surrogate in `primary_entity`", P, {"table": _table(primary_entity="fi\ud800lm")}),
    _text(
        "lone surrogate in a nested list cell",
        P,
        {"table": _table(rows=[[["a", ["b\ud800"]], 1995]])},
    ),
    _text(
        "lone surrogate in an object key (a column's)",
        P,
        {"table": _table(columns=[{"name": "title", "\ud800": 1}, {"name": "year"}])},
    ),
    _text("lone surrogate in a top-level key", P, {"table": _table(), "\ud800": 1}),
    _text(
        "lone surrogate in a question",
        P,
        {"table": _table(questions=["wh\ud800o"], sql=["SELECT 1"])},
    ),
    _text(
        "lone surrogate in a target column name",
        P,
        {"table": _table(target_columns=["ti\ud800tle"])},
    ),
    _text("judge: lone surrogate in the entity", J, {"pairs": [_pair(entity="fi\ud800lm")]}),
    _text(
        "judge: lone surrogate in a candidate name",
        J,
        {"pairs": [_pair(candidate={"name": "re\ud800lease"})]},
    ),
    _text(
        "jobs: lone surrogate in a table's column name",
        JOBS,
        {"tables": [_table(columns=[{"name": "ti\ud800tle"}], rows=[])]},
    ),
    _text("jobs: lone surrogate in a Spider `db_id`", JOBS, _spider_job(db_id="pe\ud800ts")),
    _text(
        "jobs: lone surrogate in a dataset question record",
        JOBS,
        _dataset(questions=[_question(question="How \ud800old?")]),
    ),
    _text("NUL in a column name", P, {"table": _table(columns=[{"name": "ti\x00tle"}], rows=[])}),
    _text("NUL in a cell", P, {"table": _table(rows=[["He\x00at", 1995]])}),
    _text("NUL in `primary_entity`", P, {"table": _table(primary_entity="\x00")}),
    _text("NUL in a nested object cell", P, {"table": _table(rows=[[{"k": "v\x00"}, 1995]])}),
    _text(
        "NUL in an object key",
        P,
        {"table": _table(columns=[{"name": "title", "a\x00": 1}, {"name": "year"}])},
    ),
    _text("NUL in the table name", P, {"table": _table(name="fil\x00ms")}),
    _text("judge: NUL in the entity", J, {"pairs": [_pair(entity="\x00")]}),
    _text(
        "judge: NUL in a candidate name",
        J,
        {"pairs": [_pair(candidate={"name": "release\x00year"})]},
    ),
    _text("judge: NUL in a target name", J, {"pairs": [_pair(target={"name": "ye\x00ar"})]}),
    _text(
        "jobs: NUL in a table's column name",
        JOBS,
        {"tables": [_table(columns=[{"name": "a\x00"}], rows=[])]},
    ),
    _text("jobs: table id `t\\u0000x`", JOBS, {"tables": [_table(id="t\x00x")]}),
    _text("jobs: NUL in a Spider `db_id`", JOBS, _spider_job(db_id="pets\x00")),
    _text(
        "jobs: NUL in a dataset question record",
        JOBS,
        _dataset(questions=[_question(query="SELECT\x00 1")]),
    ),
    _text(
        "U+0001 in a column name", P, {"table": _table(columns=[{"name": "\x01title"}], rows=[])}
    ),
    _text("ESC (U+001B) in a cell", P, {"table": _table(rows=[["\x1b[31mHeat", 1995]])}),
    _text(
        "DEL (U+007F) in a column name",
        P,
        {"table": _table(columns=[{"name": "title\x7f"}], rows=[])},
    ),
    _text("NEL (U+0085) in a cell", P, {"table": _table(rows=[["Heat\x85", 1995]])}),
    _text("U+009F (C1) in the caption", P, {"table": _table(caption="\x9f")}),
    _text("judge: U+001B in a candidate name", J, {"pairs": [_pair(candidate={"name": "\x1b"})]}),
    _text(
        "jobs: U+0085 in a Spider column name",
        JOBS,
        _spider_job(column_names=[[-1, "*"], [0, "pet\x85id"], [0, "pet age"]]),
    ),
    _raw(
        "raw (unescaped) U+0001 byte inside a JSON string",
        P,
        b'{"table": {"columns": [{"name": "ti\x01tle"}]}}',
        422,
        "malformed_json",
    ),
    _raw(
        "raw UTF-8 NEL (C2 85) inside a JSON string",
        P,
        b'{"table": {"columns": [{"name": "ti\xc2\x85tle"}]}}',
        422,
        "invalid_text",
    ),
]

# -- bytes, encodings, media types, bodies ---------------------------------------------------

BODY_CASES = [
    _raw(
        "invalid UTF-8 byte (0xFF) in a body",
        P,
        b'{"table": {"columns": [{"name": "\xff"}]}}',
        400,
        "invalid_utf8",
    ),
    _raw(
        "overlong UTF-8 encoding (C0 AF)",
        P,
        b'{"table": {"columns": [{"name": "\xc0\xaf"}]}}',
        400,
        "invalid_utf8",
    ),
    _raw(
        "UTF-8-encoded surrogate bytes (ED A0 80)",
        P,
        b'{"table": {"columns": [{"name": "\xed\xa0\x80"}]}}',
        400,
        "invalid_utf8",
    ),
    _raw("truncated UTF-8 sequence at the end", J, b'{"pairs": "\xe2\x82', 400, "invalid_utf8"),
    _raw("a UTF-16 body", P, json.dumps({"table": _table()}).encode("utf-16"), 400, "invalid_utf8"),
    Case(
        "Latin-1 body declared `charset=latin-1`",
        "POST",
        P,
        400,
        "invalid_utf8",
        content=json.dumps({"table": _table(name="café")}, ensure_ascii=False).encode("latin-1"),
        headers={"Content-Type": "application/json; charset=latin-1"},
    ),
    _encoded("gzip Content-Encoding", P, b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "gzip"),
    _encoded("jobs: br Content-Encoding", JOBS, b"{}", "br"),
    _typed("`text/plain` body", P, json.dumps({"table": _table()}).encode(), "text/plain"),
    _typed(
        "form data (`application/x-www-form-urlencoded`)",
        JOBS,
        b"tables=1",
        "application/x-www-form-urlencoded",
    ),
    _typed(
        "multipart form data",
        J,
        b'--x\r\nContent-Disposition: form-data; name="pairs"\r\n\r\n[]\r\n--x--\r\n',
        "multipart/form-data; boundary=x",
    ),
    Case("a body without a Content-Type", "POST", P, 415, "unsupported_media_type", content=b"{}"),
    Case("no body at all", "POST", P, 422, "invalid_request"),
    _raw("empty body (Content-Type JSON)", J, b"", 422, "invalid_request"),
    _raw("whitespace-only body", P, b"   \n", 422, "malformed_json"),
    _raw("body `null`", P, b"null", 422, "invalid_request"),
    _raw("malformed JSON", P, b'{"table": ', 422, "malformed_json"),
    _raw("trailing garbage after the JSON", P, b'{"table": {}} x', 422, "malformed_json"),
    Case("JSON array instead of an object", "POST", P, 422, "invalid_request", json=[_table()]),
    _raw("JSON nested 64 levels (the limit)", P, _nested(64), 422, "invalid_request"),
    _raw("JSON nested 65 levels", P, _nested(65), 400, "too_deep"),
    _raw("JSON nested 1,000 levels", P, _nested(1_000), 400, "too_deep"),
    _raw("JSON nested 5,000 levels", P, _nested(5_000), 400, "too_deep"),
    _raw(
        "jobs: JSON objects nested 100 levels",
        JOBS,
        b'{"a":' * 100 + b"1" + b"}" * 100,
        400,
        "too_deep",
    ),
    Case(
        "body over max_body_bytes (Content-Length)",
        "POST",
        P,
        413,
        "max_body_bytes",
        json={"table": _table(caption="x" * 30_000)},
    ),
    _raw(
        "body over max_body_bytes, streamed without Content-Length",
        JOBS,
        b'{"tables": [' + b'{"columns": [{"name": "a"}]},' * 1_000 + b"{}]}",
        413,
        "max_body_bytes",
        chunked=True,
    ),
    Case(
        "invalid Content-Length header",
        "POST",
        P,
        400,
        "bad_request",
        content=b"{}",
        headers={**_JSON, "Content-Length": "lots"},
    ),
]

# -- numbers: non-finite, huge, loosely typed ------------------------------------------------

_TABLE_JSON = json.dumps(_table()).encode()
_TABLE_BODY = b'{"table": ' + _TABLE_JSON + b"}"

NUMBER_CASES = [
    _raw(
        "`NaN` in a cell",
        P,
        b'{"table": {"columns": [{"name": "a"}], "rows": [[NaN]]}}',
        422,
        "non_finite_number",
    ),
    _raw(
        "`Infinity` in a cell",
        P,
        b'{"table": {"columns": [{"name": "a"}], "rows": [[Infinity]]}}',
        422,
        "non_finite_number",
    ),
    _raw(
        "`-Infinity` in a cell",
        P,
        b'{"table": {"columns": [{"name": "a"}], "rows": [[-Infinity]]}}',
        422,
        "non_finite_number",
    ),
    _raw(
        "`NaN` as a threshold",
        P,
        b'{"table": ' + _TABLE_JSON + b', "options": {"rpl_threshold": NaN}}',
        422,
        "non_finite_number",
    ),
    _raw(
        "`Infinity` as a judge threshold",
        J,
        b'{"pairs": [' + json.dumps(_pair()).encode() + b'], "add_threshold": Infinity}',
        422,
        "non_finite_number",
    ),
    _raw(
        "`-Infinity` as a seed",
        P,
        b'{"table": ' + _TABLE_JSON + b', "options": {"seed": -Infinity}}',
        422,
        "non_finite_number",
    ),
    _raw(
        "`1e400` (overflows to infinity) as a threshold",
        P,
        b'{"table": ' + _TABLE_JSON + b', "options": {"rpl_threshold": 1e400}}',
        422,
        "non_finite_number",
    ),
    _raw(
        "a 5,000-digit integer as the seed (over Python's int-parsing limit)",
        P,
        b'{"table": ' + _TABLE_JSON + b', "options": {"seed": ' + b"9" * 5_000 + b"}}",
        422,
        "number_too_long",
    ),
    Case(
        "`samples` over its maximum (20)",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"samples": 100}},
    ),
    Case(
        "negative seed",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"seed": -1}},
    ),
    Case(
        "seed over 2^31 - 1",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"seed": 2**31}},
    ),
    Case(
        '`"samples": false`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"samples": False}},
    ),
    Case(
        '`"seed": "7"`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"seed": "7"}},
    ),
    Case(
        '`"seed": 7.0`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"seed": 7.0}},
    ),
    Case(
        '`"samples": "2"`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"samples": "2"}},
    ),
    Case(
        '`"max_candidates": 1.5`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"max_candidates": 1.5}},
    ),
    Case(
        "threshold `true`",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(), "options": {"rpl_threshold": True}},
    ),
    Case(
        'judge: threshold `"0.5"`',
        "POST",
        J,
        422,
        "invalid_request",
        json={"pairs": [_pair()], "add_threshold": "0.5"},
    ),
    Case(
        "judge: threshold `true`",
        "POST",
        J,
        422,
        "invalid_request",
        json={"pairs": [_pair()], "rpl_threshold": True},
    ),
    Case(
        "judge: threshold above 1",
        "POST",
        J,
        422,
        "invalid_request",
        json={"pairs": [_pair()], "rpl_threshold": 1.5},
    ),
    Case(
        'jobs: `"samples": false` in job options',
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={"tables": [_table()], "options": {"samples": False}},
    ),
    Case(
        'jobs: dataset `"seeds": ["1"]`',
        "POST",
        JOBS,
        422,
        "invalid_request",
        json=_dataset(seeds=["1"]),
    ),
    Case(
        'jobs: dataset `"seeds": [true]`',
        "POST",
        JOBS,
        422,
        "invalid_request",
        json=_dataset(seeds=[True]),
    ),
    Case(
        "jobs: dataset with 21 seeds",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json=_dataset(seeds=list(range(21))),
    ),
]

# -- tables the engine cannot use (direct requests) ------------------------------------------

TABLE_CASES = [
    Case("missing `table`", "POST", P, 422, "invalid_request", json={"options": {}}),
    Case("misspelt field `tabel`", "POST", P, 422, "invalid_request", json={"tabel": _table()}),
    Case(
        "`columns` is a string",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(columns="title,year")},
    ),
    Case("`rows` is a number", "POST", P, 422, "invalid_request", json={"table": _table(rows=5)}),
    Case(
        "a column name that is a number",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(columns=[{"name": 5}], rows=[])},
    ),
    Case(
        "unknown column type",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": _table(columns=[{"name": "hue", "type": "colour"}], rows=[])},
    ),
    Case('`{"columns": []}`', "POST", P, 422, "no_columns", json={"table": {"columns": []}}),
    Case(
        "empty column name",
        "POST",
        P,
        422,
        "empty_column_name",
        json={"table": _table(columns=[{"name": " "}, {"name": "year"}])},
    ),
    Case(
        "duplicate column names (case-insensitive)",
        "POST",
        P,
        422,
        "duplicate_column_name",
        json={"table": _table(columns=[{"name": "Year"}, {"name": "year"}])},
    ),
    Case(
        "`first_name`, `First Name`, `firstName` as three columns",
        "POST",
        P,
        422,
        "duplicate_column_name",
        json={"table": {"columns": NAME_TRIO}},
    ),
    Case("ragged rows", "POST", P, 422, "ragged_rows", json={"table": _table(rows=[["Heat"]])}),
    Case(
        "unknown target column",
        "POST",
        P,
        422,
        "unknown_column",
        json={"table": _table(target_columns=["director"])},
    ),
    Case(
        "questions and SQL misaligned",
        "POST",
        P,
        422,
        "misaligned_sql",
        json={"table": _table(questions=["q1", "q2"], sql=["SELECT 1"])},
    ),
    Case(
        "too many columns",
        "POST",
        P,
        422,
        "max_columns",
        json={"table": _table(columns=[{"name": f"c{i}"} for i in range(9)], rows=[])},
    ),
    Case(
        "too many rows",
        "POST",
        P,
        422,
        "max_rows",
        json={"table": _table(rows=[["Heat", 1995]] * 21)},
    ),
    Case(
        "over-long cell string",
        "POST",
        P,
        422,
        "max_string_length",
        json={"table": _table(rows=[["H" * 65, 1995]])},
    ),
    Case(
        "over-long column name (astral characters count once)",
        "POST",
        P,
        422,
        "max_string_length",
        json={"table": _table(columns=[{"name": "🎬" * 65}], rows=[])},
    ),
    Case("judge: empty pair list", "POST", J, 422, "invalid_request", json={"pairs": []}),
    Case(
        "judge: pair without candidate",
        "POST",
        J,
        422,
        "invalid_request",
        json={"pairs": [{"target": {"name": "a"}}]},
    ),
    Case(
        "judge: more pairs than max_batch_pairs",
        "POST",
        J,
        422,
        "max_batch_pairs",
        json={"pairs": [_pair()] * 5},
    ),
    Case(
        "judge: over-long entity",
        "POST",
        J,
        422,
        "max_string_length",
        json={"pairs": [_pair(entity="e" * 65)]},
    ),
]

# -- jobs: the request refused, or accepted with a failed item -------------------------------

JOB_CASES = [
    Case("jobs: empty table list", "POST", JOBS, 422, "invalid_request", json={"tables": []}),
    Case(
        "jobs: unknown kind",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={"kind": "csv", "tables": [_table()]},
    ),
    Case(
        "jobs: `kind` is null",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={"kind": None, "tables": [_table()]},
    ),
    Case(
        "jobs: a table that is a list",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={"tables": [[1, 2]]},
    ),
    Case(
        "jobs: Spider payload not a list",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={"kind": "spider", "spider": {"db_id": "x"}},
    ),
    Case(
        "jobs: dataset job without question records",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={"kind": "dataset", "spider": [{"db_id": "x"}]},
    ),
    Case(
        "jobs: dataset job with an unknown perturbation kind",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={
            "kind": "dataset",
            "spider": [{"db_id": "x"}],
            "questions": [{"db_id": "x", "query": "SELECT 1"}],
            "kinds": ["swap"],
        },
    ),
    Case(
        "jobs: more tables than max_tables_per_job",
        "POST",
        JOBS,
        422,
        "max_tables_per_job",
        json={"tables": [_table()] * 4},
    ),
    Case(
        'jobs: a table `{"columns": []}` (a failed item)',
        "POST",
        JOBS,
        202,
        "no_columns",
        json={"tables": [{"columns": []}]},
        item=0,
    ),
    Case(
        "jobs: `first_name`/`First Name`/`firstName` (a failed item)",
        "POST",
        JOBS,
        202,
        "duplicate_column_name",
        json={"tables": [{"columns": NAME_TRIO}]},
        item=0,
    ),
    Case(
        "jobs: a good table then a ragged one (item 1 fails)",
        "POST",
        JOBS,
        202,
        "ragged_rows",
        json={"tables": [_table(), _table(rows=[[1]])]},
        item=1,
    ),
    Case(
        "jobs: a table with a numeric id (a failed item)",
        "POST",
        JOBS,
        202,
        "malformed_table",
        json={"tables": [_table(id=5)]},
        item=0,
    ),
    Case(
        "jobs: a table over max_rows (a failed item)",
        "POST",
        JOBS,
        202,
        "max_rows",
        json={"tables": [_table(rows=[["Heat", 1995]] * 21)]},
        item=0,
    ),
    Case(
        "jobs: a Spider database with zero tables",
        "POST",
        JOBS,
        202,
        "empty_database",
        json={"kind": "spider", "spider": [EMPTY_DB]},
        item=0,
    ),
    Case(
        "jobs: a Spider entry without `table_names`",
        "POST",
        JOBS,
        202,
        "malformed_table",
        json={"kind": "spider", "spider": [{"db_id": "x"}]},
        item=0,
    ),
    Case(
        "jobs: a Spider foreign key to column 9 (absent)",
        "POST",
        JOBS,
        202,
        "malformed_table",
        json=_spider_job(foreign_keys=[[1, 9]]),
        item=0,
    ),
    Case(
        "jobs: a Spider primary key that is a word",
        "POST",
        JOBS,
        202,
        "invalid_spider",
        json=_spider_job(primary_keys=["id"]),
        item=0,
    ),
    Case(
        "jobs: a Spider foreign key of one column",
        "POST",
        JOBS,
        202,
        "invalid_spider",
        json=_spider_job(foreign_keys=[[1]]),
        item=0,
    ),
    Case(
        "jobs: a Spider table with `first_name`/`First Name`",
        "POST",
        JOBS,
        202,
        "duplicate_column_name",
        json=_spider_job(column_names=[[-1, "*"], [0, "first_name"], [0, "First Name"]]),
        item=0,
    ),
    Case(
        "jobs: dataset over a database with zero tables",
        "POST",
        JOBS,
        202,
        "empty_database",
        json={"kind": "dataset", "spider": [EMPTY_DB], "questions": [_question(db_id="x")]},
        item=0,
    ),
    Case(
        "jobs: dataset records naming an absent database",
        "POST",
        JOBS,
        202,
        "unknown_database",
        json=_dataset(questions=[_question(db_id="zoo")]),
        item=0,
    ),
    Case(
        "jobs: dataset record without a query",
        "POST",
        JOBS,
        202,
        "invalid_record",
        json=_dataset(questions=[_question(), {"db_id": "pets"}]),
        item=1,
    ),
    Case(
        "jobs: dataset with a database twice",
        "POST",
        JOBS,
        202,
        "duplicate_database",
        json={"kind": "dataset", "spider": [_spider(), _spider()], "questions": [_question()]},
        item=1,
    ),
]

# -- URLs, methods, routes, keys -------------------------------------------------------------

_JOB = "0123456789abcdef0123456789abcdef"

URL_CASES = [
    Case("jobs: unknown job id (32 hex)", "GET", f"/v1/jobs/{_JOB}", 404, "not_found"),
    Case("jobs: a job id that cannot exist", "GET", "/v1/jobs/0123456789abcdef", 404, "not_found"),
    Case("jobs: an upper-case job id", "GET", f"/v1/jobs/{_JOB.upper()}", 404, "not_found"),
    Case("jobs: cancel an unknown job", "DELETE", "/v1/jobs/nope", 404, "not_found"),
    Case("jobs: `GET /v1/jobs/%00`", "GET", "/v1/jobs/%00", 400, "invalid_text"),
    Case("jobs: `DELETE /v1/jobs/a%00b`", "DELETE", "/v1/jobs/a%00b", 400, "invalid_text"),
    Case("jobs: `?offset=%00`", "GET", "/v1/jobs/x/results?offset=%00", 400, "invalid_text"),
    Case("jobs: NUL in a query parameter's name", "GET", "/v1/jobs?%00=1", 400, "invalid_text"),
    Case("jobs: `%1b` (ESC) in a job id", "GET", "/v1/jobs/%1b", 400, "invalid_text"),
    Case("jobs: `%c2%85` (NEL) in a job id", "GET", "/v1/jobs/%c2%85", 400, "invalid_text"),
    Case(
        "jobs: `%ed%a0%80` (an encoded surrogate) in a job id",
        "GET",
        "/v1/jobs/%ed%a0%80",
        400,
        "invalid_text",
    ),
    Case("jobs: `%ff` (not UTF-8) in a job id", "GET", "/v1/jobs/%ff/results", 400, "invalid_text"),
    Case(
        "jobs: `%2e%2e%2f` path traversal in a job id",
        "GET",
        "/v1/jobs/..%2f..%2fetc%2fpasswd",
        404,
        "not_found",
    ),
    Case("jobs: a 10,000-character job id", "GET", "/v1/jobs/" + "a" * 10_000, 404, "not_found"),
    Case("a very long unknown path", "GET", "/v1/" + "x/" * 4_000, 404, "not_found"),
    Case("jobs: negative offset", "GET", "/v1/jobs/nope/results?offset=-1", 422, "invalid_request"),
    Case(
        "jobs: offset past 2^31 - 1",
        "GET",
        f"/v1/jobs/{_JOB}/results?offset=99999999999",
        422,
        "invalid_request",
    ),
    Case(
        "jobs: limit not a number", "GET", "/v1/jobs/nope/results?limit=ten", 422, "invalid_request"
    ),
    Case("jobs: limit `1e3`", "GET", "/v1/jobs?limit=1e3", 422, "invalid_request"),
    Case("jobs: limit 0", "GET", "/v1/jobs?limit=0", 422, "invalid_request"),
    Case("jobs: limit over 1000", "GET", "/v1/jobs?limit=5000", 422, "invalid_request"),
    Case("`PUT /v1/jobs`", "PUT", JOBS, 405, "method_not_allowed", json={}, allow="GET, POST"),
    Case("`DELETE /v1/jobs`", "DELETE", JOBS, 405, "method_not_allowed", allow="GET, POST"),
    Case(
        "`POST /v1/jobs/{id}`",
        "POST",
        f"/v1/jobs/{_JOB}",
        405,
        "method_not_allowed",
        json={},
        allow="DELETE, GET",
    ),
    Case("`PUT /v1/perturb`", "PUT", P, 405, "method_not_allowed", json={}, allow="POST"),
    Case("`GET /v1/judge`", "GET", J, 405, "method_not_allowed", allow="POST"),
    Case("`POST /healthz`", "POST", "/healthz", 405, "method_not_allowed", json={}, allow="GET"),
    Case("`OPTIONS /v1/perturb`", "OPTIONS", P, 405, "method_not_allowed", allow="POST"),
    Case("an invented method `FOO`", "FOO", J, 405, "method_not_allowed", allow="POST"),
    Case("jobs: a job id of one space (`%20`)", "GET", "/v1/jobs/%20", 404, "not_found"),
    Case("unknown route", "GET", "/v2/perturb", 404, "not_found"),
    Case("unknown route under a job", "GET", f"/v1/jobs/{_JOB}/results/extra", 404, "not_found"),
    Case("no API key", "GET", JOBS, 401, "unauthorized", auth=None),
    Case(
        "a wrong API key",
        "POST",
        P,
        401,
        "unauthorized",
        json={"table": _table()},
        auth="Bearer wrong",
    ),
    Case("an empty bearer token", "GET", JOBS, 401, "unauthorized", auth="Bearer "),
    Case(
        "the key under the Basic scheme", "GET", JOBS, 401, "unauthorized", auth=f"Basic {API_KEY}"
    ),
    Case(
        "a 10,000-character API key",
        "GET",
        f"/v1/jobs/{_JOB}",
        401,
        "unauthorized",
        auth="Bearer " + "k" * 10_000,
    ),
    Case(
        "the key with a trailing character",
        "DELETE",
        f"/v1/jobs/{_JOB}",
        401,
        "unauthorized",
        auth=BEARER + "x",
    ),
]

# -- odd but valid: these reach the engine and get their 200 ---------------------------------

VALID_CASES = [
    _raw(
        "a 4,000-digit integer in a cell (no number anyone means)",
        P,
        b'{"table": {"columns": [{"name": "title"}, {"name": "gross"}], "rows": [["Heat", '
        + b"9" * 4_000
        + b']]}, "options": {"samples": 1}}',
        422,
        "number_too_long",
    ),
    Case(
        "valid: questions with garbage gold SQL, with samples",
        "POST",
        P,
        200,
        "",
        json={
            "table": _table(questions=["which year?"], sql=["SELECT FROM WHERE ((( ;--"]),
            "options": {"samples": 1},
        },
    ),
    _raw(
        "`1e400` in a cell (overflows to infinity)",
        P,
        b'{"table": {"columns": [{"name": "title"}, {"name": "gross"}], '
        b'"rows": [["Heat", 1e400]]}, "options": {"samples": 1}}',
        422,
        "non_finite_number",
    ),
    _raw(
        "jobs: `1e400` in a table's cell",
        JOBS,
        b'{"tables": [{"columns": [{"name": "gross"}], "rows": [[1e400]]}]}',
        422,
        "non_finite_number",
    ),
    _raw("a UTF-8 byte-order mark before the JSON", P, b"\xef\xbb\xbf" + _TABLE_BODY, 200, ""),
    Case(
        "valid: an `application/vnd.api+json` body",
        "POST",
        P,
        200,
        "",
        content=_TABLE_BODY,
        headers={"Content-Type": "application/vnd.api+json"},
    ),
    Case(
        "valid: emoji and CJK column names",
        "POST",
        P,
        200,
        "",
        json={
            "table": _table(columns=[{"name": "🎬 title"}, {"name": "年"}], rows=[["Heat", "1995"]])
        },
    ),
    Case(
        "valid: zero-width joiner, BOM, U+2028, RTL override in names",
        "POST",
        P,
        200,
        "",
        json={
            "table": _table(
                columns=[
                    {"name": "ti\u200dtle"},
                    {"name": "\ufeffyear"},
                    {"name": "a\u2028b"},
                    {"name": "\u202eeman"},
                ],
                rows=[],
            )
        },
    ),
    Case(
        "valid: tab, newline and CR (ordinary whitespace) in names",
        "POST",
        P,
        200,
        "",
        json={"table": _table(columns=[{"name": "ti\ttle"}, {"name": "year\r\n"}])},
    ),
    Case(
        "valid: punctuation-only and numeric column names",
        "POST",
        P,
        200,
        "",
        json={"table": _table(columns=[{"name": "%%%"}, {"name": "2019"}], rows=[["a", 1]])},
    ),
    Case(
        "valid: nested list, object, null and boolean cells",
        "POST",
        P,
        200,
        "",
        json={
            "table": _table(
                columns=[{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
                rows=[[["x", ["y"]], {"k": [1]}, None, True]],
            )
        },
    ),
    Case(
        "valid: empty `primary_entity` and no target columns",
        "POST",
        P,
        200,
        "",
        json={"table": _table(primary_entity="", target_columns=[])},
    ),
    Case(
        "valid: judge pair with emoji and an empty entity",
        "POST",
        J,
        200,
        "",
        json={"pairs": [_pair(entity="", candidate={"name": "🎬"})]},
    ),
    Case("valid: `lowercase bearer` scheme", "GET", JOBS, 200, "", auth=f"bearer {API_KEY}"),
]

CASES: list[Case] = [
    *BAD_TEXT_CASES,
    *BODY_CASES,
    *NUMBER_CASES,
    *TABLE_CASES,
    *JOB_CASES,
    *URL_CASES,
    *VALID_CASES,
]


# -- running ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The answer one case got on one store. ``problem`` and ``message`` are the Problem's,
    or — for a case with ``item`` — the failed item's (its status when it did not fail)."""

    case: Case
    status: int
    problem: str
    message: str
    allow: str | None = None

    @property
    def expected(self) -> bool:
        case = self.case
        return (
            (self.status, self.problem) == (case.status, case.problem)
            and (case.allow is None or self.allow == case.allow)
            and (self.status < 300 or bool(self.message))
        )


def send(client: Any, case: Case) -> Any:
    """Send ``case`` through ``client`` (a Starlette TestClient); the raw response."""
    headers = dict(case.headers)
    if case.auth is not None:
        headers["Authorization"] = case.auth
    kwargs: dict[str, Any] = {"headers": headers}
    if case.json is not None:
        kwargs["json"] = case.json
    if case.content is not None:
        body = case.content
        kwargs["content"] = (
            iter([body[i : i + 4096] for i in range(0, len(body), 4096)]) if case.chunked else body
        )
    return client.request(case.method, case.path, **kwargs)


def _body(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {"raw": response.text[:200]}
    return body if isinstance(body, dict) else {"raw": body}


def run_case(client: Any, case: Case) -> Outcome:
    """Send ``case`` through ``client`` (a Starlette TestClient) and read its answer."""
    response = send(client, case)
    body = _body(response)
    allow = response.headers.get("allow")
    if case.item is not None and response.status_code == 202:
        page = client.get(
            f"/v1/jobs/{body['id']}/results", headers={"Authorization": BEARER}
        ).json()
        items = {item["index"]: item for item in page["items"]}
        item = items.get(case.item, {"status": "absent"})
        error = item.get("error") or {}
        problem = error.get("problem") or f"item {item['status']}"
        return Outcome(case, response.status_code, problem, error.get("message", ""), allow)
    problem = str(body.get("problem", ""))
    message = str(body.get("message", "")) if response.status_code >= 300 else ""
    return Outcome(case, response.status_code, problem, message, allow)


def run_cases(client: Any, cases: list[Case] | None = None) -> list[Outcome]:
    return [run_case(client, case) for case in cases or CASES]


def postgres_base_url() -> str:
    return os.environ.get(POSTGRES_ENV) or POSTGRES_DEFAULT


def postgres_unreachable(base: str | None = None) -> str | None:
    """Why PostgreSQL at ``base`` cannot be used (None when it can)."""
    import sqlalchemy as sa

    base = base or postgres_base_url()
    try:
        engine = sa.create_engine(base, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        engine.dispose()
    except Exception as exc:  # any failure to connect means "not here"
        return f"PostgreSQL at {base} is unreachable: {type(exc).__name__}: {exc}".splitlines()[0]
    return None


@contextmanager
def store_url(store: str, scratch: Path) -> Iterator[str]:
    """A fresh jobs database: a SQLite file under ``scratch``, or a PostgreSQL schema of its
    own (dropped afterwards) at :func:`postgres_base_url`."""
    if store == "sqlite":
        yield f"sqlite:///{scratch / 'jobs.sqlite3'}"
        return
    import sqlalchemy as sa

    base = postgres_base_url()
    schema = f"cta_bad_inputs_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        url = sa.make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


def run_store(
    store: str,
    factory: Callable[[Any], Any] | None = None,
    home: Path | None = None,
    cases: list[Case] | None = None,
) -> list[Outcome]:
    """Start the app with :data:`LIMITS`, an API key and the jobs store ``store`` ("sqlite"
    or "postgres") over the pipeline ``factory`` builds (default: the stand-in) in ``home``
    (default: a temporary one); wait until it is ready; run every case."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import ServiceSettings

    build: Any  # the stand-in or a real factory: anything with the Pipeline surface
    if factory is None:
        from service_fakes import FakePipeline  # a sibling module: tests/ is on sys.path

        build = FakePipeline
    else:
        build = factory
    with (
        tempfile.TemporaryDirectory(prefix="cta-bad-inputs-") as tmp,
        store_url(store, Path(tmp)) as url,
    ):
        settings = ServiceSettings(
            home=home or Path(tmp),
            database_url=url,
            api_keys=[API_KEY],
            **LIMITS,  # type: ignore[arg-type]
        )
        app = create_app(settings, build, inprocess_workers=0)
        with TestClient(app, raise_server_exceptions=False) as client:
            _wait_ready(client)
            return run_cases(client, cases)


def _wait_ready(client: Any, timeout: float = 120.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while client.get("/readyz").status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the app was not ready within {timeout} s")
        time.sleep(0.05)


# -- the table -------------------------------------------------------------------------------


def _cell(text: str, limit: int = 160) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render(results: dict[str, list[Outcome]]) -> str:
    """The Markdown table of cases and answers: one status column per store run."""
    stores = [s for s in STORES if s in results]
    first = results[stores[0]]
    limits = ", ".join(f"`{k}={v}`" for k, v in LIMITS.items())
    names = " | ".join(STORES[s] for s in stores)
    lines = [
        "# Hostile inputs and the service's answers",
        "",
        f"Generated by `benchmarks/service_bad_inputs.py` (checked by "
        f"`tests/test_service_bad_inputs.py`, over the real pipeline on the tiny fixture home). "
        f"{len(first)} cases, each run against the SQLite and the PostgreSQL jobs store; "
        f"limits in force: {limits}, one API key. A `202` case is a job accepted with a failed "
        "item: its problem and message are the item's (`GET /v1/jobs/{id}/results`). A `405` "
        "carries `Allow` with every method of the path.",
        "",
        f"| # | input | {names} | problem | message |",
        "|---|---|" + "---|" * len(stores) + "---|---|",
    ]
    for i, out in enumerate(first):
        statuses = " | ".join(str(results[s][i].status) for s in stores)
        problem = f"`{out.problem}`" if out.problem else ""
        message = out.message
        if out.allow and out.status == 405:
            message = f"{message} (Allow: {out.allow})"
        lines.append(
            f"| {i + 1} | {_cell(out.case.what, 80)} | {statuses} | {problem} | {_cell(message)} |"
        )
    return "\n".join(lines) + "\n"


def drop_store_column(markdown: str, store: str) -> str:
    """``markdown`` without the status column of ``store`` (to compare the rest of the
    committed table when that store cannot be reached)."""
    lines = markdown.splitlines(keepends=True)
    header = next((i for i, line in enumerate(lines) if line.startswith("| # |")), None)
    if header is None:
        return markdown
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", lines[header])]
    if STORES[store] not in cells:
        return markdown
    col = cells.index(STORES[store])
    out = lines[:header]
    for line in lines[header:]:
        if not line.startswith("|"):
            out.append(line)
            continue
        parts = re.split(r"(?<!\\)\|", line)
        del parts[col]
        out.append("|".join(parts))
    return "".join(out)
