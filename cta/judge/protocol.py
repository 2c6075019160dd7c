"""The judge as the pipeline sees it: a protocol, so any bidirectional scorer plugs in.

:class:`cta.judge.nli.BidirectionalJudge` is the implementation (template texts, e1/e2,
dedup, cache); a test double or another scorer only has to offer these four members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cta.components import EntailmentModel
from cta.results import JudgePair

__all__ = ["Judge"]


@runtime_checkable
class Judge(Protocol):
    """Scores (column ⇒ candidate) pairs in one or both directions (docs/method.md §3.4)."""

    @property
    def model(self) -> EntailmentModel:
        """The entailment model the judge's scores come from (the context stage uses it)."""
        ...

    def entail(self, pairs: Sequence[JudgePair], reverse: bool = False) -> list[float]:
        """e1 (premise ⇒ hypothesis) of each pair, or e2 with ``reverse``."""
        ...

    def score(self, pairs: Sequence[JudgePair]) -> list[tuple[float, float]]:
        """(e1, e2) of each pair."""
        ...

    def probabilities(
        self, pairs: Sequence[JudgePair], reverse: bool = False
    ) -> list[tuple[float, float]]:
        """(P(entailment), P(neutral)) of each pair in :meth:`entail`'s direction; P(neutral)
        (association, for the ADD rule) is NaN for a judge without a neutral class."""
        ...
