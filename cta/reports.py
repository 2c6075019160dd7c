"""What a dataset or evaluation job hands back: one Spider database through the protocol, and
``cta eval``'s scores (per question, per set, per kind). Plain pydantic models, so the client
SDK parses job results with them without loading the SQL engine; the code that fills them is
in :mod:`cta.datasets.spider` and :mod:`cta.evaluation.scoring`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from cta.sql.examples import PerturbedExample

__all__ = [
    "EvalDatabaseResult",
    "EvalReport",
    "ItemResult",
    "KindSummary",
    "Scores",
    "SetResult",
    "SpiderDatabaseResult",
    "Spread",
]


class SpiderDatabaseResult(BaseModel):
    """One Spider database through the protocol, in memory: what a service dataset job returns.

    The same content :func:`perturb_spider` writes to files, for one database and without the
    SQLite files: the perturbed ``tables.json`` entries, the rewritten question records per
    kind and seed, and every example × kind × seed mapping (with the problem when its SQL
    could not be rewritten).
    """

    db_id: str
    tables: list[dict[str, Any]] = Field(
        description="tables.json entries of the perturbed databases (db_id suffixed)"
    )
    questions: dict[str, list[dict[str, Any]]] = Field(
        description="Rewritten question records by '<kind>_s<seed>', in input order"
    )
    mappings: list[PerturbedExample] = Field(
        description="Every record × kind × seed: mapping applied, rewritten SQL or problem"
    )
    descriptions: dict[str, dict[str, list[dict[str, str]]]] = Field(
        default_factory=dict,
        description="BIRD: each perturbed database's description rows by table "
        "(database_description/<table>.csv as records)",
    )


class ItemResult(BaseModel):
    """One question: the prediction and its verdicts."""

    set: str
    position: int
    source_index: int
    kind: str
    seed: int | None
    db_id: str
    question: str
    gold: str
    pred: str | None = None
    ex: bool | None = Field(default=None, description="None: not scored (gold fails, probe)")
    em: bool | None = Field(default=None, description="None: not scored (gold outside EM)")
    status: str = Field(default="", description="correct, wrong, pred_error, gold_error…")
    message: str = ""
    gold_columns: list[str] | None = None  # the probe: columns the gold SQL mentions
    linked_columns: dict[str, str] | None = None  # the probe: linked column → strength
    difficulty: str | None = None  # BIRD's simple, moderate, challenging
    question_id: int | str | None = None  # BIRD's question_id


class Scores(BaseModel):
    """Metrics over a group of items; ``None`` when nothing in the group could be scored."""

    n: int
    ex: float | None = None
    em: float | None = None
    linking_recall: float | None = None
    linking_precision: float | None = None
    exact_linking_recall: float | None = None


class Spread(BaseModel):
    mean: float | None
    std: float | None


class SetResult(BaseModel):
    """A perturbed set against the originals of the same examples."""

    name: str
    set: str
    kind: str
    seed: int | None
    n: int
    pre: Scores
    post: Scores
    absolute_drop: dict[str, float | None]
    relative_drop: dict[str, float | None]
    relative_robustness: dict[str, float | None]
    pre_by_difficulty: dict[str, Scores] = Field(
        default_factory=dict, description="BIRD: pre by difficulty (empty without one)"
    )
    post_by_difficulty: dict[str, Scores] = Field(
        default_factory=dict, description="BIRD: post by difficulty (empty without one)"
    )


class KindSummary(BaseModel):
    """One kind over its seeds: mean ± sample standard deviation of each figure."""

    name: str
    kind: str
    seeds: list[int | None]
    pre: dict[str, Spread]
    post: dict[str, Spread]
    absolute_drop: dict[str, Spread]
    relative_drop: dict[str, Spread]
    relative_robustness: dict[str, Spread]
    pre_by_difficulty: dict[str, dict[str, Spread]] = Field(
        default_factory=dict, description="BIRD: difficulty → pre figures (empty without one)"
    )
    post_by_difficulty: dict[str, dict[str, Spread]] = Field(
        default_factory=dict, description="BIRD: difficulty → post figures (empty without one)"
    )


class EvalReport(BaseModel):
    """Everything ``cta eval`` measured."""

    model: str
    directory: str
    original: dict[str, Scores]  # by dataset name: every original question
    sets: list[SetResult]
    kinds: list[KindSummary]
    statuses: dict[str, int]
    skipped_files: list[str] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict)
    not_evaluated: dict[str, str] = Field(
        default_factory=dict,
        description="Sets left out, never scored (no predictions, or not one per question): "
        "set → why",
    )
    databases: str | None = Field(
        default=None,
        description="What the figures were computed on when the databases were synthesised "
        "from the schema (EX is then not comparable with scores on the dataset's own databases)",
    )
    database_folders: list[str] = Field(
        default_factory=list, description="The folders the databases were read from"
    )
    convention: str = Field(
        default="test-suite",
        description="How EX compares results: test-suite-sql-eval's (bags of rows, columns in "
        "any order) or BIRD's (sets of rows)",
    )
    original_by_difficulty: dict[str, dict[str, Scores]] = Field(
        default_factory=dict,
        description="BIRD: by dataset name, every original question's scores by difficulty",
    )


class EvalDatabaseResult(BaseModel):
    """The questions of one source database (original and perturbed), scored."""

    db_id: str
    model: str
    items: list[ItemResult] = Field(default_factory=list)
    databases: str | None = Field(
        default=None, description="What the databases were: synthesised from the schema"
    )
