"""≥ 85 hostile inputs, each answered with its expected status and problem code, never a 5xx,
on the SQLite and the PostgreSQL jobs store, over the real pipeline on the tiny fixture home;
and the committed table (benchmarks/results/service_bad_inputs.md) is current."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import bad_inputs
import pytest

pytestmark = pytest.mark.slow  # the tiny home: real index, vectors and judge


@pytest.fixture(scope="module")
def results(tiny_home: Path) -> dict[str, Any]:
    """Every case on each store (the real pipeline of the tiny home); a store that cannot be
    reached maps to the reason why."""
    from conftest import tiny_judge

    from cta.pipeline import Pipeline

    def build(settings: Any) -> Pipeline:
        return Pipeline.from_settings(
            settings.model_copy(
                update={"judge_model": str(tiny_judge(tiny_home)), "add_association": None}
            )
        )

    found: dict[str, Any] = {"sqlite": bad_inputs.run_store("sqlite", build, tiny_home)}
    reason = bad_inputs.postgres_unreachable()
    found["postgres"] = reason or bad_inputs.run_store("postgres", build, tiny_home)
    return found


def _check(outcomes: list[Any]) -> None:
    assert len(outcomes) == len(bad_inputs.CASES) >= 85
    server_errors = [
        (o.case.what, o.status, o.problem, o.message) for o in outcomes if o.status >= 500
    ]
    assert server_errors == []
    wrong = [
        (o.case.what, (o.status, o.problem, o.allow), (o.case.status, o.case.problem, o.case.allow))
        for o in outcomes
        if not o.expected
    ]
    assert wrong == []
    refused = [o for o in outcomes if o.status >= 400]
    assert refused and all(o.status < 500 and o.problem and o.message for o in refused)


def test_every_hostile_input_gets_its_answer_on_sqlite(results: dict[str, Any]) -> None:
    _check(results["sqlite"])


def _postgres_missing(reason: str) -> None:
    """Skip without PostgreSQL, unless its URL was given: then the server was promised (CI
    sets it to the one it starts), and its absence fails."""
    if os.environ.get(bad_inputs.POSTGRES_ENV):
        pytest.fail(f"{bad_inputs.POSTGRES_ENV} is set, but {reason}")
    pytest.skip(reason)


@pytest.mark.postgres
def test_every_hostile_input_gets_its_answer_on_postgres(results: dict[str, Any]) -> None:
    if isinstance(results["postgres"], str):
        _postgres_missing(results["postgres"])
    _check(results["postgres"])
    # Same answers, word for word, whichever store holds the jobs.
    same = [(o.status, o.problem, o.message) for o in results["sqlite"]]
    assert [(o.status, o.problem, o.message) for o in results["postgres"]] == same


def test_a_postgres_url_given_makes_its_absence_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bad_inputs.POSTGRES_ENV, bad_inputs.POSTGRES_DEFAULT)
    with pytest.raises(pytest.fail.Exception, match="is set, but PostgreSQL .* is unreachable"):
        _postgres_missing(f"PostgreSQL at {bad_inputs.POSTGRES_DEFAULT} is unreachable")
    monkeypatch.delenv(bad_inputs.POSTGRES_ENV)
    with pytest.raises(pytest.skip.Exception, match="unreachable"):
        _postgres_missing("PostgreSQL is unreachable")


def test_the_committed_table_is_current(results: dict[str, Any]) -> None:
    committed = bad_inputs.OUTPUT.read_text(encoding="utf-8")
    if isinstance(results["postgres"], str):
        # Without PostgreSQL, everything but its status column must still match.
        expected = bad_inputs.render({"sqlite": results["sqlite"]})
        committed = bad_inputs.drop_store_column(committed, "postgres")
    else:
        expected = bad_inputs.render(results)
    assert committed == expected, "run .venv/bin/python benchmarks/service_bad_inputs.py"
