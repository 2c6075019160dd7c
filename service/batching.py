"""Dynamic batching of concurrent HTTP requests into engine calls: admitted by the estimated
wait, cheapest first, and stopped when every client of a call has left.

* **Cost.** Every request carries its estimated work in judge pairs: a table's
  :func:`cta.pipeline.estimate_pairs` (an upper bound from its shape), a judge request's
  number of pairs.
* **Drain rate.** :attr:`Batcher.rate` is measured, in those estimated pairs per second of
  engine wall time (waiting for a job worker's turn at the engine included): a ratio of two
  exponentially decayed sums over engine calls (pairs, seconds), seeded with
  ``engine_pairs_per_second`` worth one second, so a tiny call barely moves it.
* **Admission.** :attr:`Batcher.backlog_pairs` is the cost of the queued requests plus what
  the running call has probably left. A request is admitted when its estimated wait
  ``(backlog + own cost) / rate`` is within ``max_queue_seconds`` (or when nothing is
  queued or running, so a request the budget allows is never refused forever), and while
  fewer than ``queue_size`` requests wait; otherwise :class:`Overloaded` (429) with
  ``Retry-After`` = the seconds until the backlog has drained enough to admit it.
* **Scheduling.** The consumer waits ``batch_wait_ms`` for company, then takes the cheapest
  waiting requests first (FIFO among equals; one that has waited over twice
  ``max_queue_seconds`` goes before all others). A batch holds ``max_batch_pairs`` of
  estimated work, or twice its first request's (so batching at most doubles the latency of
  the request it serves first), and never more than ``max_request_pairs``: a small request
  is not batched with a large one, and a request at the budget runs alone. Requests that can share an engine call (perturb with equal options, judge with
  equal thresholds) form one group, each group one call in a worker thread, so the event
  loop never blocks on model work. When a grouped call fails, its requests are retried one
  by one so one bad table cannot fail its neighbours.
* **Cancellation.** Cancelling the task that awaits a request (the route does when its
  client disconnects) takes it out of the queue; a perturb call whose requests were all
  cancelled stops at its next check (:class:`cta.pipeline.Cancelled`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cta.pipeline import Cancelled
from cta.results import JudgePair, JudgeScore, PerturbationResult, PerturbOptions
from cta.table import Table
from service.host import PipelineHost

log = logging.getLogger(__name__)

#: weight kept by the drain-rate sums at each engine call (the rest is the new call's)
_RATE_DECAY = 0.7


class Overloaded(RuntimeError):
    """The request cannot be admitted now; retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int, queue_size: int, message: str | None = None) -> None:
        super().__init__(
            message or f"the request queue is full (queue_size = {queue_size}); retry later"
        )
        self.retry_after = retry_after
        self.queue_size = queue_size


@dataclass(eq=False)
class _Request:
    group: tuple[str, str]  # requests with the same group share one engine call
    cost: int  # estimated judge pairs
    future: asyncio.Future[Any]
    seq: int = 0  # arrival order (FIFO among equal costs)
    enqueued: float = 0.0  # time.monotonic() at admission
    table: Table | None = None
    options: PerturbOptions | None = None
    pairs: Sequence[JudgePair] = field(default_factory=list)
    thresholds: tuple[float | None, float | None] = (None, None)
    cancelled: bool = False  # its client left; read by the worker thread's should_stop


