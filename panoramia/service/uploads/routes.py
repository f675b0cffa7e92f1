"""``/v1/uploads``: a contributor sends a data file or a model folder, in resumable chunks.

The protocol is tus's core (https://tus.io/protocols/resumable-upload), with its creation
step taking the SHA-256 up front:

1. ``POST /v1/uploads`` ``{"name", "kind", "filename", "size", "sha256"}`` → 201 and the
   upload's id (``Location``). The name, the format (by ``filename``'s suffix), the size
   (``PANORAMIA_MAX_FILE_MB``) and her storage quota are checked here, before any byte.
2. ``PATCH /v1/uploads/{id}`` with ``Upload-Offset: N`` and the next bytes as the body
   (``Content-Type: application/offset+octet-stream``) → the bytes held. The body is written
   to disk as it arrives, never held whole in memory. A wrong offset gets 409 and the
   offset held.
3. ``HEAD /v1/uploads/{id}`` → ``Upload-Offset`` (bytes held) and ``Upload-Length``: an
   interrupted upload resumes from there, without sending the first part again.

When the last byte arrives the SHA-256 is checked and the file is validated
(:mod:`panoramia.service.uploads.checks`), in her turn among the checks waiting
(:mod:`panoramia.service.check_pool`); a failure answers 422 with one line and keeps
nothing. ``GET /v1/uploads`` lists hers in any state (receiving, checking, ready, deleting);
``DELETE /v1/uploads/{id or name}`` removes it and everything derived from it
(:mod:`panoramia.service.uploads.erase`): 200 when done, 202 when it is being checked (the
check's end deletes it), 409 while an audit uses it or another request is deleting it.
Another contributor's upload answers 404, as an unknown one does.
"""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Request, Response
from fastapi import Path as FastApiPath
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from panoramia.errors import InputError
from panoramia.service.contributor_files import open_beneath
from panoramia.service.route_answers import headers, links, refusals
from panoramia.service.routing import RouteNeeds
from panoramia.service.schemas import (
    Identifier,
    Name,
    UploadCreate,
    UploadDeleted,
    UploadDeletionDeferred,
    UploadView,
    WorkerListing,
)
from panoramia.service.submission.usage import usage
from panoramia.service.uploads.checks import (
    UploadRejected,
    check_filename,
    suffix_of,
)
from panoramia.service.uploads.erase import (
    DeletionDeferred,
    UploadGone,
    UploadInUse,
    erase_upload,
)
from panoramia.service.uploads.files import ChunkRefused, UploadFolder, append_chunk
from panoramia.service.uploads.intake import NotReceiving, complete_upload
from panoramia.store.repository import Principal, as_utc
from panoramia.store.tables import Upload
from panoramia.store.uploads import READY, RECEIVING, NameTaken, NewUpload, UploadRows

MAX_CHUNK_BYTES = 64 * 2**20
"""Bytes one ``PATCH`` may bring (the CLI sends 8 MiB)."""
NOT_FOUND = "not found"


def upload_view(upload: Upload) -> UploadView:
    return UploadView(
        id=upload.id, name=upload.name, kind=upload.kind, filename=upload.filename,
        size=upload.size, received=upload.received, state=upload.state,  # type: ignore[arg-type]
        sha256=upload.sha256, summary=upload.summary or {},
        created_at=as_utc(upload.created_at), completed_at=as_utc(upload.completed_at),
    )  # fmt: skip


def is_chunk(method: str, path: str) -> bool:
    """Whether a request is an upload's chunk (its body is streamed, not spooled)."""
    return method == "PATCH" and path.startswith("/v1/uploads/")


UploadId = Annotated[Identifier, FastApiPath(alias="upload", description="The upload's id.")]
IdOrName = Annotated[Name, FastApiPath(alias="upload", description="The upload's id or name.")]
"""The four routes of ``/v1/uploads/{upload}`` share one path (one resource, its ``Allow``):
``HEAD`` and ``PATCH`` take its id, ``GET`` and ``DELETE`` its id or name."""
RunningUploadId = Annotated[Identifier, FastApiPath(description="A running audit's upload's id.")]


