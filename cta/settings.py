"""One settings object for the engine (the service extends it: :mod:`service.settings`).

Every component is picked here *by name* (see :mod:`cta.registry`) and every number of the
method (docs/method.md §3) is a field, so a pipeline is data, not code edits. Values come from
the environment with the ``CTA_`` prefix (``CTA_JUDGE_MODEL=roberta-large-mnli``) or from a
``.env`` file. This module is also the single place that decides where caches and built
artefacts live (:attr:`Settings.home`).

A component field (``retriever``, ``encoder``, ``vectors``, ``lexicon``, ``candidate_sources``,
``entity_linker``, ``judge``) holds any name: the registry knows which exist, and the module
that implements a component registers it there, so a new one needs no edit here. A name is
checked where its component is built (:func:`cta.registry.create`, :func:`cta.registry.check`),
not here: knowing the names means importing their modules (:mod:`cta.providers`), and some load
heavy libraries (gensim), which ``import cta; cta.Settings()`` does not. The knobs of judge
training are apart, in :class:`cta.training.settings.TrainingSettings`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cta"


# The association threshold of the shipped judge, calibrated on the annotations dev split
# (models/judge/README.md, benchmarks/results/judge.json "association_calibration").
ADD_ASSOCIATION_DEFAULT = 0.5
# The entity-link threshold, chosen on the annotations dev split (benchmarks/results/add_quality.json).
ENTITY_LINK_THRESHOLD_DEFAULT = 0.7


class Settings(BaseSettings):
    """All configuration of the CTA engine (the service's own fields are on
    :class:`service.settings.ServiceSettings`, a subclass with the same ``CTA_`` prefix)."""

    model_config = SettingsConfigDict(
        env_prefix="CTA_", env_file=".env", extra="ignore", protected_namespaces=()
    )

    # -- where built artefacts live ------------------------------------------------------
    home: Path = Field(default_factory=_default_home, description="Cache of built artefacts")

    annotations_dir: Path | None = Field(
        default=None,
        description="Annotated columns + thesaurus (default: the repository's data/annotations)",
    )

    # -- 3.1 retrieve ----------------------------------------------------------------------
    retriever: str = Field(
        default="dense",
        description="Retriever of domain-related corpus tables: dense (the FAISS index, "
        "queried with CTA_ENCODER)",
    )
    encoder: str = Field(
        default="minilm",
        description="Table encoder of the dense retriever: minilm (shipped), sentence-transformers, tapas",
    )
    encoder_path: str | None = Field(
        default=None, description="Local path/hub name of the encoder (minilm: shipped package)"
    )
    encoder_precision: Literal["auto", "fastest", "fp32", "bf16", "fp16"] = Field(
        default="auto",
        description="Encoder inference: auto = bf16 on CUDA, fp32 on the CPU; fastest = bf16 "
        "where the CPU has bfloat16 instructions",
    )
    index_dir: Path | None = Field(
        default=None, description="FAISS index dir (default: home/index)"
    )
    index_kind: Literal["flat", "ivf", "hnsw"] = Field(
        default="flat",
        description="FAISS index: flat (exact inner product), ivf or hnsw (approximate, millions of tables)",
    )
    retrieve_top_k: int = Field(
        default=100, description="Corpus tables retrieved per query table (paper: 100)"
    )
    values_per_column: int = Field(
        default=3, description="Cell values per column in the table text the encoder sees"
    )
    use_questions_in_query: bool = Field(
        default=True, description="Add the table's NL questions, when given, to the retrieval query"
    )

    # -- 3.2 rerank ------------------------------------------------------------------------
    vectors: str = Field(
        default="glove-retrofit",
        description="Reranker word vectors: glove-retrofit (built here), glove, numberbatch, keyedvectors",
    )
    vectors_path: Path | None = Field(default=None, description="KeyedVectors file (numberbatch…)")
    pool_min_zipf: float = Field(
        default=3.0,
        description="Retrieved column names kept only if every word has this wordfreq Zipf (0 = off)",
    )
    pool_humanise: bool = Field(
        default=True,
        description="Write code-style corpus headers as words (SalePrice → sale price)",
    )
    rerank_top_k: int = Field(
        default=20, description="Pool columns kept per target column by the reranker (paper: 20)"
    )

    # -- 3.3 dictionary --------------------------------------------------------------------
    lexicon: str = Field(default="wordnet", description="Dictionary of the word-level replacer")
    wordnet_dir: Path = Field(
        default=Path("/usr/share/wordnet"),
        description="Debian WordNet 3.0 files (wordnet-base, wordnet-sense-index)",
    )
    dictionary_keep_prob: float = Field(
        default=0.25, description="Probability that a word stays unchanged (paper: 0.25)"
    )
    dictionary_max_candidates: int = Field(
        default=20, description="Dictionary candidates per column (paper: 20)"
    )
    dictionary_max_repeats: int = Field(
        default=5, description="Stop sampling after this many consecutive repeats (paper: 5)"
    )
    dictionary_min_zipf: float = Field(
        default=2.5, description="Minimum wordfreq Zipf frequency of every replacement word"
    )
    dictionary_max_senses: int = Field(
        default=1,
        ge=0,
        description="Synonyms only from a word's most frequent WordNet senses (0 = all senses)",
    )
    candidate_sources: list[str] = Field(
        default_factory=lambda: ["entity-schema", "thesaurus"],
        description="Sources of names people write: entity-schema (the linked entity schema's "
        "columns: RPL + ADD names), thesaurus (data/annotations: RPL + ADD names)",
    )

    # -- entity schemas: what tables about a kind of row contain --------------------------
    entity_linker: str = Field(
        default="entity-schemas",
        description="Entity linker: a table → its entity schemas, each column → the schema "
        "column it names",
    )
    entity_schemas: str = Field(
        default="shipped",
        description="Entity-schema file: shipped (data/entity-schemas), a schemas.jsonl path, "
        "or none (no linking; the other sources alone)",
    )
    entity_link_threshold: float = Field(
        default=ENTITY_LINK_THRESHOLD_DEFAULT,
        description="A table links to its best entity schema when the link score reaches this "
        "(chosen on the annotations dev split)",
    )
    entity_align_min_similarity: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="A column no schema header names aligns with the schema column whose "
        "header is this similar to it (word vectors)",
    )
    entity_schema_add_candidates: int = Field(
        default=10,
        ge=0,
        description="Schema columns judged as ADD names per aligned column: its own facet "
        "first, then the nearest by word vectors",
    )

    # -- 3.4 judge -------------------------------------------------------------------------
    judge: str = Field(
        default="hf-nli",
        description="Judge implementation (hf-nli: any HF sequence-classification NLI checkpoint)",
    )
    judge_model: str | None = Field(
        default=None,
        description="NLI checkpoint path or hub name (default: the shipped judge, models/judge)",
    )
    judge_template: str = Field(
        default="{entity} {column} ({type})",
        description="Premise/hypothesis template (paper: '{entity} {column} ({type})')",
    )
    judge_batch_size: int = Field(
        default=64, ge=1, description="Pairs per forward pass of the judge on the CPU"
    )
    judge_gpu_batch_size: int = Field(
        default=1024, ge=1, description="Pairs per forward pass of the judge on CUDA"
    )
    judge_precision: Literal["auto", "fastest", "fp32", "bf16", "fp16", "int8"] = Field(
        default="auto",
        description="Judge inference: auto = bf16 autocast on CUDA, fp32 (the reference) on "
        "the CPU; fastest = bf16 where the CPU has bfloat16 instructions, else int8 with its "
        "fp32 re-check; int8 = dynamic quantisation of the linear layers (CPU, see docs/design.md)",
    )
    judge_recheck_margin: float = Field(
        default=0.1,
        ge=0.0,
        le=0.5,
        description="With int8: scores within this margin of the RPL/ADD thresholds are "
        "re-scored by the fp32 judge (0 = off)",
    )
    judge_add_waves: bool = Field(
        default=True,
        description="Check each ADD candidate against the table's columns most-similar-first, "
        "in waves, stopping at the first that rules it out (same decisions, fewer pairs)",
    )
    judge_cache_size: int = Field(
        default=200_000, description="Directed pairs kept in the judge's LRU cache"
    )
    judge_max_length: int = Field(default=64, description="Tokens per premise+hypothesis")
    rpl_threshold: float = Field(
        default=0.65, description="RPL if min(e1, e2) ≥ this (paper: 0.65; released code 0.50/0.70)"
    )
    add_threshold: float = Field(
        default=0.45, description="ADD if max(e1, e2) ≤ this against every column (paper: 0.45)"
    )
    add_association: float | None = Field(
        default=ADD_ASSOCIATION_DEFAULT,
        ge=0,
        le=1,
        description="ADD also needs association with its target ≥ this: mean P(neutral) both "
        "ways of a three-way judge (chosen on the annotations dev split); none = the paper's "
        "rule alone",
    )
    add_association_top_k: int = Field(
        default=8,
        ge=1,
        description="ADD names kept per column, most associated first, before the check "
        "against every column",
    )
    add_min_shared_columns: int = Field(
        default=1,
        ge=0,
        description="A retrieved ADD name needs a retrieved table that holds it and at least "
        "this many of the table's columns (domain support, chosen on the annotations dev "
        "split; 0 = any retrieved table, as before)",
    )
    rpl_aggregation: Literal["min", "mean", "max"] = Field(
        default="min", description="How e1, e2 combine for RPL (paper: min ≥ threshold)"
    )
    add_aggregation: Literal["max", "mean", "min"] = Field(
        default="max", description="How e1, e2 combine for ADD (paper: max ≤ threshold)"
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="auto = CUDA when present, else CPU"
    )
    runtime: Literal["auto", "torch", "onnx"] = Field(
        default="auto",
        description="What runs the judge and the table encoder: auto = ONNX Runtime on the "
        "CPU at fp32 (the same answers, faster, no torch import; exported once under "
        "home/onnx), torch elsewhere; torch = always torch; onnx = insist on ONNX Runtime",
    )

    # -- 3.5 context -----------------------------------------------------------------------
    entity_from_name: bool = Field(
        default=True,
        description="Use the singularised table name as primary entity when none is given",
    )
    entity_name_max_words: int = Field(
        default=3,
        ge=1,
        description="A longer table name is a title, not an entity: the entity is predicted",
    )
    entity_hypothesis: str = Field(
        default="This table is about {entity}.",
        description="Zero-shot TPE hypothesis over the 48 entity classes",
    )

    @field_validator("add_association", mode="before")
    @classmethod
    def _association_off(cls, value: object) -> object:
        """``CTA_ADD_ASSOCIATION=none`` (or empty): the paper's ADD rule alone."""
        if isinstance(value, str) and value.strip().lower() in ("", "none", "off", "null"):
            return None
        return value

    # -- derived paths (one place) --------------------------------------------------------
    def resolved_index_dir(self) -> Path:
        return self.index_dir or self.home / "index"

    def resolved_judge_model(self) -> str:
        return self.judge_model or str(SHIPPED_JUDGE)

    def resolved_vectors_path(self) -> Path:
        if self.vectors_path is not None:
            return self.vectors_path
        return self.home / "vectors" / f"{self.vectors}.kv"

    def resolved_annotations_dir(self) -> Path:
        return self.annotations_dir or Path(__file__).resolve().parents[1] / "data" / "annotations"

    def resolved_entity_schemas(self) -> Path | None:
        """The entity-schema file (None: ``none``, linking off)."""
        value = self.entity_schemas.strip()
        if value.lower() in ("", "none", "off"):
            return None
        if value == "shipped":
            return SHIPPED_ENTITY_SCHEMAS
        return Path(value)

    def nltk_dir(self) -> Path:
        return self.home / "nltk_data"

    def onnx_dir(self) -> Path:
        """Where models exported to ONNX are kept (:mod:`cta.runtimes`)."""
        return self.home / "onnx"


