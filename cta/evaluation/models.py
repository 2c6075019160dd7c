"""Reference models built in, so ``cta eval`` is useful (and testable) without a parser.

``oracle``
    predicts the gold SQL. Its EX and EM are 100 % on every set: anything less is a bug in
    rewriting or in evaluation.
``lexical-probe``
    predicts nothing; it links question n-grams to the schema by string match
    (:mod:`cta.evaluation.linking`) and reports the linking recall and precision of the gold
    SQL's columns — a model-free measure of how adversarial each kind is.
``nearest-train``
    a weak but real parser (:class:`~cta.evaluation.nearest.NearestTrain`): retrieves the
    nearest Spider training question and adapts its SQL by schema linking.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cta.evaluation.nearest import NearestTrain
from cta.evaluation.predictions import Prediction, Predictor
from cta.evaluation.sets import EvalDirectory, Question

__all__ = ["MODELS", "Oracle", "reference_model"]

MODELS = ("oracle", "lexical-probe", "nearest-train")


class Oracle:
    """The gold SQL as the prediction (the only model that reads it)."""

    name = "oracle"

    def predict(self, questions: Sequence[Question], directory: EvalDirectory) -> list[Prediction]:
        return [Prediction(q.gold) for q in questions]


def reference_model(
    name: str,
    train_questions: str | Path | None = None,
    train_tables: str | Path | None = None,
) -> Predictor | None:
    """The built-in model ``name``; ``None`` for ``lexical-probe`` (it predicts no SQL)."""
    if name == "oracle":
        return Oracle()
    if name == "lexical-probe":
        return None
    if name == "nearest-train":
        if train_questions is None or train_tables is None:
            raise ValueError("nearest-train needs training questions and their tables.json")
        return NearestTrain(train_questions, train_tables)
    raise ValueError(f"unknown model {name!r}; one of {', '.join(MODELS)}")
