"""An upload's last step, shared by the chunked protocol and the console's form: the check
(in a process of its own), the quota once unpacked, and ``ready``; nothing is kept when any
of them fails."""

from __future__ import annotations

import hashlib
import os
import shutil
from typing import BinaryIO

from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.usage import usage
from panoramia.service.uploads.checks import UploadRejected, check_filename
from panoramia.service.uploads.files import Expected, UploadFolder, finish
from panoramia.store.repository import ReportStore, StorageFull
from panoramia.store.tables import Upload
from panoramia.store.uploads import CHECKING, RECEIVING, NewUpload, UploadRows


class NotReceiving(Exception):
    """The upload is already being checked, or was deleted meanwhile."""


def complete_upload(settings: ServiceSettings, store: ReportStore, upload: Upload) -> Upload:
    """Check the fully arrived ``upload`` (one check at a time per upload: the move to
    ``checking`` is the lock), count what it keeps once unpacked against her quota, and make
    it ``ready``. UploadRejected or :class:`StorageFull` with nothing kept, NotReceiving when
    another request got there first."""
    rows = UploadRows(store)
    if not rows.move(upload.id, (RECEIVING,), CHECKING):
        raise NotReceiving("this upload is being checked, or is no longer there")
    folder = UploadFolder.of(settings.uploads_dir, upload.contributor_id, upload.id)
    try:
        expected = Expected(
            upload.filename, upload.kind, upload.sha256, settings.max_file_bytes,
            settings.trust_torchscript,
        )  # fmt: skip
        files, summary = finish(folder, expected)
        kept = usage(store, settings, upload.contributor_id)
        after = kept.total - upload.size + int(summary.get("unpacked_bytes", upload.size))
        if after > kept.quota_bytes:
            raise StorageFull(kept.quota_bytes, kept.total - upload.size, after - kept.total)
        ready = rows.ready(upload.id, files, summary)
    except BaseException:
        if rows.move(upload.id, (CHECKING,), "deleting"):
            folder.remove()
            rows.remove(upload.id)
        raise
    if ready is None:  # deleted while it was checked: the deletion removed what it holds
        folder.remove()
        raise NotReceiving("this upload was deleted while it was checked")
    return ready


def take_whole_file(
    settings: ServiceSettings,
    store: ReportStore,
    contributor_id: int,
    *,
    name: str,
    kind: str,
    filename: str,
    source: BinaryIO,
) -> Upload:
    """Keep ``source`` (read from its start) as her upload ``name``: announced, written and
    completed as a chunked upload is. UploadRejected, :class:`panoramia.store.uploads.
    NameTaken` or :class:`StorageFull` otherwise, with nothing kept."""
    check_filename(filename, kind)
    digest, size = hashlib.sha256(), 0
    source.seek(0)
    while block := source.read(1 << 20):
        digest.update(block)
        size += len(block)
    if size == 0:
        raise UploadRejected(f"{filename}: an empty file")
    if size > settings.max_file_bytes:
        raise UploadRejected(
            f"{filename}: {size} bytes; an upload may have at most {settings.max_file_bytes}"
        )
    kept = usage(store, settings, contributor_id)
    rows = UploadRows(store)
    upload = rows.create(
        contributor_id, NewUpload(name, kind, filename, size, digest.hexdigest()),
        quota=kept.quota_bytes, kept=kept.total,
    )  # fmt: skip
    folder = UploadFolder.of(settings.uploads_dir, contributor_id, upload.id)
    try:
        folder.create()
        source.seek(0)
        flags = os.O_WRONLY | os.O_NOFOLLOW
        with os.fdopen(os.open(folder.incoming, flags), "wb") as incoming:
            shutil.copyfileobj(source, incoming, 1 << 20)
        rows.received(upload.id, size)
    except BaseException:
        folder.remove()
        rows.remove(upload.id)
        raise
    upload.received = size
    return complete_upload(settings, store, upload)
