"""The field's file formats: the official evaluator's grammar, gold files, test suites,
Dr.Spider's layout, the Hugging Face export and the provenance manifest."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from conftest import SHARED
from dataset_fixtures import music_entry, write_spider
from test_dataset import QUESTIONS, TABLES, propose

from cta.cli.main import main
from cta.datasets import perturb_dataset
from cta.evaluation.execution import ExecutionScorer
from cta.formats.spider_grammar import (
    evaluator_form,
    evaluator_problem,
    spider_sql,
    spider_tables_of,
)
from cta.provenance import disagreements, read_manifest

SPIDER = SHARED / "data" / "spider"
CONCERT = {
    "singer": {"singer_id", "name", "country", "age", "song_name"},
    "concert": {"concert_id", "concert_name", "year", "stadium_id"},
}


# -- the official evaluator's grammar -------------------------------------------------------------
def test_every_spider_dev_gold_query_reads() -> None:
    """The rules restated here accept every gold query of Spider dev (the evaluator's own)."""
    if not (SPIDER / "dev.json").is_file():
        pytest.skip("../shared/data/spider is not here")
    tables = {
        e["db_id"]: spider_tables_of(e) for e in json.loads((SPIDER / "tables.json").read_text())
    }
    records = json.loads((SPIDER / "dev.json").read_text())
    problems = [(r["query"], evaluator_problem(r["query"], tables[r["db_id"]])) for r in records]
    assert len(records) == 1034
    assert [p for p in problems if p[1] is not None] == []


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ('SELECT "age in years" FROM singer', "column"),  # a quoted identifier is a value
        ("SELECT name FROM singer ORDER BY Avg", "ends too early"),  # Avg is the aggregate
        ("SELECT name FROM singer WHERE age <> 30", "'<>'"),
        ("SELECT CAST(age AS INTEGER) FROM singer", "column 'cast'"),
        ("SELECT name FROM singer WHERE age IS NULL", "column 'null'"),
        ("SELECT name FROM singer WHERE NOT age IN (SELECT age FROM singer)", "column 'not'"),
        ("SELECT count(*) AS n FROM singer", "column 'as'"),
        (
            "SELECT T1.name FROM singer AS T1 LEFT JOIN concert AS T2 ON T1.singer_id = T2.year",
            "table 'left'",
        ),
        ('SELECT name FROM singer WHERE name = "O\'Brien"', "odd number of quotes"),
        ("SELECT name FROM singer LIMIT x", "not an integer"),
        ("SELECT substr(name, 1, 2) FROM singer", "column 'substr'"),
    ],
)
def test_what_stops_the_evaluator_is_named(sql: str, why: str) -> None:
    problem = evaluator_problem(sql, CONCERT)
    assert problem is not None and why in problem, problem


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM singer WHERE age != 30 AND name NOT LIKE '%a%'",
        "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.stadium_id",
        "SELECT name FROM singer WHERE age NOT IN (SELECT year FROM concert) ORDER BY age DESC LIMIT 3",
        "SELECT count(DISTINCT country), avg(age) FROM singer GROUP BY country HAVING count(*) > 1",
        "SELECT name FROM singer WHERE age BETWEEN -5 AND 30 INTERSECT SELECT name FROM singer",
        "SELECT age_in_years FROM singer".replace("age_in_years", "age"),
    ],
)
def test_the_grammar_reads_spider_sql(sql: str) -> None:
    assert evaluator_problem(sql, CONCERT) is None


def test_generated_sql_uses_the_evaluators_spellings() -> None:
    tree = sqlglot.parse_one(
        "SELECT name FROM singer WHERE age <> 3 AND NOT age IN (SELECT year FROM concert)"
        " AND NOT country IS NULL",
        read="sqlite",
    )
    assert tree.sql(dialect="sqlite").count("<>") == 1  # sqlglot's own spelling
    text = spider_sql(tree)
    assert "age != 3" in text and "age NOT IN (SELECT" in text and "country IS NOT NULL" in text
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE singer (name TEXT, age INT, country TEXT); CREATE TABLE concert (year INT);"
        "INSERT INTO singer VALUES ('a', 3, 'x'), ('b', 4, 'y'), ('c', 5, NULL);"
        "INSERT INTO concert VALUES (5);"
    )
    original = tree.sql(dialect="sqlite")
    assert conn.execute(text).fetchall() == conn.execute(original).fetchall() == [("b",)]


