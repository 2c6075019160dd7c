"""Client SDK of the CTA service: :class:`Client` (sync) and :class:`AsyncClient`, on httpx.

Typed with the server's own models (:mod:`service.schemas`)::

    from service.client import Client

    with Client("http://127.0.0.1:8000", api_key="...") as cta:
        result = cta.perturb(table, seed=1, samples=2)      # PerturbationResult
        scores = cta.judge(pairs)                           # list[JudgeScore]
        job = cta.submit(tables)                            # Job
        job.wait(progress=True)                             # tqdm bar
        for item in job.results():                          # JobItem, in table order
            ...

Requests the server did not process — 429 (queue full), 503 (still loading), refused
connections — are retried with exponential backoff, honouring ``Retry-After``. Pure
operations (perturb, judge, reads) are also retried on other transport errors; a job
submission is not, so a job is never created twice.

One file: both clients are built from the same call descriptions (``_perturb``, ``_jobs`` …),
side by side, so a call added to one is seen missing from the other (a test checks parity).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypedDict, TypeVar, Unpack

import httpx
from pydantic import BaseModel

from service.schemas import (
    EvalReport,
    JobItem,
    JobList,
    JobResultsPage,
    JobStatus,
    JudgePair,
    JudgeResponse,
    JudgeScore,
    PerturbationResult,
    PerturbOptions,
    Problem,
    Readiness,
    Table,
)

__all__ = ["AsyncClient", "AsyncJob", "Client", "Job", "ServiceError"]

DEFAULT_URL = "http://127.0.0.1:8000"
_RETRY_STATUS = (429, 503)
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")
C = TypeVar("C")
#: what sending a request gave: an answer, or the transport error that stopped it
_Outcome = httpx.Response | httpx.TransportError


class ServiceError(Exception):
    """An error answer of the service: HTTP status, problem code and message, and — on a
    422 — ``location``, where in the request the problem is (``body.table.rows.0.1``,
    ``query.limit``; ``body`` alone for the body as a whole; None on other answers)."""

    def __init__(
        self, status_code: int, problem: str, message: str, location: str | None = None
    ) -> None:
        super().__init__(f"{status_code} {problem}: {message}")
        self.status_code = status_code
        self.problem = problem
        self.message = message
        self.location = location

    @classmethod
    def from_response(cls, response: httpx.Response) -> ServiceError:
        try:
            body = Problem.model_validate_json(response.content)
            return cls(response.status_code, body.problem, body.message, body.location)
        except ValueError:
            return cls(response.status_code, f"http_{response.status_code}", response.text[:500])


def _json(obj: Any) -> Any:
    return obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj


def _options(options: PerturbOptions | Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Any:
    base = PerturbOptions.model_validate(_json(options) if options is not None else {})
    return base.model_copy(update=dict(fields)).model_dump(mode="json") if fields else _json(base)


# -- the operations, once: each builds the request and says how to read its answer -----------------
@dataclass(frozen=True)
class _Call(Generic[T]):
    """One request of the API and the parser of its answer; both clients send it."""

    method: str
    path: str
    parse: Callable[[Any], T]
    idempotent: bool = True  # may be resent after a transport error
    params: dict[str, Any] | None = None
    json: Any = None


def _perturb(
    table: Table | Mapping[str, Any],
    options: PerturbOptions | Mapping[str, Any] | None = None,
    **option_fields: Any,
) -> _Call[PerturbationResult]:
    """RPL and ADD names for one table (options as a model, a dict or keywords)."""
    body = {"table": _json(table), "options": _options(options, option_fields)}
    return _Call("POST", "/v1/perturb", PerturbationResult.model_validate, json=body)


def _judge(
    pairs: Sequence[JudgePair | Mapping[str, Any]],
    rpl_threshold: float | None = None,
    add_threshold: float | None = None,
) -> _Call[list[JudgeScore]]:
    """Bidirectional entailment scores and verdicts, one per pair."""
    body = {
        "pairs": [_json(p) for p in pairs],
        "rpl_threshold": rpl_threshold,
        "add_threshold": add_threshold,
    }
    return _Call(
        "POST", "/v1/judge", lambda data: JudgeResponse.model_validate(data).scores, json=body
    )


def _new_job(body: dict[str, Any]) -> _Call[JobStatus]:
    """A job submission: never resent after a transport error, so a job is never created twice."""
    return _Call("POST", "/v1/jobs", JobStatus.model_validate, idempotent=False, json=body)


def _submit(
    tables: Sequence[Table | Mapping[str, Any]],
    options: PerturbOptions | Mapping[str, Any] | None = None,
    **option_fields: Any,
) -> _Call[JobStatus]:
    """Start a batch job over tables; returns at once (202)."""
    return _new_job(
        {
            "kind": "tables",
            "tables": [_json(t) for t in tables],
            "options": _options(options, option_fields),
        }
    )


def _submit_spider(
    payload: Sequence[Mapping[str, Any]],
    options: PerturbOptions | Mapping[str, Any] | None = None,
    **option_fields: Any,
) -> _Call[JobStatus]:
    """Start a batch job over a Spider ``tables.json`` payload."""
    return _new_job(
        {"kind": "spider", "spider": list(payload), "options": _options(options, option_fields)}
    )


def _submit_dataset(
    spider: Sequence[Mapping[str, Any]],
    questions: Sequence[Mapping[str, Any]],
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    options: PerturbOptions | Mapping[str, Any] | None = None,
    *,
    format: str = "spider",
    descriptions: Mapping[str, Mapping[str, Sequence[Mapping[str, str]]]] | None = None,
    **option_fields: Any,
) -> _Call[JobStatus]:
    """Start the ADVETA protocol over a Spider dataset (``tables.json`` entries and
    question records) — or a BIRD one, ``format="bird"`` (``dev_tables.json`` entries,
    ``dev.json`` records, optionally the description rows by database and table); one
    result item per database, holding a SpiderDatabaseResult."""
    body: dict[str, Any] = {
        "kind": "dataset",
        "spider": list(spider),
        "questions": list(questions),
        "kinds": list(kinds),
        "seeds": list(seeds),
        "options": _options(options, option_fields),
    }
    if format != "spider":
        body["format"] = format
    if descriptions is not None:
        body["descriptions"] = {
            db: {t: [dict(r) for r in rows] for t, rows in tables.items()}
            for db, tables in descriptions.items()
        }
    return _new_job(body)


def _submit_eval(
    spider: Sequence[Mapping[str, Any]],
    sets: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    predictions: Mapping[str, Sequence[str | None]] | None = None,
    endpoint: str | None = None,
    model: str | None = None,
    timeout: float = 10.0,
) -> _Call[JobStatus]:
    """Score a text-to-SQL model on perturbed sets (``tables.json`` entries and question
    records per set, as ``cta dataset perturb`` writes them): give ``predictions`` (per
    set, one SQL per record), an allowed ``endpoint`` or a built-in ``model``. One item
    per source database (``JobItem.eval_result``); :meth:`Job.report` aggregates."""
    body: dict[str, Any] = {
        "kind": "eval",
        "spider": list(spider),
        "sets": {stem: list(records) for stem, records in sets.items()},
        "timeout": timeout,
    }
    if predictions is not None:
        body["predictions"] = {stem: list(sqls) for stem, sqls in predictions.items()}
    if endpoint is not None:
        body["endpoint"] = endpoint
    if model is not None:
        body["model"] = model
    return _new_job(body)


def _jobs(limit: int = 100) -> _Call[list[JobStatus]]:
    """The caller's jobs, newest first."""
    parse: Callable[[Any], list[JobStatus]] = lambda data: JobList.model_validate(data).jobs  # noqa: E731
    return _Call("GET", "/v1/jobs", parse, params={"limit": limit})


