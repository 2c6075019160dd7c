"""Scoring a model on a perturbed dataset folder: per item, per set (pre/post), per kind.

Dr.Spider's protocol (Chang et al., 2023): for a perturbed set, *pre* is the model on the
original questions of the examples the set holds (original database), *post* the model on
the perturbed records (perturbed database); pairs are matched by ``source_index``. Per set:
execution accuracy (EX, :mod:`cta.evaluation.execution`), exact set match (EM,
:mod:`cta.evaluation.exact_match`), the absolute drop ``pre − post``, the relative drop
``(pre − post) / pre`` and the relative robustness — among the pairs the model gets right
before, the share it still gets right after. Per kind: mean and sample standard deviation
over seeds (ADVETA reports 5 seeds). With ``linking`` (the lexical probe), the schema-linking
recall and precision of the gold SQL's columns, pre and post.

A BIRD folder (``layout == "bird"``) is scored as BIRD scores: EX by its convention (result
sets compared as sets), no EM (BIRD reports none, and its SQL is outside Spider's), and
every figure also by BIRD's difficulty (``simple``, ``moderate``, ``challenging``).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from sqlglot import exp

from cta.evaluation.exact_match import ExactMatcher, UnsupportedSql, bind
from cta.evaluation.execution import DEFAULT_TIMEOUT, ExecutionScorer
from cta.evaluation.linking import LinkCounts, link_schema
from cta.evaluation.predictions import Prediction, Predictor
from cta.evaluation.sets import BIRD, ORIGINAL, EvalDirectory, Question, QuestionSet
from cta.formats.spider_schema import SpiderSchema
from cta.reports import EvalReport, ItemResult, KindSummary, Scores, SetResult, Spread
from cta.sql.identifiers import evaluator_fold

__all__ = [
    "build_report",
    "evaluate",
    "mentioned_columns",
    "score_items",
    "sets_of",
]

METRICS = ("ex", "em")
DIFFICULTIES = ("simple", "moderate", "challenging")  # BIRD's, in its reports' order


# -- items ------------------------------------------------------------------------------------------
def score_items(
    directory: EvalDirectory,
    questions: Sequence[Question],
    predictions: Sequence[Prediction] | None,
    linking: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    keep_distinct: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[ItemResult]:
    """Score each question's prediction (EX, EM; EX alone, BIRD's way, for a BIRD folder);
    with ``linking``, the probe's links."""
    bird = directory.layout == BIRD
    executor = ExecutionScorer(
        timeout=timeout, keep_distinct=keep_distinct, convention="bird" if bird else "test-suite"
    )
    matcher = ExactMatcher()
    items = []
    for i, q in enumerate(questions):
        item = ItemResult(**asdict(q))  # the question's fields, then what scoring adds
        schema = directory.schema(q.db_id)
        if predictions is not None:
            prediction = predictions[i]
            item.pred = prediction.sql
            outcome = executor.score(directory.database(q.db_id), q.gold, prediction.sql)
            item.status = outcome.status
            item.message = prediction.error or outcome.message
            item.ex = None if outcome.status == "gold_error" else outcome.correct
            item.em = None if bird else matcher.score(schema, q.gold, prediction.sql)
        if linking:
            links = link_schema(q.question, schema)
            try:
                gold_columns = mentioned_columns(q.gold, schema)
            except UnsupportedSql as exc:
                item.status, item.message = "gold_unsupported", str(exc)
            else:
                item.status = item.status or "linked"
                item.gold_columns = [schema.column_key(c) for c in gold_columns]
            item.linked_columns = {
                schema.column_key(c): s for c, s in sorted(links.columns.items())
            }
        items.append(item)
        if progress is not None:
            progress(1)
    return items


def mentioned_columns(sql: str, schema: SpiderSchema) -> list[int]:
    """The columns a query mentions; ``SELECT *`` / ``T.*`` mention every column of their
    tables (an ADD rewrite spells a star out as the original columns, so pre and post agree)."""
    bound = bind(sql, schema)
    found = set(bound.columns.values())
    for select in bound.tree.find_all(exp.Select):
        tables = [
            (evaluator_fold(node.alias_or_name), bound.tables[id(node)])
            for node in select.find_all(exp.Table)
            if id(node) in bound.tables and node.find_ancestor(exp.Select) is select
        ]
        for projection in select.expressions:
            star = isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
            )
            if not star:
                continue
            qualifier = (
                evaluator_fold(projection.table) if isinstance(projection, exp.Column) else ""
            )
            for name, t in tables:
                if not qualifier or qualifier == name:
                    found.update(schema.table_columns(t))
    return sorted(found)


