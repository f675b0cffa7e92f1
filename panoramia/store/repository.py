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

import functools
import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import Engine, Select, Text, cast, func, or_, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker, undefer

from panoramia.errors import InputError
from panoramia.report.digest import report_digest
from panoramia.report.redaction import document_without_records, without_member_data
from panoramia.store.database import WRITE_OPTION
from panoramia.store.tables import Audit, AuditedModel, Contributor, Report, ReportPage
from panoramia.store.tokens import hash_token, new_token


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
    """A validated report document, its HTML page and where its artifacts live."""

    document: dict
    html: str | None = None
    artifact_location: str | None = None


@dataclass(frozen=True)
class ModelSummary:
    name: str
    version: str
    owner: str | None
    declared: dict
    claim: dict | None
    reports: int
    latest_report_at: datetime | None


class ReportStore:
    """Transactional access to contributors, models, audits and reports."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        """Read transactions."""
        self.writes = sessionmaker(
            engine.execution_options(**{WRITE_OPTION: True}), expire_on_commit=False
        )
        """Write transactions (SQLite: ``BEGIN IMMEDIATE``); each write method is
        :func:`retried` as a whole."""

    # -- contributors -------------------------------------------------------------------------
    @retried
    def create_contributor(
        self,
        name: str,
        *,
        admin: bool = False,
        expires_at: datetime | None = None,
        worker: bool = False,
    ) -> str:
        """Register ``name`` and return its token (shown once; only its hash is stored).

        ``expires_at`` (UTC): the token stops authenticating then (None: never)."""
        name = name.strip()
        if not name or len(name) > 120:
            raise InputError("--contributor: a name of 1 to 120 characters is required")
        token = new_token()
        with self.writes.begin() as session:
            if session.scalar(select(Contributor.id).where(Contributor.name == name)):
                raise InputError(f"--contributor: {name!r} already has a token")
            session.add(
                Contributor(
                    name=name,
                    token_hash=hash_token(token),
                    is_admin=admin,
                    is_worker=worker,
                    created_at=utcnow(),
                    expires_at=expires_at,
                )
            )
        return token

    WORKERS_FROM_ENVIRONMENT = "workers (PANORAMIA_WORKER_TOKEN)"

    @retried
    def ensure_worker_token(self, token: str) -> None:
        """Make ``token`` the credential of the workers the operator starts with it
        (``PANORAMIA_WORKER_TOKEN`` in a compose file's environment): one worker principal,
        its hash replaced when the token changes. InputError for a token under 32
        characters."""
        if len(token) < 32:
            raise InputError("PANORAMIA_WORKER_TOKEN: at least 32 characters")
        with self.writes.begin() as session:
            row = session.scalar(
                select(Contributor).where(Contributor.name == self.WORKERS_FROM_ENVIRONMENT)
            )
            if row is None:
                session.add(
                    Contributor(
                        name=self.WORKERS_FROM_ENVIRONMENT, token_hash=hash_token(token),
                        is_admin=False, is_worker=True, created_at=utcnow(),
                    )
                )  # fmt: skip
            else:
                row.token_hash, row.is_worker, row.is_admin = hash_token(token), True, False

    def authenticate(self, token: str) -> Principal | None:
        """The principal holding ``token``, or None (unknown, revoked or expired)."""
        return self.authenticate_digest(hash_token(token))

    def authenticate_digest(self, token_hash: str) -> Principal | None:
        """The principal whose token's digest is ``token_hash`` (a console session holds the
        digest, never the token), or None (unknown, revoked or expired)."""
        now = utcnow()
        query = select(Contributor).where(
            Contributor.token_hash == token_hash,
            Contributor.revoked_at.is_(None),
            or_(Contributor.expires_at.is_(None), Contributor.expires_at > now),
        )
        with self.sessions() as session:
            row = session.scalar(query)
            if row is None:
                return None
            return Principal(
                row.id, row.name, row.is_admin and not row.is_worker,
                as_utc(row.expires_at), as_utc(row.sessions_after), row.is_worker,
            )  # fmt: skip

    def list_tokens(self) -> list[TokenInfo]:
        """Every contributor's token state, by name."""
        with self.sessions() as session:
            rows = session.scalars(select(Contributor).order_by(Contributor.name))
            return [
                TokenInfo(
                    r.name,
                    r.is_admin,
                    as_utc(r.created_at),
                    as_utc(r.expires_at),
                    as_utc(r.revoked_at),
                )
                for r in rows
            ]

    @retried
    def end_sessions(self, principal: Principal) -> None:
        """Sign ``principal`` out of the console everywhere: sessions signed in until now end."""
        with self.writes.begin() as session:
            row = session.get(Contributor, principal.contributor_id)
            if row is not None:
                row.sessions_after = utcnow()

    @retried
    def revoke_token(self, name: str) -> None:
        """Revoke ``name``'s token (its reports and audits stay; a new token needs a new name)."""
        with self.writes.begin() as session:
            row = session.scalar(select(Contributor).where(Contributor.name == name))
            if row is None:
                raise InputError(f"--contributor: no contributor named {name!r}")
            if row.revoked_at is None:
                row.revoked_at = utcnow()

    # -- models -------------------------------------------------------------------------------
    def _model(self, session: Session, ref: ModelRef, owner_id: int) -> AuditedModel:
        """The owner's model ``ref`` (created, with ``ref``'s metadata, at first mention)."""
        query = select(AuditedModel).where(
            AuditedModel.contributor_id == owner_id,
            AuditedModel.name == ref.name,
            AuditedModel.version == ref.version,
        )
        found = session.scalar(query)
        if found is not None:
            return found
        try:
            with session.begin_nested():
                model = AuditedModel(
                    contributor_id=owner_id,
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

    def list_models(
        self,
        principal: Principal,
        *,
        limit: int | None = None,
        offset: int = 0,
        names: list[str] | None = None,
    ) -> list[ModelSummary]:
        """The principal's own models with its report counts (an admin: every model), by name
        and version, ``limit`` of them from ``offset`` (only those called one of ``names``,
        where given); a model with no declared claim shows the one its latest report
        declares, if any. Rows carry the model's declared metadata (bounded at the door),
        never a report's document or page."""
        counts = (
            select(
                Report.model_id,
                func.count(Report.id).label("n"),
                func.max(Report.created_at).label("latest"),
            )
            .group_by(Report.model_id)
            .subquery()
        )
        query = (
            select(AuditedModel, Contributor.name, counts.c.n, counts.c.latest)
            .outerjoin(counts, counts.c.model_id == AuditedModel.id)
            .outerjoin(Contributor, Contributor.id == AuditedModel.contributor_id)
            .order_by(AuditedModel.name, AuditedModel.version, AuditedModel.id)
        )
        if not principal.is_admin:
            query = query.where(AuditedModel.contributor_id == principal.contributor_id)
        if names is not None:
            query = query.where(AuditedModel.name.in_(names))
        with self.sessions() as session:
            rows = list(session.execute(query.limit(limit).offset(offset)))
            bare = [m.id for m, _owner, n, _latest in rows if m.claim is None and n]
            reported: dict[int, dict | None] = {}
            if bare:  # a claim declared only in an uploaded report: its latest report's
                newest = (
                    select(Report.model_id, Report.digest)
                    .where(Report.model_id.in_(bare))
                    .order_by(Report.model_id, Report.created_at.desc())
                )
                for model_id, digest in session.execute(newest):
                    reported.setdefault(model_id, (digest or {}).get("declared_claim"))
        return [
            ModelSummary(
                m.name,
                m.version,
                owner,
                m.declared,
                m.claim or reported.get(m.id),
                n or 0,
                as_utc(latest),
            )
            for m, owner, n, latest in rows
        ]

    def model_names(self, principal: Principal, *, limit: int, offset: int = 0) -> list[str]:
        """The distinct names of the principal's models (an admin: everyone's), in order,
        ``limit`` of them from ``offset``."""
        query = select(AuditedModel.name).distinct().order_by(AuditedModel.name)
        if not principal.is_admin:
            query = query.where(AuditedModel.contributor_id == principal.contributor_id)
        with self.sessions() as session:
            return list(session.scalars(query.limit(limit).offset(offset)))

    # -- audits -------------------------------------------------------------------------------
    @retried
    def create_audit(
        self,
        principal: Principal,
        model: ModelRef,
        request: dict,
        *,
        max_active: int | None = None,
        budget: Callable[[float], None] | None = None,
    ) -> Audit:
        """Record a queued audit of ``model`` submitted by ``principal``.

        :class:`TooManyAudits` when the principal already has ``max_active`` audits queued or
        running; ``budget`` is called with the sum of their ``request["cost"]`` estimates and
        raises to refuse (both counted under the write lock, so concurrent submissions cannot
        pass them)."""
        with self.writes.begin() as session:
            if max_active is not None or budget is not None:
                # PostgreSQL: the contributor's row lock serialises its submissions.
                session.execute(
                    select(Contributor.id)
                    .where(Contributor.id == principal.contributor_id)
                    .with_for_update()
                )
                active = session.scalar(
                    select(func.count(Audit.id)).where(
                        Audit.contributor_id == principal.contributor_id,
                        Audit.status.in_(ACTIVE),
                    )
                )
                if max_active is not None and active >= max_active:
                    raise TooManyAudits(max_active)
                if budget is not None:
                    budget(self._active_cost(session, principal.contributor_id))
            audit = Audit(
                id=str(uuid.uuid4()),
                contributor_id=principal.contributor_id,
                model=self._model(session, model, principal.contributor_id),
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

    def active_cost(self, contributor_id: int) -> float:
        """The summed cost estimates of the contributor's queued and running audits."""
        with self.sessions() as session:
            return self._active_cost(session, contributor_id)

    @staticmethod
    def _active_cost(session: Session, contributor_id: int) -> float:
        """The summed ``request["cost"]`` of the contributor's queued and running audits."""
        requests = session.scalars(
            select(Audit.request).where(
                Audit.contributor_id == contributor_id, Audit.status.in_(ACTIVE)
            )
        )
        return float(sum(float((r or {}).get("cost") or 0) for r in requests))

    def get_audit(self, principal: Principal | None, audit_id: str) -> Audit | None:
        """The audit, if it exists and ``principal`` may see it (``None`` = internal use)."""
        query = _owned(select(Audit).where(Audit.id == audit_id), Audit.contributor_id, principal)
        with self.sessions() as session:
            return session.scalars(query).first()

    def report_of_audit(self, audit_id: str) -> str | None:
        with self.sessions() as session:
            return session.scalar(select(Report.id).where(Report.audit_id == audit_id))

    @retried
    def request_cancel(self, principal: Principal, audit_id: str) -> Audit | None:
        """Cancel a queued audit now; ask the worker of a running one to stop."""
        with self.writes.begin() as session:
            query = _owned(
                select(Audit).where(Audit.id == audit_id), Audit.contributor_id, principal
            )
            audit = session.scalars(query.with_for_update()).first()
            if audit is None:
                return None
            if audit.status == AuditStatus.QUEUED:
                audit.status = AuditStatus.CANCELLED
                audit.finished_at = utcnow()
                audit.error = "cancelled before it started"
            elif audit.status == AuditStatus.RUNNING:
                audit.cancel_requested = True
        return audit

    def audit_ids(self, contributor_id: int) -> list[str]:
        """Ids of every audit of the contributor's, whatever its state."""
        with self.sessions() as session:
            query = select(Audit.id).where(Audit.contributor_id == contributor_id)
            return list(session.scalars(query))

    def queued_audit_ids(self) -> list[str]:
        with self.sessions() as session:
            query = select(Audit.id).where(Audit.status == AuditStatus.QUEUED)
            return list(session.scalars(query.order_by(Audit.created_at)))

    @retried
    def claim(self, audit_id: str, worker: str) -> Audit | None:
        """Atomically move a queued audit to running for ``worker``; None if not claimable."""
        now = utcnow()
        with self.writes.begin() as session:
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

    def claim_next(self, worker: str, *, candidates: int = 8) -> Audit | None:
        """Claim, for ``worker``, the queued audit that is fairest to run next (None: none is
        queued): first the contributor with the fewest audits running, then the one whose
        last audit started longest ago (never: first), then the oldest submission. A
        contributor's queued audits thus wait behind at most one audit of each other
        contributor's, however many she or they queued. Races between workers are settled by
        :meth:`claim`'s conditional update: a lost candidate gives way to the next."""
        running = (
            select(Audit.contributor_id, func.count().label("running"))
            .where(Audit.status == AuditStatus.RUNNING)
            .group_by(Audit.contributor_id)
            .subquery()
        )
        served = (
            select(Audit.contributor_id, func.max(Audit.started_at).label("last_start"))
            .where(Audit.started_at.is_not(None))
            .group_by(Audit.contributor_id)
            .subquery()
        )
        query = (
            select(Audit.id)
            .outerjoin(running, running.c.contributor_id == Audit.contributor_id)
            .outerjoin(served, served.c.contributor_id == Audit.contributor_id)
            .where(Audit.status == AuditStatus.QUEUED)
            .order_by(
                func.coalesce(running.c.running, 0),
                served.c.last_start.asc().nulls_first(),
                Audit.created_at,
                Audit.id,
            )
            .limit(candidates)
        )
        for _ in range(3):
            with self.sessions() as session:
                ids = list(session.scalars(query))
            if not ids:
                return None
            for audit_id in ids:
                claimed = self.claim(audit_id, worker)
                if claimed is not None:
                    return claimed
        return None

    @retried
    def heartbeat(self, audit_id: str, worker: str, progress: dict | None = None) -> bool | None:
        """Record that ``worker`` is alive; True: cancel asked, None: claim lost."""
        values: dict = {"heartbeat_at": utcnow()}
        if progress is not None:
            values["progress"] = progress
        with self.writes.begin() as session:
            owned = session.execute(
                update(Audit).where(*_claimed_by(audit_id, worker)).values(**values)
            ).rowcount
            if not owned:
                return None
            return bool(session.scalar(select(Audit.cancel_requested).where(Audit.id == audit_id)))

    @retried
    def finish(
        self,
        audit_id: str,
        worker: str,
        content: ReportContent,
        timings: dict,
        progress: dict | None = None,
    ) -> str | None:
        """Store the audit's report and mark it succeeded, in one transaction (None: lost
        claim); ``progress``: the run's last progress (else the last heartbeat's)."""
        with self.writes.begin() as session:
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
            audit.progress = {**(progress or audit.progress or {}), "state": "done"}
            return report.id

    @retried
    def release(
        self, audit_id: str, worker: str, status: AuditStatus, error: str, timings: dict
    ) -> bool:
        """End ``worker``'s claim with ``status`` (failed, cancelled, or queued to run again)."""
        values: dict = {"status": status, "error": error, "timings": timings}
        if status == AuditStatus.QUEUED:
            values |= {"worker": None, "heartbeat_at": None}
        else:
            values["finished_at"] = utcnow()
        with self.writes.begin() as session:
            return bool(
                session.execute(
                    update(Audit).where(*_claimed_by(audit_id, worker)).values(**values)
                ).rowcount
            )

    @retried
    def recover_orphans(
        self, *, stale_after: timedelta, max_attempts: int
    ) -> tuple[list[str], list[str]]:
        """Running audits with no heartbeat for ``stale_after``: re-queue or fail them.

        Returns ``(requeued_ids, failed_ids)``. An orphan whose cancel was asked is cancelled.
        """
        cutoff = utcnow() - stale_after
        requeued, failed = [], []
        with self.writes.begin() as session:
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
    @retried
    def stored_bytes(self, contributor_id: int, session: Session | None = None) -> int:
        """Characters the contributor's requests made the database keep: her reports'
        documents (as JSON text) and pages, her audits' requests and error texts (every
        audit, cancelled or not), and her models' declared metadata."""

        def total(column: Any) -> Select:
            return select(func.coalesce(func.sum(func.length(column)), 0))

        queries = [
            total(cast(Report.document, Text)).where(Report.contributor_id == contributor_id),
            total(ReportPage.html)
            .join(Report, Report.id == ReportPage.report_id)
            .where(Report.contributor_id == contributor_id),
            total(cast(Audit.request, Text)).where(Audit.contributor_id == contributor_id),
            total(Audit.error).where(Audit.contributor_id == contributor_id),
            total(cast(AuditedModel.declared, Text)).where(
                AuditedModel.contributor_id == contributor_id
            ),
        ]
        if session is None:
            with self.sessions() as own:
                return self.stored_bytes(contributor_id, own)
        return int(sum(session.scalar(query) or 0 for query in queries))

    def add_report(
        self,
        principal: Principal,
        model: ModelRef,
        content: ReportContent,
        *,
        max_bytes: int | None = None,
        file_bytes: int = 0,
    ) -> Report:
        """Store an uploaded report (document and page together, or nothing); with
        ``max_bytes``, :class:`StorageFull` when what the contributor keeps (her database rows,
        plus ``file_bytes`` of her files) would exceed it (counted under the write lock, so
        concurrent uploads cannot pass it)."""
        with self.writes.begin() as session:
            if max_bytes is not None:
                session.execute(
                    select(Contributor.id)
                    .where(Contributor.id == principal.contributor_id)
                    .with_for_update()
                )
                adding = len(json.dumps(content.document)) + len(content.html or "")
                stored = self.stored_bytes(principal.contributor_id, session) + file_bytes
                if stored + adding > max_bytes:
                    raise StorageFull(max_bytes, stored, adding)
            model_row = self._model(session, model, principal.contributor_id)
            report = _new_report(
                content, model_id=model_row.id, contributor_id=principal.contributor_id
            )
            report.model = model_row
            session.add(report)
            session.flush()  # the page's foreign key needs the report row first
            if content.html is not None:
                session.add(ReportPage(report_id=report.id, html=content.html))
        return report

    def get_report(
        self, principal: Principal, report_id: str, *, with_document: bool = True
    ) -> Report | None:
        """The report (with its document unless ``with_document`` is False), if ``principal``
        may see it."""
        query = report_by_id_query(principal, report_id)
        if with_document:
            query = query.options(undefer(Report.document))
        with self.sessions() as session:
            return session.scalars(query).unique().first()

    @retried
    def redact_reports(self, audit_ids: list[str], note: str) -> int:
        """Take the records out of the reports of these audits (their ``exposure`` and
        ``examples`` sections, and the page's parts that show records) and out of their
        failure lines (the child's last line may quote a value), saying why with ``note``;
        how many reports there were."""
        if not audit_ids:
            return 0
        with self.writes.begin() as session:
            for audit in session.scalars(select(Audit).where(Audit.id.in_(audit_ids))):
                if audit.error:
                    audit.error = note
            reports = session.scalars(
                select(Report)
                .options(undefer(Report.document))
                .where(Report.audit_id.in_(audit_ids))
            ).all()
            for report in reports:
                report.document = document_without_records(report.document, note)
                page = session.get(ReportPage, report.id)
                if page is not None:
                    page.html = without_member_data(page.html, note)
        self.forget_replaced()
        return len(reports)

    def forget_replaced(self) -> None:
        """Make replaced and deleted text unreadable from the database's files where the
        database allows it: SQLite zeroes freed pages (``secure_delete``) and here copies its
        write-ahead log back and empties it. PostgreSQL keeps old row versions until its
        vacuum reuses them (SECURITY.md)."""
        if self.engine.dialect.name != "sqlite":
            return
        with self.engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def has_report_page(self, principal: Principal, report_id: str) -> bool:
        """Whether the report has an HTML page that ``principal`` may see (not loading it)."""
        query = _owned(
            select(Report.contributor_id)
            .join(ReportPage, Report.id == ReportPage.report_id)
            .where(ReportPage.report_id == report_id),
            Report.contributor_id,
            principal,
        )
        with self.sessions() as session:
            return session.scalar(query) is not None

    def get_report_html(self, principal: Principal, report_id: str) -> str | None:
        """The report's page, read only where ``principal`` may see it (the owner is in the
        query: another contributor's id reads no page)."""
        with self.sessions() as session:
            return session.scalar(report_page_query(principal, report_id))

    def model_history(
        self, principal: Principal, model_name: str, limit: int = 200
    ) -> tuple[list[Report], list[Audit]]:
        """``model_name``'s newest ``limit`` reports (newest first; their digests, never their
        documents) and audits (newest first) that ``principal`` may see; both empty for a name
        she has no model of."""
        reports = (
            reports_query(principal, model_name)
            .order_by(Report.created_at.desc(), Report.id)
            .limit(limit)
        )
        audits = (
            select(Audit)
            .join(AuditedModel, AuditedModel.id == Audit.model_id)
            .where(AuditedModel.name == model_name)
            .order_by(Audit.created_at.desc(), Audit.id)
            .limit(limit)
        )
        if not principal.is_admin:
            audits = audits.where(
                AuditedModel.contributor_id == principal.contributor_id,
                Audit.contributor_id == principal.contributor_id,
            )
        with self.sessions() as session:
            return list(session.scalars(reports)), list(session.scalars(audits))

    def list_reports(
        self, principal: Principal, model_name: str, where: ReportFilter
    ) -> list[Report] | None:
        """The principal's reports of ``model_name``, newest first; None if it has none at all.

        A contributor's query starts from her own models (the owner, name, version index) and
        never reaches another contributor's rows, so whether another contributor has a model of
        that name shows in neither the answer nor the work done (:func:`reports_query`)."""
        query = visible = reports_query(principal, model_name)
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
    """The page of report ``report_id`` where ``principal`` may see it, its owner in the
    query: another contributor's id matches no row and reads no page."""
    return _owned(
        select(ReportPage.html)
        .join(Report, Report.id == ReportPage.report_id)
        .where(ReportPage.report_id == report_id),
        Report.contributor_id,
        principal,
    )


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
