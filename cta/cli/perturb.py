"""``cta perturb TABLE`` — judged RPL and ADD proposals (and sampled perturbed tables)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("perturb", help="propose RPL/ADD columns for one table")
    p.add_argument("table", help="table file (JSON, CSV, WDC JSON) or - for JSON on stdin")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=0, help="perturbed tables of each kind")
    p.add_argument("--max-candidates", type=int, default=None)
    p.add_argument("--index", help="index directory (default: the settings' index)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from cta.cli._io import print_json, read_table_or_report, settings_with_index
    from cta.pipeline import PerturbOptions, Pipeline

    table = read_table_or_report(args.table, "perturb")
    if table is None:
        return 2
    try:
        options = PerturbOptions(
            seed=args.seed, samples=args.samples, max_candidates=args.max_candidates
        )
    except ValidationError as exc:
        print(f"cta perturb: invalid option: {exc.errors()[0]['msg']}", file=sys.stderr)
        return 2
    pipeline = Pipeline.from_settings(settings_with_index(args.index))
    print_json(pipeline.perturb(table, options))
    return 0
