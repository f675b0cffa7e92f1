"""SQLAlchemy 2 models. Times are timezone-aware UTC; ids of audits and reports are UUID4 text."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

JsonColumn = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    pass


class Contributor(Base):
    """A data contributor (or an admin). Only the SHA-256 of its token is kept."""

    __tablename__ = "contributors"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    is_worker: Mapped[bool] = mapped_column(Boolean, default=False)
    """A worker's credential (``tokens create --worker``): it reads the uploads of running
    audits (``/v1/worker/…``) and nothing else."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """The token stops working at this time (None: never)."""
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """Set by ``panoramia tokens revoke``: the token no longer authenticates."""
    sessions_after: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """Console sessions signed in before this time are over (set by signing out)."""


class AuditedModel(Base):
    """A model under audit as one contributor names it: name, version and what that contributor
    declared (e.g. a DP claim). Two contributors' ``census/2`` are two rows that never meet."""

    __tablename__ = "models"
    __table_args__ = (
        UniqueConstraint("contributor_id", "name", "version", name="uq_models_owner_name_version"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    contributor_id: Mapped[int | None] = mapped_column(
        ForeignKey("contributors.id", name="fk_models_contributor"), index=True, nullable=True
    )
    """The owner: the contributor who first named the model (None: rows from before revision
    0003 that nothing refers to; only admins see them)."""
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(100))
    declared: Mapped[dict] = mapped_column(JsonColumn, default=dict)
    """Owner-declared metadata, e.g. ``{"dp": {"epsilon": 8, "delta": 1e-5}}``."""
    claim: Mapped[dict | None] = mapped_column(JsonColumn, nullable=True)
    """The declared guarantee in ``panoramia.accounting.claims`` JSON form (validated)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Audit(Base):
    """An audit job: what was asked, where it stands, how long it took, why it failed."""

    __tablename__ = "audits"
    __table_args__ = (Index("ix_audits_status_heartbeat", "status", "heartbeat_at"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    contributor_id: Mapped[int] = mapped_column(ForeignKey("contributors.id"), index=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"))
    status: Mapped[str] = mapped_column(String(16))
    request: Mapped[dict] = mapped_column(JsonColumn)
    """The submitted request: target, data, overrides (the Hydra command line is derived)."""
    progress: Mapped[dict] = mapped_column(JsonColumn, default=dict)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    timings: Mapped[dict] = mapped_column(JsonColumn, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    repeat_group: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    """The audits of one request for repeats share it (docs/SPEC.md §3.2); None: a single one."""
    shared_model_id: Mapped[int | None] = mapped_column(
        ForeignKey("shared_models.id", name="fk_audits_shared_model"), nullable=True, index=True
    )
    """The published shared model it audits (docs/SPEC.md §3.3); None: a model of her own."""
    model: Mapped[AuditedModel] = relationship(lazy="joined", innerjoin=True)


class Report(Base):
    """One leakage report: headline numbers in columns (for listing), the document as JSON."""

    __tablename__ = "reports"
    __table_args__ = (Index("ix_reports_model_created", "model_id", "created_at"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"))
    contributor_id: Mapped[int] = mapped_column(ForeignKey("contributors.id"), index=True)
    audit_id: Mapped[str | None] = mapped_column(
        ForeignKey("audits.id"), nullable=True, unique=True
    )
    modality: Mapped[str] = mapped_column(String(16))
    c_lb: Mapped[float] = mapped_column(Float)
    c_plus_eps_lb: Mapped[float] = mapped_column(Float)
    eps_tilde: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    """When the report was stored (``document["created"]`` is when the audit produced it)."""
    artifact_location: Mapped[str | None] = mapped_column(Text, nullable=True)
    document: Mapped[dict] = mapped_column(JsonColumn, deferred=True)
    """Loaded only when asked for (listings read the headline columns)."""
    digest: Mapped[dict | None] = mapped_column(JsonColumn, nullable=True)
    """What listings and the console show beside the columns: the verdict read off the
    figures and a few more figures (:func:`panoramia.report.digest.report_digest`), small."""
    model: Mapped[AuditedModel] = relationship(lazy="joined", innerjoin=True)


class ReportPage(Base):
    """A report's page, kept apart so that listings never load it: its charts (``parts``,
    :class:`panoramia.report.page_parts.PageParts` as JSON), from which the page is rendered
    with the report's document; or, for a page stored before parts were or uploaded by a CLI
    run, the page itself (``html``)."""

    __tablename__ = "report_pages"
    report_id: Mapped[str] = mapped_column(
        ForeignKey("reports.id", ondelete="CASCADE"), primary_key=True
    )
    html: Mapped[str | None] = mapped_column(Text, nullable=True)
    parts: Mapped[str | None] = mapped_column(Text, nullable=True)


class Upload(Base):
    """A file or folder a contributor sent over the network (``/v1/uploads``): a data file
    (CSV, ``.npz``), a text folder or a model folder (as one tar archive). Its bytes live under
    the service's ``uploads/<contributor id>/<id>/``; an audit names it by id or name."""

    __tablename__ = "uploads"
    __table_args__ = (UniqueConstraint("contributor_id", "name", name="uq_uploads_owner_name"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    contributor_id: Mapped[int] = mapped_column(ForeignKey("contributors.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(8))
    """``data`` or ``model``."""
    filename: Mapped[str] = mapped_column(String(200))
    """The name the sender gave (its suffixes tell the format: ``.csv``, ``.npz``, ``.tar``)."""
    size: Mapped[int] = mapped_column(BigInteger)
    """Bytes the sender declared, and that are received in all."""
    sha256: Mapped[str] = mapped_column(String(64))
    """The SHA-256 (hex) the sender declared; checked when the last byte arrives."""
    received: Mapped[int] = mapped_column(BigInteger, default=0)
    """Bytes received so far (the offset the next chunk must start at)."""
    state: Mapped[str] = mapped_column(String(12))
    """``receiving`` until the last byte arrives, ``checking`` while its check runs (one at a
    time), then ``ready``; ``deleting`` while its deletion runs."""
    files: Mapped[dict] = mapped_column(JsonColumn, default=dict)
    """Once ready: the SHA-256 of each file it holds, by its path inside the upload."""
    summary: Mapped[dict] = mapped_column(JsonColumn, default=dict)
    """Once ready: what its check found (a table's rows and column types, arrays' shapes,
    a model's format), shown to its owner."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    touched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    """When its last chunk arrived (an upload that stalls is removed after a while)."""
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class SharedModel(Base):
    """A model its owner published for others to audit (docs/SPEC.md §3.3): one row per
    version. Its file is the owner's model upload (``upload_id``) or a folder the operator
    placed under ``models/`` (``placed``, admins only); neither is ever shown to another
    contributor. ``withdrawn_at``: no new audit may name it (its audits and reports stay)."""

    __tablename__ = "shared_models"
    __table_args__ = (
        UniqueConstraint("owner_id", "name", "version", name="uq_shared_models_owner_name_version"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(
        ForeignKey("contributors.id", name="fk_shared_models_owner"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    version: Mapped[str] = mapped_column(String(100))
    upload_id: Mapped[str | None] = mapped_column(
        ForeignKey("uploads.id", name="fk_shared_models_upload"), nullable=True, index=True
    )
    placed: Mapped[str | None] = mapped_column(Text, nullable=True)
    """An operator-placed model folder, relative to ``models/``."""
    modality: Mapped[str | None] = mapped_column(String(16), nullable=True)
    declared: Mapped[dict] = mapped_column(JsonColumn, default=dict)
    claim: Mapped[dict | None] = mapped_column(JsonColumn, nullable=True)
    """The declared guarantee its audits are checked against (claims JSON, validated)."""
    audience_all: Mapped[bool] = mapped_column(Boolean, default=False)
    """Every contributor of the service may audit it (else only :class:`SharedAudience`)."""
    published_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    withdrawn_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class SharedAudience(Base):
    """A contributor, by name, whom the owner let audit a shared model version. Names are
    kept as the owner gave them (a name nobody holds yet refuses nothing and tells nothing)."""

    __tablename__ = "shared_audience"
    shared_model_id: Mapped[int] = mapped_column(
        ForeignKey("shared_models.id", ondelete="CASCADE", name="fk_shared_audience_model"),
        primary_key=True,
    )
    contributor_name: Mapped[str] = mapped_column(String(120), primary_key=True, index=True)


class SharedParticipant(Base):
    """A contributor who audited a shared model version: the pseudonym its owner sees her by
    (the same for every version of one name), whether she chose to be named, and whether she
    withdrew her audits from its leakage report."""

    __tablename__ = "shared_participants"
    __table_args__ = (
        UniqueConstraint(
            "shared_model_id", "contributor_id", name="uq_shared_participants_model_contributor"
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    shared_model_id: Mapped[int] = mapped_column(
        ForeignKey("shared_models.id", name="fk_shared_participants_model"), index=True
    )
    contributor_id: Mapped[int] = mapped_column(
        ForeignKey("contributors.id", name="fk_shared_participants_contributor"), index=True
    )
    pseudonym: Mapped[str] = mapped_column(String(40))
    named: Mapped[bool] = mapped_column(Boolean, default=False)
    withdrawn_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    joined_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
