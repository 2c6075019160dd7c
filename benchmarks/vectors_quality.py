"""Do the offline default vectors prefer similarity over relatedness?

Compares plain GloVe with GloVe retrofitted to WordNet (with and without the antonym
push) on:

1. hand-written (target, synonym, related-but-not-synonym) triples — general knowledge,
   column-name flavoured, written for this benchmark (not from ADVETA or the papers);
   reported on all triples and on the *held-out* ones whose synonym pair does not share a
   WordNet synset (the retrofit never saw them as synonyms);
2. if ``adveta/`` of the data folder is present (``--data``, by default ``../shared/data``
   beside the repository; evaluation only): per column of Spider,
   AUROC of cos(column, candidate) separating the human RPL names from the human ADD names;
3. build time, file size, and ``rank_many`` speed.

Run: ``.venv/bin/python -m benchmarks.vectors_quality [--home DIR] [--data DIR]`` →
``benchmarks/results/vectors.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.harness import DEFAULT_DATA
from cta.settings import Settings
from cta.wordnet import load_wordnet
from cta.words import name_words
from retriever.rerank import KeyedVectorsReranker, load_vectors
from retriever.vectors import build_default_vectors, build_glove_retrofit

RESULTS = Path(__file__).parent / "results" / "vectors.json"

# (target, synonym, related but not a synonym)
TRIPLES: tuple[tuple[str, str, str], ...] = (
    ("car", "automobile", "road"),
    ("buy", "purchase", "sell"),
    ("begin", "start", "end"),
    ("big", "large", "small"),
    ("fast", "quick", "slow"),
    ("happy", "glad", "sad"),
    ("price", "cost", "discount"),
    ("salary", "wage", "employer"),
    ("job", "occupation", "resume"),
    ("doctor", "physician", "hospital"),
    ("lawyer", "attorney", "court"),
    ("teacher", "educator", "classroom"),
    ("city", "town", "country"),
    ("street", "road", "traffic"),
    ("house", "home", "garden"),
    ("film", "movie", "actor"),
    ("song", "tune", "singer"),
    ("photo", "photograph", "camera"),
    ("boat", "ship", "harbor"),
    ("picture", "image", "frame"),
    ("shop", "store", "customer"),
    ("client", "customer", "vendor"),
    ("gift", "present", "birthday"),
    ("answer", "reply", "question"),
    ("error", "mistake", "warning"),
    ("illness", "disease", "medicine"),
    ("rule", "regulation", "penalty"),
    ("speed", "velocity", "distance"),
    ("size", "magnitude", "shape"),
    ("amount", "quantity", "unit"),
    ("total", "sum", "average"),
    ("country", "nation", "border"),
    ("title", "heading", "paragraph"),
    ("employee", "worker", "manager"),
    ("boss", "supervisor", "employee"),
    ("child", "kid", "parent"),
    ("airplane", "aircraft", "airport"),
    ("airport", "airfield", "passenger"),
    ("river", "stream", "bridge"),
    ("forest", "woods", "tree"),
    ("ocean", "sea", "beach"),
    ("rich", "wealthy", "poor"),
    ("smart", "intelligent", "stupid"),
    ("angry", "mad", "calm"),
    ("stone", "rock", "wall"),
    ("trash", "garbage", "recycling"),
    ("pants", "trousers", "shirt"),
    ("couch", "sofa", "lamp"),
    ("fridge", "refrigerator", "kitchen"),
    ("bag", "sack", "pocket"),
    ("truck", "lorry", "highway"),
    ("hotel", "inn", "tourist"),
    ("chef", "cook", "restaurant"),
    ("earnings", "income", "expense"),
    ("team", "squad", "league"),
    ("game", "match", "player"),
    ("winner", "victor", "loser"),
    ("goal", "objective", "strategy"),
    ("reason", "cause", "effect"),
    ("result", "outcome", "process"),
    ("method", "technique", "tool"),
    ("comment", "remark", "discussion"),
    ("permission", "consent", "request"),
    ("end", "finish", "beginning"),
    ("old", "aged", "young"),
    ("owner", "proprietor", "tenant"),
    ("tenant", "renter", "landlord"),
    ("vote", "ballot", "election"),
    ("zip code", "postal code", "street address"),
    ("last name", "family name", "home address"),
    ("date of birth", "birth date", "place of birth"),
    ("movie title", "film title", "movie director"),
    ("total amount", "total sum", "unit price"),
)


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(random positive scores above random negative), ties counting half."""
    pos = np.asarray(positives, dtype=np.float64)[:, None]
    neg = np.asarray(negatives, dtype=np.float64)[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def wordnet_synonyms(a: str, b: str, wordnet: object) -> bool:
    """Whether the two names (as ``_``-joined lemmas) share a WordNet synset."""
    key_a, key_b = "_".join(name_words(a)), "_".join(name_words(b))
    synsets_a = set(wordnet.synsets(key_a))  # type: ignore[attr-defined]
    return bool(synsets_a & set(wordnet.synsets(key_b)))  # type: ignore[attr-defined]


def triple_scores(
    reranker: KeyedVectorsReranker, triples: Sequence[tuple[str, str, str]]
) -> dict[str, float]:
    syn = [reranker.similarity(t, s) for t, s, _ in triples]
    rel = [reranker.similarity(t, r) for t, _, r in triples]
    return {
        "n": len(triples),
        "mean_cos_synonym": round(float(np.mean(syn)), 4),
        "mean_cos_related": round(float(np.mean(rel)), 4),
        "gap": round(float(np.mean(syn) - np.mean(rel)), 4),
        "triplet_accuracy": round(
            float(np.mean([s > r for s, r in zip(syn, rel, strict=True)])), 4
        ),
        "auroc_synonym_vs_related": round(auroc(syn, rel), 4),
    }


def adveta_scores(reranker: KeyedVectorsReranker, adveta: Path) -> dict[str, float] | None:
    rpl_file, add_file = (
        adveta / "spider-rpl-candidates.json",
        adveta / "spider-add-candidates.json",
    )
    if not (rpl_file.is_file() and add_file.is_file()):
        return None
    rpl, add = json.loads(rpl_file.read_text()), json.loads(add_file.read_text())
    per_column: list[float] = []
    pooled_pos: list[float] = []
    pooled_neg: list[float] = []
    for table_id in sorted(set(rpl) & set(add)):
        for column in sorted(set(rpl[table_id]["dict"]) & set(add[table_id]["dict"])):
            pos = [reranker.similarity(column, c) for c in rpl[table_id]["dict"][column]]
            neg = [reranker.similarity(column, c) for c in add[table_id]["dict"][column]]
            if pos and neg:
                per_column.append(auroc(pos, neg))
                pooled_pos += pos
                pooled_neg += neg
    return {
        "columns": len(per_column),
        "mean_per_column_auroc_rpl_vs_add": round(float(np.mean(per_column)), 4),
        "pooled_auroc_rpl_vs_add": round(auroc(pooled_pos, pooled_neg), 4),
        "mean_cos_rpl": round(float(np.mean(pooled_pos)), 4),
        "mean_cos_add": round(float(np.mean(pooled_neg)), 4),
    }


def rank_speed(reranker: KeyedVectorsReranker, vocabulary: Sequence[str]) -> dict[str, float]:
    """Seconds to rank 3,000 two-word pool names against 20 targets (cold phrase cache)."""
    rng = np.random.default_rng(0)
    words = list(vocabulary[200:20_000])
    pairs = rng.choice(len(words), size=(3_020, 2))
    names = [f"{words[a]} {words[b]}" for a, b in pairs]
    start = time.perf_counter()
    reranker.rank_many(names[:20], names[20:], 20)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    reranker.rank_many(names[:20], names[20:], 20)
    return {
        "targets": 20,
        "candidates": 3000,
        "cold_s": round(cold, 4),
        "warm_s": round(time.perf_counter() - start, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--home", type=Path, default=None, help="artefact cache (default: CTA home)"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder")
    args = parser.parse_args()
    base = Settings() if args.home is None else Settings(home=args.home)
    wordnet = load_wordnet(base)

    held_out = tuple(t for t in TRIPLES if not wordnet_synonyms(t[0], t[1], wordnet))
    report: dict[str, object] = {
        "triples": len(TRIPLES),
        "held_out_triples": len(held_out),
        "variants": {},
    }
    variants: dict[str, KeyedVectorsReranker] = {}
    for name in ("glove", "glove-retrofit"):
        settings = base.model_copy(update={"vectors": name})
        path = settings.resolved_vectors_path()
        start = time.perf_counter()
        built = not path.is_file()
        build_default_vectors(settings, progress=False)
        entry = {"file": path.name, "size_mb": round(path.stat().st_size / 1e6, 1)}
        if built:
            entry["build_s"] = round(time.perf_counter() - start, 1)
        start = time.perf_counter()
        variants[name] = KeyedVectorsReranker(load_vectors(path))
        entry["load_s"] = round(time.perf_counter() - start, 2)
        entry["vocabulary"] = len(variants[name].kv)
        report["variants"][name] = entry  # type: ignore[index]
    # Ablations of the antonym push, built in memory only.
    for repel in (0.0, 0.25, 0.75):
        kv = build_glove_retrofit(wordnet, repel=repel)
        kv.unit_normalize_all()
        name = f"glove-retrofit(repel={repel})"
        variants[name] = KeyedVectorsReranker(kv)
        report["variants"][name] = {"vocabulary": len(kv)}  # type: ignore[index]

    for name, reranker in variants.items():
        entry = report["variants"][name]  # type: ignore[index]
        entry["all_triples"] = triple_scores(reranker, TRIPLES)
        entry["held_out_triples"] = triple_scores(reranker, held_out)
        entry["adveta_spider"] = adveta_scores(reranker, args.data / "adveta")
    report["rank_many_speed"] = rank_speed(
        variants["glove-retrofit"], list(variants["glove"].kv.index_to_key)
    )

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
