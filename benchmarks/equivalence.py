"""Same inputs through two checkouts of the code: a refactor's A/B, output by output.

``run`` drives one checkout (its packages first on ``PYTHONPATH``, ``PYTHONHASHSEED=0``, the
``CTA_HOME`` of the environment, so both sides share the built artefacts) over a fixed set of
inputs and writes every output under one folder:

* ``perturb/<name>.json`` and ``candidates/<name>.json``: ``cta perturb --json --samples 2
  --seed 0`` and ``cta candidates --seed 0`` on the three showcase tables and six WTQ tables;
* ``spider/``: ``cta dataset perturb --format spider --kind all --seeds 2 --verify`` over the
  Spider dev questions of seven databases (their schemas and questions only; the databases
  are synthesised);
* ``wtq/``: ``cta dataset perturb --format wtq --seeds 2`` over eight WTQ tables with two
  generated questions each;
* ``wikisql/``: ``cta dataset perturb --format wikisql --seeds 2 --verify`` over two WTQ tables
  written as WikiSQL tables, two generated questions each;
* ``training.json``: the shipped recipe's training rows (``build_training_data`` of
  ``models/judge.recipe.json``), hashed, with the counts the card records;
* ``inputs/``: the files made for the dataset runs; ``logs/``: each command's stderr and
  status (compared too: a command that fails on one side shows there).

``compare`` diffs two such folders file by file, reading every ``manifest.json`` and every
dataset command's printed summary (``logs/<format>.out``) with the checkout's and the output
folder's paths written as ``<checkout>`` and ``<out>`` and without the fields that name the
commit or time the run (:data:`VOLATILE`), and prints a table: one row per part, then every
file that differs.

Usage (``--data``: the shared data folder, default :data:`benchmarks.harness.DEFAULT_DATA`)::

    git worktree add /tmp/ab/before <commit>
    python -m benchmarks.equivalence run --checkout /tmp/ab/before --out /tmp/ab/before-out
    python -m benchmarks.equivalence run --checkout . --out /tmp/ab/after-out
    python -m benchmarks.equivalence compare /tmp/ab/before-out /tmp/ab/after-out
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import DEFAULT_DATA

PARTS = ("perturb", "candidates", "spider", "wtq", "wikisql", "training")
EXAMPLES = ("books", "employees", "football_matches")
# WTQ tables given to ``cta perturb`` / ``cta candidates`` (relative to the data's wtq/csv)
WTQ_PERTURB = tuple(f"204-csv/{n}.csv" for n in (1, 5, 9, 13, 17, 21))
SPIDER_DBS = (
    "car_1",
    "concert_singer",
    "employee_hire_evaluation",
    "flight_2",
    "orchestra",
    "singer",
    "world_1",
)
# WTQ tables of 4 to 7 columns and at most 16 rows; the first two also serve as WikiSQL tables
WTQ_DATASET = tuple(f"204-csv/{n}.csv" for n in (3, 7, 2, 4, 6, 9, 11, 13))
WIKISQL_TABLES = WTQ_DATASET[:2]
# fields of a manifest or a printed summary that name the commit or time the run
VOLATILE = frozenset({"commit", "dirty", "seconds"})


# -- run ---------------------------------------------------------------------------------------


def _cli(checkout: Path, args: Sequence[str], log: Path, stdout: Path | None = None) -> int:
    """``cta ARGS`` from ``checkout`` (its packages first), stdout to ``stdout`` when given."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "cta.cli.main", *args]
    started = time.monotonic()
    with log.open("w") as err:
        sink = stdout.open("w") if stdout is not None else subprocess.DEVNULL
        try:
            code = subprocess.run(cmd, env=env, cwd=checkout, stdout=sink, stderr=err).returncode
        finally:
            if stdout is not None:
                sink.close()  # type: ignore[union-attr]
    print(f"  {' '.join(args[:3])} … exit {code} ({time.monotonic() - started:.0f} s)", flush=True)
    log.with_suffix(".status").write_text(f"{code}\n")
    return code


