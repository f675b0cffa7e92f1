"""Reports: stored within her quota, read where the caller may, redacted when her data goes."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Select, Text, cast, func, select
from sqlalchemy.orm import Session, undefer

from panoramia.report.page_parts import redacted_parts
from panoramia.report.redaction import document_without_records, without_member_data
from panoramia.store.common import (
    ModelRef,
    Principal,
    ReportContent,
    ReportFilter,
    StorageFull,
    StoreBase,
    _new_report,
    _owned,
    report_by_id_query,
    report_page_query,
    reports_query,
    retried,
    stored_page,
)
from panoramia.store.tables import Audit, AuditedModel, Contributor, Report, ReportPage

CONTROL_VERSION_SUFFIX = "-control"
"""What a control's version adds to its target's (the service's ``schemas.CONTROL_SUFFIX``)."""


class ReportRows(StoreBase):
    """Reports: stored within her quota, read where the caller may, redacted when her data goes."""

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
            total(ReportPage.parts)
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
                adding = len(json.dumps(content.document)) + content.page_chars()
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
            page = content.page_row(report.id)
            if page is not None:
                session.add(page)
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
                if page is not None and page.parts is not None:  # rendered from both
                    page.parts = redacted_parts(page.parts, note)
                if page is not None and page.html is not None:  # a page stored as it was
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
        """The report's page (:func:`stored_page`), read only where ``principal`` may see it
        (the owner is in the query: another contributor's id reads no page)."""
        with self.sessions() as session:
            row = session.execute(report_page_query(principal, report_id)).first()
        return stored_page(*row) if row is not None else None

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

    def latest_reports(
        self, principal: Principal, model_name: str
    ) -> tuple[Report | None, Report | None]:
        """``model_name``'s newest report that one of the service's audits wrote, and its
        newest report of all (an uploaded one, where one is newer; else the same row), among
        those ``principal`` may see (their digests, never their documents); None for each
        she has none of. A listing's latest verdict is the first: an uploaded report's is
        never shown as the service's. A control's runs (version ``<version>-control``) are
        never a model's latest: their verdict is the control's, not the model's."""
        newest = (
            reports_query(principal, model_name)
            .where(AuditedModel.version.not_like(f"%{CONTROL_VERSION_SUFFIX}"))
            .order_by(Report.created_at.desc(), Report.id)
        )
        with self.sessions() as session:
            found = session.scalars(newest.limit(1)).first()
            if found is None or found.audit_id is not None:
                return found, found
            audited = newest.where(Report.audit_id.is_not(None)).limit(1)
            return session.scalars(audited).first(), found

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
