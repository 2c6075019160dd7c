"""Execution accuracy, compared the way test-suite-sql-eval compares denotations.

The conventions of test-suite-sql-eval (Zhong et al., 2020, ``exec_eval.py``), which the
Spider leaderboard and Dr.Spider report:

- both queries are post-processed (``> =`` → ``>=``, ``< =`` → ``<=``, ``! =`` → ``!=``) and,
  unless ``keep_distinct``, every ``DISTINCT`` keyword is removed from both;
- row order matters only when the gold query contains ``order by`` (anywhere in its text);
- results are bags of rows, and the prediction's columns may come in any order: two results
  are equal when some permutation of the prediction's columns makes them equal (as
  sequences when order matters, as multisets otherwise); two empty results are equal;
- values compare with Python's ``==`` (``1 == 1.0``), without rounding;
- a prediction that fails (or runs past the timeout) is wrong; a gold query that fails is
  reported (test-suite-sql-eval refuses such an example).

BIRD's convention (``convention="bird"``, its ``evaluation_ex.py``): both queries run as
written (no clean-up, ``DISTINCT`` kept), and a prediction is right when its result, as a
*set* of rows, equals the gold's (``set(predicted) == set(gold)``: row order, duplicates and
nothing else ignored; the columns in the gold's order); no test suite.

Queries run through :func:`cta.sql.verify.execute` (read-only, interrupted after
``timeout`` seconds).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, Literal

from sqlglot.errors import SqlglotError
from sqlglot.tokens import Tokenizer, TokenType

from cta.formats.spider import suite_members
from cta.lru import LRUCache
from cta.sql.verify import ExecutionError, execute

Status = Literal["correct", "wrong", "pred_error", "gold_error", "no_prediction"]
Convention = Literal["test-suite", "bird"]
DEFAULT_TIMEOUT = 10.0
_ROW_SAMPLE = 20  # rows used to narrow the column permutations (test-suite samples 20)

__all__ = [
    "Convention",
    "ExecutionOutcome",
    "ExecutionScorer",
    "bird_result_eq",
    "order_matters",
    "postprocess",
    "remove_distinct",
    "result_eq",
]


def postprocess(sql: str) -> str:
    """test-suite-sql-eval's clean-up of split comparison operators."""
    return sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


def remove_distinct(sql: str) -> str:
    """``sql`` without its ``DISTINCT`` keywords (test-suite-sql-eval's default).

    Tokenised with sqlglot's SQLite tokenizer, so a ``distinct`` inside a string literal or
    a quoted identifier stays; text that cannot be tokenised is returned as it is.
    """
    try:
        tokens = Tokenizer(dialect="sqlite").tokenize(sql)
    except SqlglotError:
        return sql
    out, last = [], 0
    for token in tokens:
        if token.token_type == TokenType.DISTINCT:
            out.append(sql[last : token.start])
            last = token.end + 1
    out.append(sql[last:])
    return "".join(out)


def order_matters(gold: str) -> bool:
    """Whether row order counts: test-suite-sql-eval's ``'order by' in gold.lower()``."""
    return "order by" in gold.lower()


def _unorder_row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(sorted(row, key=lambda x: str(x) + str(type(x))))


