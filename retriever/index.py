"""The FAISS table index: build (atomically), load and search.

An index is a folder:

``index.faiss``
    inner-product FAISS index over L2-normalised table vectors (so scores are cosines):
    ``flat`` (``IndexFlatIP``, exact, the default), ``ivf`` (``IndexIVFFlat``,
    ``nlist ≈ 4·√n`` trained on the vectors) or ``hnsw`` (``IndexHNSWFlat``).
``meta.jsonl``
    one line per vector, in FAISS id order: table id, source, name, caption, columns.
``manifest.json``
    :class:`IndexInfo`: encoder, dim, count, kind, FAISS parameters, build time, corpora.
``skipped.jsonl``
    corpus entries that could not be loaded, with the problem and reason.

A build writes into a hidden temporary folder beside ``out_dir`` and renames it into place
only when every file is written, so a crash never leaves a half-built index at ``out_dir``
and never harms the previous one; leftovers of crashed builds are removed by the next build.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import math
import os
import shutil
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

import retriever.encoders  # noqa: F401 — registers the encoders asked for by name here
from cta import registry
from cta.annotations import load_annotated_tables
from cta.components import TableEncoder
from cta.settings import Settings
from cta.table import Column, Table
from cta.words import name_key
from retriever.corpus import Corpus, CorpusSpec

__all__ = [
    "BrokenIndexError",
    "IndexEntry",
    "IndexInfo",
    "IndexKind",
    "IndexNotFoundError",
    "IndexRecipe",
    "TableIndex",
    "DEFAULT_RECIPE",
    "build_corpus_index",
    "annotated_holdout",
    "build_from_recipe",
    "build_index",
    "fingerprint",
]

log = logging.getLogger(__name__)

IndexKind = Literal["flat", "ivf", "hnsw"]
INDEX_FILE = "index.faiss"
META_FILE = "meta.jsonl"
MANIFEST_FILE = "manifest.json"
SKIPPED_FILE = "skipped.jsonl"
FORMAT_VERSION = 1
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
# Search width well above k = 100: at 100k synthetic tables 128 recalls 0.82 of the exact
# top 100, 512 recalls 0.95 at ~1.5 ms a query (benchmarks/results/index_scale.json).
HNSW_EF_SEARCH = 512
# Tables encoded per call; the encoder batches inside it.
CHUNK_TABLES = 256


class IndexNotFoundError(FileNotFoundError):
    """No built index where one was expected."""


class BrokenIndexError(RuntimeError):
    """An index folder whose files disagree (counts, dimension) or cannot be read."""


def fingerprint(name: str | None, columns: Iterable[str]) -> str:
    """Identity of a table regardless of id: normalised name + sorted normalised columns."""
    cols = sorted(name_key(c) for c in columns)
    return name_key(name or "") + "\x1f" + "\x1f".join(cols)


class IndexEntry(BaseModel):
    """What the index keeps of a corpus table."""

    id: str
    source: str = ""
    name: str | None = None
    caption: str | None = None
    columns: list[Column] = Field(default_factory=list)

    @classmethod
    def of(cls, table: Table) -> IndexEntry:
        """The entry of a corpus table (which must have an id)."""
        assert table.id is not None
        return cls(
            id=table.id,
            source=table.source or "",
            name=table.name,
            caption=table.caption,
            columns=table.columns,
        )

    @property
    def fingerprint(self) -> str:
        """See :func:`fingerprint`."""
        return fingerprint(self.name, (c.name for c in self.columns))


class IndexInfo(BaseModel):
    """The manifest of a built index."""

    path: str = Field(default="", description="Where the index was loaded from (not stored)")
    format: int = FORMAT_VERSION
    encoder: dict[str, Any]
    dim: int
    count: int
    kind: IndexKind
    faiss: dict[str, int] = Field(default_factory=dict)
    build_seconds: float
    built_at: str
    corpora: list[dict[str, Any]] = Field(default_factory=list)
    skipped: int = 0


# -- building ------------------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_leftovers(out_dir: Path) -> None:
    """Remove temporary folders of crashed builds; restore an index lost mid-swap."""
    for stale in sorted(out_dir.parent.glob(f".{out_dir.name}.*-*")):
        kind, _, rest = stale.name.removeprefix(f".{out_dir.name}.").partition("-")
        pid = rest.split("-", 1)[0]
        if kind not in ("tmp", "old") or not pid.isdigit() or _alive(int(pid)):
            continue
        if kind == "old" and not out_dir.exists() and (stale / MANIFEST_FILE).exists():
            log.warning("restoring %s from an interrupted build", out_dir)
            stale.rename(out_dir)
            continue
        log.info("removing leftover %s of a crashed build", stale)
        shutil.rmtree(stale, ignore_errors=True)


def _swap_into_place(tmp: Path, out_dir: Path) -> None:
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    if out_dir.exists():
        out_dir.rename(old)
    try:
        tmp.rename(out_dir)
    except BaseException:
        if old.exists():
            old.rename(out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _checked_chunks(tables: Iterable[Table], size: int, seen: set[str]) -> Iterator[list[Table]]:
    """:func:`_chunks` of tables with an id each, none seen before (ids added to ``seen``)."""
    for chunk in _chunks(tables, size):
        for table in chunk:
            if table.id is None:
                raise ValueError("every indexed table needs an id")
            if table.id in seen:
                raise ValueError(f"duplicate table id {table.id!r} across corpora")
            seen.add(table.id)
        yield chunk


def _chunks(tables: Iterable[Table], size: int) -> Iterator[list[Table]]:
    chunk: list[Table] = []
    for table in tables:
        chunk.append(table)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


ChunkEncoder = Callable[[Iterable[list[Table]]], Iterator[tuple[list[Table], np.ndarray]]]
"""Encodes chunks of tables, yielding each chunk with its vectors in the chunks' order (the
index build's default encodes them here one by one; ``cta index build --ray`` on actors)."""


