"""The RPL/ADD decision rule (METHOD.md §3.4) — the one place thresholds meet scores.

Paper defaults: RPL if ``min(e1, e2) ≥ 0.65``; ADD if ``max(e1, e2) ≤ 0.45`` against *every*
original column of the table. The released notebook used 0.50/0.70 for RPL and, through a bug,
``min(e1, e2) ≤ 0.40`` for ADD; both thresholds and both aggregations are settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from cta.results import Verdict

Aggregation = Literal["min", "max", "mean"]


def aggregate(e1: float, e2: float, how: Aggregation) -> float:
    """Combine the two entailment directions into one score."""
    if how == "min":
        return min(e1, e2)
    if how == "max":
        return max(e1, e2)
    if how == "mean":
        return (e1 + e2) / 2.0
    raise ValueError(f"unknown aggregation {how!r} (min, max, mean)")


def is_rpl(e1: float, e2: float, rpl_threshold: float, aggregation: Aggregation = "min") -> bool:
    """Equivalent in context: the candidate may replace the target (``min(e1,e2) ≥ thr``)."""
    return aggregate(e1, e2, aggregation) >= rpl_threshold


def is_add_against(
    e1: float, e2: float, add_threshold: float, aggregation: Aggregation = "max"
) -> bool:
    """Not equivalent to this one column (``max(e1,e2) ≤ thr``)."""
    return aggregate(e1, e2, aggregation) <= add_threshold


def rpl_possible(e1: float, rpl_threshold: float, aggregation: Aggregation = "min") -> bool:
    """Whether some ``e2`` in [0, 1] could still make the pair RPL, knowing only ``e1``.

    Every aggregation is monotone, so the best case is ``e2 = 1``; when even that fails, the
    pair's reverse direction need not be scored (``min``: ``e1 < thr`` settles it).
    """
    return aggregate(e1, 1.0, aggregation) >= rpl_threshold


def add_possible(e1: float, add_threshold: float, aggregation: Aggregation = "max") -> bool:
    """Whether some ``e2`` in [0, 1] could still pass the ADD check against this column (best
    case ``e2 = 0``; ``max``: ``e1 > thr`` already fails it)."""
    return aggregate(e1, 0.0, aggregation) <= add_threshold


def passes_add(
    scores_vs_every_column: Sequence[tuple[float, float]],
    add_threshold: float,
    aggregation: Aggregation = "max",
) -> bool:
    """The ADD rule: the candidate is equivalent to *no* original column of the table.

    ``scores_vs_every_column`` holds ``(e1, e2)`` of the candidate against each original
    column; an empty sequence is an error (a table always has columns to check against).
    """
    if not scores_vs_every_column:
        raise ValueError("the ADD rule needs the scores against every original column; got none")
    return all(
        is_add_against(e1, e2, add_threshold, aggregation) for e1, e2 in scores_vs_every_column
    )


def verdict(
    e1: float,
    e2: float,
    rpl_threshold: float,
    add_threshold: float,
    rpl_aggregation: Aggregation = "min",
    add_aggregation: Aggregation = "max",
) -> Verdict:
    """Single-pair verdict: ``"RPL"``, ``"ADD"`` (against this column only) or ``"NONE"``.

    RPL is tested first, so overlapping custom thresholds can never yield both.
    """
    if is_rpl(e1, e2, rpl_threshold, rpl_aggregation):
        return "RPL"
    if is_add_against(e1, e2, add_threshold, add_aggregation):
        return "ADD"
    return "NONE"
