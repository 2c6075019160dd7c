"""CTA — Contextualized Table Augmentation: natural adversarial table perturbations.

The public surface: the table model, the pipeline and its options, the results, the settings
and the recipes that compose a pipeline. Everything else lives in submodules (see the
README's design notes for the layers). Importing :mod:`cta` loads no model library (torch,
transformers, faiss, gensim load when a component is built).
"""

from cta import recipes
from cta.pipeline import Cancelled, PerturbOptions, Pipeline, estimate_pairs
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
    "Cancelled",
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
    "PerturbOptions",
    "PerturbationResult",
    "PerturbedTable",
    "Pipeline",
    "Settings",
    "Table",
    "estimate_pairs",
    "get_settings",
    "recipes",
]
