"""``cta review export``: what reviewers kept of a job, from the jobs database.

Writes under ``--out``:

* ``rates.json`` — acceptance rates of the generator's names per kind and candidate source;
* ``accepted.json`` — per table id, the job's result with the accepted names only;
* ``annotations/tables.jsonl`` and ``annotations/thesaurus.jsonl`` — an annotations folder
  (:mod:`cta.annotations`): the base folder's rows (the settings' ``annotations_dir``, or
  ``--annotations-base``; ``none`` for the reviews alone) followed by the reviews as rows of
  split ``--split``. Judge training takes it with ``CTA_ANNOTATIONS_DIR=OUT/annotations``;
* with ``--tables`` (and ``--questions``, ``--db-dir``): ``dataset/`` — the curated dataset,
  ``cta dataset perturb --verify`` over the dataset with the accepted names as the only
  proposals (perturbed tables, rewritten gold SQL, databases, ``verification.json``). Exit
  status 1 when a query fails the execution check, as ``cta dataset perturb`` does.

The job is read as the key of ``--api-key`` (or ``CTA_API_KEY``) sees it: another key's job
is unknown here as on the service.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cta.cli._io import check_input_path, error, print_json
from cta.cli.dataset import parse_kinds
from cta.datasets import FORMATS, perturb_dataset
from cta.judge.decide import DecisionRule
from cta.results import PerturbationResult
from cta.table import InvalidTableError, Table

if TYPE_CHECKING:
    from service.settings import ServiceSettings


def register(sub: Any) -> None:
    p = sub.add_parser("review", help="export what reviewers kept of a job (/review pages)")
    actions = p.add_subparsers(dest="review_command", required=True, metavar="ACTION")
    e = actions.add_parser(
        "export", help="rates, accepted names, annotation JSONL and the curated dataset"
    )
    e.add_argument("job_id", help="the job's id")
    e.add_argument("--out", type=Path, required=True, help="output folder")
    e.add_argument("--database-url", help="jobs database (default: the service settings')")
    e.add_argument("--api-key", help="the key the job belongs to (default: CTA_API_KEY)")
    e.add_argument(
        "--split", choices=("train", "dev"), default="train", help="split of the review rows"
    )
    e.add_argument(
        "--annotations-base",
        help="annotations folder whose rows come first (default: the settings'; 'none': none)",
    )
    e.add_argument("--format", choices=FORMATS.names(), default="spider", help="dataset format")
    e.add_argument("--tables", help="dataset tables (as cta dataset perturb): curated dataset")
    e.add_argument("--questions", help="question file of the dataset")
    e.add_argument("--db-dir", help="Spider database folder (else synthesised)")
    e.add_argument("--kind", default="rpl,add", help="rpl, add or rpl,add (default)")
    e.add_argument("--seeds", type=int, default=1, help="seeds 0…N-1 (default 1)")
    e.add_argument("--values", choices=("generate", "null"), default="generate")
    e.set_defaults(func=_run)


def _settings(args: argparse.Namespace) -> ServiceSettings:
    from service.settings import get_service_settings  # deferred: as in _run

    settings = get_service_settings()
    if args.database_url:
        settings = settings.model_copy(update={"database_url": args.database_url})
    return settings


def _run(args: argparse.Namespace) -> int:
    # deferred: the service package (FastAPI, SQLAlchemy) is absent where only cta/ is
    from service.auth import key_hash
    from service.jobs.review_exports import acceptance_rates, accepted_results, annotation_rows
    from service.jobs.reviews import Reviews
    from service.jobs.store import JobStore

    settings = _settings(args)
    key = args.api_key or settings.api_key
    owner = key_hash(key) if key else None
    try:
        kinds = parse_kinds(args.kind)
    except InvalidTableError as exc:
        return error(f"review export: {exc.message} ({exc.problem})")
    if any(k not in ("rpl", "add") for k in kinds):
        return error("review export: --kind takes rpl and add only (reviews hold RPL/ADD names)")
    if args.tables is not None:
        check_input_path(args.tables, "folder" if args.format == "wtq" else "file")
    store = JobStore.from_settings(settings)
    try:
        reviews = Reviews(store, DecisionRule.from_settings(settings))
        if store.get_job(args.job_id, owner) is None:
            return error(f"review export: no job {args.job_id!r} (for this key)")
        out: Path = args.out
        out.mkdir(parents=True, exist_ok=True)
        rates = acceptance_rates(reviews, args.job_id, owner)
        (out / "rates.json").write_text(json.dumps(rates, indent=2) + "\n", encoding="utf-8")
        accepted = accepted_results(reviews, args.job_id, owner)
        (out / "accepted.json").write_text(
            json.dumps({k: r.model_dump(mode="json") for k, r in accepted.items()}, indent=1)
            + "\n",
            encoding="utf-8",
        )
        rows = annotation_rows(reviews, args.job_id, owner, args.split) or []
    finally:
        store.close()
    base = _annotations_base(args.annotations_base, settings)
    write_annotations(out / "annotations", rows, base)
    summary: dict[str, Any] = {
        "job_id": args.job_id,
        "out": str(out),
        "annotation_rows": len(rows),
        "annotations_base": str(base) if base else None,
        "rates": rates,
    }
    failed = 0
    if args.tables is not None:
        run = perturb_dataset(
            args.format,
            args.tables,
            args.questions,
            out / "dataset",
            curated_proposer(accepted),
            kinds,
            range(args.seeds),
            db_dir=args.db_dir,
            check_execution=True,
            values=args.values,
            progress=lambda m: print(f"cta review: {m}", file=sys.stderr, flush=True),
        )
        verification = dict(run.verification or {})
        problems = verification.pop("problems", [])
        failed = sum(1 for p in problems if p["status"] != "original_error")
        summary["dataset"] = {**verification, "problems": len(problems), "failed": failed}
    print_json(summary)
    return 1 if failed else 0


def _annotations_base(option: str | None, settings: ServiceSettings) -> Path | None:
    if option == "none":
        return None
    base = Path(option) if option else settings.resolved_annotations_dir()
    return base if (base / "tables.jsonl").is_file() else None


def write_annotations(folder: Path, rows: Sequence[dict[str, Any]], base: Path | None) -> Path:
    """An annotations folder: ``base``'s files (if any), the review ``rows`` appended."""
    folder.mkdir(parents=True, exist_ok=True)
    tables, thesaurus = folder / "tables.jsonl", folder / "thesaurus.jsonl"
    if base is not None:
        shutil.copyfile(base / "tables.jsonl", tables)
        if (base / "thesaurus.jsonl").is_file():
            shutil.copyfile(base / "thesaurus.jsonl", thesaurus)
    else:
        tables.write_text("", encoding="utf-8")
    if not thesaurus.exists():
        thesaurus.write_text("", encoding="utf-8")
    with tables.open("a", encoding="utf-8") as handle:
        text = tables.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            handle.write("\n")
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return folder


def curated_proposer(accepted: dict[str, PerturbationResult]) -> Any:
    """A dataset proposer that answers each table with the names reviewers accepted (by
    table id; a table the job lacks gets no names, so it is left as it is)."""

    def propose(tables: Sequence[Table]) -> list[PerturbationResult]:
        return [
            accepted.get(table.id or "")
            or PerturbationResult(
                table_id=table.id,
                primary_entity=table.name or "",
                entity_source="given",
                columns=[],
            )
            for table in tables
        ]

    return propose
