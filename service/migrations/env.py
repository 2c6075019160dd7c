"""Alembic environment: runs on the connection handed in by the store, or on ``-x url=…``."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from service.jobs.tables import metadata
from service.settings import ServiceSettings

config = context.config


def run_on(connection: sa.engine.Connection) -> None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    run_on(connection)
else:
    from service.jobs.store import JobStore

    url = (
        context.get_x_argument(as_dictionary=True).get("url")
        or ServiceSettings().resolved_database_url()
    )
    store = JobStore(url)
    with store.engine.begin() as conn:
        run_on(conn)
    store.close()