def _scores(items: Sequence[ItemResult], linking: bool) -> Scores:
    scores = Scores(n=len(items))
    for metric in METRICS:
        values = [getattr(it, metric) for it in items if getattr(it, metric) is not None]
        setattr(scores, metric, round(sum(values) / len(values), 4) if values else None)
    if linking:
        counts = LinkCounts()
        for it in items:
            if it.gold_columns is None or it.linked_columns is None:
                continue
            counts.add(it.gold_columns, it.linked_columns)
        for key, value in counts.metrics().items():
            setattr(scores, key, value)
    return scores


def _by_difficulty(items: Sequence[ItemResult], linking: bool) -> dict[str, Scores]:
    """Scores per difficulty (BIRD's order first), empty when no item has one."""
    groups: dict[str, list[ItemResult]] = {}
    for it in items:
        if it.difficulty is not None:
            groups.setdefault(it.difficulty, []).append(it)
    order = {d: i for i, d in enumerate(DIFFICULTIES)}
    ranked = sorted(groups, key=lambda d: (order.get(d, len(order)), d))
    return {d: _scores(groups[d], linking) for d in ranked}


def _drop(pre: float | None, post: float | None) -> tuple[float | None, float | None]:
    if pre is None or post is None:
        return None, None
    return round(pre - post, 4), (round((pre - post) / pre, 4) if pre else None)


def _robustness(pairs: Sequence[tuple[ItemResult, ItemResult]], metric: str) -> float | None:
    before = [
        (a, b) for a, b in pairs if getattr(a, metric) is True and getattr(b, metric) is not None
    ]
    if not before:
        return None
    return round(sum(1 for _, b in before if getattr(b, metric)) / len(before), 4)


def _set_result(
    qset: QuestionSet,
    post_items: Sequence[ItemResult],
    originals: dict[int, ItemResult],
    linking: bool,
) -> SetResult:
    pairs = [(originals[it.source_index], it) for it in post_items if it.source_index in originals]
    pre = _scores([a for a, _ in pairs], linking)
    post = _scores([b for _, b in pairs], linking)
    absolute: dict[str, float | None] = {}
    relative: dict[str, float | None] = {}
    robust: dict[str, float | None] = {}
    names = [*METRICS, "linking_recall", "linking_precision"] if linking else list(METRICS)
    for metric in names:
        absolute[metric], relative[metric] = _drop(getattr(pre, metric), getattr(post, metric))
        if metric in METRICS:
            robust[metric] = _robustness(pairs, metric)
    named = {"name": qset.name, "set": qset.stem, "kind": qset.kind, "seed": qset.seed}
    drops = {"absolute_drop": absolute, "relative_drop": relative, "relative_robustness": robust}
    levels = {
        "pre_by_difficulty": _by_difficulty([a for a, _ in pairs], linking),
        "post_by_difficulty": _by_difficulty([b for _, b in pairs], linking),
    }
    return SetResult.model_validate(
        {**named, "n": len(pairs), "pre": pre, "post": post, **drops, **levels}
    )


def _spread(values: Sequence[float | None]) -> Spread:
    present = [v for v in values if v is not None]
    if not present:
        return Spread(mean=None, std=None)
    std = statistics.stdev(present) if len(present) > 1 else 0.0
    return Spread(mean=round(statistics.fmean(present), 4), std=round(std, 4))


def _spreads(
    group: Sequence[SetResult], get: Callable[[SetResult], dict[str, Any]]
) -> dict[str, Spread]:
    keys = list(dict.fromkeys(k for r in group for k in get(r)))
    return {k: _spread([get(r).get(k) for r in group]) for k in keys}


def _summaries(results: Sequence[SetResult]) -> list[KindSummary]:
    groups: dict[tuple[str, str], list[SetResult]] = {}
    for r in results:
        groups.setdefault((r.name, r.kind), []).append(r)
    return [
        KindSummary(
            name=name,
            kind=kind,
            seeds=[r.seed for r in group],
            pre=_spreads(group, lambda r: r.pre.model_dump(exclude={"n"}, exclude_none=True)),
            post=_spreads(group, lambda r: r.post.model_dump(exclude={"n"}, exclude_none=True)),
            absolute_drop=_spreads(group, lambda r: r.absolute_drop),
            relative_drop=_spreads(group, lambda r: r.relative_drop),
            relative_robustness=_spreads(group, lambda r: r.relative_robustness),
            pre_by_difficulty=_difficulty_spreads(group, "pre_by_difficulty"),
            post_by_difficulty=_difficulty_spreads(group, "post_by_difficulty"),
        )
        for (name, kind), group in groups.items()
    ]


