"""The store's queries. Every read by a contributor is scoped to what it submitted or uploaded.

A contributor sees only its own audits and reports; an admin sees everything. Lookups of ids the
caller may not see return ``None`` exactly as unknown ids do, so the service answers 404 for both
and never reveals that another contributor's report exists.

Audit state machine: ``queued → running → succeeded | failed | cancelled``; a running audit
whose worker stops sending heartbeats goes back to ``queued`` (or to ``failed`` after
``max_attempts``) through :meth:`ReportStore.recover_orphans`. A worker's writes are guarded by
its claim (``worker`` column), so a worker that was presumed dead cannot overwrite a newer run.
"""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.orm import sessionmaker

from panoramia.store.audit_rows import AuditRows
from panoramia.store.common import (  # noqa: F401 - the names the service and the CLI import
    AuditStatus,
    ModelRef,
    ModelSummary,
    Principal,
    ReportContent,
    ReportFilter,
    StorageFull,
    StoreBusy,
    TokenInfo,
    TooManyAudits,
    as_utc,
    report_by_id_query,
    report_page_query,
    reports_query,
    retried,
    utcnow,
)
from panoramia.store.contributor_rows import ContributorRows
from panoramia.store.database import WRITE_OPTION
from panoramia.store.model_rows import ModelRows
from panoramia.store.report_rows import ReportRows
from panoramia.store.shared_rows import SharedRows


class ReportStore(ContributorRows, ModelRows, AuditRows, ReportRows, SharedRows):
    """Transactional access to contributors, models, audits and reports (one part of the
    store a module: :mod:`~panoramia.store.contributor_rows`, ``model_rows``, ``audit_rows``,
    ``report_rows``, ``shared_rows``)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self.writes = sessionmaker(
            engine.execution_options(**{WRITE_OPTION: True}), expire_on_commit=False
        )