def test_a_reused_alias_gets_a_spelling_the_evaluator_reads() -> None:
    """The evaluator's alias table is global: T1 naming Friend in one branch and Likes in the
    other resolves to Likes everywhere. Aliases of their own per branch fix it, and the
    query returns the same rows."""
    schema = {
        "highschooler": {"id", "name"},
        "friend": {"member_id", "friend_id"},
        "likes": {"student_id", "liked_id"},
    }
    sql = (
        "SELECT T2.name FROM Friend AS T1 JOIN Highschooler AS T2 ON T1.member_id = T2.id "
        "INTERSECT SELECT T2.name FROM Likes AS T1 JOIN Highschooler AS T2 ON T1.liked_id = T2.id"
    )
    assert evaluator_problem(sql, schema) == "column 't1.member_id'"
    respelled = evaluator_form(sql, schema)
    assert respelled is not None and evaluator_problem(respelled, schema) is None
    assert "FROM Likes AS T3 JOIN Highschooler AS T4 ON T3.liked_id = T4.id" in respelled
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE Highschooler (id INT, name TEXT); CREATE TABLE Friend (member_id INT,"
        " friend_id INT); CREATE TABLE Likes (student_id INT, liked_id INT);"
        "INSERT INTO Highschooler VALUES (1, 'a'), (2, 'b'), (3, 'c');"
        "INSERT INTO Friend VALUES (1, 2), (2, 3); INSERT INTO Likes VALUES (3, 2), (1, 3);"
    )
    assert sorted(conn.execute(respelled).fetchall()) == sorted(conn.execute(sql).fetchall())
    assert conn.execute(sql).fetchall()  # not a vacuous comparison


# -- the Spider driver's files --------------------------------------------------------------------
def _perturb(tmp_path: Path, kinds: tuple[str, ...] = ("rpl", "add"), **options: Any) -> Path:
    tables, questions = write_spider(tmp_path, TABLES, QUESTIONS)
    out = tmp_path / "out"
    perturb_dataset("spider", tables, questions, out, propose, kinds, (0, 1), **options)
    return out


def test_gold_files_beside_every_set_and_marks_agree_with_the_grammar(tmp_path: Path) -> None:
    out = _perturb(tmp_path, ("rpl", "add", "shuffle", "content-equivalence"))
    entries = {e["db_id"]: e for e in json.loads((out / "tables.json").read_text())}
    sets = sorted(out.glob("dev_*_s*.json")) + [out / "dev_original.json"]
    assert len(sets) == 9
    originals = json.loads((out / "dev_original.json").read_text())
    readable = {r["source_index"] for r in originals if r["evaluator_reads"]}
    assert len(readable) == len(originals) - 1  # the fixture's broken query ('nope')
    for path in sets:
        records = json.loads(path.read_text())
        gold = (out / f"{path.stem}_gold.sql").read_text().splitlines()
        assert gold == [f"{r['query']}\t{r['db_id']}" for r in records]
        for r in records:
            problem = evaluator_problem(r["query"], spider_tables_of(entries[r["db_id"]]))
            assert (r["evaluator_reads"], r["evaluator_problem"]) == (problem is None, problem)
        if "content-equivalence" not in path.stem:  # a readable original stays readable
            kept = [r for r in records if r["source_index"] in readable]
            assert kept and all(r["evaluator_reads"] for r in kept), path.name


