"""CTA — Contextualized Table Augmentation: natural adversarial table perturbations.

The public surface: the table model, the pipeline and its options, the results, the settings
and the recipes that compose a pipeline. Everything else lives in submodules (see the
design notes in docs/design.md for the layers). Importing :mod:`cta` loads no model
library (torch, transformers, faiss, gensim load when a component is built).
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

# Each public name and the module it lives in, loaded on first use: ``import cta.table`` (what
# the client SDK's models need) does not load the pipeline, numpy or sqlglot.
_EXPORTS = {
    "Cancelled": "cta.pipeline",
    "Candidate": "cta.results",
    "CandidateReport": "cta.results",
    "Column": "cta.table",
    "ColumnCandidates": "cta.results",
    "ColumnPerturbations": "cta.results",
    "ColumnType": "cta.table",
    "Decision": "cta.results",
    "ForeignKey": "cta.table",
    "InvalidTableError": "cta.table",
    "JudgeScore": "cta.results",
    "PerturbOptions": "cta.results",
    "PerturbationResult": "cta.results",
    "PerturbedTable": "cta.results",
    "Pipeline": "cta.pipeline",
    "Settings": "cta.settings",
    "Table": "cta.table",
    "estimate_pairs": "cta.pipeline",
    "get_settings": "cta.settings",
}

if _TYPE_CHECKING:
    from cta import recipes
    from cta.pipeline import Cancelled, Pipeline, estimate_pairs
    from cta.results import (
        Candidate,
        CandidateReport,
        ColumnCandidates,
        ColumnPerturbations,
        Decision,
        JudgeScore,
        PerturbationResult,
        PerturbedTable,
        PerturbOptions,
    )
    from cta.settings import Settings, get_settings
    from cta.table import Column, ColumnType, ForeignKey, InvalidTableError, Table


def __getattr__(name: str) -> _Any:
    if name == "recipes":
        return _import_module("cta.recipes")
    if name in _EXPORTS:
        value = getattr(_import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cta' has no attribute {name!r}")


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
