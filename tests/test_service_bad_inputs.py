"""≥ 15 bad inputs: each gets its expected 4xx and problem code (never a 5xx); the table is current."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    path = REPO / "benchmarks" / "service_bad_inputs.py"
    spec = importlib.util.spec_from_file_location("service_bad_inputs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_every_bad_input_gets_its_4xx_and_the_committed_table_is_current() -> None:
    script = _script()
    outcomes = script.run_all()
    assert len(outcomes) >= 15
    wrong = [
        (o.case.what, o.status, o.body)
        for o in outcomes
        if (o.status, o.body.get("problem")) != (o.case.status, o.case.problem)
    ]
    assert wrong == []
    assert all(400 <= o.status < 500 and o.body.get("message") for o in outcomes)
    committed = script.OUTPUT.read_text(encoding="utf-8")
    assert committed == script.render(outcomes), "run benchmarks/service_bad_inputs.py"
