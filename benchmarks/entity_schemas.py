"""Entity schemas on the annotations' ``dev`` split: ADD and RPL names before → after, and the
entity-link threshold.

The pipeline runs on the 63 dev tables (never indexed, never trained on, never a seed of the
schemas) twice: without entity schemas (``CTA_ENTITY_SCHEMAS=none``: the other sources alone)
and with every table linked to its best schema (threshold −∞). Linking only changes the table
it links, so the lists at a threshold ``t`` are replayed per table: the linked run's where the
table's best link scores ≥ ``t``, else the unlinked run's. For each ``t`` of a grid, of the
proposed names the annotations label (equivalent / associated / neither for that column):

* ADD: names per column, the share labelled *associated* (and *equivalent*: a wrong ADD);
* RPL: names per column, the share labelled *equivalent*;
* the judge's model pairs per table (of the two runs, as the threshold picks them).

``calibrated`` is the threshold with the highest ADD share among those that keep at least
``--min-per-column`` ADD names per column and an RPL share no lower than the unlinked run's
(of equal shares, the highest threshold: the fewest tables linked).
``--speed``: instead, the speed benchmark's WTQ tables (:func:`benchmarks.bench_speed.wtq_tables`,
the first ``--tables`` after its two warm-up tables, seeded), through
:meth:`Pipeline.perturb_many` warm, with and without entity schemas: tables/s, the judge's
model pairs per table, ADD and RPL names per column, the share of columns with at least one
ADD name, and the tables linked. Writes ``benchmarks/results/entity_schemas_speed.json``.

Usage: ``python -m benchmarks.entity_schemas [--min-per-column 2.5] [--speed [--tables 20]]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchmarks.add_quality import dev_tables
from cta.pipeline import Pipeline
from cta.results import PerturbOptions
from cta.settings import Settings
from cta.words import name_key

ROOT = Path(__file__).resolve().parents[1]
GRID = [round(0.05 * i, 2) for i in range(10, 41)]


def _run(settings: Settings, tables: list[Any]) -> tuple[list[dict[str, Any]], float]:
    pipeline = Pipeline.from_settings(settings)
    out = []
    began = time.perf_counter()
    for table, labels in tables:
        before = pipeline.judge_model.stats.as_dict()["model_pairs"]  # type: ignore[attr-defined]
        result = pipeline.perturb(table, PerturbOptions(seed=0))
        after = pipeline.judge_model.stats.as_dict()["model_pairs"]  # type: ignore[attr-defined]
        columns = []
        for column in result.columns:
            known = labels.get(column.column, {})
            columns.append(
                {
                    "column": column.column,
                    "aligned_to": column.aligned_to.column if column.aligned_to else None,
                    "add": [
                        {
                            "name": d.name,
                            "source": d.source,
                            "label": known.get(name_key(d.name), "unlabelled"),
                        }
                        for d in column.add
                    ],
                    "rpl": [
                        {
                            "name": d.name,
                            "source": d.source,
                            "label": known.get(name_key(d.name), "unlabelled"),
                        }
                        for d in column.replace
                    ],
                }
            )
        best = result.entity_links[0] if result.entity_links else None
        out.append(
            {
                "table": table.id,
                "name": table.name,
                "entity": result.primary_entity,
                "link": best.model_dump() if best else None,
                "linked": result.linked_entity,
                "pairs": after - before,
                "columns": columns,
            }
        )
    return out, time.perf_counter() - began


def _share(names: list[dict[str, Any]], label: str) -> float | None:
    labelled = [n for n in names if n["label"] != "unlabelled"]
    if not labelled:
        return None
    return round(sum(n["label"] == label for n in labelled) / len(labelled), 4)


def figures(tables: list[dict[str, Any]]) -> dict[str, Any]:
    columns = [c for t in tables for c in t["columns"]]
    add = [n for c in columns for n in c["add"]]
    rpl = [n for c in columns for n in c["rpl"]]
    return {
        "tables": len(tables),
        "columns": len(columns),
        "add_per_column": round(len(add) / max(1, len(columns)), 2),
        "add_labelled": sum(n["label"] != "unlabelled" for n in add),
        "add_labelled_associated": _share(add, "associated"),
        "add_labelled_equivalent": _share(add, "equivalent"),
        "columns_with_add": round(sum(bool(c["add"]) for c in columns) / max(1, len(columns)), 4),
        "rpl_per_column": round(len(rpl) / max(1, len(columns)), 2),
        "rpl_labelled": sum(n["label"] != "unlabelled" for n in rpl),
        "rpl_labelled_equivalent": _share(rpl, "equivalent"),
        "judge_pairs_per_table": round(sum(t["pairs"] for t in tables) / max(1, len(tables)), 1),
    }


def speed(base: Settings, data_dir: Path, count: int) -> dict[str, Any]:
    """With and without entity schemas on the speed benchmark's WTQ tables (see the docstring)."""
    from benchmarks.bench_speed import WARM_TABLES, wtq_tables

    chosen = wtq_tables(data_dir, count + WARM_TABLES)
    warm, timed = chosen[:WARM_TABLES], chosen[WARM_TABLES:]
    out: dict[str, Any] = {
        "tables": f"{len(timed)} WTQ tables (3-10 columns, seeded: the speed benchmark's), warm",
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    for name, update in (("without", {"entity_schemas": "none"}), ("with", {})):
        pipeline = Pipeline.from_settings(base.model_copy(update=update))
        pipeline.perturb_many(warm, PerturbOptions(seed=0))
        judge = pipeline.judge_model
        judge.clear_cache()  # type: ignore[attr-defined]
        judge.reset_stats()  # type: ignore[attr-defined]
        began = time.perf_counter()
        results = pipeline.perturb_many(timed, PerturbOptions(seed=0))
        wall = time.perf_counter() - began
        pairs = judge.stats.as_dict()["model_pairs"]  # type: ignore[attr-defined]
        columns = [c for r in results for c in r.columns]
        out[name] = {
            "seconds": round(wall, 1),
            "tables_per_second": round(len(timed) / wall, 3),
            "judge_pairs_per_table": round(pairs / len(timed), 1),
            "columns": len(columns),
            "columns_with_add": round(sum(bool(c.add) for c in columns) / len(columns), 4),
            "add_per_column": round(sum(len(c.add) for c in columns) / len(columns), 2),
            "rpl_per_column": round(sum(len(c.replace) for c in columns) / len(columns), 2),
            "linked_tables": sum(r.linked_entity is not None for r in results),
            "aligned_columns": sum(c.aligned_to is not None for c in columns),
        }
    out["judge_pairs_change"] = round(
        out["with"]["judge_pairs_per_table"] / out["without"]["judge_pairs_per_table"] - 1, 4
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-per-column", type=float, default=2.5)
    parser.add_argument("--speed", action="store_true", help="the speed benchmark's tables")
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    base = Settings()
    if args.speed:
        result = speed(base, args.data, args.tables)
        out = args.out or ROOT / "benchmarks/results/entity_schemas_speed.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=1))
        return
    args.out = args.out or ROOT / "benchmarks/results/entity_schemas.json"
    tables = dev_tables(base)
    off, off_s = _run(base.model_copy(update={"entity_schemas": "none"}), tables)
    on, on_s = _run(base.model_copy(update={"entity_link_threshold": -1e9}), tables)
    grid = []
    for t in GRID:
        mixed = [
            b if (b["link"] and b["link"]["score"] >= t) else a
            for a, b in zip(off, on, strict=True)
        ]
        grid.append(
            {
                "threshold": t,
                "linked_tables": sum(m is b for m, b in zip(mixed, on, strict=True)),
                **figures(mixed),
            }
        )
    before = figures(off)
    ok = [
        g
        for g in grid
        if g["add_per_column"] >= args.min_per_column
        and (g["rpl_labelled_equivalent"] or 0) >= (before["rpl_labelled_equivalent"] or 0)
    ]
    # the highest share; among equal shares, the highest threshold (fewest links)
    best = (
        max(ok, key=lambda g: (g["add_labelled_associated"] or 0, g["threshold"])) if ok else None
    )
    results = {
        "split": "annotations dev (63 tables, never indexed, never trained on)",
        "seconds": {"without": round(off_s, 1), "linked": round(on_s, 1)},
        "without_entity_schemas": before,
        "every_table_linked": figures(on),
        "setting": base.entity_link_threshold,
        "at_setting": next(
            (g for g in grid if abs(g["threshold"] - base.entity_link_threshold) < 1e-9), None
        ),
        "calibrated": best["threshold"] if best else None,
        "min_per_column": args.min_per_column,
        "grid": grid,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    args.out.with_suffix(".names.json").write_text(
        json.dumps({"without": off, "linked": on}, indent=1) + "\n"
    )
    print(json.dumps({k: v for k, v in results.items() if k != "grid"}, indent=1))
    for g in grid:
        print(
            {
                k: g[k]
                for k in (
                    "threshold",
                    "linked_tables",
                    "add_per_column",
                    "add_labelled_associated",
                    "rpl_labelled_equivalent",
                    "judge_pairs_per_table",
                )
            }
        )


if __name__ == "__main__":
    main()
