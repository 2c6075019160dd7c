"""A stand-in engine for service tests: the :class:`cta.engine.Engine` surface, real result
models and the real RPL/ADD rule (:class:`cta.judge.decide.DecisionRule`), no models.

Routing, validation, batching, jobs, crash/resume, auth and the SDK are tested against it;
end-to-end tests use the real pipeline over the ``tiny_home`` fixture. Deterministic scores
(:func:`fake_scores`): every target column gets one RPL name (``"<column> alias"``) and one
ADD name (``"<column> note"``), kept or dropped by the real decision rule under the
settings' thresholds and aggregations (or a request's overrides). ``make_pipeline`` is the
``--pipeline service_fakes:make_pipeline`` hook for subprocesses; env ``CTA_FAKE_DELAY``
(seconds per table) slows it down and ``CTA_FAKE_LOG`` (a path) appends one line per table it
processes, so a test can see re-runs. With ``pairs_per_second`` it takes as long as an engine
judging each table's estimated pairs at that rate would, and honours ``should_stop`` while it
does (load and cancellation tests).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import httpx
import uvicorn
from fastapi.testclient import TestClient

from cta.apply.sample import sample_perturbations
from cta.judge.decide import DecisionRule
from cta.pipeline import Cancelled, StopCheck, estimate_pairs
from cta.results import (
    ColumnPerturbations,
    Decision,
    JudgePair,
    JudgeScore,
    PerturbationResult,
    PerturbOptions,
)
from cta.settings import Settings
from cta.table import Column, InvalidTableError, Table
from service.settings import ServiceSettings

#: a column with this name makes the stand-in raise, like an engine fault on one table
POISON_COLUMN = "poison"


def fake_scores(target: str, candidate: str) -> tuple[float, float]:
    """The stand-in judge's ``(e1, e2)``: the same name (up to case) 0.95 both ways, the
    column's ``alias`` (0.9, 0.8), its ``note`` (0.2, 0.1), anything else 0.3 both ways."""
    if candidate.casefold() == target.casefold():
        return 0.95, 0.95
    if candidate == f"{target} alias":
        return 0.9, 0.8
    if candidate == f"{target} note":
        return 0.2, 0.1
    return 0.3, 0.3


