"""The uploads' rows: who sent what, how much of it has arrived, and where it stands.

Every query a contributor's request makes is scoped to her: an upload is listed, read, named
in an audit and deleted by its owner only (an admin token too sees only its own). The bytes
themselves are the service's (:mod:`panoramia.service.uploads.files`).

States move only forward, each step one conditional update (two requests racing on one
upload: one wins, the other is told so): ``receiving`` → ``checking`` (the last byte is
in; one check at a time) → ``ready``; any → ``deleting`` (gone at the end; a check under
way ends first). A check and a deletion touch their row while they work; one left behind
by a process that died is taken over once its row stops moving (:meth:`UploadRows.
claim_orphan`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError

from panoramia.store.repository import ReportStore, StorageFull, retried, utcnow
from panoramia.store.tables import Audit, Contributor, Upload

RECEIVING, CHECKING, READY, DELETING = "receiving", "checking", "ready", "deleting"


class NameTaken(Exception):
    """The contributor already has an upload of this name."""


class NotChecking(Exception):
    """The upload is no longer being checked: ``state`` is where it is (None: gone)."""

    def __init__(self, state: str | None):
        super().__init__(f"the upload is {state or 'gone'}")
        self.state = state


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


def kept_bytes(upload: Upload) -> int:
    """Bytes an upload takes on the service's disk: what has arrived, or once ready what
    was kept (an archive's unpacked files)."""
    if upload.state == READY:
        return int((upload.summary or {}).get("unpacked_bytes", upload.size))
    return int(upload.received or 0)


class UploadRows:
    """The ``uploads`` table through a :class:`ReportStore`'s sessions."""

    def __init__(self, store: ReportStore):
        self.store = store

    @retried
    def create(self, contributor_id: int, new: NewUpload, *, quota: int, kept: int) -> Upload:
        """A ``receiving`` upload; :class:`StorageFull` when its declared size would take
        her past ``quota`` bytes, counting the ``kept`` bytes she has and the bytes her
        uploads still arriving have promised; :class:`NameTaken` when the name is hers
        already. Her creations are serialised (her row is locked), so two at once cannot both
        fit in the room one leaves."""
        with self.store.writes.begin() as session:
            session.scalar(
                select(Contributor.id).where(Contributor.id == contributor_id).with_for_update()
            )
            promised = session.scalar(
                select(func.coalesce(func.sum(Upload.size - Upload.received), 0)).where(
                    Upload.contributor_id == contributor_id, Upload.state == RECEIVING
                )
            )
            stored = kept + int(promised or 0)
            if stored + new.size > quota:
                raise StorageFull(quota, stored, new.size)
            now = utcnow()
            upload = Upload(
                id=str(uuid.uuid4()), contributor_id=contributor_id, name=new.name,
                kind=new.kind, filename=new.filename, size=new.size, sha256=new.sha256,
                received=0, state=RECEIVING, files={}, summary={}, created_at=now,
                touched_at=now,
            )  # fmt: skip
            session.add(upload)
            try:
                session.flush()
            except IntegrityError:
                raise NameTaken(new.name) from None
        return upload

    def find(self, contributor_id: int, id_or_name: str) -> Upload | None:
        """Her upload with this id or name (an id first)."""
        query = select(Upload).where(
            Upload.contributor_id == contributor_id,
            or_(Upload.id == id_or_name, Upload.name == id_or_name),
        )
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

    def bytes_kept(self, contributor_id: int) -> int:
        """What her uploads take on the service's disk (:func:`kept_bytes`)."""
        return sum(kept_bytes(upload) for upload in self.owned(contributor_id))

    @retried
    def received(self, upload_id: str, offset: int) -> None:
        with self.store.writes.begin() as session:
            session.execute(
                update(Upload)
                .where(Upload.id == upload_id, Upload.state == RECEIVING)
                .values(received=offset, touched_at=utcnow())
            )

    @retried
    def move(self, upload_id: str, before: tuple[str, ...], after: str) -> bool:
        """Move the upload from one of the ``before`` states to ``after``; whether it moved
        (False: another request moved it first, or it is gone)."""
        with self.store.writes.begin() as session:
            moved = session.execute(
                update(Upload)
                .where(Upload.id == upload_id, Upload.state.in_(before))
                .values(state=after, touched_at=utcnow())
            )
        return bool(moved.rowcount)

    @retried
    def ready(
        self, upload_id: str, files: dict[str, str], summary: dict, *, quota: int, others: int
    ) -> Upload:
        """The checked upload, now ``ready``. :class:`NotChecking` (with the state it is in,
        or None when gone) when it is no longer being checked: her deletion, or another
        check, came first. :class:`StorageFull` when what it keeps
        (``summary["unpacked_bytes"]``) would take its owner past ``quota`` bytes, counting
        ``others`` (her bytes besides uploads) and what her other uploads keep or have
        promised, read under her row's lock: two checks ending at once cannot both fit in
        the room one leaves. The upload's row is locked too, so a deletion moving it at the
        same moment waits, and is not overwritten."""
        with self.store.writes.begin() as session:
            owner = session.scalar(select(Upload.contributor_id).where(Upload.id == upload_id))
            if owner is not None:
                session.scalar(
                    select(Contributor.id).where(Contributor.id == owner).with_for_update()
                )
            upload = session.get(Upload, upload_id, with_for_update=True, populate_existing=True)
            if upload is None or upload.state != CHECKING:
                raise NotChecking(None if upload is None else upload.state)
            theirs = session.scalars(
                select(Upload).where(
                    Upload.contributor_id == upload.contributor_id, Upload.id != upload_id
                )
            )
            kept = others + sum(
                kept_bytes(other) + (other.size - other.received if other.state == RECEIVING else 0)
                for other in theirs
            )
            landing = int(summary.get("unpacked_bytes", upload.size))
            if kept + landing > quota:
                raise StorageFull(quota, kept, landing)
            upload.state, upload.files, upload.summary = READY, files, summary
            upload.received = upload.size
            upload.completed_at = utcnow()
        return upload

    def state_of(self, upload_id: str) -> str | None:
        """The upload's state now, or None when it is gone."""
        with self.store.sessions() as session:
            return session.scalar(select(Upload.state).where(Upload.id == upload_id))

    @retried
    def move_from(self, upload_id: str, before: tuple[str, ...], after: str) -> str | None:
        """Move the upload from the first of ``before`` it is in to ``after``; that state, or
        None when it was in none of them (one conditional update per state: the answer says
        which one moved)."""
        for state in before:
            if self.move(upload_id, (state,), after):
                return state
        return None

    @retried
    def touch(self, upload_id: str, states: tuple[str, ...]) -> None:
        """Mark the upload as still being worked on (a check's or a deletion's heartbeat)."""
        with self.store.writes.begin() as session:
            session.execute(
                update(Upload)
                .where(Upload.id == upload_id, Upload.state.in_(states))
                .values(touched_at=utcnow())
            )

    @retried
    def touch_until(self, upload_id: str, state: str, until: datetime) -> None:
        """Hold the upload in ``state`` until ``until`` (no orphan claim before then)."""
        with self.store.writes.begin() as session:
            session.execute(
                update(Upload)
                .where(Upload.id == upload_id, Upload.state == state)
                .values(touched_at=until)
            )

    @retried
    def claim_orphan(self, upload_id: str, state: str, before: datetime, until: datetime) -> bool:
        """Take over an upload left in ``state`` (``checking`` or ``deleting``) whose worker
        last touched it before ``before`` (its process died): one claimant wins, and it
        holds the upload until ``until`` (no other takes it meanwhile)."""
        with self.store.writes.begin() as session:
            moved = session.execute(
                update(Upload)
                .where(Upload.id == upload_id, Upload.state == state, Upload.touched_at < before)
                .values(touched_at=until)
            )
        return bool(moved.rowcount)

    def left_in(self, state: str, before: datetime) -> list[Upload]:
        """Uploads in ``state`` that nothing touched since ``before``."""
        query = select(Upload).where(Upload.state == state, Upload.touched_at < before)
        with self.store.sessions() as session:
            return list(session.scalars(query))

    @retried
    def remove(self, upload_id: str) -> None:
        with self.store.writes.begin() as session:
            upload = session.get(Upload, upload_id)
            if upload is not None:
                session.delete(upload)

    def stalled(self, before: datetime) -> list[Upload]:
        """Uploads still arriving whose last chunk came before ``before``."""
        query = select(Upload).where(Upload.state == RECEIVING, Upload.touched_at < before)
        with self.store.sessions() as session:
            return list(session.scalars(query))

    def audits_naming(
        self, contributor_id: int, upload_id: str, *, status: str | None = None
    ) -> list[Audit]:
        """Her audits whose request named this upload (only those in ``status`` when given:
        the database narrows them before any request is read)."""
        query = select(Audit).where(Audit.contributor_id == contributor_id)
        if status is not None:
            query = query.where(Audit.status == status)
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
