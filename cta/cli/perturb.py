"""``cta perturb TABLE`` — judged RPL and ADD proposals (and sampled perturbed tables)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cta.settings import get_settings
from cta.table import InvalidTableError


def register(sub: Any) -> None:
    p = sub.add_parser("perturb", help="propose RPL/ADD columns for one table")
    p.add_argument("table", help="table file (JSON, CSV, WDC JSON) or - for JSON on stdin")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=0, help="perturbed tables of each kind")
    p.add_argument("--max-candidates", type=int, default=None)
    p.add_argument("--index", help="index directory (default: the settings' index)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from cta.cli._io import print_json, read_table
    from cta.pipeline import PerturbOptions, Pipeline

    settings = get_settings()
    if args.index:
        settings = settings.model_copy(update={"index_dir": Path(args.index)})
    try:
        table = read_table(args.table)
    except InvalidTableError as exc:
        print(f"cta perturb: invalid table: {exc}", file=sys.stderr)
        return 2
    options = PerturbOptions(
        seed=args.seed, samples=args.samples, max_candidates=args.max_candidates
    )
    pipeline = Pipeline.from_settings(settings)
    print_json(pipeline.perturb(table, options))
    return 0
