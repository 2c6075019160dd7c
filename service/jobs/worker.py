"""The job worker: claim items, perturb them in batched engine calls, commit each one.

Runs as threads inside ``cta serve`` (``inprocess_workers``) or as separate ``cta worker``
processes sharing the database. Each table's result is committed on its own as soon as the
batch returns, guarded by the worker's lease (see :mod:`service.jobs.store`), so a worker
killed mid-batch loses at most the tables it had not committed, and they run again.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial

from cta.datasets import perturb_bird_database, perturb_spider_database
from cta.evaluation.payload import evaluate_payload
from cta.reports import EvalDatabaseResult, SpiderDatabaseResult
from cta.results import PerturbationResult, PerturbOptions
from cta.table import InvalidTableError, Table
from service.host import PipelineHost
from service.jobs.store import ClaimedItem, JobStore
from service.schemas import ItemError
from service.settings import ServiceSettings

log = logging.getLogger(__name__)

_TABLE_KINDS = ("tables", "spider")


def default_worker_name() -> str:
    """``host-pid-random``: unique per process, so leases never collide."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class JobWorker:
    """One worker loop over a :class:`JobStore` and a :class:`PipelineHost`."""

    def __init__(
        self,
        store: JobStore,
        host: PipelineHost,
        settings: ServiceSettings,
        name: str | None = None,
    ) -> None:
        self.store = store
        self.host = host
        self.settings = settings
        self.name = name or default_worker_name()

    def run(self, stop: threading.Event, exit_when_idle: bool = False) -> None:
        """Work until ``stop`` is set (or, with ``exit_when_idle``, until nothing is left).

        Waits for the pipeline first, then polls every ``job_poll_seconds`` when idle.
        """
        released = self.store.release(self.name)
        if released:
            log.info(
                "worker %s: %d tables of a previous run returned to the queue", self.name, released
            )
        while not stop.is_set() and not self.host.wait_ready(timeout=1.0):
            pass
        if not self.host.ready:
            if not stop.is_set():
                log.error("worker %s stops: %s", self.name, self.host.detail)
            return
        log.info("worker %s started", self.name)
        while not stop.is_set():
            try:
                handled = self.run_once()
            except Exception:  # a database hiccup must not end the worker; retry after a pause
                log.exception("worker %s: claim/commit failed; retrying", self.name)
                handled = 0
            if not handled:
                if exit_when_idle:
                    return
                stop.wait(self.settings.job_poll_seconds)

    def run_once(self) -> int:
        """Claim one batch of tables and run it; the number of tables handled (0 when idle)."""
        items = self.store.claim(
            self.name,
            self.settings.job_claim_batch,
            self.settings.job_lease_seconds,
            self.settings.job_max_attempts,
        )
        if not items:
            return 0
        with self._renewing(items):
            self._run(items)
        return len(items)

    @contextmanager
    def _renewing(self, items: Sequence[ClaimedItem]) -> Iterator[None]:
        """Renew the leases on ``items`` every third of a lease while the block runs."""
        lease = self.settings.job_lease_seconds
        done = threading.Event()

        def renew() -> None:
            while not done.wait(lease / 3):
                try:
                    self.store.renew(items, self.name, lease)
                except Exception:  # a missed renewal only risks a retry elsewhere
                    log.exception("worker %s: lease renewal failed", self.name)

        thread = threading.Thread(target=renew, name=f"{self.name}-leases", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _run(self, items: Sequence[ClaimedItem]) -> None:
        # Items of "tables" and "spider" jobs are both one table each (a Spider payload is
        # split into tables at submission), batched together; a "dataset" item is one
        # database with its question records, run through the protocol on its own.
        groups: dict[str, list[ClaimedItem]] = {}
        for item in items:
            if item.kind in _TABLE_KINDS:
                groups.setdefault(item.options.model_dump_json(), []).append(item)
            elif item.kind == "dataset":
                self._dataset(item)
            elif item.kind == "eval":
                self._eval(item)
            else:
                self._fail(
                    item, InvalidTableError("unsupported_kind", f"no runner for {item.kind!r} jobs")
                )
        for group in groups.values():
            self._perturb(group, group[0].options)

    def _perturb(self, items: Sequence[ClaimedItem], options: PerturbOptions) -> None:
        runnable: list[tuple[ClaimedItem, Table]] = []
        for item in items:
            try:
                runnable.append((item, Table.parse(json.loads(item.payload))))
            except (InvalidTableError, ValueError) as exc:
                self._fail(item, exc)
        if not runnable:
            return
        try:
            results = self.host.perturb_many([table for _, table in runnable], options)
        except Exception as exc:
            if len(runnable) == 1:
                self._fail(runnable[0][0], exc)
                return
            # One table may have failed the whole call: run each alone to find it.
            for item, table in runnable:
                try:
                    result = self.host.perturb_many([table], options)[0]
                except Exception as one:
                    self._fail(item, one)
                else:
                    self._complete(item, result)
            return
        for (item, _), result in zip(runnable, results, strict=True):
            self._complete(item, result)

    def _dataset(self, item: ClaimedItem) -> None:
        options = item.options
        try:
            payload = json.loads(item.payload)
            perturb = (
                partial(perturb_bird_database, descriptions=payload.get("descriptions"))
                if payload.get("format") == "bird"
                else perturb_spider_database
            )
            result = perturb(
                payload["entry"],
                payload["records"],
                lambda tables: self.host.perturb_many(tables, options),
                kinds=payload["kinds"],
                seeds=payload["seeds"],
                judge=self.host.equivalent,
            )
        except Exception as exc:
            self._fail(item, exc)
        else:
            self._complete(item, result)

    def _eval(self, item: ClaimedItem) -> None:
        """Score one source database's questions (:func:`cta.evaluation.evaluate_payload`)."""
        try:
            payload = json.loads(item.payload)
            predictions = payload.get("predictions")
            result = evaluate_payload(
                payload["entries"],
                {stem: [tuple(pair) for pair in pairs] for stem, pairs in payload["sets"].items()},
                predictions=(
                    {s: {int(p): sql for p, sql in by.items()} for s, by in predictions.items()}
                    if predictions is not None
                    else None
                ),
                endpoint=payload.get("endpoint"),
                model=payload.get("model"),
                timeout=payload.get("timeout", 10.0),
            )
        except Exception as exc:
            self._fail(item, exc)
        else:
            self._complete(item, result)

    def _complete(
        self,
        item: ClaimedItem,
        result: PerturbationResult | SpiderDatabaseResult | EvalDatabaseResult,
    ) -> None:
        if not self.store.complete(item, self.name, result):
            log.warning(
                "worker %s: lost the lease on item %d; result discarded", self.name, item.id
            )

    def _fail(self, item: ClaimedItem, exc: Exception) -> None:
        if isinstance(exc, InvalidTableError):
            error = ItemError(problem=exc.problem, message=exc.message)
        else:
            log.exception(
                "worker %s: table %d of job %s failed", self.name, item.position, item.job_id
            )
            error = ItemError(problem="perturb_failed", message=f"{type(exc).__name__}: {exc}")
        if not self.store.fail(item, self.name, error):
            log.warning("worker %s: lost the lease on item %d; error discarded", self.name, item.id)


def start_workers(
    store: JobStore,
    host: PipelineHost,
    settings: ServiceSettings,
    count: int,
    stop: threading.Event,
) -> list[threading.Thread]:
    """Start ``count`` worker threads (in-process workers of ``cta serve``)."""
    threads = []
    base = default_worker_name()
    for i in range(count):
        worker = JobWorker(store, host, settings, name=f"{base}-{i}")
        thread = threading.Thread(
            target=worker.run, args=(stop,), name=f"cta-worker-{i}", daemon=True
        )
        thread.start()
        threads.append(thread)
    return threads
