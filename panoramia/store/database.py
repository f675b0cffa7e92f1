"""Database location, engines and migrations.

``PANORAMIA_DATABASE_URL`` (any SQLAlchemy URL; ``postgresql://`` uses psycopg 3) or, by default,
the SQLite file ``$PANORAMIA_HOME/panoramia.db`` (``PANORAMIA_HOME`` defaults to ``./.panoramia``,
as for the pipeline's artifacts).
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from panoramia.errors import InputError


def panoramia_home() -> Path:
    """``$PANORAMIA_HOME`` or ``./.panoramia``: database, artifacts and audit run directories."""
    return Path(os.environ.get("PANORAMIA_HOME") or Path.cwd() / ".panoramia").resolve()


def database_url(url: str | None = None) -> str:
    """The URL to use: ``url``, else ``$PANORAMIA_DATABASE_URL``, else the embedded SQLite file."""
    chosen = url or os.environ.get("PANORAMIA_DATABASE_URL")
    if not chosen:
        return f"sqlite:///{panoramia_home() / 'panoramia.db'}"
    try:
        parsed = make_url(chosen)
    except Exception:
        raise InputError("PANORAMIA_DATABASE_URL: not a database URL") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def _sqlite_pragmas(connection, _record) -> None:  # type: ignore[no-untyped-def]
    connection.isolation_level = None  # SQLAlchemy, not pysqlite, begins transactions (below)
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def make_engine(url: str | None = None, *, pool_size: int = 20) -> Engine:
    """An engine for :func:`database_url` (SQLite: WAL, foreign keys, shared across threads)."""
    resolved = database_url(url)
    if resolved.startswith("sqlite"):
        path = make_url(resolved).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(resolved, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        # pysqlite's own transaction handling commits at a SAVEPOINT's release; emitting BEGIN
        # here makes nested transactions (and so every multi-row write) atomic.
        event.listen(engine, "begin", lambda connection: connection.exec_driver_sql("BEGIN"))
        return engine
    return create_engine(resolved, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply the alembic migrations up to ``revision`` (idempotent)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", "panoramia.store:migrations")
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None before the first upgrade)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
