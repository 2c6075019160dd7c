"""Hostile inputs sent to the service and the answer each got → benchmarks/results/service_bad_inputs.md.

Every input is one a client can legitimately send over HTTP: bad text in every place a string
goes, bytes that are not UTF-8, compressed or non-JSON bodies, absurd nesting, non-finite or
loosely typed numbers, tables the engine cannot use, Spider payloads of the wrong shape,
hostile URLs, wrong methods and bad API keys. Each must get a 4xx whose ``problem`` names what
is wrong, never a 5xx — on the SQLite and the PostgreSQL jobs store alike; a few
odd-but-valid inputs must get their 200.

The cases, the runner and the table live in ``tests/bad_inputs.py``;
``tests/test_service_bad_inputs.py`` runs the same cases over the real pipeline on the tiny
fixture home, on both stores, asserts every (status, problem) and that the committed table is
current. This script uses the stand-in pipeline (fast; the answers do not depend on it) and
PostgreSQL at ``CTA_TEST_POSTGRES_URL`` (default: the local server of ``.ci/run``)::

    .venv/bin/python benchmarks/service_bad_inputs.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from bad_inputs import (  # noqa: E402
    CASES,
    OUTPUT,
    postgres_unreachable,
    render,
    run_store,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--home",
        type=Path,
        help="run over the real pipeline of this CTA home (default: the stand-in pipeline)",
    )
    args = parser.parse_args(argv)
    factory = None
    if args.home is not None:
        from cta.pipeline import Pipeline

        factory = Pipeline.from_settings
    results = {"sqlite": run_store("sqlite", factory, args.home)}
    reason = postgres_unreachable()
    if reason is None:
        results["postgres"] = run_store("postgres", factory, args.home)
    else:
        print(reason, file=sys.stderr)
    text = render(results)
    if "postgres" not in results:
        raise SystemExit("not written: the table needs both stores")
    OUTPUT.write_text(text, encoding="utf-8")
    unexpected = [
        (store, o.case.what, o.status, o.problem)
        for store, outs in results.items()
        for o in outs
        if not o.expected
    ]
    print(json.dumps({"cases": len(CASES), "unexpected": unexpected, "written": str(OUTPUT)}))


if __name__ == "__main__":
    main()
