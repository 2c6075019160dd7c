"""The pipeline inside the service: loaded once, off the event loop, used by one caller at a time.

The HTTP batcher and the in-process job workers share one :class:`PipelineHost`; its lock
keeps model forward passes from interleaving (the judge is not thread-safe, and two CPU-bound
batches at once would only thrash the cores).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from cta.judge.nli import JudgePair
from cta.pipeline import PerturbOptions, Pipeline, estimate_pairs
from cta.results import JudgeScore, PerturbationResult
from cta.settings import Settings
from cta.table import Table

log = logging.getLogger(__name__)

PipelineFactory = Callable[[Settings], Pipeline]


class PipelineNotReady(RuntimeError):
    """The pipeline is still loading, or failed to load (``failed`` tells which)."""

    def __init__(self, message: str, failed: bool) -> None:
        super().__init__(message)
        self.failed = failed


class PipelineHost:
    """Owns the pipeline: background loading, readiness, and serialised calls."""

    def __init__(self, settings: Settings, factory: PipelineFactory) -> None:
        self.settings = settings
        self._factory = factory
        self._pipeline: Pipeline | None = None
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

    def _get(self) -> Pipeline:
        if self._pipeline is None:
            raise PipelineNotReady(self.detail, failed=self._error is not None)
        return self._pipeline

    # -- cost -------------------------------------------------------------------------------
    def estimate_pairs(self, table: Table) -> int:
        """:meth:`Pipeline.estimate_pairs` — from the settings alone, so it answers (and a
        request can be refused) before the pipeline has loaded."""
        return estimate_pairs(table, self.settings)

    # -- serialised calls into the engine -----------------------------------------------------
    def perturb_many(
        self,
        tables: Sequence[Table],
        options: PerturbOptions,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[PerturbationResult]:
        """:meth:`Pipeline.perturb_many` under the host's lock; ``should_stop`` aborts it
        with :class:`cta.pipeline.Cancelled` (passed only when given, so stand-ins without
        the parameter keep working)."""
        pipeline = self._get()
        with self._lock:
            if should_stop is None:
                return pipeline.perturb_many(tables, options)
            return pipeline.perturb_many(tables, options, should_stop=should_stop)

    def equivalent(self, pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        """:meth:`Pipeline.equivalent` (the families' judge) under the host's lock."""
        pipeline = self._get()
        with self._lock:
            return pipeline.equivalent(pairs)

    def judge(
        self,
        pairs: Sequence[JudgePair],
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> list[JudgeScore]:
        """:meth:`Pipeline.judge` under the host's lock."""
        pipeline = self._get()
        with self._lock:
            return pipeline.judge(pairs, rpl_threshold, add_threshold)
