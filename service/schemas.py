"""Request and response models of the HTTP API — the public contract mirrored by ``openapi.yaml``.

The server validates with these models and the client SDK (:mod:`service.client`) parses
with the same ones, so both sides share one definition. Tables, perturbation results and
judge scores are the engine's own models (:mod:`cta.table`, :mod:`cta.results`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    HttpUrl,
    StrictFloat,
    StrictInt,
    Tag,
    model_validator,
)

from cta.reports import EvalDatabaseResult, EvalReport, SpiderDatabaseResult
from cta.results import JudgePair, JudgeScore, PerturbationResult, PerturbOptions
from cta.table import Table

__all__ = [
    "DatasetJobCreate",
    "EvalDatabaseResult",
    "EvalJobCreate",
    "EvalReport",
    "ItemError",
    "ItemStatus",
    "JobCreate",
    "JobItem",
    "JobKind",
    "JobList",
    "JobResultsPage",
    "JobState",
    "JobStatus",
    "JudgePair",
    "JudgeRequest",
    "JudgeResponse",
    "JudgeScore",
    "PerturbOptions",
    "PerturbRequest",
    "PerturbationResult",
    "Problem",
    "Readiness",
    "SpiderDatabaseResult",
    "SpiderJobCreate",
    "Table",
    "TablesJobCreate",
]


def registered_kinds() -> tuple[str, ...]:
    """Every perturbation kind the engine can run: the family registry's names."""
    # deferred: the registry loads the engine; the SDK parses with these models without it
    from cta.families import family_kinds

    return family_kinds()


def _registered_kind(kind: str) -> str:
    known = registered_kinds()
    if kind not in known:
        raise ValueError(f"unknown kind {kind!r}; the kinds are {', '.join(known)}")
    return kind


def _kinds_enum(schema: dict[str, Any]) -> None:
    schema["items"]["enum"] = list(registered_kinds())


DatasetKind = Annotated[str, AfterValidator(_registered_kind)]
"""A perturbation kind: RPL, ADD or a family of the seed papers, checked against the family
registry (:func:`cta.families.family_kinds`), which also gives the document its enum."""
JobKind = Literal["tables", "spider", "dataset", "eval"]
JobState = Literal["queued", "running", "done", "cancelled"]
ItemStatus = Literal["pending", "running", "done", "failed", "cancelled"]


class Problem(BaseModel):
    """Every error response: a short machine-readable code and a message naming the problem."""

    problem: str = Field(description="Short code, e.g. `unknown_column`, `max_rows`, `not_found`")
    message: str = Field(description="What is wrong; on a 422 it starts with `location: `")
    location: str | None = Field(
        default=None,
        description="On every 422, where the problem is: `body`, `query`, `path`, `header` or "
        "`cookie`, then the keys and list indices that lead to it, dot-joined "
        "(`body.table.rows.0.1`, `body.pairs.0.entity`, `query.limit`; `body` alone for the "
        "body as a whole)",
    )
    errors: list[dict[str, Any]] | None = Field(
        default=None,
        description="Field-level validation errors (`location` in the same form, `msg`, "
        "`type`), when the request is invalid",
    )


class Readiness(BaseModel):
    """``GET /readyz``: whether models and index are loaded."""

    ready: bool
    detail: str = ""


_EXAMPLE_TABLE: dict[str, Any] = {
    "name": "books",
    "columns": [
        {"name": "title", "type": "text"},
        {"name": "author", "type": "text"},
        {"name": "price", "type": "number"},
    ],
    "rows": [["Dune", "Frank Herbert", 9.99]],
    "primary_entity": "book",
}


class PerturbRequest(BaseModel):
    """``POST /v1/perturb``: one table and the per-request options."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"table": _EXAMPLE_TABLE, "options": {"seed": 0, "samples": 1}}]
        },
    )

    table: Table
    options: PerturbOptions = Field(default_factory=PerturbOptions)


class JudgeRequest(BaseModel):
    """``POST /v1/judge``: pairs as in ``cta judge``, optional threshold overrides."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "pairs": [
                        {
                            "entity": "book",
                            "target": {"name": "author", "type": "text"},
                            "candidate": {"name": "writer", "type": "text"},
                        }
                    ]
                }
            ]
        },
    )

    pairs: list[JudgePair] = Field(min_length=1)
    rpl_threshold: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    add_threshold: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)


class JudgeResponse(BaseModel):
    """One score per pair, in request order."""

    scores: list[JudgeScore]


class TablesJobCreate(BaseModel):
    """A batch job over tables in the engine's JSON form, each validated on its own.

    An invalid table does not reject the job: it becomes a failed item with its error.
    """

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"tables": [_EXAMPLE_TABLE]}]}
    )

    kind: Literal["tables"] = "tables"
    tables: list[dict[str, Any]] = Field(min_length=1, description="Table objects (see Table)")
    options: PerturbOptions = Field(default_factory=PerturbOptions)


