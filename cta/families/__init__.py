"""Every perturbation kind is a family: CTA's RPL and ADD and those of the seed papers
(docs/method.md §5), each registered here by name with its planning scope and what it needs.

Every family turns a database (per question, or per database) and a seed into one
:class:`~cta.families.base.DbEdit` (or says why it cannot);
:func:`cta.families.run.run_families` applies the edits to every question of a dataset
(rewritten SQL, or the question itself for ``question-synonym``) and records, per item,
what changed or why it was left as it was. A format's driver states what it can hold
(:data:`~cta.families.base.Need`), and only the families whose needs it holds run there
(:func:`held_kinds`).

=====================  ==================  =============================================
kind                   source              what changes
=====================  ==================  =============================================
rpl                    ADVETA              mentioned columns → equivalent names
add                    ADVETA              an associated column beside each mentioned one
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

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from cta.apply.sample import ValueMode
from cta.families.base import (
    NEEDS,
    Family,
    FamilyContext,
    Need,
    NotApplicable,
    Scope,
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
from cta.families.proposed import MentionedProposals, ProposedColumns
from cta.families.structure import Normalise, OpaqueKeys, RemoveColumn, Shuffle
from cta.registry import Registry
from cta.results import PerturbationResult
from cta.table import Table

__all__ = [
    "FAMILIES",
    "NEEDS",
    "Abbreviation",
    "ColumnMerge",
    "ColumnSplit",
    "ContentEquivalence",
    "DbEdit",
    "EquivalenceJudge",
    "Family",
    "FamilyContext",
    "FamilyFactory",
    "FamilySpec",
    "FamilyTools",
    "Flatten",
    "InsertColumn",
    "Need",
    "Normalise",
    "NotApplicable",
    "OpaqueKeys",
    "ProposedColumns",
    "QuestionSynonym",
    "RemoveColumn",
    "Scope",
    "Shuffle",
    "TableRename",
    "Usage",
    "entry_of",
    "family_kinds",
    "family_spec",
    "held_kinds",
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
    family of a run; RPL's and ADD's asked once over every mentioned column), the judge's
    equivalence rule and how an added column's cells are made."""

    proposals: Proposals
    judge: EquivalenceJudge
    mentioned: MentionedProposals
    values: ValueMode = "generate"


FamilyFactory = Callable[[FamilyTools], Family]
"""Builds one family for a run."""


@dataclass(frozen=True)
class FamilySpec:
    """A registered family: how to build it, where it plans and what it needs."""

    factory: FamilyFactory
    scope: Scope = "database"
    needs: frozenset[Need] = frozenset({"database"})


FAMILIES: Registry[FamilySpec] = Registry("family", "unknown_family")
"""Every family that can run, by kind (:func:`register_family` adds one)."""


def register_family(
    kind: str,
    factory: FamilyFactory,
    *,
    scope: Scope = "database",
    needs: Collection[Need] = frozenset({"database"}),
) -> None:
    """Make the family ``kind`` runnable by name (:func:`make_families`, every driver whose
    format holds its ``needs``, the CLI's ``--kind`` and the HTTP API's ``kinds``): one line
    beside the family's class. ``scope``: ``database`` (one edit per database and seed) or
    ``question`` (one per question and seed); ``needs``: what it needs of a format and of the
    run (:data:`~cta.families.base.Need`)."""
    if kind in ("all", "original") or not kind:
        raise ValueError(f"{kind!r} cannot name a family")
    unknown = [n for n in needs if n not in NEEDS]
    if unknown:
        raise ValueError(f"{kind}: unknown needs {', '.join(unknown)} (known: {', '.join(NEEDS)})")
    FAMILIES.register(kind, FamilySpec(factory, scope, frozenset(needs)))


def unregister_family(kind: str) -> None:
    """Forget a family registered by :func:`register_family` (a plug-in's or a test's)."""
    FAMILIES.unregister(kind)


def family_kinds() -> tuple[str, ...]:
    """Every family that can run, in registration order (RPL and ADD, then the seed papers')."""
    return FAMILIES.names()


def family_spec(kind: str) -> FamilySpec:
    """The registration of ``kind`` (:class:`~cta.registry.UnknownNameError`,
    ``unknown_family``, for a kind none registered)."""
    return FAMILIES.get(kind)


def held_kinds(holds: Collection[Need]) -> tuple[str, ...]:
    """The kinds a format holding ``holds`` can run: those whose needs, the judge aside, it
    holds, in registration order."""
    return tuple(k for k in family_kinds() if family_spec(k).needs - {"judge"} <= frozenset(holds))


register_family(
    "rpl",
    lambda tools: ProposedColumns("rpl", tools.mentioned, tools.values),
    scope="question",
    needs=(),
)
register_family(
    "add",
    lambda tools: ProposedColumns("add", tools.mentioned, tools.values),
    scope="question",
    needs=(),
)
register_family(
    "abbreviation", lambda tools: Abbreviation(tools.judge), needs=("database", "judge")
)
register_family(
    "content-equivalence", lambda tools: ContentEquivalence(), needs=("database", "expressions")
)
register_family("shuffle", lambda tools: Shuffle())
register_family("opaque-keys", lambda tools: OpaqueKeys(), needs=("database", "keys"))
register_family(
    "remove-column", lambda tools: RemoveColumn(), needs=("database", "dropped-columns")
)
register_family(
    "normalise",
    lambda tools: Normalise(),
    needs=("database", "dropped-columns", "several-tables"),
)
register_family(
    "flatten",
    lambda tools: Flatten(),  # its own rewrite of the queries
    needs=("database", "several-tables", "merged-tables", "expressions"),
)
register_family("insert-column", lambda tools: InsertColumn(tools.proposals))
register_family(
    "table-rename", lambda tools: TableRename(tools.proposals), needs=("database", "table-names")
)
register_family("column-split", lambda tools: ColumnSplit(), needs=("database", "expressions"))
register_family("column-merge", lambda tools: ColumnMerge(), needs=("database", "expressions"))
register_family("question-synonym", lambda tools: QuestionSynonym(tools.proposals))


def make_families(
    kinds: Sequence[str],
    proposer: Callable[[Sequence[Table]], list[PerturbationResult]],
    judge: EquivalenceJudge,
    values: ValueMode = "generate",
) -> dict[str, Family]:
    """The families named by ``kinds``, sharing the memos of the pipeline's proposals
    (:class:`~cta.registry.UnknownNameError`, ``unknown_family``, for a kind none registered)."""
    specs = {k: FAMILIES.get(k) for k in kinds}
    tools = FamilyTools(Proposals(proposer), judge, MentionedProposals(proposer), values)
    return {k: spec.factory(tools) for k, spec in specs.items()}
