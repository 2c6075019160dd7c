"""Reranker (docs/method.md §3.2): word-embedding similarity between column names.

Any gensim ``KeyedVectors`` file works; ConceptNet Numberbatch is the paper's choice and a
drop-in. A column name is normalised to lowercase words (spaces, underscores, hyphens and
camelCase split) and looked up as the joined phrase (``first_name``), the way Numberbatch
and WordNet spell multi-word terms. A phrase that is not in the vocabulary is the mean of
the vectors of its pieces, found greedily left to right as the longest in-vocabulary
n-grams (with no multi-word entries this is exactly the mean of its word vectors);
out-of-vocabulary words are skipped. A name none of whose words is known has no vector:
its similarity to anything is 0. All vectors are unit-normalised, so scores are cosines.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from cta.registry import register
from cta.settings import Settings
from cta.words import name_words

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

__all__ = [
    "KeyedVectorsReranker",
    "UnitVectors",
    "VectorsFormatError",
    "VectorsMissingError",
    "load_unit_vectors",
    "load_vectors",
]

# Numberbatch's multilingual file prefixes every term with its language.
_CONCEPTNET_PREFIX = "/c/"
_ENGLISH_PREFIX = "/c/en/"
_TEXT_SUFFIXES = (".txt", ".txt.gz", ".vec", ".vec.gz")
_BINARY_SUFFIXES = (".bin", ".bin.gz")
_NATIVE_SUFFIXES = (".kv", ".model")
# Longest multi-word entry tried when splitting an unknown phrase into known pieces.
_MAX_NGRAM = 4

_MULTI_DIGIT = re.compile(r"\d{2,}")


class VectorsMissingError(FileNotFoundError):
    """The configured word-vector file does not exist (or none is configured)."""


class VectorsFormatError(ValueError):
    """A word-vector file cannot be read: unknown suffix or malformed content."""


def load_vectors(path: Path | str) -> KeyedVectors:
    """Load word vectors from any gensim ``KeyedVectors`` file, unit-normalised in place.

    Formats, by suffix: word2vec text ``.txt``/``.vec`` (optionally ``.gz``; the ``"N D"``
    header line is optional — Numberbatch has one), word2vec binary ``.bin``, gensim native
    ``.kv``/``.model``. ConceptNet keys (``/c/en/first_name``) keep English only, with the
    prefix stripped; plain keys (``first_name``) are kept as they are.

    Raises :class:`VectorsMissingError` if the file is absent and
    :class:`VectorsFormatError` for an unknown suffix or malformed content.
    """
    path = Path(path)
    if not path.is_file():
        raise VectorsMissingError(f"word-vector file {path} does not exist")
    name = path.name.lower()
    if name.endswith(_TEXT_SUFFIXES):
        kv = _read_text(path)
    elif name.endswith(_BINARY_SUFFIXES + _NATIVE_SUFFIXES):
        kv = _english_only(_read_gensim(path, binary=name.endswith(_BINARY_SUFFIXES)))
    else:
        known = ", ".join(_TEXT_SUFFIXES + _BINARY_SUFFIXES + _NATIVE_SUFFIXES)
        raise VectorsFormatError(f"{path}: unknown word-vector format (suffixes: {known})")
    if len(kv) == 0:
        raise VectorsFormatError(f"{path} holds no (English) vectors")
    # Unit rows make every score a cosine and a matrix product (zero rows stay zero).
    vectors = np.asarray(kv.vectors, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    np.divide(vectors, norms[:, None], out=vectors, where=norms[:, None] > 0)
    kv.vectors = vectors
    kv.norms = None
    return kv


def _read_gensim(path: Path, binary: bool) -> KeyedVectors:
    """word2vec binary or gensim native; any failure to parse is a :class:`VectorsFormatError`."""
    from gensim.models import KeyedVectors

    try:
        if binary:
            loaded = KeyedVectors.load_word2vec_format(str(path), binary=True)
        else:
            loaded = KeyedVectors.load(str(path))
    except Exception as error:  # gensim/pickle raise many kinds for a foreign file
        raise VectorsFormatError(
            f"{path}: not a readable {'word2vec binary' if binary else 'gensim KeyedVectors'} file ({error})"
        ) from error
    if not isinstance(loaded, KeyedVectors):
        raise VectorsFormatError(f"{path} holds a {type(loaded).__name__}, not KeyedVectors")
    return loaded


def _open_text(path: Path) -> IO[str]:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return path.open("r", encoding="utf-8", errors="replace")


def _english_key(key: str) -> str | None:
    """The lookup key of a vocabulary entry; ``None`` for a non-English ConceptNet term."""
    if not key.startswith(_CONCEPTNET_PREFIX):
        return key
    if not key.startswith(_ENGLISH_PREFIX):
        return None
    # ConceptNet URIs may carry a part of speech after the term (/c/en/run/v).
    return key[len(_ENGLISH_PREFIX) :].split("/", 1)[0]


def _read_text(path: Path) -> KeyedVectors:
    """word2vec text, streamed so a multilingual Numberbatch file keeps only English rows."""
    keys: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    dim: int | None = None
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\n").rstrip()
            if not line:
                continue
            if lineno == 1:
                head = line.split()
                if len(head) == 2 and head[0].isdigit() and head[1].isdigit():
                    dim = int(head[1])
                    continue
            if dim is None:
                dim = len(line.split(" ")) - 1
                if dim < 1:
                    raise VectorsFormatError(f"{path}:{lineno}: no vector after the key")
            # rsplit keeps keys that contain spaces (some GloVe releases have them).
            parts = line.rsplit(" ", dim)
            key = _english_key(parts[0])
            if key is None or key in seen:
                continue
            try:
                values = np.array(parts[1:], dtype=np.float32)
            except ValueError:
                values = None
            if values is None or values.shape != (dim,):
                raise VectorsFormatError(
                    f"{path}:{lineno}: expected a key and {dim} numbers, got {parts[1:6]}…"
                )
            seen.add(key)
            keys.append(key)
            rows.append(values)
    if dim is None:
        raise VectorsFormatError(f"{path} is empty")
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=dim, count=0, dtype=np.float32)
    if keys:
        kv.add_vectors(keys, np.stack(rows))
    return kv


def _english_only(kv: KeyedVectors) -> KeyedVectors:
    """Strip ConceptNet prefixes (keeping English), or return ``kv`` untouched if it has none."""
    keys: list[str] = list(kv.index_to_key)
    if not any(str(k).startswith(_CONCEPTNET_PREFIX) for k in keys):
        return kv
    from gensim.models import KeyedVectors

    kept: dict[str, int] = {}
    for i, key in enumerate(keys):
        english = _english_key(str(key))
        if english is not None and english not in kept:
            kept[english] = i
    out = KeyedVectors(vector_size=kv.vector_size, count=0, dtype=np.float32)
    if kept:
        out.add_vectors(list(kept), kv.vectors[list(kept.values())])
    return out


@dataclass(frozen=True)
class UnitVectors:
    """Unit-length word vectors without gensim: what the reranker reads of a ``KeyedVectors``
    (its keys' rows and the matrix), as :func:`load_unit_vectors` keeps them on disk."""

    key_to_index: Mapping[str, int]
    vectors: np.ndarray

    @property
    def vector_size(self) -> int:
        return int(self.vectors.shape[1])


# Bumped when the cache files' layout changes.
_CACHE_FORMAT = 1


def load_unit_vectors(path: Path | str) -> UnitVectors:
    """:func:`load_vectors`'s result as :class:`UnitVectors`, through a cache beside the file
    (``<file>.unit.npy``, its rows, and ``<file>.unit.keys``, its keys after a stamp line):
    a later load reads those two files and never imports gensim (~0.7 s of scipy). The
    stamp holds the file's size and mtime; a stale, missing or unreadable cache is rebuilt
    from the file (and written back when the folder is writable)."""
    path = Path(path)
    if not path.is_file():
        raise VectorsMissingError(f"word-vector file {path} does not exist")
    stat = path.stat()
    stamp = json.dumps([_CACHE_FORMAT, stat.st_size, stat.st_mtime_ns])
    rows_file = path.with_name(path.name + ".unit.npy")
    keys_file = path.with_name(path.name + ".unit.keys")
    try:
        head, _, body = keys_file.read_text(encoding="utf-8").partition("\n")
        if head == stamp:
            keys = body.split("\n") if body else []
            matrix = np.load(rows_file, mmap_mode="r")
            if matrix.shape[0] == len(keys):
                return UnitVectors({k: i for i, k in enumerate(keys)}, matrix)
    except (OSError, ValueError):
        pass
    kv = load_vectors(path)
    keys = [str(k) for k in kv.index_to_key]
    unit = UnitVectors(dict(kv.key_to_index), np.asarray(kv.vectors, dtype=np.float32))
    if any("\n" in k for k in keys):
        return unit
    try:
        partial = f".{os.getpid()}.partial"
        with open(str(rows_file) + partial, "wb") as handle:
            np.save(handle, unit.vectors)
        Path(str(keys_file) + partial).write_text(stamp + "\n" + "\n".join(keys), "utf-8")
        os.replace(str(rows_file) + partial, rows_file)
        os.replace(str(keys_file) + partial, keys_file)
    except OSError:
        pass  # a read-only folder: the next load reads the file again
    return unit


class KeyedVectorsReranker:
    """Cosine similarity of column names over ``KeyedVectors`` (a :class:`cta.components.Reranker`).

    ``kv`` is used as given when its rows are already unit length (as from
    :func:`load_vectors`); otherwise a normalised copy is made. Phrase vectors are cached
    (``cache_size`` most recent names). Thread-safe for concurrent reads.
    """

    def __init__(self, kv: KeyedVectors | UnitVectors, cache_size: int = 100_000) -> None:
        self.kv = kv
        vectors = np.asarray(kv.vectors, dtype=np.float32)
        # einsum: row norms without a temporary the size of the matrix.
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
        nonzero = norms > 0
        if not np.allclose(norms[nonzero], 1.0, atol=1e-4):
            safe = np.where(nonzero, norms, 1.0)[:, None]
            vectors = (vectors / safe).astype(np.float32)
        self._unit = vectors
        self._index: Mapping[str, int] = kv.key_to_index
        self.dim = int(kv.vector_size)
        self._keys: list[str] | None = None  # row → key, built on the first nearest()
        self._phrase_vector = lru_cache(maxsize=cache_size)(self._compute_vector)

    # -- phrase vectors ----------------------------------------------------------------------
    def vector(self, name: str) -> np.ndarray | None:
        """The unit vector of a column name, or ``None`` if none of its words is known."""
        return self._phrase_vector(name)

    def _lookup(self, key: str) -> int | None:
        index = self._index.get(key)
        if index is None and any(c.isdigit() for c in key):
            # Numberbatch spells multi-digit numbers with '#' ("1990s" → "####s").
            index = self._index.get(_MULTI_DIGIT.sub(lambda m: "#" * len(m.group()), key))
        return index

    def _compute_vector(self, name: str) -> np.ndarray | None:
        words = name_words(name)
        pieces: list[int] = []
        start = 0
        while start < len(words):
            # Longest known n-gram starting here; the whole phrase is tried first.
            longest = len(words) - start if start == 0 else min(_MAX_NGRAM, len(words) - start)
            for size in range(longest, 0, -1):
                index = self._lookup("_".join(words[start : start + size]))
                if index is not None:
                    pieces.append(index)
                    start += size
                    break
            else:
                start += 1  # an unknown word is skipped
        if not pieces:
            return None
        mean = self._unit[pieces].mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if norm == 0.0:
            return None
        result: np.ndarray = (mean / norm).astype(np.float32)
        result.setflags(write=False)
        return result

    def _matrix(self, names: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(names), self.dim), dtype=np.float32)
        for i, name in enumerate(names):
            vec = self._phrase_vector(name)
            if vec is not None:
                out[i] = vec
        return out

    def nearest(self, vector: np.ndarray, topn: int) -> list[tuple[str, float]]:
        """The ``topn`` vocabulary entries most similar to a unit ``vector`` (cosines), best
        first, ties in vocabulary order: gensim's ``most_similar`` without gensim."""
        scores = self._unit @ np.asarray(vector, dtype=np.float32)
        n = min(topn, len(scores))
        if n <= 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.lexsort((top, -scores[top]))]
        if self._keys is None:
            keys = [""] * len(scores)
            for key, row in self._index.items():
                keys[row] = key
            self._keys = keys
        return [(self._keys[i], float(scores[i])) for i in top]

    # -- Reranker protocol -------------------------------------------------------------------
    def similarity(self, a: str, b: str) -> float:
        """Cosine of the two names' vectors; 0.0 when either has no vector (all words OOV)."""
        va, vb = self._phrase_vector(a), self._phrase_vector(b)
        if va is None or vb is None:
            return 0.0
        return float(np.dot(va, vb))

    def rank(self, target: str, candidates: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The ``k`` candidates most similar to ``target``, best first, ties broken by name."""
        return self.rank_many([target], candidates, k)[0]

    def rank_many(
        self, targets: Sequence[str], candidates: Sequence[str], k: int
    ) -> list[list[tuple[str, float]]]:
        """:meth:`rank` for several targets, the pool's vectors built once.

        Duplicate candidates count once; candidates without a vector score 0.0 and still
        take part (they rank above negatively similar ones).
        """
        if k <= 0 or not candidates:
            return [[] for _ in targets]
        # Sorted unique names: a stable sort on score then breaks ties by name.
        pool = sorted(set(candidates))
        pool_matrix = self._matrix(pool)
        keep = min(k, len(pool))
        ranked: list[list[tuple[str, float]]] = []
        for target in self._matrix(list(targets)):
            # One matrix-vector product per target: a target's scores never depend on
            # which other targets share the call (batched BLAS may round differently).
            row = pool_matrix @ target
            order = np.argsort(-row, kind="stable")[:keep]
            ranked.append([(pool[j], float(row[j])) for j in order])
        return ranked


_loaded_lock = threading.Lock()
_loaded: dict[tuple[str, int, int], KeyedVectorsReranker] = {}


def _reranker_for(path: Path) -> KeyedVectorsReranker:
    """One reranker per vector file and process (loading Numberbatch takes a while)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    with _loaded_lock:
        reranker = _loaded.get(key)
        if reranker is None:
            reranker = KeyedVectorsReranker(load_unit_vectors(path))
            _loaded.clear()  # keep only the current file in memory
            _loaded[key] = reranker
        return reranker


def _default_vectors(settings: Settings) -> KeyedVectorsReranker:
    path = settings.resolved_vectors_path()
    if not path.is_file():
        raise VectorsMissingError(
            f"{settings.vectors} vectors not built at {path}: run `cta setup` "
            "(or retriever.vectors.build_default_vectors), or set CTA_VECTORS_PATH"
        )
    return _reranker_for(path)


def _configured_vectors(settings: Settings) -> KeyedVectorsReranker:
    if settings.vectors_path is None:
        raise VectorsMissingError(
            f"vectors={settings.vectors!r} needs CTA_VECTORS_PATH: a KeyedVectors file "
            "(e.g. numberbatch-en-19.08.txt.gz, .bin or .kv)"
        )
    return _reranker_for(settings.vectors_path)


register("vectors", "glove-retrofit")(_default_vectors)
register("vectors", "glove")(_default_vectors)
register("vectors", "numberbatch")(_configured_vectors)
register("vectors", "keyedvectors")(_configured_vectors)
