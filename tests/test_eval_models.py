"""``cta eval`` prediction sources and reference models: files, endpoint, entry point, the
lexical probe and nearest-train, on a tiny perturbed Spider set built here."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from dataset_fixtures import spider_entry
from test_eval import TABLES, build_perturbed

from cta.evaluation import (
    EndpointPredictions,
    EntryPointPredictions,
    FilePredictions,
    SpiderSchema,
    evaluate,
    link_schema,
    load_directory,
)
from cta.evaluation.nearest import NearestTrain
from cta.table import InvalidTableError


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_perturbed(tmp_path_factory.mktemp("models"), seeds=(0,))


# -- the lexical probe -----------------------------------------------------------------------------
def test_linking_exact_fuzzy_partial() -> None:
    schema = SpiderSchema.from_entry(TABLES[0])
    links = link_schema("List the concert names and the singers' ages, by contry.", schema)
    keys = {schema.column_key(c): s for c, s in links.columns.items()}
    assert keys["__concert.concert_name__"] == "exact"  # "concert names" → concert name
    assert keys["__singer.age__"] == "exact"  # "ages" lemmatised
    assert keys["__singer.country__"] == "fuzzy"  # a typo
    assert keys["__concert.singer_id__"] == "partial"  # "singer" is one word of it
    assert keys["__singer.name__"] == "exact"  # "names" names it too: linking is ambiguous
    assert "__concert.year__" not in keys and "__concert.concert_id__" in keys
    assert links.tables == {0: "exact", 1: "exact"}


def test_probe_sees_rpl_break_links(perturbed: Path) -> None:
    report, items = evaluate(load_directory(perturbed), None, linking=True)
    assert report.model == "lexical-probe"
    rpl = next(r for r in report.sets if r.kind == "rpl")
    assert rpl.pre.ex is None and rpl.pre.linking_recall is not None
    assert rpl.post.linking_recall is not None
    assert rpl.post.linking_recall < rpl.pre.linking_recall
    assert rpl.absolute_drop["linking_recall"] == round(
        rpl.pre.linking_recall - rpl.post.linking_recall, 4
    )
    first = next(it for it in items if it.set == "dev_original" and it.source_index == 0)
    assert first.gold_columns == ["__singer.name__", "__singer.age__"]  # schema order
    assert first.linked_columns is not None and first.linked_columns["__singer.name__"] == "exact"
    renamed = next(it for it in items if it.set == "dev_rpl_s0" and it.source_index == 0)
    assert renamed.gold_columns is not None and "__singer.designation__" in renamed.gold_columns
    assert renamed.linked_columns is not None
    assert "__singer.designation__" not in renamed.linked_columns


# -- nearest-train -----------------------------------------------------------------------------------
TRAIN_TABLES = [
    spider_entry(
        "company",
        [
            "head: head_ID number, name text, age number",
            "department: Department_ID number, Budget number",
        ],
        primary=[("head", "head_ID"), ("department", "Department_ID")],
    )
]
TRAIN = [
    {
        "db_id": "company",
        "question": "How many heads are there?",
        "query": "SELECT count(*) FROM head",
    },
    {
        "db_id": "company",
        "question": "What is the name of every head older than 56?",
        "query": "SELECT name FROM head WHERE age > 56",
    },
    {
        "db_id": "company",
        "question": "What is the maximum budget of the departments?",
        "query": "SELECT max(budget) FROM department",
    },
]


def test_nearest_train_retrieves_and_adapts_by_linking(perturbed: Path) -> None:
    parser = NearestTrain(TRAIN, TRAIN_TABLES, top_k=3)
    directory = load_directory(perturbed)
    schema, db = directory.schema("music"), directory.database("music")
    assert parser.parse("What is the name of every singer older than 30?", schema, db) == (
        "SELECT Name FROM singer WHERE Age > 30"
    )
    assert parser.parse("How many singers are there?", schema, db) == (
        "SELECT COUNT(*) FROM singer"
    )
    report, items = evaluate(directory, parser)
    first = [it for it in items if it.source_index == 0]
    by_set = {it.set: it for it in first}
    assert by_set["dev_original"].ex is True and by_set["dev_original"].em is True
    # RPL renamed "name"/"age": the question no longer links them, the adaptation misses.
    assert by_set["dev_rpl_s0"].ex is False
    assert by_set["dev_rpl_s0"].pred is not None and "Name" not in by_set["dev_rpl_s0"].pred
    rpl = next(r for r in report.sets if r.kind == "rpl")
    assert rpl.pre.ex is not None and rpl.post.ex is not None and rpl.post.ex < rpl.pre.ex


# -- prediction files ---------------------------------------------------------------------------------
def test_file_predictions_lines_jsonl_and_missing(perturbed: Path, tmp_path: Path) -> None:
    directory = load_directory(perturbed)
    original = directory.sets[0]
    rpl = next(s for s in directory.sets if s.stem == "dev_rpl_s0")
    folder = tmp_path / "preds"
    folder.mkdir()
    (folder / "dev_original.sql").write_text("\n".join(q.gold for q in original.questions) + "\n")
    (folder / "dev_rpl_s0.jsonl").write_text(
        "\n".join(
            json.dumps({"question_index": q.position, "sql": q.gold}) for q in rpl.questions[:3]
        )
    )
    questions = [q for s in directory.sets for q in s.questions]
    predictions = FilePredictions(folder).predict(questions, directory)
    got = {(q.set, q.position): p for q, p in zip(questions, predictions, strict=True)}
    assert all(got[("dev_original", q.position)].sql == q.gold for q in original.questions)
    # A set with predictions for some questions only is not scored at all (none of its SQL is
    # used): every question carries why, naming the file and the count.
    partial = [got[("dev_rpl_s0", q.position)] for q in rpl.questions]
    assert len(rpl.questions) > 3 and all(p.sql is None for p in partial)
    assert all(
        f"predictions for 3 of the {len(rpl.questions)} questions" in str(p.error)
        and "dev_rpl_s0.jsonl" in str(p.error)
        for p in partial
    )
    assert str(got[("dev_add_s0", 0)].error).startswith("no predictions: expected ")
    assert "dev_add_s0.sql" in str(got[("dev_add_s0", 0)].error)
    assert FilePredictions(folder).check(directory.sets) == {
        "dev_rpl_s0": partial[0].error,
        **{
            s.stem: got[(s.stem, 0)].error
            for s in directory.sets
            if s.stem not in ("dev_original", "dev_rpl_s0")
        },
    }

    single = tmp_path / "all.jsonl"
    add = next(s for s in directory.sets if s.stem == "dev_add_s0")
    single.write_text(
        "".join(
            json.dumps({"id": f"dev_add_s0:{q.position}", "sql": "SELECT 1"}) + "\n"
            for q in add.questions
        )
    )
    one = FilePredictions(single).predict(questions, directory)
    assert [p.sql for q, p in zip(questions, one, strict=True) if p.sql] == ["SELECT 1"] * len(
        add.questions
    )

    # A line file with another number of lines than questions: the set is not scored either.
    (folder / "dev_original.sql").write_text("SELECT 1\n")
    misaligned = FilePredictions(folder).check(directory.sets)["dev_original"]
    assert f"1 lines for {len(original.questions)} questions" in misaligned
    redone = FilePredictions(folder).predict(questions, directory)
    assert all(
        p.sql is None and p.error == misaligned
        for q, p in zip(questions, redone, strict=True)
        if q.set == "dev_original"
    )


# -- an entry point ---------------------------------------------------------------------------------
def test_entry_point_is_called_with_question_db_and_schema(
    perturbed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tiny_parser.py").write_text(
        "SEEN = []\n"
        "def parse(question, db_id, schema):\n"
        "    SEEN.append((question, db_id, schema['db_id']))\n"
        "    if 'France' in question:\n"
        "        raise RuntimeError('no idea')\n"
        "    return 'SELECT count(*) FROM singer'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    directory = load_directory(perturbed, only=[])
    predictor = EntryPointPredictions("tiny_parser:parse")
    questions = directory.sets[0].questions
    predictions = predictor.predict(questions, directory)
    import tiny_parser  # type: ignore[import-not-found]

    assert [s[0] for s in tiny_parser.SEEN] == [q.question for q in questions]
    assert all(db == schema_db == "music" for _, db, schema_db in tiny_parser.SEEN)
    assert predictions[1].sql == "SELECT count(*) FROM singer"
    assert predictions[3].sql is None and predictions[3].error == "RuntimeError: no idea"
    with pytest.raises(InvalidTableError):
        EntryPointPredictions("tiny_parser:absent")


# -- an endpoint ----------------------------------------------------------------------------------------
def test_endpoint_posts_question_db_schema_and_retries(perturbed: Path) -> None:
    directory = load_directory(perturbed, only=["dev_rpl_s0"])
    gold = {(q.question, q.db_id): q.gold for s in directory.sets for q in s.questions}
    calls: list[dict[str, object]] = []
    refused: set[str] = set()
    unique = {(q.question, q.db_id) for s in directory.sets for q in s.questions}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append(body)
        key = f"{body['question']}|{body['db_id']}"
        assert body["schema"]["db_id"] == body["db_id"]
        if key not in refused:  # every question is refused once, then answered
            refused.add(key)
            return httpx.Response(503, headers={"Retry-After": "0"})
        if "France" in str(body["question"]):
            return httpx.Response(500, json={"detail": "boom"})
        return httpx.Response(200, json={"sql": gold[(body["question"], body["db_id"])]})

    predictor = EndpointPredictions(
        "http://parser.test/predict",
        concurrency=3,
        retries=2,
        backoff=0.0,
        transport=httpx.MockTransport(handler),
    )
    report, items = evaluate(directory, predictor)
    france = [it for it in items if "France" in it.question]
    # Identical requests are sent once: one 503 each, then an answer — or two more 500s.
    france_requests = {(it.question, it.db_id) for it in france}
    assert len(calls) == 2 * len(unique) + len(france_requests)
    assert all(it.pred is None and "gave up after 3 attempts" in it.message for it in france)
    assert all(it.ex is True for it in items if it not in france)
    size = len(directory.sets[1].questions)
    assert len(france) == 2 and report.sets[0].post.ex == round((size - 1) / size, 4)
