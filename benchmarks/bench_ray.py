"""Ray scale-out on this machine (issue 26): tables/s in-process vs 1 and 2 Ray actors, Ray's
overhead per table, and a projection for 600k tables and for Spider train × 5 seeds.

The same seeded WTQ tables (3–10 columns) go through :func:`cta.scale.run_shards` three
ways — the in-process mapper, a Ray Data actor pool of 1 actor and of 2 — with the settings'
pipeline (the shipped judge and the default index unless the environment says otherwise).
Runs are interleaved (in-process, ray-1, ray-2, then the reverse order, …) because the
machine is shared; the load average is recorded around each run. Each worker writes, per
process, how long it took to load the pipeline and how long each shard took, so:

* ``tables_per_s`` = tables / wall (wall includes loading the pipeline in the worker(s));
* ``steady_tables_per_s`` = tables / (wall − load);
* ``overhead_s_per_table`` = (wall − load − busy ÷ actors) / tables: time not spent loading
  or perturbing (Ray Data's scheduling, pickling, the driver's ledger writes);
* every run's lines must hash the same (byte-identical outputs).

    PYTHONPATH=. python -m benchmarks.bench_ray [--tables 24] [--rounds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_speed import wtq_tables
from benchmarks.harness import DEFAULT_DATA
from cta import registry
from cta.results import PerturbOptions
from cta.scale import Item, ItemOutcome, ShardMapper, ShardPerturber, in_process, run_shards
from cta.scale.ray_backend import RayOptions, connect, ray_mapper
from cta.settings import Settings, get_settings

RESULTS = Path(__file__).resolve().parent / "results"
OPTIONS = PerturbOptions(seed=0)
#: the projection's assumptions: cores per node, one actor per core
NODE_CORES = 16
NODES = (1, 4, 16, 64)
CORPUS_TABLES = 600_000
SEEDS = 5


class TimedWorker:
    """:class:`ShardPerturber` that appends its load time and each shard's time to a file."""

    def __init__(self, settings: Settings, log_dir: str) -> None:
        started = time.perf_counter()
        self.inner = ShardPerturber(settings, OPTIONS)
        self.log = Path(log_dir) / f"{os.getpid()}.jsonl"
        self._write({"load_s": time.perf_counter() - started})

    def _write(self, record: dict[str, Any]) -> None:
        with self.log.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    def __call__(self, items: Sequence[Item]) -> list[ItemOutcome]:
        started = time.perf_counter()
        outcomes = self.inner(items)
        self._write({"shard_s": time.perf_counter() - started, "tables": len(items)})
        return outcomes


