"""What one contributor makes the service keep: database rows and files, against her quota.

Her files include her uploads (``uploads/<contributor id>``, arriving ones as far as they
have come). Her database share is :meth:`panoramia.store.ReportStore.stored_bytes` (reports
and pages, audits' requests and error texts, models' declared metadata). Her files are
also her audits' run directories (``audits/<audit id>``: staged inputs, logs, outputs)
and her own stage store (``artifacts/<contributor id>``: trained models, synthetic pools,
losses). Both count against ``PANORAMIA_MAX_STORAGE_MB``; past it, a submission or an
upload is answered 507.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from panoramia.service.settings import ServiceSettings
from panoramia.store.repository import ReportStore


@dataclass(frozen=True)
class Usage:
    """Bytes kept for one contributor (database text counted in characters)."""

    database_bytes: int
    file_bytes: int
    quota_bytes: int

    @property
    def total(self) -> int:
        return self.database_bytes + self.file_bytes


MAX_ENTRIES = 100_000
"""Entries walked at most for one contributor (a folder of many tiny files cannot make every
submission slow); past it her files count as filling her quota."""


def folder_bytes(folder: Path, budget: list[int] | None = None) -> int:
    """Bytes of the regular files under ``folder`` (links not followed; 0 if absent);
    ``budget``: a one-item list of entries left to walk, shared across calls."""
    budget = budget if budget is not None else [MAX_ENTRIES]
    total = 0
    stack = [folder]
    while stack and budget[0] > 0:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        budget[0] -= len(entries)
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def file_bytes(store: ReportStore, settings: ServiceSettings, contributor_id: int) -> int:
    """Bytes of the contributor's uploads (from their rows: what arrived, or an archive's
    unpacked files), run directories and stage store on this machine's disk. A walk that
    passes :data:`MAX_ENTRIES` counts as her whole quota (she is told to delete some)."""
    from panoramia.store.uploads import UploadRows

    return walked_bytes(store, settings, contributor_id) + UploadRows(store).bytes_kept(
        contributor_id
    )


def walked_bytes(store: ReportStore, settings: ServiceSettings, contributor_id: int) -> int:
    """Bytes of her run directories and stage store (not her uploads), walked on disk."""
    folders = [settings.artifacts_dir / str(contributor_id)]
    folders += [settings.audits_dir / audit_id for audit_id in store.audit_ids(contributor_id)]
    budget = [MAX_ENTRIES]
    walked = sum(folder_bytes(folder, budget) for folder in folders)
    if budget[0] <= 0:
        walked = max(walked, settings.max_storage_bytes)
    return walked


def usage(store: ReportStore, settings: ServiceSettings, contributor_id: int) -> Usage:
    """Her database and file bytes, and the quota they count against."""
    return Usage(
        store.stored_bytes(contributor_id),
        file_bytes(store, settings, contributor_id),
        settings.max_storage_bytes,
    )