class Batcher:
    """The queue and its consumer; ``start`` inside the app's lifespan, ``stop`` at shutdown.

    ``max_request_pairs``, ``max_queue_seconds`` and ``pairs_per_second`` (the drain rate's
    seed) default to the host's settings; costs come from :func:`cta.pipeline.estimate_pairs`
    (a judge request: two directed pairs per pair, the estimate's unit).
    """

    def __init__(
        self,
        host: PipelineHost,
        queue_size: int,
        max_batch_pairs: int,
        batch_wait_ms: int,
        *,
        max_request_pairs: int | None = None,
        max_queue_seconds: float | None = None,
        pairs_per_second: float | None = None,
    ) -> None:
        settings = host.settings
        self.host = host
        self.queue_size = queue_size
        self.max_request_pairs = max_request_pairs or settings.max_request_pairs
        self.max_batch_pairs = max_batch_pairs
        self.max_queue_seconds = max_queue_seconds or settings.max_queue_seconds
        self.batch_wait = batch_wait_ms / 1000
        seed = pairs_per_second or settings.engine_pairs_per_second
        self._rate_pairs, self._rate_seconds = seed, 1.0  # decayed sums: rate = ratio
        self._pending: list[_Request] = []
        self._next_batch: list[_Request] = []  # taken from the queue, waiting for their call
        self._running: list[_Request] = []
        self._running_cost = 0
        self._running_since = 0.0
        self._promised_at = 0.0  # monotonic time of the last slot promised by a 429
        self._arrived = asyncio.Event()
        self._seq = itertools.count()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cta-batch")
        self._task: asyncio.Task[None] | None = None
        self.batches = 0  # engine calls made (observability and tests)
        self.aborted = 0  # engine calls stopped because all their clients left

    async def start(self) -> None:
        self._task = asyncio.create_task(self._consume(), name="cta-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for request in [*self._pending, *self._next_batch, *self._running]:
            request.cancelled = True  # a running call stops at its next check
        self._executor.shutdown(wait=True, cancel_futures=True)

    # -- what the service can tell -------------------------------------------------------------
    @property
    def depth(self) -> int:
        """Requests waiting in the queue."""
        return len(self._pending)

    @property
    def rate(self) -> float:
        """Measured drain rate: estimated judge pairs per second of engine time."""
        return self._rate_pairs / self._rate_seconds

    @property
    def backlog_pairs(self) -> int:
        """Estimated pairs ahead of a new request: the queued ones, those taken for the
        current batch and not started, and the probable remainder of the running call."""
        queued = sum(r.cost for r in self._pending)
        queued += sum(r.cost for r in self._next_batch if not r.cancelled)
        running = 0.0
        if self._running:
            done = self.rate * (time.monotonic() - self._running_since)
            running = max(0.0, self._running_cost - done)
        return queued + math.ceil(running)

    # -- the two operations ------------------------------------------------------------------
    async def perturb(
        self, table: Table, options: PerturbOptions, cost: int | None = None
    ) -> PerturbationResult:
        """Perturb one table, batched with concurrent requests that use the same options.
        ``cost``: its :func:`~cta.pipeline.estimate_pairs` when the caller has it already."""
        request = _Request(
            group=("perturb", options.model_dump_json()),
            cost=max(1, self.host.estimate_pairs(table) if cost is None else cost),
            future=asyncio.get_running_loop().create_future(),
            table=table,
            options=options,
        )
        result: PerturbationResult = await self._submit(request)
        return result

    async def judge(
        self,
        pairs: Sequence[JudgePair],
        rpl_threshold: float | None,
        add_threshold: float | None,
    ) -> list[JudgeScore]:
        """Score pairs, batched with concurrent judge requests that use the same thresholds."""
        request = _Request(
            group=("judge", f"{rpl_threshold}|{add_threshold}"),
            cost=max(1, 2 * len(pairs)),  # both directions of each pair
            future=asyncio.get_running_loop().create_future(),
            pairs=pairs,
            thresholds=(rpl_threshold, add_threshold),
        )
        scores: list[JudgeScore] = await self._submit(request)
        return scores

    async def _submit(self, request: _Request) -> Any:
        self._admit(request.cost)
        request.seq = next(self._seq)
        request.enqueued = time.monotonic()
        self._pending.append(request)
        self._arrived.set()
        try:
            return await request.future
        except asyncio.CancelledError:
            self._cancel(request)
            raise

    def _admit(self, cost: int) -> None:
        """Raise :class:`Overloaded` unless a request of ``cost`` can be admitted now."""
        backlog, rate = self.backlog_pairs, self.rate
        wait = (backlog + cost) / rate
        if len(self._pending) >= self.queue_size:
            retry = self._retry_after(backlog, cost, rate)
            raise Overloaded(
                retry,
                self.queue_size,
                f"the request queue is full (queue_size = {self.queue_size}); "
                f"retry after {retry} s",
            )
        if backlog > 0 and wait > self.max_queue_seconds:
            retry = self._retry_after(backlog, cost, rate)
            raise Overloaded(
                retry,
                self.queue_size,
                f"estimated wait {wait:.1f} s (backlog {backlog} + this request's {cost} "
                f"judge pairs at {rate:.0f} pairs/s) exceeds max_queue_seconds = "
                f"{self.max_queue_seconds:g}; retry after {retry} s",
            )

    def _retry_after(self, backlog: int, cost: int, rate: float) -> int:
        """Seconds until, at ``rate``, the backlog has drained enough to admit ``cost``
        (its wait within ``max_queue_seconds``, or nothing left ahead of it); at least 1.

        Clients refused earlier come back first: each refusal is promised the slot after
        the previous promise (``cost / rate`` later), so a herd of refused clients is
        spread over the drain instead of all returning at once and being refused again.
        """
        now = time.monotonic()
        until_fits = (backlog + cost) / rate - self.max_queue_seconds
        until_empty = backlog / rate
        fits_at = now + max(0.0, min(until_fits, until_empty))
        slot = max(fits_at, self._promised_at + cost / rate)
        self._promised_at = slot
        return max(1, math.ceil(slot - now))

    def _cancel(self, request: _Request) -> None:
        """The client left: out of the queue; a running call notices through should_stop."""
        request.cancelled = True
        if request in self._pending:
            self._pending.remove(request)

    # -- the consumer ------------------------------------------------------------------------
    async def _consume(self) -> None:
        while True:
            while not self._pending:
                self._arrived.clear()
                await self._arrived.wait()
            if self.batch_wait > 0 and sum(r.cost for r in self._pending) < self.max_batch_pairs:
                await asyncio.sleep(self.batch_wait)  # company for the first arrival
            self._next_batch = self._select()
            groups: dict[tuple[str, str], list[_Request]] = {}
            for request in self._next_batch:
                groups.setdefault(request.group, []).append(request)
            for group in groups.values():
                for request in group:
                    self._next_batch.remove(request)
                live = [r for r in group if not r.cancelled and not r.future.done()]
                if live:
                    await self._run(live)

    def _select(self) -> list[_Request]:
        """The next batch, taken out of the queue: overdue requests (waiting over twice
        ``max_queue_seconds``) oldest first, then the cheapest, FIFO among equal costs; as
        many as fit in :meth:`batch_bound` of the first (the first always)."""
        now = time.monotonic()
        overdue = 2 * self.max_queue_seconds

        def priority(r: _Request) -> tuple[int, int, int]:
            if now - r.enqueued > overdue:
                return (0, 0, r.seq)
            return (1, r.cost, r.seq)

        batch: list[_Request] = []
        total = bound = 0
        for request in sorted(self._pending, key=priority):
            if not batch:
                bound = self.batch_bound(request.cost)
            elif total + request.cost > bound:
                break
            batch.append(request)
            total += request.cost
        for request in batch:
            self._pending.remove(request)
        return batch

    def batch_bound(self, first_cost: int) -> int:
        """Most estimated pairs of a batch whose first request costs ``first_cost``."""
        return min(self.max_request_pairs, max(self.max_batch_pairs, 2 * first_cost))

    async def _run(self, group: list[_Request]) -> None:
        """One engine call for ``group``; its outcome to each request; the rate measured."""
        loop = asyncio.get_running_loop()
        cost = sum(r.cost for r in group)
        self._running, self._running_cost = group, cost
        self._running_since = time.monotonic()
        try:
            outcomes = await loop.run_in_executor(self._executor, self._run_group, group)
        finally:
            elapsed = time.monotonic() - self._running_since
            self._running, self._running_cost = [], 0
        if any(not ok and isinstance(value, Cancelled) for ok, value in outcomes):
            self.aborted += 1  # stopped early: its time says nothing about the rate
        else:
            self._measure(cost, elapsed)
        for request, (ok, value) in zip(group, outcomes, strict=True):
            if request.future.done():
                continue
            if ok:
                request.future.set_result(value)
            else:
                request.future.set_exception(value)

    def _measure(self, pairs: int, seconds: float) -> None:
        self._rate_pairs = _RATE_DECAY * self._rate_pairs + pairs
        self._rate_seconds = _RATE_DECAY * self._rate_seconds + max(seconds, 1e-6)

    def _run_group(self, group: list[_Request]) -> list[tuple[bool, Any]]:
        """Run a group in one engine call; on failure, each request on its own."""
        self.batches += 1
        try:
            return [(True, value) for value in self._call(group, _all_cancelled(group))]
        except Cancelled as exc:
            return [(False, exc)] * len(group)
        except Exception as exc:
            if len(group) == 1:
                return [(False, exc)]
        outcomes: list[tuple[bool, Any]] = []
        for request in group:
            if request.cancelled:
                outcomes.append((False, Cancelled("the client left")))
                continue
            self.batches += 1
            try:
                outcomes.append((True, self._call([request], _all_cancelled([request]))[0]))
            except Exception as exc:  # handed to that request's handler, which maps it
                outcomes.append((False, exc))
        return outcomes

    def _call(self, group: list[_Request], should_stop: Callable[[], bool]) -> list[Any]:
        head = group[0]
        if head.group[0] == "perturb":
            assert head.options is not None
            tables = [r.table for r in group if r.table is not None]
            options = head.options
            return self.host.call(lambda engine: engine.perturb_many(tables, options, should_stop))
        # Judge: one call over the concatenated pairs, split back per request.
        flat = [pair for r in group for pair in r.pairs]
        scores = self.host.call(lambda engine: engine.judge(flat, *head.thresholds))
        out: list[Any] = []
        start = 0
        for r in group:
            out.append(scores[start : start + len(r.pairs)])
            start += len(r.pairs)
        return out


def _all_cancelled(group: list[_Request]) -> Callable[[], bool]:
    """``should_stop`` of an engine call: every client of it has left."""
    return lambda: all(r.cancelled for r in group)