def _status(job_id: str) -> _Call[JobStatus]:
    return _Call("GET", f"/v1/jobs/{job_id}", JobStatus.model_validate)


def _page(job_id: str, offset: int, limit: int) -> _Call[JobResultsPage]:
    params = {"offset": offset, "limit": limit}
    return _Call("GET", f"/v1/jobs/{job_id}/results", JobResultsPage.model_validate, params=params)


def _cancel(job_id: str) -> _Call[JobStatus]:
    return _Call("DELETE", f"/v1/jobs/{job_id}", JobStatus.model_validate)


def _report(job_id: str) -> _Call[EvalReport]:
    return _Call("GET", f"/v1/jobs/{job_id}/report", EvalReport.model_validate)


def _manifest(job_id: str) -> _Call[dict[str, Any]]:
    return _Call("GET", f"/v1/jobs/{job_id}/manifest", dict)


def _value(_: object, value: T) -> T:
    return value


def _sync(
    build: Callable[P, _Call[T]], then: Callable[[Client, T], R]
) -> Callable[Concatenate[Client, P], R]:
    """A :class:`Client` method: sends what ``build`` builds (its signature and docs), then
    ``then(client, answer)`` (:func:`_value`, or :class:`Job` for a submission)."""

    @functools.wraps(build)
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return then(self, self._run(build(*args, **kwargs)))

    return method


def _async(
    build: Callable[P, _Call[T]], then: Callable[[AsyncClient, T], R]
) -> Callable[Concatenate[AsyncClient, P], Awaitable[R]]:
    """An :class:`AsyncClient` method, as :func:`_sync`."""

    @functools.wraps(build)
    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return then(self, await self._run(build(*args, **kwargs)))

    return method


