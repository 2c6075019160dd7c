"""SQLAlchemy 2 table definitions of the jobs store (the Alembic migrations create them).

``jobs`` holds one row per submitted job; ``job_items`` one row per table of a job, the unit
a worker claims, leases and commits. Times are naive UTC (SQLite has no time zones, so both
back-ends store the same thing).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

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
)

job_items = sa.Table(
    "job_items",
    metadata,
    sa.Column("id", sa.Integer, sa.Identity(), primary_key=True),
    sa.Column(
        "job_id", sa.String(32), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("position", sa.Integer, nullable=False),
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
