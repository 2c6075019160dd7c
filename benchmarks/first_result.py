"""Time to a first result: ``cta perturb TABLE`` and ``cta judge`` (one pair) on a warm cache.

Two measurements, each repeated (``--runs``) and reported as the median:

* **whole command** — wall time of ``python -m cta.cli.main perturb TABLE --json --seed 0
  --samples 2`` and of ``cta judge`` with one pair on stdin, each a fresh process (what a
  user waits for);
* **stages** — one fresh process per run that times, in the order the pipeline loads them:
  the imports of the models' runtime (ONNX Runtime, or torch and transformers where the
  settings or the tree run there), the component registry's check, each component
  (retriever = index + MiniLM encoder, reranker vectors, WordNet lexicon, judge model,
  candidate sources, entity-schema linker), then the perturbation itself, with the seconds
  the judge model spent inside it. A stage pays for every import it is first to need.

The machine's load average (1 min) is printed before and after: figures taken on busy cores
are slower (2–3× at a load of 7 on 2 cores). ``--tree DIR`` measures another checkout of the
project (its ``cta`` package first on the path; repeatable, the trees' runs interleaved), e.g.
the commit before a change against this one::

    mkdir /tmp/before && git archive HEAD~1 | tar -x -C /tmp/before
    python -m benchmarks.first_result --tree /tmp/before --tree . --runs 5

Writes nothing; prints a Markdown table (``--json`` for JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "examples" / "books.json"
PAIR = {
    "entity": "book",
    "target": {"name": "title", "type": "text"},
    "candidate": {"name": "book title", "type": "text"},
}
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _environment(tree: Path) -> dict[str, str]:
    env = {**os.environ, **OFFLINE}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def _timed(command: list[str], tree: Path, stdin: str | None = None) -> float:
    began = time.perf_counter()
    subprocess.run(
        command,
        cwd=tree,
        env=_environment(tree),
        input=stdin,
        text=True,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - began


def whole_commands(tree: Path, table: Path) -> dict[str, float]:
    """Wall seconds of one ``cta perturb`` and one single-pair ``cta judge``."""
    cli = [sys.executable, "-m", "cta.cli.main"]
    perturb = [*cli, "perturb", str(table), "--json", "--seed", "0", "--samples", "2"]
    return {
        "cta perturb (whole command)": _timed(perturb, tree),
        "cta judge, one pair (whole command)": _timed(
            [*cli, "judge"], tree, json.dumps(PAIR) + "\n"
        ),
    }


def stages(tree: Path, table: Path) -> dict[str, float]:
    """Seconds of each loading stage and of the work, in one fresh process."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(table)],
        cwd=tree,
        env=_environment(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    timings: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return timings


def _child(table: Path) -> None:
    """The stage timings of one process, printed as one JSON line (run by :func:`stages`)."""
    out: dict[str, float] = {}
    began = time.perf_counter()

    def timed(label: str, thunk: Any) -> Any:
        start = time.perf_counter()
        value = thunk()
        out[label] = time.perf_counter() - start
        return value

    timed("import cta (CLI, pipeline)", lambda: __import__("cta.cli.perturb"))
    timed("import the models' runtime (torch + transformers, or ONNX Runtime)", _runtime_imports)
    from cta import registry
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions
    from cta.settings import get_settings
    from cta.table import Table

    settings = get_settings()
    timed(
        "registry check (provider imports)",
        lambda: (__import__("cta.providers"), registry.check(settings)),
    )
    retriever = timed(
        "retriever (index + MiniLM)",
        lambda: registry.create("retriever", settings.retriever, settings),
    )
    reranker = timed(
        "reranker vectors", lambda: registry.create("vectors", settings.vectors, settings)
    )
    lexicon = timed(
        "lexicon (WordNet)", lambda: registry.create("lexicon", settings.lexicon, settings)
    )
    judge = timed("judge model", lambda: registry.create("judge", settings.judge, settings))
    sources = timed(
        "candidate sources",
        lambda: tuple(registry.create("source", n, settings) for n in settings.candidate_sources),
    )
    linker = timed(
        "entity-schema linker",
        lambda: registry.create("linker", settings.entity_linker, settings),
    )
    pipeline = Pipeline(
        settings=settings,
        retriever=retriever,
        reranker=reranker,
        dictionary=lexicon,
        judge_model=judge,
        sources=sources,
        linker=linker,
    )
    parsed = Table.parse(json.loads(table.read_text(encoding="utf-8")))
    timed("perturb (the work)", lambda: pipeline.perturb(parsed, PerturbOptions(samples=2)))
    out["  of which the judge model"] = float(judge.stats.model_seconds)
    out["total (one process)"] = time.perf_counter() - began
    print(json.dumps(out))


def _runtime_imports() -> None:
    """What runs the models in this tree: ONNX Runtime and tokenizers where the tree has
    :mod:`cta.runtimes` and its settings run there, else torch and transformers."""
    try:
        from cta.runtimes import onnx_installed
        from cta.settings import get_settings

        runtime = getattr(get_settings(), "runtime", None)  # None: a tree without it
        if runtime is not None and runtime != "torch" and onnx_installed():
            __import__("onnxruntime")
            __import__("tokenizers")
            return
    except ImportError:
        pass  # a tree from before the ONNX runtime
    __import__("torch")
    __import__("transformers")


def measure(trees: list[Path], table: Path, runs: int) -> list[dict[str, Any]]:
    """Medians over ``runs`` of every stage and whole command of each tree, the trees' runs
    interleaved (so a change in the machine's load falls on all of them alike), with the
    load averages."""
    load_before = os.getloadavg()
    stage_runs: list[list[dict[str, float]]] = [[] for _ in trees]
    command_runs: list[list[dict[str, float]]] = [[] for _ in trees]
    for _ in range(runs):
        for t, tree in enumerate(trees):
            stage_runs[t].append(stages(tree, table))
            command_runs[t].append(whole_commands(tree, table))
    load_after = os.getloadavg()
    results = []
    for t, tree in enumerate(trees):
        medians: dict[str, float] = {}
        for rows in (stage_runs[t], command_runs[t]):
            for label in rows[0]:
                medians[label] = round(statistics.median(r[label] for r in rows), 2)
        results.append(
            {
                "tree": str(tree),
                "runs": runs,
                "cores": os.cpu_count(),
                "load_average_1min": {"before": load_before[0], "after": load_after[0]},
                "median_seconds": medians,
            }
        )
    return results


def markdown(results: list[dict[str, Any]]) -> str:
    first = results[0]
    load = first["load_average_1min"]
    lines = [
        f"median of {first['runs']} runs, {first['cores']} cores, load average (1 min) "
        f"{load['before']:.2f} before, {load['after']:.2f} after",
        "",
        "| stage | " + " | ".join(r["tree"] for r in results) + " |",
        "| --- |" + " ---: |" * len(results),
    ]
    for label in first["median_seconds"]:
        values = [r["median_seconds"].get(label) for r in results]
        cells = ["—" if v is None else f"{v:.2f}" for v in values]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument(
        "--tree",
        type=Path,
        action="append",
        help="checkout to measure (repeatable: runs interleaved; default: this one)",
    )
    parser.add_argument("--json", action="store_true", help="JSON instead of Markdown")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        _child(args.child)
        return 0
    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    results = measure(trees, args.table.resolve(), args.runs)
    print(json.dumps(results, indent=2) if args.json else markdown(results), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