def result_eq(gold: Sequence[Sequence[Any]], pred: Sequence[Sequence[Any]], ordered: bool) -> bool:
    """Are two results the same denotation, up to a permutation of the prediction's columns?"""
    if not gold and not pred:
        return True
    if len(gold) != len(pred):
        return False
    width = len(gold[0])
    if len(pred[0]) != width:
        return False
    # Rows with their cells sorted must agree before any permutation can (a quick rejection).
    left, right = [_unorder_row(r) for r in gold], [_unorder_row(r) for r in pred]
    if (left != right) if ordered else (set(left) != set(right)):
        return False
    gold_rows = [tuple(r) for r in gold]
    gold_bag = Counter(gold_rows)
    by_column = [{row[i] for row in gold_rows} for i in range(width)]
    allowed = [set(range(width)) for _ in range(width)]
    if width > 3:
        # A pred column j can stand for gold column i only if its cells are gold column i's.
        step = max(1, len(pred) // _ROW_SAMPLE)
        for row in list(pred)[::step][:_ROW_SAMPLE]:
            for i in range(width):
                allowed[i] = {j for j in allowed[i] if row[j] in by_column[i]}
    for perm in product(*allowed):
        if len(set(perm)) != width:
            continue
        permuted = [tuple(row[j] for j in perm) for row in pred]
        if ordered:
            if permuted == gold_rows:
                return True
        elif Counter(permuted) == gold_bag:
            return True
    return False


def bird_result_eq(gold: Sequence[Sequence[Any]], pred: Sequence[Sequence[Any]]) -> bool:
    """BIRD's comparison: the two results as sets of rows are equal."""
    return {tuple(r) for r in gold} == {tuple(r) for r in pred}


@dataclass(frozen=True)
class ExecutionOutcome:
    """The execution verdict on one prediction; ``message`` says why when not correct."""

    status: Status
    message: str = ""

    @property
    def correct(self) -> bool:
        return self.status == "correct"


class ExecutionScorer:
    """Scores predictions by execution, by test-suite-sql-eval's conventions or BIRD's
    (``convention``); results of recent queries are kept (LRU by count)."""

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        keep_distinct: bool = False,
        cache_size: int = 512,
        convention: Convention = "test-suite",
    ) -> None:
        self.timeout = timeout
        self.keep_distinct = keep_distinct
        self.convention = convention
        self._cache: LRUCache[tuple[str, str], list[tuple[Any, ...]] | ExecutionError] = LRUCache(
            cache_size
        )

    def _run(self, db: Path, sql: str) -> list[tuple[Any, ...]] | ExecutionError:
        key = (str(db), sql)
        cached = self._cache.get_many([key])
        if key in cached:
            return cached[key]
        try:
            result: list[tuple[Any, ...]] | ExecutionError = execute(db, sql, self.timeout)
        except ExecutionError as exc:
            result = exc
        self._cache.put_many([(key, result)])
        return result

    def prepare(self, sql: str) -> str:
        """A query as test-suite-sql-eval runs it (post-processed, DISTINCT removed); as
        written under BIRD's convention."""
        if self.convention == "bird":
            return sql
        sql = postprocess(sql)
        return sql if self.keep_distinct else remove_distinct(sql)

    def score(self, db: str | Path, gold: str, pred: str | None) -> ExecutionOutcome:
        """Run gold and prediction on ``db`` and compare their results — on every database
        of its test suite (each ``.sqlite`` beside it), as test-suite-sql-eval does: correct
        only when they agree on all of them; on ``db`` alone under BIRD's convention."""
        if pred is None or not pred.strip():
            return ExecutionOutcome("no_prediction", "no prediction")
        gold_sql, pred_sql = self.prepare(gold), self.prepare(pred)
        main = Path(db)
        bird = self.convention == "bird"
        for path in [main] if bird else [main, *suite_members(main)]:
            where = "" if path == main else f" (suite database {path.name})"
            expected = self._run(path, gold_sql)
            if isinstance(expected, ExecutionError):
                return ExecutionOutcome("gold_error", f"gold query fails{where}: {expected}")
            got = self._run(path, pred_sql)
            if isinstance(got, ExecutionError):
                return ExecutionOutcome("pred_error", f"prediction fails{where}: {got}")
            same = (
                bird_result_eq(expected, got)
                if bird
                else result_eq(expected, got, order_matters(gold_sql))
            )
            if not same:
                return ExecutionOutcome(
                    "wrong", f"{len(expected)} gold rows, {len(got)} predicted{where}"
                )
        return ExecutionOutcome("correct")
