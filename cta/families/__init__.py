"""The perturbation families of the seed papers beside CTA's RPL/ADD (issue 13; docs/method.md §5).

Every family turns a database and a seed into one :class:`~cta.families.base.DbEdit` (or
says why it cannot); :func:`run_families` applies the edits to every question of a dataset
(rewritten SQL, or the question itself for ``question-synonym``) and records, per item,
what changed or why it was left as it was. The Spider driver
(:func:`cta.datasets.perturb_spider`) writes the results beside RPL/ADD's.

=====================  ==================  =============================================
kind                   source              what changes
=====================  ==================  =============================================
abbreviation           Dr.Spider           mentioned columns → judged abbreviations
content-equivalence    Dr.Spider           a column → an equivalent representation
shuffle                MT-Teql             column and table order
opaque-keys            MT-Teql             key declarations removed
remove-column          MT-Teql             an unused column dropped
normalise              MT-Teql             an unused column moved to a linked table
flatten                MT-Teql             an FK-referenced table merged into its referrer
insert-column          MT-Teql             a has-a column (an ADD name) added
table-rename           schema evolution    tables → equivalent names (pipeline + judge)
column-split           schema evolution    one column → two or three
column-merge           schema evolution    two columns → one
question-synonym       Spider-Syn          schema words of the question → synonyms
=====================  ==================  =============================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cta.families.base import (
    FAMILY_KINDS,
    Family,
    FamilyContext,
    NotApplicable,
    Usage,
    entry_of,
    rewrite_for,
    usage_of,
)
from cta.families.expressions import ColumnMerge, ColumnSplit, ContentEquivalence
from cta.families.flatten import Flatten
from cta.families.model import DbEdit, materialise_edit
from cta.families.naming import (
    Abbreviation,
    EquivalenceJudge,
    InsertColumn,
    Proposals,
    QuestionSynonym,
    TableRename,
)
from cta.families.structure import Normalise, OpaqueKeys, RemoveColumn, Shuffle
from cta.registry import Registry
from cta.results import PerturbationResult
from cta.table import Table

__all__ = [
    "FAMILIES",
    "FAMILY_KINDS",
    "Abbreviation",
    "ColumnMerge",
    "ColumnSplit",
    "ContentEquivalence",
    "DbEdit",
    "EquivalenceJudge",
    "Family",
    "FamilyContext",
    "FamilyFactory",
    "FamilyTools",
    "Flatten",
    "InsertColumn",
    "Normalise",
    "NotApplicable",
    "OpaqueKeys",
    "QuestionSynonym",
    "RemoveColumn",
    "Shuffle",
    "TableRename",
    "Usage",
    "entry_of",
    "family_kinds",
    "make_families",
    "materialise_edit",
    "register_family",
    "rewrite_for",
    "unregister_family",
    "usage_of",
]


@dataclass(frozen=True)
class FamilyTools:
    """What a family may be built with: the pipeline's proposals (one memo shared by every
    family of a run) and the judge's equivalence rule."""

    proposals: Proposals
    judge: EquivalenceJudge


FamilyFactory = Callable[[FamilyTools], Family]
"""Builds one family for a run."""

FAMILIES: Registry[FamilyFactory] = Registry("family", "unknown_family")
"""Every family that can run, by kind (:func:`register_family` adds one)."""


def register_family(kind: str, factory: FamilyFactory) -> None:
    """Make the family ``kind`` runnable by name (:func:`make_families`, the Spider driver,
    :func:`cta.datasets.perturb_dataset`): one line beside the family's class."""
    if kind in ("rpl", "add", "all", "original") or not kind:
        raise ValueError(f"{kind!r} cannot name a family")
    FAMILIES.register(kind, factory)


def unregister_family(kind: str) -> None:
    """Forget a family registered by :func:`register_family` (a plug-in's or a test's)."""
    FAMILIES.unregister(kind)


def family_kinds() -> tuple[str, ...]:
    """Every family that can run, in registration order (the seed papers' first)."""
    return FAMILIES.names()


register_family("abbreviation", lambda tools: Abbreviation(tools.judge))
register_family("content-equivalence", lambda tools: ContentEquivalence())
register_family("shuffle", lambda tools: Shuffle())
register_family("opaque-keys", lambda tools: OpaqueKeys())
register_family("remove-column", lambda tools: RemoveColumn())
register_family("normalise", lambda tools: Normalise())
register_family("flatten", lambda tools: Flatten())
register_family("insert-column", lambda tools: InsertColumn(tools.proposals))
register_family("table-rename", lambda tools: TableRename(tools.proposals))
register_family("column-split", lambda tools: ColumnSplit())
register_family("column-merge", lambda tools: ColumnMerge())
register_family("question-synonym", lambda tools: QuestionSynonym(tools.proposals))


def make_families(
    kinds: Sequence[str],
    proposer: Callable[[Sequence[Table]], list[PerturbationResult]],
    judge: EquivalenceJudge,
) -> dict[str, Family]:
    """The families named by ``kinds``, sharing one memo of the pipeline's proposals
    (:class:`~cta.registry.UnknownNameError`, ``unknown_family``, for a kind none registered)."""
    factories = {k: FAMILIES.get(k) for k in kinds}
    tools = FamilyTools(Proposals(proposer), judge)
    return {k: factory(tools) for k, factory in factories.items()}
