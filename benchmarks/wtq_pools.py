"""Candidate pools and judged decisions of the default pipeline on 20 seeded WTQ tables.

What the retriever, the reranker and the dictionary propose for each column (the pool, before
the judge) and what the judge keeps as RPL and ADD, so a reader can judge the proposals by eye.
Each table is retrieved with its own corpus entry excluded (by id and by fingerprint), as in
the quality benchmark.

    python -m benchmarks.wtq_pools [--data ../shared/data] [--tables 20] [--out benchmarks/results]

Writes ``wtq_candidate_pools.json`` (everything) and ``wtq_candidate_pools.md`` (readable).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_speed import wtq_tables
from benchmarks.harness import DEFAULT_DATA, RESULTS
from cta.pipeline import Pipeline
from cta.results import PerturbOptions
from cta.settings import get_settings

SEED = 0
POOL_SHOWN = 10  # retrieved names per column in the Markdown view (the JSON keeps them all)


def run(pipeline: Pipeline, data: Path, count: int) -> dict[str, Any]:
    tables = wtq_tables(data, count, seed=SEED)
    began = time.perf_counter()
    rows = []
    for table in tables:
        report = pipeline.candidates(table, seed=SEED)
        result = pipeline.perturb(table, PerturbOptions(seed=SEED))
        decided = {c.column: c for c in result.columns}
        rows.append(
            {
                "table_id": table.id,
                "primary_entity": result.primary_entity,
                "entity_source": result.entity_source,
                "retrieved_tables": report.retrieved_tables[:10],
                "columns": [
                    {
                        "column": pool.column,
                        "retrieved": [
                            {"name": c.name, "score": round(c.score, 3)} for c in pool.retrieved
                        ],
                        "dictionary": [c.name for c in pool.dictionary],
                        "rpl": [
                            {"name": d.name, "e1": d.e1, "e2": d.e2, "source": d.source}
                            for d in decided[pool.column].replace
                        ],
                        "add": [
                            {"name": d.name, "e1": d.e1, "e2": d.e2, "source": d.source}
                            for d in decided[pool.column].add
                        ],
                    }
                    for pool in report.columns
                ],
            }
        )
    return {
        "method": (
            f"{len(tables)} WTQ tables with 3-10 columns (seed {SEED}), default pipeline "
            "(settings from the environment), each table's own corpus entry excluded"
        ),
        "index": str(pipeline.settings.resolved_index_dir()),
        "judge": str(pipeline.settings.resolved_judge_model()),
        "seconds": round(time.perf_counter() - began, 1),
        "tables": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Candidate pools on WTQ tables",
        "",
        f"{result['method']}. Pool = top reranked retrieved names (first {POOL_SHOWN} shown) "
        "and dictionary names; RPL / ADD = what the judge kept. Written by "
        "`python -m benchmarks.wtq_pools`.",
        "",
    ]
    for table in result["tables"]:
        lines += [
            f"## {table['table_id']} — entity: {table['primary_entity']} "
            f"({table['entity_source']})",
            "",
            "| column | retrieved pool | dictionary | RPL (judged) | ADD (judged) |",
            "|---|---|---|---|---|",
        ]
        for col in table["columns"]:
            pool = ", ".join(c["name"] for c in col["retrieved"][:POOL_SHOWN]) or "—"
            dictionary = ", ".join(col["dictionary"]) or "—"
            rpl = ", ".join(d["name"] for d in col["rpl"]) or "—"
            add = ", ".join(d["name"] for d in col["add"]) or "—"
            cells = [col["column"], pool, dictionary, rpl, add]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not (args.data / "wtq" / "csv").is_dir():
        print(f"skipped: WTQ tables not found under {args.data}")
        return 0
    pipeline = Pipeline.from_settings(get_settings())
    result = run(pipeline, args.data, args.tables)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "wtq_candidate_pools.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "wtq_candidate_pools.md").write_text(markdown(result))
    print(f"wrote {args.out / 'wtq_candidate_pools.md'} ({len(result['tables'])} tables)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
