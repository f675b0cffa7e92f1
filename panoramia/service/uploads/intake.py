"""An upload's last step, shared by the chunked protocol and the console's form: the check
(in a process of its own, a few at a time in turn per contributor), the quota once
unpacked, and ``ready``; nothing is kept when any of them fails.

While a check waits and runs, its row is touched every ``PANORAMIA_HEARTBEAT_S`` seconds, as
a running audit's is. A server that dies mid-check leaves the row ``checking`` and untouched:
:func:`recover_uploads` (from the reaper) checks it again once it has been still for
``PANORAMIA_STALE_AFTER_S``, and finishes a deletion left half-done the same way. Her
deleting an upload under check marks it ``deleting``; the check's end then removes it
(:func:`erase_after_check`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import BinaryIO

from anyio import to_thread

from panoramia.service.check_pool import CheckPool
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.usage import usage, walked_bytes
from panoramia.service.uploads.checks import UploadRejected, check_filename
from panoramia.service.uploads.erase import DELETION_HOLD_S, erase_upload
from panoramia.service.uploads.files import Expected, UploadFolder, finish
from panoramia.store.repository import ReportStore, utcnow
from panoramia.store.tables import Upload
from panoramia.store.uploads import (
    CHECKING,
    DELETING,
    RECEIVING,
    NewUpload,
    NotChecking,
    UploadRows,
)

log = logging.getLogger("panoramia.uploads")


class NotReceiving(Exception):
    """The upload is already being checked, or was deleted meanwhile."""


@asynccontextmanager
async def heartbeat(rows: UploadRows, upload_id: str, every: float) -> AsyncIterator[None]:
    """Touch the row every ``every`` seconds while the block runs (also once her deletion
    marked it ``deleting``: the check still holds its folder)."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await to_thread.run_sync(rows.touch, upload_id, (CHECKING, DELETING))
            except Exception:  # a busy database: the next beat tries again
                log.exception("upload %s: its heartbeat failed once", upload_id)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()


async def complete_upload(
    settings: ServiceSettings, store: ReportStore, upload: Upload, pool: CheckPool
) -> Upload:
    """Check the fully arrived ``upload`` (one check at a time per upload: the move to
    ``checking`` is the lock) in its owner's turn of ``pool``, count what it keeps once
    unpacked against her quota, and make it ``ready``. UploadRejected or
    :class:`StorageFull` with nothing kept, NotReceiving when another request got there
    first or she deleted it meanwhile. Cancelled (the server stops), the upload stays
    ``checking`` for :func:`recover_uploads`."""
    rows = UploadRows(store)
    if not await to_thread.run_sync(rows.move, upload.id, (RECEIVING,), CHECKING):
        raise NotReceiving("this upload is being checked, or is no longer there")
    async with heartbeat(rows, upload.id, settings.heartbeat_s), pool.turn(upload.contributor_id):
        return await _check_and_keep(settings, store, upload, rows)


async def _check_and_keep(
    settings: ServiceSettings, store: ReportStore, upload: Upload, rows: UploadRows
) -> Upload:
    folder = UploadFolder.of(settings.uploads_dir, upload.contributor_id, upload.id)
    try:
        room = await to_thread.run_sync(_room, settings, store, upload)
        expected = Expected(
            upload.filename, upload.kind, upload.sha256, settings.max_file_bytes,
            settings.trust_torchscript, room,
        )  # fmt: skip
        files, summary = await finish(folder, expected)
        if _holds_nul(summary) or _holds_nul(files):
            raise UploadRejected(f"{upload.filename}: a name in it holds a NUL character")
        return await to_thread.run_sync(_keep, settings, store, upload, files, summary)
    except asyncio.CancelledError:
        raise
    except NotChecking as moved:  # her deletion, or another check, came first
        await to_thread.run_sync(_after_moved, store, settings, upload, moved.state)
        raise NotReceiving(
            "this upload was deleted while it was checked"
            if moved.state in (DELETING, None)
            else f"this upload is {moved.state} (another check ended first)"
        ) from None
    except BaseException:
        if await to_thread.run_sync(rows.move, upload.id, (CHECKING,), DELETING):
            await to_thread.run_sync(_drop, rows, folder, upload.id)
        else:
            state = await to_thread.run_sync(rows.state_of, upload.id)
            await to_thread.run_sync(_after_moved, store, settings, upload, state)
        raise


def _after_moved(
    store: ReportStore, settings: ServiceSettings, upload: Upload, state: str | None
) -> None:
    """A check found its upload moved on: a deletion asked meanwhile ends here; an upload
    another check made ready is left as it is."""
    if state == DELETING:
        erase_after_check(store, settings, upload)