# The judge shipped in the repository (a model folder with its card and recipe; see its README).
SHIPPED_JUDGE = Path(__file__).resolve().parents[1] / "models" / "judge"
# The entity schemas shipped in the repository (a data folder with its card; see its README).
SHIPPED_ENTITY_SCHEMAS = (
    Path(__file__).resolve().parents[1] / "data" / "entity-schemas" / "schemas.jsonl"
)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings read once from the environment."""
    return Settings()


def markdown_table(model: type[BaseSettings], names: Iterable[str]) -> str:
    """A Markdown configuration table (variable, default, what it sets) of the fields
    ``names`` of ``model``; docs/configuration.md's are :func:`cta.cli.configuration.settings_tables`."""
    rows = ["| variable | default | what it sets |", "|---|---|---|"]
    for name in names:
        field = model.model_fields[name]
        if name == "home":
            default = "~/.cache/cta"
        elif field.default_factory is not None:
            default = json.dumps(field.default_factory())  # type: ignore[call-arg]
        elif field.default is None:
            default = "—"
        else:
            default = str(field.default.value if hasattr(field.default, "value") else field.default)
        text = (field.description or "").replace("|", "\\|")
        rows.append(f"| `CTA_{name.upper()}` | `{default}` | {text} |")
    return "\n".join(rows) + "\n"
