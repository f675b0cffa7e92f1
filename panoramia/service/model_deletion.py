"""Deleting a model entry: its run folders on disk, and the one sentence the API, the console
and the CLI say about it."""

from __future__ import annotations

import re
import shutil

from panoramia.service.schemas import IDENTIFIER_PATTERN
from panoramia.service.settings import ServiceSettings
from panoramia.service.uploads.erase import counted as _count
from panoramia.store.model_rows import ModelDeletion


def remove_run_folders(settings: ServiceSettings, audit_ids: list[str]) -> None:
    """Remove each audit's run folder (``$PANORAMIA_HOME/audits/<id>``); ids that are not
    audit ids name nothing."""
    for audit_id in audit_ids:
        if re.fullmatch(IDENTIFIER_PATTERN, audit_id):
            shutil.rmtree(settings.audits_dir / audit_id, ignore_errors=True)


def model_deletion_sentence(deleted: ModelDeletion) -> str:
    """What was deleted, in one sentence: the entry and its versions, its reports and
    audits; the uploads (data and model files) stay, as they are deleted on their own."""
    versions = ", ".join(deleted.versions)
    return (
        f"Deleted model entry {deleted.name!r} (version{'' if len(deleted.versions) == 1 else 's'} "
        f"{versions}): {_count(deleted.reports, 'report')} and "
        f"{_count(len(deleted.audits), 'audit')} with their run folders. Your uploads stay: "
        f"delete them under 'Your data and models'."
    )