def test_a_test_suite_is_migrated_whole_and_scored_on_every_database(tmp_path: Path) -> None:
    """Two databases per db_id (test-suite-sql-eval's layout): both are migrated, and a
    prediction right on one and wrong on the other is wrong."""
    db_dir = tmp_path / "database"
    (db_dir / "music").mkdir(parents=True)
    schema = (
        "CREATE TABLE singer (Singer_ID INT PRIMARY KEY, Name TEXT, Country TEXT, Age INT);"
        "CREATE TABLE concert (concert_ID INT PRIMARY KEY, Name TEXT, Singer_ID INT, Year INT);"
    )
    for file, rows in (
        ("music.sqlite", "(1,'a','x',30),(2,'b','y',10)"),
        ("music_2.sqlite", "(1,'a','x',30),(2,'b','x',40)"),
    ):
        conn = sqlite3.connect(db_dir / "music" / file)
        conn.executescript(schema + f"INSERT INTO singer VALUES {rows};")
        conn.commit()
        conn.close()
    out = _perturb(tmp_path, ("rpl",), db_dir=db_dir)
    rpl = json.loads((out / "dev_rpl_s0.json").read_text())
    perturbed = rpl[0]["db_id"]
    files = sorted(p.name for p in (out / "database" / perturbed).glob("*.sqlite"))
    assert files == [f"{perturbed}.sqlite", f"{perturbed}_2.sqlite"]
    assert sorted(p.name for p in (out / "database" / "music").glob("*.sqlite")) == [
        "music.sqlite",
        "music_2.sqlite",
    ]
    # the second database's rows were migrated too
    conn = sqlite3.connect(out / "database" / perturbed / f"{perturbed}_2.sqlite")
    assert conn.execute(rpl[0]["query"].replace("> 20", "> 35")).fetchall() == [("b",)]

    scorer = ExecutionScorer()
    main_db = out / "database" / "music" / "music.sqlite"
    gold = "SELECT name FROM singer WHERE age > 20"
    # right on music.sqlite (only 'a'), wrong on music_2.sqlite (a and b)
    outcome = scorer.score(
        main_db, gold, "SELECT name FROM singer WHERE country = 'x' AND age > 20 AND singer_id = 1"
    )
    assert outcome.status == "wrong" and "music_2.sqlite" in outcome.message
    assert scorer.score(main_db, gold, gold).correct


def _cli(*args: str) -> int:
    return main(list(args))


def _perturb_args(tmp_path: Path, kind: str, seeds: int, *extra: str) -> list[str]:
    """``cta dataset perturb`` over the fixture's Spider files (written under ``tmp_path``):
    its arguments before ``--out``."""
    tables, questions = write_spider(tmp_path, TABLES, QUESTIONS)
    spider = ["--format", "spider", "--tables", str(tables), "--questions", str(questions)]
    return ["dataset", "perturb", *spider, "--seeds", str(seeds), "--kind", kind, *extra]


def test_drspider_layout_round_trip(tmp_path: Path) -> None:
    # two structural families: no model needed
    common = _perturb_args(tmp_path, "shuffle,opaque-keys", 2)
    assert _cli(*common, "--out", str(tmp_path / "cta")) == 0
    assert _cli(*common, "--out", str(tmp_path / "dr"), "--layout", "drspider") == 0
    dr = tmp_path / "dr"
    assert not (tmp_path / ".dr.cta-staging").exists()
    assert sorted(p.name for p in dr.iterdir()) == [
        "DB_opaque-keys_s0", "DB_opaque-keys_s1", "DB_shuffle_s0", "DB_shuffle_s1",
        "Spider-dev", "manifest.json", "mappings.jsonl",
    ]  # fmt: skip
    folder = dr / "DB_shuffle_s0"
    post = json.loads((folder / "questions_post_perturbation.json").read_text())
    pre = json.loads((folder / "questions_pre_perturbation.json").read_text())
    assert len(post) == len(pre) > 0
    assert [r["q_id_spider_dev"] for r in post] == [r["q_id_spider_dev"] for r in pre]
    assert all(p["question"] == q["question"] for p, q in zip(post, pre, strict=True))
    entries = json.loads((folder / "tables_post_perturbation.json").read_text())
    for e in entries:
        assert (
            folder / "database_post_perturbation" / e["db_id"] / f"{e['db_id']}.sqlite"
        ).is_file()
    assert (
        (folder / "gold_post_perturbation.sql")
        .read_text()
        .splitlines()[0]
        .endswith(f"\t{post[0]['db_id']}")
    )
    assert (dr / "Spider-dev" / "databases" / "music" / "music.sqlite").is_file()
    # cta eval reads both layouts to the same numbers
    reports = []
    for name in ("cta", "dr"):
        assert (
            _cli(
                "eval",
                str(tmp_path / name),
                "--model",
                "oracle",
                "--out",
                str(tmp_path / f"{name}-eval"),
            )
            == 0
        )
        reports.append(json.loads((tmp_path / f"{name}-eval" / "eval.json").read_text()))
    by_kind = [{k["kind"]: (k["seeds"], k["pre"], k["post"]) for k in r["kinds"]} for r in reports]
    assert by_kind[0] == by_kind[1] and set(by_kind[0]) == {"shuffle", "opaque-keys"}
    manifest = read_manifest(tmp_path / "dr-eval")
    assert manifest is not None and manifest["command"] == "cta eval"


