"""``cta eval DIR`` — how much does a text-to-SQL model drop on the perturbed sets?

``DIR`` is a folder written by ``cta dataset perturb --format spider`` (or ``--format bird``:
scored as BIRD scores, EX over result sets, per difficulty). Predictions come from
a built-in model (``--model oracle|lexical-probe|nearest-train``), from files
(``--pred FILE_OR_DIR``), from an HTTP endpoint (``--endpoint URL``) or from a Python
function (``--entry-point module:function``). Prints a summary (``--json``: the whole
report as one JSON object); ``--out REPORT_DIR`` writes JSON, a markdown report with a
plot, per-item results and test-suite-sql-eval's gold/pred/database layout.

A set without predictions, or without one per question, stops the run (exit 2) unless
``--allow-missing``: then it is listed as not evaluated (stderr, the report) and never
scored. A folder whose databases were synthesised says so on stderr and in the report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cta.cli._io import check_input_path, error, print_json
from cta.evaluation.models import reference_model
from cta.evaluation.predictions import EndpointPredictions, EntryPointPredictions, FilePredictions
from cta.evaluation.report import markdown, write_report
from cta.evaluation.scoring import evaluate
from cta.evaluation.sets import EvalDirectory, load_directory
from cta.provenance import MANIFEST, PROVENANCE_KEYS, build_manifest, disagreements, write_manifest
from cta.settings import Settings
from cta.table import InvalidTableError


def register(sub: Any) -> None:
    p = sub.add_parser("eval", help="evaluate a text-to-SQL model on perturbed sets (pre/post)")
    p.add_argument("directory", metavar="DIR", help="a folder written by cta dataset perturb")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--model",
        choices=("oracle", "lexical-probe", "nearest-train"),
        help="a built-in reference model",
    )
    source.add_argument(
        "--pred",
        metavar="FILE_OR_DIR",
        help="a folder of <set>.sql files (one SQL per line, or JSON lines "
        '{"question_index"|"id", "sql"}) or <set>.json in BIRD\'s format, or one JSON-lines '
        "file naming each set, or one BIRD predictions file (the set whose databases it names)",
    )
    source.add_argument("--endpoint", metavar="URL", help="POST {question, db_id, schema} → {sql}")
    source.add_argument(
        "--entry-point",
        metavar="MODULE:FUNCTION",
        help="a Python function called as function(question=, db_id=, schema=) → SQL",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--out", metavar="REPORT_DIR", help="write eval.json, report.md, plot, files")
    p.add_argument(
        "--sets", help="comma-separated set names to evaluate (default: all; originals always)"
    )
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per query (default 10)")
    p.add_argument(
        "--keep-distinct",
        action="store_true",
        help="keep DISTINCT when executing (test-suite-sql-eval removes it by default)",
    )
    p.add_argument("--concurrency", type=int, default=8, help="endpoint requests in flight")
    p.add_argument("--retries", type=int, default=3, help="endpoint retries per question")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="HTTP header sent to the endpoint (repeatable)",
    )
    p.add_argument(
        "--allow-mixed-provenance",
        action="store_true",
        help="score sets whose manifests disagree on the judge or index (or that no manifest "
        "lists) together",
    )
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="--pred: list a set without predictions (or not one per question) as not "
        "evaluated instead of stopping; it is never scored",
    )
    p.add_argument("--train", help="nearest-train: training questions (Spider train_spider.json)")
    p.add_argument("--train-tables", help="nearest-train: tables.json of the training questions")
    p.set_defaults(func=_run)


def _headers(values: list[str]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            raise InvalidTableError("bad_header", f"--header {value!r}: expected NAME:VALUE")
        headers[name.strip()] = text.strip()
    return headers


def _predictor(args: argparse.Namespace) -> Any:
    if args.pred is not None:
        return FilePredictions(args.pred)
    if args.endpoint is not None:
        return EndpointPredictions(
            args.endpoint,
            concurrency=args.concurrency,
            retries=args.retries,
            headers=_headers(args.header),
        )
    if args.entry_point is not None:
        return EntryPointPredictions(args.entry_point)
    if args.model == "nearest-train":
        if not args.train or not args.train_tables:
            raise InvalidTableError(
                "missing_training_data",
                "--model nearest-train needs --train QUESTIONS.json --train-tables TABLES.json",
            )
        check_input_path(args.train)
        check_input_path(args.train_tables)
    return reference_model(args.model, args.train, args.train_tables)


def _provenance_problem(directory: EvalDirectory) -> str | None:
    """Why the sets of ``directory`` should not be scored together: their manifests disagree
    on the judge or the index, or a set is not the one its folder's manifest lists."""
    if directory.unaccounted:
        return (
            f"{', '.join(directory.unaccounted)}: not what the folder's manifest lists "
            "(changed, or copied from another run)"
        )
    found = disagreements(directory.manifests)
    if found:
        return "the sets were made with different " + " and ".join(found)
    return None


def _summary(report: Any) -> str:
    text = markdown(report, plot_file=None)
    return text[: text.find("## Per set")].rstrip() + "\n"


def _run(args: argparse.Namespace) -> int:
    only = [s.strip() for s in args.sets.split(",") if s.strip()] if args.sets else None
    try:
        directory = load_directory(args.directory, only)
        predictor = _predictor(args)
    except InvalidTableError as exc:
        return error(f"eval: {exc.message} ({exc.problem})")
    if only is not None:
        unknown = sorted(set(only) - {s.stem for s in directory.sets})
        if unknown:
            return error(f"eval: --sets: no such set {', '.join(unknown)} in {args.directory}")
    if isinstance(predictor, FilePredictions):
        try:
            missing = predictor.check(directory.sets)
        except InvalidTableError as exc:
            return error(f"eval: {exc.message} ({exc.problem})")
        if missing and not args.allow_missing:
            named = "; ".join(f"set {stem}: {why}" for stem, why in missing.items())
            return error(f"eval: {named} — pass --allow-missing to list it as not evaluated")
        directory.leave_out(missing)
        for stem, why in directory.not_evaluated.items():
            print(f"cta eval: not evaluated: {stem} ({why})", file=sys.stderr)
    if directory.databases:
        print(f"cta eval: databases {directory.databases}", file=sys.stderr)
    problem = _provenance_problem(directory)
    if problem is not None and not args.allow_mixed_provenance:
        return error(f"eval: {problem}; pass --allow-mixed-provenance to score them together")
    try:
        report, items = evaluate(
            directory,
            predictor,
            linking=args.model == "lexical-probe",
            model_name=args.model or None,
            timeout=args.timeout,
            keep_distinct=args.keep_distinct,
            progress=True,
        )
    except InvalidTableError as exc:
        return error(f"eval: {exc.message} ({exc.problem})")
    if args.out:
        files = write_report(args.out, report, items, directory)
        manifest = build_manifest(
            "cta eval",
            Settings(),
            {"directory": Path(args.directory) / MANIFEST},
            uses_models=False,
            extra={
                "parser": args.model or args.pred or args.endpoint or args.entry_point,
                "sets": {
                    s.stem: {
                        key: (directory.manifests.get(s.stem) or {}).get(key)
                        for key in PROVENANCE_KEYS
                    }
                    for s in directory.sets
                },
                "mixed_provenance_allowed": problem if args.allow_mixed_provenance else None,
            },
        )
        write_manifest(args.out, manifest, [f for f in files if not f.startswith("test-suite/")])
        print(f"cta eval: wrote {len(files) + 1} files under {args.out}", file=sys.stderr)
    if args.json:
        print_json(report)
    else:
        sys.stdout.write(_summary(report))
    return 0
