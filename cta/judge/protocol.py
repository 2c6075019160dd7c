"""The judge as the pipeline sees it: a protocol, so any bidirectional scorer plugs in.

:class:`cta.judge.nli.BidirectionalJudge` is the implementation (template texts, e1/e2,
dedup, cache); a test double or another scorer only has to offer these four members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol, runtime_checkable

from cta.components import EntailmentModel
from cta.results import Candidate, JudgePair
from cta.table import Column, ColumnType

__all__ = ["Judge", "PairKey"]


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


class PairKey(NamedTuple):
    """One directed (column ⇒ candidate) pair in a table's context: the judge's unit of work
    and the key its scores are kept under (everything the judge's texts are made of)."""

    entity: str
    column: str
    column_type: ColumnType
    candidate: str
    candidate_type: ColumnType

    @classmethod
    def of(cls, entity: str, column: Column, cand: Candidate) -> PairKey:
        return cls(entity, column.name, column.type, cand.name, cand.type)

    def judge_pair(self) -> JudgePair:
        return JudgePair.model_validate(
            {
                "entity": self.entity,
                "target": {"name": self.column, "type": self.column_type},
                "candidate": {"name": self.candidate, "type": self.candidate_type},
            }
        )
