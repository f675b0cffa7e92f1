"""Deleting an upload leaves nothing of it behind on the service.

When its owner deletes an upload (refused while an audit that names it is queued or
running), this removes, in order:

1. its bytes (``uploads/<contributor>/<id>/``);
2. the run directory of every audit of hers that named it (``audits/<audit id>/``: the staged
   copy, logs, the page and document as the child wrote them; the figures stay in the
   database);
3. every stage of her stage store derived from it: the stages whose recorded config holds
   one of its files' SHA-256 (the data stage of a data upload, the stages that read an
   uploaded model), then, repeatedly, every stage that took one of those as an input
   (generators, synthetic pools, stand-ins, h, losses, distinguishers, games);
4. the rows of her data in her stored reports of those audits: the document's ``exposure``
   and ``examples`` sections (records, group values, text chunks) and the page's charts that
   show members (``PageParts``' ``member_data``; their images dropped), each replaced by a
   line saying when and why they went, in the page the service draws from them (a page
   stored as HTML before: its parts marked ``member-data``). The figures, verdict and charts
   of losses stay;
5. its row.

While it runs the upload is ``deleting``: no audit can name it any more, and a worker
staging one that did finds it gone (the audit fails before copying anything).

Files go first and the row last: a deletion cut short is finished by deleting again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from panoramia.errors import InputError
from panoramia.service.contributor_files import open_beneath
from panoramia.service.settings import ServiceSettings
from panoramia.service.uploads.files import UploadFolder
from panoramia.store.repository import ReportStore, utcnow
from panoramia.store.tables import Upload
from panoramia.store.uploads import CHECKING, DELETING, READY, RECEIVING, UploadRows

ACTIVE = ("queued", "running")
SHA256 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
"""A SHA-256 in a stage's recorded config."""
DONE = "_done.json"
"""The record a finished stage of the artifact store holds (``panoramia.pipeline.store.DONE``;
the service reaches the audit job only through the registry, so it is named here too)."""
LOCKS = ".locks"
"""The artifact store's folder of build locks, ``<stage>/<key>``
(``panoramia.pipeline.store.LOCKS``)."""


class UploadInUse(Exception):
    """An audit that names the upload is queued or running, or another request is deleting
    it now."""


class DeletionDeferred(Exception):
    """The upload is being checked: it is now marked for deletion, which the check's end
    carries out (seconds to minutes)."""


@dataclass
class Erased:
    """What a deletion removed, for its answer."""

    upload: str
    name: str = ""
    kind: str = "data"
    run_directories: list[str] = field(default_factory=list)
    stages: int = 0
    reports_redacted: int = 0

    def sentence(self) -> str:
        """What was deleted, in the one sentence the API's ``message``, the console and the
        CLI say."""
        what = "a model" if self.kind == "model" else "data"
        return (
            f"Deleted upload {self.name!r} ({what}) and what was made from it: "
            f"{counted(len(self.run_directories), 'run folder')}, "
            f"{counted(self.stages, 'stored stage')}; the records of your data were taken out "
            f"of {counted(self.reports_redacted, 'report')} that used it (their figures stay)."
        )


def counted(number: int, thing: str) -> str:
    """``number`` and ``thing`` in words: "1 report", "3 reports"."""
    return f"{number} {thing}{'' if number == 1 else 's'}"


def erase_upload(
    store: ReportStore, settings: ServiceSettings, upload: Upload, *, claimed: bool = False
) -> Erased:
    """Remove ``upload`` and everything derived from it (see the module docstring).

    One request deletes it: the move to ``deleting`` is the lock, and a second request at
    the same time is told :class:`UploadInUse`; a deletion a dead process left is taken over
    once its row has been still for ``stale_after_s``. An upload under check is marked ``deleting``
    and :class:`DeletionDeferred` raised: the check's end removes it. ``claimed``: the caller
    already holds the row in ``deleting`` (the check's end, the recovery)."""
    rows = UploadRows(store)
    if not claimed:
        was = _claim(rows, upload, settings.stale_after_s)
        audits = rows.audits_naming(upload.contributor_id, upload.id)  # none can start now
        busy = [audit.id for audit in audits if audit.status in ACTIVE]
        if busy:
            rows.move(upload.id, (DELETING,), was)  # back where it was, not where it was read
            raise UploadInUse(f"audit {busy[0]} uses it and has not ended: cancel it first")
        others = store.active_shared_audits(upload.id)
        if others:
            rows.move(upload.id, (DELETING,), was)
            raise UploadInUse(
                f"{others} audit(s) of a shared model it backs have not ended: wait for them"
            )
        published = store.published_upload(upload.id)
        if published:
            rows.move(upload.id, (DELETING,), was)
            raise UploadInUse(
                f"it is published as shared model {published[0]}: withdraw it first "
                f"(panoramia models withdraw {published[0].replace('/', ' --version ')})"
            )
    else:
        audits = rows.audits_naming(upload.contributor_id, upload.id)
    erased = Erased(upload.id, upload.name, upload.kind)
    UploadFolder.of(settings.uploads_dir, upload.contributor_id, upload.id).remove()
    for audit in audits:
        run_dir = settings.audits_dir / audit.id
        if run_dir.exists():
            shutil.rmtree(run_dir, ignore_errors=True)
            erased.run_directories.append(audit.id)
    digests = {upload.sha256.lower(), *(str(v).lower() for v in (upload.files or {}).values())}
    erased.stages = remove_derived_stages(
        settings.artifacts_dir / str(upload.contributor_id),
        digests,
        partials=not rows.has_running(upload.contributor_id),
    )
    when = utcnow().strftime("%Y-%m-%d %H:%M UTC")
    what = "model upload" if upload.kind == "model" else "data upload"
    note = f"Removed on {when}: the {what} {upload.name!r} this audit used was deleted."
    erased.reports_redacted = store.redact_reports([audit.id for audit in audits], note)
    store.detach_upload(upload.id)  # withdrawn versions it backed keep their reports
    rows.remove(upload.id)
    return erased


