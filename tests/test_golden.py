"""The same result everywhere (issue 23): ``cta perturb --json --seed 0 --samples 2`` on the
showcase tables and two WikiTableQuestions tables, recomputed here with the shipped judge and
a default index that ``cta setup`` builds for this test, against the committed goldens
(``tests/golden/``, written by ``benchmarks/goldens.py write``).

Names, sources, verdicts (what is proposed, in which order) and the sampled tables must be
identical; scores may differ in their last printed digits between CPUs, within
``SCORE_TOLERANCE``. Slow: the index is built (about two minutes on two cores).
"""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("goldens", ROOT / "benchmarks" / "goldens.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GOLDENS = _script()


@pytest.fixture(scope="module")
def default_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CTA home built by ``cta setup`` exactly as a user's, and the shipped judge."""
    home = tmp_path_factory.mktemp("default-home")
    env = {**os.environ, "CTA_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for name in list(env):
        if name.startswith("CTA_") and name != "CTA_HOME":
            env.pop(name)  # the defaults, whatever the session set
    subprocess.run(
        [sys.executable, "-m", "cta.cli.main", "setup"], env=env, check=True, capture_output=True
    )
    return env


def _without_scores(result: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(result)
    for column in out["columns"]:
        for decision in [*column["replace"], *column["add"]]:
            for key in GOLDENS.SCORE_KEYS:
                decision.pop(key, None)
    return out


def _scores(result: dict[str, Any]) -> list[float | None]:
    return [
        decision.get(key)
        for column in result["columns"]
        for decision in [*column["replace"], *column["add"]]
        for key in GOLDENS.SCORE_KEYS
    ]


@pytest.mark.parametrize("name", list(GOLDENS.TABLES))
def test_perturb_gives_the_golden_output(name: str, default_env: dict[str, str]) -> None:
    if name not in GOLDENS.available():
        pytest.skip(f"{GOLDENS.TABLES[name]} is not here (../shared)")
    golden = GOLDENS.GOLDEN / f"{name}.json"
    import json

    expected = json.loads(golden.read_text())
    got = GOLDENS.perturb(name, default_env)
    assert sum(len(c["replace"]) + len(c["add"]) for c in expected["columns"]) > 0
    assert expected["samples"], "a golden without sampled tables checks nothing of them"
    assert _without_scores(got) == _without_scores(expected)
    for mine, theirs in zip(_scores(got), _scores(expected), strict=True):
        if theirs is None:
            assert mine is None
        else:
            assert mine == pytest.approx(theirs, abs=GOLDENS.SCORE_TOLERANCE)