def _write_spider_inputs(data: Path, into: Path) -> tuple[Path, Path]:
    """The Spider schemas and dev questions of :data:`SPIDER_DBS`."""
    into.mkdir(parents=True, exist_ok=True)
    schemas = json.loads((data / "spider" / "tables.json").read_text(encoding="utf-8"))
    questions = json.loads((data / "spider" / "dev.json").read_text(encoding="utf-8"))
    tables, dev = into / "tables.json", into / "dev.json"
    tables.write_text(json.dumps([s for s in schemas if s["db_id"] in SPIDER_DBS], indent=1))
    dev.write_text(json.dumps([q for q in questions if q["db_id"] in SPIDER_DBS], indent=1))
    return tables, dev


def _read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [row for row in csv.reader(handle) if row]


def _write_wtq_inputs(data: Path, into: Path) -> tuple[Path, Path]:
    """A WTQ root of :data:`WTQ_DATASET` and two questions a table (a cell of its first row
    with a first and a last cell, asked by its column's header), answered by that cell."""
    lines = ["id\tutterance\tcontext\ttargetValue"]
    for n, name in enumerate(WTQ_DATASET):
        source = data / "wtq" / "csv" / name
        target = into / "csv" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        header, *rows = _read_csv(source)
        first = next(r for r in rows if all(c.strip() for c in r[:1] + r[-1:]))
        for q, col in enumerate((1, len(header) - 1)):
            words = " ".join(header[col].split()).lower()
            answer = " ".join(first[col].split())
            question = f"what is the {words} of {' '.join(first[0].split())}?"
            lines.append(f"nu-{n}-{q}\t{question}\tcsv/{name}\t{answer}")
    questions = into / "data" / "questions.tsv"
    questions.parent.mkdir(parents=True, exist_ok=True)
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return into, questions


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _write_wikisql_inputs(data: Path, into: Path) -> tuple[Path, Path]:
    """:data:`WIKISQL_TABLES` as WikiSQL tables (a column is ``real`` when every cell is a
    number), each with two questions: its first column where its second is the first row's
    value, and how many rows hold that value."""
    into.mkdir(parents=True, exist_ok=True)
    tables, questions = [], []
    for name in WIKISQL_TABLES:
        header, *rows = _read_csv(data / "wtq" / "csv" / name)
        cells = [[" ".join(c.split()) for c in row] for row in rows]
        types = [
            "real" if all(_number(row[i]) is not None for row in cells) else "text"
            for i in range(len(header))
        ]
        typed = [
            [_number(c) if t == "real" else c for c, t in zip(row, types, strict=True)]
            for row in cells
        ]
        table_id = "2-" + name.removesuffix(".csv").replace("-csv/", "-")
        tables.append({"id": table_id, "header": [" ".join(h.split()) for h in header],
                       "types": types, "rows": typed})  # fmt: skip
        value = typed[0][1]
        about = f"{header[1].lower()} {value}"
        questions += [
            {"phase": 1, "table_id": table_id, "question": f"Which {header[0]} has {about}?",
             "sql": {"sel": 0, "agg": 0, "conds": [[1, 0, value]]}},
            {"phase": 1, "table_id": table_id, "question": f"How many rows have {about}?",
             "sql": {"sel": 0, "agg": 3, "conds": [[1, 0, value]]}},
        ]  # fmt: skip
    tables_file, questions_file = into / "dev.tables.jsonl", into / "dev.jsonl"
    tables_file.write_text("".join(json.dumps(t) + "\n" for t in tables), encoding="utf-8")
    questions_file.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return tables_file, questions_file