def test_manifest_says_what_made_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = _perturb_args(tmp_path, "shuffle", 1)
    tables = tmp_path / "tables.json"
    assert _cli(*args, "--out", str(out)) == 0
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest["tool"]["name"] == "cta-perturb" and manifest["tool"]["version"]
    assert manifest["seeds"] == [0] and manifest["options"]["kinds"] == ["shuffle"]
    assert manifest["inputs"]["tables"]["sha256"] == hashlib.sha256(tables.read_bytes()).hexdigest()
    assert (
        manifest["outputs"]["dev_shuffle_s0.json"]
        == hashlib.sha256((out / "dev_shuffle_s0.json").read_bytes()).hexdigest()
    )
    assert manifest["judge"]["sha256"] is None  # shuffle uses no model
    assert "api_keys" not in manifest["settings"] and "rpl_threshold" in manifest["settings"]
    # the same run again: the same manifest, byte for byte
    again = tmp_path / "again"
    assert _cli(*args, "--out", str(again)) == 0
    assert (again / "manifest.json").read_bytes() == (out / "manifest.json").read_bytes()


def test_eval_refuses_sets_made_with_different_judges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dr = tmp_path / "dr"
    args = _perturb_args(tmp_path, "shuffle,opaque-keys", 1, "--layout", "drspider")
    assert _cli(*args, "--out", str(dr)) == 0
    # a set folder made with another judge (its manifest says so)
    folder = dr / "DB_shuffle_s0"
    own = json.loads((folder / "manifest.json").read_text())
    own["judge"] = {"location": "elsewhere", "sha256": "0" * 64}
    (folder / "manifest.json").write_text(json.dumps(own))
    other = json.loads((dr / "DB_opaque-keys_s0" / "manifest.json").read_text())
    other["judge"] = {"location": "here", "sha256": "1" * 64}
    (dr / "DB_opaque-keys_s0" / "manifest.json").write_text(json.dumps(other))
    assert disagreements({"a": own, "b": other})
    assert _cli("eval", str(dr), "--model", "oracle") == 2
    err = capsys.readouterr().err
    assert "different judge" in err and "--allow-mixed-provenance" in err
    assert _cli("eval", str(dr), "--model", "oracle", "--allow-mixed-provenance") == 0
    # a set file changed after the run is not what the manifest lists
    cta = tmp_path / "cta"
    assert _cli(*args[:-2], "--out", str(cta)) == 0
    path = cta / "dev_shuffle_s0.json"
    path.write_text(path.read_text().replace("Names of", "Names for"))
    assert _cli("eval", str(cta), "--model", "oracle") == 2
    assert "dev_shuffle_s0.json: not what the folder's manifest lists" in capsys.readouterr().err


