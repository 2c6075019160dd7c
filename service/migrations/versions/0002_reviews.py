"""review_items and review_votes (the /review pages)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_items",
        sa.Column("id", sa.Integer, sa.Identity(), primary_key=True),
        sa.Column(
            "job_id",
            sa.String(32),
            sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
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
        sa.UniqueConstraint(
            "job_id", "position", "target", "kind", "proposed", name="uq_review_items"
        ),
    )
    op.create_index("ix_review_items_job_position", "review_items", ["job_id", "position"])
    op.create_table(
        "review_votes",
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


def downgrade() -> None:
    op.drop_table("review_votes")
    op.drop_index("ix_review_items_job_position", table_name="review_items")
    op.drop_table("review_items")
