"""Load and hostile work against a real ``cta serve`` with the default models → JSON.

Measures what the issue "hostile input and load" asks of the service on this machine:

* **byte-identical answers**: the same table and seed alone, batched with 7 other tables
  (judge cache off, so the batch really computes it), and after a load run (cache warm);
* **one wide table**: a 200-column table (inside the limits) answered — a result or a 4xx
  naming the budget — within 60 s, and a small request sent meanwhile within 10 s;
* **16 clients for 60 s**: every answer a 200 or a 429; the p50/p95 of the 200s; whether a
  client that waited the 429's ``Retry-After`` was then admitted (a truthful header); the
  server healthy afterwards.

Tables are real WTQ tables (``wtq/csv`` of the shared data folder, ``../shared/data`` beside the
repository, or ``--wtq``). Writes ``benchmarks/results/service_hostile_load.json``::

    .venv/bin/python -m benchmarks.service_hostile_load
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from benchmarks.service_latency import DEFAULT_WTQ, cta_serve, pipeline_info

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "benchmarks" / "results" / "service_hostile_load.json"


def wtq_tables(root: Path, columns: int, n: int, skip: int = 0) -> list[dict[str, Any]]:
    """WTQ tables with exactly ``columns`` columns and 5–40 rows, sorted paths, after ``skip``."""
    from cta.formats.tables import load_csv
    from cta.table import InvalidTableError

    found: list[dict[str, Any]] = []
    for path in sorted(root.glob("*/*.csv")):
        try:
            table = load_csv(path)
        except InvalidTableError:
            continue
        if len(table.columns) == columns and 5 <= len(table.rows) <= 40:
            if skip:
                skip -= 1
                continue
            found.append(table.model_dump(mode="json"))
            if len(found) == n:
                return found
    raise SystemExit(f"only {len(found)} {columns}-column WTQ tables under {root}")


def wide_table(root: Path, width: int = 200) -> dict[str, Any]:
    """``width`` distinct real WTQ headers as one table of two rows (inside the limits)."""
    from cta.formats.tables import load_csv
    from cta.table import InvalidTableError
    from cta.words import name_key

    names: dict[str, str] = {}
    for path in sorted(root.glob("*/*.csv")):
        try:
            table = load_csv(path)
        except InvalidTableError:
            continue
        for col in table.columns:
            if 2 < len(col.name) <= 30 and col.name.isascii():
                names.setdefault(name_key(col.name), col.name)
        if len(names) >= width:
            break
    chosen = list(names.values())[:width]
    return {
        "name": "wide survey",
        "columns": [{"name": n} for n in chosen],
        "rows": [[f"v{r}{c}" for c in range(width)] for r in range(2)],
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[max(0, int(round(q * len(ordered))) - 1)], 3)


async def _post(http: httpx.AsyncClient, url: str, table: dict[str, Any]) -> httpx.Response:
    return await http.post(f"{url}/v1/perturb", json={"table": table, "options": {"seed": 3}})


async def identity_alone_and_batched(
    url: str, probe: dict[str, Any], company: list[dict[str, Any]]
) -> tuple[bytes, bytes]:
    async with httpx.AsyncClient(timeout=600) as http:
        alone = (await _post(http, url, probe)).content
        answers = await asyncio.gather(
            *(_post(http, url, t) for t in company[:3]),
            _post(http, url, probe),
            *(_post(http, url, t) for t in company[3:7]),
        )
    assert all(a.status_code == 200 for a in answers), [a.status_code for a in answers]
    return alone, answers[3].content


async def wide_and_small(url: str, wide: dict[str, Any], small: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=120) as http:
        started = time.perf_counter()
        wide_task = asyncio.create_task(_post(http, url, wide))
        await asyncio.sleep(0.5)
        small_started = time.perf_counter()
        small_answer = await _post(http, url, small)
        small_seconds = time.perf_counter() - small_started
        wide_answer = await wide_task
        wide_seconds = time.perf_counter() - started
    body = wide_answer.json()
    return {
        "wide_columns": len(wide["columns"]),
        "wide_status": wide_answer.status_code,
        "wide_problem": body.get("problem"),
        "wide_message": body.get("message"),
        "wide_seconds": round(wide_seconds, 2),
        "small_status": small_answer.status_code,
        "small_seconds": round(small_seconds, 2),
    }


async def load(url: str, tables: list[dict[str, Any]], clients: int, seconds: float) -> Any:
    ok: list[float] = []
    statuses: Counter[int] = Counter()
    retry_after: list[int] = []
    retried = Counter[str]()
    deadline = time.monotonic() + seconds
    counter = iter(range(10**9))

    async def client(http: httpx.AsyncClient) -> None:
        waited = False
        while time.monotonic() < deadline:
            table = tables[next(counter) % len(tables)]
            started = time.perf_counter()
            answer = await _post(http, url, table)
            statuses[answer.status_code] += 1
            if waited:
                retried["admitted" if answer.status_code == 200 else "refused_again"] += 1
                waited = False
            if answer.status_code == 200:
                ok.append(time.perf_counter() - started)
            elif answer.status_code == 429:
                wait = int(answer.headers["Retry-After"])
                retry_after.append(wait)
                waited = True
                await asyncio.sleep(wait)

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))
        health = (await http.get(f"{url}/healthz")).status_code
        ready = (await http.get(f"{url}/readyz")).status_code
        after = await _post(http, url, tables[0])
    return {
        "clients": clients,
        "seconds": seconds,
        "statuses": dict(sorted(statuses.items())),
        "ok_p50_s": round(statistics.median(ok), 3) if ok else None,
        "ok_p95_s": _pct(ok, 0.95) if ok else None,
        "ok_max_s": round(max(ok), 3) if ok else None,
        "retry_after_values": dict(sorted(Counter(retry_after).items())),
        "after_waiting_retry_after": dict(retried),
        "healthz_after": health,
        "readyz_after": ready,
        "perturb_after": after.status_code,
    }


def budget_calibration(root: Path, widths: tuple[int, ...] = (6, 12, 18, 23)) -> list[Any]:
    """Per width: the estimate the budget checks vs the judge pairs and seconds a cold
    pipeline (cache cleared) really spends, in-process, on two real WTQ tables."""
    from cta.pipeline import Pipeline
    from cta.table import Table

    pipeline = Pipeline.from_settings()
    judge = pipeline.judge_model
    rows = []
    for width in widths:
        try:  # skip the first six-column tables: the servers' runs use those
            tables = wtq_tables(root, width, 2, skip=450 if width == 6 else 0)
        except SystemExit:
            continue
        for raw in tables:
            table = Table.parse(raw)
            judge.clear_cache()
            judge.reset_stats()
            started = time.perf_counter()
            pipeline.perturb(table)
            seconds = time.perf_counter() - started
            rows.append(
                {
                    "columns": width,
                    "estimate_pairs": pipeline.estimate_pairs(table),
                    "judged_pairs": judge.stats.model_pairs,
                    "seconds": round(seconds, 2),
                    "judged_pairs_per_second": round(judge.stats.model_pairs / seconds, 1),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wtq", type=Path, default=DEFAULT_WTQ)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()

    six = wtq_tables(args.wtq, 6, 400)
    probe, company, pool = six[0], six[1:8], six[8:]
    wide = wide_table(args.wtq)
    small = wtq_tables(args.wtq, 4, 1)[0]
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "pipeline": pipeline_info(),
    }
    result["budget_calibration"] = budget_calibration(args.wtq)
    print(json.dumps(result["budget_calibration"]), file=sys.stderr)
    # cache off, so the batch computes the probe; a long queue bound, so all 8 are admitted
    with cta_serve(CTA_JUDGE_CACHE_SIZE="0", CTA_MAX_QUEUE_SECONDS="600") as url:
        alone, batched = asyncio.run(identity_alone_and_batched(url, probe, company))
    with cta_serve() as url:
        result["wide_table"] = asyncio.run(wide_and_small(url, wide, small))
        result["load"] = asyncio.run(load(url, pool, args.clients, args.seconds))
        with httpx.Client(timeout=600) as http:
            after_load = http.post(
                f"{url}/v1/perturb", json={"table": probe, "options": {"seed": 3}}
            ).content
    result["identity"] = {
        "table": probe.get("id") or probe.get("name"),
        "alone_equals_batched": alone == batched,
        "alone_equals_after_load": alone == after_load,
        "bytes": len(alone),
    }
    OUTPUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
