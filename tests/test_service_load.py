"""Hostile input and load over the stand-in pipeline: a table over the per-request budget is
refused before the engine, a client that leaves stops its work, small requests are not
starved behind large ones, and a flood gets 429s whose Retry-After tells the truth.

The stand-in takes as long as judging each table's estimated pairs at ``pairs_per_second``
would, and honours ``should_stop`` (see :mod:`service_fakes`).
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_fakes import FakePipeline, running_app, serving, wait_until, wtq_like_table

from cta.pipeline import Cancelled, Pipeline, estimate_pairs
from cta.results import PerturbOptions
from cta.settings import Settings
from cta.table import Table
from service.batching import Batcher, Overloaded, _Request
from service.host import PipelineHost
from service.settings import ServiceSettings

RATE = 1000.0  # pairs per second of the stand-in, and the batcher's seed


def _settings(tmp_path: Path, **over: object) -> ServiceSettings:
    # rerank_top_k = 5: a 6-column table costs 270 estimated pairs, 20 columns 2,300.
    base: dict[str, object] = {
        "home": tmp_path,
        "rerank_top_k": 5,
        "engine_pairs_per_second": RATE,
        "max_request_pairs": 12_000,  # the mechanics, at a budget these tables fit
        "inprocess_workers": 0,
    }
    return ServiceSettings(**{**base, **over})  # type: ignore[arg-type]


def _table(name: str, columns: int, rows: int = 2) -> dict[str, Any]:
    names = [f"field {i}" for i in range(columns)]
    return {
        "id": name,
        "name": name,
        "columns": [{"name": n} for n in names],
        "rows": [[f"v{r}{c}" for c in range(columns)] for r in range(rows)],
    }


def _cost(settings: Settings, table: dict[str, Any]) -> int:
    return estimate_pairs(Table.model_validate(table), settings)


# -- the estimate and the budget ----------------------------------------------------------------


def test_estimate_counts_both_passes_and_the_default_budget_is_an_18_column_table() -> None:
    settings = Settings(rerank_top_k=20, add_association=None)
    six = Table.model_validate({**_table("six", 6), "target_columns": ["field 0", "field 1"]})
    # pass 1: 2 targets × 2·20 candidates × 2 directions; pass 2: 2 × 20 ADD × 5 other columns
    assert estimate_pairs(six, settings) == 2 * 40 * 2 + 2 * 20 * 5 == 360
    pipeline = Pipeline(settings, None, None, None, None)  # type: ignore[arg-type]
    assert pipeline.estimate_pairs(six) == 360
    # with the association rule, pass 2 checks only the best add_association_top_k (8)
    associating = settings.model_copy(update={"add_association": 0.5})
    assert estimate_pairs(six, associating) == 2 * 40 * 2 + 2 * 8 * 5 == 240
    defaults = ServiceSettings()
    assert defaults.max_request_pairs == 4_000
    at = Table.model_validate(_table("t18", 18))
    over = Table.model_validate(_table("t19", 19))
    assert (
        estimate_pairs(at, defaults) <= defaults.max_request_pairs < estimate_pairs(over, defaults)
    )
    # about 8 s at the seeded drain rate
    assert defaults.max_request_pairs / defaults.engine_pairs_per_second == 8.0


def test_a_table_over_the_budget_is_refused_before_the_engine(tmp_path: Path) -> None:
    settings = ServiceSettings(home=tmp_path, inprocess_workers=0)  # the default budget
    wide = _table("wide", 200)
    cost = _cost(settings, wide)
    with running_app(settings, workers=0) as (client, fake):
        answer = client.post("/v1/perturb", json={"table": wide})
        short = client.post("/perturb", json={"table": wide})
        assert fake.calls == []  # refused before the engine
        # jobs are not budgeted: the batch job is the way for such a table
        job = client.post("/v1/jobs", json={"tables": [wide]})
        small = client.post("/v1/perturb", json={"table": wtq_like_table()})
    assert answer.status_code == 422 and short.status_code == 422
    problem = answer.json()
    assert problem["problem"] == "max_request_pairs"
    assert f"estimated {cost} judge pairs" in problem["message"]
    assert "max_request_pairs = 4000" in problem["message"]
    assert "POST /v1/jobs" in problem["message"]
    assert job.status_code == 202
    assert small.status_code == 200 and fake.calls == [("perturb_many", 1)]


def test_target_columns_bring_a_wide_table_within_the_budget(tmp_path: Path) -> None:
    settings = ServiceSettings(home=tmp_path, inprocess_workers=0)
    every = _table("wide", 100)
    wide = {**every, "target_columns": ["field 0"]}
    assert _cost(settings, wide) <= settings.max_request_pairs < _cost(settings, every)
    with running_app(settings, workers=0) as (client, fake):
        answer = client.post("/v1/perturb", json={"table": wide})
    assert answer.status_code == 200
    assert [c["column"] for c in answer.json()["columns"]] == ["field 0"]
    assert fake.calls == [("perturb_many", 1)]


# -- cancellation -------------------------------------------------------------------------------


def test_a_client_that_leaves_stops_its_running_engine_call(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    fake = FakePipeline(settings, pairs_per_second=RATE)
    big = _table("big", 40)
    seconds = _cost(settings, big) / RATE
    assert seconds > 8  # the work the client abandons
    with serving(settings, fake) as (url, app):
        left = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/perturb", json={"table": big}, timeout=0.5)
        wait_until(lambda: fake.stopped == ["big"], timeout=5, what="the engine call to stop")
        stopped_after = time.monotonic() - left
        assert app.state.batcher.aborted == 1
        started = time.monotonic()
        small = httpx.post(f"{url}/v1/perturb", json={"table": wtq_like_table()}, timeout=10)
        small_seconds = time.monotonic() - started
    assert stopped_after < 3.0 < seconds  # stopped early, not run to its end
    assert fake.finished == ["t0"]  # the big table never finished; the engine was free again
    assert small.status_code == 200 and small_seconds < 2.0


def test_a_queued_request_whose_client_left_never_reaches_the_engine(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    fake = FakePipeline(settings, pairs_per_second=RATE)
    running = _table("running", 20)  # 2.3 s of work
    with serving(settings, fake) as (url, app), ThreadPoolExecutor(1) as pool:
        batcher = app.state.batcher
        first = pool.submit(httpx.post, f"{url}/v1/perturb", json={"table": running}, timeout=20)
        wait_until(lambda: len(fake.calls) == 1, what="the first call")
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/perturb", json={"table": wtq_like_table(7)}, timeout=0.5)
        wait_until(lambda: batcher.depth == 0, timeout=3, what="the queue to drop it")
        assert fake.finished == []  # dropped while the first call still ran
        assert first.result().status_code == 200
        time.sleep(0.3)  # the consumer had its chance to (wrongly) run it
    assert fake.calls == [("perturb_many", 1)]
    assert fake.finished == ["running"]


def test_the_batcher_skips_and_stops_cancelled_requests() -> None:
    """The batcher API: a cancelled waiting request is dropped; a running call whose only
    request is cancelled stops with Cancelled, and the rate ignores its time."""
    settings = ServiceSettings(rerank_top_k=5, engine_pairs_per_second=RATE)
    fake = FakePipeline(settings, pairs_per_second=RATE)

    async def scenario() -> tuple[list[str | None], list[str | None], int, float]:
        host = PipelineHost(settings, lambda _: fake)
        host.load()
        batcher = Batcher(host, queue_size=8, max_batch_pairs=300, batch_wait_ms=0)
        await batcher.start()
        options = PerturbOptions()
        running = asyncio.create_task(
            batcher.perturb(Table.model_validate(_table("running", 20)), options)
        )
        await asyncio.sleep(0.2)
        waiting = asyncio.create_task(
            batcher.perturb(Table.model_validate(_table("waiting", 6)), options)
        )
        await asyncio.sleep(0.05)
        assert batcher.depth == 1
        before = batcher.backlog_pairs
        waiting.cancel()
        await asyncio.sleep(0.05)
        assert batcher.depth == 0
        # its 270 pairs left the backlog (and the running call drained a little meanwhile)
        assert 270 <= before - batcher.backlog_pairs <= 270 + 150
        running.cancel()
        started = time.monotonic()
        while not fake.stopped and time.monotonic() - started < 3:
            await asyncio.sleep(0.02)
        rate = batcher.rate
        await batcher.stop()
        return fake.stopped, fake.finished, batcher.aborted, rate

    stopped, finished, aborted, rate = asyncio.run(scenario())
    assert stopped == ["running"] and finished == [] and aborted == 1
    assert rate == RATE  # the aborted call's time did not count
    assert issubclass(Cancelled, RuntimeError)


# -- fair scheduling ----------------------------------------------------------------------------


def test_a_small_request_behind_a_large_one_finishes_first(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    fake = FakePipeline(settings, pairs_per_second=RATE)
    done: dict[str, float] = {}

    def post(client: Any, table: dict[str, Any]) -> int:
        answer = client.post("/v1/perturb", json={"table": table})
        done[table["id"]] = time.monotonic()
        return int(answer.status_code)

    with running_app(settings, fake, workers=0) as (client, _), ThreadPoolExecutor(3) as pool:
        batcher = client.app.state.batcher  # type: ignore[attr-defined]
        busy = pool.submit(post, client, _table("busy", 20))
        wait_until(lambda: len(fake.calls) == 1, what="the engine to be busy")
        large = pool.submit(post, client, _table("large", 20))
        wait_until(lambda: batcher.depth == 1, what="the large request queued")
        small = pool.submit(post, client, _table("small", 6))
        wait_until(lambda: batcher.depth == 2, what="the small request queued")
        assert [busy.result(), large.result(), small.result()] == [200, 200, 200]
    assert fake.finished == ["busy", "small", "large"]
    assert done["small"] < done["large"]
    assert fake.calls == [("perturb_many", 1)] * 3  # the small one was not batched with it


def _idle_batcher(
    max_queue_seconds: float, queue_size: int
) -> tuple[Batcher, asyncio.AbstractEventLoop]:
    """A batcher that is never started (its queue is set by hand) over the stand-in, seeded at
    ``RATE``, and an event loop for its requests' futures (the caller closes it)."""
    settings = ServiceSettings(engine_pairs_per_second=RATE, max_queue_seconds=max_queue_seconds)
    host = PipelineHost(settings, lambda _: FakePipeline(settings))
    batcher = Batcher(host, queue_size=queue_size, max_batch_pairs=2048, batch_wait_ms=0)
    return batcher, asyncio.new_event_loop()


