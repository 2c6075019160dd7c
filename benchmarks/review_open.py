"""How long a job of 100 tables takes to open on the review page (``GET /review/jobs/{id}``).

A real uvicorn server on loopback (the app of ``cta serve``, API keys on, a SQLite jobs
database in a temporary home), a ``tables`` job of 100 tables — the first 100 six-column WTQ
tables when ``wtq/csv`` of the data folder is there (``--data``, by default ``../shared/data``
beside the repository; or ``--wtq``), else generated ones of the same shape —
whose results are written straight into the store: every target column with 3 RPL and 2 ADD
names (scores drawn with a fixed seed), what a busy CTA run proposes. No engine runs: the
page's cost is the store, the copy of proposals into review items and the template.

Measured, each as the wall time of the whole HTTP request (body read):

* the first open of ``--first-opens`` fresh jobs (proposals copied into review items, then
  the first page rendered: ``review_page_columns`` columns, 100 by default);
* ``--repeat`` opens after it, table order and ``?order=margin`` (p50, p90, max);
* the same after one reviewer voted on every name (votes joined in).

Writes ``benchmarks/results/review_open.json``::

    nice .venv/bin/python -m benchmarks.review_open
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from benchmarks.harness import DEFAULT_DATA
from benchmarks.service_latency import six_column_tables
from cta.results import ColumnPerturbations, Decision, PerturbationResult
from cta.table import Table
from service.app import create_app
from service.auth import key_hash
from service.jobs.reviews import ReviewAction
from service.jobs.store import ClaimedItem, JobStore
from service.jobs.submit import job_items
from service.schemas import TablesJobCreate
from service.settings import ServiceSettings

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "benchmarks" / "results" / "review_open.json"
KEY = "bench-key"


def generated_tables(n: int) -> list[dict[str, Any]]:
    names = ["Year", "Title", "Role", "Director", "Studio", "Notes"]
    return [
        {
            "id": f"t{i}",
            "name": f"table {i}",
            "columns": [{"name": c} for c in names],
            "rows": [[f"{c.lower()} {r}" for c in names] for r in range(20)],
        }
        for i in range(n)
    ]


def proposals(table: Table, rng: random.Random) -> PerturbationResult:
    def decision(name: str, rpl: bool) -> Decision:
        high, low = rng.uniform(0.65, 0.99), rng.uniform(0.0, 0.45)
        return Decision(
            name=name,
            e1=high if rpl else low,
            e2=rng.uniform(0.65, 0.99) if rpl else rng.uniform(0.0, 0.45),
            association=None if rpl else rng.uniform(0.2, 0.9),
            source=rng.choice(("retriever", "dictionary", "thesaurus")),
        )

    return PerturbationResult(
        table_id=table.id,
        primary_entity=table.name or "entity",
        entity_source="table-name",
        columns=[
            ColumnPerturbations(
                column=c.name,
                replace=[decision(f"{c.name} synonym {k}", True) for k in range(3)],
                add=[decision(f"{c.name} related {k}", False) for k in range(2)],
            )
            for c in table.columns
        ],
    )


def stats(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_s": round(statistics.median(ordered), 4),
        "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 4),
        "max_s": round(ordered[-1], 4),
        "n": len(ordered),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--first-opens", type=int, default=5, help="fresh jobs opened once each")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder")
    parser.add_argument("--wtq", type=Path, help="WTQ csv folder (default: DATA/wtq/csv)")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="cta-review-bench-"))
    settings = ServiceSettings(home=home, api_keys=[KEY], inprocess_workers=0)
    wtq = args.wtq or args.data / "wtq" / "csv"
    source = "wtq" if wtq.is_dir() else "generated"
    raw = six_column_tables(wtq, args.tables) if source == "wtq" else generated_tables(args.tables)
    request = TablesJobCreate(kind="tables", tables=raw)
    store = JobStore.from_settings(settings)
    owner = key_hash(KEY)
    rng = random.Random(0)
    job_ids = []
    for _ in range(args.first_opens):
        status = store.create_job("tables", owner, request.options, job_items(request, settings))
        for item in store.claim("bench", args.tables, 600, 3):
            assert isinstance(item, ClaimedItem)
            table = Table.model_validate_json(item.payload)
            store.complete(item, "bench", proposals(table, rng))
        job_ids.append(status.id)
    store.close()

    app = create_app(settings, lambda _: None, inprocess_workers=0)  # type: ignore[arg-type,return-value]
    port = 8700 + os.getpid() % 1000
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
    while True:
        try:
            client.get("/healthz")
            break
        except httpx.TransportError:
            time.sleep(0.05)

    page = f"/review/jobs/{status.id}"

    def timed(path: str) -> tuple[float, int, int]:
        start = time.perf_counter()
        answer = client.get(path)
        body = answer.content
        elapsed = time.perf_counter() - start
        assert answer.status_code == 200, answer.text[:500]
        return elapsed, len(body), body.count(b'class="item"')

    first_opens = [timed(f"/review/jobs/{job_id}")[0] for job_id in job_ids]
    _, size, n_items = timed(page)
    table_order = [timed(page)[0] for _ in range(args.repeat)]
    margin_order = [timed(page + "?order=margin")[0] for _ in range(args.repeat)]
    reviews = app.state.reviews
    view = reviews.open(status.id, owner, owner)
    names_in_job = len(view.items)
    for item in view.items:
        reviews.act(status.id, item.id, owner, ReviewAction(action="accept", version=item.version))
    voted = [timed(page)[0] for _ in range(args.repeat)]
    server.should_exit = True
    thread.join(10)

    result = {
        "what": "GET /review/jobs/{id} of a 100-table job, wall time of the whole request",
        "tables": args.tables,
        "tables_source": source,
        "names_in_job": names_in_job,
        "names_per_column": "3 RPL + 2 ADD",
        "page_columns": settings.review_page_columns,
        "names_on_first_page": n_items,
        "page_bytes": size,
        "first_open": stats(first_opens),
        "reopen_table_order": stats(table_order),
        "reopen_nearest_thresholds_first": stats(margin_order),
        "reopen_after_every_name_voted": stats(voted),
        "target": "p50 <= 1 s",
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "note": "shared machine: 2 cores, other engineers' jobs running (see load average)",
        },
        "command": "nice .venv/bin/python benchmarks/review_open.py",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