def _claim(rows: UploadRows, upload: Upload, stale_after_s: float) -> str:
    """Hold ``upload`` in ``deleting`` for this request and return the state it was in, or
    say why not."""
    from datetime import timedelta

    now = utcnow()
    held = now + timedelta(seconds=DELETION_HOLD_S)  # no one takes it over meanwhile
    was = rows.move_from(upload.id, (READY, RECEIVING), DELETING)
    if was is not None:
        rows.touch_until(upload.id, DELETING, held)
        return was
    if rows.move(upload.id, (CHECKING,), DELETING):
        raise DeletionDeferred(
            "it is being checked; it is deleted as soon as its check ends (seconds to minutes)"
        )
    left = now - timedelta(seconds=stale_after_s)
    if rows.claim_orphan(upload.id, DELETING, left, held):
        return DELETING  # a deletion a dead process left: finished here
    if rows.get(upload.id) is None:
        raise UploadGone("it is gone (deleted meanwhile)")
    raise UploadInUse("another request is deleting it now")


DELETION_HOLD_S = 600.0
"""Seconds a deletion holds its row before a dead process's deletion may be taken over."""


class UploadGone(Exception):
    """The upload was deleted meanwhile."""


def remove_derived_stages(artifacts: Path, digests: set[str], *, partials: bool) -> int:
    """Remove every stage under ``artifacts`` (``<stage>/<key>/`` with a ``_done.json``)
    whose record holds one of ``digests``, and every stage derived from one of those; with
    ``partials`` (no audit of hers running), the half-written ``.partial-*`` folders too,
    which are never read. Returns the number of stages removed. The store is read with
    :func:`stage_records` (no link followed, nothing waited for, reads capped)."""
    records, partial_folders = stage_records(artifacts)
    named = {  # each record's SHA-256s, read once: the cost follows what is stored
        place: set(SHA256.findall(json.dumps(record.get("config"), default=str).lower()))
        for place, record in records.items()
    }
    tainted = {place for place, found in named.items() if found & digests}
    growing = True
    while growing:  # a stage built on a removed stage goes too
        keys = {key for _, key in tainted}
        more = {
            place
            for place, record in records.items()
            if place not in tainted
            and keys & {str(k) for k in (record.get("inputs") or {}).values()}
        }
        tainted |= more
        growing = bool(more)
    for stage, key in tainted:
        remove_beneath(artifacts, (stage,), key)
        remove_beneath(artifacts, (LOCKS, stage), key)
    for stage, name in partial_folders if partials else ():
        remove_beneath(artifacts, (stage,), name)
    if partials:  # no audit of hers running: no lock is held, no stage folder is being made
        prune_store(artifacts, kept=set(records) - tainted)
    return len(tainted)


def _entries(root: Path, folders: tuple[str, ...]) -> list[tuple[str, bool]]:
    """``(name, is a folder, not a link)`` of each entry of ``root/<folders…>``, reached
    without following a link; none where a folder on the way is a link or missing."""
    try:
        descriptor = open_beneath(root, folders, "stage store")
    except (InputError, OSError):
        return []
    try:
        with os.scandir(descriptor) as found:
            return [(e.name, e.is_dir(follow_symlinks=False)) for e in found][:MAX_STORE_ENTRIES]
    except OSError:
        return []
    finally:
        os.close(descriptor)


def _remove_if_empty(root: Path, folders: tuple[str, ...], name: str) -> None:
    """``rmdir`` of ``root/<folders…>/name`` where it is an empty folder (no link followed)."""
    try:
        descriptor = open_beneath(root, folders, "stage store")
    except (InputError, OSError):
        return
    try:
        os.rmdir(name, dir_fd=descriptor)
    except OSError:
        return  # not empty, not a folder, or gone
    finally:
        os.close(descriptor)


