"""``cta eval`` against the official Spider evaluator, question by question.

Reads one or more folders written by ``cta eval --out REPORT``: its ``items.jsonl`` (our EX
and EM per question) and ``test-suite/`` (the gold and prediction files, databases and
``tables.json`` written for test-suite-sql-eval). For every set, it runs the official
evaluator (test-suite-sql-eval's ``evaluation.py``, from a checkout given by
``--evaluator``) twice:

- **per question**: its own functions (``get_sql``, the value and foreign-key rewrites,
  ``Evaluator.eval_exact_match``, ``eval_exec_match``) called in the order its
  ``evaluate`` calls them, a prediction it cannot parse scored as its empty query;
- **whole set**: its command line, unmodified (``--etype all``), whose ``all`` figures
  must be the per-question means.

and reports, per set, both EMs and EXs, how many questions agree, and every disagreement
with the evaluator's parse error. The evaluator runs under ``--evaluator-python`` (a Python
with ``nltk``, ``sqlparse`` and ``tqdm``). Its tokenizer (``nltk.word_tokenize``) loads
NLTK's Punkt sentence model (``punkt_tab``), which needs a download; offline, an empty
English Punkt model is written to a temporary ``NLTK_DATA`` instead. The tokens are the
same: the evaluator replaces every quoted string by a placeholder before tokenizing, and
what remains (SQL keywords, names, numbers, operators) holds no sentence end for a trained
model to place differently.

With ``--mutations dev.json tables.json DATABASES`` it also scores near misses of every
gold query (``MUTATIONS``: DISTINCT in subqueries, DESC → ASC, T1/T2 swapped in the query,
its subqueries or its set-operation parts, ``count(DISTINCT x)``) against the gold.

Run (see docs/evaluation.md, "Running the official evaluator")::

    .venv/bin/python benchmarks/official_eval.py REPORT_DIR [REPORT_DIR …] \\
        --evaluator /tmp/official-eval --evaluator-python /tmp/official-eval/.venv/bin/python \\
        [--mutations dev.json tables.json DATABASES] \\
        [--label after --json benchmarks/results/official_em.json]

Exits 1 when any question disagrees.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Runs under the evaluator's Python, in the test-suite folder: one JSON line per question.
_PER_QUESTION = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import evaluation as ev
from process_sql import Schema, get_schema, get_sql

stem = sys.argv[2]
kmaps = ev.build_foreign_key_map_from_json("tables.json")
golds = [line.rstrip("\n").split("\t") for line in open(f"gold/{stem}.txt")]
preds = [line.rstrip("\n") for line in open(f"pred/{stem}.txt")]
empty = {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [],
         "having": [], "intersect": None, "limit": None, "orderBy": [],
         "select": [False, []], "union": None, "where": []}
for (gold, db_id), pred in zip(golds, preds):
    pred = pred.replace("value", "1")  # as its evaluate() does
    db = f"database/{db_id}/{db_id}.sqlite"
    schema = Schema(get_schema(db))
    row = {"gold_error": None, "pred_error": None}
    try:
        g = get_sql(schema, gold)
    except Exception as exc:
        row["gold_error"] = repr(exc)
        print(json.dumps(row), flush=True)
        continue
    try:
        p = get_sql(schema, pred)
    except Exception as exc:
        row["pred_error"] = repr(exc)
        p = json.loads(json.dumps(empty))
    row["ex"] = bool(ev.eval_exec_match(db=db, p_str=pred, g_str=gold, plug_value=False,
                                        keep_distinct=False,
                                        progress_bar_for_each_datapoint=False))
    kmap = kmaps[db_id]
    g = ev.rebuild_sql_col(ev.build_valid_col_units(g["from"]["table_units"], schema),
                           ev.rebuild_sql_val(g), kmap)
    p = ev.rebuild_sql_col(ev.build_valid_col_units(p["from"]["table_units"], schema),
                           ev.rebuild_sql_val(p), kmap)
    evaluator = ev.Evaluator()
    row["em"] = bool(evaluator.eval_exact_match(p, g))
    row["failed"] = [k for k, v in evaluator.partial_scores.items() if v["f1"] != 1]
    print(json.dumps(row), flush=True)
"""

_FIGURE = re.compile(r"^(execution|exact match)\s+((?:[\d.]+\s+){4})([\d.]+)", re.MULTILINE)


def _empty_punkt(root: Path) -> Path:
    english = root / "tokenizers" / "punkt_tab" / "english"
    english.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (english / name).touch()
    return root


