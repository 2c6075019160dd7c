"""``cta candidates TABLE`` — the candidate pools of every column, before the judge."""

from __future__ import annotations

import argparse
from typing import Any

from cta.cli._io import print_json, read_table_or_report, settings_with_index
from cta.pipeline import Pipeline


def register(sub: Any) -> None:
    p = sub.add_parser(
        "candidates", help="print retriever/reranker and dictionary candidates per column"
    )
    p.add_argument("table", help="table file (JSON, CSV, WDC JSON) or - for JSON on stdin")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index", help="index directory (default: the settings' index)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    table = read_table_or_report(args.table)
    if table is None:
        return 2
    pipeline = Pipeline.from_settings(settings_with_index(args.index))
    print_json(pipeline.candidates(table, seed=args.seed))
    return 0