# Run inside the checkout: its training code builds the shipped recipe's rows.
_TRAINING = r"""
import hashlib, json, sys
from dataclasses import asdict
from pathlib import Path
from cta.training.recipe import load_recipe
from cta.training.settings import TrainingSettings
from cta.training.train import build_training_data

data = sys.argv[1]
values = json.loads(json.dumps(load_recipe(Path("models/judge.recipe.json"))).replace(
    '"../shared/data', '"' + data).replace(':../shared/data', ':' + data))
settings = TrainingSettings.model_validate({**TrainingSettings().model_dump(), **values})
built = build_training_data(settings)

def digest(rows):
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(asdict(row), sort_keys=True, default=str).encode() + b"\n")
    return h.hexdigest()

by_relation = {}
for row in built.training + built.validation:
    by_relation.setdefault(row.relation, []).append(row)
facts = {k: v for k, v in built.facts.items() if k not in ("corpora", "question_synonyms")}
print(json.dumps({
    "rows": {"training": len(built.training), "validation": len(built.validation)},
    "sha256": {"training": digest(built.training), "validation": digest(built.validation)},
    "sha256_by_relation": {r: digest(rows) for r, rows in sorted(by_relation.items())},
    "facts": facts,
}, indent=1, sort_keys=True, default=str))
"""


def run(checkout: Path, data: Path, out: Path, parts: Sequence[str]) -> int:
    """Every output of ``parts`` from ``checkout`` into ``out``; the number of failed commands."""
    checkout, data, out = checkout.resolve(), data.resolve(), out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    failed = 0
    tables = {n: checkout / "examples" / f"{n}.json" for n in EXAMPLES}
    tables |= {
        "wtq_" + w.replace("-csv/", "_").removesuffix(".csv"): data / "wtq" / "csv" / w
        for w in WTQ_PERTURB
    }
    for part in ("perturb", "candidates"):
        if part not in parts:
            continue
        print(f"{part}: {len(tables)} tables", flush=True)
        extra = ["--json", "--samples", "2"] if part == "perturb" else []
        for name, path in tables.items():
            args = [part, str(path), *extra, "--seed", "0"]
            target = out / part / f"{name}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            failed += _cli(checkout, args, logs / part / f"{name}.log", stdout=target) != 0
    datasets: dict[str, tuple[Path, Path, list[str]]] = {}
    if "spider" in parts:
        spider_tables, dev = _write_spider_inputs(data, out / "inputs" / "spider")
        datasets["spider"] = (spider_tables, dev, ["--kind", "all", "--verify"])
    if "wtq" in parts:
        root, questions = _write_wtq_inputs(data, out / "inputs" / "wtq")
        datasets["wtq"] = (root, questions, [])
    if "wikisql" in parts:
        wikisql_tables, questions = _write_wikisql_inputs(data, out / "inputs" / "wikisql")
        datasets["wikisql"] = (wikisql_tables, questions, ["--verify"])
    for name, (source, questions, extra) in datasets.items():
        print(f"dataset perturb --format {name}", flush=True)
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        args = ["dataset", "perturb", "--format", name, "--tables", str(source),
                "--questions", str(questions), "--out", str(target), "--seeds", "2", *extra]  # fmt: skip
        failed += _cli(checkout, args, logs / f"{name}.log", stdout=logs / f"{name}.out") != 0
    if "training" in parts:
        print("training rows of models/judge.recipe.json", flush=True)
        env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
        started = time.monotonic()
        with (logs / "training.log").open("w") as err, (out / "training.json").open("w") as sink:
            code = subprocess.run(
                [sys.executable, "-c", _TRAINING, str(data)],
                env=env,
                cwd=checkout,
                stdout=sink,
                stderr=err,
            ).returncode
        (logs / "training.status").write_text(f"{code}\n")
        print(f"  exit {code} ({time.monotonic() - started:.0f} s)", flush=True)
        failed += code != 0
    (out / "checkout.json").write_text(
        json.dumps({"checkout": str(checkout), "commit": _commit(checkout)}, indent=1) + "\n"
    )
    return failed


