"""Where predicted SQL comes from: files, an HTTP endpoint, a Python function, or a model.

Every source is a :class:`Predictor`: given the questions of a perturbed dataset folder it
returns one :class:`Prediction` per question, in order.

Files (:class:`FilePredictions`), one per set, named after the set's file
(``dev_original.sql``, ``dev_rpl_s0.sql``…; ``.sql``, ``.txt`` or ``.jsonl``):

- test-suite-sql-eval's convention — one SQL per line, in the order of the set's questions;
- JSON lines ``{"question_index": i, "sql": …}`` or ``{"id": "<set>:<i>", "sql": …}``.

A single JSON-lines file may hold every set when each line names its question by ``id``
(``dev_rpl_s0:12``) or by ``set`` and ``question_index``.

BIRD's own format is read too: a JSON object ``{"<key>": "SQL\t----- bird -----\t<db_id>"}``
(what BIRD's scripts write, ``predict_dev.json``), its keys the questions' positions in the
set's file (``"0"``, ``"1"``…) or their ``question_id``; and plain lines may end in BIRD's
``\t----- bird -----\t<db_id>``. Such a file is ``<set>.json`` in a folder, or given alone:
then it holds the predictions of the set whose databases it names, question by question
(the original set for a model's predictions on BIRD's own questions).

An endpoint (:class:`EndpointPredictions`) receives ``POST {question, db_id, schema}`` (the
``tables.json`` entry of the database the question is asked on) and answers ``{sql}``;
requests run concurrently (a question asked on the same database in several sets is sent
once), are retried on 429, 5xx and connection errors (honouring ``Retry-After``) and show a
progress bar. A Python entry point ``module:function``
(:class:`EntryPointPredictions`) is called as ``function(question=…, db_id=…, schema=…)``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from cta.evaluation.sets import EvalDirectory, Question, QuestionSet
from cta.formats.reading import json_lines
from cta.table import InvalidTableError

__all__ = [
    "EndpointPredictions",
    "EntryPointPredictions",
    "FilePredictions",
    "Prediction",
    "Predictor",
]

_EXTENSIONS = (".sql", ".txt", ".jsonl", ".json")
BIRD_SEPARATOR = "\t----- bird -----\t"  # BIRD's prediction files: SQL, this, the db_id


@dataclass(frozen=True)
class Prediction:
    """A predicted query, or why there is none."""

    sql: str | None
    error: str | None = None


class Predictor(Protocol):
    """A source of predicted SQL for the questions of a folder."""

    name: str

    def predict(
        self, questions: Sequence[Question], directory: EvalDirectory
    ) -> list[Prediction]: ...


# -- files ----------------------------------------------------------------------------------------
def _read_jsonl(path: Path, default_set: str | None) -> dict[tuple[str, int], str]:
    found: dict[tuple[str, int], str] = {}
    for n, obj in json_lines(path.read_text(encoding="utf-8"), path):
        if not isinstance(obj, dict) or not isinstance(obj.get("sql"), str):
            raise InvalidTableError("malformed_prediction", f"{path}:{n}: needs a string 'sql'")
        key = _key(obj, default_set)
        if key is None:
            raise InvalidTableError(
                "malformed_prediction",
                f"{path}:{n}: name the question by 'id' (<set>:<index>) or 'question_index'"
                + ("" if default_set else " and 'set'"),
            )
        found[key] = obj["sql"]
    return found


def _key(obj: dict[str, Any], default_set: str | None) -> tuple[str, int] | None:
    ident = obj.get("id")
    if isinstance(ident, str) and ":" in ident:
        stem, _, index = ident.rpartition(":")
        if index.isdigit():
            return stem, int(index)
    index_value = obj.get("question_index", ident if isinstance(ident, int) else None)
    stem_value = obj.get("set", default_set)
    if isinstance(index_value, int) and isinstance(stem_value, str):
        return stem_value, index_value
    return None


def _bird_object(path: Path) -> dict[str, Any] | None:
    """The object of a BIRD prediction file (``{key: "SQL<sep>db_id"}``), or None when
    ``path`` is not one."""
    if path.suffix not in (".json", ""):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and "sql" not in data else None


def _bird_sql(value: Any) -> tuple[str, str | None]:
    """A BIRD prediction value: its SQL and the db_id it names (BIRD's scripts read a
    non-string as an empty query)."""
    if not isinstance(value, str):
        return " ", None
    sql, sep, db_id = value.partition(BIRD_SEPARATOR)
    return sql, (db_id.strip() if sep else None)


def _bird_positions(
    path: Path, data: Mapping[str, Any], questions: Sequence[Question]
) -> tuple[dict[int, str], str | None]:
    """Predictions of a BIRD object by position in ``questions`` (keys are positions, or the
    questions' ``question_id``), or why they do not fit them."""
    keys = list(data)
    positions = {str(i): i for i in range(len(questions))}
    ids = {str(q.question_id): q.position for q in questions if q.question_id is not None}
    if set(keys) == set(positions):
        where = positions
    elif set(keys) == set(ids) and len(ids) == len(questions):
        where = ids
    else:
        return {}, (
            f"{path}: {len(keys)} predictions whose keys are neither the positions 0..{len(questions) - 1} "
            "nor the question_ids of the set's questions"
        )
    found: dict[int, str] = {}
    for key, value in data.items():
        sql, db_id = _bird_sql(value)
        position = where[key]
        if db_id is not None and db_id != questions[position].db_id:
            return {}, (
                f"{path}: prediction {key!r} is for database {db_id!r}, the question for "
                f"{questions[position].db_id!r}"
            )
        found[position] = sql
    return found, None


def _plain_sql(line: str) -> str:
    """A plain prediction line: the SQL, without BIRD's ``<sep>db_id`` ending."""
    return line.partition(BIRD_SEPARATOR)[0]


def _is_jsonl(path: Path) -> bool:
    if path.suffix == ".jsonl":
        return True
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            return line.lstrip().startswith("{")
    return False


class FilePredictions:
    """Predictions read from a folder of per-set files or one JSON-lines file."""

    name = "files"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise InvalidTableError("not_found", f"{self.path}: no such file or folder")

    def _file_of(self, stem: str) -> Path | None:
        for ext in _EXTENSIONS:
            candidate = self.path / f"{stem}{ext}"
            if candidate.is_file():
                return candidate
        return None

    def _read(
        self, sets: Mapping[str, Sequence[Question]]
    ) -> tuple[dict[tuple[str, int], str], dict[str, str]]:
        """The predictions found for ``sets`` (stem → its questions), and the sets whose
        predictions are absent or misaligned (stem → why, naming the file expected)."""
        found: dict[tuple[str, int], str] = {}
        problems: dict[str, str] = {}
        sizes = {stem: len(questions) for stem, questions in sets.items()}
        single = None if self.path.is_dir() else _bird_object(self.path)
        if single is not None:
            for stem, questions in sets.items():
                got, _ = _bird_positions(self.path, single, questions)
                if got:
                    found.update(((stem, i), sql) for i, sql in got.items())
        elif not self.path.is_dir():
            if not _is_jsonl(self.path):
                raise InvalidTableError(
                    "malformed_prediction",
                    f"{self.path}: a single file must be JSON lines naming each question's set "
                    "('id': '<set>:<index>') or BIRD's predictions object; give a folder of "
                    "<set>.sql files otherwise",
                )
            found = _read_jsonl(self.path, None)
        for stem, size in sizes.items():
            if self.path.is_dir():
                path = self._file_of(stem)
                if path is None:
                    expected = self.path / f"{stem}.sql"
                    problems[stem] = f"no predictions: expected {expected} (or .txt, .jsonl, .json)"
                    continue
                bird = _bird_object(path)
                if bird is not None:
                    got, problem = _bird_positions(path, bird, sets[stem])
                    if problem is not None:
                        problems[stem] = problem
                    else:
                        found.update(((stem, i), sql) for i, sql in got.items())
                    continue
                if not _is_jsonl(path):
                    lines = [
                        _plain_sql(line) for line in path.read_text(encoding="utf-8").splitlines()
                    ]
                    while lines and not lines[-1].strip():
                        lines.pop()
                    if len(lines) != size:
                        problems[stem] = (
                            f"{path}: {len(lines)} lines for {size} questions "
                            "(one SQL per line, in order)"
                        )
                    else:
                        found.update(((stem, i), sql) for i, sql in enumerate(lines))
                    continue
                found.update(_read_jsonl(path, stem))
            where = self._file_of(stem) if self.path.is_dir() else self.path
            given = {i for s, i in found if s == stem}
            if not given:
                problems[stem] = f"no predictions: {where} names no question of set {stem}"
            elif given != set(range(size)):
                problems[stem] = (
                    f"{where}: predictions for {len(given & set(range(size)))} of the {size} "
                    f"questions of set {stem}"
                    + (
                        f" (and {len(given - set(range(size)))} beyond them)"
                        if given - set(range(size))
                        else ""
                    )
                )
        return found, problems

    def check(self, sets: Sequence[QuestionSet]) -> dict[str, str]:
        """The sets of ``sets`` whose predictions are absent or not one per question: set
        stem → why, naming the file expected. Such a set cannot be scored."""
        return self._read({s.stem: s.questions for s in sets})[1]

    def predict(self, questions: Sequence[Question], directory: EvalDirectory) -> list[Prediction]:
        by_set: dict[str, list[Question]] = {}
        for q in questions:
            by_set.setdefault(q.set, []).append(q)
        found, problems = self._read(by_set)
        out = []
        for q in questions:
            sql = found.get((q.set, q.position))
            if q.set in problems:
                out.append(Prediction(None, problems[q.set]))
            elif sql is not None:
                out.append(Prediction(sql))
            else:
                out.append(Prediction(None, f"no prediction for {q.id}"))
        return out


# -- a Python function ----------------------------------------------------------------------------
class EntryPointPredictions:
    """``module:function`` called once per question with ``question``, ``db_id``, ``schema``."""

    def __init__(self, spec: str) -> None:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise InvalidTableError("bad_entry_point", f"{spec!r}: expected module:function")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise InvalidTableError("bad_entry_point", f"{spec}: {exc}") from None
        function = getattr(module, attr, None)
        if not callable(function):
            raise InvalidTableError("bad_entry_point", f"{spec}: {attr!r} is not a function")
        self.function: Callable[..., Any] = function
        self.name = spec

    def predict(self, questions: Sequence[Question], directory: EvalDirectory) -> list[Prediction]:
        from tqdm.auto import tqdm

        out = []
        for q in tqdm(questions, desc="predicting", unit="question", mininterval=2.0):
            try:
                sql = self.function(
                    question=q.question, db_id=q.db_id, schema=directory.entries[q.db_id]
                )
            except Exception as exc:  # a failing model is that question's miss, not ours
                out.append(Prediction(None, f"{type(exc).__name__}: {exc}"))
                continue
            if isinstance(sql, str):
                out.append(Prediction(sql))
            else:
                out.append(Prediction(None, f"returned {type(sql).__name__}, not a string"))
        return out


# -- an HTTP endpoint -----------------------------------------------------------------------------
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class EndpointPredictions:
    """``POST {question, db_id, schema}`` → ``{sql}`` for each question, concurrently."""

    def __init__(
        self,
        url: str,
        concurrency: int = 8,
        retries: int = 3,
        timeout: float = 60.0,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: float = 0.5,
    ) -> None:
        self.url = url
        self.name = url
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        self.timeout = timeout
        self.headers = headers or {}
        self.transport = transport
        self.backoff = backoff

    def predict(self, questions: Sequence[Question], directory: EvalDirectory) -> list[Prediction]:
        return asyncio.run(self._predict_all(questions, directory))

    async def _predict_all(
        self, questions: Sequence[Question], directory: EvalDirectory
    ) -> list[Prediction]:
        from tqdm.auto import tqdm

        # A question asked on the same database in several sets (a perturbation that left its
        # tables alone) is sent once.
        unique = list({(q.question, q.db_id): q for q in questions}.values())
        limit = asyncio.Semaphore(self.concurrency)
        bar = tqdm(total=len(unique), desc="predicting", unit="question", mininterval=2.0)
        async with httpx.AsyncClient(
            transport=self.transport, timeout=self.timeout, headers=self.headers
        ) as client:

            async def one(q: Question) -> Prediction:
                async with limit:
                    payload = {
                        "question": q.question,
                        "db_id": q.db_id,
                        "schema": directory.entries[q.db_id],
                    }
                    result = await self._post(client, payload)
                bar.update(1)
                return result

            try:
                answers = await asyncio.gather(*(one(q) for q in unique))
            finally:
                bar.close()
        by_key = {(q.question, q.db_id): a for q, a in zip(unique, answers, strict=True)}
        return [by_key[(q.question, q.db_id)] for q in questions]

    async def _post(self, client: httpx.AsyncClient, payload: dict[str, Any]) -> Prediction:
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self._delay(attempt, problem))
            try:
                response = await client.post(self.url, json=payload)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code in _RETRY_STATUS:
                problem = f"HTTP {response.status_code}"
                retry_after = response.headers.get("retry-after", "")
                if retry_after.replace(".", "", 1).isdigit():
                    problem += f" retry-after {retry_after}"
                continue
            if response.status_code >= 400:
                return Prediction(None, f"HTTP {response.status_code}: {response.text[:200]}")
            try:
                body = response.json()
            except ValueError:
                return Prediction(None, "the endpoint answered something other than JSON")
            sql = body.get("sql") if isinstance(body, dict) else None
            if not isinstance(sql, str):
                return Prediction(None, "the endpoint's answer has no string 'sql'")
            return Prediction(sql)
        return Prediction(None, f"gave up after {self.retries + 1} attempts: {problem}")

    def _delay(self, attempt: int, problem: str) -> float:
        if " retry-after " in problem:
            return min(float(problem.rsplit(" ", 1)[1]), 60.0)
        return self.backoff * 2 ** (attempt - 1) * (1 + random.random() / 2)
