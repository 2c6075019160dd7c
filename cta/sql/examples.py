"""The examples a dataset protocol reads and the per-item records it writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["PerturbedExample", "SqlExample"]


@dataclass(frozen=True)
class SqlExample:
    """One NL–SQL pair: an id, its database and its gold SQL."""

    id: str
    db_id: str
    sql: str


class PerturbedExample(BaseModel):
    """One example under one perturbation: the rewritten SQL and the mapping applied."""

    id: str
    kind: str = Field(description="rpl, add or a family (cta.families)")
    seed: int
    db_id: str
    perturbed_db_id: str
    sql: str | None = Field(description="Rewritten gold SQL; None when it could not be")
    problem: str | None = Field(default=None, description="Why the SQL was not rewritten")
    mapping: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Per table: RPL old → new name, ADD target → added name (natural names)",
    )
    sql_mapping: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="The same mapping between SQL identifiers"
    )
    unperturbed: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Per table: mentioned columns left as they were → why"
    )
    operation: str | None = Field(
        default=None, description="Families: the schema operation applied to the database"
    )
    unchanged: str | None = Field(
        default=None, description="Families: why this item was left as it was (original SQL)"
    )
    question: str | None = Field(
        default=None, description="question-synonym: the rewritten question"
    )

    @classmethod
    def of(
        cls, example_id: str, db_id: str, kind: str, seed: int, **fields: Any
    ) -> PerturbedExample:
        """Example ``example_id`` of ``db_id`` under ``kind`` and ``seed``: on that database
        unless ``fields`` name another (``perturbed_db_id``), with ``fields`` (``sql``…)."""
        own = {"id": example_id, "db_id": db_id, "perturbed_db_id": db_id}
        return cls(**(own | fields), kind=kind, seed=seed)