class _Policy(TypedDict, total=False):
    """Keywords both clients take: the request ``timeout`` (s, default 120), ``retries``
    (default 5), and the exponential ``backoff`` (default 0.5 s) capped at ``max_backoff``
    (default 30 s)."""

    timeout: float
    retries: int
    backoff: float
    max_backoff: float


class _Base:
    """What both clients share: URL, headers, retry policy and response decoding."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float = 120.0,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def _request_args(self, call: _Call[Any]) -> dict[str, Any]:
        """The keywords of the HTTP client's ``request`` for ``call``."""
        args: dict[str, Any] = {
            "method": call.method,
            "url": self.base_url + call.path,
            "headers": self.headers,
        }
        if call.params is not None:
            args["params"] = call.params
        if call.json is not None:
            args["json"] = call.json
        return args

    def _retry_delay(self, call: _Call[Any], attempt: int, outcome: _Outcome) -> float | None:
        """How long to wait before sending ``call`` again, or None when ``outcome`` (an answer)
        is final; a transport error that may not be retried is raised."""
        if isinstance(outcome, httpx.TransportError):
            if attempt >= self.retries or not self._retryable(outcome, call.idempotent):
                raise outcome
            return self._delay(attempt, None)
        if outcome.status_code not in _RETRY_STATUS or attempt >= self.retries:
            return None
        return self._delay(attempt, outcome)

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            retry_after = response.headers.get("Retry-After", "")
            if retry_after.isdigit():
                return min(float(retry_after), self.max_backoff)
        return min(self.backoff * 2**attempt, self.max_backoff)

    def _retryable(self, exc: Exception, idempotent: bool) -> bool:
        if isinstance(exc, _UNSENT):
            return True
        return idempotent and isinstance(exc, httpx.TransportError)

    @staticmethod
    def _decode(call: _Call[T], outcome: _Outcome) -> T:
        """The parsed answer (a final one: :meth:`_retry_delay` said None)."""
        if isinstance(outcome, Exception):
            raise outcome
        if outcome.status_code >= 400:
            raise ServiceError.from_response(outcome)
        return call.parse(outcome.json())


class _Handle(Generic[C]):
    """A submitted job on a client: its last known status."""

    def __init__(self, client: C, status: JobStatus) -> None:
        self._client = client
        self.status = status

    @property
    def id(self) -> str:
        return self.status.id


class Job(_Handle["Client"]):
    """A submitted job: poll it, wait for it, read its results, cancel it."""

    def refresh(self) -> JobStatus:
        """Fetch the current status."""
        self.status = self._client._run(_status(self.id))
        return self.status

    def wait(
        self, progress: bool = False, poll_interval: float = 0.5, timeout: float | None = None
    ) -> JobStatus:
        """Poll until the job is done or cancelled; ``progress`` shows a tqdm bar."""
        with _Waiting(self.status, progress, timeout) as waiting:
            while waiting.more(self.refresh()):
                time.sleep(poll_interval)
        return self.status

    def results(self, page_size: int = 100) -> Iterator[JobItem]:
        """Every item in table order (pending ones too, if the job is not finished)."""
        offset: int | None = 0
        while offset is not None:
            page = self._client._run(_page(self.id, offset, page_size))
            yield from page.items
            offset = page.next_offset

    def cancel(self) -> JobStatus:
        """Cancel the remaining tables."""
        self.status = self._client._run(_cancel(self.id))
        return self.status

    def report(self) -> EvalReport:
        """An eval job's report over the items done so far (pre/post per kind and seed)."""
        return self._client._run(_report(self.id))

    def manifest(self) -> dict[str, Any]:
        """The job's provenance (tool, settings, judge and index hashes), from submission."""
        return self._client._run(_manifest(self.id))


class AsyncJob(_Handle["AsyncClient"]):
    """A submitted job, asynchronously (as :class:`Job`)."""

    async def refresh(self) -> JobStatus:
        self.status = await self._client._run(_status(self.id))
        return self.status

    async def wait(
        self, progress: bool = False, poll_interval: float = 0.5, timeout: float | None = None
    ) -> JobStatus:
        with _Waiting(self.status, progress, timeout) as waiting:
            while waiting.more(await self.refresh()):
                await asyncio.sleep(poll_interval)
        return self.status

    async def results(self, page_size: int = 100) -> AsyncIterator[JobItem]:
        """Every item in table order."""
        offset: int | None = 0
        while offset is not None:
            page = await self._client._run(_page(self.id, offset, page_size))
            for item in page.items:
                yield item
            offset = page.next_offset

    async def cancel(self) -> JobStatus:
        self.status = await self._client._run(_cancel(self.id))
        return self.status

    async def report(self) -> EvalReport:
        """An eval job's report over the items done so far."""
        return await self._client._run(_report(self.id))

    async def manifest(self) -> dict[str, Any]:
        """The job's provenance, from submission."""
        return await self._client._run(_manifest(self.id))