def _run(
    label: str, mapper: ShardMapper, actors: int, items: list[Item], settings: Settings, shard: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as work:
        logs = Path(work, "logs")
        logs.mkdir()
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        _, ledger = run_shards(
            items,
            Path(work, "out"),
            run={},
            worker=lambda: TimedWorker(settings, str(logs)),
            mapper=mapper,
            shard_size=shard,
        )
        wall = time.perf_counter() - started
        digest = hashlib.sha256("\n".join(ledger.lines()).encode()).hexdigest()
        records = [json.loads(x) for f in logs.iterdir() for x in f.read_text().splitlines()]
    loads = [r["load_s"] for r in records if "load_s" in r]
    busy = sum(r["shard_s"] for r in records if "shard_s" in r)
    load = max(loads)
    return {
        "config": label,
        "actors": actors,
        "wall_s": round(wall, 2),
        "load_s": round(load, 2),
        "workers_loaded": len(loads),
        "busy_s": round(busy, 2),
        "tables_per_s": round(len(items) / wall, 4),
        "steady_tables_per_s": round(len(items) / (wall - load), 4),
        "busy_s_per_table": round(busy / len(items), 3),
        "overhead_s_per_table": round((wall - load - busy / actors) / len(items), 3),
        "loadavg_before": round(load_before, 2),
        "loadavg_after": round(os.getloadavg()[0], 2),
        "lines_sha256": digest,
    }


def _echo_worker() -> Any:
    """A worker that loads nothing and answers each item with a fixed line."""
    return lambda items: [ItemOutcome(i.key, '{"echo": true}') for i in items]


def null_overhead(items: list[Item], shards: int = 64) -> dict[str, Any]:
    """Ray's own cost per shard, without the pipeline: ``shards`` one-table shards through
    a 2-actor pool whose worker does nothing (scheduling, pickling, the ledger's writes)."""
    chosen = (items * (shards // len(items) + 1))[:shards]
    chosen = [Item(f"{n}:{i.key}", table=i.table) for n, i in enumerate(chosen)]
    rows = {}
    for label, mapper in (("in-process", in_process), ("ray-2", ray_mapper(RayOptions(actors=2)))):
        with tempfile.TemporaryDirectory() as work:
            started = time.perf_counter()
            run_shards(chosen, Path(work), run={}, worker=_echo_worker, mapper=mapper, shard_size=1)
            rows[label] = round((time.perf_counter() - started) / shards, 4)
    return {
        "shards": shards,
        "s_per_shard": rows,
        "ray_s_per_shard": round(rows["ray-2"] - rows["in-process"], 4),
        "note": "includes starting the two actors once (importing cta), spread over the shards",
    }


def _encode_rate(settings: Settings, items: list[Item]) -> float:
    """Index encoder throughput here (tables/s, in-process, this machine's threads)."""
    encoder = registry.create("encoder", settings.encoder, settings)
    tables = [i.table for i in items if i.table is not None]
    encoder.encode(tables[:4])  # warm
    started = time.perf_counter()
    encoder.encode(tables * 4)
    return 4 * len(tables) / (time.perf_counter() - started)


def _mean(runs: list[dict[str, Any]], config: str, key: str) -> float:
    values = [r[key] for r in runs if r["config"] == config]
    return sum(values) / len(values)


def projection(
    runs: list[dict[str, Any]], encode_per_s: float, spider_tables: int
) -> dict[str, Any]:
    """Hours for 600k tables and Spider train × 5 seeds on N nodes (see ``assumptions``)."""
    # one actor = one core: the 1-actor run's busy time per table is the per-core cost
    per_core = _mean(runs, "ray-1", "busy_s_per_table")
    overhead = _mean(runs, "ray-1", "overhead_s_per_table")
    encode_per_core = encode_per_s / (os.cpu_count() or 1)
    spider_protocol = json.loads((RESULTS / "spider_train_spider.json").read_text())
    protocol_s = spider_protocol["seconds"]["total"]
    rows = []
    for nodes in NODES:
        actors = nodes * NODE_CORES
        corpus_s = CORPUS_TABLES * (per_core + overhead) / actors
        index_s = CORPUS_TABLES / (encode_per_core * actors)
        spider_s = spider_tables * (per_core + overhead) / actors + protocol_s
        rows.append(
            {
                "nodes": nodes,
                "actors": actors,
                "corpus_600k_hours": round(corpus_s / 3600, 2),
                "index_600k_hours": round(index_s / 3600, 2),
                "corpus_plus_index_hours": round((corpus_s + index_s) / 3600, 2),
                "spider_train_5_seeds_minutes": round(spider_s / 60, 1),
            }
        )
    return {
        "per_core_s_per_table": round(per_core, 3),
        "ray_overhead_s_per_table": round(overhead, 3),
        "encode_tables_per_s_per_core": round(encode_per_core, 2),
        "spider_train_tables_proposed": spider_tables,
        "spider_protocol_s": protocol_s,
        "rows": rows,
        "assumptions": [
            f"{NODE_CORES}-core nodes, one actor per core (1 CPU each), linear scaling: "
            "shards are independent and the driver only writes files",
            "per-table cost = the 1-actor run's busy time per table on this shared 2-core "
            "machine (a dedicated core is likely faster), plus the measured Ray overhead",
            "the 600k corpus costs per table what these WTQ tables cost (3–10 columns); "
            "retrieval over a 600k-table flat index costs more per table than over the "
            "default 3k one and each actor holds it in memory (~0.9 GB at 384-d float32): "
            "an ivf/hnsw index (CTA_INDEX_KIND) keeps both down",
            "index build = 600k tables ÷ (encoder tables/s per core measured here × cores), "
            "the chunks encoded on the actors (cta index build --ray); the FAISS add is not "
            "counted (seconds for flat, minutes for ivf/hnsw)",
            "Spider train × 5 seeds: the proposer is called once for every table a gold "
            "SQL touches (seeds only change the sampling), so Ray parallelises that part; "
            "the protocol itself (sampling, rewriting, databases, 5 seeds) stays one process "
            f"and takes what benchmarks/results/spider_train_spider.json measured ({protocol_s} s)",
        ],
    }


def spider_train_tables(data: Path) -> int:
    """Tables of the Spider train databases (an upper bound on the tables proposed)."""
    spider = data / "spider"
    train = [spider / "train_spider.json", spider / "train_others.json"]
    dbs = {q["db_id"] for f in train if f.is_file() for q in json.loads(f.read_text())}
    schemas = json.loads((spider / "tables.json").read_text())
    return sum(len(s["table_names"]) for s in schemas if s["db_id"] in dbs)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = ["in-process", "ray-1", "ray-2"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, title in (
        (axes[0], "tables_per_s", "tables/s (wall, incl. loading)"),
        (axes[1], "steady_tables_per_s", "tables/s (after loading)"),
    ):
        means = [_mean(result["runs"], c, key) for c in configs]
        ax.bar(configs, means, color=["#777777", "#4c72b0", "#dd8452"])
        for i, c in enumerate(configs):
            points = [r[key] for r in result["runs"] if r["config"] == c]
            ax.scatter([i] * len(points), points, color="black", zorder=3, s=12)
        ax.set_title(title)
        ax.set_ylabel("tables/s")
    fig.suptitle(
        f"{result['tables']} WTQ tables, shipped judge, {os.cpu_count()} shared cores "
        f"(load avg {result['loadavg_range'][0]}–{result['loadavg_range'][1]})"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=24)
    parser.add_argument("--shard-size", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=RESULTS / "ray.json")
    parser.add_argument(
        "--null-only",
        action="store_true",
        help="only Ray's overhead without the pipeline, into --out",
    )
    args = parser.parse_args(argv)
    if args.null_only:
        connect(RayOptions())
        items = [Item(str(t.id), table=t) for t in wtq_tables(args.data, args.tables)]
        result = json.loads(args.out.read_text()) if args.out.is_file() else {}
        result["null_overhead"] = null_overhead(items)
        result["null_overhead"]["loadavg"] = round(os.getloadavg()[0], 2)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["null_overhead"], indent=2))
        return 0

    settings = get_settings()
    items = [Item(str(t.id), table=t) for t in wtq_tables(args.data, args.tables)]
    started = time.perf_counter()
    cpus = connect(RayOptions())
    ray_start = time.perf_counter() - started
    configs: list[tuple[str, ShardMapper, int]] = [
        ("in-process", in_process, 1),
        ("ray-1", ray_mapper(RayOptions(actors=1)), 1),
        ("ray-2", ray_mapper(RayOptions(actors=2)), 2),
    ]
    runs = []
    for round_ in range(args.rounds):
        for label, mapper, actors in configs if round_ % 2 == 0 else configs[::-1]:
            run = _run(label, mapper, actors, items, settings, args.shard_size)
            run["round"] = round_
            print(json.dumps(run), flush=True)
            runs.append(run)
    digests = {r["lines_sha256"] for r in runs}
    encode = _encode_rate(settings, items)
    loads = [r[k] for r in runs for k in ("loadavg_before", "loadavg_after")]
    summary = {
        c: {
            k: round(_mean(runs, c, k), 4)
            for k in ("tables_per_s", "steady_tables_per_s", "overhead_s_per_table", "load_s")
        }
        for c, _, _ in configs
    }
    base = summary["in-process"]["steady_tables_per_s"]
    result = {
        "benchmark": "bench_ray",
        "tables": len(items),
        "shard_size": args.shard_size,
        "rounds": args.rounds,
        "judge": settings.resolved_judge_model(),
        "index": str(settings.resolved_index_dir()),
        "ray_cpus": cpus,
        "ray_start_s": round(ray_start, 2),
        "byte_identical": len(digests) == 1,
        "summary": summary,
        "ray2_vs_in_process_steady": round(summary["ray-2"]["steady_tables_per_s"] / base, 3),
        "ray2_vs_in_process_wall": round(
            summary["ray-2"]["tables_per_s"] / summary["in-process"]["tables_per_s"], 3
        ),
        "loadavg_range": [round(min(loads), 2), round(max(loads), 2)],
        "encoder_tables_per_s": round(encode, 2),
        "runs": runs,
        "projection": projection(runs, encode, spider_train_tables(args.data)),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other engineers' "
        "jobs (see loadavg), Python " + platform.python_version(),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    plot(result, args.out.with_suffix(".png"))
    print(json.dumps({k: result[k] for k in ("summary", "byte_identical", "projection")}, indent=2))
    return 0 if result["byte_identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