def _commit(checkout: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return proc.stdout.strip()


# -- compare -----------------------------------------------------------------------------------


def _strip(value: Any) -> Any:
    """A manifest or summary without the fields of :data:`VOLATILE` (at any depth)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _summary(path: Path, root: Path) -> Any:
    """A manifest or summary with its run's checkout and output folder as placeholders."""
    text = path.read_text(encoding="utf-8")
    ran = json.loads((root / "checkout.json").read_text(encoding="utf-8"))
    for folder, placeholder in ((str(root.resolve()), "<out>"), (ran["checkout"], "<checkout>")):
        text = text.replace(folder, placeholder)
    return _strip(json.loads(text))


def _same(a: Path, b: Path, roots: tuple[Path, Path]) -> bool:
    if a.name == "manifest.json" or (a.parent.name == "logs" and a.suffix == ".out"):
        try:
            return bool(_summary(a, roots[0]) == _summary(b, roots[1]))
        except (OSError, KeyError, json.JSONDecodeError, UnicodeDecodeError):
            pass
    return _sha256(a) == _sha256(b)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(root: Path) -> set[str]:
    skip = {"checkout.json"}
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).as_posix() not in skip
    }


def _part(relative: str) -> str:
    head = relative.split("/", 1)[0]
    return "training" if head == "training.json" else head


def compare(before: Path, after: Path) -> int:
    """Print the table of identical and differing files per part; 1 when any differs."""
    left, right = _files(before), _files(after)
    rows: dict[str, dict[str, int]] = {}
    differing: list[str] = []
    for relative in sorted(left | right):
        counts = rows.setdefault(_part(relative), {"identical": 0, "differ": 0, "one side": 0})
        if relative not in left or relative not in right:
            counts["one side"] += 1
            side = "after only" if relative not in left else "before only"
            differing.append(f"{relative} ({side})")
        elif _same(before / relative, after / relative, (before, after)):
            counts["identical"] += 1
        else:
            counts["differ"] += 1
            differing.append(relative)
    print(f"before: {before} ({_checkout_commit(before)})")
    print(f"after:  {after} ({_checkout_commit(after)})")
    print(
        "manifests and summaries: paths of the checkout and the output folder as placeholders;"
        " ignored: " + ", ".join(sorted(VOLATILE))
    )
    print()
    print("| part | files | identical | differ | on one side only |")
    print("|---|---|---|---|---|")
    for part, counts in rows.items():
        total = sum(counts.values())
        print(f"| {part} | {total} | {counts['identical']} | {counts['differ']} | "
              f"{counts['one side']} |")  # fmt: skip
    if differing:
        print("\ndiffering files:")
        for relative in differing:
            print(f"  {relative}")
    return 1 if differing else 0


def _checkout_commit(out: Path) -> str:
    try:
        return str(json.loads((out / "checkout.json").read_text())["commit"])[:7]
    except (OSError, KeyError, json.JSONDecodeError):
        return "?"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="action", required=True)
    run_parser = actions.add_parser("run", help="every output of one checkout into a folder")
    run_parser.add_argument("--checkout", type=Path, required=True, help="the code to run")
    run_parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="shared data folder (spider, wtq)"
    )
    run_parser.add_argument("--out", type=Path, required=True, help="output folder")
    run_parser.add_argument(
        "--only", default=",".join(PARTS), help=f"comma-separated parts ({', '.join(PARTS)})"
    )
    compare_parser = actions.add_parser("compare", help="diff two output folders")
    compare_parser.add_argument("before", type=Path)
    compare_parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.action == "compare":
        return compare(args.before, args.after)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--only: unknown parts {', '.join(unknown)} ({', '.join(PARTS)})")
    return 1 if run(args.checkout, args.data, args.out, parts) else 0


if __name__ == "__main__":
    sys.exit(main())
