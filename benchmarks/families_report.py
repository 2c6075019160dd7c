"""The perturbation families over Spider dev: counts, items changed, execution equivalence.

Runs ``cta dataset perturb --kind <families> --seeds 5 --verify`` through its library entry
point (:func:`cta.datasets.perturb_dataset`) on Spider dev with databases synthesised
from ``tables.json`` (Spider ships schemas only here), twice, and reports per kind:

- items (questions × seeds), items on an edited database, items whose gold SQL text changed,
  items with a rewritten question (``question-synonym``);
- items left as they were, by reason (the family cannot apply to the database, or cannot
  rewrite that query exactly);
- executed checks and the share execution-equivalent (the issue's bar: 100 %);
- whether the two runs wrote byte-identical folders (same seed → same bytes), and seconds.

The kinds that take names from the CTA pipeline (``abbreviation``, ``table-rename``,
``insert-column``, ``question-synonym``) need the trained judge and index (``cta setup``);
``--kinds structural`` runs the eight that need neither.

Run: ``nice .venv/bin/python benchmarks/families_report.py [--kinds all|structural|k1,k2]
[--out PREFIX]`` → ``PREFIX.json`` and ``PREFIX.md`` (``benchmarks/results/families_dev``
by default; the committed runs are ``benchmarks/results/families_dev_structural.json`` and
``benchmarks/results/families_dev_pipeline.json``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cta.datasets import perturb_dataset
from cta.families import family_kinds, family_spec
from cta.results import PerturbationResult
from cta.table import Table

SPIDER = Path(__file__).resolve().parents[2] / "shared" / "data" / "spider"
RESULTS = Path(__file__).parent / "results"
PIPELINE_KINDS = ("abbreviation", "table-rename", "insert-column", "question-synonym")
# the seed papers' families: every one planned per database (RPL and ADD plan per question)
PAPERS_KINDS = tuple(k for k in family_kinds() if family_spec(k).scope == "database")
STRUCTURAL = tuple(k for k in PAPERS_KINDS if k not in PIPELINE_KINDS)


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _reason(text: str) -> str:
    """A reason without its particulars (table and column names), for counting."""
    head = text.split(":", 2)
    return ": ".join(part.strip() for part in head[:2]) if len(head) > 1 else text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="all", help="all, structural or a comma list")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--questions", default=str(SPIDER / "dev.json"))
    parser.add_argument("--out", default=str(RESULTS / "families_dev"))
    parser.add_argument(
        "--once", action="store_true", help="one run: skip the byte-identical rerun check"
    )
    args = parser.parse_args(argv)
    if args.kinds == "all":
        kinds = list(PAPERS_KINDS)
    elif args.kinds == "structural":
        kinds = list(STRUCTURAL)
    else:
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]

    judge = None
    proposer: Any
    if any(k in PIPELINE_KINDS for k in kinds):
        from cta.pipeline import Pipeline
        from cta.results import PerturbOptions

        pipeline = Pipeline.from_settings()

        def proposer(tables: Sequence[Table]) -> list[PerturbationResult]:
            return pipeline.perturb_many(tables, PerturbOptions(seed=0))

        judge = pipeline.equivalent
    else:

        def proposer(tables: Sequence[Table]) -> list[PerturbationResult]:
            raise RuntimeError("the structural families ask no proposer")

    runs = []
    digests = []
    work = Path(tempfile.mkdtemp(prefix="cta-families-"))
    try:
        for attempt in ("a",) if args.once else ("a", "b"):
            started = time.perf_counter()
            run = perturb_dataset(
                "spider",
                SPIDER / "tables.json",
                args.questions,
                work / attempt,
                proposer,
                kinds,
                range(args.seeds),
                check_execution=True,
                judge=judge,
            )
            runs.append((run, time.perf_counter() - started))
            digests.append(_digest(work / attempt))
        lines = [
            json.loads(line) for line in (work / "a" / "mappings.jsonl").read_text().splitlines()
        ]
        originals = {
            i: r["query"]
            for i, r in enumerate(json.loads(Path(args.questions).read_text(encoding="utf-8")))
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)

    run, seconds = runs[0]
    assert run.verification is not None
    by_kind_status = run.verification["by_kind"]
    report: dict[str, Any] = {
        "questions": len(originals),
        "seeds": args.seeds,
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "databases": "synthesised from tables.json (seeded)",
        "byte_identical_reruns": None if args.once else digests[0] == digests[1],
        "seconds": {
            "first_run": round(seconds, 1),
            "second_run": None if args.once else round(runs[1][1], 1),
        },
        "stage_seconds": run.seconds,
        "kinds": {},
    }
    for kind in kinds:
        mine = [line for line in lines if line["kind"] == kind]
        edited = [m for m in mine if m["perturbed_db_id"] != m["db_id"]]
        sql_changed = [m for m in edited if m["sql"] != originals[int(m["id"].rsplit(":", 1)[1])]]
        statuses = by_kind_status.get(kind, {})
        executed = sum(n for s, n in statuses.items() if s != "original_error")
        reasons = Counter(_reason(m["unchanged"]) for m in mine if m["unchanged"])
        report["kinds"][kind] = {
            "items": len(mine),
            "on_edited_database": len(edited),
            "gold_sql_changed": len(sql_changed),
            "question_rewritten": sum(1 for m in mine if m.get("question")),
            "unchanged": sum(reasons.values()),
            "unchanged_reasons": dict(reasons.most_common(8)),
            "executed": executed,
            "equivalent": statuses.get("ok", 0),
            "equivalent_share": round(statuses.get("ok", 0) / executed, 6) if executed else None,
            "databases_edited": len({m["perturbed_db_id"] for m in edited}),
        }
    RESULTS.mkdir(exist_ok=True)
    stem = Path(args.out)
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    rows = [
        "| kind | items | on an edited DB | gold SQL changed | question rewritten | unchanged |"
        " executed | equivalent |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, k in report["kinds"].items():
        share = "–" if k["equivalent_share"] is None else f"{100 * k['equivalent_share']:.1f} %"
        rows.append(
            f"| {kind} | {k['items']} | {k['on_edited_database']} | {k['gold_sql_changed']} | "
            f"{k['question_rewritten']} | {k['unchanged']} | {k['executed']} | {share} |"
        )
    md = [
        f"# Families over Spider dev ({report['questions']} questions × {args.seeds} seeds)",
        "",
        *rows,
        "",
        f"Same seed, two runs: byte-identical folders = {report['byte_identical_reruns']}; "
        f"{report['seconds']['first_run']} s per run on {report['machine']}.",
        "",
        "Why items were left unchanged (per kind, most frequent first):",
        "",
    ]
    for kind, k in report["kinds"].items():
        for reason, n in k["unchanged_reasons"].items():
            md.append(f"- {kind}: {n} × {reason}")
    stem.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
