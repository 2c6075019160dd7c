"""``cta eval`` on a folder written by ``cta dataset perturb --format bird``: the layout read,
BIRD's prediction format, EX as BIRD computes it, per difficulty, and the report's files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cta.datasets import perturb_dataset
from cta.evaluation import FilePredictions, evaluate, load_directory, markdown, write_report
from cta.evaluation.execution import ExecutionScorer, bird_result_eq
from cta.evaluation.scoring import build_report
from cta.evaluation.sets import BIRD, EvalDirectory, QuestionSet
from cta.reports import ItemResult
from cta.sql.database import SqlColumn, SqlSchema, SqlTable, create_database

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bird import names_proposer  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "bird"
SEPARATOR = "\t----- bird -----\t"


@pytest.fixture(scope="module")
def bird_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bird") / "out"
    perturb_dataset(
        "bird",
        FIXTURE / "dev_tables.json",
        FIXTURE / "dev.json",
        out,
        names_proposer,
        ["rpl", "add"],
        [0],
        statistics=FIXTURE / "dev_tables_cleaned.json",
    )
    return out


def _records(out: Path, stem: str) -> list[dict[str, object]]:
    data = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def _bird_predictions(folder: Path, out: Path, stems: list[str], key: str = "position") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        records = _records(out, stem)
        predictions = {
            str(i if key == "position" else r["question_id"]): f"{r['SQL']}{SEPARATOR}{r['db_id']}"
            for i, r in enumerate(records)
        }
        (folder / f"{stem}.json").write_text(json.dumps(predictions), encoding="utf-8")


def test_the_bird_layout_is_read(bird_out: Path) -> None:
    directory = load_directory(bird_out)
    assert directory.layout == BIRD
    stems = [s.stem for s in directory.sets]
    assert stems == ["dev_original", "dev_add_s0", "dev_rpl_s0"]
    original = directory.sets[0].questions
    assert len(original) == 30
    first = original[0]
    assert (first.question_id, first.difficulty, first.db_id) == (
        1471,
        "simple",
        "debit_card_specializing",
    )
    assert first.gold.startswith("SELECT CAST(SUM(IIF(Currency = 'EUR'")
    assert directory.database(first.db_id) == (
        bird_out / "dev_databases" / first.db_id / f"{first.db_id}.sqlite"
    )
    assert directory.database_folders() == [bird_out / "dev_databases"]


def test_gold_as_predictions_scores_one_on_every_set(bird_out: Path, tmp_path: Path) -> None:
    directory = load_directory(bird_out)
    _bird_predictions(tmp_path / "pred", bird_out, [s.stem for s in directory.sets])
    report, items = evaluate(directory, FilePredictions(tmp_path / "pred"), model_name="gold")
    assert report.convention == "bird"
    assert report.original["dev"].ex == 1.0
    assert report.original["dev"].em is None  # BIRD reports no EM
    assert {r.set: (r.pre.ex, r.post.ex) for r in report.sets} == {
        "dev_add_s0": (1.0, 1.0),
        "dev_rpl_s0": (1.0, 1.0),
    }
    by = report.original_by_difficulty["dev"]
    assert list(by) == ["simple", "moderate", "challenging"]
    assert sum(s.n for s in by.values()) == 30
    assert all(s.ex == 1.0 for s in by.values())
    assert all(r.post_by_difficulty for r in report.sets)
    assert {it.status for it in items} == {"correct"}
    assert report.database_folders == [str(bird_out / "dev_databases")]
    text = markdown(report)
    assert "## Per difficulty" in text
    assert "compared as sets" in text
    assert str(bird_out / "dev_databases") in text


def test_a_single_bird_file_scores_the_set_whose_databases_it_names(
    bird_out: Path, tmp_path: Path
) -> None:
    records = _records(bird_out, "dev_original")
    wrong = {3, 7}
    predictions = {
        str(i): ("SELECT 1" if i in wrong else str(r["SQL"])) + f"{SEPARATOR}{r['db_id']}"
        for i, r in enumerate(records)
    }
    predictions["11"] = f"SELECT nope FROM nowhere{SEPARATOR}{records[11]['db_id']}"
    path = tmp_path / "predict_dev.json"
    path.write_text(json.dumps(predictions), encoding="utf-8")
    directory = load_directory(bird_out)
    problems = FilePredictions(path).check(directory.sets)
    assert set(problems) == {"dev_add_s0", "dev_rpl_s0"}  # other databases: not this file's
    report, items = evaluate(load_directory(bird_out, only=[]), FilePredictions(path))
    assert report.original["dev"].ex == round(27 / 30, 4)
    statuses = [it.status for it in items]
    assert statuses.count("pred_error") == 1
    assert statuses.count("wrong") == 2


def test_predictions_keyed_by_question_id_and_plain_lines(bird_out: Path, tmp_path: Path) -> None:
    directory = load_directory(bird_out, only=[])
    _bird_predictions(tmp_path / "ids", bird_out, ["dev_original"], key="question_id")
    report, _ = evaluate(directory, FilePredictions(tmp_path / "ids"))
    assert report.original["dev"].ex == 1.0
    lines = tmp_path / "lines"
    lines.mkdir()
    gold = (bird_out / "dev_original_gold.sql").read_text(encoding="utf-8").splitlines()
    text = "".join(f"{line.split(chr(9))[0]}{SEPARATOR}{line.split(chr(9))[1]}\n" for line in gold)
    (lines / "dev_original.sql").write_text(text, encoding="utf-8")
    report, _ = evaluate(directory, FilePredictions(lines))
    assert report.original["dev"].ex == 1.0


def test_a_prediction_for_another_database_is_refused(bird_out: Path, tmp_path: Path) -> None:
    records = _records(bird_out, "dev_original")
    predictions = {str(i): f"{r['SQL']}{SEPARATOR}{r['db_id']}" for i, r in enumerate(records)}
    predictions["0"] = f"SELECT 1{SEPARATOR}superhero"
    (tmp_path / "dev_original.json").write_text(json.dumps(predictions), encoding="utf-8")
    directory = load_directory(bird_out, only=[])
    problems = FilePredictions(tmp_path).check(directory.sets)
    assert "is for database 'superhero'" in problems["dev_original"]


def test_bird_compares_result_sets(tmp_path: Path) -> None:
    schema = SqlSchema((SqlTable("t", (SqlColumn("a"), SqlColumn("b"))),))
    create_database(tmp_path / "t" / "t.sqlite", schema, {"t": [(1, "x"), (1, "x"), (2, "y")]})
    db = tmp_path / "t" / "t.sqlite"
    bird = ExecutionScorer(convention="bird")
    suite = ExecutionScorer()
    gold = "SELECT a, b FROM t ORDER BY a"
    # duplicates and order do not count for BIRD; the columns' order does
    assert bird.score(db, gold, "SELECT DISTINCT a, b FROM t ORDER BY a DESC").correct
    assert not suite.score(db, gold, "SELECT a, b FROM t ORDER BY a DESC").correct
    assert not bird.score(db, gold, "SELECT b, a FROM t").correct
    assert suite.score(db, gold, "SELECT b, a FROM t ORDER BY a").correct
    assert bird_result_eq([(1,), (2,)], [(2,), (1,), (1,)])


def test_the_report_writes_birds_files(bird_out: Path, tmp_path: Path) -> None:
    directory: EvalDirectory = load_directory(bird_out)
    _bird_predictions(tmp_path / "pred", bird_out, [s.stem for s in directory.sets])
    report, items = evaluate(directory, FilePredictions(tmp_path / "pred"))
    files = write_report(tmp_path / "report", report, items, directory)
    root = tmp_path / "report" / "bird"
    assert "bird/run.sh" in files and "test-suite/run.sh" not in files
    gold = (root / "dev_original_gold.sql").read_text(encoding="utf-8").splitlines()
    assert len(gold) == 30 and gold[0].endswith("\tdebit_card_specializing")
    predicted = json.loads((root / "predict_dev_rpl_s0.json").read_text(encoding="utf-8"))
    assert predicted["0"].endswith(f"{SEPARATOR}debit_card_specializing_rpl_s0_v0")
    levels = (root / "dev_original.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(levels[0]) == {"difficulty": "simple"}
    assert (root / "dev_databases").resolve() == (bird_out / "dev_databases").resolve()
    assert "evaluation_ex.py" in (root / "run.sh").read_text(encoding="utf-8")


def test_per_kind_by_difficulty_over_seeds() -> None:
    sets = [
        QuestionSet("dev", "dev_original", "original", None),
        QuestionSet("dev", "dev_rpl_s0", "rpl", 0),
        QuestionSet("dev", "dev_rpl_s1", "rpl", 1),
    ]

    def item(stem: str, kind: str, seed: int | None, i: int, level: str, ex: bool) -> ItemResult:
        return ItemResult(
            set=stem, position=i, source_index=i, kind=kind, seed=seed, db_id="d",
            question="q", gold="SELECT 1", ex=ex, status="correct" if ex else "wrong",
            difficulty=level,
        )  # fmt: skip

    levels = ["simple", "challenging"]
    items = [item("dev_original", "original", None, i, levels[i], True) for i in range(2)]
    items += [item("dev_rpl_s0", "rpl", 0, i, levels[i], i == 0) for i in range(2)]
    items += [item("dev_rpl_s1", "rpl", 1, i, levels[i], True) for i in range(2)]
    report = build_report(sets, items, "m", linking=False)
    assert report.original_by_difficulty["dev"]["challenging"].ex == 1.0
    [kind] = report.kinds
    assert kind.post_by_difficulty["simple"]["ex"].mean == 1.0
    assert kind.post_by_difficulty["challenging"]["ex"].mean == 0.5
    assert kind.pre_by_difficulty["challenging"]["ex"].mean == 1.0
    assert "| dev rpl post | 100.0 ± 0.0 | 50.0 ± 70.7 |" in markdown(report, plot_file=None)
