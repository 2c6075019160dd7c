"""``cta perturb TABLE`` — judged RPL and ADD proposals (and sampled perturbed tables).

On a terminal it prints a summary a person reads (:mod:`cta.cli.render`); with ``--json``,
``--format json``, or whenever stdout is not a terminal, the full result as JSON.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import Any

from pydantic import ValidationError

from cta.cli._io import error, print_json, read_table_or_report, settings_with_index
from cta.cli.render import render_summary
from cta.pipeline import PerturbOptions, Pipeline

# Widest summary line, whatever the terminal's width.
MAX_WIDTH = 120


def register(sub: Any) -> None:
    p = sub.add_parser("perturb", help="propose RPL/ADD columns for one table")
    p.add_argument("table", help="table file (JSON, CSV, WDC JSON) or - for JSON on stdin")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=0, help="perturbed tables of each kind")
    p.add_argument("--max-candidates", type=int, default=None)
    p.add_argument("--index", help="index directory (default: the settings' index)")
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--format",
        choices=("summary", "json"),
        default=None,
        help="summary (names per column, sampled tables) or json (everything, with scores); "
        "default: summary on a terminal, json otherwise",
    )
    out.add_argument(
        "--json", dest="format", action="store_const", const="json", help="same as --format json"
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="more detail on stderr (-v INFO logs, -vv DEBUG)",
    )
    p.set_defaults(func=_run)


def output_format(requested: str | None) -> str:
    """``--format`` as given, else summary when stdout is a terminal, else json."""
    if requested:
        return requested
    return "summary" if sys.stdout.isatty() else "json"


def _run(args: argparse.Namespace) -> int:
    table = read_table_or_report(args.table)
    if table is None:
        return 2
    try:
        options = PerturbOptions(
            seed=args.seed, samples=args.samples, max_candidates=args.max_candidates
        )
    except ValidationError as exc:
        return error(f"invalid option: {exc.errors()[0]['msg']}")
    pipeline = Pipeline.from_settings(settings_with_index(args.index))
    result = pipeline.perturb(table, options)
    if output_format(args.format) == "json":
        print_json(result)
        return 0
    width = min(shutil.get_terminal_size((100, 24)).columns, MAX_WIDTH)
    sys.stdout.write(render_summary(result, table, width=width))
    sys.stdout.write("\nScores (e1, e2) and sources of every name: add --json.\n")
    return 0
