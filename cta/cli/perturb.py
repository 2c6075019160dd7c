"""``cta perturb TABLE`` — judged RPL and ADD proposals (and sampled perturbed tables).

On a terminal it prints a summary a person reads (:mod:`cta.cli.render`); with ``--json``,
``--format json``, or whenever stdout is not a terminal, the full result as JSON.

A ``.jsonl`` file is a batch, one table per line: one JSON result line per table, in order; a
bad line gets ``{"line": N, "error": ..., "problem": ...}`` in its place and a line on stderr,
and every other table is perturbed; at the end, if any line failed, a summary on stderr and
exit status 2. ``--fail-fast`` stops at the first bad line instead.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import Any

from pydantic import ValidationError

from cta.cli._io import (
    check_input_path,
    describe_error,
    error,
    print_json,
    read_table_or_report,
    settings_with_index,
)
from cta.cli.render import render_summary
from cta.pipeline import Pipeline
from cta.results import PerturbOptions
from cta.scale.items import line_problem, parse_table_line
from cta.table import InvalidTableError, Table

# Widest summary line, whatever the terminal's width.
MAX_WIDTH = 120


def register(sub: Any) -> None:
    p = sub.add_parser("perturb", help="propose RPL/ADD columns for one table")
    p.add_argument("table", help="table file (JSON, CSV, WDC JSON) or - for JSON on stdin")
    add_options_arguments(p)
    p.add_argument(
        "--fail-fast",
        action="store_true",
        help="a .jsonl batch stops at the first bad line (default: record it and go on)",
    )
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


def add_options_arguments(p: Any) -> None:
    """The arguments of a perturbation run: ``--seed``, ``--samples``, ``--max-candidates``
    (:func:`perturb_options`) and ``--index``."""
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=0, help="perturbed tables of each kind")
    p.add_argument("--max-candidates", type=int, default=None)
    p.add_argument("--index", help="index directory (default: the settings' index)")


def perturb_options(args: argparse.Namespace) -> PerturbOptions | int:
    """The options :func:`add_options_arguments` took, or the exit status of the error that
    reports them invalid."""
    try:
        return PerturbOptions(
            seed=args.seed, samples=args.samples, max_candidates=args.max_candidates
        )
    except ValidationError as exc:
        return error(f"invalid option: {exc.errors()[0]['msg']}")


def output_format(requested: str | None) -> str:
    """``--format`` as given, else summary when stdout is a terminal, else json."""
    if requested:
        return requested
    return "summary" if sys.stdout.isatty() else "json"


def _run(args: argparse.Namespace) -> int:
    options = perturb_options(args)
    if isinstance(options, int):
        return options
    if args.table.endswith(".jsonl"):
        return _run_batch(args, options)
    table = read_table_or_report(args.table)
    if table is None:
        return 2
    pipeline = Pipeline.from_settings(settings_with_index(args.index))
    result = pipeline.perturb(table, options)
    if output_format(args.format) == "json":
        print_json(result)
        return 0
    width = min(shutil.get_terminal_size((100, 24)).columns, MAX_WIDTH)
    sys.stdout.write(render_summary(result, table, width=width))
    sys.stdout.write("\nScores (e1, e2) and sources of every name: add --json.\n")
    return 0


# Tables perturbed together in a batch (the judge batches their pairs).
BATCH_TABLES = 16


def _run_batch(args: argparse.Namespace, options: PerturbOptions) -> int:
    """A JSON-lines file of tables: every good line perturbed, every bad one recorded."""
    try:
        check_input_path(args.table)
        handle = open(args.table, encoding="utf-8")  # noqa: SIM115 (closed below)
    except (InvalidTableError, OSError) as exc:
        message = exc.message if isinstance(exc, InvalidTableError) else describe_error(exc)
        return error(f"perturb: {message}")
    pipeline = Pipeline.from_settings(settings_with_index(args.index))
    failed: list[tuple[int, str]] = []
    done = 0
    pending: list[tuple[int, Table | str]] = []

    def flush() -> None:
        tables = [t for _, t in pending if isinstance(t, Table)]
        results = iter(pipeline.perturb_many(tables, options)) if tables else iter(())
        for number, item in pending:
            if isinstance(item, Table):
                line = next(results).model_dump(mode="json")
            else:
                line = {"line": number, "error": item}
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        pending.clear()

    with handle:
        try:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    pending.append((number, parse_table_line(text)))
                    done += 1
                except (json.JSONDecodeError, InvalidTableError) as exc:
                    problem = line_problem(exc)
                    if args.fail_fast:
                        flush()
                        return error(f"perturb: {args.table}: line {number}: {problem}")
                    failed.append((number, problem))
                    print(f"cta: perturb: {args.table}: line {number}: {problem}", file=sys.stderr)
                    pending.append((number, problem))
                if len(pending) >= BATCH_TABLES:
                    flush()
        except UnicodeDecodeError as exc:
            flush()
            return error(f"perturb: {args.table}: not UTF-8 text ({exc.reason})")
        flush()
    if failed:
        line, problem = failed[0]
        return error(
            f"perturb: {args.table}: {len(failed)} of {done + len(failed)} lines failed "
            f"(first: line {line}: {problem}); every other table was perturbed"
        )
    return 0
