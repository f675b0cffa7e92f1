"""Shared models at the door (docs/SPEC.md §3.3): publishing one of her model uploads (or, for
an admin, a folder the operator placed under ``models/``), and turning an audit request that
names a shared model into the request the door checks as any other.

The model's file is never shown to a contributor of its audience: her request is given a
target that only the audit's confined child reads, the door's refusals name the shared model
(``owner/name:version``), never the owner's upload, and her stored request keeps the shared
model's key, not its file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from panoramia.report.shared_leakage import (
    ModelLeakage,
    VersionLeakage,
    Viewer,
    version_leakage,
    view_for,
)
from panoramia.service.schemas import (
    MAX_NAME_CHARS,
    AuditedModelRef,
    AuditRequest,
    SharedKey,
    SharedPublication,
    TargetRef,
    is_name,
)
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.command import (
    RequestProblem,
    UploadResolver,
    claim_overrides,
)
from panoramia.service.uploads.files import UploadFolder
from panoramia.service.uploads.naming import _placed
from panoramia.store.repository import Principal, ReportStore
from panoramia.store.shared_rows import Publication, SharedEntry
from panoramia.store.tables import Upload
from panoramia.store.uploads import READY, UploadRows

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def shared_label(key: SharedKey | SharedEntry) -> str:
    """``owner/name:version``: how a shared model is named to a contributor."""
    return f"{key.owner}/{key.name}:{key.version}"


def local_name(entry: SharedEntry) -> str:
    """The name her own entry of a shared model's audits is kept under: ``<owner>.<name>``
    where that is a model name (letters, digits, ``.``, ``_``, ``-``, a letter or digit first,
    at most :data:`MAX_NAME_CHARS`), else ``shared-<id>.<name>`` (cut to fit); never two
    shared models under one name."""
    owner = UNSAFE.sub("-", entry.owner)
    chosen = f"{owner}.{entry.name}"
    if owner == entry.owner and is_name(chosen):
        return chosen
    return f"shared-{entry.id}.{entry.name}"[:MAX_NAME_CHARS]


def publication_from(
    settings: ServiceSettings, store: ReportStore, principal: Principal, body: SharedPublication
) -> Publication:
    """What ``body`` publishes, its model found among her ready model uploads (or, for an
    admin, under ``models/``): RequestProblem naming the field otherwise (404: no such
    upload; 409: not ready; 403: a placed folder by a non-admin)."""
    upload_id = placed = modality = None
    if body.upload is not None:
        upload = UploadRows(store).find(principal.contributor_id, body.upload)
        if upload is None or upload.kind != "model":
            raise RequestProblem(("upload",), f"no model upload of yours named {body.upload!r}",
                                 status=404)  # fmt: skip
        if upload.state != READY:
            raise RequestProblem(("upload",), f"upload {upload.name!r} is {upload.state}", 409)
        upload_id = upload.id
        kind = (upload.summary or {}).get("modality")
        modality = kind if isinstance(kind, str) else None
    else:
        assert body.path is not None  # the schema asks for one of the two
        if not principal.is_admin:
            raise RequestProblem(
                ("path",), "only an admin publishes a model the operator placed", status=403
            )
        if not _placed(settings.models_dir, body.path):
            raise RequestProblem(("path",), f"no model folder {body.path!r} under models/", 404)
        placed = body.path
    try:  # the claim as every audit of it will take it (one DP-SGD phase)
        claim_overrides(body.claim)
    except RequestProblem as problem:
        raise RequestProblem(("claim", *problem.field[2:]), problem.message) from None
    everyone = body.audience == "all"
    names = () if everyone else tuple(name.strip() for name in body.audience if name.strip())
    return Publication(
        name=body.name, version=body.version, upload_id=upload_id, placed=placed,
        modality=modality, declared=body.declared, claim=body.claim, everyone=everyone,
        names=names,
    )  # fmt: skip


@dataclass(frozen=True)
class SharedTarget:
    """A request's shared model, found for the caller: its ``entry``, the ``request`` to
    check and run (her entry's name, the owner's claim, a target only the audit reads), the
    owner's model upload standing in under the shared model's name for the door's checks
    (None for a placed folder), and the ``resolver`` wrapper that hands the audit its file."""

    entry: SharedEntry
    request: AuditRequest
    upload: Upload | None
    path: Path | None
    upload_id: str | None = None
    """The owner's model upload the audit copies (None for a placed folder): what its plan
    names, never the file's path."""

    def resolver(self, base: UploadResolver) -> UploadResolver:
        """``base``, with the target's role answered by the shared model's file."""

        def resolve(role: str, id_or_name: str) -> Path | None:
            if role == "target":  # never one of hers: the owner's file, or a placed folder
                return self.path
            return base(role, id_or_name)

        return resolve


