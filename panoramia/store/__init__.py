"""The report store: contributors, audited models, audits and reports in a SQL database.

SQLAlchemy 2 models (:mod:`panoramia.store.tables`), alembic migrations
(:mod:`panoramia.store.migrations`, applied by :func:`upgrade`) and the queries the service
needs (:class:`ReportStore`). SQLite under ``PANORAMIA_HOME`` by default, PostgreSQL (or any
SQLAlchemy URL) through ``PANORAMIA_DATABASE_URL``. No torch import.
"""

from panoramia.store.database import database_url, make_engine, upgrade
from panoramia.store.repository import AuditStatus, ReportFilter, ReportStore
from panoramia.store.tokens import hash_token, new_token

__all__ = [
    "AuditStatus",
    "ReportFilter",
    "ReportStore",
    "database_url",
    "hash_token",
    "make_engine",
    "new_token",
    "upgrade",
]