def test_overdue_requests_go_first_and_a_request_at_the_budget_runs_alone() -> None:
    batcher, loop = _idle_batcher(max_queue_seconds=1.0, queue_size=8)
    try:
        now = time.monotonic()

        def request(seq: int, cost: int, age: float) -> _Request:
            return _Request(("perturb", ""), cost, loop.create_future(), seq, now - age)

        old_big, small, small2 = request(0, 12_000, 2.5), request(1, 100, 0.0), request(2, 100, 0)
        batcher._pending = [old_big, small, small2]
        assert batcher._select() == [old_big]  # overdue (> 2 × 1 s): first, and alone
        assert batcher._select() == [small, small2]

        young_big = request(3, 12_000, 0.5)
        batcher._pending = [young_big, small, small2]
        assert batcher._select() == [small, small2]  # cheapest first; big not batched with them
        assert batcher._select() == [young_big]
        other_big = request(4, 12_000, 0.1)
        batcher._pending = [other_big, young_big]
        assert batcher._select() == [young_big]  # FIFO among equals, each alone
    finally:
        loop.close()


# -- back-pressure ------------------------------------------------------------------------------


def test_a_flood_gets_429_whose_retry_after_tracks_the_backlog_and_tells_the_truth(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path, max_queue_seconds=3.0)
    fake = FakePipeline(settings, pairs_per_second=RATE)
    small, big = wtq_like_table(), _table("probe", 20)
    small_cost, big_cost = _cost(settings, small), _cost(settings, big)
    assert (small_cost, big_cost) == (270, 2300)

    with running_app(settings, fake, workers=0) as (client, _), ThreadPoolExecutor(16) as pool:
        batcher = client.app.state.batcher  # type: ignore[attr-defined]
        flood = [pool.submit(client.post, "/v1/perturb", json={"table": small}) for _ in range(16)]
        wait_until(lambda: batcher.backlog_pairs >= 2000, timeout=5, what="a backlog")
        high_backlog = batcher.backlog_pairs
        high = client.post("/v1/perturb", json={"table": big})
        time.sleep(1.5)
        low_backlog = batcher.backlog_pairs
        low = client.post("/v1/perturb", json={"table": big})
        assert low.status_code == 429
        time.sleep(int(low.headers["Retry-After"]))
        retried = client.post("/v1/perturb", json={"table": big})
        answers = [f.result() for f in flood]

    statuses = [a.status_code for a in answers]
    assert set(statuses) == {200, 429}  # some admitted, the rest refused, nothing else
    refused = [a for a in answers if a.status_code == 429]
    assert all(a.json()["problem"] == "overloaded" for a in refused)
    assert all("max_queue_seconds = 3" in a.json()["message"] for a in refused)
    assert all(int(a.headers["Retry-After"]) >= 1 for a in refused)
    # refused clients are promised successive slots, so their Retry-After values spread
    waits = sorted(int(a.headers["Retry-After"]) for a in refused)
    assert waits[-1] > waits[0]
    assert high.status_code == 429 and low_backlog < high_backlog
    # after waiting Retry-After, the retry is admitted (and answered)
    assert retried.status_code == 200 and retried.json()["table_id"] == "probe"


