"""Alembic migrations of the jobs store; :func:`upgrade` runs them on an open connection."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection

ALEMBIC_INI = Path(__file__).resolve().parent.parent / "alembic.ini"


def alembic_config(connection: Connection | None = None) -> Config:
    """The package's Alembic config, optionally bound to an open connection."""
    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(Path(__file__).resolve().parent))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade(connection: Connection, revision: str = "head") -> None:
    """Upgrade the database behind ``connection`` (inside the caller's transaction)."""
    command.upgrade(alembic_config(connection), revision)
