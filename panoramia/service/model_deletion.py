"""Deleting a model entry: its run folders on disk, and the one sentence the API, the console
and the CLI say about it."""

from __future__ import annotations

import re
import shutil

from panoramia.service.schemas import CONTROL_SUFFIX, IDENTIFIER_PATTERN
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
    """What was deleted, in one sentence: the entry and its versions (a control's runs,
    kept under ``<version>-control``, said as the control's, never as a version), its reports and
    audits; the uploads (data and model files) stay, as they are deleted on their own."""
    own = [v for v in deleted.versions if not v.endswith(CONTROL_SUFFIX)]
    controls = [v for v in deleted.versions if v.endswith(CONTROL_SUFFIX)]
    versions = ", ".join(own) or "none of its own"
    beside = (
        f", with the runs of your control beside version{'' if len(controls) == 1 else 's'} "
        f"{', '.join(v.removesuffix(CONTROL_SUFFIX) for v in controls)}"
        if controls
        else ""
    )
    return (
        f"Deleted model entry {deleted.name!r} (version{'' if len(own) == 1 else 's'} "
        f"{versions}{beside}): {_count(deleted.reports, 'report')} and "
        f"{_count(len(deleted.audits), 'audit')} with their run folders. Your uploads stay: "
        f"delete them under 'Your data and models'."
    )
