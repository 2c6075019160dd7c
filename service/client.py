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
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

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


class ServiceError(Exception):
    """An error answer of the service: HTTP status, problem code and message."""

    def __init__(self, status_code: int, problem: str, message: str) -> None:
        super().__init__(f"{status_code} {problem}: {message}")
        self.status_code = status_code
        self.problem = problem
        self.message = message

    @classmethod
    def from_response(cls, response: httpx.Response) -> ServiceError:
        try:
            body = Problem.model_validate_json(response.content)
            return cls(response.status_code, body.problem, body.message)
        except ValueError:
            return cls(response.status_code, f"http_{response.status_code}", response.text[:500])


def _json(obj: Any) -> Any:
    return obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj


def _tables_body(
    tables: Sequence[Table | Mapping[str, Any]],
    options: PerturbOptions | Mapping[str, Any] | None,
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "kind": "tables",
        "tables": [_json(t) for t in tables],
        "options": _options(options, fields),
    }


def _spider_body(
    payload: Sequence[Mapping[str, Any]],
    options: PerturbOptions | Mapping[str, Any] | None,
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    return {"kind": "spider", "spider": list(payload), "options": _options(options, fields)}


def _dataset_body(
    spider: Sequence[Mapping[str, Any]],
    questions: Sequence[Mapping[str, Any]],
    kinds: Sequence[str],
    seeds: Sequence[int],
    options: PerturbOptions | Mapping[str, Any] | None,
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "kind": "dataset",
        "spider": list(spider),
        "questions": list(questions),
        "kinds": list(kinds),
        "seeds": list(seeds),
        "options": _options(options, fields),
    }


def _eval_body(
    spider: Sequence[Mapping[str, Any]],
    sets: Mapping[str, Sequence[Mapping[str, Any]]],
    predictions: Mapping[str, Sequence[str | None]] | None,
    endpoint: str | None,
    model: str | None,
    timeout: float,
) -> dict[str, Any]:
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
    return body


def _options(options: PerturbOptions | Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Any:
    base = PerturbOptions.model_validate(_json(options) if options is not None else {})
    return base.model_copy(update=dict(fields)).model_dump(mode="json") if fields else _json(base)


class _Base:
    """What both clients share: URL, headers, retry policy and response decoding."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        retries: int,
        backoff: float,
        max_backoff: float,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

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
    def _decode(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise ServiceError.from_response(response)
        return response.json()


class Client(_Base):
    """Synchronous client. ``http_client`` lets tests pass e.g. Starlette's TestClient."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, retries, backoff, max_backoff)
        self._http = http_client or httpx.Client(timeout=timeout)
        self._owns_http = http_client is None

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _request(self, method: str, path: str, idempotent: bool = True, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    method, self.base_url + path, headers=self.headers, **kwargs
                )
            except httpx.TransportError as exc:
                if attempt >= self.retries or not self._retryable(exc, idempotent):
                    raise
                time.sleep(self._delay(attempt, None))
            else:
                if response.status_code not in _RETRY_STATUS or attempt >= self.retries:
                    return self._decode(response)
                time.sleep(self._delay(attempt, response))
            attempt += 1

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

    def perturb(
        self,
        table: Table | Mapping[str, Any],
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> PerturbationResult:
        """RPL and ADD names for one table (options as a model, a dict or keywords)."""
        body = {"table": _json(table), "options": _options(options, option_fields)}
        return PerturbationResult.model_validate(self._request("POST", "/v1/perturb", json=body))

    def judge(
        self,
        pairs: Sequence[JudgePair | Mapping[str, Any]],
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> list[JudgeScore]:
        """Bidirectional entailment scores and verdicts, one per pair."""
        body = {
            "pairs": [_json(p) for p in pairs],
            "rpl_threshold": rpl_threshold,
            "add_threshold": add_threshold,
        }
        return JudgeResponse.model_validate(self._request("POST", "/v1/judge", json=body)).scores

    def submit(
        self,
        tables: Sequence[Table | Mapping[str, Any]],
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> Job:
        """Start a batch job over tables; returns at once (202)."""
        body = _tables_body(tables, options, option_fields)
        return self._submit(body)

    def submit_spider(
        self,
        payload: Sequence[Mapping[str, Any]],
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> Job:
        """Start a batch job over a Spider ``tables.json`` payload."""
        body = _spider_body(payload, options, option_fields)
        return self._submit(body)

    def submit_dataset(
        self,
        spider: Sequence[Mapping[str, Any]],
        questions: Sequence[Mapping[str, Any]],
        kinds: Sequence[str] = ("rpl", "add"),
        seeds: Sequence[int] = (0, 1, 2, 3, 4),
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> Job:
        """Start the ADVETA protocol over a Spider dataset (``tables.json`` entries and
        question records); one result item per database, holding a SpiderDatabaseResult."""
        return self._submit(_dataset_body(spider, questions, kinds, seeds, options, option_fields))

    def submit_eval(
        self,
        spider: Sequence[Mapping[str, Any]],
        sets: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        predictions: Mapping[str, Sequence[str | None]] | None = None,
        endpoint: str | None = None,
        model: str | None = None,
        timeout: float = 10.0,
    ) -> Job:
        """Score a text-to-SQL model on perturbed sets (``tables.json`` entries and question
        records per set, as ``cta dataset perturb`` writes them): give ``predictions`` (per
        set, one SQL per record), an allowed ``endpoint`` or a built-in ``model``. One item
        per source database (``JobItem.eval_result``); :meth:`Job.report` aggregates."""
        return self._submit(_eval_body(spider, sets, predictions, endpoint, model, timeout))

    def _report(self, job_id: str) -> EvalReport:
        return EvalReport.model_validate(self._request("GET", f"/v1/jobs/{job_id}/report"))

    def _submit(self, body: dict[str, Any]) -> Job:
        status = JobStatus.model_validate(
            self._request("POST", "/v1/jobs", idempotent=False, json=body)
        )
        return Job(self, status)

    def job(self, job_id: str) -> Job:
        """A handle on an existing job (fetches its status)."""
        return Job(self, self._status(job_id))

    def jobs(self, limit: int = 100) -> list[JobStatus]:
        """The caller's jobs, newest first."""
        return JobList.model_validate(
            self._request("GET", "/v1/jobs", params={"limit": limit})
        ).jobs

    def _status(self, job_id: str) -> JobStatus:
        return JobStatus.model_validate(self._request("GET", f"/v1/jobs/{job_id}"))

    def _page(self, job_id: str, offset: int, limit: int) -> JobResultsPage:
        data = self._request(
            "GET", f"/v1/jobs/{job_id}/results", params={"offset": offset, "limit": limit}
        )
        return JobResultsPage.model_validate(data)

    def _cancel(self, job_id: str) -> JobStatus:
        return JobStatus.model_validate(self._request("DELETE", f"/v1/jobs/{job_id}"))


class Job:
    """A submitted job: poll it, wait for it, read its results, cancel it."""

    def __init__(self, client: Client, status: JobStatus) -> None:
        self._client = client
        self.status = status

    @property
    def id(self) -> str:
        return self.status.id

    def refresh(self) -> JobStatus:
        """Fetch the current status."""
        self.status = self._client._status(self.id)
        return self.status

    def wait(
        self, progress: bool = False, poll_interval: float = 0.5, timeout: float | None = None
    ) -> JobStatus:
        """Poll until the job is done or cancelled; ``progress`` shows a tqdm bar."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with _Progress(self.status, progress) as bar:
            while not self.refresh().finished:
                bar.update(self.status)
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"job {self.id} not finished after {timeout} s")
                time.sleep(poll_interval)
            bar.update(self.status)
        return self.status

    def results(self, page_size: int = 100) -> Iterator[JobItem]:
        """Every item in table order (pending ones too, if the job is not finished)."""
        offset: int | None = 0
        while offset is not None:
            page = self._client._page(self.id, offset, page_size)
            yield from page.items
            offset = page.next_offset

    def cancel(self) -> JobStatus:
        """Cancel the remaining tables."""
        self.status = self._client._cancel(self.id)
        return self.status

    def report(self) -> EvalReport:
        """An eval job's report over the items done so far (pre/post per kind and seed)."""
        return self._client._report(self.id)


class AsyncClient(_Base):
    """Asynchronous client; pass ``transport=httpx.ASGITransport(app)`` to test in-process."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, retries, backoff, max_backoff)
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.aclose()

    async def _request(self, method: str, path: str, idempotent: bool = True, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    method, self.base_url + path, headers=self.headers, **kwargs
                )
            except httpx.TransportError as exc:
                if attempt >= self.retries or not self._retryable(exc, idempotent):
                    raise
                await asyncio.sleep(self._delay(attempt, None))
            else:
                if response.status_code not in _RETRY_STATUS or attempt >= self.retries:
                    return self._decode(response)
                await asyncio.sleep(self._delay(attempt, response))
            attempt += 1

    async def ready(self) -> Readiness:
        """Readiness (models and index loaded), without retrying."""
        response = await self._http.get(self.base_url + "/readyz")
        return Readiness.model_validate_json(response.content)

    async def perturb(
        self,
        table: Table | Mapping[str, Any],
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> PerturbationResult:
        """RPL and ADD names for one table."""
        body = {"table": _json(table), "options": _options(options, option_fields)}
        data = await self._request("POST", "/v1/perturb", json=body)
        return PerturbationResult.model_validate(data)

    async def judge(
        self,
        pairs: Sequence[JudgePair | Mapping[str, Any]],
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> list[JudgeScore]:
        """Bidirectional entailment scores and verdicts, one per pair."""
        body = {
            "pairs": [_json(p) for p in pairs],
            "rpl_threshold": rpl_threshold,
            "add_threshold": add_threshold,
        }
        data = await self._request("POST", "/v1/judge", json=body)
        return JudgeResponse.model_validate(data).scores

    async def submit(
        self,
        tables: Sequence[Table | Mapping[str, Any]],
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> AsyncJob:
        """Start a batch job over tables; returns at once (202)."""
        body = _tables_body(tables, options, option_fields)
        return await self._submit(body)

    async def submit_spider(
        self,
        payload: Sequence[Mapping[str, Any]],
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> AsyncJob:
        """Start a batch job over a Spider ``tables.json`` payload."""
        body = _spider_body(payload, options, option_fields)
        return await self._submit(body)

    async def submit_dataset(
        self,
        spider: Sequence[Mapping[str, Any]],
        questions: Sequence[Mapping[str, Any]],
        kinds: Sequence[str] = ("rpl", "add"),
        seeds: Sequence[int] = (0, 1, 2, 3, 4),
        options: PerturbOptions | Mapping[str, Any] | None = None,
        **option_fields: Any,
    ) -> AsyncJob:
        """Start the ADVETA protocol over a Spider dataset (see :meth:`Client.submit_dataset`)."""
        return await self._submit(
            _dataset_body(spider, questions, kinds, seeds, options, option_fields)
        )

    async def submit_eval(
        self,
        spider: Sequence[Mapping[str, Any]],
        sets: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        predictions: Mapping[str, Sequence[str | None]] | None = None,
        endpoint: str | None = None,
        model: str | None = None,
        timeout: float = 10.0,
    ) -> AsyncJob:
        """Score a text-to-SQL model on perturbed sets (see :meth:`Client.submit_eval`)."""
        return await self._submit(_eval_body(spider, sets, predictions, endpoint, model, timeout))

    async def _report(self, job_id: str) -> EvalReport:
        data = await self._request("GET", f"/v1/jobs/{job_id}/report")
        return EvalReport.model_validate(data)

    async def _submit(self, body: dict[str, Any]) -> AsyncJob:
        data = await self._request("POST", "/v1/jobs", idempotent=False, json=body)
        return AsyncJob(self, JobStatus.model_validate(data))

    async def job(self, job_id: str) -> AsyncJob:
        """A handle on an existing job (fetches its status)."""
        return AsyncJob(self, await self._status(job_id))

    async def _status(self, job_id: str) -> JobStatus:
        return JobStatus.model_validate(await self._request("GET", f"/v1/jobs/{job_id}"))

    async def _page(self, job_id: str, offset: int, limit: int) -> JobResultsPage:
        data = await self._request(
            "GET", f"/v1/jobs/{job_id}/results", params={"offset": offset, "limit": limit}
        )
        return JobResultsPage.model_validate(data)

    async def _cancel(self, job_id: str) -> JobStatus:
        return JobStatus.model_validate(await self._request("DELETE", f"/v1/jobs/{job_id}"))


class AsyncJob:
    """A submitted job, asynchronously."""

    def __init__(self, client: AsyncClient, status: JobStatus) -> None:
        self._client = client
        self.status = status

    @property
    def id(self) -> str:
        return self.status.id

    async def refresh(self) -> JobStatus:
        self.status = await self._client._status(self.id)
        return self.status

    async def wait(
        self, progress: bool = False, poll_interval: float = 0.5, timeout: float | None = None
    ) -> JobStatus:
        """Poll until the job is done or cancelled; ``progress`` shows a tqdm bar."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with _Progress(self.status, progress) as bar:
            while not (await self.refresh()).finished:
                bar.update(self.status)
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"job {self.id} not finished after {timeout} s")
                await asyncio.sleep(poll_interval)
            bar.update(self.status)
        return self.status

    async def results(self, page_size: int = 100) -> AsyncIterator[JobItem]:
        """Every item in table order."""
        offset: int | None = 0
        while offset is not None:
            page = await self._client._page(self.id, offset, page_size)
            for item in page.items:
                yield item
            offset = page.next_offset

    async def cancel(self) -> JobStatus:
        self.status = await self._client._cancel(self.id)
        return self.status

    async def report(self) -> EvalReport:
        """An eval job's report over the items done so far."""
        return await self._client._report(self.id)


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
