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

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from sqlalchemy import Engine, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker, undefer

from panoramia.errors import InputError
from panoramia.store.tables import Audit, AuditedModel, Contributor, Report, ReportPage
from panoramia.store.tokens import hash_token, new_token


class AuditStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = frozenset({AuditStatus.SUCCEEDED, AuditStatus.FAILED, AuditStatus.CANCELLED})


def utcnow() -> datetime:
    return datetime.now(UTC)


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
    """A validated report document, its HTML page and where its artifacts live."""

    document: dict
    html: str | None = None
    artifact_location: str | None = None


@dataclass(frozen=True)
class ModelSummary:
    name: str
    version: str
    declared: dict
    claim: dict | None
    reports: int
    latest_report_at: datetime | None


class ReportStore:
    """Transactional access to contributors, models, audits and reports."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)

    # -- contributors -------------------------------------------------------------------------
    def create_contributor(self, name: str, *, admin: bool = False) -> str:
        """Register ``name`` and return its token (shown once; only its hash is stored)."""
        name = name.strip()
        if not name or len(name) > 120:
            raise InputError("--contributor: a name of 1 to 120 characters is required")
        token = new_token()
        with self.sessions.begin() as session:
            if session.scalar(select(Contributor.id).where(Contributor.name == name)):
                raise InputError(f"--contributor: {name!r} already has a token")
            session.add(
                Contributor(
                    name=name, token_hash=hash_token(token), is_admin=admin, created_at=utcnow()
                )
            )
        return token

    def authenticate(self, token: str) -> Principal | None:
        """The principal holding ``token``, or None."""
        with self.sessions() as session:
            row = session.scalar(
                select(Contributor).where(Contributor.token_hash == hash_token(token))
            )
            return None if row is None else Principal(row.id, row.name, row.is_admin)

    # -- models -------------------------------------------------------------------------------
    def _model(self, session: Session, ref: ModelRef) -> AuditedModel:
        query = select(AuditedModel).where(
            AuditedModel.name == ref.name, AuditedModel.version == ref.version
        )
        found = session.scalar(query)
        if found is not None:
            return found
        try:
            with session.begin_nested():
                model = AuditedModel(
                    name=ref.name,
                    version=ref.version,
                    declared=ref.declared,
                    claim=ref.claim,
                    created_at=utcnow(),
                )
                session.add(model)
            return model
        except IntegrityError:  # created concurrently by another request
            return session.scalars(query).one()

    def list_models(self, principal: Principal) -> list[ModelSummary]:
        """Models with reports the principal may see (an admin: every model)."""
        reports = select(
            Report.model_id,
            func.count(Report.id).label("n"),
            func.max(Report.created_at).label("latest"),
        ).group_by(Report.model_id)
        if not principal.is_admin:
            reports = reports.where(Report.contributor_id == principal.contributor_id)
        counts = reports.subquery()
        query = select(AuditedModel, counts.c.n, counts.c.latest).order_by(
            AuditedModel.name, AuditedModel.version
        )
        if principal.is_admin:
            query = query.outerjoin(counts, counts.c.model_id == AuditedModel.id)
        else:
            query = query.join(counts, counts.c.model_id == AuditedModel.id)
        with self.sessions() as session:
            return [
                ModelSummary(m.name, m.version, m.declared, m.claim, n or 0, as_utc(latest))
                for m, n, latest in session.execute(query)
            ]

    # -- audits -------------------------------------------------------------------------------
    def create_audit(self, principal: Principal, model: ModelRef, request: dict) -> Audit:
        """Record a queued audit of ``model`` submitted by ``principal``."""
        with self.sessions.begin() as session:
            audit = Audit(
                id=str(uuid.uuid4()),
                contributor_id=principal.contributor_id,
                model=self._model(session, model),
                status=AuditStatus.QUEUED,
                request=request,
                progress={},
                attempts=0,
                cancel_requested=False,
                timings={},
                created_at=utcnow(),
            )
            session.add(audit)
        return audit

    def get_audit(self, principal: Principal | None, audit_id: str) -> Audit | None:
        """The audit, if it exists and ``principal`` may see it (``None`` = internal use)."""
        with self.sessions() as session:
            audit = session.get(Audit, audit_id)
        if audit is None or not _may_see(principal, audit.contributor_id):
            return None
        return audit

    def report_of_audit(self, audit_id: str) -> str | None:
        with self.sessions() as session:
            return session.scalar(select(Report.id).where(Report.audit_id == audit_id))

    def request_cancel(self, principal: Principal, audit_id: str) -> Audit | None:
        """Cancel a queued audit now; ask the worker of a running one to stop."""
        with self.sessions.begin() as session:
            audit = session.get(Audit, audit_id, with_for_update=True)
            if audit is None or not _may_see(principal, audit.contributor_id):
                return None
            if audit.status == AuditStatus.QUEUED:
                audit.status = AuditStatus.CANCELLED
                audit.finished_at = utcnow()
                audit.error = "cancelled before it started"
            elif audit.status == AuditStatus.RUNNING:
                audit.cancel_requested = True
        return audit

    def queued_audit_ids(self) -> list[str]:
        with self.sessions() as session:
            query = select(Audit.id).where(Audit.status == AuditStatus.QUEUED)
            return list(session.scalars(query.order_by(Audit.created_at)))

    def claim(self, audit_id: str, worker: str) -> Audit | None:
        """Atomically move a queued audit to running for ``worker``; None if not claimable."""
        now = utcnow()
        with self.sessions.begin() as session:
            claimed = session.execute(
                update(Audit)
                .where(Audit.id == audit_id, Audit.status == AuditStatus.QUEUED)
                .values(
                    status=AuditStatus.RUNNING,
                    worker=worker,
                    attempts=Audit.attempts + 1,
                    started_at=now,
                    heartbeat_at=now,
                    error=None,
                )
            ).rowcount
        return self.get_audit(None, audit_id) if claimed else None

    def heartbeat(self, audit_id: str, worker: str, progress: dict | None = None) -> bool | None:
        """Record that ``worker`` is alive; True: cancel asked, None: claim lost."""
        values: dict = {"heartbeat_at": utcnow()}
        if progress is not None:
            values["progress"] = progress
        with self.sessions.begin() as session:
            owned = session.execute(
                update(Audit).where(*_claimed_by(audit_id, worker)).values(**values)
            ).rowcount
            if not owned:
                return None
            return bool(session.scalar(select(Audit.cancel_requested).where(Audit.id == audit_id)))

    def finish(
        self, audit_id: str, worker: str, content: ReportContent, timings: dict
    ) -> str | None:
        """Store the audit's report and mark it succeeded, in one transaction (None: lost claim)."""
        with self.sessions.begin() as session:
            audit = session.scalar(select(Audit).where(*_claimed_by(audit_id, worker)))
            if audit is None:
                return None
            report = _new_report(
                content, model_id=audit.model_id, contributor_id=audit.contributor_id
            )
            report.audit_id = audit.id
            session.add(report)
            session.flush()  # the page's foreign key needs the report row first
            if content.html is not None:
                session.add(ReportPage(report_id=report.id, html=content.html))
            audit.status = AuditStatus.SUCCEEDED
            audit.finished_at = utcnow()
            audit.timings = timings
            audit.progress = {**(audit.progress or {}), "state": "done"}
            return report.id

    def release(
        self, audit_id: str, worker: str, status: AuditStatus, error: str, timings: dict
    ) -> bool:
        """End ``worker``'s claim with ``status`` (failed, cancelled, or queued to run again)."""
        values: dict = {"status": status, "error": error, "timings": timings}
        if status == AuditStatus.QUEUED:
            values |= {"worker": None, "heartbeat_at": None}
        else:
            values["finished_at"] = utcnow()
        with self.sessions.begin() as session:
            return bool(
                session.execute(
                    update(Audit).where(*_claimed_by(audit_id, worker)).values(**values)
                ).rowcount
            )

    def recover_orphans(
        self, *, stale_after: timedelta, max_attempts: int
    ) -> tuple[list[str], list[str]]:
        """Running audits with no heartbeat for ``stale_after``: re-queue or fail them.

        Returns ``(requeued_ids, failed_ids)``. An orphan whose cancel was asked is cancelled.
        """
        cutoff = utcnow() - stale_after
        requeued, failed = [], []
        with self.sessions.begin() as session:
            orphans = session.scalars(
                select(Audit)
                .where(Audit.status == AuditStatus.RUNNING, Audit.heartbeat_at < cutoff)
                .with_for_update()
            ).all()
            for audit in orphans:
                lost = (
                    f"worker {audit.worker} stopped sending heartbeats (attempt {audit.attempts})"
                )
                audit.worker = None
                if audit.cancel_requested:
                    audit.status, audit.error = AuditStatus.CANCELLED, f"cancelled; {lost}"
                    audit.finished_at = utcnow()
                elif audit.attempts < max_attempts:
                    audit.status, audit.error = AuditStatus.QUEUED, f"re-queued: {lost}"
                    audit.heartbeat_at = None
                    requeued.append(audit.id)
                else:
                    audit.status = AuditStatus.FAILED
                    audit.error = f"failed after {audit.attempts} attempts: {lost}"
                    audit.finished_at = utcnow()
                    failed.append(audit.id)
        return requeued, failed

    # -- reports ------------------------------------------------------------------------------
    def add_report(self, principal: Principal, model: ModelRef, content: ReportContent) -> Report:
        """Store an uploaded report (document and page together, or nothing)."""
        with self.sessions.begin() as session:
            model_row = self._model(session, model)
            report = _new_report(
                content, model_id=model_row.id, contributor_id=principal.contributor_id
            )
            report.model = model_row
            session.add(report)
            session.flush()  # the page's foreign key needs the report row first
            if content.html is not None:
                session.add(ReportPage(report_id=report.id, html=content.html))
        return report

    def get_report(self, principal: Principal, report_id: str) -> Report | None:
        """The report with its document, if ``principal`` may see it."""
        with self.sessions() as session:
            report = session.get(Report, report_id, options=[undefer(Report.document)])
        if report is None or not _may_see(principal, report.contributor_id):
            return None
        return report

    def get_report_html(self, principal: Principal, report_id: str) -> str | None:
        query = (
            select(ReportPage.html, Report.contributor_id)
            .join(Report, Report.id == ReportPage.report_id)
            .where(ReportPage.report_id == report_id)
        )
        with self.sessions() as session:
            row = session.execute(query).first()
        if row is None or not _may_see(principal, row.contributor_id):
            return None
        return row.html

    def list_reports(
        self, principal: Principal, model_name: str, where: ReportFilter
    ) -> list[Report] | None:
        """The principal's reports of ``model_name``, newest first; None if it has none at all."""
        query = (
            select(Report)
            .join(AuditedModel, AuditedModel.id == Report.model_id)
            .where(AuditedModel.name == model_name)
        )
        if not principal.is_admin:
            query = query.where(Report.contributor_id == principal.contributor_id)
        visible = query
        if where.version is not None:
            query = query.where(AuditedModel.version == where.version)
        if where.modality is not None:
            query = query.where(Report.modality == where.modality)
        if where.since is not None:
            query = query.where(Report.created_at >= where.since)
        if where.until is not None:
            query = query.where(Report.created_at <= where.until)
        query = query.order_by(Report.created_at.desc(), Report.id)
        query = query.limit(1) if where.latest else query.limit(where.limit)
        with self.sessions() as session:
            found = list(session.scalars(query.offset(where.offset)))
            if found:
                return found
            exists = session.scalar(visible.with_only_columns(Report.id).limit(1))
            return [] if exists is not None else None


def _may_see(principal: Principal | None, owner_id: int) -> bool:
    return principal is None or principal.is_admin or principal.contributor_id == owner_id


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
    )