def _official(
    python: str,
    evaluator: Path,
    suite: Path,
    stem: str,
    env: dict[str, str],
    whole_set: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    per_question = subprocess.run(
        [python, "-c", _PER_QUESTION, str(evaluator), stem],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in per_question.stdout.splitlines() if line.startswith("{")]
    if not whole_set:
        return rows, {}
    whole = subprocess.run(
        [
            python,
            str(evaluator / "evaluation.py"),
            "--etype",
            "all",
            "--db",
            "database",
            "--table",
            "tables.json",
            "--gold",
            f"gold/{stem}.txt",
            "--pred",
            f"pred/{stem}.txt",
        ],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
    )
    figures = {
        ("ex" if m.group(1) == "execution" else "em"): float(m.group(3))
        for m in _FIGURE.finditer(whole.stdout)
    }
    if whole.returncode != 0:
        figures["error"] = whole.stderr.strip().splitlines()[-1]  # type: ignore[assignment]
    return rows, figures


def compare(report: Path, python: str, evaluator: Path, env: dict[str, str]) -> dict[str, Any]:
    """Per set of one ``cta eval --out`` folder: official vs our EX and EM, per question."""
    suite = report / "test-suite"
    items: dict[str, list[dict[str, Any]]] = {}
    for line in (report / "items.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        items.setdefault(item["set"], []).append(item)
    out: dict[str, Any] = {}
    for gold_file in sorted((suite / "gold").glob("*.txt")):
        stem = gold_file.stem
        ours = items[stem]
        rows, figures = _official(python, evaluator, suite, stem, env)
        scored = [(o, it) for o, it in zip(rows, ours, strict=True) if o["gold_error"] is None]
        disagree = [
            {
                "index": i,
                "gold": it["gold"],
                "pred": it["pred"],
                "official_em": o["em"],
                "our_em": it["em"],
                "official_ex": o["ex"],
                "our_ex": it["ex"],
                "official_parse_error": o["pred_error"],
                "official_failed_components": o["failed"],
            }
            for i, (o, it) in enumerate(scored)
            if o["em"] != bool(it["em"]) or o["ex"] != bool(it["ex"])
        ]
        n = len(scored)
        out[stem] = {
            "questions": len(rows),
            "gold_unread_by_official": len(rows) - n,
            "official": {
                "em": round(sum(o["em"] for o, _ in scored) / n, 4),
                "ex": round(sum(o["ex"] for o, _ in scored) / n, 4),
                "command_line": figures,
            },
            "ours": {
                "em": round(sum(bool(it["em"]) for _, it in scored) / n, 4),
                "ex": round(sum(bool(it["ex"]) for _, it in scored) / n, 4),
            },
            "em_agree": sum(o["em"] == bool(it["em"]) for o, it in scored),
            "ex_agree": sum(o["ex"] == bool(it["ex"]) for o, it in scored),
            "official_unparsed_predictions": sum(1 for o, _ in scored if o["pred_error"]),
            "disagreements": disagree,
        }
    return out


def _swap_aliases(sql: str) -> str:
    return sql.replace("T1.", "@@").replace("T2.", "T1.").replace("@@", "T2.")


# Near misses of a gold query that touch the evaluator's rewrites: DISTINCT in subqueries,
# directions, foreign-key partners (T1/T2 swapped) in the query, its subqueries and its
# set-operation parts, count(x) → count(DISTINCT x).
MUTATIONS: dict[str, Any] = {
    "distinct_in_subqueries": lambda s: re.sub(
        r"\(\s*SELECT\s+", "(SELECT DISTINCT ", s, flags=re.I
    ),
    "desc_to_asc": lambda s: re.sub(r"\bDESC\b", "ASC", s, flags=re.I),
    "aliases_swapped": _swap_aliases,
    "aliases_swapped_in_subquery": lambda s: re.sub(
        r"\((\s*SELECT.*)\)", lambda m: "(" + _swap_aliases(m.group(1)) + ")", s, flags=re.I
    ),
    "aliases_swapped_after_set_op": lambda s: re.sub(
        r"(INTERSECT|UNION|EXCEPT)(.*)$",
        lambda m: m.group(1) + _swap_aliases(m.group(2)),
        s,
        flags=re.I,
    ),
    "count_distinct": lambda s: re.sub(
        r"count\(\s*((?:T\d\.)?\w+)\s*\)", r"count(DISTINCT \1)", s, flags=re.I
    ),
}


def mutations(
    questions: Path,
    tables: Path,
    databases: Path,
    python: str,
    evaluator: Path,
    env: dict[str, str],
) -> dict[str, Any]:
    """Official vs our EM on near misses of every gold query (``MUTATIONS``), on the pairs
    the evaluator parses; ``databases`` holds ``<db_id>/<db_id>.sqlite``."""
    from cta.evaluation import ExactMatcher, SpiderSchema

    entries = {e["db_id"]: e for e in json.loads(tables.read_text(encoding="utf-8"))}
    pairs = []
    for q in json.loads(questions.read_text(encoding="utf-8")):
        for name, mutate in MUTATIONS.items():
            mutant = mutate(q["query"])
            if mutant != q["query"]:
                pairs.append((name, q["db_id"], q["query"], mutant))
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp)
        (suite / "gold").mkdir()
        (suite / "pred").mkdir()
        (suite / "database").symlink_to(databases.resolve())
        (suite / "tables.json").symlink_to(tables.resolve())
        (suite / "gold" / "pairs.txt").write_text("".join(f"{g}\t{db}\n" for _, db, g, _ in pairs))
        (suite / "pred" / "pairs.txt").write_text("".join(f"{p}\n" for *_, p in pairs))
        rows, _ = _official(python, evaluator, suite, "pairs", env, whole_set=False)
    matcher = ExactMatcher()
    schemas = {db: SpiderSchema.from_entry(e) for db, e in entries.items()}
    per: dict[str, dict[str, int]] = {}
    disagree = []
    for (name, db, gold, pred), row in zip(pairs, rows, strict=True):
        counts = per.setdefault(
            name, {"pairs": 0, "official_unparsed": 0, "compared": 0, "agree": 0}
        )
        counts["pairs"] += 1
        if row["gold_error"] or row["pred_error"]:
            counts["official_unparsed"] += 1
            continue
        ours = matcher.score(schemas[db], gold, pred)
        if ours is None:
            continue
        counts["compared"] += 1
        counts["agree"] += ours == row["em"]
        if ours != row["em"]:
            disagree.append({"mutation": name, "gold": gold, "pred": pred, "official": row["em"]})
    return {"per_mutation": per, "disagreements": disagree}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path, help="folders written by cta eval --out")
    parser.add_argument(
        "--mutations",
        nargs=3,
        type=Path,
        metavar=("QUESTIONS", "TABLES", "DATABASES"),
        help="also compare EM on near misses of these gold queries (Spider dev.json, "
        "tables.json, a folder of <db_id>/<db_id>.sqlite)",
    )
    parser.add_argument(
        "--evaluator", type=Path, required=True, help="test-suite-sql-eval checkout"
    )
    parser.add_argument("--evaluator-python", default=sys.executable)
    parser.add_argument("--json", type=Path, help="merge the results into this JSON file")
    parser.add_argument("--label", default="run", help="key of these results in --json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NLTK_DATA": str(_empty_punkt(Path(tmp)))}
        results: dict[str, Any] = {
            str(report): compare(report, args.evaluator_python, args.evaluator, env)
            for report in args.reports
        }
        near_misses = None
        if args.mutations:
            questions, tables, databases = args.mutations
            near_misses = mutations(
                questions, tables, databases, args.evaluator_python, args.evaluator, env
            )
    for report, sets in results.items():
        for stem, r in sets.items():
            print(
                f"{report} {stem}: EM official {r['official']['em']:.3f} ours {r['ours']['em']:.3f} "
                f"(agree {r['em_agree']}/{r['questions'] - r['gold_unread_by_official']}) · "
                f"EX official {r['official']['ex']:.3f} ours {r['ours']['ex']:.3f} "
                f"(agree {r['ex_agree']}) · command line {r['official']['command_line']}"
            )
    if near_misses is not None:
        for name, counts in near_misses["per_mutation"].items():
            print(f"near misses, {name}: {counts}")
    if args.json is not None:
        stored = json.loads(args.json.read_text()) if args.json.is_file() else {}
        stored[args.label] = results
        if near_misses is not None:
            stored[f"{args.label}_near_misses"] = near_misses
        args.json.write_text(json.dumps(stored, indent=1, ensure_ascii=False) + "\n")
    clean = all(not r["disagreements"] for sets in results.values() for r in sets.values())
    return 0 if clean and not (near_misses or {}).get("disagreements") else 1


if __name__ == "__main__":
    raise SystemExit(main())
