"""Batch runs over many tables: items cut into shards, each shard perturbed by a worker that
loads the pipeline once, shards committed to a :class:`~cta.scale.ledger.Ledger`.

The pipeline knows nothing of where it runs: a :data:`ShardMapper` maps a worker over the
pending shards — :func:`in_process` (here, one worker) or :func:`cta.scale.ray_backend.
ray_mapper` (an actor pool of a Ray Data pipeline, one worker per actor). Both give the same
bytes: a shard is one ``perturb_many`` call of the same worker code, whoever runs it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cta.pipeline import Pipeline
from cta.results import PerturbationResult, PerturbOptions
from cta.scale.items import Item, items_digest, read_items
from cta.scale.ledger import ItemOutcome, Ledger
from cta.settings import Settings
from cta.table import Table

log = logging.getLogger(__name__)

#: items per shard: one ``perturb_many`` call (the judge batches their pairs), one file
SHARD_SIZE = 16

Worker = Callable[[Sequence[Item]], list[ItemOutcome]]
WorkerFactory = Callable[[], Worker]
Shard = tuple[int, list[Item]]
ShardMapper = Callable[[WorkerFactory, Sequence[Shard]], Iterator[tuple[int, list[ItemOutcome]]]]
"""Maps a worker (made by the factory once per process) over shards; yields each shard's
outcomes as it finishes, in any order."""


def result_line(result: PerturbationResult) -> str:
    """A result as one JSON line, the bytes ``cta perturb FILE.jsonl`` prints for it."""
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


class ShardPerturber:
    """Perturbs shards of items with one pipeline, loaded once (in an actor or in-process).

    A shard is one :meth:`Pipeline.perturb_many` call; when it raises, each of its tables is
    perturbed alone so that the one that fails is a failed item with its reason."""

    def __init__(self, settings: Settings, options: PerturbOptions) -> None:
        self.pipeline = Pipeline.from_settings(settings)
        self.options = options

    def __call__(self, items: Sequence[Item]) -> list[ItemOutcome]:
        tables = [i.table for i in items if i.table is not None]
        results: list[PerturbationResult | str]
        try:
            results = list(self.pipeline.perturb_many(tables, self.options)) if tables else []
        except Exception:  # one bad table must not fail its shard: find it
            log.info("a shard failed as a whole; perturbing its %d tables one by one", len(tables))
            results = [self._one(t) for t in tables]
        answers = iter(results)
        outcomes = []
        for item in items:
            if item.table is None:
                assert item.error is not None
                line = json.dumps(item.error, ensure_ascii=False)
                outcomes.append(ItemOutcome(item.key, line, "failed", item.reason))
                continue
            answer = next(answers)
            if isinstance(answer, str):
                line = json.dumps({"item": item.key, "error": answer}, ensure_ascii=False)
                outcomes.append(ItemOutcome(item.key, line, "failed", answer))
            else:
                outcomes.append(ItemOutcome(item.key, result_line(answer)))
        return outcomes

    def _one(self, table: Table) -> PerturbationResult | str:
        try:
            return self.pipeline.perturb(table, self.options)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"


def in_process(
    factory: WorkerFactory, shards: Sequence[Shard]
) -> Iterator[tuple[int, list[ItemOutcome]]]:
    """Every shard here, in order, with one worker (made only when there is work)."""
    worker: Worker | None = None
    for shard, items in shards:
        worker = worker or factory()
        yield shard, worker(items)


class RunReport(BaseModel):
    """What a run did: items in all, finished before this run, computed now, failed."""

    out: str
    items: int
    shards: int
    resumed_shards: int
    computed_shards: int
    failed: int
    seconds: float


def run_shards(
    items: Sequence[Item],
    out: str | Path,
    *,
    run: dict[str, Any],
    worker: WorkerFactory,
    mapper: ShardMapper = in_process,
    shard_size: int = SHARD_SIZE,
    progress: Callable[[str], None] | None = None,
) -> tuple[RunReport, Ledger]:
    """Perturb the items not finished in ``out``'s ledger; commit each shard as it comes.

    ``run`` identifies the run (with the items' digest and the shard size added): resuming a
    folder that holds another run raises :class:`~cta.scale.ledger.LedgerMismatchError`."""
    if shard_size < 1:
        raise ValueError("shard size must be at least 1")
    started = time.perf_counter()
    shards = [list(items[i : i + shard_size]) for i in range(0, len(items), shard_size)]
    description = {
        **run,
        "items": len(items),
        "items_sha256": items_digest(list(items)),
        "shard_size": shard_size,
    }
    ledger = Ledger(out, description, [[i.key for i in s] for s in shards])
    pending = ledger.pending()
    resumed = len(shards) - len(pending)
    if progress and resumed:
        progress(f"{resumed} of {len(shards)} shards finished before; resuming")
    done = 0
    for shard, outcomes in mapper(worker, [(s, shards[s]) for s in pending]):
        ledger.commit(shard, outcomes)
        done += 1
        if progress:
            progress(f"shard {shard} written ({done}/{len(pending)})")
    report = RunReport(
        out=str(out),
        items=len(items),
        shards=len(shards),
        resumed_shards=resumed,
        computed_shards=done,
        failed=len(ledger.failed()),
        seconds=round(time.perf_counter() - started, 3),
    )
    return report, ledger


def fingerprint(settings: Settings, options: PerturbOptions) -> dict[str, Any]:
    """What makes two runs' outputs comparable: the settings and the options."""
    settings_json = settings.model_dump_json()
    return {
        "settings_sha256": hashlib.sha256(settings_json.encode("utf-8")).hexdigest(),
        "options": options.model_dump(mode="json"),
    }


def perturb_corpus(
    source: str,
    out: str | Path,
    settings: Settings,
    options: PerturbOptions,
    *,
    mapper: ShardMapper = in_process,
    shard_size: int = SHARD_SIZE,
    progress: Callable[[str], None] | None = None,
) -> tuple[RunReport, Ledger]:
    """Every table of ``source`` (see :func:`cta.scale.items.read_items`) perturbed into the
    ledger at ``out``; a rerun resumes."""
    return _perturb_shards(read_items(source), out, settings, options, mapper, shard_size, progress)


def _perturb_shards(
    items: Sequence[Item],
    out: str | Path,
    settings: Settings,
    options: PerturbOptions,
    mapper: ShardMapper,
    shard_size: int,
    progress: Callable[[str], None] | None,
) -> tuple[RunReport, Ledger]:
    """``items`` through :class:`ShardPerturber` (``settings``, ``options``) into the ledger
    at ``out``, the run fingerprinted by the same settings and options."""
    worker = functools.partial(ShardPerturber, settings, options)
    return run_shards(
        items,
        out,
        run=fingerprint(settings, options),
        worker=worker,
        mapper=mapper,
        shard_size=shard_size,
        progress=progress,
    )


class ProposalError(RuntimeError):
    """A table of a dataset could not be perturbed (the protocol needs every one)."""


def ledger_proposer(
    out: str | Path,
    settings: Settings,
    *,
    mapper: ShardMapper,
    shard_size: int = SHARD_SIZE,
    progress: Callable[[str], None] | None = None,
) -> Callable[[Sequence[Table]], list[PerturbationResult]]:
    """A dataset proposer (:data:`cta.datasets.Proposer`) whose ``perturb_many`` runs through
    ``mapper`` with its ledger at ``out``: a rerun of the dataset skips finished shards."""
    options = PerturbOptions(seed=0)

    def propose(tables: Sequence[Table]) -> list[PerturbationResult]:
        items = [Item(f"table {n}", table=t) for n, t in enumerate(tables)]
        report, ledger = _perturb_shards(
            items, out, settings, options, mapper, shard_size, progress
        )
        failed = ledger.failed()
        if failed:
            first = failed[0]
            raise ProposalError(
                f"{len(failed)} tables failed (first: {first['item']}: {first['reason']})"
            )
        return [PerturbationResult.model_validate_json(line) for line in ledger.lines()]

    return propose
