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

from cta.families.base import (
    FAMILY_KINDS,
    DbEdit,
    Family,
    FamilyContext,
    NotApplicable,
    Usage,
    entry_of,
    materialise_edit,
    rewrite_for,
    usage_of,
)
from cta.families.expressions import ColumnMerge, ColumnSplit, ContentEquivalence
from cta.families.flatten import Flatten
from cta.families.naming import (
    Abbreviation,
    EquivalenceJudge,
    InsertColumn,
    Proposals,
    QuestionSynonym,
    TableRename,
)
from cta.families.structure import Normalise, OpaqueKeys, RemoveColumn, Shuffle
from cta.results import PerturbationResult
from cta.table import Table

__all__ = [
    "FAMILY_KINDS",
    "Abbreviation",
    "ColumnMerge",
    "ColumnSplit",
    "ContentEquivalence",
    "DbEdit",
    "EquivalenceJudge",
    "Family",
    "FamilyContext",
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
    "make_families",
    "materialise_edit",
    "rewrite_for",
    "usage_of",
]


def make_families(
    kinds: Sequence[str],
    proposer: Callable[[Sequence[Table]], list[PerturbationResult]],
    judge: EquivalenceJudge,
) -> dict[str, Family]:
    """The families named by ``kinds``, sharing one memo of the pipeline's proposals."""
    proposals = Proposals(proposer)

    factories: dict[str, Callable[[], Family]] = {
        "abbreviation": lambda: Abbreviation(judge),
        "content-equivalence": ContentEquivalence,
        "shuffle": Shuffle,
        "opaque-keys": OpaqueKeys,
        "remove-column": RemoveColumn,
        "normalise": Normalise,
        "flatten": Flatten,
        "insert-column": lambda: InsertColumn(proposals),
        "table-rename": lambda: TableRename(proposals),
        "column-split": ColumnSplit,
        "column-merge": ColumnMerge,
        "question-synonym": lambda: QuestionSynonym(proposals),
    }
    unknown = [k for k in kinds if k not in factories]
    if unknown:
        raise ValueError(f"unknown families: {', '.join(unknown)}")
    return {k: factories[k]() for k in kinds}
