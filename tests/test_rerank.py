"""Reranker: loading KeyedVectors files (Numberbatch drop-in), phrase vectors, ranking."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from gensim.models import KeyedVectors

from cta import registry
from cta.components import Reranker
from cta.settings import Settings
from retriever.rerank import (
    KeyedVectorsReranker,
    VectorsFormatError,
    VectorsMissingError,
    load_vectors,
)

VectorsName = Literal["glove-retrofit", "glove", "numberbatch", "keyedvectors"]

# A tiny vocabulary in 4 dimensions, keyed as in ConceptNet Numberbatch's multilingual file.
VOCAB: dict[str, list[float]] = {
    "/c/en/first_name": [1.0, 0.2, 0.0, 0.0],
    "/c/en/given_name": [0.9, 0.3, 0.0, 0.0],
    "/c/en/forename": [0.9, 0.3, 0.0, 0.0],  # identical to given_name: a tie
    "/c/en/last_name": [0.3, 1.0, 0.0, 0.0],
    "/c/en/first": [0.0, 0.0, 1.0, 0.0],
    "/c/en/name": [0.2, 0.0, 0.0, 1.0],
    "/c/en/student": [0.0, 0.5, 0.5, 0.0],
    "/c/en/salary": [0.0, 0.0, -1.0, 2.0],
    "/c/en/city": [3.0, 0.0, 0.0, -1.0],
    "/c/en/####": [0.0, 1.0, 1.0, 1.0],
    "/c/fr/nom": [5.0, 5.0, 5.0, 5.0],
    "/c/de/vorname": [1.0, 2.0, 3.0, 4.0],
}
ENGLISH = sorted(k[len("/c/en/") :] for k in VOCAB if k.startswith("/c/en/"))


def unit(values: list[float] | np.ndarray) -> np.ndarray:
    vec = np.asarray(values, dtype=np.float64)
    return vec / np.linalg.norm(vec)


def english(key: str) -> np.ndarray:
    return unit(VOCAB[f"/c/en/{key}"])


def write_text(path: Path, header: bool = True, prefixed: bool = True) -> Path:
    lines = [f"{len(VOCAB)} 4"] if header else []
    for key, values in VOCAB.items():
        if not prefixed and not key.startswith("/c/en/"):
            continue
        name = key if prefixed else key[len("/c/en/") :]
        lines.append(name + " " + " ".join(f"{v:.6f}" for v in values))
    text = "\n".join(lines) + "\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def raw_keyed_vectors(prefixed: bool = True) -> KeyedVectors:
    kv = KeyedVectors(vector_size=4, count=0, dtype=np.float32)
    if prefixed:
        items = list(VOCAB.items())
    else:
        items = [(k[len("/c/en/") :], v) for k, v in VOCAB.items() if k.startswith("/c/en/")]
    kv.add_vectors([k for k, _ in items], np.array([v for _, v in items], dtype=np.float32))
    return kv


def vector(reranker: KeyedVectorsReranker, name: str) -> np.ndarray:
    vec = reranker.vector(name)
    assert vec is not None, name
    return vec


@pytest.fixture
def reranker(tmp_path: Path) -> KeyedVectorsReranker:
    return KeyedVectorsReranker(load_vectors(write_text(tmp_path / "numberbatch.txt.gz")))


def assert_english_unit(kv: KeyedVectors) -> None:
    assert sorted(kv.index_to_key) == ENGLISH
    for key in ENGLISH:
        np.testing.assert_allclose(kv[key], english(key), atol=1e-5)


@pytest.mark.parametrize("name", ["numberbatch.txt", "numberbatch.txt.gz", "vectors.vec"])
def test_text_format_with_header_keeps_english_without_prefix(tmp_path: Path, name: str) -> None:
    assert_english_unit(load_vectors(write_text(tmp_path / name)))


def test_text_format_without_header_and_plain_keys(tmp_path: Path) -> None:
    path = write_text(tmp_path / "plain.txt", header=False, prefixed=False)
    assert_english_unit(load_vectors(path))


@pytest.mark.parametrize("prefixed", [True, False])
def test_word2vec_binary(tmp_path: Path, prefixed: bool) -> None:
    path = tmp_path / "vectors.bin"
    raw_keyed_vectors(prefixed).save_word2vec_format(str(path), binary=True)
    assert_english_unit(load_vectors(path))


def test_gensim_native(tmp_path: Path) -> None:
    path = tmp_path / "vectors.kv"
    raw_keyed_vectors().save(str(path))
    assert_english_unit(load_vectors(path))


def test_unknown_suffix_missing_file_and_malformed_rows(tmp_path: Path) -> None:
    odd = tmp_path / "vectors.csv"
    odd.write_text("a,1,2\n")
    with pytest.raises(VectorsFormatError, match="unknown word-vector format"):
        load_vectors(odd)
    with pytest.raises(VectorsMissingError):
        load_vectors(tmp_path / "absent.txt")
    short = tmp_path / "short.txt"
    short.write_text("2 3\nname 0.1 0.2 0.3\nfirst 0.1 0.2\n")
    with pytest.raises(VectorsFormatError, match=r"short\.txt:3"):
        load_vectors(short)
    words = tmp_path / "words.txt"
    words.write_text("name 0.1 zero 0.3\n")
    with pytest.raises(VectorsFormatError, match=r"words\.txt:1"):
        load_vectors(words)
    foreign = tmp_path / "foreign.kv"
    foreign.write_bytes(b"not a pickle")
    with pytest.raises(VectorsFormatError, match="gensim KeyedVectors"):
        load_vectors(foreign)


def test_reranker_satisfies_protocol(reranker: KeyedVectorsReranker) -> None:
    assert isinstance(reranker, Reranker)


@pytest.mark.parametrize(
    "spelling", ["first name", "first_name", "firstName", "First-Name", "FIRST_NAME"]
)
def test_multi_word_names_use_the_joined_key(reranker: KeyedVectorsReranker, spelling: str) -> None:
    vec = reranker.vector(spelling)
    assert vec is not None
    np.testing.assert_allclose(vec, english("first_name"), atol=1e-6)
    expected = float(english("first_name") @ english("given_name"))
    assert reranker.similarity(spelling, "given name") == pytest.approx(expected, abs=1e-6)


def test_oov_phrase_is_mean_of_known_word_vectors(reranker: KeyedVectorsReranker) -> None:
    mean = unit(english("salary") + english("city"))
    np.testing.assert_allclose(vector(reranker, "salary city"), mean, atol=1e-6)
    # An unknown word is skipped, not zero-filled.
    np.testing.assert_allclose(vector(reranker, "salary xyzzy"), english("salary"), atol=1e-6)
    # Known multi-word pieces are used inside a longer unknown phrase.
    expected = unit(english("student") + english("first_name"))
    np.testing.assert_allclose(vector(reranker, "student first name"), expected, atol=1e-6)


def test_fully_oov_name_has_no_vector_and_zero_similarity(reranker: KeyedVectorsReranker) -> None:
    assert reranker.vector("xyzzy plugh") is None
    assert reranker.vector("") is None
    assert reranker.similarity("xyzzy plugh", "first name") == 0.0
    assert reranker.similarity("first name", "???") == 0.0


def test_non_english_and_numbers(reranker: KeyedVectorsReranker) -> None:
    assert reranker.vector("nom") is None  # /c/fr/nom was dropped
    # Numberbatch spells multi-digit numbers with '#'.
    np.testing.assert_allclose(vector(reranker, "2010"), english("####"), atol=1e-6)


def test_rank_orders_by_cosine_with_name_tie_break(reranker: KeyedVectorsReranker) -> None:
    candidates = ["salary", "last name", "forename", "given name", "xyzzy", "city", "forename"]
    ranked = reranker.rank("first name", candidates, k=10)
    names = [n for n, _ in ranked]
    scores = [s for _, s in ranked]
    assert len(names) == len(set(names)) == 6  # the duplicate counts once
    assert scores == sorted(scores, reverse=True)
    # given name and forename tie: alphabetical order decides, whatever the input order.
    assert names[:2] == ["forename", "given name"]
    assert names[2] == "city"  # cos 0.92: above last name (0.47)
    for name, score in ranked:
        assert score == pytest.approx(reranker.similarity("first name", name), abs=1e-6)
    assert dict(ranked)["xyzzy"] == 0.0
    assert reranker.rank("first name", candidates, k=2) == ranked[:2]
    assert reranker.rank("first name", list(reversed(candidates)), k=10) == ranked
    assert reranker.rank("first name", [], k=5) == []
    assert reranker.rank("first name", candidates, k=0) == []


def test_rank_many_equals_rank(reranker: KeyedVectorsReranker) -> None:
    targets = ["first name", "salary", "city name", "xyzzy"]
    candidates = ["given name", "forename", "last name", "salary", "city", "student", "first"]
    many = reranker.rank_many(targets, candidates, k=4)
    assert many == [reranker.rank(t, candidates, k=4) for t in targets]
    assert [len(r) for r in many] == [4, 4, 4, 4]


def test_unnormalised_vectors_are_normalised_without_mutating_them() -> None:
    kv = raw_keyed_vectors(prefixed=False)
    before = kv.vectors.copy()
    reranker = KeyedVectorsReranker(kv)
    assert reranker.similarity("city", "city") == pytest.approx(1.0, abs=1e-6)
    assert reranker.similarity("salary", "city") == pytest.approx(
        float(english("salary") @ english("city")), abs=1e-6
    )
    np.testing.assert_array_equal(kv.vectors, before)


def test_registry_factories(tmp_path: Path) -> None:
    path = write_text(tmp_path / "numberbatch-en.txt")
    configured: tuple[VectorsName, ...] = ("numberbatch", "keyedvectors")
    built: tuple[VectorsName, ...] = ("glove", "glove-retrofit")
    for name in configured:
        settings = Settings(home=tmp_path, vectors=name, vectors_path=path)
        component = registry.create("vectors", name, settings)
        assert isinstance(component, KeyedVectorsReranker)
        assert component.similarity("firstName", "given_name") > 0.9
        with pytest.raises(VectorsMissingError, match="CTA_VECTORS_PATH"):
            registry.create("vectors", name, Settings(home=tmp_path, vectors=name))
    for name in built:
        with pytest.raises(VectorsMissingError, match="cta setup"):
            registry.create("vectors", name, Settings(home=tmp_path / "empty", vectors=name))
    assert {"glove", "glove-retrofit", "keyedvectors", "numberbatch"} <= set(
        registry.names("vectors")
    )


# -- the gensim-free copy commands read --------------------------------------------------------


def test_unit_vectors_are_the_loaded_vectors_and_are_cached(tmp_path: Path) -> None:
    from retriever.rerank import load_unit_vectors

    path = write_text(tmp_path / "numberbatch.txt.gz")
    loaded = load_vectors(path)
    first = load_unit_vectors(path)  # parsed, and written beside the file
    cached = tmp_path / "numberbatch.txt.gz.unit.npy"
    assert cached.is_file() and (tmp_path / "numberbatch.txt.gz.unit.keys").is_file()
    second = load_unit_vectors(path)  # read back
    for unit in (first, second):
        assert dict(unit.key_to_index) == dict(loaded.key_to_index)
        assert np.array_equal(np.asarray(unit.vectors), loaded.vectors)
    # the same reranker answers from either
    a, b = KeyedVectorsReranker(loaded), KeyedVectorsReranker(second)
    assert a.rank("given name", ENGLISH, 5) == b.rank("given name", ENGLISH, 5)
    assert b.nearest(vector(b, "first name"), 3)[0] == ("first_name", pytest.approx(1.0))
    # a changed file is read again, not answered from the stale copy
    write_text(path, prefixed=False)
    import os

    os.utime(path, ns=(1, 1))
    assert sorted(load_unit_vectors(path).key_to_index) == ENGLISH


def test_unit_vectors_load_without_gensim(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from retriever.rerank import load_unit_vectors

    path = write_text(tmp_path / "numberbatch.txt")
    load_unit_vectors(path)
    code = (
        "import json, sys\nfrom retriever.rerank import load_unit_vectors\n"
        f"u = load_unit_vectors({str(path)!r})\n"
        "print(json.dumps([len(u.key_to_index), 'gensim' in sys.modules]))"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [len(ENGLISH), False]
