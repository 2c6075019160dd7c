"""``cta dataset perturb`` — the ADVETA protocol over a text-to-SQL dataset.

For each NL–SQL pair, one RPL and one ADD perturbation of its tables per seed (every
column its gold SQL mentions gets a candidate of the CTA pipeline), gold SQL rewritten,
perturbed databases written; ``--augment`` writes the 3× training set (original + RPL +
ADD per pair) instead; ``--verify`` executes every original and rewritten query and
reports each mismatch or error (``verification.json``). Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cta.cli._io import check_input_path, error, print_json, settings_with_index
from cta.cli._ray import add_ray_arguments, mapper, ray_requested
from cta.datasets import FORMATS, Proposer, dataset_format, perturb_dataset
from cta.datasets.layouts import LAYOUTS, write_drspider, write_hf
from cta.families import family_kinds
from cta.pipeline import Pipeline
from cta.provenance import build_manifest, write_manifest
from cta.results import PerturbationResult, PerturbOptions
from cta.scale import LedgerMismatchError, ProposalError, ledger_proposer
from cta.scale.ray_backend import RayUnavailableError
from cta.table import InvalidTableError, Table

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
#: with --ray, the proposals' ledger in the output folder (a rerun skips finished shards)
PROPOSALS_DIR = "proposals"


def register(sub: Any) -> None:
    p = sub.add_parser("dataset", help="perturb a text-to-SQL dataset (ADVETA protocol)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser(
        "perturb", help="RPL/ADD perturbations of every NL–SQL pair, SQL rewritten, databases"
    )
    run.add_argument("--format", required=True, choices=FORMATS.names())
    run.add_argument(
        "--tables",
        required=True,
        help="Spider tables.json · WikiSQL *.tables.jsonl · WTQ root folder (with csv/) · "
        "BIRD dev_tables.json",
    )
    run.add_argument(
        "--questions", help="question file (Spider .json, WikiSQL .jsonl, WTQ .tsv, BIRD dev.json)"
    )
    run.add_argument(
        "--db-dir",
        help="Spider or BIRD database folder (<db_id>/<db_id>.sqlite; BIRD's default: "
        "dev_databases beside dev_tables.json, description CSVs read from it); a database it "
        "lacks is synthesised from the schema (said on stderr, in the manifest and in eval "
        "reports)",
    )
    run.add_argument(
        "--statistics",
        help="BIRD: column statistics to synthesise databases from (sample values, ranges, "
        "null and unique fractions; the shape of the mini-dev's dev_tables_cleaned.json)",
    )
    run.add_argument(
        "--verify-seeds",
        type=int,
        default=None,
        help="BIRD with --verify: synthesised databases are verified on this many synthesis "
        "seeds (--synthesis-seed, +1, …; default 3)",
    )
    run.add_argument(
        "--require-databases",
        action="store_true",
        help="stop (exit 2) rather than synthesise a database --db-dir does not hold",
    )
    run.add_argument("--out", required=True, help="output folder")
    run.add_argument(
        "--kind",
        default="rpl,add",
        help="comma-separated kinds: rpl, add (default rpl,add), a family of cta.families "
        f"({', '.join(k for k in family_kinds() if k not in ('rpl', 'add'))}; a format runs "
        "those whose needs it holds — docs/families.md) or all",
    )
    run.add_argument("--seeds", type=int, default=5, help="seeds 0…N-1 (default 5)")
    run.add_argument("--augment", action="store_true", help="original + RPL + ADD per pair")
    run.add_argument("--verify", action="store_true", help="execute and compare every query")
    run.add_argument(
        "--values",
        choices=("generate", "null"),
        default="generate",
        help="cells of added columns: generated plausible values (seeded) or NULL",
    )
    run.add_argument("--synthesis-seed", type=int, default=0, help="seed of synthesised DBs")
    run.add_argument("--index", help="retriever index directory (default: the settings')")
    run.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="cta",
        help="output layout (Spider only): cta (default: question files beside tables.json "
        "and database/), drspider (Dr.Spider's data/ folder) or hf (Parquet + dataset card)",
    )
    run.add_argument(
        "--name",
        help="--layout drspider: the dataset's name in Spider-<name>/ and q_id_spider_<name> "
        "(default: dev for Spider dev questions under any file name, else the file's stem; "
        "Dr.Spider's scripts read Spider-dev)",
    )
    add_ray_arguments(run, f"propose the candidates (ledger: OUT/{PROPOSALS_DIR}/)")
    run.set_defaults(func=_run)


def parse_kinds(text: str) -> list[str]:
    known = family_kinds()  # every registered family, RPL and ADD first
    kinds: list[str] = []
    for part in text.split(","):
        part = part.strip().lower()
        names = known if part == "all" else (part,)
        for name in names:
            if name not in known:
                raise InvalidTableError(
                    "unknown_kind",
                    f"--kind: {name!r} is not one of {', '.join(known)} or all",
                )
            if name not in kinds:
                kinds.append(name)
    return kinds


def check_inputs(args: argparse.Namespace) -> None:
    """Raise :class:`InvalidTableError` for a missing input before any model is loaded."""
    dataset_format(args.format).check(parse_kinds(args.kind))  # a kind the format cannot hold
    if args.format in ("spider", "wikisql", "bird") and args.questions is None:
        raise InvalidTableError(
            "missing_questions", f"--format {args.format} needs --questions (the question file)"
        )
    check_input_path(args.tables, "folder" if args.format == "wtq" else "file")
    if args.format == "wtq" and not Path(args.tables, "csv").is_dir():
        raise InvalidTableError("not_wtq", f"{args.tables}: no csv/ folder (a WTQ root has one)")
    if args.questions is not None:
        check_input_path(args.questions, "file")
    if args.db_dir is not None:
        check_input_path(args.db_dir, "folder")
    if args.statistics is not None:
        if args.format != "bird":
            raise InvalidTableError("unsupported_option", "--statistics: only for --format bird")
        check_input_path(args.statistics, "file")
    if args.verify_seeds is not None and (args.format != "bird" or args.verify_seeds < 1):
        raise InvalidTableError(
            "unsupported_option", "--verify-seeds: a number of seeds, 1 or more, for --format bird"
        )
    if args.layout != "cta" and args.format != "spider":
        raise InvalidTableError(
            "unsupported_layout", f"--layout {args.layout}: only for --format spider"
        )
    if args.name is not None and args.layout != "drspider":
        raise InvalidTableError(
            "unsupported_layout", "--name names Dr.Spider's folders: only with --layout drspider"
        )
    if args.name is not None and not _NAME.match(args.name):
        raise InvalidTableError(
            "bad_name", f"--name {args.name!r}: letters, digits, '_' and '-' only"
        )
    if args.layout == "drspider" and args.augment:
        raise InvalidTableError(
            "unsupported_layout", "--layout drspider holds evaluation sets, not --augment files"
        )


def _run(args: argparse.Namespace) -> int:
    try:
        kinds = parse_kinds(args.kind)
        check_inputs(args)
    except InvalidTableError as exc:
        return error(f"dataset perturb: {exc.message} ({exc.problem})")
    if args.seeds < 1:
        return error("dataset perturb: --seeds must be at least 1")

    # Loaded on first use: the structural families (shuffle, flatten …) use neither the
    # judge nor the retriever, so they run without the index, vectors or judge.
    @functools.cache
    def pipeline() -> Pipeline:
        return Pipeline.from_settings(settings_with_index(args.index))

    def perturb_here(tables: Sequence[Table]) -> list[PerturbationResult]:
        return pipeline().perturb_many(tables, PerturbOptions(seed=0))

    def progress(message: str) -> None:
        print(f"cta dataset: {message}", file=sys.stderr, flush=True)

    proposer: Proposer = perturb_here
    if ray_requested(args):
        # The same perturb_many per shard, on the actor pool, through a resumable ledger.
        proposer = ledger_proposer(
            Path(args.out) / PROPOSALS_DIR,
            settings_with_index(args.index),
            mapper=mapper(args),
            progress=progress,
        )

    proposed: list[int] = []  # tables proposals were asked for (did a model take part?)

    def propose(tables: Sequence[Table]) -> list[PerturbationResult]:
        proposed.append(len(tables))
        return proposer(tables)

    def equivalent(pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        return pipeline().equivalent(pairs)

    out = Path(args.out)
    # another layout: the default one is written beside it first, then laid out anew
    staging = out if args.layout == "cta" else out.parent / f".{out.name}.cta-staging"
    if staging != out and staging.exists():
        shutil.rmtree(staging)
    try:
        run = perturb_dataset(
            args.format,
            args.tables,
            args.questions,
            staging,
            propose,
            kinds,
            range(args.seeds),
            db_dir=args.db_dir,
            augment=args.augment,
            check_execution=args.verify,
            values=args.values,
            synthesis_seed=args.synthesis_seed,
            progress=progress,
            judge=equivalent,
            require_databases=args.require_databases,
            statistics=args.statistics,
            verify_seeds=args.verify_seeds or (3 if args.format == "bird" else 1),
        )
    except InvalidTableError as exc:
        if exc.problem == "databases_required":
            return error(f"dataset perturb: --require-databases: {exc.message} ({exc.problem})")
        return error(f"dataset perturb: invalid input: {exc.message} ({exc.problem})")
    except (LedgerMismatchError, RayUnavailableError, ProposalError) as exc:
        return error(f"dataset perturb: {exc}")
    settings = settings_with_index(args.index)
    manifest = build_manifest(
        "cta dataset perturb",
        settings,
        {
            "tables": args.tables,
            "questions": args.questions,
            "db_dir": args.db_dir,
            "statistics": args.statistics,
        },
        seeds=list(range(args.seeds)),
        uses_models=pipeline.cache_info().currsize > 0 or sum(proposed) > 0,
        extra={
            "options": {
                "format": args.format,
                "kinds": kinds,
                "augment": args.augment,
                "verify": args.verify,
                "values": args.values,
                "synthesis_seed": args.synthesis_seed,
                "layout": args.layout,
            },
            "databases": {
                "synthesised": run.synthesised,
                "synthesis_seed": args.synthesis_seed if run.synthesised else None,
                "synthesis_seeds": run.synthesis_seeds
                or ([args.synthesis_seed] if run.synthesised else []),
                "note": run.databases,
            },
        },
    )
    files = list(run.files)
    if staging != out:
        name = Path(args.questions).stem
        try:
            if args.layout == "drspider":
                files = write_drspider(staging, out, name, args.name)
                for folder in files:  # each set folder carries its own manifest
                    inner = sorted(p.name for p in (out / folder).iterdir())
                    write_manifest(out / folder, manifest, inner)
            else:
                files = write_hf(staging, out, name, manifest)
        except InvalidTableError as exc:
            return error(f"dataset perturb: {exc.message} ({exc.problem})")
        for extra in ("mappings.jsonl", "verification.json"):
            if (staging / extra).is_file():
                shutil.move(str(staging / extra), str(out / extra))
                files.append(extra)
        shutil.rmtree(staging)
        run = run.model_copy(update={"out_dir": str(out), "files": files})
    else:
        files = [f for f in files if "/" not in f]
        files += ["database"] if (out / "database").is_dir() else []
    write_manifest(out, manifest, files)
    summary = run.model_dump(mode="json")
    failed = 0
    if run.verification is not None:
        problems = run.verification.pop("problems", [])
        failed = sum(1 for p in problems if p["status"] != "original_error")
        summary["verification"] = {**run.verification, "problems": len(problems)}
    print_json(summary)
    return 1 if failed else 0
