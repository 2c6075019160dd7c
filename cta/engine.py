"""The engine as a host process sees it: a protocol, so the HTTP service and the batch jobs
are typed on what they call, not on :class:`cta.pipeline.Pipeline` itself.

:class:`~cta.pipeline.Pipeline` is the implementation; the service's test double
(``tests/service_fakes.py``) is another. The cost estimate a host needs *before* the engine
has loaded is not a member: it is :func:`cta.pipeline.estimate_pairs`, a function of the
table and the settings alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from cta.results import JudgePair, JudgeScore, PerturbationResult
from cta.table import Table

if TYPE_CHECKING:
    from cta.pipeline import Pipeline, StopCheck
    from cta.results import PerturbOptions

__all__ = ["Engine"]


class Engine(Protocol):
    """Perturb tables, judge pairs, and tell equivalent names apart (docs/method.md §3)."""

    def perturb_many(
        self,
        tables: Sequence[Table],
        options: PerturbOptions | None = None,
        should_stop: StopCheck | None = None,
    ) -> list[PerturbationResult]:
        """One result per table, in order; ``should_stop`` (checked between chunks of judge
        work) aborts with :class:`cta.pipeline.Cancelled`."""
        ...

    def judge(
        self,
        pairs: Sequence[JudgePair],
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> list[JudgeScore]:
        """Both directions of each pair and its verdict (thresholds default to the settings)."""
        ...

    def equivalent(self, pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        """Whether each (entity, name, other name) is an RPL pair (the families' judge)."""
        ...


if TYPE_CHECKING:

    def _a_pipeline_is_an_engine(pipeline: Pipeline) -> Engine:
        return pipeline  # mypy proves the real pipeline satisfies the protocol