CREATED = headers(
    Location="/v1/uploads/{id}: where its chunks go.", Upload_Offset="0: the bytes held."
) | links(
    "upload",
    SendChunk=("PATCH", "/v1/uploads/{upload}"),
    HeldBytes=("HEAD", "/v1/uploads/{upload}"),
    GetUpload=("GET", "/v1/uploads/{upload}"),
    DeleteUpload=("DELETE", "/v1/uploads/{upload}"),
)
"""What ``POST /v1/uploads``'s 201 says besides its body: where its chunks go, what reads it."""


def uploads_router(needs: RouteNeeds) -> APIRouter:
    """The upload routes, and the routes a worker on another machine reads an audit's
    uploads by (a worker's token)."""
    router = APIRouter(tags=["uploads"])
    rows = UploadRows(needs.store)
    _add_creation_route(router, needs, rows)
    _add_chunk_routes(router, needs, rows)
    _add_held_routes(router, needs, rows)
    _add_worker_routes(router, needs, rows)
    return router


def _owned(rows: UploadRows, principal: Principal, id_or_name: str) -> Upload:
    """Her upload ``id_or_name``; else 404."""
    upload = rows.find(principal.contributor_id, id_or_name)
    if upload is None:
        raise HTTPException(404, NOT_FOUND)
    return upload


def _folder(needs: RouteNeeds, upload: Upload) -> UploadFolder:
    """Where the upload's bytes are kept."""
    return UploadFolder.of(needs.settings.uploads_dir, upload.contributor_id, upload.id)


def _add_creation_route(router: APIRouter, needs: RouteNeeds, rows: UploadRows) -> None:
    """Add ``POST /v1/uploads`` (a file announced, checked before any byte) to ``router``."""
    settings, store, rate_limit = needs.settings, needs.store, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]

    @router.post(
        "/v1/uploads",
        status_code=201,
        responses=refusals(
            {
                409: "You already have an upload of that name.",
                507: "Its size would take you past your storage quota (PANORAMIA_MAX_STORAGE_MB).",
            },
            {201: CREATED},
        ),
    )
    @rate_limit
    def create_upload(
        request: Request, response: Response, body: UploadCreate, principal: Caller
    ) -> UploadView:
        """Announce a file: checked here (name, format, size, quota) before any byte."""
        try:
            check_filename(body.filename, body.kind)
        except UploadRejected as error:
            raise _rejected(str(error), "filename") from None
        if body.size > settings.max_file_bytes:
            raise _rejected(
                f"{body.size} bytes; an upload may have at most {settings.max_file_bytes} "
                "(PANORAMIA_MAX_FILE_MB)",
                "size",
            )
        kept = usage(store, settings, principal.contributor_id)
        new = NewUpload(body.name, body.kind, body.filename, body.size, body.sha256.lower())
        try:
            upload = rows.create(
                principal.contributor_id, new, quota=kept.quota_bytes, kept=kept.total
            )
        except NameTaken:
            raise HTTPException(409, f"you already have an upload named {body.name!r}") from None
        _folder(needs, upload).create()
        response.headers["Location"] = f"/v1/uploads/{upload.id}"
        response.headers["Upload-Offset"] = "0"
        return upload_view(upload)