def test_hf_export_has_parquet_card_and_databases(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "hf"
    args = _perturb_args(tmp_path, "shuffle", 2, "--layout", "hf")
    assert _cli(*args, "--out", str(out)) == 0
    card = (out / "README.md").read_text()
    header = card.split("---")[1]
    import yaml

    meta = yaml.safe_load(header)
    assert meta["license"] == "cc-by-sa-4.0"
    configs = {c["config_name"]: c["data_files"] for c in meta["configs"]}
    assert set(configs) == {"original", "shuffle"}
    for files in configs.values():
        for f in files:
            assert (out / f["path"]).is_file()
    table = pq.read_table(out / "data" / "dev_shuffle_s1.parquet")
    rows = table.to_pylist()
    assert rows and {r["kind"] for r in rows} == {"shuffle"}
    # the marks travel: the fixture's broken query ('nope') is marked unreadable, the rest read
    assert [r["evaluator_reads"] for r in rows] == ["nope" not in r["query"] for r in rows]
    assert json.loads(rows[0]["record"])["query"] == rows[0]["query"]
    with zipfile.ZipFile(out / "databases.zip") as zf:
        names = zf.namelist()
    assert "database/music/music.sqlite" in names
    assert read_manifest(out) is not None and "manifest.json" in card
    # reproducible: the same export again gives the same bytes
    again = tmp_path / "hf2"
    assert _cli(*args, "--out", str(again)) == 0
    for f in ("README.md", "databases.zip", "data/dev_shuffle_s1.parquet", "manifest.json"):
        assert (again / f).read_bytes() == (out / f).read_bytes(), f


def _preds_for(folder: Path, out: Path, stems: dict[str, str]) -> Path:
    """The same predictions for a layout's sets: every gold query of the default-layout
    ``folder`` but the first of each set (wrong on purpose), written under the set names of
    the layout (``stems``: default-layout stem → that layout's stem)."""
    out.mkdir()
    for stem, renamed in stems.items():
        lines = [r["query"] for r in json.loads((folder / f"{stem}.json").read_text())]
        lines[0] = "SELECT count(*) FROM singer"
        (out / f"{renamed}.sql").write_text("\n".join(lines) + "\n")
    return out


def test_eval_reads_every_layout_to_the_same_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One small Spider set perturbed in each layout; the same predictions evaluated in each
    give the same figures, and they are not trivially perfect."""
    pq = pytest.importorskip("pyarrow.parquet")
    common = _perturb_args(tmp_path, "shuffle,opaque-keys", 2)
    for layout in ("cta", "drspider", "hf"):
        assert _cli(*common, "--out", str(tmp_path / layout), "--layout", layout) == 0
    capsys.readouterr()
    stems = sorted(p.stem for p in (tmp_path / "cta").glob("dev_*.json"))
    sets = [s for s in stems if s != "dev_original"]
    assert len(sets) == 4
    renames = {
        "cta": {s: s for s in stems},
        "hf": {s: s for s in stems},
        "drspider": {"dev_original": "Spider-dev"} | {s: "DB_" + s[len("dev_") :] for s in sets},
    }
    figures = {}
    for layout, names in renames.items():
        preds = _preds_for(tmp_path / "cta", tmp_path / f"{layout}-preds", names)
        assert _cli("eval", str(tmp_path / layout), "--pred", str(preds), "--json") == 0, layout
        report = json.loads(capsys.readouterr().out)
        figures[layout] = (
            report["original"],
            sorted(
                (s["kind"], s["seed"], s["n"], s["pre"], s["post"], s["relative_robustness"])
                for s in report["sets"]
            ),
            sorted((k["kind"], k["seeds"], k["pre"], k["post"]) for k in report["kinds"]),
        )
    assert figures["cta"] == figures["hf"] == figures["drspider"]
    original, per_set, _ = figures["cta"]
    assert len(per_set) == 4 and 0 < original["dev"]["ex"] < 1
    # the hf layout's Parquet columns are typed, even where every value is null
    schema = pq.read_schema(tmp_path / "hf" / "data" / "dev_shuffle_s0.parquet")
    types = {name: str(schema.field(name).type) for name in schema.names}
    assert types["evaluator_problem"] == "string" and types["seed"] == "int64"
    assert "null" not in types.values()
    original_schema = pq.read_schema(tmp_path / "hf" / "data" / "dev_original.parquet")
    assert str(original_schema.field("seed").type) == "int64"  # every seed null there


def _dev_named(tmp_path: Path, file_name: str, db_id: str) -> list[str]:
    """``cta dataset perturb --layout drspider`` arguments over the fixture's questions asked
    on a database named ``db_id``, in a question file named ``file_name``."""
    entry = {**music_entry(), "db_id": db_id}
    tables, questions = tmp_path / "tables.json", tmp_path / file_name
    tables.write_text(json.dumps([entry]))
    records = [{**r, "db_id": db_id} for r in json.loads(json.dumps(QUESTIONS))]
    questions.write_text(json.dumps(records))
    spider = ["--format", "spider", "--tables", str(tables), "--questions", str(questions)]
    return [
        "dataset",
        "perturb",
        *spider,
        "--kind",
        "shuffle",
        "--seeds",
        "1",
        "--layout",
        "drspider",
    ]


def _drspider_names(out: Path) -> tuple[list[str], set[str]]:
    post = json.loads((out / "DB_shuffle_s0" / "questions_post_perturbation.json").read_text())
    pre = json.loads((out / "DB_shuffle_s0" / "questions_pre_perturbation.json").read_text())
    keys = {k for r in post + pre for k in r if k.startswith("q_id_spider_")}
    return sorted(p.name for p in out.glob("Spider-*")), keys


def test_drspider_names_spider_dev_questions_dev_under_any_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dr.Spider's copy_pre_perturbation_predictions.py reads Spider-dev/ and
    q_id_spider_dev: Spider dev questions get them whatever their file is called; --name
    overrides, and a file of other databases keeps its stem."""
    (tmp_path / "a").mkdir()
    args = _dev_named(tmp_path / "a", "Spider-dev_small.json", "concert_singer")
    assert _cli(*args, "--out", str(tmp_path / "a" / "out")) == 0
    assert _drspider_names(tmp_path / "a" / "out") == (["Spider-dev"], {"q_id_spider_dev"})
    capsys.readouterr()
    assert _cli("eval", str(tmp_path / "a" / "out"), "--model", "oracle", "--json") == 0
    assert set(json.loads(capsys.readouterr().out)["original"]) == {"dev"}
    assert _cli(*args, "--out", str(tmp_path / "a" / "named"), "--name", "mine") == 0
    assert _drspider_names(tmp_path / "a" / "named") == (["Spider-mine"], {"q_id_spider_mine"})
    (tmp_path / "b").mkdir()
    other = _dev_named(tmp_path / "b", "my_questions.json", "music")
    assert _cli(*other, "--out", str(tmp_path / "b" / "out")) == 0
    assert _drspider_names(tmp_path / "b" / "out") == (
        ["Spider-my_questions"],
        {"q_id_spider_my_questions"},
    )
    capsys.readouterr()
    assert _cli(*other[:-2], "--out", str(tmp_path / "b" / "x"), "--name", "dev") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--name names Dr.Spider's folders" in err[0]


def test_layout_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _perturb_args(tmp_path, "rpl,add", 5, "--layout", "drspider", "--augment")
    assert _cli(*args, "--out", str(tmp_path / "o")) == 2
    assert "--layout drspider holds evaluation sets" in capsys.readouterr().err


@pytest.mark.slow
def test_every_family_on_spider_dev_writes_gold_the_evaluator_reads_or_marks(
    tiny_env: dict[str, str], tmp_path: Path
) -> None:
    """A spread of Spider dev (every 100th question) × every kind × 2 seeds through the CLI
    with the real tiny pipeline: every record's mark agrees with the grammar, and only the
    three expression families (which need CAST, substr, printf…) write an unreadable line."""
    if not (SPIDER / "dev.json").is_file():
        pytest.skip("../shared/data/spider is not here")
    dev = json.loads((SPIDER / "dev.json").read_text())[::100]
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps(dev))
    out = tmp_path / "out"
    env = {**tiny_env, "CTA_RPL_THRESHOLD": "0.0", "CTA_ADD_THRESHOLD": "1.0"}
    cmd = [
        sys.executable, "-m", "cta.cli.main", "dataset", "perturb", "--format", "spider",
        "--tables", str(SPIDER / "tables.json"), "--questions", str(questions),
        "--out", str(out), "--kind", "all", "--seeds", "2",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    entries = {e["db_id"]: e for e in json.loads((out / "tables.json").read_text())}
    expression = {"content-equivalence", "column-split", "column-merge"}
    seen: set[str] = set()
    for path in sorted(out.glob("dev_*_s[01].json")):
        records = json.loads(path.read_text())
        assert len(records) == len(dev), path.name
        for r in records:
            seen.add(r["kind"])
            problem = evaluator_problem(r["query"], spider_tables_of(entries[r["db_id"]]))
            assert (r["evaluator_reads"], r["evaluator_problem"]) == (problem is None, problem)
            if r["kind"] not in expression:
                assert problem is None, (path.name, r["query"], problem)
    assert len(seen) == 14
