"""Settings of the HTTP service, its batch jobs and the ``cta jobs`` client.

:class:`ServiceSettings` is the engine's :class:`cta.settings.Settings` plus the fields only
the service reads (bind address, API keys, jobs database, admission limits, job workers), with
the same ``CTA_`` prefix: every variable keeps its name (``CTA_API_KEYS``, ``CTA_MAX_ROWS``…).
The engine never sees these fields; the service hands the engine its settings as they are (a
``ServiceSettings`` *is* a ``Settings``). :func:`settings_table` writes the tables of both
for docs/configuration.md (whose last table, judge training's, is added by
:func:`cta.cli.configuration.settings_tables`: serving never imports training code).
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field

from cta.settings import Settings, markdown_table


class ServiceSettings(Settings):
    """The engine's settings plus the service's own (same ``CTA_`` environment prefix)."""

    # -- the HTTP server ---------------------------------------------------------------------
    host: str = Field(
        default="127.0.0.1",
        description="Address `cta serve` binds (non-loopback only when API keys are set)",
    )
    port: int = Field(default=8000, description="Port of `cta serve`")
    api_keys: list[str] = Field(
        default_factory=list,
        description="Bearer API keys (JSON list); empty = no auth, loopback only",
    )
    database_url: str | None = Field(default=None, description="Jobs DB (default: SQLite in home)")
    # -- admission and limits -----------------------------------------------------------------
    queue_size: int = Field(
        default=64, description="Pending requests before the service answers 429"
    )
    max_batch_pairs: int = Field(default=2048, description="Most judge pairs per /v1/judge request")
    batch_wait_ms: int = Field(
        default=5, description="How long the dynamic batcher waits to group concurrent requests"
    )
    max_request_pairs: int = Field(
        default=4_000,
        ge=1,
        description="Most estimated judge pairs of one /v1/perturb table (422 above; send a "
        "batch job instead): about 8 s of engine time on 2 cores (measured ~500 estimated "
        "pairs/s), an 18-column table with every column targeted",
    )
    max_queue_seconds: float = Field(
        default=6.0,
        gt=0,
        description="Longest estimated wait (backlog + own cost at the measured drain rate) "
        "a request is admitted with (429 with a computed Retry-After above)",
    )
    engine_pairs_per_second: float = Field(
        default=500.0,
        gt=0,
        description="Seed of the measured drain rate (estimated judge pairs per engine "
        "second; ~500 measured on 2 CPU cores with the default judge)",
    )
    max_body_bytes: int = Field(default=5_000_000, description="Largest request body (413 above)")
    max_columns: int = Field(default=200, description="Most columns per table (422 above)")
    max_rows: int = Field(default=10_000, description="Most rows per table (422 above)")
    max_string_length: int = Field(default=512, description="Longest string in a table (422 above)")
    max_tables_per_job: int = Field(default=20_000, description="Most tables per batch job")
    # -- batch jobs ---------------------------------------------------------------------------
    eval_endpoints: list[str] = Field(
        default_factory=list,
        description="URL prefixes eval jobs may send questions to (JSON list); empty = none",
    )
    inprocess_workers: int = Field(
        default=1,
        description="Job workers running inside `cta serve` (0 = only `cta worker` processes)",
    )
    job_claim_batch: int = Field(default=8, ge=1, description="Tables a worker claims at once")
    job_lease_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Lease on a claimed item, renewed every third while its worker lives "
        "(a dead worker's items are claimed again after it)",
    )
    job_max_attempts: int = Field(default=3, ge=1, description="Claims before a table fails")
    job_poll_seconds: float = Field(default=0.5, gt=0, description="Idle worker poll interval")
    # -- the `cta jobs` client ----------------------------------------------------------------
    service_url: str | None = Field(
        default=None, description="Service the `cta jobs` client calls (default: host:port)"
    )
    api_key: str | None = Field(default=None, description="Bearer key the `cta jobs` client sends")
    review_rows: int = Field(
        default=3, ge=0, le=50, description="Rows of each table the review page shows"
    )
    review_page_columns: int = Field(
        default=100, ge=1, le=100_000, description="Target columns per review page"
    )

    # -- derived ------------------------------------------------------------------------------
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'jobs.sqlite3'}"


@lru_cache(maxsize=1)
def get_service_settings() -> ServiceSettings:
    """Process-wide service settings read once from the environment."""
    return ServiceSettings()


#: the fields :class:`ServiceSettings` adds to the engine's
SERVICE_FIELDS = tuple(n for n in ServiceSettings.model_fields if n not in Settings.model_fields)


def settings_table() -> str:
    """The engine's configuration table (:class:`cta.settings.Settings`), then the service's
    own (:class:`ServiceSettings`), as docs/configuration.md shows them (Markdown)."""
    return (
        markdown_table(Settings, Settings.model_fields)
        + "\nService, batch jobs and the `cta jobs` client (`service.settings.ServiceSettings`):\n\n"
        + markdown_table(ServiceSettings, SERVICE_FIELDS)
    )
