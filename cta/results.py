"""What the pipeline takes and hands back: per-request options and judge pairs, candidates,
judged decisions and perturbed tables. Plain pydantic models over :mod:`cta.table`, so the
client SDK parses with them without loading the engine."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, model_validator

from cta.table import ColumnType, InvalidTableError, NamedColumn, Table
from cta.text import text_problem

#: Where a candidate came from: ``retriever``, ``dictionary``, or the registered name of the
#: candidate source that proposed it (``thesaurus``, or any other a module registers; see
#: :mod:`cta.registry`), so a new source needs no edit here.
Source = str
Kind = Literal["rpl", "add"]
Verdict = Literal["RPL", "ADD", "NONE"]
EntitySource = Literal["given", "table-name", "predicted"]


class PerturbOptions(BaseModel):
    """Per-request knobs; ``None`` means "use the settings".

    Numbers are strict: ``"7"`` or ``false`` is not a seed (no silent coercion); an integer
    is a valid threshold.
    """

    seed: StrictInt = Field(default=0, ge=0, le=2**31 - 1)
    max_candidates: StrictInt | None = Field(
        default=None, ge=1, le=100, description="Keep at most this many RPL and ADD per column"
    )
    rpl_threshold: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    add_threshold: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    samples: StrictInt = Field(
        default=0, ge=0, le=20, description="Perturbed tables to draw of each kind (ADVETA)"
    )


class JudgeColumn(NamedColumn):
    """A column as the judge sees it: name and type."""


class JudgePair(BaseModel):
    """One (target, candidate) pair in the context of a table primary entity."""

    model_config = ConfigDict(frozen=True)

    entity: str | None = None
    target: JudgeColumn
    candidate: JudgeColumn

    @model_validator(mode="after")
    def _check_text(self) -> JudgePair:
        for where, text in (
            ("entity", self.entity or ""),
            ("target.name", self.target.name),
            ("candidate.name", self.candidate.name),
        ):
            problem = text_problem(text)
            if problem is not None:
                raise InvalidTableError("invalid_text", f"{where}: {problem}")
        return self


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
    rank_group: int | None = Field(
        default=None,
        description="ADD lists put lower groups first (entity schema: 0 = the target's own "
        "facet, 1 = the schema's other facets); None = after every grouped name",
    )


class EntityLink(BaseModel):
    """An entity schema a table may be about, scored (see :mod:`retriever.entity_linker`)."""

    entity: str
    domain: str
    score: float = Field(
        description="The link score: table similarity + name similarity + "
        "aligned share, weighted; the table links when it reaches the threshold"
    )
    table_similarity: float = Field(description="Encoder cosine of the table and the schema")
    name_similarity: float = Field(
        description="Word-vector cosine of the primary entity and the schema's entity names"
    )
    aligned_columns: int = Field(
        description="Columns of the table one of the schema's headers names"
    )
    columns: int = Field(description="Columns of the table")


class ColumnAlignment(BaseModel):
    """The column of the linked entity schema that a table column names."""

    entity: str
    column: str = Field(description="The schema column's name")
    facet: str
    type: ColumnType = ColumnType.TEXT
    score: float = Field(description="1.0 when a schema header names it, else word-vector cosine")
    via: Literal["header", "vectors"]


class ColumnCandidates(BaseModel):
    """The candidate pool of one target column."""

    column: str
    aligned_to: ColumnAlignment | None = None
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
    entity_links: list[EntityLink] = Field(
        default_factory=list, description="The best entity schemas, best first"
    )
    linked_entity: str | None = Field(
        default=None, description="The schema the table is linked to (None: below the threshold)"
    )
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

    @classmethod
    def of(
        cls, cand: Candidate, e1: float, e2: float, association: float | None = None
    ) -> Decision:
        """``cand`` judged: its scores rounded to 6 decimals (decided on the exact ones)."""
        return cls(
            name=cand.name,
            type=cand.type,
            e1=round(float(e1), 6),
            e2=round(float(e2), 6),
            association=None if association is None else round(float(association), 6),
            source=cand.source,
            provenance=cand.provenance,
        )


class ColumnPerturbations(BaseModel):
    """Accepted RPL and ADD names for one target column, best first."""

    column: str
    aligned_to: ColumnAlignment | None = Field(
        default=None, description="The linked schema's column this column names, if any"
    )
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
    entity_links: list[EntityLink] = Field(
        default_factory=list, description="The best entity schemas, best first"
    )
    linked_entity: str | None = Field(
        default=None, description="The schema the table is linked to (None: below the threshold)"
    )
    columns: list[ColumnPerturbations]
    samples: list[PerturbedTable] = Field(default_factory=list)


class JudgeScore(BaseModel):
    """Scores of one (target, candidate) pair, and its single-pair verdict."""

    e1: float
    e2: float
    # mean P(neutral) both ways (None for a judge without a neutral class)
    association: float | None = None
    verdict: Verdict
