"""Alembic migrations of the report store (applied by :func:`panoramia.store.upgrade`)."""
