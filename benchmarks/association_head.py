"""Would an association head of its own beat the judge's neutral class? (issue 24, item 2)

The ADD rule's second condition reads association as the mean of the shipped judge's
P(neutral) both ways. This probe fits two heads on the annotations' ``train`` split — a
logistic regression and gradient-boosted trees (scikit-learn), *associated* (1) vs *neither*
(0), *neither* subsampled to three per associated name, seeded — over features the pipeline
already has at that point, or can get for nothing:

* the judge: e1, e2, P(neutral) both ways (candidate in its target's type, as the pipeline
  asks it);
* the reranker's word vectors: similarity of the candidate to its target, to the entity, and
  the largest and mean similarity to the table's other columns (domain fit);
* the name: word count, shared words with the target / any column / the entity, the lowest
  and mean word frequency (Zipf).

Two measurements, both on the annotations' ``dev`` split (never trained on):

1. AUROC, associated vs neither, over every labelled dev pair;
2. the pipeline's own proposals: the ADD names of the open association run of
   ``benchmarks/add_quality.py`` (``add_quality.names.json``: every candidate that passes the
   paper's rule, scored, with its dev label), re-ranked by each score; AUROC on the labelled
   ones, and the share labelled *associated* when each column keeps its best ≤ 8 above
   thresholds at fixed quantiles (the figure of issue 24, 70 % wanted).

Writes ``benchmarks/results/association_head.json``. About 5 minutes on 2 cores.

Usage: ``python benchmarks/association_head.py``
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cta.annotations import AnnotatedTable, load_annotated_tables
from cta.judge.protocol import PairKey
from cta.pipeline import Pipeline
from cta.settings import Settings
from cta.table import ColumnType, InvalidTableError
from cta.words import name_key, word_zipf

ROOT = Path(__file__).resolve().parents[1]
SEED = 0
NEITHER_PER_ASSOCIATED = 3
TOP_K = 8
QUANTILES = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
JUDGE = ("e1", "e2", "n1", "n2")
VECTORS = ("sim_target", "sim_entity", "sim_max_other", "sim_mean_other")
NAME = ("words", "shares_target", "shares_column", "shares_entity", "zipf_min", "zipf_mean")
FEATURES = JUDGE + VECTORS + NAME


def _pair(table: AnnotatedTable, column: str, candidate: str, label: str) -> dict[str, Any]:
    types = {c.name: c.type for c in table.columns}
    return {
        "table": table.id,
        "entity": table.entity or table.name,
        "column": column,
        "type": ColumnType(types.get(column, ColumnType.TEXT)),
        "columns": [c.name for c in table.columns],
        "candidate": candidate,
        "label": label,
    }


def annotation_pairs(settings: Settings) -> list[dict[str, Any]]:
    """Every associated / neither pair of the annotations (train: neither subsampled)."""
    rng = random.Random(SEED)
    out = []
    for split in ("train", "dev"):
        for table in load_annotated_tables(settings.resolved_annotations_dir(), split):
            for column, annotation in sorted(table.targets.items()):
                associated = list(dict.fromkeys(annotation.associated))
                neither = list(dict.fromkeys(annotation.neither))
                if split == "train":
                    rng.shuffle(neither)
                    neither = neither[: max(3, NEITHER_PER_ASSOCIATED * len(associated))]
                for label, names in (("associated", associated), ("neither", neither)):
                    for name in names:
                        out.append({**_pair(table, column, name, label), "split": split})
    return out


def proposal_pairs(settings: Settings) -> list[dict[str, Any]]:
    """The open association run's ADD names on the dev tables, with their labels."""
    names = json.loads((ROOT / "benchmarks/results/add_quality.names.json").read_text())
    tables = {t.id: t for t in load_annotated_tables(settings.resolved_annotations_dir(), "dev")}
    return [
        {**_pair(tables[c["table"]], c["column"], n["name"], n["label"]), "split": "dev"}
        for c in names["association-open"]
        for n in c["add"]
    ]


