"""What the pipeline hands back: candidates, judged decisions and perturbed tables."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from cta.table import ColumnType, Table

Source = Literal["retriever", "dictionary", "thesaurus"]
Kind = Literal["rpl", "add"]
Verdict = Literal["RPL", "ADD", "NONE"]
EntitySource = Literal["given", "table-name", "predicted"]


class Candidate(BaseModel):
    """A proposed column name for one target column, before the judge."""

    name: str
    type: ColumnType = ColumnType.TEXT
    score: float = Field(
        description="Reranker cosine (retriever), sampling order (dictionary) or list order (thesaurus)"
    )
    source: Source
    provenance: str = Field(
        default="", description="Corpus table id(s), dictionary words or thesaurus header"
    )
    shared_columns: int | None = Field(
        default=None,
        description="Retriever: the most columns of the query table that one retrieved table "
        "holding this name also holds (its domain support; None for other sources)",
    )


class ColumnCandidates(BaseModel):
    """The candidate pool of one target column."""

    column: str
    retrieved: list[Candidate] = Field(default_factory=list)
    dictionary: list[Candidate] = Field(default_factory=list)
    equivalent: list[Candidate] = Field(
        default_factory=list, description="Same-meaning names from candidate sources (RPL only)"
    )
    associated: list[Candidate] = Field(
        default_factory=list, description="Associated names from candidate sources (ADD only)"
    )


class CandidateReport(BaseModel):
    """Output of ``cta candidates``: the pools of every target column."""

    table_id: str | None
    primary_entity: str | None
    retrieved_tables: list[str] = Field(default_factory=list)
    columns: list[ColumnCandidates]


class Decision(BaseModel):
    """A judged candidate: bidirectional entailment and where it came from."""

    name: str
    type: ColumnType = ColumnType.TEXT
    e1: float
    e2: float
    # ADD: mean P(neutral) both ways against the target (None: RPL, or the paper's ADD rule)
    association: float | None = None
    source: Source
    provenance: str = ""


class ColumnPerturbations(BaseModel):
    """Accepted RPL and ADD names for one target column, best first."""

    column: str
    replace: list[Decision] = Field(default_factory=list)
    add: list[Decision] = Field(default_factory=list)


class PerturbedTable(BaseModel):
    """One sampled perturbation of a table (ADVETA protocol: every target perturbed once)."""

    kind: Kind
    seed: int
    sample: int = Field(default=0, description="Index among the samples drawn with this seed")
    mapping: dict[str, str] = Field(
        default_factory=dict, description="RPL: old name → new name; ADD: target → added name"
    )
    unperturbed: dict[str, str] = Field(
        default_factory=dict,
        description="Target columns left as they were → why (no_candidates, name_collision)",
    )
    table: Table


class PerturbationResult(BaseModel):
    """Everything CTA proposes for one table."""

    table_id: str | None
    primary_entity: str
    entity_source: EntitySource
    columns: list[ColumnPerturbations]
    samples: list[PerturbedTable] = Field(default_factory=list)


class JudgeScore(BaseModel):
    """Scores of one (target, candidate) pair, and its single-pair verdict."""

    e1: float
    e2: float
    # mean P(neutral) both ways (None for a judge without a neutral class)
    association: float | None = None
    verdict: Verdict
