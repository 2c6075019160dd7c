"""The RPL/ADD decision rule (docs/method.md §3.4) — the one place thresholds meet scores.

Paper defaults: RPL if ``min(e1, e2) ≥ 0.65``; ADD if ``max(e1, e2) ≤ 0.45`` against *every*
original column of the table. The released notebook used 0.50/0.70 for RPL and, through a bug,
``min(e1, e2) ≤ 0.40`` for ADD; both thresholds and both aggregations are settings.

:class:`DecisionRule` holds them. Everything else the ADD rule asks — which names are
candidates, association with the target, the best few, the check against every column — is
:mod:`cta.judge.add_rule`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cta.results import JudgeScore, Verdict
from cta.settings import Settings

Aggregation = Literal["min", "max", "mean"]


def _aggregate(e1: float, e2: float, how: Aggregation) -> float:
    """Combine the two entailment directions into one score."""
    if how == "min":
        return min(e1, e2)
    if how == "max":
        return max(e1, e2)
    if how == "mean":
        return (e1 + e2) / 2.0
    raise ValueError(f"unknown aggregation {how!r} (min, max, mean)")


def association(forward_neutral: float, backward_neutral: float) -> float:
    """How strongly a candidate belongs beside its target: the mean of the judge's P(neutral)
    in both directions (NaN for a judge without a neutral class)."""
    return (forward_neutral + backward_neutral) / 2


@dataclass(frozen=True)
class DecisionRule:
    """The RPL/ADD rule with its thresholds and aggregations bound: what the pipeline, the
    service and any test double apply (build with :meth:`from_settings`)."""

    rpl_threshold: float = 0.65
    add_threshold: float = 0.45
    rpl_aggregation: Aggregation = "min"
    add_aggregation: Aggregation = "max"
    # ADD also needs association with its target ≥ this (None: the paper's rule alone) …
    add_association: float | None = None
    # … and keeps the best this many per target column before the check against every column.
    add_top_k: int | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> DecisionRule:
        """The settings' rule; a threshold given here (a request's override) wins."""
        return cls(
            rpl_threshold=settings.rpl_threshold if rpl_threshold is None else rpl_threshold,
            add_threshold=settings.add_threshold if add_threshold is None else add_threshold,
            rpl_aggregation=settings.rpl_aggregation,
            add_aggregation=settings.add_aggregation,
            add_association=settings.add_association,
            add_top_k=settings.add_association_top_k
            if settings.add_association is not None
            else None,
        )

    def is_rpl(self, e1: float, e2: float) -> bool:
        """Equivalent in context: the candidate may replace the target (``min(e1,e2) ≥ thr``)."""
        return _aggregate(e1, e2, self.rpl_aggregation) >= self.rpl_threshold

    def is_add_against(self, e1: float, e2: float) -> bool:
        """Not equivalent to this one column (``max(e1,e2) ≤ thr``)."""
        return _aggregate(e1, e2, self.add_aggregation) <= self.add_threshold

    def rpl_possible(self, e1: float) -> bool:
        """Whether some ``e2`` in [0, 1] could still make the pair RPL, knowing only ``e1``.

        Every aggregation is monotone, so the best case is ``e2 = 1``; when even that fails, the
        pair's reverse direction need not be scored (``min``: ``e1 < thr`` settles it).
        """
        return self.is_rpl(e1, 1.0)

    def add_possible(self, e1: float) -> bool:
        """Whether some ``e2`` in [0, 1] could still pass the ADD check against this column
        (best case ``e2 = 0``; ``max``: ``e1 > thr`` already fails it)."""
        return self.is_add_against(e1, 0.0)

    def passes_add(self, scores_vs_every_column: Sequence[tuple[float, float]]) -> bool:
        """The ADD rule's check: the candidate is equivalent to *no* original column.

        ``scores_vs_every_column`` holds ``(e1, e2)`` of the candidate against each original
        column; an empty sequence is an error (a table always has columns to check against).
        """
        if not scores_vs_every_column:
            raise ValueError(
                "the ADD rule needs the scores against every original column; got none"
            )
        return all(self.is_add_against(e1, e2) for e1, e2 in scores_vs_every_column)

    def is_associated(self, association: float) -> bool:
        """The ADD rule's second condition: the candidate belongs beside its target.

        Always true under the paper's rule (``add_association`` None) and for a judge without
        a neutral class (NaN: association unknown, so the paper's rule decides)."""
        if self.add_association is None or association != association:
            return True
        return association >= self.add_association

    def verdict(self, e1: float, e2: float, association: float = float("nan")) -> Verdict:
        """Single-pair verdict: ``"RPL"``, ``"ADD"`` (against this column only, and
        :meth:`is_associated`; unknown association: NaN) or ``"NONE"``.

        RPL is tested first, so overlapping custom thresholds can never yield both.
        """
        if self.is_rpl(e1, e2):
            return "RPL"
        if self.is_add_against(e1, e2) and self.is_associated(association):
            return "ADD"
        return "NONE"

    def scores(
        self,
        forward: Sequence[tuple[float, float]],
        backward: Sequence[tuple[float, float]],
    ) -> list[JudgeScore]:
        """Each pair's e1, e2, association and single-pair verdict, from the judge's
        (P(entailment), P(neutral)) in both directions (``cta judge``, ``/v1/judge``)."""
        out = []
        for (e1, n1), (e2, n2) in zip(forward, backward, strict=True):
            value = association(n1, n2)
            out.append(
                JudgeScore(  # printed rounded, decided on the exact scores
                    e1=round(e1, 6),
                    e2=round(e2, 6),
                    association=None if value != value else round(value, 6),
                    verdict=self.verdict(e1, e2, value),
                )
            )
        return out