def encode_here(encoder: TableEncoder, batch_size: int) -> ChunkEncoder:
    """:data:`ChunkEncoder` in this process: ``encoder.encode(chunk, batch_size)`` in turn."""

    def encode(chunks: Iterable[list[Table]]) -> Iterator[tuple[list[Table], np.ndarray]]:
        for chunk in chunks:
            yield chunk, encoder.encode(chunk, batch_size)

    return encode


def load_faiss() -> Any:
    # faiss logs every CPU-variant probe at INFO; only its warnings matter here.
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    import faiss

    return faiss


def build_faiss_index(vectors: np.ndarray, kind: IndexKind) -> tuple[Any, dict[str, int]]:
    faiss = load_faiss()
    n, dim = vectors.shape
    if kind == "flat":
        flat = faiss.IndexFlatIP(dim)
        flat.add(vectors)
        return flat, {}
    if kind == "ivf":
        nlist = max(1, min(n, round(4 * math.sqrt(n))))
        nprobe = max(1, math.ceil(nlist / 8))
        quantizer = faiss.IndexFlatIP(dim)
        ivf = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        # k-means on at most 64 points per centroid (FAISS samples them with its fixed seed):
        # as good a quantiser here as 256 (recall within 0.005 at 100k) and 4x cheaper.
        ivf.cp.max_points_per_centroid = 64
        ivf.train(vectors)  # k-means with FAISS's fixed seed: reproducible
        ivf.add(vectors)
        ivf.nprobe = nprobe
        return ivf, {"nlist": nlist, "nprobe": nprobe}
    if kind == "hnsw":
        hnsw = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        hnsw.hnsw.efSearch = HNSW_EF_SEARCH
        # Parallel insertion makes the graph depend on thread timing; one thread keeps the
        # same corpus giving the same index.
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            hnsw.add(vectors)
        finally:
            faiss.omp_set_num_threads(threads)
        return hnsw, {
            "M": HNSW_M,
            "efConstruction": HNSW_EF_CONSTRUCTION,
            "efSearch": HNSW_EF_SEARCH,
        }
    raise ValueError(f"unknown index kind {kind!r} (flat, ivf or hnsw)")


