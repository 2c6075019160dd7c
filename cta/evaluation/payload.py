"""Evaluation without a folder: ``tables.json`` entries and question records in memory (the
service's ``eval`` jobs, one source database at a time).

A dataset job returns schemas and SQL, not SQLite files, so the databases are synthesised
here from each ``tables.json`` entry — seeded rows, foreign keys consistent, the literals
the gold queries compare with put in the columns they compare them with
(:func:`cta.sql.database.synthesise_rows`). Gold and prediction run on the same database,
so execution accuracy stays meaningful; figures can differ a little from ``cta eval`` on a
folder, whose databases hold the perturbed copies of the original rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cta.evaluation.models import Oracle
from cta.evaluation.predictions import EndpointPredictions, Prediction, Predictor
from cta.evaluation.scoring import score_items
from cta.evaluation.sets import EvalDirectory, Question, QuestionSet, question_from_record
from cta.formats.spider import database_path, spider_schema
from cta.reports import EvalDatabaseResult
from cta.sql.database import ColumnRef, create_database, synthesis_note, synthesise_rows
from cta.sql.rewrite import SqlRewriteError, bind_query

__all__ = ["GivenPredictions", "evaluate_payload"]

PayloadModel = Literal["oracle", "lexical-probe"]
SYNTHESIS_SEED = 0


class GivenPredictions:
    """Predictions handed over with the questions: ``{set: {position: sql}}``."""

    name = "predictions"

    def __init__(self, predictions: Mapping[str, Mapping[int, str | None]]) -> None:
        self.predictions = predictions

    def predict(self, questions: Sequence[Question], directory: EvalDirectory) -> list[Prediction]:
        out = []
        for q in questions:
            sql = self.predictions.get(q.set, {}).get(q.position)
            out.append(Prediction(sql) if sql is not None else Prediction(None, "no prediction"))
        return out


def _synthesise(
    root: Path, entries: Mapping[str, Mapping[str, Any]], questions: Sequence[Question]
) -> None:
    golds: dict[str, list[str]] = {}
    for q in questions:
        golds.setdefault(q.db_id, []).append(q.gold)
    for db_id, entry in entries.items():
        schema = spider_schema(entry)
        pools: dict[ColumnRef, list[Any]] = {}
        links: list[tuple[ColumnRef, ColumnRef]] = []
        for gold in golds.get(db_id, []):
            try:
                bound = bind_query(gold, schema)
            except SqlRewriteError:
                continue
            for ref, values in bound.literals.items():
                pools.setdefault(ref, []).extend(values)
            links.extend(bound.links)
        create_database(
            database_path(root / "database", db_id),
            schema,
            synthesise_rows(schema, SYNTHESIS_SEED, pools, links),
        )


def evaluate_payload(
    entries: Sequence[Mapping[str, Any]],
    sets: Mapping[str, Sequence[tuple[int, Mapping[str, Any]]]],
    *,
    predictions: Mapping[str, Mapping[int, str | None]] | None = None,
    endpoint: str | None = None,
    model: PayloadModel | None = None,
    timeout: float = 10.0,
) -> EvalDatabaseResult:
    """Score the records of ``sets`` (``{stem: [(position, record)]}``) over databases
    synthesised from ``entries``; predictions given, asked of ``endpoint``, or a built-in
    ``model``. Raises :class:`~cta.table.InvalidTableError` for an unusable record."""
    by_id = {str(e["db_id"]): dict(e) for e in entries}
    question_sets = []
    for stem, records in sets.items():
        questions = [
            question_from_record(stem, position, dict(r), by_id, f"{stem}[{position}]")
            for position, r in records
        ]
        kind = questions[0].kind if questions else "original"
        seed = questions[0].seed if questions else None
        question_sets.append(QuestionSet(stem, stem, kind, seed, questions))
    questions = [q for s in question_sets for q in s.questions]
    predictor: Predictor | None
    if predictions is not None:
        predictor = GivenPredictions(predictions)
    elif endpoint is not None:
        predictor = EndpointPredictions(endpoint)
    elif model == "oracle":
        predictor = Oracle()
    else:
        predictor = None
    with tempfile.TemporaryDirectory(prefix="cta-eval-") as tmp:
        root = Path(tmp)
        _synthesise(root, by_id, questions)
        directory = EvalDirectory(root, by_id, question_sets)
        answers = predictor.predict(questions, directory) if predictor is not None else None
        items = score_items(
            directory, questions, answers, linking=predictor is None, timeout=timeout
        )
    source = min(
        (q for q in questions if q.kind == "original"), default=None, key=lambda q: q.position
    )
    label = model or (predictor.name if predictor is not None else "lexical-probe")
    return EvalDatabaseResult(
        db_id=source.db_id if source else (questions[0].db_id if questions else ""),
        model=label,
        items=items,
        databases=synthesis_note(SYNTHESIS_SEED),
    )
