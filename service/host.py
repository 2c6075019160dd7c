"""The pipeline inside the service: loaded once, off the event loop, used by one caller at a time.

The HTTP batcher and the in-process job workers share one :class:`PipelineHost`; its lock
keeps model forward passes from interleaving (the judge is not thread-safe, and two CPU-bound
batches at once would only thrash the cores).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from cta.engine import Engine
from cta.pipeline import estimate_pairs
from cta.results import PerturbationResult, PerturbOptions
from cta.table import Table
from service.settings import ServiceSettings

log = logging.getLogger(__name__)

#: builds the engine from the settings (default :meth:`cta.pipeline.Pipeline.from_settings`)
EngineFactory = Callable[[ServiceSettings], Engine]

T = TypeVar("T")


class PipelineNotReady(RuntimeError):
    """The pipeline is still loading, or failed to load (``failed`` tells which)."""

    def __init__(self, message: str, failed: bool) -> None:
        super().__init__(message)
        self.failed = failed


class PipelineHost:
    """Owns the pipeline: background loading, readiness, and serialised calls."""

    def __init__(self, settings: ServiceSettings, factory: EngineFactory) -> None:
        self.settings = settings
        self._factory = factory
        self._pipeline: Engine | None = None
        self._error: str | None = None
        self._loaded = threading.Event()
        self._lock = threading.Lock()

    # -- loading ------------------------------------------------------------------------------
    def start_loading(self) -> threading.Thread:
        """Load in a daemon thread so the server answers /healthz while models load."""
        thread = threading.Thread(target=self.load, name="cta-pipeline-load", daemon=True)
        thread.start()
        return thread

    def load(self) -> None:
        """Build the pipeline now (blocking); a failure is kept and reported by readiness."""
        try:
            log.info("loading the CTA pipeline (index, vectors, lexicon, judge)")
            self._pipeline = self._factory(self.settings)
            log.info("pipeline ready")
        except Exception as exc:  # any failure must surface in /readyz, not kill the server
            log.exception("the pipeline failed to load")
            self._error = f"{type(exc).__name__}: {exc}"
        finally:
            self._loaded.set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until loading finished; True when the pipeline is usable."""
        self._loaded.wait(timeout)
        return self.ready

    @property
    def ready(self) -> bool:
        return self._pipeline is not None

    @property
    def detail(self) -> str:
        """Why the host is not ready ("" when it is)."""
        if self._pipeline is not None:
            return ""
        return f"pipeline failed to load: {self._error}" if self._error else "pipeline loading"

    def call(self, method: Callable[[Engine], T]) -> T:
        """``method(engine)`` under the host's lock: every call into the engine goes here."""
        if self._pipeline is None:
            raise PipelineNotReady(self.detail, failed=self._error is not None)
        with self._lock:
            return method(self._pipeline)

    # -- cost -------------------------------------------------------------------------------
    def estimate_pairs(self, table: Table) -> int:
        """:meth:`Pipeline.estimate_pairs` — from the settings alone, so it answers (and a
        request can be refused) before the pipeline has loaded."""
        return estimate_pairs(table, self.settings)

    # -- the calls the job workers make --------------------------------------------------------
    def perturb_many(
        self, tables: Sequence[Table], options: PerturbOptions
    ) -> list[PerturbationResult]:
        """:meth:`Engine.perturb_many` under the host's lock."""
        return self.call(lambda engine: engine.perturb_many(tables, options))

    def equivalent(self, pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        """:meth:`Engine.equivalent` (the families' judge) under the host's lock."""
        return self.call(lambda engine: engine.equivalent(pairs))
