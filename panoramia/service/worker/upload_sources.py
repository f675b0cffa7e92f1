"""Where a worker gets an audit's uploads from: the service's disk, or the service over HTTP.

An audit's stored command line names an upload as ``upload:<id>`` (never a path of the
service's machine). Just before the audit's child starts, the worker copies each one into the
run directory (:func:`panoramia.service.worker.staging.stage_data_files`) from:

- :class:`LocalUploads`: a worker that shares the service's disk opens the upload's kept file
  or folder beneath ``uploads/<contributor>/<id>/content``, one component at a time without
  following a link (the staging's own copy);
- :class:`RemoteUploads`: a worker on another machine (``PANORAMIA_SERVICE_URL`` and a worker
  token, ``PANORAMIA_WORKER_TOKEN``) asks the service for the upload's file list
  (``GET /v1/worker/uploads/{id}``) and each file, streamed to disk, and checks each file's
  SHA-256 against the one the service recorded on arrival. The service answers only for an
  upload that a running audit names.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from panoramia.errors import InputError
from panoramia.service.contributor_files import UPLOAD_PREFIX as PREFIX
from panoramia.service.contributor_files import UploadSource, copy_beneath

__all__ = ["PREFIX", "LocalUploads", "RemoteUploads", "UploadSource"]


class LocalUploads:
    """Uploads on this machine's disk, as the service keeps them."""

    def __init__(self, store, uploads_dir: Path):
        self.store, self.uploads_dir = store, uploads_dir

    def copy(self, upload_id: str, destination: Path) -> str:
        from panoramia.service.uploads.checks import is_archive, suffix_of
        from panoramia.service.uploads.files import UploadFolder
        from panoramia.store.uploads import READY, UploadRows

        upload = UploadRows(self.store).get(upload_id)
        if upload is None or upload.state != READY:
            raise InputError(f"upload {upload_id}: deleted, or not fully arrived")
        folder = UploadFolder.of(self.uploads_dir, upload.contributor_id, upload.id)
        kept = folder.data_path(upload.filename)
        suffix = "" if is_archive(upload.filename) else suffix_of(kept.name)
        made = destination.with_name(destination.name + suffix)
        copy_beneath(self.uploads_dir, kept.relative_to(self.uploads_dir).parts, made,
                     f"upload {upload.name}")  # fmt: skip
        return str(made)


class RemoteUploads:
    """Uploads fetched from the service with a worker token (see the module docstring)."""

    def __init__(self, url: str, token: str, *, timeout: float = 300.0):
        import httpx

        self.http = httpx.Client(
            base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )  # fmt: skip

    def _get(self, path: str):
        import httpx

        try:
            response = self.http.get(path)
        except httpx.HTTPError as error:
            raise InputError(f"the service is unreachable ({type(error).__name__})") from None
        if response.status_code != 200:
            raise InputError(f"GET {path}: {response.status_code}")
        return response

    def copy(self, upload_id: str, destination: Path) -> str:
        import httpx

        listing = self._get(f"/v1/worker/uploads/{upload_id}").json()
        made = destination.with_name(destination.name + listing["suffix"])
        for relative, digest in sorted(listing["files"].items()):
            parts = PurePosixPath(relative).parts
            if not parts or any(p in ("", ".", "..") for p in parts) or relative.startswith("/"):
                raise InputError(f"upload {upload_id}: the service named a file {relative!r}")
            target = made.joinpath(*parts) if listing["folder"] else made
            target.parent.mkdir(parents=True, exist_ok=True)
            check = hashlib.sha256()
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            address = f"/v1/worker/uploads/{upload_id}/files/{quote(relative)}"
            try:
                with (
                    self.http.stream("GET", address) as response,
                    os.fdopen(os.open(target, flags, 0o600), "wb") as out,
                ):
                    if response.status_code != 200:
                        raise InputError(f"GET {address}: {response.status_code}")
                    for block in response.iter_bytes(1 << 20):
                        check.update(block)
                        out.write(block)
            except httpx.HTTPError as error:
                broke = type(error).__name__
                raise InputError(f"upload {upload_id}: broken off ({broke})") from None
            if check.hexdigest() != digest:
                raise InputError(f"upload {upload_id}: {relative} arrived with another SHA-256")
        return str(made)
