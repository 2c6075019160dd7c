"""How adversarial are our perturbations? ``cta eval`` on Spider dev, ours vs human ADVETA.

Builds perturbed Spider dev folders with ``perturb_spider`` (RPL and ADD, 5 seeds, the
databases synthesised from ``tables.json``) from two proposers:

``human``
    the ADVETA annotations (``shared/data/adveta/spider-{rpl,add}-candidates.json``): per
    column of the 81 dev tables, the RPL and ADD names annotators wrote. Sampling, rewriting
    and databases are this project's; only the names are human. No judge needed.
``pipeline``
    this project's CTA pipeline with the default settings (needs the trained judge in the
    cache, ``cta setup``).

and evaluates each folder with the built-in models: ``oracle`` (must be 100 %),
``lexical-probe`` (linking recall/precision of the gold columns, pre vs post) and
``nearest-train`` (TF-IDF retrieval over Spider train + adaptation by linking). Writes
``benchmarks/results/eval_spider.json``, ``eval_spider.md`` and ``eval_spider.png``.

Run: ``nice .venv/bin/python benchmarks/eval_spider.py`` (``--proposers human`` without
the judge; ``--work DIR`` keeps the folders; ``--seeds 5``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cta.datasets import Proposer, perturb_spider
from cta.evaluation import evaluate, load_directory, reference_model
from cta.formats.spider import load_spider
from cta.reports import EvalReport
from cta.results import ColumnPerturbations, Decision, PerturbationResult
from cta.table import Table

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
RESULTS = Path(__file__).parent / "results"
MODELS = ("oracle", "lexical-probe", "nearest-train")


class HumanProposer:
    """The ADVETA annotators' RPL and ADD names, per column, as the pipeline's decisions."""

    label = "ADVETA human annotations (Spider dev, 81 tables)"

    def __init__(self, adveta: Path) -> None:
        self.names: dict[tuple[str, str], dict[str, tuple[list[str], list[str]]]] = {}
        rpl = json.loads((adveta / "spider-rpl-candidates.json").read_text(encoding="utf-8"))
        add = json.loads((adveta / "spider-add-candidates.json").read_text(encoding="utf-8"))
        for key, table in rpl.items():
            columns: dict[str, tuple[list[str], list[str]]] = {}
            added = add.get(key, {}).get("dict", {})
            for header, original in zip(
                table["header"], table["column_names_original"], strict=True
            ):
                names = (list(table["dict"].get(header, [])), list(added.get(header, [])))
                columns[header.lower()] = names
                columns[original.lower()] = names
            self.names[(table["db_id"], table["table_name_original"].lower())] = columns

    def __call__(self, tables: Sequence[Table]) -> list[PerturbationResult]:
        results = []
        for table in tables:
            db_id, _, name = (table.id or "").partition(".")
            annotated = self.names.get((db_id, name.lower()), {})
            columns = []
            for col in table.targets():
                rpl, add = annotated.get(
                    col.name.lower(), annotated.get((col.original_name or "").lower(), ([], []))
                )
                columns.append(
                    ColumnPerturbations(
                        column=col.name,
                        replace=[_decision(n, col, 1.0) for n in rpl],
                        add=[_decision(n, col, 0.0) for n in add],
                    )
                )
            results.append(
                PerturbationResult(
                    table_id=table.id,
                    primary_entity=table.name or "",
                    entity_source="table-name",
                    columns=columns,
                )
            )
        return results


def _decision(name: str, column: Any, score: float) -> Decision:
    return Decision(
        name=name, type=column.type, e1=score, e2=score, source="thesaurus", provenance="adveta"
    )


def _pipeline() -> tuple[Proposer, str]:
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions
    from cta.settings import get_settings

    settings = get_settings()
    needed = [settings.resolved_index_dir()]
    if settings.judge_model is None:
        needed.append(Path(settings.resolved_judge_model()))
    for path in needed:
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing (cta setup builds it)")
    pipeline = Pipeline.from_settings(settings)
    options = PerturbOptions(seed=0)

    def propose(tables: Sequence[Table]) -> list[PerturbationResult]:
        return pipeline.perturb_many(tables, options)

    return propose, "cta-pipeline (Pipeline.from_settings, default settings)"


def _build(proposer: Proposer, out: Path, spider: Path, seeds: int) -> dict[str, Any]:
    if (out / "dev_original.json").is_file():
        return {"reused": True}
    dataset = load_spider(spider / "tables.json", spider / "dev.json")
    run = perturb_spider(
        dataset,
        proposer,
        out,
        kinds=("rpl", "add"),
        seeds=range(seeds),
        check_execution=True,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    verification = run.verification or {}
    return {
        "rewritten": run.rewritten,
        "not_rewritten": run.not_rewritten,
        "unchanged_entries": run.unchanged,
        "perturbed_databases": run.variants,
        "equivalent_share": verification.get("equivalent_share"),
        "seconds": run.seconds,
    }


#: a kind's figures, in the order of the table's columns
_PARTS = ("pre", "post", "absolute_drop", "relative_drop", "relative_robustness")


def _kinds(report: EvalReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "original": report.original["dev"].model_dump(exclude_none=True),
        "statuses": report.statuses,
        "seconds": report.seconds,
    }
    for k in report.kinds:
        out[k.kind] = {
            "seeds": k.seeds,
            **{part: {m: s.model_dump() for m, s in getattr(k, part).items()} for part in _PARTS},
        }
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# `cta eval` on Spider dev: this project's perturbations vs human ADVETA",
        "",
        result["note"],
        "",
        "| proposer | model | kind | pre | post | abs. drop | rel. drop | robustness |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]

    def cell(spread: dict[str, Any] | None) -> str:
        if not spread or spread.get("mean") is None:
            return "—"
        return f"{100 * spread['mean']:.1f} ± {100 * (spread.get('std') or 0):.1f}"

    for proposer, models in result["folders"].items():
        for model, figures in models.get("models", {}).items():
            metric = "linking_recall" if model == "lexical-probe" else "ex"
            # (label, metric, the parts shown): the model's own figure, then its extras
            rows = [(f"{model} ({'link recall' if metric != 'ex' else 'EX'})", metric, _PARTS)]
            if model == "nearest-train":
                rows.append((f"{model} (EM)", "em", _PARTS))
            if model == "lexical-probe":
                rows.append((f"{model} (link precision)", "linking_precision", _PARTS[:2]))
            for label, shown, parts in rows:
                for kind in ("rpl", "add"):
                    k = figures.get(kind)
                    if k is not None:
                        cells = [cell(k[p].get(shown)) if p in parts else "—" for p in _PARTS]
                        lines.append(f"| {proposer} | {label} | {kind} | {' | '.join(cells)} |")
    missing = result.get("missing")
    if missing:
        lines += ["", f"Not measured: {missing}"]
    lines += ["", "![pre vs post](eval_spider.png)", ""]
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("nearest-train", "ex", "nearest-train EX"),
        ("lexical-probe", "linking_recall", "lexical-probe linking recall"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 3.8))
    for ax, (model, metric, title) in zip(axes, panels, strict=True):
        labels, pre, post, pre_err, post_err = [], [], [], [], []
        for proposer, folder in result["folders"].items():
            figures = folder.get("models", {}).get(model, {})
            for kind in ("rpl", "add"):
                k = figures.get(kind)
                if k is None or k["pre"].get(metric) is None:
                    continue
                labels.append(f"{proposer}\n{kind.upper()}")
                pre.append(100 * k["pre"][metric]["mean"])
                post.append(100 * k["post"][metric]["mean"])
                pre_err.append(100 * (k["pre"][metric]["std"] or 0))
                post_err.append(100 * (k["post"][metric]["std"] or 0))
        x = list(range(len(labels)))
        ax.bar([i - 0.2 for i in x], pre, 0.4, yerr=pre_err, capsize=3, label="pre (original)")
        ax.bar([i + 0.2 for i in x], post, 0.4, yerr=post_err, capsize=3, label="post (perturbed)")
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylim(0, 100)
        ax.set_ylabel("%")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proposers", default="human,pipeline")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/cta-eval-spider"))
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    spider, adveta = args.data / "spider", args.data / "adveta"
    models = [m for m in args.models.split(",") if m]
    started = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "eval_spider",
        "split": "dev",
        "seeds": args.seeds,
        "note": (
            "Spider dev (1,034 questions, databases synthesised from tables.json), RPL and ADD "
            f"with {args.seeds} seeds; pre = original question on the original database, post = "
            "perturbed record on its perturbed database, paired by source_index (Dr.Spider). "
            "Figures in %, mean ± sample std over seeds. nearest-train retrieves among Spider "
            "train questions (TF-IDF over linking templates) and adapts the SQL by linking."
        ),
        "folders": {},
    }
    missing = []
    for name in [p for p in args.proposers.split(",") if p]:
        if name == "human":
            proposer: Proposer = HumanProposer(adveta)
            label = HumanProposer.label
        elif name == "pipeline":
            try:
                proposer, label = _pipeline()
            except Exception as exc:  # no judge in the cache yet: measure the rest
                missing.append(f"pipeline ({type(exc).__name__}: {exc})")
                continue
        else:
            raise SystemExit(f"unknown proposer {name!r}")
        folder = args.work / name
        entry: dict[str, Any] = {
            "proposer": label,
            "build": _build(proposer, folder, spider, args.seeds),
            "models": {},
        }
        directory = load_directory(folder)
        for model in models:
            predictor = reference_model(model, spider / "train_spider.json", spider / "tables.json")
            print(f"{name}: {model}", file=sys.stderr, flush=True)
            report, _ = evaluate(
                directory, predictor, linking=model == "lexical-probe", model_name=model
            )
            entry["models"][model] = _kinds(report)
        result["folders"][name] = entry
    result["missing"] = "; ".join(missing)
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["machine"] = (
        f"{platform.machine()}, {platform.python_version()}, {os.cpu_count()} cores, load "
        f"average {os.getloadavg()[0]:.2f} at the end"
    )
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "eval_spider.json").write_text(
        json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    plot(result, args.results / "eval_spider.png")
    (args.results / "eval_spider.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