class _Waiting:
    """Polling a job until it is finished: its progress bar and its deadline."""

    def __init__(self, status: JobStatus, progress: bool, timeout: float | None) -> None:
        self._bar = _Progress(status, progress)
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout

    def more(self, status: JobStatus) -> bool:
        """Whether to poll again after ``status`` (TimeoutError past the deadline)."""
        self._bar.update(status)
        if status.finished:
            return False
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise TimeoutError(f"job {status.id} not finished after {self._timeout} s")
        return True

    def __enter__(self) -> _Waiting:
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(*exc)


class Client(_Base):
    """Synchronous client. ``http_client`` lets tests pass e.g. Starlette's TestClient."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        http_client: httpx.Client | None = None,
        **policy: Unpack[_Policy],
    ) -> None:
        super().__init__(base_url, api_key, **policy)
        self._http = http_client or httpx.Client(timeout=self.timeout)
        self._owns_http = http_client is None

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _run(self, call: _Call[T]) -> T:
        """Send ``call``, retrying as :meth:`_retry_delay` says; its parsed answer."""
        for attempt in itertools.count():
            try:
                outcome: _Outcome = self._http.request(**self._request_args(call))
            except httpx.TransportError as exc:
                outcome = exc
            if (delay := self._retry_delay(call, attempt, outcome)) is None:
                return self._decode(call, outcome)
            time.sleep(delay)
        raise AssertionError("unreachable")

    # -- service ------------------------------------------------------------------------------
    def health(self) -> bool:
        """True when the process answers /healthz."""
        try:
            return self._http.get(self.base_url + "/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def ready(self) -> Readiness:
        """Readiness (models and index loaded), without retrying."""
        response = self._http.get(self.base_url + "/readyz")
        return Readiness.model_validate_json(response.content)

    perturb = _sync(_perturb, _value)
    judge = _sync(_judge, _value)
    submit = _sync(_submit, Job)
    submit_spider = _sync(_submit_spider, Job)
    submit_dataset = _sync(_submit_dataset, Job)
    submit_eval = _sync(_submit_eval, Job)
    jobs = _sync(_jobs, _value)

    def job(self, job_id: str) -> Job:
        """A handle on an existing job (fetches its status)."""
        return Job(self, self._run(_status(job_id)))


class AsyncClient(_Base):
    """Asynchronous client; pass ``transport=httpx.ASGITransport(app)`` to test in-process."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        **policy: Unpack[_Policy],
    ) -> None:
        super().__init__(base_url, api_key, **policy)
        self._http = httpx.AsyncClient(timeout=self.timeout, transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.aclose()

    async def _run(self, call: _Call[T]) -> T:
        """Send ``call``, retrying as :meth:`_retry_delay` says; its parsed answer."""
        for attempt in itertools.count():
            try:
                outcome: _Outcome = await self._http.request(**self._request_args(call))
            except httpx.TransportError as exc:
                outcome = exc
            if (delay := self._retry_delay(call, attempt, outcome)) is None:
                return self._decode(call, outcome)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def health(self) -> bool:
        """True when the process answers /healthz."""
        try:
            return (await self._http.get(self.base_url + "/healthz")).status_code == 200
        except httpx.TransportError:
            return False

    async def ready(self) -> Readiness:
        """Readiness (models and index loaded), without retrying."""
        response = await self._http.get(self.base_url + "/readyz")
        return Readiness.model_validate_json(response.content)

    perturb = _async(_perturb, _value)
    judge = _async(_judge, _value)
    submit = _async(_submit, AsyncJob)
    submit_spider = _async(_submit_spider, AsyncJob)
    submit_dataset = _async(_submit_dataset, AsyncJob)
    submit_eval = _async(_submit_eval, AsyncJob)
    jobs = _async(_jobs, _value)

    async def job(self, job_id: str) -> AsyncJob:
        """A handle on an existing job (fetches its status)."""
        return AsyncJob(self, await self._run(_status(job_id)))


class _Progress:
    """A tqdm bar over a job's finished tables (done + failed + cancelled), or nothing."""

    def __init__(self, status: JobStatus, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=status.total, desc=f"job {status.id[:8]}", unit="table")

    def update(self, status: JobStatus) -> None:
        if self._bar is None:
            return
        self._bar.n = status.done + status.failed + status.cancelled
        self._bar.set_postfix(failed=status.failed, refresh=False)
        self._bar.refresh()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
