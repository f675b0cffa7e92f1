"""The uploads' rows: who sent what, how much of it has arrived, and whether it checked out.

Every query is scoped to the uploading contributor: an upload is listed, read, named in an
audit and deleted by its owner only (an admin token too sees only its own). The bytes
themselves are the service's (:mod:`panoramia.service.uploads.files`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError

from panoramia.store.repository import ReportStore, StorageFull, retried, utcnow
from panoramia.store.tables import Audit, Upload

RECEIVING, READY = "receiving", "ready"


class NameTaken(Exception):
    """The contributor already has an upload of this name."""


@dataclass(frozen=True)
class NewUpload:
    """What a sender declares before the first byte: the name an audit will use, ``data`` or
    ``model``, the file's own name (its suffixes tell the format), its size in bytes and its
    SHA-256 (hex)."""

    name: str
    kind: str
    filename: str
    size: int
    sha256: str


class UploadRows:
    """The ``uploads`` table through a :class:`ReportStore`'s sessions."""

    def __init__(self, store: ReportStore):
        self.store = store

    @retried
    def create(self, contributor_id: int, new: NewUpload, *, quota: int, kept: int) -> Upload:
        """A ``receiving`` upload; :class:`StorageFull` when its declared size would take
        her past ``quota`` bytes, counting the ``kept`` bytes she has and the bytes of her
        uploads still arriving (not yet on disk, but promised); :class:`NameTaken` when the
        name is hers already."""
        with self.store.writes.begin() as session:
            promised = session.scalar(
                select(func.coalesce(func.sum(Upload.size - Upload.received), 0)).where(
                    Upload.contributor_id == contributor_id, Upload.state == RECEIVING
                )
            )
            stored = kept + int(promised or 0)
            if stored + new.size > quota:
                raise StorageFull(quota, stored, new.size)
            upload = Upload(
                id=str(uuid.uuid4()), contributor_id=contributor_id, name=new.name,
                kind=new.kind, filename=new.filename, size=new.size, sha256=new.sha256,
                received=0, state=RECEIVING, files={}, summary={}, created_at=utcnow(),
            )  # fmt: skip
            session.add(upload)
            try:
                session.flush()
            except IntegrityError:
                raise NameTaken(new.name) from None
        return upload

    def find(self, contributor_id: int, id_or_name: str, *, ready: bool = False) -> Upload | None:
        """Her upload with this id or name (``ready``: only one that has fully arrived)."""
        query = select(Upload).where(
            Upload.contributor_id == contributor_id,
            or_(Upload.id == id_or_name, Upload.name == id_or_name),
        )
        if ready:
            query = query.where(Upload.state == READY)
        with self.store.sessions() as session:
            return session.scalars(query.order_by((Upload.id == id_or_name).desc())).first()

    def get(self, upload_id: str) -> Upload | None:
        """Any upload by id (internal use: the worker staging an audit's inputs)."""
        with self.store.sessions() as session:
            return session.get(Upload, upload_id)

    def owned(self, contributor_id: int) -> list[Upload]:
        """Her uploads, newest first."""
        query = (
            select(Upload)
            .where(Upload.contributor_id == contributor_id)
            .order_by(Upload.created_at.desc())
        )
        with self.store.sessions() as session:
            return list(session.scalars(query))

    @retried
    def received(self, upload_id: str, offset: int) -> None:
        with self.store.writes.begin() as session:
            upload = session.get(Upload, upload_id)
            if upload is not None:
                upload.received = offset

    @retried
    def ready(self, upload_id: str, files: dict[str, str], summary: dict) -> Upload | None:
        with self.store.writes.begin() as session:
            upload = session.get(Upload, upload_id)
            if upload is not None:
                upload.state, upload.files, upload.summary = READY, files, summary
                upload.completed_at = utcnow()
        return upload

    @retried
    def remove(self, upload_id: str) -> None:
        with self.store.writes.begin() as session:
            upload = session.get(Upload, upload_id)
            if upload is not None:
                session.delete(upload)

    def audits_naming(self, contributor_id: int, upload_id: str) -> list[Audit]:
        """Her audits whose request named this upload (any state)."""
        query = select(Audit).where(Audit.contributor_id == contributor_id)
        with self.store.sessions() as session:
            return [
                audit
                for audit in session.scalars(query)
                if upload_id in (audit.request or {}).get("uploads", {}).values()
            ]

    def has_running(self, contributor_id: int) -> bool:
        """Whether an audit of hers is running now (its stages may be half-written)."""
        query = select(Audit.id).where(
            Audit.contributor_id == contributor_id, Audit.status == "running"
        )
        with self.store.sessions() as session:
            return session.scalar(query.limit(1)) is not None
