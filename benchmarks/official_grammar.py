"""Which gold lines of a perturbed Spider folder the official evaluator reads, per kind.

    python benchmarks/official_grammar.py OUT_DIR [--write benchmarks/results/official_grammar.json]

OUT_DIR is a folder ``cta dataset perturb --format spider`` wrote (any kinds and seeds). For
every set: its lines, how many the official evaluator's grammar reads (recomputed here with
:mod:`cta.formats.spider_grammar`, not read from the records), whether every unreadable line
is marked in its record, and the reasons by count. A set with no unreadable line is one
``run.sh`` gives to the evaluator; any other is skipped with its reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from cta.formats.spider_grammar import evaluator_problem, spider_tables_of


def summarise(out: Path) -> dict[str, Any]:
    entries = {e["db_id"]: e for e in json.loads((out / "tables.json").read_text())}
    tables: dict[str, dict[str, set[str]]] = {}
    sets: dict[str, Any] = {}
    kinds: dict[str, Counter[str]] = {}
    for path in sorted(out.glob("*_s[0-9]*.json")) + sorted(out.glob("*_original.json")):
        records = json.loads(path.read_text())
        reasons: Counter[str] = Counter()
        unmarked = 0
        for r in records:
            db_id = r["db_id"]
            if db_id not in tables:
                tables[db_id] = spider_tables_of(entries[db_id])
            problem = evaluator_problem(r["query"], tables[db_id])
            if problem is not None:
                reasons[problem] += 1
                if r.get("evaluator_reads") is not False:
                    unmarked += 1
        kind = str(records[0].get("kind")) if records else path.stem
        unreadable = sum(reasons.values())
        sets[path.stem] = {
            "kind": kind,
            "lines": len(records),
            "unreadable": unreadable,
            "unmarked_unreadable": unmarked,
            "read_by_official_evaluator": unreadable == 0,
            "reasons": dict(reasons.most_common()),
        }
        tally = kinds.setdefault(kind, Counter())
        tally["sets"] += 1
        tally["lines"] += len(records)
        tally["unreadable"] += unreadable
        tally["unmarked_unreadable"] += unmarked
        tally["sets_read_whole"] += unreadable == 0
    return {
        "folder": str(out),
        "manifest_options": (
            json.loads((out / "manifest.json").read_text()).get("options")
            if (out / "manifest.json").is_file()
            else None
        ),
        "by_kind": {k: dict(v) for k, v in sorted(kinds.items())},
        "sets": sets,
        "unmarked_unreadable_total": sum(v["unmarked_unreadable"] for v in sets.values()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--write", type=Path)
    args = p.parse_args(argv)
    report = summarise(args.out)
    text = json.dumps(report, indent=1) + "\n"
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    for kind, tally in report["by_kind"].items():
        print(
            f"{kind:20} sets {tally['sets']:3}  read whole {tally['sets_read_whole']:3}  "
            f"lines {tally['lines']:5}  unreadable {tally['unreadable']:4}  "
            f"unmarked {tally['unmarked_unreadable']}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