def _add_chunk_routes(router: APIRouter, needs: RouteNeeds, rows: UploadRows) -> None:
    """Add ``PATCH /v1/uploads/{id}`` (a chunk; the last completes the upload) and ``HEAD
    /v1/uploads/{id}`` (the bytes held) to ``router``."""
    settings, store = needs.settings, needs.store
    Caller = Annotated[Principal, needs.contributor()]

    @router.patch(
        "/v1/uploads/{upload}",
        responses=refusals({
            409: "Upload-Offset is not the bytes held (Upload-Offset answers them), another "
            "chunk is arriving, or the upload is no longer receiving.",
            413: "The chunk passes the upload's declared size, or 64 MiB.",
            422: "The last chunk completed a file that fails its SHA-256 or its checks "
            "(nothing is kept).",
            507: "The file, unpacked, would take you past your storage quota.",
        }),
        openapi_extra={"requestBody": {"required": False, "content": {
            "application/offset+octet-stream": {"schema": {"type": "string", "format": "binary"}}
        }}},
    )  # fmt: skip
    async def send_chunk(
        upload_id: UploadId,
        request: Request,
        principal: Caller,
        offset: Annotated[int, Header(alias="Upload-Offset", ge=0)],
    ) -> UploadView:
        """Append the body at ``Upload-Offset``; the last chunk completes the upload."""
        upload = await run_in_threadpool(rows.find, principal.contributor_id, upload_id)
        if upload is None or upload.id != upload_id:
            raise HTTPException(404, NOT_FOUND)
        if upload.state != RECEIVING:
            headers = {"Upload-Offset": str(upload.size)} if upload.state == READY else {}
            raise HTTPException(409, f"this upload is {upload.state}", headers)
        place = _folder(needs, upload)
        try:
            held = await append_chunk(place, offset, upload.size, request.stream(), MAX_CHUNK_BYTES)
        except ChunkRefused as error:
            headers = {"Upload-Offset": str(error.offset)} if error.offset >= 0 else {}
            raise HTTPException(error.status, error.message, headers) from None
        await run_in_threadpool(rows.received, upload.id, held)
        upload.received = held
        if held < upload.size:
            return upload_view(upload)
        try:
            ready = await complete_upload(settings, store, upload, needs.checks)
        except UploadRejected as error:
            raise _rejected(f"{error} (nothing was kept)", "file") from None
        except NotReceiving as error:
            raise HTTPException(409, str(error)) from None
        except OSError as error:
            raise _rejected(f"cannot be stored ({type(error).__name__})", "file") from None
        return upload_view(ready)

    @router.head(
        "/v1/uploads/{upload}",
        response_class=Response,
        responses=refusals(
            {},
            {
                200: headers(
                    Upload_Offset="The bytes held: resume from there.",
                    Upload_Length="The upload's declared size.",
                )
            },
        ),
    )
    def upload_offset(upload_id: UploadId, principal: Caller) -> Response:
        """``Upload-Offset``: the bytes held (resume from there); ``Upload-Length``: all."""
        upload = _owned(rows, principal, upload_id)
        held = upload.size if upload.state == READY else _folder(needs, upload).held()
        headers = {"Upload-Offset": str(held), "Upload-Length": str(upload.size)}
        return Response(status_code=200, headers=headers | {"Cache-Control": "no-store"})


def _add_held_routes(router: APIRouter, needs: RouteNeeds, rows: UploadRows) -> None:
    """Add ``GET /v1/uploads`` (hers), ``GET /v1/uploads/{id or name}`` and ``DELETE
    /v1/uploads/{id or name}`` to ``router``."""
    settings, store, rate_limit = needs.settings, needs.store, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]

    @router.get("/v1/uploads")
    def list_uploads(principal: Caller) -> list[UploadView]:
        """Your uploads, newest first."""
        return [upload_view(upload) for upload in rows.owned(principal.contributor_id)]

    @router.get("/v1/uploads/{upload}")
    def get_upload(id_or_name: IdOrName, principal: Caller) -> UploadView:
        return upload_view(_owned(rows, principal, id_or_name))

    @router.delete(
        "/v1/uploads/{upload}",
        response_model=UploadDeleted,
        responses=refusals(
            {409: "An audit using it is queued or running, or another request is deleting it."},
            {
                202: {
                    "model": UploadDeletionDeferred,
                    "description": "It is being checked: the check's end deletes it.",
                }
            },
        ),
    )
    @rate_limit
    def delete_upload(
        request: Request, id_or_name: IdOrName, principal: Caller
    ) -> UploadDeleted | JSONResponse:
        """Delete the upload and everything derived from it: its staged copies, the stages
        trained or drawn from it, and its records in your reports (their figures stay)."""
        upload = _owned(rows, principal, id_or_name)
        try:
            erased = erase_upload(store, settings, upload)
        except DeletionDeferred as error:
            deferred = UploadDeletionDeferred(deleting=upload.id, name=upload.name, when=str(error))
            return JSONResponse(deferred.model_dump(), 202)
        except UploadInUse as error:
            raise HTTPException(409, str(error)) from None
        except UploadGone:
            raise HTTPException(404, NOT_FOUND) from None
        return UploadDeleted(
            deleted=upload.id,
            name=upload.name,
            run_directories_removed=len(erased.run_directories),
            stages_removed=erased.stages,
            reports_redacted=erased.reports_redacted,
            message=erased.sentence(),
        )


