"""What the store's parts share: its exceptions, the retry of a write transaction, UTC times,
the plain records it returns, and the queries that scope a read to what its caller may see."""

from __future__ import annotations

import functools
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from sqlalchemy import Engine, Select, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from panoramia.report.digest import report_digest
from panoramia.report.html import render_page, undrawn_page
from panoramia.report.page_parts import PageParts
from panoramia.store.tables import Audit, AuditedModel, Report, ReportPage

log = logging.getLogger("panoramia.store")


class AuditStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = frozenset({AuditStatus.SUCCEEDED, AuditStatus.FAILED, AuditStatus.CANCELLED})
ACTIVE = (AuditStatus.QUEUED, AuditStatus.RUNNING)
WRITE_ATTEMPTS = 5
"""A write that meets lock contention is re-run this many times in all (jittered back-off)."""
_P = ParamSpec("_P")
_R = TypeVar("_R")


class StoreBusy(Exception):
    """The database stayed locked through every retry of a write (the service answers 503)."""


class TooManyAudits(Exception):
    """The contributor already has ``limit`` audits queued or running."""

    def __init__(self, limit: int):
        super().__init__(f"at most {limit} queued or running audits per contributor")
        self.limit = limit


class StorageFull(Exception):
    """Storing this would take what the contributor keeps past ``limit`` bytes."""

    def __init__(self, limit: int, stored: int, adding: int):
        super().__init__(
            f"storing {adding} more bytes would take what you keep past {limit} bytes "
            f"({stored} stored: reports, audits and their files)"
        )
        self.limit = limit


def _transient(error: OperationalError) -> bool:
    """Lock contention (SQLite) or a serialization failure / deadlock (PostgreSQL)."""
    code = getattr(error.orig, "sqlstate", None)
    message = str(error.orig).lower()
    return code in ("40001", "40P01", "55P03") or "locked" in message or "busy" in message


def retried(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Re-run a whole write transaction when it fails on lock contention; :class:`StoreBusy`
    when it still does after :data:`WRITE_ATTEMPTS` tries. The method must open and commit its
    own transaction (nothing is half-written: a failed try rolls back)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        for attempt in range(WRITE_ATTEMPTS):
            try:
                return method(*args, **kwargs)
            except OperationalError as error:
                if not _transient(error):
                    raise
                if attempt == WRITE_ATTEMPTS - 1:
                    raise StoreBusy(str(error.orig).splitlines()[0]) from error
                time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
        raise AssertionError("unreachable")

    return wrapper


def utcnow() -> datetime:
    return datetime.now(UTC)


@overload
def as_utc(moment: datetime) -> datetime: ...
@overload
def as_utc(moment: None) -> None: ...
def as_utc(moment: datetime | None) -> datetime | None:
    """Timezone-aware UTC (SQLite hands back naive datetimes; they are stored in UTC)."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Principal:
    """Who is asking: a contributor (or an admin, who sees everything)."""

    contributor_id: int
    name: str
    is_admin: bool
    expires_at: datetime | None = None
    sessions_after: datetime | None = None
    """Console sessions signed in before this time are over."""
    is_worker: bool = False
    """A worker's credential: it may read running audits' uploads, and nothing else."""


@dataclass(frozen=True)
class TokenInfo:
    """What ``panoramia tokens list`` shows of a contributor (never the token)."""

    name: str
    is_admin: bool
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= utcnow():
            return "expired"
        return "active"


@dataclass(frozen=True)
class ModelRef:
    """An audited model by name and version; ``declared`` and ``claim`` (the declared
    guarantee, :mod:`panoramia.accounting.claims` JSON) are kept from its first mention."""

    name: str
    version: str
    declared: dict = field(default_factory=dict)
    claim: dict | None = None


@dataclass(frozen=True)
class ReportFilter:
    """Filters of a model's report listing (dates are UTC, inclusive bounds)."""

    latest: bool = False
    since: datetime | None = None
    until: datetime | None = None
    modality: str | None = None
    version: str | None = None
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True)
class ReportContent:
    """A validated report document, its page's charts (``parts``: the page is rendered from
    the document and them, :func:`panoramia.report.html.render_page`) or a finished page
    (``html``: one a CLI run uploads), and where its artifacts live."""

    document: dict
    html: str | None = None
    artifact_location: str | None = None
    parts: PageParts | None = None

    @functools.cached_property
    def parts_json(self) -> str | None:
        """``parts`` as the page row keeps them (written once: ~0.5 MB of chart data)."""
        return self.parts.model_dump_json() if self.parts is not None else None

    def page_row(self, report_id: str) -> ReportPage | None:
        """The report's page row (None: no page)."""
        if self.html is None and self.parts is None:
            return None
        return ReportPage(report_id=report_id, html=self.html, parts=self.parts_json)

    def page_chars(self) -> int:
        """Characters the page row keeps (counted against her storage quota)."""
        return len(self.html or "") + len(self.parts_json or "")


