"""The service's hostile inputs, first part: how a case is written (:class:`Case`, the limits
and key the app runs with, bodies to start from) and the malformed requests — bad text (lone
surrogates, NUL, control characters) in every place a string goes, bytes that are not UTF-8,
compressed or non-JSON bodies, absurd nesting, non-finite and loosely typed numbers.

Each must get a 4xx whose ``problem`` names what is wrong, never a 5xx. The well-formed requests
the service must refuse or accept are :mod:`bad_input_requests`; :mod:`bad_inputs` runs both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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


# -- building blocks -------------------------------------------------------------------------


def make_table(**over: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "name": "films",
        "columns": [{"name": "title"}, {"name": "year", "type": "number"}],
        "rows": [["Heat", 1995]],
    }
    table.update(over)
    return table


def make_pair(**over: Any) -> dict[str, Any]:
    return {
        "entity": "film",
        "target": {"name": "year"},
        "candidate": {"name": "release year"},
        **over,
    }


def make_spider(**over: Any) -> dict[str, Any]:
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


def make_question(**over: Any) -> dict[str, Any]:
    return {"db_id": "pets", "query": "SELECT pet_age FROM Pets", "question": "How old?", **over}


def make_spider_job(**over: Any) -> dict[str, Any]:
    """A Spider job's body: the one-table database, with ``over`` in its entry."""
    return {"kind": "spider", "spider": [make_spider(**over)]}


def make_dataset(**over: Any) -> dict[str, Any]:
    """A dataset job's body: the one-table database and one question record about it."""
    return {"kind": "dataset", "spider": [make_spider()], "questions": [make_question()], **over}


#: a Spider database with no tables at all (``load_spider_database`` gives no table)
EMPTY_DB = make_spider(
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


def raw_case(what: str, path: str, content: bytes, status: int, problem: str, **kw: Any) -> Case:
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
        {"table": make_table(columns=[{"name": "ti\ud800tle"}], rows=[])},
    ),
    _text(
        "lone low surrogate (U+DC00) in a column name",
        P,
        {"table": make_table(columns=[{"name": "\udc00"}], rows=[])},
    ),
    _text("lone surrogate in a cell", P, {"table": make_table(rows=[["He\ud800at", 1995]])}),
    _text(
        "lone surrogate in `primary_entity`", P, {"table": make_table(primary_entity="fi\ud800lm")}
    ),
    _text(
        "lone surrogate in a nested list cell",
        P,
        {"table": make_table(rows=[[["a", ["b\ud800"]], 1995]])},
    ),
    _text(
        "lone surrogate in an object key (a column's)",
        P,
        {"table": make_table(columns=[{"name": "title", "\ud800": 1}, {"name": "year"}])},
    ),
    _text("lone surrogate in a top-level key", P, {"table": make_table(), "\ud800": 1}),
    _text(
        "lone surrogate in a question",
        P,
        {"table": make_table(questions=["wh\ud800o"], sql=["SELECT 1"])},
    ),
    _text(
        "lone surrogate in a target column name",
        P,
        {"table": make_table(target_columns=["ti\ud800tle"])},
    ),
    _text("judge: lone surrogate in the entity", J, {"pairs": [make_pair(entity="fi\ud800lm")]}),
    _text(
        "judge: lone surrogate in a candidate name",
        J,
        {"pairs": [make_pair(candidate={"name": "re\ud800lease"})]},
    ),
    _text(
        "jobs: lone surrogate in a table's column name",
        JOBS,
        {"tables": [make_table(columns=[{"name": "ti\ud800tle"}], rows=[])]},
    ),
    _text("jobs: lone surrogate in a Spider `db_id`", JOBS, make_spider_job(db_id="pe\ud800ts")),
    _text(
        "jobs: lone surrogate in a dataset question record",
        JOBS,
        make_dataset(questions=[make_question(question="How \ud800old?")]),
    ),
    _text(
        "NUL in a column name", P, {"table": make_table(columns=[{"name": "ti\x00tle"}], rows=[])}
    ),
    _text("NUL in a cell", P, {"table": make_table(rows=[["He\x00at", 1995]])}),
    _text("NUL in `primary_entity`", P, {"table": make_table(primary_entity="\x00")}),
    _text("NUL in a nested object cell", P, {"table": make_table(rows=[[{"k": "v\x00"}, 1995]])}),
    _text(
        "NUL in an object key",
        P,
        {"table": make_table(columns=[{"name": "title", "a\x00": 1}, {"name": "year"}])},
    ),
    _text("NUL in the table name", P, {"table": make_table(name="fil\x00ms")}),
    _text("judge: NUL in the entity", J, {"pairs": [make_pair(entity="\x00")]}),
    _text(
        "judge: NUL in a candidate name",
        J,
        {"pairs": [make_pair(candidate={"name": "release\x00year"})]},
    ),
    _text("judge: NUL in a target name", J, {"pairs": [make_pair(target={"name": "ye\x00ar"})]}),
    _text(
        "jobs: NUL in a table's column name",
        JOBS,
        {"tables": [make_table(columns=[{"name": "a\x00"}], rows=[])]},
    ),
    _text("jobs: table id `t\\u0000x`", JOBS, {"tables": [make_table(id="t\x00x")]}),
    _text("jobs: NUL in a Spider `db_id`", JOBS, make_spider_job(db_id="pets\x00")),
    _text(
        "jobs: NUL in a dataset question record",
        JOBS,
        make_dataset(questions=[make_question(query="SELECT\x00 1")]),
    ),
    _text(
        "U+0001 in a column name",
        P,
        {"table": make_table(columns=[{"name": "\x01title"}], rows=[])},
    ),
    _text("ESC (U+001B) in a cell", P, {"table": make_table(rows=[["\x1b[31mHeat", 1995]])}),
    _text(
        "DEL (U+007F) in a column name",
        P,
        {"table": make_table(columns=[{"name": "title\x7f"}], rows=[])},
    ),
    _text("NEL (U+0085) in a cell", P, {"table": make_table(rows=[["Heat\x85", 1995]])}),
    _text("U+009F (C1) in the caption", P, {"table": make_table(caption="\x9f")}),
    _text(
        "judge: U+001B in a candidate name", J, {"pairs": [make_pair(candidate={"name": "\x1b"})]}
    ),
    _text(
        "jobs: U+0085 in a Spider column name",
        JOBS,
        make_spider_job(column_names=[[-1, "*"], [0, "pet\x85id"], [0, "pet age"]]),
    ),
    raw_case(
        "raw (unescaped) U+0001 byte inside a JSON string",
        P,
        b'{"table": {"columns": [{"name": "ti\x01tle"}]}}',
        422,
        "malformed_json",
    ),
    raw_case(
        "raw UTF-8 NEL (C2 85) inside a JSON string",
        P,
        b'{"table": {"columns": [{"name": "ti\xc2\x85tle"}]}}',
        422,
        "invalid_text",
    ),
]

