"""CTA — Contextualized Table Augmentation: natural adversarial table perturbations.

The public surface: the table model, settings and the pipeline. Implementation details live
in submodules.
"""

from cta.results import (
    Candidate,
    CandidateReport,
    ColumnCandidates,
    ColumnPerturbations,
    Decision,
    JudgeScore,
    PerturbationResult,
    PerturbedTable,
)
from cta.settings import Settings, get_settings
from cta.table import Column, ColumnType, ForeignKey, InvalidTableError, Table

__all__ = [
    "Candidate",
    "CandidateReport",
    "Column",
    "ColumnCandidates",
    "ColumnPerturbations",
    "ColumnType",
    "Decision",
    "ForeignKey",
    "InvalidTableError",
    "JudgeScore",
    "PerturbationResult",
    "PerturbedTable",
    "Settings",
    "Table",
    "get_settings",
]