def featurise(pipeline: Pipeline, pairs: Sequence[dict[str, Any]]) -> np.ndarray:
    """The feature rows of ``pairs`` (in :data:`FEATURES` order); unjudgeable pairs are NaN."""
    keys: list[PairKey | None] = []
    for p in pairs:
        key = PairKey(p["entity"], p["column"], p["type"], p["candidate"], p["type"])
        try:
            key.judge_pair()
        except (
            InvalidTableError,
            ValueError,
        ):  # a name the judge refuses (empty, control characters)
            keys.append(None)
            continue
        keys.append(key)
    wanted = dict.fromkeys(k for k in keys if k is not None)
    forward = pipeline._probabilities(wanted)
    backward = pipeline._probabilities(wanted, reverse=True)
    similarity = pipeline.reranker.similarity
    rows = []
    for p, key in zip(pairs, keys, strict=True):
        if key is None:
            rows.append([float("nan")] * len(FEATURES))
            continue
        (e1, n1), (e2, n2) = forward[key], backward[key]
        cand = p["candidate"]
        others = [c for c in p["columns"] if c != p["column"]]
        sims = [similarity(cand, o) for o in others] or [0.0]
        words = set(name_key(cand).split())
        column_words = {w for c in p["columns"] for w in name_key(c).split()}
        zipfs = [word_zipf(w) for w in words] or [0.0]
        rows.append(
            [
                e1,
                e2,
                n1,
                n2,
                similarity(cand, p["column"]),
                similarity(cand, p["entity"]),
                max(sims),
                float(np.mean(sims)),
                len(words),
                bool(words & set(name_key(p["column"]).split())),
                bool(words & column_words),
                bool(words & set(name_key(p["entity"]).split())),
                min(zipfs),
                float(np.mean(zipfs)),
            ]
        )
    return np.asarray(rows, dtype=float)


def replay(pairs: Sequence[dict[str, Any]], scores: np.ndarray) -> list[dict[str, Any]]:
    """Per threshold (score quantiles): ADD names per column and the labelled-associated share
    when each column keeps its best :data:`TOP_K` names at or above it."""
    out = []
    for q in QUANTILES:
        threshold = float(np.quantile(scores, q))
        by_column: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
        for p, s in zip(pairs, scores, strict=True):
            by_column[(p["table"], p["column"])].append((float(s), p["label"]))
        kept = []
        for found in by_column.values():
            best = sorted((x for x in found if x[0] >= threshold), key=lambda x: -x[0])
            kept += [label for _, label in best[:TOP_K]]
        labelled = [lab for lab in kept if lab != "unlabelled"]
        out.append(
            {
                "quantile": q,
                "add_per_column": round(len(kept) / len(by_column), 2),
                "labelled": len(labelled),
                "labelled_associated": round(
                    sum(lab == "associated" for lab in labelled) / max(1, len(labelled)), 4
                ),
            }
        )
    return out


def main() -> None:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    began = time.perf_counter()
    settings = Settings()
    pipeline = Pipeline.from_settings(settings)
    pairs = annotation_pairs(settings)
    proposals = proposal_pairs(settings)
    x_all = featurise(pipeline, pairs)
    x_prop = featurise(pipeline, proposals)
    keep = ~np.isnan(x_all).any(axis=1)
    pairs = [p for p, k in zip(pairs, keep, strict=True) if k]
    x_all = x_all[keep]
    train = np.array([p["split"] == "train" for p in pairs])
    y = np.array([p["label"] == "associated" for p in pairs])
    labelled = np.array([p["label"] in ("associated", "neither") for p in proposals])
    y_prop = np.array([p["label"] == "associated" for p in proposals])

    def judge_neutral(x: np.ndarray) -> np.ndarray:
        return np.asarray((x[:, 2] + x[:, 3]) / 2)

    def fitted(model: Any, columns: Sequence[str]) -> Callable[[np.ndarray], np.ndarray]:
        idx = [FEATURES.index(c) for c in columns]
        model.fit(x_all[train][:, idx], y[train])
        return lambda x: np.asarray(model.predict_proba(x[:, idx])[:, 1])

    scorers: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "judge-neutral (shipped)": judge_neutral,
        "logistic, judge": fitted(
            make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)), JUDGE
        ),
        "logistic, all": fitted(
            make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)), FEATURES
        ),
        "boosted trees, all": fitted(
            HistGradientBoostingClassifier(random_state=SEED, max_iter=300, learning_rate=0.05),
            FEATURES,
        ),
    }
    results: dict[str, Any] = {
        "train_pairs": int(train.sum()),
        "train_associated": int(y[train].sum()),
        "dev_pairs": int((~train).sum()),
        "dev_associated": int(y[~train].sum()),
        "proposals": len(proposals),
        "proposals_labelled": int(labelled.sum()),
        "proposals_labelled_associated": int(y_prop[labelled].sum()),
        "features": list(FEATURES),
        "heads": {},
    }
    for name, score in scorers.items():
        dev_scores = score(x_all[~train])
        prop_scores = score(x_prop)
        results["heads"][name] = {
            "dev_auroc_associated_vs_neither": round(
                float(roc_auc_score(y[~train], dev_scores)), 4
            ),
            "proposals_auroc": round(
                float(roc_auc_score(y_prop[labelled], prop_scores[labelled])), 4
            ),
            "proposals_replay": replay(proposals, prop_scores),
        }
    results["seconds"] = round(time.perf_counter() - began, 1)
    out = ROOT / "benchmarks/results/association_head.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results["heads"], indent=1))


if __name__ == "__main__":
    main()