def _difficulty_spreads(group: Sequence[SetResult], part: str) -> dict[str, dict[str, Spread]]:
    """Per difficulty, the spreads over seeds of a set's ``pre_by_difficulty`` or
    ``post_by_difficulty`` figures (empty when the sets have none)."""
    levels = list(dict.fromkeys(d for r in group for d in getattr(r, part)))

    def figures(level: str) -> Callable[[SetResult], dict[str, Any]]:
        def get(r: SetResult) -> dict[str, Any]:
            scores: Scores | None = getattr(r, part).get(level)
            return {} if scores is None else scores.model_dump(exclude={"n"}, exclude_none=True)

        return get

    return {level: _spreads(group, figures(level)) for level in levels}


def evaluate(
    directory: EvalDirectory,
    predictor: Predictor | None,
    *,
    linking: bool = False,
    model_name: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    keep_distinct: bool = False,
    progress: bool = False,
) -> tuple[EvalReport, list[ItemResult]]:
    """Predict (unless ``predictor`` is None: the probe alone) and score every set."""
    seconds: dict[str, float] = {}
    questions = [q for s in directory.sets for q in s.questions]
    predictions = None
    if predictor is not None:
        t0 = time.perf_counter()
        predictions = predictor.predict(questions, directory)
        seconds["predict"] = round(time.perf_counter() - t0, 3)
        if len(predictions) != len(questions):
            raise ValueError(f"{len(predictions)} predictions for {len(questions)} questions")
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(questions), desc="scoring", unit="question", mininterval=2.0)
    try:
        items = score_items(
            directory,
            questions,
            predictions,
            linking=linking,
            timeout=timeout,
            keep_distinct=keep_distinct,
            progress=bar.update if bar is not None else None,
        )
    finally:
        if bar is not None:
            bar.close()
    seconds["score"] = round(time.perf_counter() - t0, 3)
    report = build_report(
        directory.sets,
        items,
        model_name or _name(predictor),
        linking,
        str(directory.root),
        directory.skipped,
        seconds,
        not_evaluated=directory.not_evaluated,
        databases=directory.databases,
        database_folders=[str(p) for p in directory.database_folders()],
        convention="bird" if directory.layout == BIRD else "test-suite",
    )
    return report, items


def _name(predictor: Predictor | None) -> str:
    return "lexical-probe" if predictor is None else predictor.name


def build_report(
    sets: Sequence[QuestionSet],
    items: Sequence[ItemResult],
    model: str,
    linking: bool,
    directory: str = "",
    skipped: Sequence[str] = (),
    seconds: dict[str, float] | None = None,
    *,
    not_evaluated: Mapping[str, str] | None = None,
    databases: str | None = None,
    database_folders: Sequence[str] = (),
    convention: str = "test-suite",
) -> EvalReport:
    """Aggregate item results into per-set and per-kind figures (and per difficulty, where
    the items have one); ``not_evaluated`` (set → why) is listed, never scored; ``databases``
    says what the databases were when synthesised, ``database_folders`` where they were read
    from, ``convention`` how EX compared results."""
    by_set: dict[str, list[ItemResult]] = {}
    for it in items:
        by_set.setdefault(it.set, []).append(it)
    originals = {s.name: s for s in sets if s.is_original}
    original = {name: _scores(by_set.get(s.stem, []), linking) for name, s in originals.items()}
    levels = {
        name: _by_difficulty(by_set.get(s.stem, []), linking) for name, s in originals.items()
    }
    results = []
    for qset in sets:
        if qset.is_original or qset.name not in originals:
            continue
        paired = {it.source_index: it for it in by_set.get(originals[qset.name].stem, [])}
        results.append(_set_result(qset, by_set.get(qset.stem, []), paired, linking))
    return EvalReport(
        model=model,
        directory=directory,
        original=original,
        sets=results,
        kinds=_summaries(results),
        statuses=dict(Counter(it.status for it in items)),
        skipped_files=list(skipped),
        seconds=seconds or {},
        not_evaluated=dict(not_evaluated or {}),
        databases=databases,
        database_folders=list(database_folders),
        convention=convention,
        original_by_difficulty={name: by for name, by in levels.items() if by},
    )


def sets_of(items: Sequence[ItemResult]) -> list[QuestionSet]:
    """The sets item results come from (names recovered from the ``<name>_original`` stems),
    originals first, then in order of appearance."""
    stems: dict[str, ItemResult] = {}
    for it in items:
        stems.setdefault(it.set, it)
    names = sorted(
        (stem[: -len("_original")] for stem, it in stems.items() if it.kind == ORIGINAL),
        key=len,
        reverse=True,
    )
    out = []
    for stem, it in sorted(stems.items(), key=lambda pair: pair[1].kind != ORIGINAL):
        name = next((n for n in names if stem.startswith(f"{n}_")), stem)
        out.append(QuestionSet(name, stem, it.kind, it.seed))
    return out
