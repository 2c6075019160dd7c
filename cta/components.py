"""The contracts between stages (retrieve → rerank → dictionary → judge → decide → apply).

Implementations live in :mod:`retriever` (encoders, index, reranker, lexicon) and
:mod:`cta.judge`; the pipeline only talks to these protocols, so any of them can be swapped
by a setting (see :mod:`cta.registry`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field

from cta.results import Candidate
from cta.table import Column, Table


class RetrievedTable(BaseModel):
    """A corpus table returned by the dense retriever."""

    table_id: str
    source: str
    score: float
    columns: list[Column] = Field(default_factory=list)


@runtime_checkable
class TableEncoder(Protocol):
    """Dense table encoder: tables → L2-normalised float32 vectors ``(n, dim)``."""

    name: str
    dim: int

    def encode(self, tables: Sequence[Table], batch_size: int = 32) -> np.ndarray: ...


@runtime_checkable
class Retriever(Protocol):
    """Top-k domain-related corpus tables for a query table (its own entry excluded)."""

    def retrieve(self, table: Table, k: int) -> list[RetrievedTable]: ...


@runtime_checkable
class Reranker(Protocol):
    """Word-embedding similarity between column names (normalised cosine in [-1, 1])."""

    def similarity(self, a: str, b: str) -> float: ...

    def rank(self, target: str, candidates: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The ``k`` most similar candidates, best first, ties broken by name."""
        ...


@runtime_checkable
class DictionaryReplacer(Protocol):
    """Word-level dictionary replacement for RPL candidates (seeded)."""

    def candidates(self, column: str, seed: int) -> list[Candidate]: ...


@runtime_checkable
class EntailmentModel(Protocol):
    """P(entailment | premise ⇒ hypothesis) for a batch of text pairs."""

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray: ...
