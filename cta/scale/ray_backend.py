"""Ray as a :data:`~cta.scale.runner.ShardMapper`: the shards flow through a Ray Data
pipeline whose map stage is an actor pool; each actor makes its worker once (the pipeline:
judge, index, vectors) and perturbs the shards it is given.

Ray is an optional extra (``pip install -e .[ray]``), imported only when a run asks for it.
Local by default — a Ray instance on this machine's cores, no dashboard, quiet logs — or
the cluster at ``--ray-address`` / ``CTA_RAY_ADDRESS`` / ``RAY_ADDRESS``. Dead actors are
restarted by Ray Data and their shard retried; the driver alone writes the ledger, so a
retried shard is still written once.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cta import registry
from cta.components import TableEncoder
from cta.scale.ledger import ItemOutcome
from cta.scale.runner import Shard, ShardMapper, Worker, WorkerFactory
from cta.settings import Settings
from cta.table import Table
from retriever.index import ChunkEncoder

log = logging.getLogger(__name__)


class RayUnavailableError(RuntimeError):
    """``--ray`` without the ``ray`` extra installed."""


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide: ``address`` (None: ``RAY_ADDRESS`` if set, else a local instance
    of ``local_cpus`` CPUs, default all cores), ``actors`` (default: the cluster's CPUs ÷
    ``cpus_per_actor``)."""

    address: str | None = None
    actors: int | None = None
    cpus_per_actor: float = 1.0
    local_cpus: int | None = None


def _ray() -> Any:
    try:
        import ray  # deferred: the optional `ray` extra, loaded only for --ray
    except ImportError:
        raise RayUnavailableError(
            "--ray needs Ray: pip install -e '.[ray]' (or -r requirements-ray.lock)"
        ) from None
    return ray


def connect(options: RayOptions) -> int:
    """Join the cluster (or start a local instance) unless connected; its CPU count."""
    ray = _ray()
    if not ray.is_initialized():
        address = options.address or os.environ.get("RAY_ADDRESS") or None
        if address:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=True)
        else:
            ray.init(
                num_cpus=options.local_cpus or os.cpu_count() or 1,
                include_dashboard=False,
                logging_level=logging.WARNING,
            )
    # Ray Data logs each execution at INFO: only its warnings matter to a batch run.
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.WARNING)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    # Shards are committed as they finish (the ledger names them): no head-of-line waits.
    context.execution_options.preserve_order = False
    return cpus


class _ShardActor:
    """The map stage's callable class: one worker per actor, one shard per batch row."""

    def __init__(self, factory: WorkerFactory) -> None:
        self.worker: Worker = factory()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np  # deferred: runs in the actor

        shards = [int(s) for s in batch["shard"]]
        results = [pickle.dumps(self.worker(pickle.loads(p))) for p in batch["payload"]]
        out = np.empty(len(results), dtype=object)
        out[:] = results
        return {"shard": np.array(shards, dtype=np.int64), "result": out}


def ray_mapper(options: RayOptions | None = None) -> ShardMapper:
    """A :data:`ShardMapper` over a Ray Data actor pool (see the module's docstring)."""
    options = options or RayOptions()

    def mapper(
        factory: WorkerFactory, shards: Sequence[Shard]
    ) -> Iterator[tuple[int, list[ItemOutcome]]]:
        if not shards:
            return
        ray = _ray()
        cpus = connect(options)
        actors = options.actors or max(1, int(cpus // options.cpus_per_actor))
        actors = min(actors, len(shards))
        rows = [{"shard": shard, "payload": pickle.dumps(items)} for shard, items in shards]
        dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            _ShardActor,
            fn_constructor_args=(factory,),
            batch_size=1,
            batch_format="numpy",
            # Ray Data's default for an actor pool: a dead actor is restarted and its
            # shard retried, without limit. Two shards in flight per actor keep it busy.
            compute=ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=2),
            num_cpus=options.cpus_per_actor,
        )
        log.info("ray: %d shards over %d actors", len(rows), actors)
        for row in dataset.iter_rows():
            yield int(row["shard"]), pickle.loads(row["result"])

    return mapper


class _EncoderActor:
    """An index encoder (made once per actor) encoding chunks of tables."""

    def __init__(self, settings: Settings) -> None:
        # deferred: in the actor's process, the shipped components register on import
        import cta.providers  # noqa: F401

        self.encoder: TableEncoder = registry.create("encoder", settings.encoder, settings)

    def encode(self, tables: list[Table], batch_size: int) -> Any:
        return self.encoder.encode(tables, batch_size)


def ray_chunk_encoder(
    settings: Settings, batch_size: int, options: RayOptions | None = None
) -> ChunkEncoder:
    """A :data:`retriever.index.ChunkEncoder` over Ray actors, each with the settings'
    encoder: the same ``encode(chunk, batch_size)`` calls as the in-process build, so the
    same vectors, in the same order; at most one chunk per actor in flight, so the corpus
    streams through the driver as it does in-process.

    Ray core's ``ActorPool`` rather than Ray Data: the index build consumes the chunks in
    order from a generator (the corpora are read lazily) and must not hold them all."""
    options = options or RayOptions()

    def encode(chunks: Iterable[list[Table]]) -> Iterator[tuple[list[Table], Any]]:
        ray = _ray()
        from ray.util import ActorPool  # deferred: the optional ray extra

        cpus = connect(options)
        size = options.actors or max(1, int(cpus // options.cpus_per_actor))
        actor = ray.remote(num_cpus=options.cpus_per_actor, max_restarts=-1, max_task_retries=-1)(
            _EncoderActor
        )
        actors = [actor.remote(settings) for _ in range(size)]
        pool = ActorPool(actors)
        waiting: deque[list[Table]] = deque()
        try:
            for chunk in chunks:
                if not pool.has_free():
                    yield waiting.popleft(), pool.get_next()
                pool.submit(lambda a, c: a.encode.remote(c, batch_size), chunk)
                waiting.append(chunk)
            while waiting:
                yield waiting.popleft(), pool.get_next()
        finally:
            for each in actors:  # the encoders' memory back to the cluster
                ray.kill(each)

    return encode
