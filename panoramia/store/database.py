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


WRITE_OPTION = "panoramia_write"
"""Execution option of a write transaction: on SQLite it starts with ``BEGIN IMMEDIATE``."""
BUSY_TIMEOUT_MS = 30_000


def _sqlite_pragmas(connection, _record) -> None:
    connection.isolation_level = None  # SQLAlchemy, not pysqlite, begins transactions (below)
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed: deleted text is gone
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_begin(connection) -> None:
    """``BEGIN IMMEDIATE`` for writes: the write lock is taken (waiting up to the busy timeout)
    before anything is read, so a transaction that reads then writes never fails on upgrading
    its lock ("database is locked", which SQLite raises at once, without waiting, when a
    deferred reader tries to write after another writer committed). Reads stay deferred and
    run beside a writer (WAL)."""
    write = connection.get_execution_options().get(WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(url: str | None = None, *, pool_size: int = 20) -> Engine:
    """An engine for :func:`database_url` (SQLite: WAL, foreign keys, shared across threads)."""
    resolved = database_url(url)
    if resolved.startswith("sqlite"):
        path = make_url(resolved).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        engine = create_engine(
            resolved,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        # pysqlite's own transaction handling commits at a SAVEPOINT's release; emitting BEGIN
        # here makes nested transactions (and so every multi-row write) atomic.
        event.listen(engine, "begin", _sqlite_begin)
        if path and path != ":memory:":
            event.listen(engine, "first_connect", lambda *_: _owner_only(Path(path)))
        return engine
    return create_engine(resolved, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def _owner_only(path: Path) -> None:
    """The database file and its WAL/shared-memory files: readable by their owner only."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if candidate.exists() and candidate.stat().st_mode & 0o077:
            candidate.chmod(0o600)


MIGRATION_LOCK = 0x70616E6F
"""PostgreSQL advisory lock key held while migrating (several server processes may start)."""


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply the alembic migrations up to ``revision`` (idempotent; one process at a time).

    SQLite: the migration holds the write lock (``BEGIN IMMEDIATE``) and runs with foreign
    keys off, as alembic's batch mode needs to re-create tables that others refer to; the
    foreign keys are checked before it commits. PostgreSQL: an advisory lock serialises
    concurrent upgrades."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", "panoramia.store:migrations")
    with engine.connect() as connection:
        connection = connection.execution_options(**{WRITE_OPTION: True})
        sqlite = connection.dialect.name == "sqlite"
        raw = connection.connection.dbapi_connection
        assert raw is not None  # an open connection's
        if sqlite:  # outside any transaction, where the pragma takes effect
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                if sqlite and connection.exec_driver_sql("PRAGMA foreign_key_check").first():
                    raise RuntimeError("migration left rows whose foreign keys do not resolve")
        finally:
            if sqlite:
                raw.execute("PRAGMA foreign_keys=ON")


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None before the first upgrade)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
