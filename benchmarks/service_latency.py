"""Latency of ``POST /v1/perturb`` on a real ``cta serve`` with the default models, and overload.

Measures, for 6-column WTQ tables (``wtq/csv`` of the data folder ``--data``, by default
``../shared/data`` beside the repository, or ``--wtq``), warm (models loaded, a few requests
sent first):

* one client, the same table again and again (the judge's cache is warm);
* one client, a different table each time (every judge pair new);
* 8 concurrent clients, different tables (dynamic batching at work; a client told 429
  waits its ``Retry-After`` and sends again, and its latency runs from the first attempt);

and what a client sees under overload: a server with ``CTA_QUEUE_SIZE=4`` hit by 32 requests
at once answers 429 with ``Retry-After``. Writes ``benchmarks/results/service_latency.json``::

    nice .venv/bin/python -m benchmarks.service_latency            # starts its own servers
    .venv/bin/python -m benchmarks.service_latency --url http://127.0.0.1:8000   # latency only
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import DEFAULT_DATA

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "benchmarks" / "results" / "service_latency.json"
DEFAULT_WTQ = DEFAULT_DATA / "wtq" / "csv"
CTA = Path(sys.executable).with_name("cta")


def six_column_tables(root: Path, n: int) -> list[dict[str, Any]]:
    """The first ``n`` WTQ tables (sorted paths) with exactly 6 columns and 5–40 rows."""
    from cta.formats.tables import load_csv
    from cta.table import InvalidTableError

    found = []
    for path in sorted(root.glob("*/*.csv")):
        try:
            table = load_csv(path)
        except InvalidTableError:
            continue
        if len(table.columns) == 6 and 5 <= len(table.rows) <= 40:
            found.append(table.model_dump(mode="json"))
            if len(found) == n:
                break
    if len(found) < n:
        raise SystemExit(f"only {len(found)} six-column WTQ tables under {root}")
    return found


def pipeline_info() -> dict[str, Any]:
    """What the server loads (from the same settings/environment): home, judge, index size."""
    from cta.settings import Settings

    settings = Settings()
    manifest = settings.resolved_index_dir() / "manifest.json"
    tables = json.loads(manifest.read_text())["count"] if manifest.exists() else None
    return {
        "home": str(settings.home),
        "judge": settings.resolved_judge_model(),
        "index_tables": tables,
        "retrieve_top_k": settings.retrieve_top_k,
        "rerank_top_k": settings.rerank_top_k,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def cta_serve(**env: str) -> Iterator[str]:
    """A ``cta serve`` process with the default pipeline; yields its URL once ready."""
    port = _free_port()
    proc = subprocess.Popen(
        [str(CTA), "serve", "--port", str(port), "--workers-inprocess", "0"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"cta serve exited: {proc.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
            try:
                ready = httpx.get(f"{url}/readyz", timeout=2)
                if ready.status_code == 200:
                    break
                if "failed" in ready.json().get("detail", ""):
                    raise SystemExit(f"pipeline failed to load: {ready.json()['detail']}")
            except httpx.TransportError:
                pass
            if time.monotonic() - started > 600:
                raise SystemExit("cta serve not ready after 600 s")
            time.sleep(0.5)
        print(f"server ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def _summary(latencies: list[float], wall: float) -> dict[str, float | int]:
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * ordered[max(0, int(round(0.95 * len(ordered))) - 1)], 1),
        "max_ms": round(1000 * ordered[-1], 1),
        "throughput_rps": round(len(ordered) / wall, 2),
    }


async def _clients(
    url: str, tables: list[dict[str, Any]], clients: int, per_client: int
) -> tuple[list[float], float, Counter[int]]:
    latencies: list[float] = []
    statuses: Counter[int] = Counter()

    async def one_client(c: int, http: httpx.AsyncClient) -> None:
        # As a well-behaved client does: after a 429, wait its Retry-After and send again;
        # the latency is the user's, first attempt to answer.
        for r in range(per_client):
            table = tables[(c * per_client + r) % len(tables)]
            started = time.perf_counter()
            while True:
                answer = await http.post(f"{url}/v1/perturb", json={"table": table})
                statuses[answer.status_code] += 1
                if answer.status_code != 429:
                    break
                await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
            latencies.append(time.perf_counter() - started)

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(one_client(c, http) for c in range(clients)))
        wall = time.perf_counter() - started
    return latencies, wall, statuses


def measure_latency(url: str, tables: list[dict[str, Any]], requests: int) -> dict[str, Any]:
    """Warm-up, then sequential (same / distinct tables) and 8 concurrent clients."""
    asyncio.run(_clients(url, tables[:3], 1, 3))  # warm-up: first forward passes, caches
    same, wall_same, s1 = asyncio.run(_clients(url, tables[:1], 1, requests))
    # Each measurement sends tables no earlier one sent: a table seen before would only
    # time the judge's cache.
    fresh = tables[3 : 3 + requests]
    distinct, wall_distinct, s2 = asyncio.run(_clients(url, fresh, 1, requests))
    per_client = max(1, requests // 8)
    unseen = tables[3 + requests : 3 + requests + 8 * per_client]
    conc, wall_conc, s3 = asyncio.run(_clients(url, unseen, 8, per_client))
    assert set(s1) == set(s2) == {200} and set(s3) <= {200, 429}, (s1, s2, s3)
    return {
        "sequential_same_table": _summary(same, wall_same),
        "sequential_distinct_tables": _summary(distinct, wall_distinct),
        "concurrent_8_clients_distinct_tables": {
            **_summary(conc, wall_conc),
            "answers_429_then_retried": s3[429],
        },
    }


async def _burst(url: str, tables: list[dict[str, Any]], n: int) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=n)) as http:
        answers = await asyncio.gather(
            *(
                http.post(f"{url}/v1/perturb", json={"table": tables[i % len(tables)]})
                for i in range(n)
            )
        )
    refused = [a for a in answers if a.status_code == 429]
    example = None
    if refused:
        example = {
            "status": 429,
            "headers": {"retry-after": refused[0].headers.get("retry-after")},
            "body": refused[0].json(),
        }
    return {
        "concurrent_requests": n,
        "statuses": dict(sorted(Counter(a.status_code for a in answers).items())),
        "example_429": example,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="measure an already running service (skips overload)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder")
    parser.add_argument("--wtq", type=Path, help="WTQ csv folder (default: DATA/wtq/csv)")
    parser.add_argument("--requests", type=int, default=40, help="per measurement")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()

    tables = six_column_tables(args.wtq or args.data / "wtq" / "csv", 2 * args.requests + 3)
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "pipeline": pipeline_info(),
        "table": {
            "columns": 6,
            "source": "WTQ csv, first 6-column tables (sorted paths)",
            "note": "each measurement sends tables no earlier measurement sent (cold judge pairs, "
            "except columns shared between tables)",
        },
    }
    if args.url:
        report["latency"] = measure_latency(args.url, tables, args.requests)
    else:
        with cta_serve() as url:
            report["latency"] = measure_latency(url, tables, args.requests)
        with cta_serve(CTA_QUEUE_SIZE="4") as url:
            asyncio.run(_clients(url, tables[:2], 1, 2))  # warm-up
            report["overload"] = {"queue_size": 4, **asyncio.run(_burst(url, tables, 32))}
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
