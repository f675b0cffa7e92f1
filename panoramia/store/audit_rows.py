"""Audits: created within her limits, claimed fairly, beaten on, finished, recovered."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Select, func, select, update
from sqlalchemy.orm import Session

from panoramia.store.common import (
    ACTIVE,
    AuditStatus,
    ModelRef,
    Principal,
    ReportContent,
    StoreBase,
    TooManyAudits,
    _claimed_by,
    _new_report,
    _owned,
    retried,
    utcnow,
)
from panoramia.store.tables import Audit, AuditedModel, Contributor, Report


class AuditRows(StoreBase):
    """Audits: created within her limits, claimed fairly, beaten on, finished, recovered."""

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

        :class:`TooManyAudits` when the principal already has ``max_active`` requests queued
        or running (a group of repeats counts once); ``budget`` is called with the sum of their
        ``request["cost"]`` estimates and raises to refuse (both counted under the write lock,
        so concurrent submissions cannot pass them)."""
        return self.create_audits(
            principal, model, [request], max_active=max_active, budget=budget
        )[0]

    @retried
    def create_audits(
        self,
        principal: Principal,
        model: ModelRef,
        requests: list[dict],
        *,
        max_active: int | None = None,
        budget: Callable[[float], None] | None = None,
        models: list[ModelRef] | None = None,
        shared_model_id: int | None = None,
    ) -> list[Audit]:
        """Record one queued audit per request, in one transaction: with more than one, a
        group of repeats (docs/SPEC.md §3.2) sharing a new ``repeat_group``, which counts as
        one request against ``max_active``. ``models``: each request's model where they
        differ (a control beside the target); else ``model`` for all. Limits as
        :meth:`create_audit`. ``shared_model_id``: the shared model version they audit
        (docs/SPEC.md §3.3), locked in the same transaction (a withdrawn one refused with
        :class:`~panoramia.store.shared_rows.SharedModelWithdrawn`) and joined by her."""
        if not requests:
            raise ValueError("no audit to create")
        group = str(uuid.uuid4()) if len(requests) > 1 else None
        with self.writes.begin() as session:
            if max_active is not None or budget is not None:
                _check_limits(session, principal, max_active, budget)
            if shared_model_id is not None:
                self.join_shared(session, shared_model_id, principal.contributor_id)
            refs = models if models is not None else [model] * len(requests)
            entries: dict[tuple[str, str], AuditedModel] = {}
            for ref in refs:
                if (ref.name, ref.version) not in entries:
                    entries[ref.name, ref.version] = self._model(
                        session, ref, principal.contributor_id
                    )
            created = []
            for request, ref in zip(requests, refs, strict=True):
                audited = entries[ref.name, ref.version]
                audit = Audit(
                    id=str(uuid.uuid4()),
                    contributor_id=principal.contributor_id,
                    model=audited,
                    status=AuditStatus.QUEUED,
                    request=request,
                    progress={},
                    attempts=0,
                    cancel_requested=False,
                    timings={},
                    created_at=utcnow(),
                    repeat_group=group,
                    shared_model_id=shared_model_id,
                )
                session.add(audit)
                created.append(audit)
        return created

    def repeat_audits(self, principal: Principal, group: str) -> list[Audit]:
        """The audits of one group of repeats, in the order submitted (their seeds' order);
        [] where ``principal`` may see none of them."""
        query = _owned(
            select(Audit).where(Audit.repeat_group == group), Audit.contributor_id, principal
        )
        with self.sessions() as session:
            found = list(session.scalars(query))
        return sorted(found, key=_repeat_index)

    def reports_of_audits(self, audit_ids: list[str]) -> dict[str, Report]:
        """The report of each finished audit among ``audit_ids`` (its document deferred), by
        audit id; audits without one are absent."""
        if not audit_ids:
            return {}
        query = select(Report).where(Report.audit_id.in_(audit_ids))
        with self.sessions() as session:
            return {report.audit_id: report for report in session.scalars(query)}

    def active_cost(self, contributor_id: int) -> float:
        """The summed cost estimates of the contributor's queued and running audits."""
        with self.sessions() as session:
            return _active_cost(session, contributor_id)

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
        query = _fairest_queued(candidates)
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
            page = content.page_row(report.id)
            if page is not None:
                session.add(page)
            audit.status = AuditStatus.SUCCEEDED
            audit.finished_at = utcnow()
            audit.timings = timings
            audit.progress = {**(progress or audit.progress or {}), "state": "done"}
            return report.id

    @retried
    def release(
        self,
        audit_id: str,
        worker: str,
        status: AuditStatus,
        error: str,
        timings: dict,
        progress: dict | None = None,
    ) -> bool:
        """End ``worker``'s claim with ``status`` (failed, cancelled, or queued to run again);
        ``progress``: the run's last (the stage it failed at), newer than its last heartbeat."""
        values: dict = {"status": status, "error": error, "timings": timings}
        if progress is not None and status != AuditStatus.QUEUED:
            values["progress"] = progress
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
                outcome = _recover_orphan(audit, max_attempts)
                if outcome == AuditStatus.QUEUED:
                    requeued.append(audit.id)
                elif outcome == AuditStatus.FAILED:
                    failed.append(audit.id)
        return requeued, failed