@dataclass(frozen=True)
class ModelSummary:
    name: str
    version: str
    owner: str | None
    declared: dict
    claim: dict | None
    reports: int
    latest_report_at: datetime | None


class StoreBase:
    """What every part of the store works through: the engine and its read and write
    sessions (set by :class:`panoramia.store.repository.ReportStore`)."""

    engine: Engine
    sessions: sessionmaker
    """Read transactions."""
    writes: sessionmaker
    """Write transactions (SQLite: ``BEGIN IMMEDIATE``); each write method is
    :func:`retried` as a whole."""

    if TYPE_CHECKING:  # provided by ModelRows in ReportStore (audits and reports name models)

        def _model(self, session: Session, ref: ModelRef, owner_id: int) -> AuditedModel: ...

        def join_shared(self, session: Session, shared_id: int, contributor_id: int) -> None: ...


def reports_query(principal: Principal, model_name: str) -> Select:
    """Every report of ``model_name`` the principal may see (a contributor: hers only, the
    filter on the model's owner first; an admin: everyone's)."""
    query = (
        select(Report)
        .join(AuditedModel, AuditedModel.id == Report.model_id)
        .where(AuditedModel.name == model_name)
    )
    if principal.is_admin:
        return query
    return query.where(
        AuditedModel.contributor_id == principal.contributor_id,
        Report.contributor_id == principal.contributor_id,
    )


def _owned(query: Select, owner: Any, principal: Principal | None) -> Select:
    """``query`` restricted in the database to rows ``principal`` may see (``owner``: the
    owning contributor's column; an admin or ``None``, internal use, sees all)."""
    if principal is None or principal.is_admin:
        return query
    return query.where(owner == principal.contributor_id)


def report_by_id_query(principal: Principal | None, report_id: str) -> Select:
    """The report ``report_id`` where ``principal`` may see it, its owner in the query (its
    document stays deferred unless the caller undefers it)."""
    return _owned(select(Report).where(Report.id == report_id), Report.contributor_id, principal)


def report_page_query(principal: Principal | None, report_id: str) -> Select:
    """The page of report ``report_id`` (its HTML, its parts and the report's document: see
    :func:`stored_page`) where ``principal`` may see it, its owner in the query: another
    contributor's id matches no row and reads no page."""
    return _owned(
        select(ReportPage.html, ReportPage.parts, Report.document)
        .join(Report, Report.id == ReportPage.report_id)
        .where(ReportPage.report_id == report_id),
        Report.contributor_id,
        principal,
    )


def stored_page(html: str | None, parts: str | None, document: dict) -> str:
    """A stored page: rendered from the report's document and its parts where it has them,
    else the page stored as it was (before parts were, or uploaded by a CLI run)."""
    if parts is None:
        return html or ""
    try:
        return render_page(document, PageParts.model_validate_json(parts))
    except Exception as error:  # checked before it was stored: a bug, not her input
        log.exception("a stored report page could not be drawn")
        return undrawn_page(f"{type(error).__name__}")


def _claimed_by(audit_id: str, worker: str) -> tuple:
    return Audit.id == audit_id, Audit.worker == worker, Audit.status == AuditStatus.RUNNING


def _new_report(content: ReportContent, *, model_id: int, contributor_id: int) -> Report:
    document = content.document
    return Report(
        id=str(uuid.uuid4()),
        model_id=model_id,
        contributor_id=contributor_id,
        modality=document["modality"],
        c_lb=float(document["c_lb"]),
        c_plus_eps_lb=float(document["c_plus_eps_lb"]),
        eps_tilde=float(document["eps_tilde"]),
        created_at=utcnow(),
        artifact_location=content.artifact_location,
        document=document,
        digest=report_digest(document),
    )
