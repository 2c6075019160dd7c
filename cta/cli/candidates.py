"""``cta candidates TABLE`` — the candidate pools of every column, before the judge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cta.settings import get_settings
from cta.table import InvalidTableError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "candidates", help="print retriever/reranker and dictionary candidates per column"
    )
    p.add_argument("table", help="table file (JSON, CSV, WDC JSON) or - for JSON on stdin")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index", help="index directory (default: the settings' index)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from cta.cli._io import print_json, read_table
    from cta.pipeline import Pipeline

    settings = get_settings()
    if args.index:
        settings = settings.model_copy(update={"index_dir": Path(args.index)})
    try:
        table = read_table(args.table)
    except InvalidTableError as exc:
        print(f"cta candidates: invalid table: {exc}", file=sys.stderr)
        return 2
    pipeline = Pipeline.from_settings(settings)
    print_json(pipeline.candidates(table, seed=args.seed))
    return 0