def _repeat_index(audit: Audit) -> tuple[int, int]:
    """An audit's place in its group of repeats: the target's runs, then the control's, each
    by ``request["repeat"]["index"]``."""
    repeat = (audit.request or {}).get("repeat")
    repeat = repeat if isinstance(repeat, dict) else {}
    index = repeat.get("index")
    return (1 if repeat.get("role") == "control" else 0, index if isinstance(index, int) else 0)


def _check_limits(
    session: Session,
    principal: Principal,
    max_active: int | None,
    budget: Callable[[float], None] | None,
) -> None:
    """Refuse a submission over the principal's ``max_active`` requests or her ``budget``,
    counted under her contributor row's lock (PostgreSQL: it serialises her submissions)."""
    session.execute(
        select(Contributor.id).where(Contributor.id == principal.contributor_id).with_for_update()
    )
    active = _active_requests(session, principal)
    if max_active is not None and active >= max_active:
        raise TooManyAudits(max_active)
    if budget is not None:
        budget(_active_cost(session, principal.contributor_id))


def _active_requests(session: Session, principal: Principal) -> int:
    """The contributor's queued or running requests: single audits, and groups of
    repeats counted once."""
    active = (Audit.contributor_id == principal.contributor_id, Audit.status.in_(ACTIVE))
    single = session.scalar(
        select(func.count(Audit.id)).where(*active, Audit.repeat_group.is_(None))
    )
    groups = session.scalar(
        select(func.count(func.distinct(Audit.repeat_group))).where(
            *active, Audit.repeat_group.is_not(None)
        )
    )
    return int(single or 0) + int(groups or 0)


def _active_cost(session: Session, contributor_id: int) -> float:
    """The summed ``request["cost"]`` of the contributor's queued and running audits."""
    requests = session.scalars(
        select(Audit.request).where(
            Audit.contributor_id == contributor_id, Audit.status.in_(ACTIVE)
        )
    )
    return float(sum(float((r or {}).get("cost") or 0) for r in requests))


def _fairest_queued(candidates: int) -> Select[str]:
    """The ids of the ``candidates`` queued audits fairest to run next, in that order (see
    :meth:`AuditRows.claim_next`)."""
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
    return (
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


def _recover_orphan(audit: Audit, max_attempts: int) -> AuditStatus:
    """Release an orphaned running audit: cancelled (its cancel was asked), re-queued (it has
    attempts left) or failed; returns its new status."""
    lost = f"worker {audit.worker} stopped sending heartbeats (attempt {audit.attempts})"
    audit.worker = None
    if audit.cancel_requested:
        audit.status, audit.error = AuditStatus.CANCELLED, f"cancelled; {lost}"
        audit.finished_at = utcnow()
        return AuditStatus.CANCELLED
    if audit.attempts < max_attempts:
        audit.status, audit.error = AuditStatus.QUEUED, f"re-queued: {lost}"
        audit.heartbeat_at = None
        return AuditStatus.QUEUED
    audit.status = AuditStatus.FAILED
    audit.error = f"failed after {audit.attempts} attempts: {lost}"
    audit.finished_at = utcnow()
    return AuditStatus.FAILED
