"""Offline default vectors: retrofitting, atomic saving, building from GloVe + WordNet."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gensim.models import KeyedVectors

from cta.settings import Settings
from retriever.rerank import KeyedVectorsReranker, VectorsMissingError, load_vectors
from retriever.vectors import build_default_vectors, load_glove, retrofit, save_vectors

# car ~ automobile (synonyms, far apart at the start), hot / cold (antonyms, close at the
# start, as distributional vectors put them), road (unrelated to the graph).
WORDS = ["car", "automobile", "hot", "cold", "road"]
START = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.2, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.3],
        [0.0, 0.0, 1.0, -0.3],
        [0.5, 0.5, 0.5, 0.5],
    ],
    dtype=np.float32,
)
SYNONYMS = [(0, 1)]
ANTONYMS = [(2, 3)]


def cos(vectors: np.ndarray, a: int, b: int) -> float:
    va, vb = vectors[a], vectors[b]
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


def unit(rows: np.ndarray) -> np.ndarray:
    result: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return result


def test_synonyms_move_closer_and_unrelated_words_stay() -> None:
    fitted = retrofit(START, SYNONYMS, repel=0.0)
    assert cos(fitted, 0, 1) > cos(START, 0, 1) + 0.3
    np.testing.assert_allclose(fitted[4], unit(START)[4], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(fitted, axis=1), 1.0, atol=1e-5)


def test_one_iteration_is_faruqui_update() -> None:
    # alpha = 1, beta = 1/degree: the new vector is the average of the word's own vector
    # and the mean of its synonyms' vectors.
    start = unit(START)
    fitted = retrofit(START, [(0, 1), (0, 4)], iterations=1, repel=0.0)
    expected = (start[0] + (start[1] + start[4]) / 2) / 2
    np.testing.assert_allclose(fitted[0], expected / np.linalg.norm(expected), atol=1e-6)
    # Duplicate and reversed edges count once.
    again = retrofit(START, [(0, 1), (1, 0), (0, 1), (0, 4)], iterations=1, repel=0.0)
    np.testing.assert_allclose(again, fitted, atol=1e-6)


def test_antonyms_are_pushed_apart() -> None:
    plain = retrofit(START, SYNONYMS, ANTONYMS, repel=0.0)
    repelled = retrofit(START, SYNONYMS, ANTONYMS, repel=0.5)
    assert cos(repelled, 2, 3) < cos(plain, 2, 3) - 0.3
    # The synonym pull is unaffected by an unrelated antonym pair.
    assert cos(repelled, 0, 1) == pytest.approx(cos(plain, 0, 1), abs=1e-6)


def test_save_vectors_is_one_atomic_file(tmp_path: Path) -> None:
    kv = KeyedVectors(vector_size=4, count=0, dtype=np.float32)
    kv.add_vectors(WORDS, START)
    path = save_vectors(kv, tmp_path / "vectors" / "tiny.kv")
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.kv"]
    loaded = load_vectors(path)
    assert list(loaded.index_to_key) == WORDS
    np.testing.assert_allclose(loaded.vectors, unit(START), atol=1e-6)


def test_build_default_vectors_only_builds_the_offline_ones(tmp_path: Path) -> None:
    with pytest.raises(VectorsMissingError, match="CTA_VECTORS_PATH"):
        build_default_vectors(Settings(home=tmp_path, vectors="numberbatch"), progress=False)
    existing = tmp_path / "numberbatch.txt"
    existing.write_text("1 2\nname 0.1 0.2\n")
    settings = Settings(home=tmp_path, vectors="numberbatch", vectors_path=existing)
    assert build_default_vectors(settings, progress=False) == existing
    # An existing default file is kept as is.
    built = tmp_path / "vectors" / "glove.kv"
    built.parent.mkdir()
    built.write_bytes(b"already built")
    assert build_default_vectors(Settings(home=tmp_path, vectors="glove"), progress=False) == built
    assert built.read_bytes() == b"already built"


@pytest.mark.slow
def test_build_glove_retrofit_from_real_glove_and_wordnet(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, vectors="glove-retrofit")
    path = build_default_vectors(settings, progress=False, vocab_size=3_000)
    assert path == tmp_path / "vectors" / "glove-retrofit.kv"
    assert sorted(p.name for p in path.parent.iterdir()) == ["glove-retrofit.kv"]
    fitted = KeyedVectorsReranker(load_vectors(path))
    assert "first_name" in fitted.kv.key_to_index  # a WordNet multi-word lemma
    keys, vectors = load_glove()
    plain_kv = KeyedVectors(vector_size=vectors.shape[1], count=0, dtype=np.float32)
    plain_kv.add_vectors(keys, vectors)
    plain = KeyedVectorsReranker(plain_kv)
    # WordNet synonyms move closer than GloVe put them; antonyms move apart.
    for a, b in [("car", "automobile"), ("buy", "purchase"), ("first name", "forename")]:
        assert fitted.similarity(a, b) > plain.similarity(a, b) + 0.02, (a, b)
    assert fitted.similarity("hot", "cold") < plain.similarity("hot", "cold") - 0.05