# -- bytes, encodings, media types, bodies ---------------------------------------------------

BODY_CASES = [
    raw_case(
        "invalid UTF-8 byte (0xFF) in a body",
        P,
        b'{"table": {"columns": [{"name": "\xff"}]}}',
        400,
        "invalid_utf8",
    ),
    raw_case(
        "overlong UTF-8 encoding (C0 AF)",
        P,
        b'{"table": {"columns": [{"name": "\xc0\xaf"}]}}',
        400,
        "invalid_utf8",
    ),
    raw_case(
        "UTF-8-encoded surrogate bytes (ED A0 80)",
        P,
        b'{"table": {"columns": [{"name": "\xed\xa0\x80"}]}}',
        400,
        "invalid_utf8",
    ),
    raw_case("truncated UTF-8 sequence at the end", J, b'{"pairs": "\xe2\x82', 400, "invalid_utf8"),
    raw_case(
        "a UTF-16 body",
        P,
        json.dumps({"table": make_table()}).encode("utf-16"),
        400,
        "invalid_utf8",
    ),
    Case(
        "Latin-1 body declared `charset=latin-1`",
        "POST",
        P,
        400,
        "invalid_utf8",
        content=json.dumps({"table": make_table(name="café")}, ensure_ascii=False).encode(
            "latin-1"
        ),
        headers={"Content-Type": "application/json; charset=latin-1"},
    ),
    _encoded("gzip Content-Encoding", P, b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "gzip"),
    _encoded("jobs: br Content-Encoding", JOBS, b"{}", "br"),
    _typed("`text/plain` body", P, json.dumps({"table": make_table()}).encode(), "text/plain"),
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
    raw_case("empty body (Content-Type JSON)", J, b"", 422, "invalid_request"),
    raw_case("whitespace-only body", P, b"   \n", 422, "malformed_json"),
    raw_case("body `null`", P, b"null", 422, "invalid_request"),
    raw_case("malformed JSON", P, b'{"table": ', 422, "malformed_json"),
    raw_case("trailing garbage after the JSON", P, b'{"table": {}} x', 422, "malformed_json"),
    Case("JSON array instead of an object", "POST", P, 422, "invalid_request", json=[make_table()]),
    raw_case("JSON nested 64 levels (the limit)", P, _nested(64), 422, "invalid_request"),
    raw_case("JSON nested 65 levels", P, _nested(65), 400, "too_deep"),
    raw_case("JSON nested 1,000 levels", P, _nested(1_000), 400, "too_deep"),
    raw_case("JSON nested 5,000 levels", P, _nested(5_000), 400, "too_deep"),
    raw_case(
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
        json={"table": make_table(caption="x" * 30_000)},
    ),
    raw_case(
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

TABLE_JSON = json.dumps(make_table()).encode()
TABLE_BODY = b'{"table": ' + TABLE_JSON + b"}"

NUMBER_CASES = [
    raw_case(
        "`NaN` in a cell",
        P,
        b'{"table": {"columns": [{"name": "a"}], "rows": [[NaN]]}}',
        422,
        "non_finite_number",
    ),
    raw_case(
        "`Infinity` in a cell",
        P,
        b'{"table": {"columns": [{"name": "a"}], "rows": [[Infinity]]}}',
        422,
        "non_finite_number",
    ),
    raw_case(
        "`-Infinity` in a cell",
        P,
        b'{"table": {"columns": [{"name": "a"}], "rows": [[-Infinity]]}}',
        422,
        "non_finite_number",
    ),
    raw_case(
        "`NaN` as a threshold",
        P,
        b'{"table": ' + TABLE_JSON + b', "options": {"rpl_threshold": NaN}}',
        422,
        "non_finite_number",
    ),
    raw_case(
        "`Infinity` as a judge threshold",
        J,
        b'{"pairs": [' + json.dumps(make_pair()).encode() + b'], "add_threshold": Infinity}',
        422,
        "non_finite_number",
    ),
    raw_case(
        "`-Infinity` as a seed",
        P,
        b'{"table": ' + TABLE_JSON + b', "options": {"seed": -Infinity}}',
        422,
        "non_finite_number",
    ),
    raw_case(
        "`1e400` (overflows to infinity) as a threshold",
        P,
        b'{"table": ' + TABLE_JSON + b', "options": {"rpl_threshold": 1e400}}',
        422,
        "non_finite_number",
    ),
    raw_case(
        "a 5,000-digit integer as the seed (over Python's int-parsing limit)",
        P,
        b'{"table": ' + TABLE_JSON + b', "options": {"seed": ' + b"9" * 5_000 + b"}}",
        422,
        "number_too_long",
    ),
    Case(
        "`samples` over its maximum (20)",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"samples": 100}},
    ),
    Case(
        "negative seed",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"seed": -1}},
    ),
    Case(
        "seed over 2^31 - 1",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"seed": 2**31}},
    ),
    Case(
        '`"samples": false`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"samples": False}},
    ),
    Case(
        '`"seed": "7"`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"seed": "7"}},
    ),
    Case(
        '`"seed": 7.0`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"seed": 7.0}},
    ),
    Case(
        '`"samples": "2"`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"samples": "2"}},
    ),
    Case(
        '`"max_candidates": 1.5`',
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"max_candidates": 1.5}},
    ),
    Case(
        "threshold `true`",
        "POST",
        P,
        422,
        "invalid_request",
        json={"table": make_table(), "options": {"rpl_threshold": True}},
    ),
    Case(
        'judge: threshold `"0.5"`',
        "POST",
        J,
        422,
        "invalid_request",
        json={"pairs": [make_pair()], "add_threshold": "0.5"},
    ),
    Case(
        "judge: threshold `true`",
        "POST",
        J,
        422,
        "invalid_request",
        json={"pairs": [make_pair()], "rpl_threshold": True},
    ),
    Case(
        "judge: threshold above 1",
        "POST",
        J,
        422,
        "invalid_request",
        json={"pairs": [make_pair()], "rpl_threshold": 1.5},
    ),
    Case(
        'jobs: `"samples": false` in job options',
        "POST",
        JOBS,
        422,
        "invalid_request",
        json={"tables": [make_table()], "options": {"samples": False}},
    ),
    Case(
        'jobs: dataset `"seeds": ["1"]`',
        "POST",
        JOBS,
        422,
        "invalid_request",
        json=make_dataset(seeds=["1"]),
    ),
    Case(
        'jobs: dataset `"seeds": [true]`',
        "POST",
        JOBS,
        422,
        "invalid_request",
        json=make_dataset(seeds=[True]),
    ),
    Case(
        "jobs: dataset with 21 seeds",
        "POST",
        JOBS,
        422,
        "invalid_request",
        json=make_dataset(seeds=list(range(21))),
    ),
]
