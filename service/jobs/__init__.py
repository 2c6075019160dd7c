"""Batch jobs: the store (SQLAlchemy, Alembic), submission into items, and the worker."""
