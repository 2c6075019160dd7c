"""SQLAlchemy 2 table definitions of the jobs store (the Alembic migrations create them).

``jobs`` holds one row per submitted job; ``job_items`` one row per table of a job, the unit
a worker claims, leases and commits. Times are naive UTC (SQLite has no time zones, so both
back-ends store the same thing).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()


def _of_a_job_item() -> tuple[sa.Column[int], sa.Column[str], sa.Column[int]]:
    """The first columns of a row that belongs to one item of a job: its own id, the job's
    (the row goes when the job does) and the item's position in the job."""
    return (
        sa.Column("id", sa.Integer, sa.Identity(), primary_key=True),
        sa.Column(
            "job_id", sa.String(32), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("position", sa.Integer, nullable=False),
    )


jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    # sha256 of the API key that created the job; NULL when the service runs without keys
    sa.Column("owner", sa.String(64), nullable=True, index=True),
    sa.Column("options", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=True),
    sa.Column("finished_at", sa.DateTime, nullable=True),
    # provenance at submission (cta.provenance): JSON; NULL for jobs made before 0003
    sa.Column("manifest", sa.Text, nullable=True),
)

job_items = sa.Table(
    "job_items",
    metadata,
    *_of_a_job_item(),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("table_id", sa.Text, nullable=True),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("lease_owner", sa.String(128), nullable=True),
    sa.Column("lease_expires_at", sa.DateTime, nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("result", sa.Text, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("finished_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("job_id", "position", name="uq_job_items_job_position"),
    sa.Index("ix_job_items_status_id", "status", "id"),
)

# -- reviews (migration 0002) ------------------------------------------------------------------
# One row per proposed (or reviewer-added) name of one target column of one job item. The
# name is shared by every reviewer and edited under optimistic concurrency: ``version`` grows
# with each edit, and a write that names an older version is refused (409), never applied.
review_items = sa.Table(
    "review_items",
    metadata,
    *_of_a_job_item(),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("kind", sa.String(8), nullable=False),
    # the name as the generator proposed it (or as a reviewer first added it): the item's key
    sa.Column("proposed", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("source", sa.String(16), nullable=True),
    sa.Column("e1", sa.Float, nullable=True),
    sa.Column("e2", sa.Float, nullable=True),
    sa.Column("association", sa.Float, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, server_default="1"),
    sa.Column("updated_by", sa.String(160), nullable=True),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("job_id", "position", "target", "kind", "proposed", name="uq_review_items"),
    sa.Index("ix_review_items_job_position", "job_id", "position"),
)

# One reviewer's judgement of one review item (the reviewer is the API key's sha256, or
# ``local`` without keys, then ``:name`` when people sharing a key give their names): accept
# or reject and a label, given on the item's ``version``.
review_votes = sa.Table(
    "review_votes",
    metadata,
    sa.Column(
        "item_id",
        sa.Integer,
        sa.ForeignKey("review_items.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("reviewer", sa.String(160), primary_key=True),
    sa.Column("decision", sa.String(8), nullable=True),
    sa.Column("label", sa.String(16), nullable=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)