def test_retry_after_is_the_time_until_the_backlog_admits_the_request() -> None:
    batcher, loop = _idle_batcher(max_queue_seconds=2.0, queue_size=2)
    try:
        assert batcher.backlog_pairs == 0 and batcher.rate == RATE
        batcher._admit(50_000)  # nothing ahead: admitted, however large
        batcher._pending = [_Request(("judge", ""), 4_500, loop.create_future())]
        assert batcher.backlog_pairs == 4_500
        with pytest.raises(Overloaded) as refused:
            batcher._admit(500)  # waits (4500 + 500) / 1000 = 5 s > 2 s
        assert refused.value.retry_after == 3  # 5 − 2 s: then the wait is 2 s
        assert "max_queue_seconds = 2" in str(refused.value)
        batcher._promised_at = 0.0  # forget that promise: a fresh refusal
        with pytest.raises(Overloaded) as big:
            batcher._admit(10_000)
        assert big.value.retry_after == 5  # until the backlog is empty (4.5 s)
        # the next refused client is promised the slot after that one: 4.5 + 10 s
        with pytest.raises(Overloaded) as after_big:
            batcher._admit(10_000)
        assert after_big.value.retry_after == 15
        batcher._promised_at = 0.0
        batcher._pending.append(_Request(("judge", ""), 10, loop.create_future()))
        with pytest.raises(Overloaded) as full:
            batcher._admit(1)  # the hard cap: queue_size = 2
        assert "queue_size = 2" in str(full.value) and full.value.retry_after == 3
        batcher._pending = [_Request(("judge", ""), 1_000, loop.create_future())]
        batcher._admit(1_000)  # (1000 + 1000) / 1000 = 2 s: admitted
    finally:
        loop.close()


