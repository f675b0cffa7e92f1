"""Alembic environment: runs on the connection that :func:`panoramia.store.upgrade` passes."""

from alembic import context

from panoramia.store.database import make_engine
from panoramia.store.tables import Base

connection = context.config.attributes.get("connection")


def run(bind) -> None:
    context.configure(connection=bind, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    run(connection)
else:  # the alembic command line: PANORAMIA_DATABASE_URL or the embedded SQLite file
    with make_engine().begin() as bind:
        run(bind)