def _add_worker_routes(router: APIRouter, needs: RouteNeeds, rows: UploadRows) -> None:
    """Add ``GET /v1/worker/uploads/{id}`` (a running audit's upload's files) and
    ``GET /v1/worker/uploads/{id}/files/{path}`` (one of them) to ``router`` (a worker's
    token)."""
    settings = needs.settings
    Worker = Annotated[Principal, needs.worker()]

    def in_use(upload_id: str) -> tuple[Upload, Path]:
        """A ready upload that a running audit names, and its data's path; else 404."""
        upload = rows.get(upload_id)
        if (
            upload is None
            or upload.state != READY
            or not (
                rows.audits_naming(upload.contributor_id, upload.id, status="running")
                or needs.store.running_shared_audit_reads(upload.id)  # a shared model's file
            )
        ):
            raise HTTPException(404, NOT_FOUND)
        return upload, _folder(needs, upload).data_path(upload.filename)

    @router.get("/v1/worker/uploads/{upload_id}", tags=["workers"])
    def worker_listing(upload_id: RunningUploadId, _worker: Worker) -> WorkerListing:
        """The files of a running audit's upload, each with its SHA-256 (a worker token)."""
        upload, data = in_use(upload_id)
        prefix = _folder(needs, upload).recorded_prefix(upload.filename)
        if prefix is None:
            return WorkerListing(suffix=suffix_of(upload.filename), folder=False,
                                 files={data.name: upload.sha256})  # fmt: skip
        files = {
            name.removeprefix(prefix): digest
            for name, digest in (upload.files or {}).items()
            if name.startswith(prefix)
        }
        return WorkerListing(suffix="", folder=True, files=files)

    @router.get(
        "/v1/worker/uploads/{upload_id}/files/{relative:path}",
        tags=["workers"],
        response_class=StreamingResponse,
        responses={200: {"content": {"application/octet-stream": {
            "schema": {"type": "string", "format": "binary"}}}}},
    )  # fmt: skip
    def worker_file(
        upload_id: RunningUploadId, relative: str, _worker: Worker
    ) -> StreamingResponse:
        """One file of a running audit's upload, streamed (a worker token)."""
        upload, data = in_use(upload_id)
        prefix = _folder(needs, upload).recorded_prefix(upload.filename)
        if prefix is None:
            if relative != data.name:
                raise HTTPException(404, NOT_FOUND)
            path = data
        else:
            if prefix + relative not in (upload.files or {}):
                raise HTTPException(404, NOT_FOUND)
            path = data.joinpath(*relative.split("/"))
        parts = path.relative_to(settings.uploads_dir).parts
        try:
            descriptor = open_beneath(settings.uploads_dir, parts, f"upload {upload.name}")
        except InputError:
            raise HTTPException(404, NOT_FOUND) from None

        def blocks() -> Iterator[bytes]:
            with os.fdopen(descriptor, "rb") as source:
                while block := source.read(1 << 20):
                    yield block

        return StreamingResponse(blocks(), media_type="application/octet-stream")


def _rejected(message: str, field: str) -> HTTPException:
    """A 422 in the API's validation shape, naming the body's field."""
    return HTTPException(422, [{"loc": ["body", field], "msg": message, "type": "value_error"}])
