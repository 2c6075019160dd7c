"""BIRD in, perturbed BIRD out: the mini-dev's 500 questions through ``--format bird``.

Two actions over a git mirror of ``bird-bench/mini_dev`` (BIRD's mini-dev, CC BY-SA 4.0):

``input`` — build a BIRD input folder from the mirror: ``dev.json`` (the 500 questions of
``llm/data/mini_dev_sqlite.json`` at commit ``f2f6603``, or those of ``--databases``),
``dev_tables.json`` and ``dev_databases/<db>/database_description/<table>.csv`` made from the
dev databases' metadata (``bird_evaluation/data/dev_tables_cleaned.json`` at ``db4f2ac``:
natural names, descriptions, value descriptions, keys) by
:func:`cta.formats.bird.bird_from_metadata`, and ``dev_tables_cleaned.json`` itself (the
column statistics synthesis reads). BIRD's ``.sqlite`` files are not in the mirror: the
databases are synthesised. ``--questions N`` keeps the first N questions of each database
(the test fixture: ``tests/data/bird``).

``run`` — build the whole input in a temporary folder and run ``cta dataset perturb --format
bird --verify`` on it through its library entry point, with the real pipeline (``cta
setup``'s index and the shipped judge) or, with ``--proposer names``, a deterministic
stand-in (every column renamed/extended by a name made from its own), and report:

- gold SQL bound (share of the 500) and every unbound question with its reason;
- per kind: items, items rewritten, checks executed on every synthesis seed, the share with
  equal result sets, every failure with its reason;
- evidence: RPL items whose evidence mentions a renamed column, and the share rewritten so
  that it mentions none (the bar: 100 %);
- the RPL and ADD names drawn for one table per database, for a person to read.

The mirror is ``--mirror`` (default: ``.mirror/bird-bench+mini_dev/repo`` beside the
checkout's folder). Run: ``nice .venv/bin/python -m benchmarks.bird input --out DIR
[--databases a,b] [--questions N] [--readme]`` or ``nice .venv/bin/python -m benchmarks.bird
run [--seeds 2] [--verify-seeds 3] [--kinds rpl,add,…] [--proposer pipeline|names] [--out
benchmarks/results/bird] [--names benchmarks/results/bird_names.md]`` → ``PREFIX.json`` and
``PREFIX.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# the git mirror of bird-bench/mini_dev beside the checkout's folder (``--mirror`` for another)
MIRROR = Path(__file__).resolve().parents[2] / ".mirror" / "bird-bench+mini_dev" / "repo"
QUESTIONS = ("f2f6603", "llm/data/mini_dev_sqlite.json")
METADATA = ("db4f2ac", "bird_evaluation/data/dev_tables_cleaned.json")
RESULTS = Path(__file__).parent / "results"
LICENCE = """BIRD mini-dev (https://github.com/bird-bench/mini_dev), by the BIRD team
(Li et al., "Can LLM Already Serve as A Database Interface? A BIg Bench for Large-Scale
Database Grounded Text-to-SQLs", NeurIPS 2023), is released under the Creative Commons
Attribution-ShareAlike 4.0 International licence (CC BY-SA 4.0):
https://creativecommons.org/licenses/by-sa/4.0/

The files in this folder are derived from it (see README.md: what was taken, from which
commit, and how it was transformed) and are shared under the same licence.
"""


def git_show(mirror: Path, commit: str, path: str) -> bytes:
    """A file of the mirror at a commit (``git show``)."""
    git_dir = mirror if (mirror / "HEAD").is_file() and not (mirror / ".git").exists() else None
    command = ["git", "--git-dir", str(git_dir)] if git_dir else ["git", "-C", str(mirror)]
    return subprocess.run(
        [*command, "show", f"{commit}:{path}"], check=True, capture_output=True
    ).stdout


def build_input(
    mirror: Path,
    out: Path,
    databases: Sequence[str] | None = None,
    per_database: int | None = None,
) -> dict[str, Any]:
    """Write a BIRD input folder from the mirror (see the module docstring); what it holds."""
    from cta.formats.bird import bird_from_metadata, write_descriptions
    from cta.formats.spider import write_json

    questions = json.loads(git_show(mirror, *QUESTIONS))
    metadata = json.loads(git_show(mirror, *METADATA))
    wanted = list(databases) if databases else [db["name"] for db in metadata]
    kept: list[dict[str, Any]] = []
    count: Counter[str] = Counter()
    for record in questions:
        db_id = record["db_id"]
        if db_id in wanted and (per_database is None or count[db_id] < per_database):
            kept.append(record)
            count[db_id] += 1
    entries, descriptions = bird_from_metadata(metadata, wanted)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "dev.json", kept)
    write_json(out / "dev_tables.json", entries)
    for db_id, rows in descriptions.items():
        write_descriptions(out / "dev_databases", db_id, rows)
    write_json(out / "dev_tables_cleaned.json", [db for db in metadata if db["name"] in wanted])
    return {"questions": len(kept), "databases": wanted, "per_database": dict(count)}


def names_proposer(tables: Sequence[Any]) -> list[Any]:
    """A deterministic stand-in for the pipeline: every target column gets one RPL name and
    one ADD name made from its own (``client segment`` → ``client segment value`` /
    ``client segment note``), so every mentioned column is renamed or extended."""
    from cta.results import ColumnPerturbations, Decision, PerturbationResult

    def judged(column: Any) -> ColumnPerturbations:
        rpl = Decision(
            name=f"{column.name} value", type=column.type, e1=1, e2=1, source="dictionary"
        )
        add = Decision(name=f"{column.name} note", type=column.type, e1=0, e2=0, source="retriever")
        return ColumnPerturbations(column=column.name, replace=[rpl], add=[add])

    return [
        PerturbationResult(
            table_id=table.id,
            primary_entity=table.name or "",
            entity_source="given",
            columns=[judged(c) for c in table.targets()],
        )
        for table in tables
    ]


def _fixture_readme(info: dict[str, Any], command: str) -> str:
    dbs = ", ".join(
        f"`{d}` ({info['per_database'].get(d, 0)} questions)" for d in info["databases"]
    )
    return f"""# BIRD fixture (derived from BIRD's mini-dev, CC BY-SA 4.0)

A small BIRD input for the tests of `--format bird`: {dbs}.

- `dev.json` — those databases' first questions of the mini-dev's
  `llm/data/mini_dev_sqlite.json` (commit `{QUESTIONS[0]}`), every field kept
  (`question_id`, `db_id`, `question`, `evidence`, `SQL`, `difficulty`).
- `dev_tables.json` and `dev_databases/<db>/database_description/<table>.csv` — BIRD's schema
  file and description CSVs, which the mirror lacks, made from the dev databases' metadata
  (`bird_evaluation/data/dev_tables_cleaned.json`, commit `{METADATA[0]}`) by
  `cta.formats.bird.bird_from_metadata`: a column's natural name is its `original_name`
  (its identifier when it has none, as BIRD's own `dev_tables.json` does), its description
  and value description as given, foreign keys from the many-to-one links.
- `dev_tables_cleaned.json` — that metadata for these databases: the column statistics
  (sample values, ranges, null and unique fractions) databases are synthesised from.

There are no `.sqlite` files: BIRD's databases are not in the mirror, so every database is
synthesised. Made by

```bash
{command}
```

Licence: CC BY-SA 4.0, as BIRD's mini-dev (see `LICENSE`).
"""


def _input(args: argparse.Namespace) -> int:
    databases = args.databases.split(",") if args.databases else None
    info = build_input(Path(args.mirror), Path(args.out), databases, args.questions)
    if args.readme:
        command = "python -m benchmarks.bird input " + " ".join(sys.argv[2:])
        (Path(args.out) / "README.md").write_text(_fixture_readme(info, command), encoding="utf-8")
        (Path(args.out) / "LICENSE").write_text(LICENCE, encoding="utf-8")
    print(json.dumps(info))
    return 0


# a quoted value or phrase (``= 'EUR'``, ``'Offers a magnet program'``): not a column's name
_VALUE = re.compile(r"(?<![\w'])'(?:[^'\n]|'')*'(?![\w])")


def _names_in(
    text: str, identifiers: set[str], naturals: set[str], new_names: Sequence[str] = ()
) -> set[str]:
    """The identifiers (exact case) and natural names (any case) ``text`` names as words,
    values compared in it and the ``new_names`` it holds (``Date value`` holds ``Date``)
    left out."""
    text = _VALUE.sub(" ", text)
    # a backticked identifier is one name: only an old one counts (`Examination Date` ≠ Date)
    text = re.sub(r"`([^`]*)`", lambda m: m[0] if m[1] in identifiers else " ", text)
    for new in sorted(new_names, key=len, reverse=True):
        words = r"\s+".join(re.escape(w) for w in new.split())
        text = re.sub(rf"`?(?<![\w]){words}(?![\w])`?", " ", text, flags=re.IGNORECASE)
    found = set()
    for name in identifiers:
        if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text):
            found.add(name)
    for name in naturals:
        words = r"\s+".join(re.escape(w) for w in name.split())
        if words and re.search(rf"(?<![\w]){words}(?![\w])", text, re.IGNORECASE):
            found.add(name)
    return found


def _schema_names(entry: dict[str, Any]) -> set[str]:
    names = {str(c) for _, c in entry["column_names_original"][1:]}
    names |= {str(c).casefold() for _, c in entry["column_names"][1:]}
    return names


def evidence_coverage(out: Path, name: str, seeds: Sequence[int]) -> dict[str, Any]:
    """RPL items whose evidence names a renamed column (its old identifier or natural name),
    and those whose rewritten evidence still does — a name left is a leak unless the
    perturbed database still has a column of that name."""
    originals = {
        r["source_index"]: r for r in json.loads((out / f"{name}_original.json").read_text())
    }
    entries = {e["db_id"]: e for e in json.loads((out / "dev_tables.json").read_text())}
    mappings = [json.loads(line) for line in (out / "mappings.jsonl").read_text().splitlines()]
    by_key = {(m["id"], m["seed"]): m for m in mappings if m["kind"] == "rpl" and m["sql"]}
    mentioning = rewritten = 0
    leaks: list[dict[str, Any]] = []
    for seed in seeds:
        for record in json.loads((out / f"{name}_rpl_s{seed}.json").read_text()):
            item = by_key[(f"{name}:{record['source_index']}", seed)]
            identifiers = {old for table in item["sql_mapping"].values() for old in table}
            naturals = {old for table in item["mapping"].values() for old in table}
            before = originals[record["source_index"]].get("evidence") or ""
            if not _names_in(before, identifiers, naturals):
                continue
            mentioning += 1
            new_names = [
                n for m in ("sql_mapping", "mapping") for t in item[m].values() for n in t.values()
            ]
            still = _names_in(record.get("evidence") or "", identifiers, naturals, new_names)
            alive = _schema_names(entries[record["db_id"]])
            left = {n for n in still if n not in alive and n.casefold() not in alive}
            if left:
                leaks.append(
                    {
                        "id": item["id"],
                        "seed": seed,
                        "left": sorted(left),
                        "evidence": record["evidence"],
                    }
                )
            else:
                rewritten += 1
    return {
        "rpl_items_mentioning_a_renamed_column": mentioning,
        "rewritten_to_mention_none": rewritten,
        "share": round(rewritten / mentioning, 6) if mentioning else 1.0,
        "leaks": leaks,
    }


def bind_report(tables: Path, questions: Path) -> dict[str, Any]:
    """Gold SQL bound to its schema: the share, and every unbound question with its reason."""
    from cta.datasets import bird_inputs
    from cta.datasets.base import bind_examples
    from cta.formats.bird import load_bird
    from cta.sql.rewrite import SqlRewriteError

    dataset = load_bird(tables, questions)
    examples, databases = bird_inputs(dataset)
    bound = bind_examples(examples, databases)
    failed = [
        {
            "id": ex.id,
            "question_id": dataset.records[i].get("question_id"),
            "problem": str(bound[ex.id]),
        }
        for i, ex in enumerate(examples)
        if isinstance(bound[ex.id], SqlRewriteError)
    ]
    n = len(examples)
    return {
        "questions": n,
        "bound": n - len(failed),
        "share": round((n - len(failed)) / n, 6),
        "unbound": failed,
    }


def kind_report(out: Path) -> dict[str, Any]:
    """Per kind: items, rewritten, on an edited database, SQL changed; checks per status."""
    mappings = [json.loads(line) for line in (out / "mappings.jsonl").read_text().splitlines()]
    verification = json.loads((out / "verification.json").read_text())
    kinds: dict[str, dict[str, Any]] = {}
    for m in mappings:
        k = kinds.setdefault(m["kind"], Counter())
        k["items"] += 1
        k["rewritten"] += m["sql"] is not None
        k["edited_database"] += m["perturbed_db_id"] != m["db_id"]
    out_kinds: dict[str, Any] = {}
    for kind, counts in kinds.items():
        records = [r for r in verification["records"] if r["kind"] == kind]
        executable = [r for r in records if r["status"] not in ("original_error", "parse_error")]
        ok = sum(1 for r in executable if r["status"] == "ok")
        out_kinds[kind] = {
            **counts,
            "checks": len(records),
            "by_status": dict(Counter(r["status"] for r in records)),
            "checks_by_synthesis_seed": dict(Counter(str(r["synthesis_seed"]) for r in records)),
            "executed_rewrites": len(executable),
            "equal_result_sets": ok,
            "equal_share": round(ok / len(executable), 6) if executable else 1.0,
            "nonempty_share": round(
                sum(1 for r in executable if r["rows"] > 0) / len(executable), 6
            )
            if executable
            else 0.0,
            "failures": [r for r in records if r["status"] not in ("ok", "original_error")][:50],
            "original_errors": sorted(
                {r["id"] for r in records if r["status"] == "original_error"}
            ),
        }
    return out_kinds


def _proposer(which: str, record: list[Any]) -> tuple[Any, Any]:
    """The proposer and the judge's equivalence rule; ``record`` gets the tables and results
    of its first call — RPL and ADD's, every table with the columns its gold SQL mentions
    as targets (the families ask afterwards)."""
    calls = [0]

    def keep(tables: Sequence[Any], found: list[Any]) -> list[Any]:
        if calls[0] == 0:
            record.extend(zip(tables, found, strict=True))
        calls[0] += 1
        return found

    if which == "names":

        def propose(tables: Sequence[Any]) -> list[Any]:
            return keep(tables, names_proposer(tables))

        return propose, lambda pairs: [True] * len(pairs)
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions
    from cta.settings import Settings

    pipeline = Pipeline.from_settings(Settings())

    def propose_real(tables: Sequence[Any]) -> list[Any]:
        return keep(tables, pipeline.perturb_many(tables, PerturbOptions(seed=0)))

    return propose_real, pipeline.equivalent


def names_for_reading(proposals: Sequence[tuple[Any, Any]]) -> list[dict[str, Any]]:
    """The RPL and ADD names proposed for one table per database: the table with the most
    columns the gold SQL mentions (the targets of the proposals)."""
    best: dict[str, tuple[Any, Any]] = {}
    for table, result in proposals:
        if "." not in (table.id or ""):
            continue  # a family's own request (the table of a database's table names)
        db = (table.id or "").split(".")[0]
        if db not in best or len(result.columns) > len(best[db][1].columns):
            best[db] = (table, result)
    out = []
    for db, (table, result) in sorted(best.items()):
        out.append(
            {
                "database": db,
                "table": table.name,
                "entity": result.primary_entity,
                "columns": [
                    {
                        "column": c.column,
                        "identifier": table.column(c.column).original_name,
                        "rpl": [d.name for d in c.replace],
                        "add": [d.name for d in c.add],
                    }
                    for c in result.columns
                ],
            }
        )
    return out


def _markdown(report: dict[str, Any]) -> str:
    b, e = report["binding"], report["evidence"]
    lines = [
        "# BIRD mini-dev through `--format bird`",
        "",
        f"`python -m benchmarks.bird run` — {report['questions']} questions over {len(report['databases'])} "
        f"databases (synthesised from the mini-dev's column statistics), kinds "
        f"{', '.join(report['kinds'])}, seeds {report['seeds']}, every check on synthesis seeds "
        f"{report['synthesis_seeds']}; proposer: {report['proposer']}; {report['seconds']} s "
        f"({report['machine']}).",
        "",
        f"- Gold SQL bound: **{b['bound']} / {b['questions']}** ({100 * b['share']:.1f} %).",
        f"- Evidence naming a renamed column, rewritten to name none: **{e['rewritten_to_mention_none']}"
        f" / {e['rpl_items_mentioning_a_renamed_column']}** RPL items ({100 * e['share']:.1f} %).",
        "",
        "| kind | items | rewritten | on an edited database | checks | executed rewrites | equal result sets | share | non-empty |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, k in report["kinds_report"].items():
        lines.append(
            f"| `{kind}` | {k['items']} | {k['rewritten']} | {k['edited_database']} | {k['checks']} | "
            f"{k['executed_rewrites']} | {k['equal_result_sets']} | {100 * k['equal_share']:.1f} % | "
            f"{100 * k['nonempty_share']:.1f} % |"
        )
    if b["unbound"]:
        lines += ["", "Unbound gold SQL:", ""]
        lines += [f"- `{u['question_id']}`: {u['problem']}" for u in b["unbound"]]
    failures = [f for k in report["kinds_report"].values() for f in k["failures"]]
    if failures:
        lines += ["", "Checks that failed:", ""]
        lines += [
            f"- {f['kind']} {f['id']} s{f['seed']} (synthesis seed {f['synthesis_seed']}): {f['status']} — {f['reason']}"
            for f in failures[:40]
        ]
    originals = sorted({i for k in report["kinds_report"].values() for i in k["original_errors"]})
    if originals:
        lines += [
            "",
            f"Gold queries SQLite refuses on the synthesised databases (nothing to compare): {', '.join(originals)}",
        ]
    if e["leaks"]:
        lines += ["", "Evidence still naming a renamed column:", ""]
        lines += [
            f"- {x['id']} s{x['seed']}: {', '.join(x['left'])} — {x['evidence']}"
            for x in e["leaks"][:40]
        ]
    return "\n".join(lines) + "\n"


def _names_markdown(names: Sequence[dict[str, Any]], proposer: str) -> str:
    lines = [
        "# RPL and ADD names on BIRD's tables",
        "",
        f"One table per mini-dev database (the one whose columns the gold SQL mentions most), "
        f"the names the {proposer} proposes for each mentioned column — what `--format bird` "
        "draws RPL and ADD from. A person's reading: `bird_names_reading.md`.",
    ]
    for t in names:
        lines += ["", f"## {t['database']} · `{t['table']}` (entity: {t['entity']})", ""]
        lines += ["| column (identifier) | RPL | ADD |", "|---|---|---|"]
        for c in t["columns"]:
            lines.append(
                f"| {c['column']} (`{c['identifier']}`) | {', '.join(c['rpl']) or '—'} | {', '.join(c['add']) or '—'} |"
            )
    return "\n".join(lines) + "\n"


def _run(args: argparse.Namespace) -> int:
    from cta.datasets import perturb_dataset

    kinds = args.kinds.split(",")
    seeds = list(range(args.seeds))
    started = time.perf_counter()
    proposals: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="cta-bird-bench-") as tmp:
        data, out = Path(tmp) / "input", Path(tmp) / "out"
        info = build_input(Path(args.mirror), data)
        propose, judge = _proposer(args.proposer, proposals)
        perturb_dataset(
            "bird", data / "dev_tables.json", data / "dev.json", out, propose, kinds, seeds,
            check_execution=True, statistics=data / "dev_tables_cleaned.json",
            verify_seeds=args.verify_seeds, judge=judge,
            progress=lambda m: print(f"bird: {m}", file=sys.stderr, flush=True),
        )  # fmt: skip
        report = {
            "questions": info["questions"],
            "databases": info["databases"],
            "kinds": kinds,
            "seeds": seeds,
            "synthesis_seeds": list(range(args.verify_seeds)),
            "proposer": "the CTA pipeline (cta setup's index, the shipped judge)"
            if args.proposer == "pipeline"
            else "names made from each column's own (deterministic)",
            "binding": bind_report(data / "dev_tables.json", data / "dev.json"),
            "kinds_report": kind_report(out),
            "evidence": evidence_coverage(out, "dev", seeds) if "rpl" in kinds else {},
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        }
        report["seconds"] = round(time.perf_counter() - started, 1)
        names = names_for_reading(proposals)
    prefix = Path(args.out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    Path(f"{prefix}.md").write_text(_markdown(report), encoding="utf-8")
    if args.names:
        Path(args.names).write_text(_names_markdown(names, report["proposer"]), encoding="utf-8")
        Path(args.names).with_suffix(".json").write_text(json.dumps(names, indent=1) + "\n")
    print(_markdown(report))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("input", help="build a BIRD input folder from the mirror")
    build.add_argument("--mirror", default=str(MIRROR), help="git mirror of bird-bench/mini_dev")
    build.add_argument("--out", required=True)
    build.add_argument("--databases", help="comma-separated db_ids (default: all 11)")
    build.add_argument("--questions", type=int, help="the first N questions of each database")
    build.add_argument("--readme", action="store_true", help="write README.md and LICENSE")
    build.set_defaults(func=_input)
    run = actions.add_parser("run", help="the 500 questions through --format bird, verified")
    run.add_argument("--mirror", default=str(MIRROR), help="git mirror of bird-bench/mini_dev")
    run.add_argument("--kinds", default="rpl,add", help="comma-separated kinds")
    run.add_argument("--seeds", type=int, default=2)
    run.add_argument("--verify-seeds", type=int, default=3)
    run.add_argument("--proposer", choices=("pipeline", "names"), default="pipeline")
    run.add_argument("--out", default=str(RESULTS / "bird"), help="PREFIX of .json and .md")
    run.add_argument("--names", help="write the names for reading here (.md and .json)")
    run.set_defaults(func=_run)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
