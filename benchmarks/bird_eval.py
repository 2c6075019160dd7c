"""``cta eval`` on BIRD: the mini-dev's 500 questions, perturbed, scored as BIRD scores.

From a git mirror of ``bird-bench/mini_dev`` (BIRD's mini-dev, CC BY-SA 4.0), in a temporary
folder:

1. the BIRD input :func:`benchmarks.bird.build_input` builds (500 questions, schemas and
   descriptions; BIRD's ``.sqlite`` files are not in the mirror, so the databases are
   synthesised from the column statistics, seed 0);
2. binding — the share of the 500 gold queries bound to their schema
   (:func:`benchmarks.bird.bind_report`), and a rewrite stress test of BIRD's dialect: every
   column a gold query mentions renamed to a name that needs quoting (``Currency (x) 2``), and
   every table that the query joins given an added column named like another table's
   mentioned column (so unqualified names must be qualified); each rewrite run against the
   original on databases synthesised for it, results compared;
3. ``cta dataset perturb --format bird`` (RPL and ADD, seed 0; names made from each column's
   own — :func:`benchmarks.bird.names_proposer` — since only the scoring is measured here);
4. ``cta eval`` with the gold SQL as predictions, in BIRD's format (``{"0": "SQL\\t-----
   bird -----\\tdb_id"}``), on every set: EX must be 1.0 everywhere;
5. ``cta eval`` with a real model's mini-dev predictions from the mirror (``--predictions``,
   default GPT-4's, ``llm/exp_result/sql_output_kg/predict_mini_dev_gpt-4_sqlite.json``), one
   file for the original set: pre-perturbation EX on the synthesised databases, per
   difficulty, and the predictions that do not execute.

Run: ``nice .venv/bin/python benchmarks/bird_eval.py [--mirror PATH] [--predictions PATH_IN_MIRROR]
[--out benchmarks/results/bird_eval]`` → ``PREFIX.json`` and ``PREFIX.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bird import MIRROR, bind_report, build_input, git_show, names_proposer  # noqa: E402

RESULTS = Path(__file__).parent / "results"
PREDICTIONS = "llm/exp_result/sql_output_kg/predict_mini_dev_gpt-4_sqlite.json"
PREDICTIONS_COMMIT = "HEAD"


def rewrite_stress(tables: Path, questions: Path, work: Path) -> dict[str, Any]:
    """Every gold query through two adversarial schema edits, each rewrite checked by
    execution on databases synthesised for it (see the module docstring)."""
    from cta.datasets import bird_inputs
    from cta.formats.bird import load_bird
    from cta.sql.binding import SqlRewriteError, bind_query
    from cta.sql.database import (
        NewColumn,
        SchemaPerturbation,
        create_database,
        perturb_schema,
        synthesise_rows,
    )
    from cta.sql.rewrite import rewrite_query
    from cta.sql.verify import ExecutionError, execute, has_top_level_order, same_results
    from cta.table import ColumnType

    _, databases = bird_inputs(load_bird(tables, questions))
    schemas = {db_id: db.schema for db_id, db in databases.items()}
    records = json.loads(questions.read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for edit in ("rename", "capture"):
        counts: Counter[str] = Counter()
        failures = []
        for n, record in enumerate(records):
            schema = schemas[record["db_id"]]
            sql = record["SQL"]
            try:
                bound = bind_query(sql, schema)
            except SqlRewriteError as exc:
                counts["unbound"] += 1
                failures.append({"question_id": record["question_id"], "problem": str(exc)})
                continue
            used = {r.table for r in bound.columns}
            changes: dict[str, tuple[NewColumn, ...]] = {}
            for table in schema.tables:
                if table.name not in used:
                    continue
                mentioned = {r.column for r in bound.columns if r.table == table.name}
                columns = [
                    NewColumn(
                        f"{c.name} (x) 2" if edit == "rename" and c.name in mentioned else c.name,
                        c.type,
                        source=c.name,
                    )
                    for c in table.columns
                ]
                if edit == "capture":
                    others = [r.column for r in bound.columns if r.table != table.name]
                    columns += [
                        NewColumn(name, ColumnType.TEXT)
                        for name in dict.fromkeys(others)
                        if table.find(name) is None
                    ]
                changes[table.name] = tuple(columns)
            perturbation = SchemaPerturbation(changes)
            new_schema = perturb_schema(schema, perturbation)
            try:
                rewritten = rewrite_query(
                    sql, schema, new_schema, perturbation.column_map(schema), quote="`"
                )
            except SqlRewriteError as exc:
                counts["not_rewritten"] += 1
                failures.append({"question_id": record["question_id"], "problem": str(exc)})
                continue
            rows = synthesise_rows(schema, 0, bound.literals, bound.links)
            new_rows = {}
            for table in new_schema.tables:
                old = schema.table(table.name)
                sources = {c.name: c.source for c in changes.get(table.name, ())}
                index = {c.name: i for i, c in enumerate(old.columns)}
                new_rows[table.name] = [
                    tuple(
                        row[index[sources.get(c.name, c.name) or ""]]
                        if (sources.get(c.name, c.name) or "") in index
                        else None
                        for c in table.columns
                    )
                    for row in rows.get(old.name, [])
                ]
            before, after = work / f"{edit}_{n}_a.sqlite", work / f"{edit}_{n}_b.sqlite"
            create_database(before, schema, rows)
            create_database(after, new_schema, new_rows)
            try:
                expected = execute(before, sql, 20)
                got = execute(after, rewritten, 20)
            except ExecutionError as exc:
                counts["fails"] += 1
                failures.append({"question_id": record["question_id"], "problem": str(exc)})
                continue
            finally:
                before.unlink(missing_ok=True)
                after.unlink(missing_ok=True)
            if same_results(expected, got, has_top_level_order(sql)):
                counts["same_results"] += 1
                counts["non_empty"] += bool(expected)
            else:
                counts["different_results"] += 1
                failures.append({"question_id": record["question_id"], "problem": "results differ"})
        out[edit] = {"questions": len(records), **dict(counts), "failures": failures}
    return out


def predictions_bound(mirror: Path, out: Path, revision: str) -> dict[str, Any]:
    """BIRD-style SQL beyond the gold: every prediction of every SQLite prediction file of the
    mirror (``llm/exp_result``) that SQLite runs on the synthesised original database, and
    the share of those the binder binds (a query SQLite refuses is the model's error)."""
    from cta.evaluation import load_directory
    from cta.formats.spider import sql_schema
    from cta.sql.binding import SqlRewriteError, bind_query
    from cta.sql.verify import ExecutionError, execute

    directory = load_directory(out, only=[])
    schemas: dict[str, Any] = {}
    git_dir = mirror if (mirror / "HEAD").is_file() and not (mirror / ".git").exists() else None
    command = ["git", "--git-dir", str(git_dir)] if git_dir else ["git", "-C", str(mirror)]
    listing = subprocess.run(
        [*command, "ls-tree", "-r", "--name-only", revision, "llm/exp_result"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    files = sorted(f for f in listing.split() if "sqlite" in f.lower())
    counts: Counter[str] = Counter()
    unbound = []
    for name in files:
        data = json.loads(git_show(mirror, revision, name))
        for value in data.values():
            if not isinstance(value, str):
                continue
            sql, _, db_id = value.partition("\t----- bird -----\t")
            db_id = db_id.strip()
            if db_id not in directory.entries:
                continue
            try:
                execute(directory.database(db_id), sql, 5)
            except ExecutionError:
                counts["refused_by_sqlite"] += 1
                continue
            counts["run_by_sqlite"] += 1
            if db_id not in schemas:
                schemas[db_id] = sql_schema(directory.schema(db_id))
            try:
                bind_query(sql, schemas[db_id])
            except SqlRewriteError as exc:
                unbound.append({"file": name, "problem": str(exc)[:200], "sql": sql[:300]})
                continue
            counts["bound"] += 1
    return {"files": len(files), **dict(counts), "unbound": unbound}


def _commit(mirror: Path, revision: str) -> str:
    """The commit ``revision`` names in the mirror."""
    git_dir = mirror if (mirror / "HEAD").is_file() and not (mirror / ".git").exists() else None
    command = ["git", "--git-dir", str(git_dir)] if git_dir else ["git", "-C", str(mirror)]
    done = subprocess.run([*command, "rev-parse", revision], check=True, capture_output=True)
    return done.stdout.decode().strip()


def _manifest(out: Path, run: Any, tables: Path, questions: Path, statistics: Path) -> None:
    """The manifest ``cta dataset perturb`` writes (what the databases are), for this run."""
    from cta.provenance import build_manifest, write_manifest
    from cta.settings import Settings

    manifest = build_manifest(
        "cta dataset perturb",
        Settings(),
        {"tables": tables, "questions": questions, "statistics": statistics},
        seeds=[0],
        uses_models=False,
        extra={
            "options": {"format": "bird", "kinds": ["rpl", "add"]},
            "databases": {
                "synthesised": run.synthesised,
                "synthesis_seed": 0,
                "synthesis_seeds": run.synthesis_seeds or [0],
                "note": run.databases,
            },
        },
    )
    write_manifest(out, manifest, [f for f in run.files if "/" not in f])


def _gold_predictions(out: Path, folder: Path) -> list[str]:
    """Every set's gold SQL as BIRD-format predictions (``<set>.json``); the set stems."""
    folder.mkdir(parents=True, exist_ok=True)
    stems = []
    for path in sorted(out.glob("dev_*.json")):
        if path.name == "dev_tables.json":
            continue
        records = json.loads(path.read_text(encoding="utf-8"))
        predictions = {
            str(i): f"{r['SQL']}\t----- bird -----\t{r['db_id']}" for i, r in enumerate(records)
        }
        (folder / path.name).write_text(json.dumps(predictions, indent=1), encoding="utf-8")
        stems.append(path.stem)
    return stems


def _scored(report: Any, items: Sequence[Any]) -> dict[str, Any]:
    statuses = Counter(it.status for it in items)
    return {
        "convention": report.convention,
        "databases": report.databases,
        "original": {k: v.model_dump() for k, v in report.original.items()},
        "original_by_difficulty": {
            k: {d: s.model_dump() for d, s in v.items()}
            for k, v in report.original_by_difficulty.items()
        },
        "sets": {
            r.set: {
                "n": r.n,
                "pre_ex": r.pre.ex,
                "post_ex": r.post.ex,
                "post_by_difficulty": {d: s.ex for d, s in r.post_by_difficulty.items()},
            }
            for r in report.sets
        },
        "not_evaluated": report.not_evaluated,
        "statuses": dict(statuses),
    }


def run(mirror: Path, predictions: str, prefix: Path) -> dict[str, Any]:
    from cta.datasets import perturb_dataset
    from cta.evaluation import FilePredictions, evaluate, load_directory

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cta-bird-eval-") as tmp:
        data, out = Path(tmp) / "input", Path(tmp) / "out"
        info = build_input(mirror, data)
        tables, questions = data / "dev_tables.json", data / "dev.json"
        statistics = data / "dev_tables_cleaned.json"
        binding = bind_report(tables, questions)
        stress_dir = Path(tmp) / "stress"
        stress_dir.mkdir()
        stress = rewrite_stress(tables, questions, stress_dir)
        result = perturb_dataset(
            "bird", tables, questions, out, names_proposer, ["rpl", "add"], [0],
            statistics=statistics,
        )  # fmt: skip
        _manifest(out, result, tables, questions, statistics)
        directory = load_directory(out)
        gold_folder = Path(tmp) / "gold_predictions"
        _gold_predictions(out, gold_folder)
        gold_report, gold_items = evaluate(
            directory, FilePredictions(gold_folder), model_name="gold"
        )
        model_file = Path(tmp) / Path(predictions).name
        model_file.write_bytes(git_show(mirror, PREDICTIONS_COMMIT, predictions))
        commit = _commit(mirror, PREDICTIONS_COMMIT)
        model_sql = predictions_bound(mirror, out, PREDICTIONS_COMMIT)
        model_dir = load_directory(out, only=[])
        model_report, model_items = evaluate(
            model_dir, FilePredictions(model_file), model_name=Path(predictions).stem
        )
        not_executing = [
            {"question_id": it.question_id, "message": it.message[:200]}
            for it in model_items
            if it.status == "pred_error"
        ]
    report = {
        "mirror": str(mirror),
        "questions": info["questions"],
        "databases": info["databases"],
        "binding": {
            "bound": binding["bound"],
            "questions": binding["questions"],
            "share": binding["share"],
            "unbound": binding["unbound"],
        },
        "rewrite_stress": stress,
        "model_sql_bound": model_sql,
        "gold_as_predictions": _scored(gold_report, gold_items),
        "model": {
            "predictions": f"{predictions} (mirror commit {commit[:7]})",
            **_scored(model_report, model_items),
            "not_executing": len(not_executing),
            "not_executing_items": not_executing,
        },
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "seconds": round(time.perf_counter() - started, 1),
    }
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    Path(f"{prefix}.md").write_text(markdown(report), encoding="utf-8")
    return report


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def markdown(report: dict[str, Any]) -> str:
    binding = report["binding"]
    gold = report["gold_as_predictions"]
    model = report["model"]
    stress = report["rewrite_stress"]
    lines = [
        "# `cta eval` on BIRD's mini-dev",
        "",
        f"{report['questions']} questions over {len(report['databases'])} databases, from "
        f"`{report['mirror']}`. **Databases: {gold['databases'] or 'as given'}.** EX as BIRD "
        "computes it (result sets compared as sets).",
        "",
        "## Binding",
        "",
        f"Gold SQL bound to its schema: {binding['bound']} of {binding['questions']} "
        f"({_pct(binding['share'])} %)"
        + (
            "; unbound: "
            + "; ".join(f"{u['question_id']} ({u['problem']})" for u in binding["unbound"])
            if binding["unbound"]
            else "."
        ),
        "",
        "Rewrite stress test (each rewrite run against the original on synthesised databases):",
        "",
        "| edit | questions | same results | of them non-empty | not rewritten | failing |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for edit, label in (
        ("rename", "every mentioned column renamed to a name that needs quoting"),
        ("capture", "an added column named like another table's mentioned column"),
    ):
        s = stress[edit]
        failing = s.get("fails", 0) + s.get("different_results", 0)
        lines.append(
            f"| {label} | {s['questions']} | {s.get('same_results', 0)} | "
            f"{s.get('non_empty', 0)} | {s.get('not_rewritten', 0) + s.get('unbound', 0)} | "
            f"{failing} |"
        )
    m = report["model_sql_bound"]
    lines += [
        "",
        f"Model SQL (every prediction of the mirror's {m['files']} SQLite prediction files that "
        f"SQLite runs on the synthesised databases): {m.get('bound', 0)} of "
        f"{m.get('run_by_sqlite', 0)} bound"
        + ("; unbound: " + "; ".join(u["problem"] for u in m["unbound"]) if m["unbound"] else "."),
        "",
        "## Gold SQL as predictions (BIRD's prediction format)",
        "",
        "| set | questions | EX |",
        "|---|---:|---:|",
    ]
    for name, scores in gold["original"].items():
        lines.append(f"| {name}_original | {scores['n']} | {_pct(scores['ex'])} |")
    for stem, s in gold["sets"].items():
        lines.append(f"| {stem} (post) | {s['n']} | {_pct(s['post_ex'])} |")
    lines += [
        "",
        f"## A real model: `{model['predictions']}`",
        "",
        "Pre-perturbation EX (the original questions) on the synthesised databases — not "
        "comparable with BIRD's published figures, which run on BIRD's own databases.",
        "",
        "| | questions | EX | " + " | ".join(model["original_by_difficulty"].get("dev", {})) + " |",
        "|---|---:|---:|" + "---:|" * len(model["original_by_difficulty"].get("dev", {})),
    ]
    for name, scores in model["original"].items():
        by = model["original_by_difficulty"].get(name, {})
        cells = " | ".join(f"{_pct(s['ex'])} ({s['n']})" for s in by.values())
        lines.append(f"| {name} original | {scores['n']} | {_pct(scores['ex'])} | {cells} |")
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(model["statuses"].items()))
    lines += [
        "",
        f"Predictions that do not execute: {model['not_executing']} (statuses: {statuses}).",
        "",
        f"{report['machine']}; {report['seconds']} s.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="git mirror of mini_dev")
    parser.add_argument(
        "--predictions", default=PREDICTIONS, help="a model's predictions, path in the mirror"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "bird_eval", help="output prefix")
    args = parser.parse_args(argv)
    report = run(args.mirror, args.predictions, args.out)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
