"""An audit names an upload by its id or name; this finds it, on the service's disk.

:func:`upload_resolver` gives :func:`panoramia.service.submission.command.audit_overrides` a
function from (role, the name she gave) to the ready upload's data path (its checked file or
unpacked folder), or None where she has no upload of that name (the name may then be an
operator-placed file: her data folder, the shared models folder). It records which upload
each role named (``named``: role → upload id), which the audit keeps, so that deleting the
upload finds the audits that used it.
"""

from __future__ import annotations

from pathlib import Path

from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.command import UploadNotReady, UploadResolver
from panoramia.service.uploads.files import UploadFolder
from panoramia.store.repository import ReportStore
from panoramia.store.uploads import READY, UploadRows


def upload_resolver(
    settings: ServiceSettings, store: ReportStore, contributor_id: int, named: dict[str, str]
) -> UploadResolver:
    rows = UploadRows(store)

    def resolve(role: str, id_or_name: str) -> Path | None:
        upload = rows.find(contributor_id, id_or_name)
        if upload is None:
            return None
        wanted = "model" if role == "target" else "data"
        if upload.kind != wanted:
            raise UploadNotReady(f"upload {upload.name!r} is a {upload.kind} upload, not {wanted}")
        if upload.state != READY:
            if upload.state == "receiving":
                raise UploadNotReady(
                    f"upload {upload.name!r} has {upload.received} of {upload.size} bytes: "
                    "finish sending it first"
                )
            raise UploadNotReady(f"upload {upload.name!r} is {upload.state}")
        named[role] = upload.id
        folder = UploadFolder.of(settings.uploads_dir, contributor_id, upload.id)
        return folder.data_path(upload.filename).resolve()

    return resolve


def portable_overrides(overrides: list[str], uploads_dir: Path) -> list[str]:
    """``overrides`` with each path of an upload (under ``uploads_dir``, as
    :func:`upload_resolver` gave it) replaced by ``upload:<id>``: what the audit keeps and a
    worker stages, wherever it runs."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from panoramia.service.contributor_files import UPLOAD_PREFIX as PREFIX
    from panoramia.service.contributor_files import UPLOADED_KEYS

    parser = OverridesParser.create()
    root = uploads_dir.resolve()
    kept = []
    for line in overrides:
        key = line.split("=", 1)[0]
        if key in UPLOADED_KEYS:
            (parsed,) = parser.parse_overrides([line])
            try:
                _owner, upload_id, *_ = Path(str(parsed.value())).relative_to(root).parts
            except ValueError:
                kept.append(line)
                continue
            line = f"{key}='{PREFIX}{upload_id}'"
        kept.append(line)
    return kept
