"""The contracts between stages (retrieve → rerank → dictionary / sources → judge → decide → apply).

Implementations live in :mod:`retriever` (encoders, index, reranker, lexicon) and
:mod:`cta.judge`; the pipeline only talks to these protocols, so any of them can be swapped
by a setting (see :mod:`cta.registry`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cta.entity_schemas import EntitySchema
from cta.results import Candidate, ColumnAlignment, EntityLink
from cta.table import Column, NamedColumn, Table


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

    def rank_many(
        self, targets: Sequence[str], candidates: Sequence[str], k: int
    ) -> list[list[tuple[str, float]]]:
        """:meth:`rank` for several targets over one candidate list (one matrix product)."""
        ...


class TableLink(BaseModel):
    """A table's entity link: the best entity schemas, scored, and — when the best reaches the
    linker's threshold — that schema and the column of it each table column names."""

    model_config = ConfigDict(frozen=True)

    links: tuple[EntityLink, ...] = ()
    schema_: EntitySchema | None = Field(default=None, alias="schema")
    alignment: dict[str, ColumnAlignment] = Field(default_factory=dict)
    names: tuple[str, ...] = Field(
        default=(), description="The table's name and column names (name keys): its own words"
    )

    @property
    def entity(self) -> str | None:
        """The linked entity (None: not linked)."""
        return self.schema_.entity if self.schema_ is not None else None

    def names_other_column(self, column: str, name: str) -> bool:
        """Whether the linked schema holds ``name`` as a header of another column than the one
        ``column`` aligns with, and not of that one: by the schema, ``name`` is a different
        column of such tables (two columns of one entity never mean the same), so no rename of
        ``column`` (an employee's ``office``, the schema's ``location``, is no ``position``:
        that is its ``job title``). False for a column that aligns with nothing."""
        aligned = self.alignment.get(column)
        if aligned is None or self.schema_ is None:
            return False
        owners = self.schema_.columns_named(name)
        return bool(owners) and aligned.column not in owners

    def names_aligned_column(self, name: str) -> bool:
        """Whether ``name`` is a header of a schema column that some table column aligns with:
        that column under another name, so no new column (``date of birth`` beside a ``birth
        date``)."""
        if self.schema_ is None:
            return False
        owners = self.schema_.columns_named(name)
        return any(a.column in owners for a in self.alignment.values())


@runtime_checkable
class EntityLinker(Protocol):
    """A table → its best entity schemas and its columns' alignment (chosen by
    ``CTA_ENTITY_LINKER``; :mod:`retriever.entity_linker`)."""

    def link(self, table: Table, entity: str | None) -> TableLink: ...

    def contradicts(self, link: TableLink, name: str) -> bool:
        """Whether ``name`` names another kind of row than the linked one (``film`` or
        ``film title`` in a table of books), so that it cannot belong to the table."""
        ...

    def belongs_elsewhere(self, link: TableLink, name: str) -> bool:
        """Whether ``name`` is a column only tables of other domains than the linked one's
        have (``laps`` in a table of trains), so that it is no new column of the table."""
        ...


class ColumnContext(NamedColumn):
    """A target column (its name and type) in its table: what a candidate source may look at
    to fit its names.

    ``entity`` is the table's primary entity; ``others`` are the table's other columns;
    ``link`` the table's entity link, when a linker ran.
    """

    entity: str | None = None
    table_name: str | None = None
    others: tuple[Column, ...] = ()
    link: TableLink | None = None

    @classmethod
    def of(
        cls, table: Table, column: Column, entity: str | None, link: TableLink | None = None
    ) -> ColumnContext:
        """The context of ``column`` in ``table`` (whose primary entity is ``entity``)."""
        return cls(
            name=column.name,
            type=column.type,
            entity=entity,
            table_name=table.name,
            others=tuple(c for c in table.columns if c.name != column.name),
            link=link,
        )


@runtime_checkable
class DictionaryReplacer(Protocol):
    """Word-level dictionary replacement for RPL candidates (seeded).

    With a ``context``, only word senses that fit the column (its type, its table) are used.
    """

    def candidates(
        self, column: str, seed: int, context: ColumnContext | None = None
    ) -> list[Candidate]: ...


class SourceProposal(BaseModel):
    """What a candidate source proposes for one column: names that mean the same (RPL
    candidates) and names of associated, different columns (ADD candidates)."""

    equivalent: list[Candidate] = Field(default_factory=list)
    associated: list[Candidate] = Field(default_factory=list)
    typed: bool = Field(
        default=False,
        description="The associated names carry their own column types (an entity schema's); "
        "else a name's type is told by the name, then by the retrieved tables",
    )


@runtime_checkable
class CandidateSource(Protocol):
    """A source of column names people write, chosen by name in the settings
    (``CTA_CANDIDATE_SOURCES``); its proposals go to the judge like every other candidate."""

    name: str

    def propose(self, context: ColumnContext) -> SourceProposal: ...


@runtime_checkable
class KnownNames(Protocol):
    """Knows column names people write (name_key form): the headers of human-named corpus
    tables, the thesaurus. A header of a machine-named corpus (R datasets: ``price.sunshine``)
    reaches a user only when one of these knows it."""

    def known_names(self) -> frozenset[str]: ...


@runtime_checkable
class NameEquivalence(Protocol):
    """Knows column names that mean the same, or one of which is a broader name for the
    other (the thesaurus, WordNet): the ADD guard (:func:`cta.judge.add_rule.add_clash`)
    asks every component that implements it."""

    def same_meaning(self, a: str, b: str) -> bool:
        """Whether the name ``a`` can stand for the column ``b``."""
        ...


@runtime_checkable
class NamePart(Protocol):
    """Knows column names one of which holds a component of the other's values (WordNet:
    ``first name`` / ``employee name``): the ADD guard asks every component that implements
    it (:func:`cta.judge.add_rule.add_clash`, ``part_of``)."""

    def part_of(self, part: str, whole: str, entity: str | None = None) -> bool:
        """Whether the column ``part`` holds a part of the column ``whole``'s values in a table
        of ``entity``."""
        ...


@runtime_checkable
class AddCandidates(Protocol):
    """Replaces the ADD candidates of a target column (the "without retriever" ablation of
    ADVETA Table 5: ADD names from word-embedding neighbours instead of retrieved tables)."""

    def add_candidates(self, table: Table, target: Column, k: int) -> list[Candidate]: ...


@runtime_checkable
class EntailmentModel(Protocol):
    """P(entailment | premise ⇒ hypothesis) for a batch of text pairs."""

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray: ...
