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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cta.scale.ledger import ItemOutcome
from cta.scale.runner import Shard, ShardMapper, Worker, WorkerFactory

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
        for name in ("ray", "ray.data", "ray.train", "ray.tune"):
            logging.getLogger(name).setLevel(logging.WARNING)
        address = options.address or os.environ.get("RAY_ADDRESS") or None
        if address:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=True)
        else:
            ray.init(
                num_cpus=options.local_cpus or os.cpu_count() or 1,
                include_dashboard=False,
                logging_level=logging.WARNING,
            )
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
            concurrency=actors,
            num_cpus=options.cpus_per_actor,
            # an actor that dies is replaced and its shard retried, without limit
            max_restarts=-1,
            max_task_retries=-1,
        )
        log.info("ray: %d shards over %d actors", len(rows), actors)
        for row in dataset.iter_rows():
            yield int(row["shard"]), pickle.loads(row["result"])

    return mapper


def map_ordered(
    factory: Callable[[], Callable[[Any], Any]], payloads: Sequence[Any], options: RayOptions
) -> list[Any]:
    """``[worker(p) for p in payloads]`` over a Ray Data actor pool (each actor makes its
    worker once), results in the payloads' order."""
    done: dict[int, Any] = {}
    shards: list[Shard] = [(n, p) for n, p in enumerate(payloads)]
    for n, result in ray_mapper(options)(factory, shards):  # type: ignore[arg-type]
        done[n] = result
    return [done[n] for n in range(len(payloads))]