class SpiderJobCreate(BaseModel):
    """A batch job over a Spider ``tables.json`` payload: one item per table of each database.

    A malformed database entry becomes one failed item naming it.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["spider"]
    spider: list[dict[str, Any]] = Field(min_length=1, description="Spider tables.json entries")
    options: PerturbOptions = Field(default_factory=PerturbOptions)


class DatasetJobCreate(BaseModel):
    """The ADVETA protocol over a Spider-format dataset (Spider, or BIRD with
    ``format="bird"``): one item per database.

    Each database's tables are perturbed (every column a question's gold SQL mentions), and
    its question records come back rewritten per kind and seed, with the perturbed
    ``tables.json`` entries and every mapping (:class:`SpiderDatabaseResult`; for BIRD the
    records' ``SQL`` and ``evidence`` rewritten and the perturbed databases' description
    rows). A database entry that cannot be read, or records naming a database the payload
    lacks, become failed items naming the problem.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["dataset"]
    format: Literal["spider", "bird"] = Field(
        default="spider", description="spider, or bird (BIRD's dev_tables.json and dev.json)"
    )
    spider: list[dict[str, Any]] = Field(
        min_length=1, description="Spider tables.json entries (BIRD: dev_tables.json entries)"
    )
    questions: list[dict[str, Any]] = Field(
        min_length=1,
        description="Question records, each with db_id and query (BIRD: SQL, and evidence "
        "rewritten with the schema); other keys kept",
    )
    descriptions: dict[str, dict[str, list[dict[str, str]]]] | None = Field(
        default=None,
        description="BIRD: description rows by db_id and table (database_description/"
        "<table>.csv as records: original_column_name, column_name, column_description, "
        "data_format, value_description)",
    )
    kinds: list[DatasetKind] = Field(
        default=["rpl", "add"],
        min_length=1,
        description="rpl, add (CTA) and the families of the seed papers (cta.families)",
        json_schema_extra=_kinds_enum,
    )
    seeds: list[StrictInt] = Field(default=[0, 1, 2, 3, 4], min_length=1, max_length=20)
    options: PerturbOptions = Field(default_factory=PerturbOptions)


class EvalJobCreate(BaseModel):
    """``cta eval`` as a job: a text-to-SQL model scored on perturbed sets, pre and post.

    ``spider`` holds the ``tables.json`` entries (original and perturbed — a perturbed
    folder's ``tables.json``, or a dataset job's entries) and ``sets`` the question records
    per set, named like the folder's files (``dev_original``, ``dev_rpl_s0``…); each record
    carries ``kind``, ``seed`` and ``source_index`` as ``cta dataset perturb`` writes them.
    Predictions come with the job (``predictions``: per set, one SQL per record, in order),
    from an ``endpoint`` the operator allowed (``CTA_EVAL_ENDPOINTS``; it receives
    ``POST {question, db_id, schema}`` and answers ``{sql}``), or from a built-in ``model``.
    One item per source database (its original and perturbed questions), scored on
    databases synthesised from the entries; ``GET /v1/jobs/{id}/report`` aggregates them.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["eval"]
    spider: list[dict[str, Any]] = Field(min_length=1, description="Spider tables.json entries")
    sets: dict[str, list[dict[str, Any]]] = Field(
        min_length=1, description="Question records per set; <name>_original among them"
    )
    predictions: dict[str, list[str | None]] | None = Field(
        default=None, description="Per set: one predicted SQL per record, in order"
    )
    endpoint: HttpUrl | None = Field(
        default=None, description="A parser: POST {question, db_id, schema} → {sql}"
    )
    model: Literal["oracle", "lexical-probe"] | None = Field(
        default=None, description="A built-in reference model instead of predictions"
    )
    timeout: StrictFloat = Field(default=10.0, gt=0, le=60, description="Seconds per query")
    options: PerturbOptions = Field(default_factory=PerturbOptions)

    @model_validator(mode="after")
    def _one_source(self) -> EvalJobCreate:
        given = [n for n in ("predictions", "endpoint", "model") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of predictions, endpoint and model")
        return self


#: how a union member's tag starts; a validation error's location leaves such tags out
#: (they name a model, not a place in the request)
UNION_TAG = "kind="


def _job_kind(value: Any) -> str:
    kind = value.get("kind", "tables") if isinstance(value, dict) else getattr(value, "kind", "")
    return UNION_TAG + (kind if isinstance(kind, str) else "")


# ``kind`` picks the model and defaults to "tables", so ``{"tables": [...]}`` is enough.
JobCreate = Annotated[
    Annotated[TablesJobCreate, Tag(UNION_TAG + "tables")]
    | Annotated[SpiderJobCreate, Tag(UNION_TAG + "spider")]
    | Annotated[DatasetJobCreate, Tag(UNION_TAG + "dataset")]
    | Annotated[EvalJobCreate, Tag(UNION_TAG + "eval")],
    Discriminator(
        _job_kind,
        custom_error_type="invalid_job_kind",
        custom_error_message="kind must be 'tables', 'spider', 'dataset' or 'eval'",
    ),
]


class JobStatus(BaseModel):
    """A job's state, counts and timestamps (UTC)."""

    id: str
    kind: JobKind
    state: JobState
    total: int
    pending: int
    running: int
    done: int
    failed: int
    cancelled: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def finished(self) -> bool:
        """No table is left to run (done, or cancelled)."""
        return self.state in ("done", "cancelled")


class JobList(BaseModel):
    """``GET /v1/jobs``: the caller's jobs, newest first."""

    jobs: list[JobStatus]


class ItemError(BaseModel):
    """Why one table of a job failed."""

    problem: str
    message: str


class JobItem(BaseModel):
    """One table of a job: its result, or its error, or that it has not run yet."""

    index: int = Field(description="Position of the item in the job (0-based)")
    status: ItemStatus
    table_id: str | None = Field(
        default=None, description="The table's id (dataset jobs: the database's db_id)"
    )
    attempts: int = 0
    result: PerturbationResult | None = Field(
        default=None, description="A done item's perturbations (tables and spider jobs)"
    )
    dataset_result: SpiderDatabaseResult | None = Field(
        default=None, description="A done item's protocol output (dataset jobs: one database)"
    )
    eval_result: EvalDatabaseResult | None = Field(
        default=None, description="A done item's scored questions (eval jobs: one database)"
    )
    error: ItemError | None = None


class JobResultsPage(BaseModel):
    """``GET /v1/jobs/{id}/results``: items ``offset … offset+limit-1`` in table order."""

    job_id: str
    offset: int
    limit: int
    total: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last")
    items: list[JobItem]