def test_the_drain_rate_is_measured_from_engine_calls(tmp_path: Path) -> None:
    settings = _settings(tmp_path)  # seeded at 1,000 pairs/s
    fake = FakePipeline(settings, pairs_per_second=3 * RATE)  # the engine is 3× faster
    with running_app(settings, fake, workers=0) as (client, _):
        batcher = client.app.state.batcher  # type: ignore[attr-defined]
        assert batcher.rate == RATE
        for i in range(6):
            assert client.post("/v1/perturb", json={"table": wtq_like_table(i)}).status_code == 200
        rate = batcher.rate
    assert len(fake.finished) == 6
    assert 1.8 * RATE < rate < 3.1 * RATE  # moved most of the way to the engine's pace


# -- the real pipeline's stop hook ---------------------------------------------------------------


class _Source:
    """A candidate source proposing a few common names for every column."""

    name = "stub"

    def propose(self, context: Any) -> Any:
        from cta.components import SourceProposal
        from cta.results import Candidate

        def cands(names: list[str]) -> list[Candidate]:
            return [Candidate(name=n, score=1.0, source="thesaurus") for n in names]

        return SourceProposal(
            equivalent=cands(["name", "label", "heading", "caption"]),
            associated=cands(["budget", "country", "language", "rating", "genre", "length"]),
        )


class _Judge:
    """Deterministic scores from the texts; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.model = None

    def entail(self, pairs: Any, reverse: bool = False) -> list[float]:
        import zlib

        self.calls += 1
        out = []
        for p in pairs:
            text = f"{reverse}|{p.target.name}|{p.candidate.name}"
            out.append((zlib.crc32(text.encode()) % 1000) / 1000)
        return out

    def probabilities(self, pairs: Any, reverse: bool = False) -> list[tuple[float, float]]:
        """The judge protocol's entailment with its neutral class: none here (NaN), so the
        pipeline applies the paper's ADD rule, as with any judge without a neutral class."""
        return [(e, float("nan")) for e in self.entail(pairs, reverse)]


def test_the_pipeline_stops_between_judge_chunks_and_is_unchanged_when_not_stopped() -> None:
    settings = Settings(judge_batch_size=1)  # 16 directed pairs a chunk
    table = Table.model_validate(
        {
            "id": "films",
            "name": "films",
            "primary_entity": "film",
            "columns": [{"name": n} for n in ("title", "director", "studio", "notes")],
            "rows": [["a", "b", "c", "d"]],
        }
    )

    def pipeline() -> tuple[Pipeline, _Judge]:
        judge = _Judge()
        built = Pipeline(settings, None, None, None, judge, sources=(_Source(),))  # type: ignore[arg-type]
        return built, judge

    plain, plain_judge = pipeline()
    expected = plain.perturb_many([table])
    assert any(c.replace or c.add for c in expected[0].columns)  # something was decided
    watched, watched_judge = pipeline()
    checks: list[int] = []

    def never() -> bool:
        checks.append(1)
        return False

    assert watched.perturb_many([table], should_stop=never) == expected
    assert watched_judge.calls > plain_judge.calls >= 2  # chunked: a check before each chunk
    assert len(checks) == watched_judge.calls + 1  # and one before planning the table

    stopping, stopping_judge = pipeline()
    asked: list[int] = []

    def after_two_chunks() -> bool:
        asked.append(1)
        return len(asked) > 3  # the table, two chunks, then stop

    with pytest.raises(Cancelled):
        stopping.perturb_many([table], should_stop=after_two_chunks)
    assert stopping_judge.calls == 2
