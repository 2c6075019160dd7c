"""BIRD in, perturbed BIRD out: the fixture (three mini-dev databases, synthesised) through
``--format bird``, its layout, evidence, descriptions and verification."""

from __future__ import annotations

import csv
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from dataset_fixtures import accept_all, name_proposer

from cta.cli.main import main
from cta.datasets import bird_inputs, perturb_dataset
from cta.formats.bird import DESCRIPTION_FIELDS, load_bird, load_statistics
from cta.formats.mentions import Rename, rewrite_mentions
from cta.sql.database import ColumnRef, create_database, synthesise_rows
from cta.sql.identifiers import identifier_style, is_bare_identifier, sql_identifier
from cta.table import InvalidTableError

BIRD = Path(__file__).parent / "data" / "bird"
TABLES, QUESTIONS = BIRD / "dev_tables.json", BIRD / "dev.json"
STATISTICS = BIRD / "dev_tables_cleaned.json"
BIRD_TYPES = {"integer", "real", "text", "date", "datetime"}
FAMILIES = "abbreviation,shuffle,opaque-keys,remove-column,normalise,insert-column,table-rename"


def _reversed(name: str) -> tuple[list[str], list[str]]:
    """RPL and ADD names sharing no word with the column's own (so a name left in the
    evidence after a rename is a miss, never part of the new name)."""
    return [f"{name[::-1]} alt"], [f"{name[::-1]} extra"]


propose = name_proposer({}, _reversed)


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bird") / "out"
    run = perturb_dataset(
        "bird", TABLES, QUESTIONS, out, propose, ("rpl", "add"), (0, 1),
        check_execution=True, statistics=STATISTICS, verify_seeds=2,
    )  # fmt: skip
    assert run.synthesised == ["debit_card_specializing", "student_club", "superhero"]
    assert run.synthesis_seeds == [0, 1]
    return out


