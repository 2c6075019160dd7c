"""The FastAPI application: :func:`create_app` wires settings, pipeline, batcher, store, workers.

Lifespan: the jobs store is migrated, the pipeline starts loading in a background thread
(``/healthz`` answers at once; ``/readyz`` turns 200 once models and index are loaded), the
batcher's consumer starts, and ``inprocess_workers`` job workers start (they wait for the
pipeline). Shutdown stops them in reverse order.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from cta.judge.decide import DecisionRule
from cta.pipeline import Pipeline
from service.batching import Batcher
from service.errors import install_error_handlers
from service.guard import RequestGuard
from service.host import EngineFactory, PipelineHost
from service.jobs.reviews import Reviews
from service.jobs.store import JobStore
from service.jobs.worker import start_workers
from service.routes import engine, health, jobs, review
from service.settings import ServiceSettings, get_service_settings

API_VERSION = "1.0.0"

DESCRIPTION = (
    "Adversarial table perturbation (CTA, from the ADVETA paper): natural column renames "
    "(RPL) and associated new columns (ADD), judged by bidirectional entailment. "
    "When the server has API keys (`CTA_API_KEYS`), every route but `/healthz` and `/readyz` "
    "needs `Authorization: Bearer <key>`, and a job is visible only to its key. "
    "Every error answers a `Problem` (`problem` code + `message`)."
)


def create_app(
    settings: ServiceSettings | None = None,
    pipeline_factory: EngineFactory = Pipeline.from_settings,
    inprocess_workers: int | None = None,
) -> FastAPI:
    """The service over ``settings``; ``pipeline_factory`` builds the engine (injectable: any
    :class:`cta.engine.Engine`)."""
    settings = settings or get_service_settings()
    n_workers = settings.inprocess_workers if inprocess_workers is None else inprocess_workers

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = await asyncio.to_thread(JobStore.from_settings, settings)
        host = PipelineHost(settings, pipeline_factory)
        batcher = Batcher(
            host,
            queue_size=settings.queue_size,
            max_batch_pairs=settings.max_batch_pairs,
            batch_wait_ms=settings.batch_wait_ms,
        )
        app.state.store, app.state.host, app.state.batcher = store, host, batcher
        app.state.reviews = Reviews(store, DecisionRule.from_settings(settings))
        host.start_loading()
        await batcher.start()
        stop = threading.Event()
        threads = start_workers(store, host, settings, n_workers, stop)
        try:
            yield
        finally:
            stop.set()
            for thread in threads:
                await asyncio.to_thread(thread.join)
            await batcher.stop()
            store.close()

    app = FastAPI(
        title="CTA perturbation service",
        version=API_VERSION,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    install_error_handlers(app)
    app.add_middleware(RequestGuard, max_bytes=settings.max_body_bytes)
    app.include_router(health.router)
    app.include_router(engine.router)
    app.include_router(jobs.router)
    app.include_router(review.router)
    app.mount("/review/static", StaticFiles(directory=review.ASSETS / "static"), name="review")
    return app
