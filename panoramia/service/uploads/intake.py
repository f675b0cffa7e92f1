"""A whole file taken in one go (the console's upload form): the same checks, quota and
layout as the chunked protocol, for a file the request already holds spooled on disk."""

from __future__ import annotations

import hashlib
import os
import shutil
from typing import BinaryIO

from panoramia.service.settings import ServiceSettings
from panoramia.service.uploads.checks import UploadRejected, check_filename
from panoramia.service.uploads.files import UploadFolder, finish
from panoramia.service.usage import usage
from panoramia.store.repository import ReportStore
from panoramia.store.tables import Upload
from panoramia.store.uploads import NewUpload, UploadRows


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
    """Keep ``source`` (read from its start) as her upload ``name``; UploadRejected,
    :class:`panoramia.store.uploads.NameTaken` or
    :class:`panoramia.store.repository.StorageFull` otherwise, with nothing kept."""
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
        files, checked = finish(
            folder, filename=filename, kind=kind, sha256=upload.sha256,
            max_bytes=settings.max_file_bytes, trust_torchscript=settings.trust_torchscript,
        )  # fmt: skip
    except BaseException:
        folder.remove()
        rows.remove(upload.id)
        raise
    return rows.ready(upload.id, files, checked.summary) or upload