def resolve_shared(
    settings: ServiceSettings, store: ReportStore, principal: Principal, body: AuditRequest
) -> SharedTarget:
    """The shared model ``body.shared`` names, as :class:`SharedTarget`: RequestProblem
    naming ``shared`` where she may not see it (404, as for one that does not exist), where
    it was withdrawn (409) or its file is gone (409)."""
    key = body.shared
    assert key is not None
    entry = store.find_shared(principal, key.owner, key.name, key.version)
    if entry is None:
        raise RequestProblem(("shared",), f"no shared model {shared_label(key)} you may audit",
                             status=404)  # fmt: skip
    if entry.withdrawn:
        raise RequestProblem(("shared",), f"{shared_label(key)} was withdrawn by its owner", 409)
    upload_id, placed = store.shared_file(entry.id)
    upload = UploadRows(store).get(upload_id) if upload_id else None
    path: Path | None = None
    if upload_id is not None:
        if upload is None or upload.state != READY:
            raise RequestProblem(("shared",), f"the file of {shared_label(key)} is gone", 409)
        folder = UploadFolder.of(settings.uploads_dir, upload.contributor_id, upload.id)
        path = folder.data_path(upload.filename).resolve()
    elif placed is None:
        raise RequestProblem(("shared",), f"the file of {shared_label(key)} is gone", 409)
    model = AuditedModelRef(
        name=local_name(entry), version=entry.version,
        declared=entry.declared, claim=entry.claim,
    )  # fmt: skip
    target = TargetRef(config=None, path=placed if placed is not None else "shared")
    request = body.model_copy(update={"model": model, "target": target})
    stand_in = None
    if upload is not None:  # the door's checks read its summary, named as the shared model
        stand_in = Upload(name=shared_label(entry), kind="model", summary=upload.summary)
    return SharedTarget(entry, request, stand_in, path, upload_id)


def leakage_for(store: ReportStore, principal: Principal, entry: SharedEntry) -> VersionLeakage:
    """One version's leakage report as ``principal`` may read it, recomputed from the stored
    digests of its contributors' service-run audits (never a client's figures): the owner
    (and admins) read every field, any other viewer what :func:`view_for` lets her."""
    units = store.leakage_units(entry.id)
    full = version_leakage(store.published(entry), units)
    viewer: Viewer = "owner" if entry.mine or principal.is_admin else "contributor"
    return view_for(full, viewer, principal.contributor_id, units)


def model_leakage(
    store: ReportStore,
    principal: Principal,
    owner: str,
    name: str,
    entries: list[SharedEntry] | None = None,
) -> ModelLeakage | None:
    """Every version of ``owner``'s ``name`` she may see, side by side, oldest first (None:
    none she may see); ``entries``: those versions, where the caller has just listed them
    (:meth:`~panoramia.store.shared_rows.SharedRows.shared_versions`)."""
    if entries is None:
        entries = store.shared_versions(principal, owner, name)
    if not entries:
        return None
    versions = [leakage_for(store, principal, entry) for entry in entries]
    return ModelLeakage(owner=entries[0].owner, name=entries[0].name, versions=versions)
