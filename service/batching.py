"""Dynamic batching of concurrent HTTP requests into single engine calls, behind a bounded queue.

Requests wait in an :class:`asyncio.Queue` of ``queue_size``; a full queue is refused at once
(:class:`Overloaded` → 429 with ``Retry-After``) instead of letting latency grow without
bound. One consumer task takes the oldest request, gathers whatever else arrives within
``batch_wait_ms`` (up to ``max_batch_pairs`` judge pairs of estimated work), groups
requests that can share an engine call (perturb requests with equal options, judge requests
with equal thresholds) and runs each group in a worker thread, so the event loop never
blocks on model work. When a grouped call fails, its requests are retried one by one so
one bad table cannot fail its neighbours.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cta.judge.nli import JudgePair
from cta.pipeline import PerturbOptions
from cta.results import JudgeScore, PerturbationResult
from cta.table import Table
from service.host import PipelineHost

log = logging.getLogger(__name__)


class Overloaded(RuntimeError):
    """The request queue is full; retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int, queue_size: int) -> None:
        super().__init__(f"the request queue is full (queue_size = {queue_size}); retry later")
        self.retry_after = retry_after
        self.queue_size = queue_size


@dataclass
class _Request:
    group: tuple[str, str]  # requests with the same group share one engine call
    cost: int  # estimated judge pairs, to bound a batch
    future: asyncio.Future[Any]
    table: Table | None = None
    options: PerturbOptions | None = None
    pairs: Sequence[JudgePair] = field(default_factory=list)
    thresholds: tuple[float | None, float | None] = (None, None)


class Batcher:
    """The queue and its consumer; ``start`` inside the app's lifespan, ``stop`` at shutdown."""

    def __init__(
        self,
        host: PipelineHost,
        queue_size: int,
        max_batch_pairs: int,
        batch_wait_ms: int,
        pairs_per_column: int = 40,
    ) -> None:
        self.host = host
        self.queue_size = queue_size
        self.max_batch_pairs = max_batch_pairs
        self.batch_wait = batch_wait_ms / 1000
        # A perturb request costs about (rerank_top_k RPL + ADD candidates) pairs per column.
        self.pairs_per_column = pairs_per_column
        self._queue: asyncio.Queue[_Request] = asyncio.Queue(maxsize=queue_size)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cta-batch")
        self._task: asyncio.Task[None] | None = None
        self._seconds_per_request = 0.5  # running estimate, feeds Retry-After
        self.batches = 0  # engine calls made (observability and tests)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._consume(), name="cta-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._executor.shutdown(wait=True, cancel_futures=True)

    @property
    def depth(self) -> int:
        """Requests waiting in the queue."""
        return self._queue.qsize()

    # -- the two operations ------------------------------------------------------------------
    async def perturb(self, table: Table, options: PerturbOptions) -> PerturbationResult:
        """Perturb one table, batched with concurrent requests that use the same options."""
        cost = max(1, len(table.targets())) * self.pairs_per_column
        request = _Request(
            group=("perturb", options.model_dump_json()),
            cost=cost,
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
            cost=len(pairs),
            future=asyncio.get_running_loop().create_future(),
            pairs=pairs,
            thresholds=(rpl_threshold, add_threshold),
        )
        scores: list[JudgeScore] = await self._submit(request)
        return scores

    async def _submit(self, request: _Request) -> Any:
        try:
            self._queue.put_nowait(request)
        except asyncio.QueueFull:
            raise Overloaded(self._retry_after(), self.queue_size) from None
        return await request.future

    def _retry_after(self) -> int:
        """Seconds until the queue has likely drained (at least 1)."""
        return max(1, math.ceil(self._seconds_per_request * (self._queue.qsize() + 1)))

    # -- the consumer ------------------------------------------------------------------------
    async def _consume(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            budget = self.max_batch_pairs - batch[0].cost
            deadline = loop.time() + self.batch_wait
            while budget > 0:
                remaining = deadline - loop.time()
                try:
                    nxt = (
                        self._queue.get_nowait()
                        if remaining <= 0
                        else await asyncio.wait_for(self._queue.get(), remaining)
                    )
                except (asyncio.QueueEmpty, TimeoutError):
                    break
                batch.append(nxt)
                budget -= nxt.cost
            live = [r for r in batch if not r.future.done()]  # drop requests whose client left
            groups: dict[tuple[str, str], list[_Request]] = {}
            for request in live:
                groups.setdefault(request.group, []).append(request)
            for group in groups.values():
                started = time.perf_counter()
                outcomes = await loop.run_in_executor(self._executor, self._run_group, group)
                elapsed = time.perf_counter() - started
                self._seconds_per_request = 0.8 * self._seconds_per_request + 0.2 * (
                    elapsed / len(group)
                )
                for request, (ok, value) in zip(group, outcomes, strict=True):
                    if request.future.done():
                        continue
                    if ok:
                        request.future.set_result(value)
                    else:
                        request.future.set_exception(value)

    def _run_group(self, group: list[_Request]) -> list[tuple[bool, Any]]:
        """Run a group in one engine call; on failure, each request on its own."""
        self.batches += 1
        try:
            return [(True, value) for value in self._call(group)]
        except Exception as exc:
            if len(group) == 1:
                return [(False, exc)]
        outcomes: list[tuple[bool, Any]] = []
        for request in group:
            self.batches += 1
            try:
                outcomes.append((True, self._call([request])[0]))
            except Exception as exc:  # handed to that request's handler, which maps it
                outcomes.append((False, exc))
        return outcomes

    def _call(self, group: list[_Request]) -> list[Any]:
        head = group[0]
        if head.group[0] == "perturb":
            assert head.options is not None
            tables = [r.table for r in group if r.table is not None]
            return list(self.host.perturb_many(tables, head.options))
        # Judge: one call over the concatenated pairs, split back per request.
        flat = [pair for r in group for pair in r.pairs]
        scores = self.host.judge(flat, *head.thresholds)
        out: list[Any] = []
        start = 0
        for r in group:
            out.append(scores[start : start + len(r.pairs)])
            start += len(r.pairs)
        return out
