"""The ADVETA protocol over Spider: are rewritten queries execution-equivalent?

Runs ``perturb_spider`` (RPL and ADD, 5 seeds) over a Spider question file with databases
synthesised from ``tables.json`` (Spider ships schemas only here), executes every original
query on the original database and every rewritten one on its perturbed database, and
writes the shares and the run time to ``benchmarks/results/spider_<split>.json``.

Proposer. This benchmark measures the SQL and database machinery, not the quality of the
names, so by default it uses a **stress proposer** — deterministic, not realistic, written
for this benchmark only — whose candidates are the names hardest to rewrite around:

- names needing quotes: spaces with ``#`` and ``%``, an apostrophe, a double quote,
  non-ASCII letters, SQLite keywords (``order``, ``group``, ``select``…);
- identifiers of *other* tables' columns of the same database (the rewrite must change
  only the perturbed table; an ADD column named like another table's column captures
  unqualified references unless they are qualified);
- string literals the database's queries compare with (an ADD column named ``France``
  would capture ``WHERE country = "France"`` unless it becomes ``'France'``).

``--proposer pipeline`` runs the real CTA pipeline instead (``Pipeline.from_settings``) and
writes ``spider_<split>_pipeline.json``.

Run: ``nice .venv/bin/python -m benchmarks.spider_protocol --split dev``
(``--split train_spider`` for the 7,000 training questions; Spider is read from ``spider/`` of
the data folder ``--data``, by default ``../shared/data`` beside the repository, or ``--spider``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness import DEFAULT_DATA
from cta.datasets import Proposer, perturb_spider, spider_inputs
from cta.formats.spider import load_spider
from cta.results import ColumnPerturbations, Decision, PerturbationResult
from cta.sql.rewrite import BoundQuery, bind_query
from cta.table import ColumnType, Table

RESULTS = Path(__file__).parent / "results"
KEYWORDS = ("order", "group", "select", "from", "where", "values", "table", "index", "key")


class StressProposer:
    """Deterministic hard-to-rewrite names (see the module docstring); not a CTA stand-in."""

    label = "stress-names (deterministic, benchmark only: quoting, keywords, collisions)"

    def __init__(self, literals: dict[str, list[str]]) -> None:
        self.literals = literals  # db_id → string literals its queries use

    def __call__(self, tables: Sequence[Table]) -> list[PerturbationResult]:
        by_db: dict[str, list[Table]] = {}
        for table in tables:
            by_db.setdefault(self._db(table), []).append(table)
        return [self._propose(t, by_db[self._db(t)]) for t in tables]

    @staticmethod
    def _db(table: Table) -> str:
        return (table.id or "").split(".", 1)[0]

    def _propose(self, table: Table, siblings: Sequence[Table]) -> PerturbationResult:
        own = {(c.original_name or c.name).casefold() for c in table.columns}
        foreign = sorted(
            {
                c.original_name or c.name
                for t in siblings
                if t is not table
                for c in t.columns
                if (c.original_name or c.name).casefold() not in own
            }
        )
        literals = [s for s in self.literals.get(self._db(table), []) if s.casefold() not in own]
        columns = []
        for k, target in enumerate(table.targets()):
            keyword = KEYWORDS[k % len(KEYWORDS)]
            quoted = [
                f"{target.name} #",
                f"% {target.name}",
                f"{target.name}'s",
                f'{target.name} "alt"',
                f"{target.name} é",
                keyword,
            ]
            rpl = quoted + foreign[k % max(len(foreign), 1) :][:2]
            add = [keyword, f"{target.name} %"] + foreign[:3] + literals[:3]
            columns.append(
                ColumnPerturbations(
                    column=target.name,
                    replace=[_decision(n, target.type) for n in rpl],
                    add=[_decision(n, target.type) for n in add],
                )
            )
        return PerturbationResult(
            table_id=table.id,
            primary_entity=table.name or "",
            entity_source="table-name",
            columns=columns,
        )


def _decision(name: str, ctype: ColumnType) -> Decision:
    return Decision(name=name, type=ctype, e1=1.0, e2=1.0, source="dictionary", provenance="stress")


def _literals(dataset: object) -> dict[str, list[str]]:
    examples, databases = spider_inputs(dataset)
    out: dict[str, set[str]] = {}
    for ex in examples:
        try:
            bound: BoundQuery = bind_query(ex.sql, databases[ex.db_id].schema)
        except ValueError:
            continue
        for values in bound.literals.values():
            for v in values:
                if isinstance(v, str) and v.strip() and len(v) <= 30:
                    out.setdefault(ex.db_id, set()).add(v)
    return {db: sorted(v) for db, v in out.items()}


def _pipeline_proposer() -> tuple[Proposer, str]:
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions
    from cta.settings import get_settings

    pipeline = Pipeline.from_settings(get_settings())
    options = PerturbOptions(seed=0)

    def propose(tables: Sequence[Table]) -> list[PerturbationResult]:
        return pipeline.perturb_many(tables, options)

    return propose, "cta-pipeline (Pipeline.from_settings, default settings)"


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", help="dev or train_spider")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--proposer", choices=("stress", "pipeline"), default="stress")
    parser.add_argument("--out", type=Path, default=None, help="keep outputs here")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder")
    parser.add_argument("--spider", type=Path, help="Spider folder (default: DATA/spider)")
    args = parser.parse_args(argv)

    spider = args.spider or args.data / "spider"
    dataset = load_spider(spider / "tables.json", spider / f"{args.split}.json")
    if args.proposer == "stress":
        stress = StressProposer(_literals(dataset))
        proposer: Proposer = stress
        label = stress.label
    else:
        proposer, label = _pipeline_proposer()

    out = args.out or Path(tempfile.mkdtemp(prefix="cta-spider-"))
    started = time.perf_counter()
    run = perturb_spider(
        dataset,
        proposer,
        out,
        kinds=("rpl", "add"),
        seeds=range(args.seeds),
        check_execution=True,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    total = time.perf_counter() - started
    disk = _size(out)
    if args.out is None:
        shutil.rmtree(out)

    verification = run.verification or {}
    result = {
        "benchmark": "spider_protocol",
        "split": args.split,
        "questions": run.examples,
        "kinds": ["rpl", "add"],
        "seeds": args.seeds,
        "proposer": label,
        "databases": "synthesised from tables.json (seeded, FK-consistent, literal pools)",
        "checks": verification.get("checks"),
        "by_status": verification.get("by_status"),
        "by_kind": verification.get("by_kind"),
        "executable": verification.get("executable"),
        "equivalent": verification.get("equivalent"),
        "equivalent_share": verification.get("equivalent_share"),
        "equivalent_up_to_ties": verification.get("equivalent_up_to_ties"),
        "nonempty_share": verification.get("nonempty_share"),
        "unchanged_entries": run.unchanged,
        "perturbed_databases": run.variants,
        "output_megabytes": round(disk / 1e6, 1),
        "seconds": {**run.seconds, "total": round(total, 1)},
        "machine": (
            f"{platform.machine()}, {platform.python_version()}, one process on a "
            f"{os.cpu_count()}-core machine, load average {os.getloadavg()[0]:.2f} at the end "
            "(wall-clock times)"
        ),
        "problems": verification.get("problems", []),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.proposer == "stress" else f"_{args.proposer}"
    path = RESULTS / f"spider_{args.split}{suffix}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "problems"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
