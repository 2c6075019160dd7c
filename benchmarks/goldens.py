"""Golden outputs of ``cta perturb --json --seed 0 --samples 2``: the three showcase tables and
two WikiTableQuestions tables, with the shipped judge and the default index.

``write`` recomputes them into ``tests/golden/`` with the real product (a CTA home built by
``cta setup``); ``tests/test_golden.py`` recomputes them on whatever machine runs it and
compares names, verdicts and sampled tables exactly, scores within :data:`SCORE_TOLERANCE`.
``margins`` reports how close any score of the goldens lies to a threshold: a last-bit
difference between CPUs moves a score by ~1e-7, so a verdict can only flip for a score that
close to 0.65, 0.45 or the association threshold.

Usage: ``python benchmarks/goldens.py write|margins [--home DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
SHARED = ROOT.parent / "shared"
# name → table file (relative to the repository; WTQ ones need ../shared)
TABLES: dict[str, str] = {
    "books": "examples/books.json",
    "employees": "examples/employees.json",
    "football_matches": "examples/football_matches.json",
    "wtq_204_5": "../shared/data/wtq/csv/204-csv/5.csv",
    "wtq_203_74": "../shared/data/wtq/csv/203-csv/74.csv",
}
ARGS = ["--json", "--seed", "0", "--samples", "2"]
# Scores are printed rounded to 6 decimals; across CPUs they may differ in the last digits.
SCORE_TOLERANCE = 1e-4
SCORE_KEYS = ("e1", "e2", "association")


def perturb(name: str, env: dict[str, str]) -> dict[str, Any]:
    """``cta perturb`` on one golden table, as a user runs it, parsed."""
    cmd = [sys.executable, "-m", "cta.cli.main", "perturb", str(ROOT / TABLES[name]), *ARGS]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=True)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def available() -> list[str]:
    return [n for n, p in TABLES.items() if (ROOT / p).is_file()]


def margins(results: dict[str, dict[str, Any]], thresholds: list[float]) -> dict[str, Any]:
    """The smallest distance of any judged score to a threshold, over the goldens."""
    closest = 1.0
    count = 0
    for result in results.values():
        for column in result["columns"]:
            for decision in [*column["replace"], *column["add"]]:
                for key in SCORE_KEYS:
                    value = decision.get(key)
                    if value is None:
                        continue
                    count += 1
                    closest = min(closest, *(abs(value - t) for t in thresholds))
    return {"scores": count, "closest_to_a_threshold": round(closest, 6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("write", "margins"))
    parser.add_argument("--home", help="CTA home (default: the environment's)")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if args.home:
        env["CTA_HOME"] = args.home
    results = {name: perturb(name, env) for name in available()}
    if args.command == "write":
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, result in results.items():
            (GOLDEN / f"{name}.json").write_text(
                json.dumps(result, indent=2, ensure_ascii=False) + "\n"
            )
        print(f"wrote {len(results)} goldens to {GOLDEN}")
    from cta.settings import Settings

    s = Settings()
    thresholds = [s.rpl_threshold, s.add_threshold]
    if s.add_association is not None:
        thresholds.append(s.add_association)
    print(json.dumps(margins(results, thresholds)))


if __name__ == "__main__":
    main()