def _room(settings: ServiceSettings, store: ReportStore, upload: Upload) -> int:
    """Bytes ``upload`` may land on disk within its owner's quota (its own received bytes
    given back): an archive that would unpack past it is refused from its headers."""
    kept = usage(store, settings, upload.contributor_id)
    return max(0, kept.quota_bytes - (kept.total - int(upload.received or upload.size)))


def _keep(
    settings: ServiceSettings, store: ReportStore, upload: Upload, files: dict, summary: dict
) -> Upload:
    others = store.stored_bytes(upload.contributor_id) + walked_bytes(
        store, settings, upload.contributor_id
    )  # her uploads are counted by ready() itself, under her row's lock
    return UploadRows(store).ready(
        upload.id, files, summary, quota=settings.max_storage_bytes, others=others
    )


def _drop(rows: UploadRows, folder: UploadFolder, upload_id: str) -> None:
    folder.remove()
    rows.remove(upload_id)


def _holds_nul(value: object) -> bool:
    """Whether a string in ``value`` (nested dicts and lists, keys too) holds NUL, which
    PostgreSQL's text and JSON cannot store."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_nul(item) for item in value)
    return False


def erase_after_check(store: ReportStore, settings: ServiceSettings, upload: Upload) -> None:
    """Finish her deletion of ``upload``, asked while it was checked (now ``deleting``)."""
    erase_upload(store, settings, upload, claimed=True)


def recover_uploads(store: ReportStore, settings: ServiceSettings) -> tuple[int, int]:
    """Uploads a dead process left ``checking`` or ``deleting`` (untouched for
    ``stale_after_s``): each check runs again here (one at a time, its row touched as a
    live check's is), and each deletion is finished. Returns (checks re-run, deletions
    finished)."""
    rows = UploadRows(store)
    stale = timedelta(seconds=settings.stale_after_s)
    checked = deleted = 0
    for upload in rows.left_in(DELETING, utcnow() - stale):
        held = utcnow() + timedelta(seconds=DELETION_HOLD_S)
        if rows.claim_orphan(upload.id, DELETING, utcnow() - stale, held):
            erase_after_check(store, settings, upload)
            log.warning("upload %s: a deletion left unfinished was finished", upload.id)
            deleted += 1
    for upload in rows.left_in(CHECKING, utcnow() - stale):
        held = utcnow() + 3 * stale  # the heartbeat below keeps it from here
        if not rows.claim_orphan(upload.id, CHECKING, utcnow() - stale, held):
            continue
        folder = UploadFolder.of(settings.uploads_dir, upload.contributor_id, upload.id)
        try:
            restored = _restore_incoming(folder, upload)
        except OSError:
            restored = False
        if not restored:
            log.warning("upload %s: its check died after its bytes moved; removed", upload.id)
            if rows.move(upload.id, (CHECKING,), DELETING):
                _drop(rows, folder, upload.id)
            continue
        try:
            asyncio.run(_recheck(settings, store, upload, rows))
            log.warning("upload %s: a check left unfinished ran again: ready", upload.id)
        except Exception as error:  # its refusal is the answer; the next orphan goes on
            log.warning("upload %s: a check left unfinished ran again: %s", upload.id, error)
        checked += 1
    return checked, deleted


async def _recheck(
    settings: ServiceSettings, store: ReportStore, upload: Upload, rows: UploadRows
) -> Upload:
    async with heartbeat(rows, upload.id, settings.heartbeat_s):
        return await _check_and_keep(settings, store, upload, rows)


def _restore_incoming(folder: UploadFolder, upload: Upload) -> bool:
    """The received bytes back at ``incoming`` and no half-made ``content/``, so that the check
    can run again; False when they are gone (an archive unpacked before the process died)."""
    if not folder.incoming.is_file():
        single = folder.data_path(upload.filename)
        if single.parent == folder.content and single.is_file():
            os.replace(single, folder.incoming)
    shutil.rmtree(folder.content, ignore_errors=True)
    return folder.incoming.is_file() and folder.incoming.stat().st_size == upload.size


async def take_whole_file(
    settings: ServiceSettings,
    store: ReportStore,
    pool: CheckPool,
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
    upload = await to_thread.run_sync(
        _receive_whole_file, settings, store, contributor_id, name, kind, filename, source
    )
    return await complete_upload(settings, store, upload, pool)


def _receive_whole_file(
    settings: ServiceSettings,
    store: ReportStore,
    contributor_id: int,
    name: str,
    kind: str,
    filename: str,
    source: BinaryIO,
) -> Upload:
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
    return upload
