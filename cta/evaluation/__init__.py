"""Evaluating text-to-SQL models on perturbed datasets (``cta eval``).

Reads a folder written by ``cta dataset perturb --format spider`` (:func:`load_directory`),
gets predictions from files, an endpoint, a Python function or a built-in reference model
(:mod:`cta.evaluation.predictions`, :mod:`cta.evaluation.models`), scores them by execution
(test-suite-sql-eval's conventions) and Spider's exact set match over sqlglot parses, and
reports pre/post, drops and relative robustness per kind and seed (:func:`evaluate`,
:func:`write_report`).
"""

from cta.evaluation.exact_match import ExactMatcher, SqlTree, UnsupportedSql, exact_set_match
from cta.evaluation.execution import ExecutionOutcome, ExecutionScorer, result_eq
from cta.evaluation.linking import SchemaLinks, link_schema
from cta.evaluation.models import MODELS, Oracle, reference_model
from cta.evaluation.payload import evaluate_payload
from cta.evaluation.predictions import (
    EndpointPredictions,
    EntryPointPredictions,
    FilePredictions,
    Prediction,
    Predictor,
)
from cta.evaluation.report import markdown, write_report
from cta.evaluation.scoring import build_report, evaluate
from cta.evaluation.sets import EvalDirectory, Question, QuestionSet, load_directory
from cta.formats.spider_schema import SpiderSchema

__all__ = [
    "MODELS",
    "EndpointPredictions",
    "EntryPointPredictions",
    "EvalDirectory",
    "ExactMatcher",
    "ExecutionOutcome",
    "ExecutionScorer",
    "FilePredictions",
    "Oracle",
    "Prediction",
    "Predictor",
    "Question",
    "QuestionSet",
    "SchemaLinks",
    "SpiderSchema",
    "SqlTree",
    "UnsupportedSql",
    "build_report",
    "evaluate",
    "evaluate_payload",
    "exact_set_match",
    "link_schema",
    "load_directory",
    "markdown",
    "reference_model",
    "result_eq",
    "write_report",
]