def prune_store(artifacts: Path, *, kept: set[tuple[str, str]]) -> None:
    """What a stage store keeps only for its stages, once no audit of hers runs: the build
    locks (``.locks/<stage>/<key>``, empty files) of stages it does not hold (``kept``: the
    stages left; a failed build leaves its lock), then every empty stage and lock folder, and
    the store's own folder where nothing is left (issue 72: after a failed audit and the
    deletion of everything, a 0-byte lock and 42 empty stage folders stayed behind)."""
    for stage, is_folder in _entries(artifacts, (LOCKS,)):
        if not is_folder:
            continue
        for key, key_is_folder in _entries(artifacts, (LOCKS, stage)):
            if not key_is_folder and (stage, key) not in kept:
                remove_beneath(artifacts, (LOCKS, stage), key)
        _remove_if_empty(artifacts, (LOCKS,), stage)
    for stage, is_folder in _entries(artifacts, ()):
        if is_folder:
            _remove_if_empty(artifacts, (), stage)
    with contextlib.suppress(OSError):
        os.rmdir(artifacts)  # her store itself, where it is now empty


PARTIAL = ".partial-"
"""A half-written stage folder's prefix (``panoramia.pipeline.store``)."""
MAX_RECORD_BYTES = 4 * 2**20
"""The most of one ``_done.json`` read (a stage's record is a few KiB; a larger one counts as
unreadable)."""
MAX_STORE_ENTRIES = 100_000
"""Entries of a stage store walked at most (as her quota's walk)."""
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_RECORD = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def stage_records(
    artifacts: Path,
) -> tuple[dict[tuple[str, str], dict], list[tuple[str, str]]]:
    """Her stage store's records, ``(stage, key) → _done.json``, and its half-written folders
    ``(stage, .partial-…)``. The audit child writes this store, so nothing is trusted: folders
    are opened relative to their parent without following a link, and a record is read only
    where it is a plain file with one name and at most :data:`MAX_RECORD_BYTES` (a FIFO opens
    without waiting and is skipped); a record that is not is ``{}`` (its stage matches
    nothing). Names starting with ``.`` (the lock folder) are not stages. At most
    :data:`MAX_STORE_ENTRIES` entries are walked."""
    records: dict[tuple[str, str], dict] = {}
    partial_folders: list[tuple[str, str]] = []
    budget = [MAX_STORE_ENTRIES]
    try:
        root = os.open(artifacts, _DIRECTORY)
    except OSError:
        return records, partial_folders
    try:
        for stage in _folders(root, budget):
            try:
                stage_fd = os.open(stage, _DIRECTORY, dir_fd=root)
            except OSError:
                continue
            try:
                for key in _folders(stage_fd, budget, hidden=True):
                    if key.startswith(PARTIAL):
                        partial_folders.append((stage, key))
                    elif not key.startswith("."):
                        records[(stage, key)] = _record(stage_fd, key)
            finally:
                os.close(stage_fd)
    finally:
        os.close(root)
    return records, partial_folders


def _folders(descriptor: int, budget: list[int], *, hidden: bool = False) -> list[str]:
    """The names of the folders (not links) in the open folder ``descriptor``; ``hidden``:
    names starting with ``.`` too, and every ``.partial-…`` entry whatever it is (removed
    without following it). Spends ``budget``."""
    names = []
    try:
        with os.scandir(descriptor) as entries:
            for entry in entries:
                budget[0] -= 1
                if budget[0] < 0:
                    break
                partial = hidden and entry.name.startswith(PARTIAL)  # a link too: it goes itself
                shown = hidden or not entry.name.startswith(".")
                if partial or (shown and entry.is_dir(follow_symlinks=False)):
                    names.append(entry.name)
    except OSError:
        return names
    return names


def _record(stage_fd: int, key: str) -> dict:
    """``<key>/_done.json`` under the open stage folder, or ``{}`` where it is missing, not a
    plain file of one name, too large or not JSON (see :func:`stage_records`)."""
    try:
        key_fd = os.open(key, _DIRECTORY, dir_fd=stage_fd)
    except OSError:
        return {}
    try:
        descriptor = os.open(DONE, _RECORD, dir_fd=key_fd)
    except OSError:
        return {}
    finally:
        os.close(key_fd)
    try:
        held = os.fstat(descriptor)
        if not stat.S_ISREG(held.st_mode) or held.st_nlink != 1:
            return {}
        if held.st_size > MAX_RECORD_BYTES:
            return {}
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            text = handle.read(MAX_RECORD_BYTES + 1)
        record = json.loads(text) if len(text) <= MAX_RECORD_BYTES else {}
        return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {}
    finally:
        os.close(descriptor)


def remove_beneath(root: Path, folders: tuple[str, ...], name: str) -> None:
    """Remove ``root/<folders…>/name`` (a file, a link or a folder's tree) without following
    a link on the way (:func:`~panoramia.service.contributor_files.open_beneath`): where a
    folder on the way is a link (an audit child may make links in its own store), nothing is
    removed; nothing under a removed tree is followed either."""
    try:
        descriptor = open_beneath(root, folders, "stage store")
    except (InputError, OSError):
        return
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=descriptor, follow_symlinks=False).st_mode):
            shutil.rmtree(name, dir_fd=descriptor, ignore_errors=True)
        else:
            os.unlink(name, dir_fd=descriptor)
    except OSError:
        return
    finally:
        os.close(descriptor)
