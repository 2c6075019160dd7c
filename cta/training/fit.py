"""The fine-tuning loop of the offline judge: text pairs + labels → a sequence classifier.

Kept apart from the supervision (what to learn) so the same loop trains the default judge in
``cta setup`` and the recipe sweeps of ``benchmarks/judge_recipes.py``; it needs only torch,
transformers and tqdm.

Cheaper steps, same rows: texts are tokenised once, batches are length-bucketed (little
padding), the word-embedding matrix stays frozen (its 30k rows would dominate each optimiser
step), and on CPUs with bfloat16 matrix units (AMX) or on CUDA the forward and backward run
under bfloat16 autocast with fp32 master weights (``precision="auto"``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from cta.devices import cpu_flags  # these two import nothing heavy: the loop loads beside
from cta.judge.batching import pad_batch  # torch alone (benchmarks/judge_recipes.py)

Precision = Literal["auto", "fp32", "bf16"]


@dataclass(frozen=True)
class FitConfig:
    """Optimisation knobs (the judge's recipe; settings fields ``judge_train_*``)."""

    epochs: float = 1.0
    # Stop after this many epochs of the ``epochs``-long schedule (None: run it to the end).
    stop_after_epochs: float | None = None
    batch_size: int = 32
    learning_rate: float = 5e-5
    max_length: int = 64
    seed: int = 0
    precision: Precision = "auto"
    warmup_share: float = 0.06

    def __post_init__(self) -> None:
        if self.epochs <= 0 or self.batch_size < 1:
            raise ValueError("epochs must be > 0 and batch_size ≥ 1")
        if self.stop_after_epochs is not None and not 0 < self.stop_after_epochs <= self.epochs:
            raise ValueError("stop_after_epochs must be in (0, epochs]")


def resolve_precision(precision: Precision, device: str) -> Literal["fp32", "bf16"]:
    """``auto``: bf16 on CUDA and on CPUs with AMX bf16 tiles, fp32 elsewhere."""
    if precision != "auto":
        return precision
    if device.startswith("cuda"):
        return "bf16"
    return "bf16" if "amx_bf16" in cpu_flags() else "fp32"


def new_classifier(base: str, labels: Sequence[str]) -> tuple[Any, Any]:
    """Tokenizer and a ``labels``-way sequence classifier from the encoder ``base``, its
    weights rounded to fp16 (fp32 tensors).

    The rounding makes the starting point the same wherever the recipe runs: a GPU host that
    receives the base in fp16 (its transfers are size-limited) and a CPU that has it in fp32.
    """
    import torch  # deferred: loaded only when a judge is trained
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    # The base is an encoder; a classification head it may carry is replaced (other size).
    model = AutoModelForSequenceClassification.from_pretrained(
        base,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        ignore_mismatched_sizes=True,
    ).float()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(parameter.to(torch.float16).to(torch.float32))
    return tokenizer, model


def encode_pairs(
    tokenizer: Any, premises: Sequence[str], hypotheses: Sequence[str], max_length: int
) -> list[dict[str, list[int]]]:
    """Token ids of each (premise, hypothesis) pair, unpadded."""
    encoded = tokenizer(list(premises), list(hypotheses), truncation=True, max_length=max_length)
    keys = list(encoded.keys())
    return [{k: encoded[k][i] for k in keys} for i in range(len(premises))]


def length_bucketed_batches(
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


def collate(features: Sequence[dict[str, list[int]]], rows: Sequence[int], pad_id: int) -> Any:
    """Right-padded tensors of the selected pairs (the judge's own :func:`pad_batch`)."""
    columns = {key: {i: features[i][key] for i in rows} for key in features[rows[0]]}
    return pad_batch(columns, rows, pad_id)


def fit_cross_encoder(
    model: Any,
    tokenizer: Any,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    labels: Sequence[int],
    config: FitConfig,
    *,
    device: str = "cpu",
    progress: bool = True,
    desc: str = "training judge",
    on_epoch: Callable[[int], bool] | None = None,
) -> int:
    """Fine-tune ``model`` in place on the labelled pairs; returns the optimiser steps taken.

    The learning-rate schedule spans ``config.epochs``; training stops early after
    ``config.stop_after_epochs``. ``on_epoch(epoch)`` is called (model in eval mode) after each
    whole epoch; it returns False to stop there (a recipe sweep's per-epoch evaluation).
    """
    # deferred: torch, tqdm and transformers load only when the loop runs (seconds of imports)
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    if not len(premises) == len(hypotheses) == len(labels) or not labels:
        raise ValueError("premises, hypotheses and labels must be equally long and non-empty")
    precision = resolve_precision(config.precision, device)
    features = encode_pairs(tokenizer, premises, hypotheses, config.max_length)
    batches_per_epoch = math.ceil(len(features) / config.batch_size)
    total_steps = max(1, math.ceil(batches_per_epoch * config.epochs))
    last_step = total_steps
    if config.stop_after_epochs is not None:
        last_step = max(1, math.ceil(batches_per_epoch * config.stop_after_epochs))
    model.to(device)
    model.get_input_embeddings().weight.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(
        optimizer, round(config.warmup_share * total_steps), total_steps
    )
    order_rng = random.Random(config.seed)
    autocast_device = "cuda" if device.startswith("cuda") else "cpu"
    model.train()
    bar = tqdm(total=last_step, desc=desc, unit="batch", disable=not progress, mininterval=2.0)
    step = 0
    epoch = 0
    running = 0.0
    while step < last_step:
        for rows in length_bucketed_batches(features, config.batch_size, order_rng):
            if step >= last_step:
                break
            batch = {
                k: v.to(device, non_blocking=True)
                for k, v in collate(features, rows, tokenizer.pad_token_id).items()
            }
            target = torch.tensor([labels[i] for i in rows], device=device)
            with torch.autocast(autocast_device, dtype=torch.bfloat16, enabled=precision == "bf16"):
                loss = model(**batch, labels=target).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            value = float(loss.item())
            running = 0.98 * running + 0.02 * value if step > 1 else value
            bar.set_postfix(loss=f"{running:.3f}", refresh=False)
            bar.update(1)
        else:
            epoch += 1
            if on_epoch is not None:
                model.eval()
                go_on = on_epoch(epoch)
                model.train()
                if not go_on:
                    break
    bar.close()
    model.eval()
    return step


def predict_proba(
    model: Any,
    tokenizer: Any,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    *,
    max_length: int = 64,
    batch_size: int = 256,
    device: str = "cpu",
) -> Any:
    """Softmax over the labels for each pair, float32 numpy ``(n, labels)``, in input order."""
    import torch  # deferred: loaded only when pairs are scored

    features = encode_pairs(tokenizer, premises, hypotheses, max_length)
    order = sorted(range(len(features)), key=lambda i: len(features[i]["input_ids"]))
    out = np.zeros((len(features), model.config.num_labels), dtype=np.float32)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = {
                k: v.to(device) for k, v in collate(features, rows, tokenizer.pad_token_id).items()
            }
            logits = model(**batch).logits.float()
            out[rows] = torch.softmax(logits, dim=-1).cpu().numpy()
    return out