def _describe(encoder: TableEncoder) -> dict[str, Any]:
    describe = getattr(encoder, "describe", None)
    if callable(describe):
        info = describe()
        if isinstance(info, dict):
            return info
    return {"name": encoder.name, "dim": encoder.dim}


def build_index(
    tables: Iterable[Table],
    encoder: TableEncoder,
    out_dir: str | Path,
    *,
    kind: IndexKind = "flat",
    batch_size: int = 32,
    progress: bool = True,
    total: int | None = None,
    corpora: Sequence[Corpus] = (),
    encode_chunks: ChunkEncoder | None = None,
) -> IndexInfo:
    """Encode ``tables`` and write an index folder at ``out_dir`` (replacing one atomically).

    Every table needs a unique ``id``. ``corpora`` are the corpora ``tables`` is drawn from:
    their specs, counts and skipped entries are recorded once ``tables`` is exhausted.
    ``total`` (if known) sizes the progress bar. ``encode_chunks`` encodes the chunks of
    ``CHUNK_TABLES`` tables elsewhere (default: ``encoder`` here); ``encoder`` still names
    the index's encoder and its dimension.
    """
    from tqdm import tqdm

    if kind not in ("flat", "ivf", "hnsw"):
        raise ValueError(f"unknown index kind {kind!r} (flat, ivf or hnsw)")
    out = Path(out_dir)
    if out.exists() and not (out / MANIFEST_FILE).is_file() and any(out.iterdir()):
        # The old folder is replaced whole: never do that to a folder that is not an index.
        raise FileExistsError(f"{out} exists and is not a table index; choose another folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    _clean_leftovers(out)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    started = time.perf_counter()
    try:
        seen: set[str] = set()
        vectors: list[np.ndarray] = []
        with (
            (tmp / META_FILE).open("w", encoding="utf-8") as meta,
            tqdm(total=total, unit="table", desc="encoding", disable=not progress) as bar,
        ):
            encode = encode_chunks or encode_here(encoder, batch_size)
            for chunk, raw in encode(_checked_chunks(tables, max(CHUNK_TABLES, batch_size), seen)):
                encoded = np.ascontiguousarray(raw, np.float32)
                if encoded.shape != (len(chunk), encoder.dim):
                    raise BrokenIndexError(
                        f"encoder {encoder.name} returned {encoded.shape} for {len(chunk)} tables"
                    )
                vectors.append(encoded)
                for table in chunk:
                    meta.write(IndexEntry.of(table).model_dump_json(exclude_none=True) + "\n")
                bar.update(len(chunk))
        if not vectors:
            raise ValueError("no tables to index: the corpora are empty")
        matrix = np.concatenate(vectors)
        index, params = build_faiss_index(matrix, kind)
        load_faiss().write_index(index, str(tmp / INDEX_FILE))
        skipped = 0
        with (tmp / SKIPPED_FILE).open("w", encoding="utf-8") as handle:
            for corpus in corpora:
                for s in corpus.skipped:
                    record = {"corpus": str(corpus.spec), **dataclasses.asdict(s)}
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                    skipped += 1
        info = IndexInfo(
            encoder=_describe(encoder),
            dim=encoder.dim,
            count=int(matrix.shape[0]),
            kind=kind,
            faiss=params,
            build_seconds=round(time.perf_counter() - started, 3),
            built_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            corpora=[
                {"spec": str(c.spec), "loaded": c.loaded, "skipped": len(c.skipped)}
                for c in corpora
            ],
            skipped=skipped,
        )
        (tmp / MANIFEST_FILE).write_text(
            info.model_dump_json(exclude={"path"}, indent=2) + "\n", encoding="utf-8"
        )
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("built %s index of %d tables at %s", kind, info.count, out)
    return info.model_copy(update={"path": str(out)})


def build_corpus_index(
    specs: Sequence[str | CorpusSpec],
    encoder: TableEncoder,
    out_dir: str | Path,
    *,
    kind: IndexKind = "flat",
    batch_size: int = 32,
    progress: bool = True,
    holdout: Collection[str] = (),
    encode_chunks: ChunkEncoder | None = None,
) -> IndexInfo:
    """Build an index over corpora named by specs (``KIND:PATH``); see :func:`build_index`.

    Tables whose id is in ``holdout`` (evaluation tables) are never indexed, and a table an
    earlier corpus already gave (the same id: a WTQ table also among the annotated tables)
    is indexed once; both are recorded as skipped (``held_out``, ``duplicate_id``).
    """
    corpora = [Corpus(s if isinstance(s, CorpusSpec) else CorpusSpec.parse(s)) for s in specs]
    held_out = dict.fromkeys(holdout, "held_out")

    def tables() -> Iterator[Table]:
        indexed: dict[str, str] = {}
        for corpus in corpora:
            corpus.exclude = {**indexed, **held_out}
            for table in corpus:
                assert table.id is not None
                indexed[table.id] = "duplicate_id"
                yield table

    hints = [c.size_hint() for c in corpora]
    return build_index(
        tables(),
        encoder,
        out_dir,
        kind=kind,
        batch_size=batch_size,
        progress=progress,
        total=None if None in hints else sum(h or 0 for h in hints),
        corpora=corpora,
        encode_chunks=encode_chunks,
    )


# -- recipes -------------------------------------------------------------------------------------
DEFAULT_RECIPE = Path(__file__).resolve().parent.parent / "indexes" / "default.yaml"


class CorpusRecipe(BaseModel):
    """One corpus of a recipe; an ``optional`` one is left out when its path is absent."""

    spec: str
    optional: bool = False


class IndexRecipe(BaseModel):
    """Which corpora an index is built from (the encoder and kind come from the settings).

    ``holdout_annotations``: the annotated tables (data/annotations) of these splits are
    evaluation data, never indexed whichever corpus holds them (default: ``dev``).
    """

    corpora: list[CorpusRecipe]
    batch_size: int = 32
    holdout_annotations: list[Literal["train", "dev"]] = Field(
        default_factory=lambda: ["dev"]  # type: ignore[arg-type]
    )

    @classmethod
    def load(cls, path: str | Path) -> IndexRecipe:
        """Read a YAML recipe; relative corpus paths are relative to the recipe file."""
        import yaml

        file = Path(path)
        recipe = cls.model_validate(yaml.safe_load(file.read_text(encoding="utf-8")))
        corpora = []
        for corpus in recipe.corpora:
            spec = CorpusSpec.parse(corpus.spec)
            if spec.path is not None and not Path(spec.path).is_absolute():
                resolved = (file.parent / spec.path).resolve()
                spec = CorpusSpec(spec.kind, str(resolved))
            corpora.append(corpus.model_copy(update={"spec": str(spec)}))
        return recipe.model_copy(update={"corpora": corpora})

    def specs(self) -> list[CorpusSpec]:
        """The corpora to build from: absent optional ones are logged and left out."""
        specs = []
        for corpus in self.corpora:
            spec = CorpusSpec.parse(corpus.spec)
            if spec.path is not None and not Path(spec.path).exists():
                if corpus.optional:
                    log.warning("optional corpus %s is absent; building without it", spec)
                    continue
                raise FileNotFoundError(f"corpus {spec}: {spec.path} does not exist")
            specs.append(spec)
        return specs


def build_from_recipe(
    settings: Settings,
    recipe: IndexRecipe | str | Path | None = None,
    *,
    out_dir: str | Path | None = None,
    progress: bool = True,
    encode_chunks: Callable[[TableEncoder, int], ChunkEncoder] | None = None,
) -> IndexInfo:
    """Build the index a recipe describes (default: ``indexes/default.yaml``) with the
    settings' encoder and index kind, at ``out_dir`` (default: the settings' index dir).
    ``encode_chunks(encoder, batch_size)``: where the chunks are encoded (default: here)."""
    if not isinstance(recipe, IndexRecipe):
        recipe = IndexRecipe.load(recipe or DEFAULT_RECIPE)
    encoder = registry.create("encoder", settings.encoder, settings)
    return build_corpus_index(
        recipe.specs(),
        encoder,
        out_dir or settings.resolved_index_dir(),
        kind=settings.index_kind,
        batch_size=recipe.batch_size,
        progress=progress,
        holdout=annotated_holdout(settings, recipe.holdout_annotations),
        encode_chunks=None if encode_chunks is None else encode_chunks(encoder, recipe.batch_size),
    )


def annotated_holdout(settings: Settings, splits: Sequence[str] = ("dev",)) -> frozenset[str]:
    """Ids of the annotated tables of ``splits`` (evaluation data: never indexed)."""
    if not splits:
        return frozenset()
    tables = load_annotated_tables(settings.resolved_annotations_dir())
    return frozenset(t.id for t in tables if t.split in splits)


# -- loading and searching ---------------------------------------------------------------------
class TableIndex:
    """A loaded index: FAISS vectors + per-table metadata in FAISS id order."""

    def __init__(self, faiss_index: Any, entries: list[IndexEntry], info: IndexInfo) -> None:
        if faiss_index.ntotal != len(entries) or faiss_index.d != info.dim:
            raise BrokenIndexError(
                f"index at {info.path or '?'}: {faiss_index.ntotal} vectors of dim "
                f"{faiss_index.d}, but {len(entries)} metadata lines and dim {info.dim}"
            )
        self._index = faiss_index
        self.entries = entries
        self.info = info

    @classmethod
    def load(cls, path: str | Path) -> TableIndex:
        """Load an index folder written by :func:`build_index`."""
        faiss = load_faiss()

        root = Path(path)
        manifest = root / MANIFEST_FILE
        if not manifest.is_file():
            raise IndexNotFoundError(f"no table index at {root} (missing {MANIFEST_FILE})")
        try:
            info = IndexInfo.model_validate_json(manifest.read_text(encoding="utf-8"))
            info = info.model_copy(update={"path": str(root)})
            faiss_index: Any = faiss.read_index(str(root / INDEX_FILE))
            with (root / META_FILE).open(encoding="utf-8") as handle:
                entries = [IndexEntry.model_validate_json(line) for line in handle if line.strip()]
        except (OSError, ValueError, RuntimeError) as exc:
            raise BrokenIndexError(f"cannot read the index at {root}: {exc}") from exc
        if info.count != len(entries):
            raise BrokenIndexError(
                f"index at {root}: manifest says {info.count} tables, meta has {len(entries)}"
            )
        if "nprobe" in info.faiss:
            faiss_index.nprobe = info.faiss["nprobe"]
        if "efSearch" in info.faiss:
            faiss_index.hnsw.efSearch = info.faiss["efSearch"]
        return cls(faiss_index, entries, info)

    @property
    def dim(self) -> int:
        """Dimension of the indexed vectors."""
        return self.info.dim

    def __len__(self) -> int:
        return len(self.entries)

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` inner products: ``scores`` float32 ``(n, k)``, ``ids`` int64 ``(n, k)``.

        Ids index :attr:`entries`; ``-1`` marks an empty slot (fewer than ``k`` hits).
        """
        queries = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if queries.shape[1] != self.dim:
            raise ValueError(f"query vectors have dim {queries.shape[1]}, index has {self.dim}")
        k = max(0, min(k, len(self)))
        if k == 0:
            n = queries.shape[0]
            return np.zeros((n, 0), np.float32), np.zeros((n, 0), np.int64)
        scores, ids = self._index.search(queries, k)
        return scores.astype(np.float32), ids.astype(np.int64)