class FakePipeline:
    """Same surface as :class:`cta.pipeline.Pipeline` (a :class:`cta.engine.Engine`);
    records its calls."""

    def __init__(
        self,
        settings: Settings,
        delay: float = 0.0,
        log_path: str | None = None,
        pairs_per_second: float | None = None,
    ):
        self.settings = settings
        self.delay = delay
        self.log_path = log_path
        self.pairs_per_second = pairs_per_second
        self.calls: list[tuple[str, int]] = []  # (method, batch size)
        self.finished: list[str | None] = []  # table ids in the order their work finished
        self.stopped: list[str | None] = []  # table ids whose work should_stop cut short
        self.gate: threading.Event | None = None  # when set by a test, calls wait for it
        self._lock = threading.Lock()

    def perturb_many(
        self,
        tables: Sequence[Table],
        options: PerturbOptions | None = None,
        should_stop: StopCheck | None = None,
    ) -> list[PerturbationResult]:
        options = options or PerturbOptions()
        self._enter("perturb_many", len(tables))
        results = []
        for table in tables:
            if any(c.name == POISON_COLUMN for c in table.columns):
                raise RuntimeError("stand-in engine fault on a poison table")
            if self.delay:
                time.sleep(self.delay)
            if self.pairs_per_second:
                self._work(table, estimate_pairs(table, self.settings), should_stop)
            results.append(self._perturb(table, options))
            with self._lock:
                self.finished.append(table.id)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(f"{os.getpid()} {table.id}\n")
        return results

    def _enter(self, method: str, size: int) -> None:
        """Record a call, then wait for the test's gate when it has one."""
        with self._lock:
            self.calls.append((method, size))
        if self.gate is not None:
            self.gate.wait(10)

    def _work(self, table: Table, pairs: int, should_stop: StopCheck | None) -> None:
        """Sleep as long as judging ``pairs`` at ``pairs_per_second`` takes, in chunks of
        at most 0.05 s with a ``should_stop`` check before each (as the pipeline's chunks)."""
        assert self.pairs_per_second
        left = pairs / self.pairs_per_second
        while left > 0:
            if should_stop is not None and should_stop():
                with self._lock:
                    self.stopped.append(table.id)
                raise Cancelled("stand-in stopped")
            step = min(0.05, left)
            time.sleep(step)
            left -= step

    def _perturb(self, table: Table, options: PerturbOptions) -> PerturbationResult:
        entity = table.primary_entity or table.name or "row"
        source: Literal["given", "table-name"] = "given" if table.primary_entity else "table-name"
        rule = DecisionRule.from_settings(
            self.settings, options.rpl_threshold, options.add_threshold
        )

        def decision(
            col: Column, name: str, origin: Literal["dictionary", "retriever"]
        ) -> Decision:
            e1, e2 = fake_scores(col.name, name)
            return Decision(name=name, type=col.type, e1=e1, e2=e2, source=origin)

        columns = []
        for col in table.targets():
            alias = decision(col, f"{col.name} alias", "dictionary")
            note = decision(col, f"{col.name} note", "retriever")
            against_every_column = [fake_scores(c.name, note.name) for c in table.columns]
            columns.append(
                ColumnPerturbations(
                    column=col.name,
                    replace=[alias] if rule.is_rpl(alias.e1, alias.e2) else [],
                    add=[note] if rule.passes_add(against_every_column) else [],
                )
            )
        result = PerturbationResult(
            table_id=table.id, primary_entity=entity, entity_source=source, columns=columns
        )
        if options.samples:
            result.samples = [
                sample
                for kind in ("rpl", "add")
                for sample in sample_perturbations(
                    table, result, kind, options.samples, options.seed
                )
            ]
        return result

    def judge(
        self,
        pairs: Sequence[JudgePair],
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> list[JudgeScore]:
        self._enter("judge", len(pairs))
        if self.pairs_per_second:
            time.sleep(len(pairs) / self.pairs_per_second)
        rule = DecisionRule.from_settings(self.settings, rpl_threshold, add_threshold)
        scores = []
        for pair in pairs:
            if not pair.candidate.name.strip():
                raise InvalidTableError("empty_column_name", "candidate has an empty name")
            e1, e2 = fake_scores(pair.target.name, pair.candidate.name)
            scores.append(JudgeScore(e1=e1, e2=e2, verdict=rule.verdict(e1, e2)))
        return scores

    def equivalent(self, pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        """The RPL rule over each (entity, name, other name), as the pipeline's."""
        rule = DecisionRule.from_settings(self.settings)
        return [rule.is_rpl(*fake_scores(name, other)) for _, name, other in pairs]


def make_pipeline(settings: Settings) -> FakePipeline:
    """The ``--pipeline`` hook: a stand-in configured from the environment."""
    return FakePipeline(
        settings,
        delay=float(os.environ.get("CTA_FAKE_DELAY", "0")),
        log_path=os.environ.get("CTA_FAKE_LOG") or None,
    )


def wtq_like_table(i: int = 0, columns: int = 6, rows: int = 5) -> dict[str, object]:
    """A small table in the engine's JSON form (6 columns like a typical WTQ table)."""
    names = ["Year", "Title", "Role", "Director", "Studio", "Notes", "Rank", "Gross"][:columns]
    return {
        "id": f"t{i}",
        "name": f"filmography {i}",
        "columns": [
            {"name": n, "type": "number" if n in ("Year", "Rank", "Gross") else "text"}
            for n in names
        ],
        "rows": [
            [2000 + r if n == "Year" else f"{n.lower()} {r}" for n in names] for r in range(rows)
        ],
    }


@contextmanager
def running_app(
    settings: ServiceSettings, pipeline: FakePipeline | None = None, workers: int | None = None
) -> Iterator[tuple[TestClient, FakePipeline]]:
    """The app over a stand-in pipeline, started (lifespan) and ready."""
    from service.app import create_app

    fake = pipeline or FakePipeline(settings)
    app = create_app(settings, lambda _: fake, inprocess_workers=workers)
    with TestClient(app, raise_server_exceptions=False) as client:
        wait_until(lambda: client.get("/readyz").status_code == 200, what="readiness")
        yield client, fake


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(
    settings: ServiceSettings, fake: FakePipeline, workers: int = 0, log_level: str = "critical"
) -> Iterator[tuple[str, Any]]:
    """The app over ``fake`` (with ``workers`` in-process job workers) on a real uvicorn
    server in a thread (keep-alive, disconnects, a browser: what the in-process TestClient
    cannot show); yields its URL and the app once ready."""
    from service.app import create_app

    app = create_app(settings, lambda _: fake, inprocess_workers=workers)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level=log_level))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(ready, what="the server")
    try:
        yield url, app
    finally:
        server.should_exit = True
        thread.join(10)


def wait_until(check: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    """Poll ``check`` until true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


# A small Spider tables.json entry: two tables, identifiers unlike their natural names.
PETS = {
    "db_id": "pets",
    "table_names": ["student", "pet"],
    "table_names_original": ["Student", "Pets"],
    "column_names": [[-1, "*"], [0, "student id"], [0, "first name"], [1, "pet id"], [1, "age"]],
    "column_names_original": [[-1, "*"], [0, "StuID"], [0, "Fname"], [1, "PetID"], [1, "pet_age"]],
    "column_types": ["text", "number", "text", "number", "number"],
    "primary_keys": [1, 3],
    "foreign_keys": [],
}