def test_layout_every_file_bird_reads(perturbed: Path) -> None:
    entries = _read(perturbed / "dev_tables.json")
    originals = _read(QUESTIONS)
    ids = [e["db_id"] for e in entries]
    assert ids[:3] == ["debit_card_specializing", "student_club", "superhero"]
    variant = re.compile(r"^(debit_card_specializing|student_club|superhero)_(rpl|add)_s[01]_v\d+$")
    assert ids[3:] and all(variant.match(d) for d in ids[3:])
    for entry in entries:
        db = perturbed / "dev_databases" / entry["db_id"]
        assert (db / f"{entry['db_id']}.sqlite").is_file()
        assert set(entry["column_types"][1:]) <= BIRD_TYPES
        for t, table in enumerate(entry["table_names_original"]):
            with (db / "database_description" / f"{table}.csv").open(encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
            identifiers = [c for i, c in entry["column_names_original"] if i == t]
            assert [r["original_column_name"] for r in rows] == identifiers
            assert list(rows[0]) == list(DESCRIPTION_FIELDS)
    for stem in ("dev_original", "dev_rpl_s0", "dev_rpl_s1", "dev_add_s0", "dev_add_s1"):
        records = _read(perturbed / f"{stem}.json")
        assert len(records) == len(originals)  # every gold query bound and rewritten
        gold = (perturbed / f"{stem}_gold.sql").read_text(encoding="utf-8").splitlines()
        assert gold == [f"{' '.join(r['SQL'].split())}\t{r['db_id']}" for r in records]
        for record in records:
            source = originals[record["source_index"]]
            assert set(source) | {"kind", "seed", "source_index"} == set(record)
            assert record["question"] == source["question"]
            assert record["question_id"] == source["question_id"]
    rpl = _read(perturbed / "dev_rpl_s0.json")
    assert sum(r["SQL"] != originals[r["source_index"]]["SQL"] for r in rpl) == len(rpl)
    assert {r["db_id"] for r in rpl} <= set(ids[3:])


def test_every_check_equal_on_every_synthesis_seed(perturbed: Path) -> None:
    report = _read(perturbed / "verification.json")
    assert report["checks"] == 30 * 2 * 2 * 2  # questions × kinds × seeds × synthesis seeds
    assert report["by_status"] == {"ok": report["checks"]}
    seeds: dict[tuple[str, str, int], set[int]] = {}
    for r in report["records"]:
        seeds.setdefault((r["id"], r["kind"], r["seed"]), set()).add(r["synthesis_seed"])
    assert set(map(frozenset, seeds.values())) == {frozenset({0, 1})}
    assert report["nonempty_share"] > 0.6  # the statistics make filters match
    manifest_free = {p.name for p in perturbed.iterdir()}
    assert {"mappings.jsonl", "verification.json"} <= manifest_free


def _words(text: str, names: set[str]) -> set[str]:
    text = re.sub(r"(?:[=<>]|\blike|\bin\s*\()\s*'(?:[^'\n]|'')*'", " ", text, flags=re.I)
    found = set()
    for name in names:
        pattern = r"\s+".join(re.escape(w) for w in name.split())
        if re.search(rf"(?<!\w){pattern}(?!\w)", text, re.IGNORECASE):
            found.add(name)
    return found


def test_evidence_names_no_renamed_column_in_any_rpl_variant(perturbed: Path) -> None:
    originals = _read(QUESTIONS)
    entries = {e["db_id"]: e for e in _read(perturbed / "dev_tables.json")}
    items = [json.loads(line) for line in (perturbed / "mappings.jsonl").read_text().splitlines()]
    by_key = {(m["id"], m["seed"]): m for m in items if m["kind"] == "rpl"}
    mentioning = 0
    for seed in (0, 1):
        for record in _read(perturbed / f"dev_rpl_s{seed}.json"):
            item = by_key[(f"dev:{record['source_index']}", seed)]
            old = {o for t in item["sql_mapping"].values() for o in t}
            old |= {o for t in item["mapping"].values() for o in t}
            entry = entries[record["db_id"]]
            alive = {
                c.casefold() for _, c in entry["column_names_original"] + entry["column_names"]
            }
            before = _words(originals[record["source_index"]]["evidence"], old)
            if not before:
                assert record["evidence"] == originals[record["source_index"]]["evidence"]
                continue
            mentioning += 1
            left = {n for n in _words(record["evidence"], old) if n.casefold() not in alive}
            assert not left, (record["source_index"], left, record["evidence"])
    assert mentioning >= 30  # most questions' evidence names a column their SQL reads


def test_descriptions_follow_renamed_and_added_columns(perturbed: Path) -> None:
    items = [json.loads(line) for line in (perturbed / "mappings.jsonl").read_text().splitlines()]
    checked = 0
    for item in items:
        db = perturbed / "dev_databases" / item["perturbed_db_id"] / "database_description"
        for table, renames in item["sql_mapping"].items():
            with (db / f"{table}.csv").open(encoding="utf-8") as fh:
                rows = {r["original_column_name"]: r for r in csv.DictReader(fh)}
            for old, new in renames.items():
                natural = item["mapping"][table]
                assert new in rows and (item["kind"] == "add" or old not in rows)
                named = [n for o, n in natural.items() if o.casefold() in (old.casefold(),)]
                if item["kind"] == "add":
                    added = rows[new]
                    assert added["column_name"] in natural.values()
                    assert added["column_description"] == added["column_name"]
                elif named:
                    assert rows[new]["column_name"] == named[0]
                checked += 1
    assert checked > 100


def test_synthesis_draws_from_the_statistics() -> None:
    dataset = load_bird(TABLES, QUESTIONS, statistics=STATISTICS)
    _, databases = bird_inputs(dataset)
    db = databases["debit_card_specializing"]
    rows = synthesise_rows(db.schema, 3, statistics=db.statistics)
    stats = load_statistics(STATISTICS)["debit_card_specializing"]
    customers = db.schema.table("customers")
    segment = {r[customers.index("Segment")] for r in rows["customers"]}
    assert segment <= set(stats[ColumnRef("customers", "Segment")].sample_values)
    amounts = db.schema.table("transactions_1k")
    amount = stats[ColumnRef("transactions_1k", "Amount")]
    values = [r[amounts.index("Amount")] for r in rows["transactions_1k"]]
    assert all(amount.min_value <= v <= amount.max_value for v in values if v is not None)
    # 4 % of ChainID's cells are distinct in BIRD: no more than its 10 samples here
    stations = db.schema.table("gasstations")
    chains = [r[stations.index("ChainID")] for r in rows["gasstations"]]
    assert len(chains) > 10 and len(set(chains)) <= 10
    keys = {r[customers.index("CustomerID")] for r in rows["customers"]}
    yearmonth = db.schema.table("yearmonth")
    assert {r[yearmonth.index("CustomerID")] for r in rows["yearmonth"]} <= keys
    # a column with NULLs in BIRD has NULLs here; a key never
    club = databases["student_club"]
    notes = club.schema.table("income")  # 92 % of income.notes are NULL
    assert (
        load_statistics(STATISTICS)["student_club"][ColumnRef("income", "notes")].null_fraction
        > 0.9
    )
    club_rows = synthesise_rows(club.schema, 0, statistics=club.statistics)["income"]
    nulls = sum(r[notes.index("notes")] is None for r in club_rows)
    assert nulls > len(club_rows) / 2
    assert all(r[notes.index("income_id")] is not None for r in club_rows)


def test_the_families_bird_holds_verify_and_rename_evidence(tmp_path: Path) -> None:
    out = tmp_path / "out"
    kinds = FAMILIES.split(",")
    run = perturb_dataset(
        "bird", TABLES, QUESTIONS, out, propose, kinds, (0,), check_execution=True,
        statistics=STATISTICS, judge=accept_all, verify_seeds=1,
    )  # fmt: skip
    assert run.verification is not None
    assert run.verification["by_status"] == {"ok": run.verification["checks"]}
    edited = {k: 0 for k in kinds}
    for item in (json.loads(x) for x in (out / "mappings.jsonl").read_text().splitlines()):
        edited[item["kind"]] += item["perturbed_db_id"] != item["db_id"]
    assert all(edited[k] > 0 for k in kinds), edited
    # table-rename: a renamed table's name in the evidence follows it
    entries = {e["db_id"]: e for e in _read(out / "dev_tables.json")}
    originals = _read(QUESTIONS)
    followed = 0
    for record in _read(out / "dev_table-rename_s0.json"):
        old = entries[originals[record["source_index"]]["db_id"]]["table_names_original"]
        new = entries[record["db_id"]]["table_names_original"]
        gone = {o for o in old if o not in new}
        before = originals[record["source_index"]]["evidence"]
        for name in gone:
            if re.search(rf"\b{re.escape(name)}\b", before):
                assert not re.search(rf"(?<![\w`]){re.escape(name)}(?![\w`])", record["evidence"])
                followed += 1
    assert followed > 0


@pytest.mark.parametrize(
    ("kind", "problem"),
    [("flatten", "unsupported_kind"), ("column-split", "unsupported_kind")],
)
def test_a_kind_bird_cannot_hold_is_refused_up_front(
    tmp_path: Path, kind: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["dataset", "perturb", "--format", "bird", "--tables", str(TABLES)]
    args += ["--questions", str(QUESTIONS), "--kind", kind, "--out", str(tmp_path / "o")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and problem in err[0] and "evidence" in err[0]
    assert not (tmp_path / "o").exists()


def test_cli_says_synthesis_and_its_seeds_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cta.provenance import read_manifest

    out = tmp_path / "out"
    base = ["dataset", "perturb", "--format", "bird", "--tables", str(TABLES)]
    args = [*base, "--questions", str(QUESTIONS), "--statistics", str(STATISTICS)]
    assert main([*args, "--kind", "shuffle", "--seeds", "1", "--verify", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["synthesis_seeds"] == [0, 1, 2]
    assert summary["verification"]["by_status"] == {"ok": 30 * 3}
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest["databases"]["synthesis_seeds"] == [0, 1, 2]
    assert len(manifest["databases"]["synthesised"]) == 3
    assert "dev_databases" in manifest["outputs"] and "dev_rpl_s0.json" not in manifest["outputs"]
    # bad inputs: one line each, exit 2
    broken = tmp_path / "dev.json"
    broken.write_text(json.dumps([{"db_id": "superhero", "question": "?"}]))
    bad = [
        ([*base, "--questions", str(broken), "--out", str(tmp_path / "b")], "malformed_dataset"),
        ([*base, "--out", str(tmp_path / "c")], "missing_questions"),
        (
            ["dataset", "perturb", "--format", "spider", "--tables", str(TABLES),
             "--questions", str(QUESTIONS), "--statistics", str(STATISTICS),
             "--out", str(tmp_path / "d")],
            "unsupported_option",
        ),
    ]  # fmt: skip
    for argv, problem in bad:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and problem in err[0], err


def test_unbound_gold_sql_is_recorded_per_item(tmp_path: Path) -> None:
    records = _read(QUESTIONS)[:3]
    records.append({**records[0], "question_id": -1, "SQL": "SELECT nonsense FROM customers"})
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps(records))
    out = tmp_path / "out"
    perturb_dataset("bird", TABLES, questions, out, propose, ("rpl",), (0,))
    items = [json.loads(x) for x in (out / "mappings.jsonl").read_text().splitlines()]
    assert [i["sql"] is None for i in items] == [False, False, False, True]
    assert "unknown_column" in items[3]["problem"]
    assert len(_read(out / "dev_rpl_s0.json")) == 3


def test_given_databases_are_used_and_only_the_missing_one_synthesised(tmp_path: Path) -> None:
    dataset = load_bird(TABLES, QUESTIONS, statistics=STATISTICS)
    _, databases = bird_inputs(dataset)
    db_dir = tmp_path / "dev_databases"
    for db_id in ("student_club", "superhero"):  # debit_card_specializing is not given
        db = databases[db_id]
        rows = synthesise_rows(db.schema, 11, statistics=db.statistics)
        create_database(db_dir / db_id / f"{db_id}.sqlite", db.schema, rows)
        shutil.copytree(
            BIRD / "dev_databases" / db_id / "database_description",
            db_dir / db_id / "database_description",
        )
    out = tmp_path / "out"
    run = perturb_dataset(
        "bird", TABLES, QUESTIONS, out, propose, ("rpl",), (0,), db_dir=db_dir,
        check_execution=True, verify_seeds=3, statistics=STATISTICS,
    )  # fmt: skip
    assert run.synthesised == ["debit_card_specializing"] and run.synthesis_seeds == [0, 1, 2]
    assert run.verification is not None and run.verification["by_status"] == {"ok": 10 * 3 + 20}
    seeds: dict[str, set[int | None]] = {}
    for r in _read(out / "verification.json")["records"]:
        seeds.setdefault(r["db_id"], set()).add(r["synthesis_seed"])
    assert seeds == {
        "debit_card_specializing": {0, 1, 2},
        "student_club": {None},
        "superhero": {None},
    }
    copied = out / "dev_databases" / "superhero" / "superhero.sqlite"
    given = db_dir / "superhero" / "superhero.sqlite"
    query = "SELECT * FROM superhero ORDER BY id"
    with sqlite3.connect(copied) as a, sqlite3.connect(given) as b:
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
    # with --require-databases the missing one is refused, nothing written
    with pytest.raises(InvalidTableError) as refused:
        perturb_dataset(
            "bird", TABLES, QUESTIONS, tmp_path / "o2", propose, ("rpl",), (0,),
            db_dir=db_dir, require_databases=True,
        )  # fmt: skip
    assert refused.value.problem == "databases_required"
    assert "debit_card_specializing" in refused.value.message


def test_mentions_rewritten_in_every_form_values_untouched() -> None:
    renames = [
        Rename("Free Meal Count (K-12)", "Meals Served (K-12)", "Free Meal Count (K-12)",
               "meals served (K-12)", "frpm"),
        Rename("Segment", "Client_tier", "client segment", "client tier", "customers"),
        Rename("Currency", "Money", "Currency", "money", "customers"),
        Rename("eye_colour_id", "eye_color_id", "eye colour id", "eye color id", "superhero"),
    ]  # fmt: skip
    cases = {
        "rate = `Free Meal Count (K-12)` / `Enrollment (K-12)`":
            "rate = `Meals Served (K-12)` / `Enrollment (K-12)`",
        'SUM("Free Meal Count (K-12)")': 'SUM("Meals Served (K-12)")',
        "count(Currency = 'EUR') / count(currency = 'CZK')":
            "count(Money = 'EUR') / count(Money = 'CZK')",
        "customers who pay in Currency 'Currency'": "customers who pay in money 'Currency'",
        "T1.Segment = 'SME'; gasstations.Segment = 'Value'; the client segment":
            "T1.Client_tier = 'SME'; gasstations.Segment = 'Value'; the client tier",
        "blue eyes refers to eye_colour_id = 7; the eye colour id":
            "blue eyes refers to eye_color_id = 7; the eye color id",
        "Segment = 'Segment'": "Client_tier = 'Segment'",
        "the money name. Currency holds codes": "the money name. Money holds codes",
    }  # fmt: skip
    tables = ("customers", "gasstations", "frpm", "superhero")
    for before, after in cases.items():
        assert rewrite_mentions(before, renames, tables=tables) == after, before
    # a bare name another mentioned column also has is ambiguous: kept, unless qualified
    text = "Segment refers to T1.Segment"
    assert (
        rewrite_mentions(text, renames[1:2], kept={"Segment"}) == "Segment refers to T1.Client_tier"
    )


def test_identifiers_keep_a_spaced_schemas_style_and_stay_legal(tmp_path: Path) -> None:
    spaced = ["CDSCode", "Academic Year", "County Code", "Free Meal Count (K-12)", "School Name"]
    style = identifier_style(spaced)
    new = sql_identifier("meals served for grades 1 to 12", style)
    assert new == "Meals Served for Grades 1 to 12"
    assert sql_identifier("order", style) == "Order_"  # one word: bare, never reserved
    # Spider-like tables keep bare identifiers even with one spaced column
    assert is_bare_identifier(sql_identifier("home city", identifier_style(
        ["People_ID", "Name", "Height", "Home Town"])))  # fmt: skip
    # and SQLite reads a query over the spaced identifier, backticked as BIRD writes it
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f'CREATE TABLE frpm ("{new}" INTEGER, `Free Meal Count (K-12)` REAL)')
        conn.execute("INSERT INTO frpm VALUES (3, 1.5)")
        got = conn.execute(f"SELECT `{new}` * `Free Meal Count (K-12)` FROM frpm").fetchall()
    assert got == [(4.5,)]


def test_a_dataset_job_over_bird_rewrites_sql_evidence_and_descriptions(tmp_path: Path) -> None:
    from service_fakes import running_app

    from service.client import Client, ServiceError
    from service.settings import ServiceSettings

    entry = next(e for e in _read(TABLES) if e["db_id"] == "debit_card_specializing")
    records = [r for r in _read(QUESTIONS) if r["db_id"] == "debit_card_specializing"][:4]
    records.append({"db_id": "debit_card_specializing", "question": "no SQL"})
    folder = BIRD / "dev_databases" / "debit_card_specializing" / "database_description"
    descriptions = {
        "debit_card_specializing": {
            p.stem: list(csv.DictReader(p.open(encoding="utf-8"))) for p in folder.glob("*.csv")
        }
    }
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        job = cta.submit_dataset(
            [entry], records, kinds=["rpl"], seeds=[0], format="bird", descriptions=descriptions
        )
        job.wait(poll_interval=0.05, timeout=60)
        items = list(job.results())
        with pytest.raises(ServiceError) as refused:
            cta.submit_dataset([entry], records, kinds=["flatten"], format="bird")
    assert refused.value.problem == "unsupported_kind"
    assert [(i.table_id, i.status) for i in items] == [
        ("debit_card_specializing", "done"),
        (None, "failed"),
    ]
    assert items[1].error is not None and "SQL" in items[1].error.message
    result = items[0].dataset_result
    assert result is not None and len(result.questions["rpl_s0"]) == 4
    for record in result.questions["rpl_s0"]:
        original = records[record["source_index"]]
        mapping = next(
            m
            for m in result.mappings
            if m.id == f"debit_card_specializing:{record['source_index']}"
        )
        assert record["SQL"] == mapping.sql and record["SQL"] != original["SQL"]
        evidence = record["evidence"]  # the stand-in's names hold the old ones: drop them
        for new in (
            n
            for m in (mapping.mapping, mapping.sql_mapping)
            for t in m.values()
            for n in t.values()
        ):
            evidence = evidence.replace(new, " ")
        for old in (o for t in mapping.sql_mapping.values() for o in t):
            assert not re.search(rf"(?<![\w`]){re.escape(old)}(?![\w`])", evidence)
        assert evidence != original["evidence"]
        described = result.descriptions[record["db_id"]]
        for table, renames in mapping.sql_mapping.items():
            names = [r["original_column_name"] for r in described[table]]
            assert set(renames.values()) <= set(names) and not set(renames) & set(names)


def test_the_fixture_is_what_its_metadata_makes() -> None:
    from cta.formats.bird import bird_from_metadata, read_descriptions

    entries, descriptions = bird_from_metadata(STATISTICS)
    assert entries == _read(TABLES)
    for entry in entries:
        folder = BIRD / "dev_databases" / entry["db_id"] / "database_description"
        assert read_descriptions(folder, entry) == descriptions[entry["db_id"]]
    assert "CC BY-SA 4.0" in (BIRD / "README.md").read_text()
    assert "ShareAlike 4.0" in (BIRD / "LICENSE").read_text()
