"""Audited models as each contributor names them, and their listings."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from panoramia.store.common import (
    ACTIVE,
    ModelRef,
    ModelSummary,
    Principal,
    StoreBase,
    as_utc,
    utcnow,
)
from panoramia.store.tables import Audit, AuditedModel, Contributor, Report, ReportPage


class ModelInUse(Exception):
    """The model entry still has audits queued or running: cancel them first."""

    def __init__(self, name: str, active: int):
        super().__init__(
            f"model {name!r} has {active} audit(s) queued or running: cancel them "
            f"(panoramia audits cancel ID) or wait, then delete it"
        )


@dataclass(frozen=True)
class ModelDeletion:
    """What deleting a model entry removed: its ``versions``, ``reports`` (count) and the
    ids of its ``audits`` (their run folders are the caller's to remove)."""

    name: str
    versions: list[str]
    reports: int
    audits: list[str]


class ModelRows(StoreBase):
    """Audited models as each contributor names them, and their listings."""

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

    def delete_model(
        self, principal: Principal, name: str, version: str | None = None
    ) -> ModelDeletion | None:
        """Delete the principal's own model entry ``name`` (one ``version``, or all), with its
        reports, their pages and its finished audits, in one transaction; None where she has
        no such entry (another contributor's is the same None). :class:`ModelInUse` while one
        of its audits is queued or running. An admin deletes only her own entries too."""
        with self.writes.begin() as session:
            # PostgreSQL: her row first, as create_audits and add_report take it, so that a
            # submission naming this model waits for the deletion and then makes it anew
            session.execute(
                select(Contributor.id)
                .where(Contributor.id == principal.contributor_id)
                .with_for_update()
            )
            query = select(AuditedModel).where(
                AuditedModel.contributor_id == principal.contributor_id,
                AuditedModel.name == name,
            )
            if version is not None:
                query = query.where(AuditedModel.version == version)
            models = list(session.scalars(query.with_for_update()))
            if not models:
                return None
            ids = [model.id for model in models]
            active = session.scalar(
                select(func.count(Audit.id)).where(
                    Audit.model_id.in_(ids), Audit.status.in_(ACTIVE)
                )
            )
            if active:
                raise ModelInUse(name, int(active))
            audit_ids = list(session.scalars(select(Audit.id).where(Audit.model_id.in_(ids))))
            report_ids = select(Report.id).where(Report.model_id.in_(ids))
            session.execute(delete(ReportPage).where(ReportPage.report_id.in_(report_ids)))
            reports = session.execute(delete(Report).where(Report.model_id.in_(ids))).rowcount
            session.execute(delete(Audit).where(Audit.model_id.in_(ids)))
            session.execute(delete(AuditedModel).where(AuditedModel.id.in_(ids)))
            versions = sorted(model.version for model in models)
        self.forget_replaced()  # type: ignore[attr-defined]
        return ModelDeletion(name, versions, int(reports or 0), audit_ids)
