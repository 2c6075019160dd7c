"""The ADVETA protocol over Spider, WikiSQL and WTQ files, verified by execution."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from dataset_fixtures import PARSED_SQL, music_entry, name_proposer, write_spider

from cta.cli.main import main
from cta.datasets import (
    materialise,
    perturb_dataset,
    run_protocol,
    spider_inputs,
    verify,
)
from cta.formats.spider import load_spider
from cta.sql.database import SqlColumn, SqlSchema, SqlTable, create_database
from cta.table import ColumnType

# ../shared beside the repository
SPIDER = Path(__file__).resolve().parents[2] / "shared" / "data" / "spider"

# A deterministic proposer: hand-picked RPL / ADD names per natural column name.
NAMES: dict[str, tuple[list[str], list[str]]] = {
    "name": (["full name", "title"], ["nickname"]),
    "age": (["years"], ["height"]),
    "country": (["nation", "homeland"], ["continent"]),
    "year": (["season"], ["month"]),
    "singer id": (["vocalist id"], ["order"]),
    "player": (["athlete"], ["coach"]),
    "position": (["role"], ["number #"]),
}


propose = name_proposer(NAMES, lambda name: ([f"{name} alt"], [f"{name} %"]))


TABLES = [music_entry()]
SQL_AGE = PARSED_SQL  # SELECT name FROM singer WHERE age > 20
QUESTIONS = [
    {
        "db_id": "music",
        "question": "Names of singers older than 20?",
        "query": "SELECT name FROM singer WHERE age > 20",
        "query_toks": ["SELECT", "name", "FROM", "singer", "WHERE", "age", ">", "20"],
        "query_toks_no_value": ["select", "name", "from", "singer", "where", "age", ">", "value"],
        "sql": SQL_AGE,
    },
    {"db_id": "music", "question": "How many singers?", "query": "SELECT count(*) FROM singer"},
    {
        "db_id": "music",
        "question": "Concerts of French singers, with the singer.",
        "query": "SELECT T2.name, T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = "
        'T2.singer_id WHERE T1.country = "France" ORDER BY T2.year',
    },
    {
        "db_id": "music",
        "question": "Everything about singers from Peru.",
        "query": "SELECT * FROM singer WHERE country = 'Peru'",
    },
    {"db_id": "music", "question": "Broken gold SQL.", "query": "SELECT nope FROM singer"},
]


def _write_spider(tmp_path: Path) -> tuple[Path, Path]:
    return write_spider(tmp_path, TABLES, QUESTIONS)


def test_spider_protocol_writes_consistent_files(tmp_path: Path) -> None:
    tables, questions = _write_spider(tmp_path)
    out = tmp_path / "out"
    run = perturb_dataset(
        "spider", tables, questions, out, propose, ("rpl", "add"), (0, 1), check_execution=True
    )
    assert run.verification is not None
    statuses = {(p["id"], p["status"]) for p in run.verification["problems"]}
    assert statuses == {("dev:4", "parse_error")} or statuses == {("dev:4", "original_error")}
    assert run.verification["equivalent_share"] == 1.0
    assert run.verification["checks"] == 5 * 2 * 2

    entries = json.loads((out / "tables.json").read_text())
    ids = [e["db_id"] for e in entries]
    assert ids[0] == "music" and all(i.startswith("music_") for i in ids[1:])
    assert all((out / "database" / i / f"{i}.sqlite").is_file() for i in ids)

    rpl = json.loads((out / "dev_rpl_s0.json").read_text())
    assert len(rpl) == 4  # the unbindable query is left out, listed in mappings.jsonl
    first = rpl[0]
    marks = {"evaluator_reads", "evaluator_problem"}
    assert set(first) == set(QUESTIONS[0]) | {"kind", "seed", "source_index"} | marks
    assert all(r["evaluator_reads"] and r["evaluator_problem"] is None for r in rpl)
    # Spider's gold file beside the set: SQL<TAB>db_id per record
    gold = (out / "dev_rpl_s0_gold.sql").read_text().splitlines()
    assert gold == [f"{r['query']}\t{r['db_id']}" for r in rpl]
    assert (first["kind"], first["seed"], first["source_index"]) == ("rpl", 0, 0)
    assert [r["source_index"] for r in rpl] == [0, 1, 2, 3]  # dev:4 is the unbindable one
    originals = json.loads((out / "dev_original.json").read_text())
    assert [r["query"] for r in originals] == [q["query"] for q in QUESTIONS]
    assert {r["kind"] for r in originals} == {"original"} and originals[2]["source_index"] == 2
    entry = next(e for e in entries if e["db_id"] == first["db_id"])
    names = [n for _, n in entry["column_names_original"]]
    assert "Name" not in names[1:5] and "Age" not in names[1:5]
    # identifiers in the schema's style (Singer_ID, Name, Age): bare, never quoted
    assert first["query"] in {
        f"SELECT {n} FROM singer WHERE Years > 20" for n in ("Full_name", "Title")
    }
    natural = dict(zip(names, [n for _, n in entry["column_names"]], strict=True))
    assert natural["Years"] == "years" and natural.get("Full_name", "full name") == "full name"
    assert first["sql"] == SQL_AGE  # RPL keeps column indices
    assert first["query_toks"][-3:] == ["Years", ">", "20"]
    # count(*) mentions no column: the original database
    assert rpl[1]["db_id"] == "music" and rpl[1]["query"] == QUESTIONS[1]["query"]

    add = json.loads((out / "dev_add_s0.json").read_text())
    assert add[0]["query"] == QUESTIONS[0]["query"]
    added = next(e for e in entries if e["db_id"] == add[0]["db_id"])
    assert [n for _, n in added["column_names_original"]][:7] == [
        "*",
        "Singer_ID",
        "Name",
        "Nickname",  # added: an identifier in the table's style
        "Country",
        "Age",
        "Height",
    ]
    assert added["primary_keys"] == [1, 7] and added["foreign_keys"] == [[9, 1]]
    # global column indices moved: age is column 5 now
    assert add[0]["sql"]["where"][0][2][1][1] == 5
    assert add[3]["query"].startswith("SELECT Singer_ID, Name, Country, Age FROM singer")

    lines = [json.loads(x) for x in (out / "mappings.jsonl").read_text().splitlines()]
    assert len(lines) == 20
    m = next(x for x in lines if x["id"] == "dev:2" and x["kind"] == "rpl" and x["seed"] == 0)
    assert m["mapping"]["concert"] == {
        "name": m["mapping"]["concert"]["name"],
        "singer id": "vocalist id",
        "year": "season",
    }
    assert m["sql_mapping"]["concert"]["Year"] == "Season"  # natural → identifier
    assert next(x for x in lines if x["id"] == "dev:4")["problem"].startswith("unknown_column")


def test_spider_output_is_reproducible_and_augment_triples(tmp_path: Path) -> None:
    tables, questions = _write_spider(tmp_path)
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        perturb_dataset(
            "spider", tables, questions, out, propose, ("rpl", "add"), (3,), augment=True
        )
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*") if p.is_file())
    for f in files:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    augmented = json.loads((outs[0] / "dev_augmented_s3.json").read_text())
    # every original, plus RPL and ADD of the 4 pairs whose SQL could be rewritten
    assert len(augmented) == 5 + 2 * 4
    assert augmented[0] == {
        **QUESTIONS[0],
        "kind": "original",
        "seed": None,
        "source_index": 0,
        "evaluator_reads": True,
        "evaluator_problem": None,
    }
    assert {augmented[1]["db_id"], augmented[2]["db_id"]} == {"music_rpl_s3_v0", "music_add_s3_v0"}


def test_spider_with_shipped_databases_copies_their_rows(tmp_path: Path) -> None:
    tables, questions = _write_spider(tmp_path)
    dataset = load_spider(tables, questions)
    examples, databases = spider_inputs(dataset)
    db_dir = tmp_path / "database"
    rows = {
        "singer": [(1, "Ann", "France", 30), (2, "Bob", "Peru", 19)],
        "concert": [(10, "Gala", 1, 2014)],
    }
    create_database(db_dir / "music" / "music.sqlite", databases["music"].schema, rows)
    out = tmp_path / "out"
    run = perturb_dataset("spider", tables, questions, out, propose, ("add",), (0,),
                          db_dir=db_dir, check_execution=True, values="null")  # fmt: skip
    assert run.verification is not None and run.verification["equivalent_share"] == 1.0
    conn = sqlite3.connect(out / "database" / "music_add_s0_v0" / "music_add_s0_v0.sqlite")
    got = conn.execute("SELECT * FROM singer").fetchall()
    conn.close()
    assert [(r[0], r[1], r[3], r[4]) for r in got] == rows["singer"]
    assert {r[2] for r in got} == {None}


def _perturb_cli(tables: Path, questions: Path, out: Path, *extra: str) -> list[str]:
    spider = ["--format", "spider", "--tables", str(tables), "--questions", str(questions)]
    return ["dataset", "perturb", *spider, "--kind", "shuffle", "--seeds", "1", "--out", str(out),
            *extra]  # fmt: skip


@pytest.mark.parametrize("layout", ["cta", "drspider", "hf"])
def test_synthesised_databases_are_said_at_the_start_in_the_manifest_and_eval_reports(
    tmp_path: Path, layout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from cta.provenance import read_manifest
    from cta.sql.database import synthesis_note

    tables, questions = _write_spider(tmp_path)
    out = tmp_path / "out"
    args = _perturb_cli(tables, questions, out, "--synthesis-seed", "7", "--layout", layout)
    assert main(args) == 0
    note = synthesis_note(7)
    assert "seed 7" in note and "not comparable" in note
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("cta dataset: databases: 1 of 1 ") and err[0].endswith(note)
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest["databases"] == {
        "synthesised": ["music"],
        "synthesis_seed": 7,
        "synthesis_seeds": [7],
        "note": note,
    }
    report_dir = tmp_path / "report"
    assert main(["eval", str(out), "--model", "oracle", "--out", str(report_dir)]) == 0
    captured = capsys.readouterr()
    assert f"cta eval: databases {note}" in captured.err
    assert note in captured.out  # the summary
    assert json.loads((report_dir / "eval.json").read_text())["databases"] == note
    assert note in (report_dir / "report.md").read_text()


def test_require_databases_refuses_to_synthesise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cta.provenance import read_manifest

    tables, questions = _write_spider(tmp_path)
    out = tmp_path / "out"
    assert main(_perturb_cli(tables, questions, out, "--require-databases")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cta: error: dataset perturb: --require-databases")
    assert "music" in err[0] and "databases_required" in err[0]
    assert not (out / "manifest.json").exists()
    # with the database shipped, nothing is synthesised and nothing is said
    dataset = load_spider(tables, questions)
    _, databases = spider_inputs(dataset)
    db_dir = tmp_path / "database"
    rows = {"singer": [(1, "Ann", "France", 30)], "concert": [(10, "Gala", 1, 2014)]}
    create_database(db_dir / "music" / "music.sqlite", databases["music"].schema, rows)
    args = _perturb_cli(tables, questions, out, "--require-databases", "--db-dir", str(db_dir))
    assert main(args) == 0
    assert "synthesised" not in capsys.readouterr().err
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest["databases"] == {
        "synthesised": [],
        "synthesis_seed": None,
        "synthesis_seeds": [],
        "note": None,
    }
    assert main(["eval", str(out), "--model", "oracle", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["databases"] is None and "synthesised" not in captured.err


@pytest.mark.skipif(not (SPIDER / "dev.json").is_file(), reason="Spider data not present")
def test_real_spider_dev_subset_is_execution_equivalent(tmp_path: Path) -> None:
    dataset = load_spider(SPIDER / "tables.json", SPIDER / "dev.json")
    dataset.records = [r for r in dataset.records if r["db_id"] in {"world_1", "car_1"}][:150]
    examples, databases = spider_inputs(dataset)
    result = run_protocol(examples, databases, propose, ("rpl", "add"), (0, 1))
    paths = materialise(result, databases, tmp_path, examples)
    report = verify(result, examples, paths)
    assert report.checks == 150 * 4
    assert report.by_status == {"ok": report.checks}, [
        r for r in report.records if r.status != "ok"
    ][:3]
    assert report.nonempty_share > 0.8
    changed = [
        pe for pe in result.examples if pe.sql != next(ex.sql for ex in examples if ex.id == pe.id)
    ]
    assert len(changed) > 200  # most RPL rewrites change the text


def test_wikisql_protocol_remaps_indices(tmp_path: Path) -> None:
    table = {
        "id": "1-10015132-11",
        "header": ["Player", "No.", "Position", "Years in Toronto"],
        "types": ["text", "real", "text", "text"],
        "rows": [
            ["Ann", 3, "Guard", "1996-97"],
            ["Bob", 21, "Forward", "2001-02"],
            ["Cy", 7, "Guard", "2003"],
        ],
        "page_title": "Toronto Raptors all-time roster",
    }
    questions = [
        {
            "phase": 1,
            "table_id": table["id"],
            "question": "Who wears 21?",
            "sql": {"sel": 0, "agg": 0, "conds": [[1, 0, 21]]},
        },
        {
            "phase": 1,
            "table_id": table["id"],
            "question": "How many guards?",
            "sql": {"sel": 0, "agg": 3, "conds": [[2, 0, "Guard"]]},
        },
    ]
    (tmp_path / "dev.tables.jsonl").write_text(json.dumps(table) + "\n")
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    out = tmp_path / "out"
    run = perturb_dataset(
        "wikisql",
        tmp_path / "dev.tables.jsonl",
        tmp_path / "dev.jsonl",
        out,
        propose,
        ("rpl", "add"),
        (0,),
        check_execution=True,
    )
    assert run.verification is not None
    assert run.verification["by_status"] == {"ok": 4}
    add = [json.loads(x) for x in (out / "dev_add_s0.jsonl").read_text().splitlines()]
    add_tables = [json.loads(x) for x in (out / "dev_add_s0.tables.jsonl").read_text().splitlines()]
    header = next(t for t in add_tables if t["id"] == add[1]["table_id"])["header"]
    assert header == ["Player", "coach", "No.", "Position", "number #", "Years in Toronto"]
    assert add[1]["sql"] == {"sel": 0, "agg": 3, "conds": [[3, 0, "Guard"]]}
    rpl_tables = [json.loads(x) for x in (out / "dev_rpl_s0.tables.jsonl").read_text().splitlines()]
    assert any(t["header"][0] == "athlete" for t in rpl_tables)
    conn = sqlite3.connect(out / "dev_add_s0.db")
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert "table_1_10015132_11_add_s0_v0" in names


WIKISQL_TABLE = {
    "id": "1-10015132-11",
    "header": ["Player", "No.", "Position", "Years in Toronto", "School"],
    "types": ["text", "real", "text", "text", "text"],
    "rows": [
        ["Ann", 3, "Guard", "1996-97", "Duke"],
        ["Bob", 21, "Forward", "2001-02", "Iowa"],
        ["Cy", 7, "Guard", "2003", "Duke"],
    ],
}
WIKISQL_QUESTIONS = [
    {"phase": 1, "table_id": "1-10015132-11", "question": "Who is the player wearing 21?",
     "sql": {"sel": 0, "agg": 0, "conds": [[1, 0, 21]]}},
    {"phase": 1, "table_id": "1-10015132-11", "question": "How many guards?",
     "sql": {"sel": 0, "agg": 3, "conds": [[2, 0, "Guard"]]}},
]  # fmt: skip


def _wikisql(tmp_path: Path) -> tuple[Path, Path]:
    tables, questions = tmp_path / "dev.tables.jsonl", tmp_path / "dev.jsonl"
    tables.write_text(json.dumps(WIKISQL_TABLE) + "\n")
    questions.write_text("".join(json.dumps(q) + "\n" for q in WIKISQL_QUESTIONS))
    return tables, questions


def test_wikisql_holds_the_families_its_logical_form_can(tmp_path: Path) -> None:
    from dataset_fixtures import accept_all

    from cta.datasets.wikisql import WIKISQL
    from cta.families import held_kinds

    tables, questions = _wikisql(tmp_path)
    out = tmp_path / "out"
    kinds = ["shuffle", "remove-column", "insert-column", "abbreviation", "question-synonym"]
    assert sorted(kinds) == sorted(set(held_kinds(WIKISQL.holds)) - {"rpl", "add"})
    run = perturb_dataset(
        "wikisql", tables, questions, out, propose, kinds, (0,), check_execution=True,
        judge=accept_all,
    )  # fmt: skip
    assert run.verification is not None
    assert run.verification["equivalent_share"] == 1.0, run.verification["problems"]
    items = [json.loads(x) for x in (out / "mappings.jsonl").read_text().splitlines()]
    changed = {i["kind"] for i in items if i["perturbed_db_id"] != i["db_id"] or i["question"]}
    assert changed == set(kinds)  # every family changed some item

    def written(kind: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        rows = [json.loads(x) for x in (out / f"dev_{kind}_s0.jsonl").read_text().splitlines()]
        objs = (out / f"dev_{kind}_s0.tables.jsonl").read_text().splitlines()
        return rows, {o["id"]: o for o in map(json.loads, objs)}

    # Each written logical form, read over its written table, selects what the original did.
    original = {r[0]: r for r in WIKISQL_TABLE["rows"]}
    for kind in ("shuffle", "remove-column", "insert-column"):
        rows, tables_of = written(kind)
        assert len(rows) == 2
        for record, source in zip(rows, WIKISQL_QUESTIONS, strict=True):
            table = tables_of[record["table_id"]]
            sel = table["header"][record["sql"]["sel"]]
            assert sel == "Player"
            for (col, _, value), (old_col, _, old_value) in zip(
                record["sql"]["conds"], source["sql"]["conds"], strict=True
            ):
                assert table["header"][col] == WIKISQL_TABLE["header"][old_col]
                assert value == old_value
            player = table["header"].index("Player")
            assert sorted(r[player] for r in table["rows"]) == sorted(original)
    _, shuffled = written("shuffle")
    [table] = shuffled.values()
    assert table["header"] != WIKISQL_TABLE["header"]
    assert sorted(table["header"]) == sorted(WIKISQL_TABLE["header"])
    _, removed = written("remove-column")
    [table] = removed.values()
    gone = set(WIKISQL_TABLE["header"]) - set(table["header"])
    assert len(table["header"]) == 4 and gone <= {"Years in Toronto", "School"}  # unused ones
    _, abbreviated = written("abbreviation")
    [table] = abbreviated.values()
    assert table["header"] != WIKISQL_TABLE["header"] and table["rows"] == WIKISQL_TABLE["rows"]
    synonyms, _ = written("question-synonym")
    assert [r["question"] for r in synonyms] != [q["question"] for q in WIKISQL_QUESTIONS]


def test_wikisql_refuses_a_family_it_cannot_hold(tmp_path: Path) -> None:
    from cta.table import InvalidTableError

    tables, questions = _wikisql(tmp_path)
    for kind in ("flatten", "column-split", "table-rename"):
        with pytest.raises(InvalidTableError, match="WikiSQL's logical form"):
            perturb_dataset("wikisql", tables, questions, tmp_path / "o", propose, [kind], (0,))
    code = main(["dataset", "perturb", "--format", "wikisql", "--tables", str(tables),
                 "--questions", str(questions), "--out", str(tmp_path / "c"), "--kind", "flatten"])  # fmt: skip
    assert code == 2


def _wtq(tmp_path: Path, player: str, questions: list[tuple[str, str]]) -> Path:
    """A WTQ folder: one table ``csv/200-csv/0.csv`` (its first player ``player``, a CSV
    cell) and ``data/q.tsv`` with (question, answer) records about it; the folder."""
    root = tmp_path / "wtq"
    (root / "csv" / "200-csv").mkdir(parents=True)
    (root / "csv" / "200-csv" / "0.csv").write_text(
        f'"Year","Player","Position"\n"1999",{player},"Guard"\n"2001","Bob","Forward"\n'
    )
    (root / "data").mkdir()
    records = [f"nu-{i}\t{q}\tcsv/200-csv/0.csv\t{a}\n" for i, (q, a) in enumerate(questions)]
    (root / "data" / "q.tsv").write_text("id\tutterance\tcontext\ttargetValue\n" + "".join(records))
    return root


def test_wtq_perturbs_tables_and_repoints_questions(tmp_path: Path) -> None:
    root = _wtq(tmp_path, '"Ann \\"A\\""', [("who played guard?", "Ann")])
    out = tmp_path / "out"
    run = perturb_dataset("wtq", root, root / "data" / "q.tsv", out, propose, ("rpl", "add"), (0,))
    assert run.variants == 2
    tsv = (out / "q_rpl_s0.tsv").read_text().splitlines()
    assert tsv[1].split("\t")[2] == "csv/200-csv/0_rpl_s0.csv"
    perturbed = (out / "csv" / "200-csv" / "0_rpl_s0.csv").read_text().splitlines()
    assert perturbed[0] == '"season","athlete","role"'
    assert perturbed[1] == '"1999","Ann \\"A\\"","Guard"'
    added = (out / "csv" / "200-csv" / "0_add_s0.csv").read_text().splitlines()
    assert added[0] == '"Year","month","Player","coach","Position","number #"'


def test_wtq_holds_the_families_that_keep_every_cell(tmp_path: Path) -> None:
    from dataset_fixtures import accept_all

    from cta.datasets.wtq import WTQ
    from cta.families import held_kinds
    from cta.table import InvalidTableError

    questions = [("which player played guard?", "Ann"), ("in which year did bob start?", "2001")]
    root = _wtq(tmp_path, '"Ann"', questions)
    out = tmp_path / "out"
    kinds = [k for k in held_kinds(WTQ.holds) if k not in ("rpl", "add")]
    assert kinds == ["abbreviation", "shuffle", "insert-column", "question-synonym"]
    run = perturb_dataset(
        "wtq", root, root / "data" / "q.tsv", out, propose, kinds, (0,), judge=accept_all
    )
    items = [json.loads(x) for x in (out / "mappings.jsonl").read_text().splitlines()]
    assert {i["kind"] for i in items if not i["unchanged"]} == set(kinds), items
    original = [
        line.split(",") for line in (root / "csv" / "200-csv" / "0.csv").read_text().splitlines()
    ]
    for kind in ("shuffle", "insert-column", "abbreviation"):
        tsv = [line.split("\t") for line in (out / f"q_{kind}_s0.tsv").read_text().splitlines()]
        assert {row[2] for row in tsv[1:]} == {f"csv/200-csv/0_{kind}_s0.csv"}
        edited = [line.split(",") for line in (out / tsv[1][2]).read_text().splitlines()]
        # Every original column's cells are there, row by row, whatever its new name or place.
        columns = list(zip(*edited, strict=True))
        for j, name in enumerate(original[0]):
            cells = [row[j] for row in original[1:]]
            assert any(list(col[1:]) == cells for col in columns), (kind, name)
    shuffled = (out / "csv" / "200-csv" / "0_shuffle_s0.csv").read_text().splitlines()[0]
    assert shuffled != '"Year","Player","Position"' and sorted(shuffled.split(",")) == sorted(
        original[0]
    )
    assert (
        len(
            (out / "csv" / "200-csv" / "0_insert-column_s0.csv")
            .read_text()
            .splitlines()[0]
            .split(",")
        )
        == 4
    )
    synonyms = [
        line.split("\t") for line in (out / "q_question-synonym_s0.tsv").read_text().splitlines()
    ]
    assert [r[1] for r in synonyms[1:]] != [
        "which player played guard?",
        "in which year did bob start?",
    ]
    assert {r[2] for r in synonyms[1:]} == {"csv/200-csv/0.csv"}
    assert run.variants == 3
    for kind in ("remove-column", "column-split", "flatten"):
        with pytest.raises(InvalidTableError, match="WTQ has no SQL"):
            perturb_dataset(
                "wtq", root, root / "data" / "q.tsv", tmp_path / "o", propose, [kind], (0,)
            )


def test_cli_rejects_a_bad_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "dataset",
            "perturb",
            "--format",
            "spider",
            "--tables",
            "t.json",
            "--out",
            "o",
            "--kind",
            "swap",
        ]
    )
    assert code == 2
    assert "swap" in capsys.readouterr().err


def test_schema_of_shipped_database_matches_tables_json(tmp_path: Path) -> None:
    tables, questions = _write_spider(tmp_path)
    _, databases = spider_inputs(load_spider(tables, questions))
    schema = databases["music"].schema
    assert schema == SqlSchema(schema.tables)
    singer = schema.table("singer")
    assert singer.primary_key == ("Singer_ID",)
    assert singer.columns[3] == SqlColumn("Age", ColumnType.NUMBER)
    assert isinstance(schema.table("concert"), SqlTable)
