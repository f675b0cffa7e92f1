"""The console's "Your data and models" page: her uploads, a form to upload a file (up to
``PANORAMIA_MAX_UPLOAD_MB``; larger ones with ``panoramia data upload``, which resumes), and
a button to delete each one with everything derived from it.

The form's kind is ``auto`` (the default: the file says it), ``data`` or ``model``. With
``auto`` the file is taken as data, and where the data check finds a model in its archive
(:class:`ModelSentAsData`) the same file is taken again as a model; an explicit choice that
does not fit the file is refused in one line, as the API refuses it."""

import re
from collections.abc import Callable
from typing import Annotated, Any, BinaryIO
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse
from starlette.datastructures import UploadFile

from panoramia.service.check_pool import CheckPool
from panoramia.service.routing import FormNeeds
from panoramia.service.schemas import IDENTIFIER_PATTERN, NAME_PATTERN
from panoramia.service.settings import ServiceSettings
from panoramia.service.uploads.checks import ModelSentAsData, UploadRejected, is_archive
from panoramia.service.uploads.erase import (
    DeletionDeferred,
    Erased,
    UploadGone,
    UploadInUse,
    erase_upload,
)
from panoramia.service.uploads.intake import NotReceiving, take_whole_file
from panoramia.store.repository import Principal, ReportStore, StorageFull
from panoramia.store.uploads import NameTaken, UploadRows

TAKEN_AS = {
    "model": "a model: it holds a target.json",
    "folder": "data: an archive without a target.json",
    "file": "data: not an archive",
}
"""What the success notice says of an upload whose kind the file said (``?taken=``), by
what :func:`take_as_chosen` returns."""


def add_upload_pages(router: APIRouter, needs: FormNeeds, checks: CheckPool) -> None:
    """Add ``/console/uploads`` (GET, POST) and ``/console/uploads/{id}/delete`` (GET: what
    it removes and a button; POST: it is removed, then back to her uploads) to
    ``router``, each form held to ``needs.rate_limit``; uploads are checked in ``checks`` as
    the API's are."""
    rows = UploadRows(needs.store)
    listing = _listing(needs.settings, rows, needs.page)
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]

    @router.get("/uploads")
    def uploads_page(
        request: Request,
        signed: Session,
        done: str | None = None,
        deleted: str | None = None,
        kind: str | None = None,
        runs: str | None = None,
        stages: str | None = None,
        reports: str | None = None,
        taken: str | None = None,
    ) -> Response:
        principal, csrf = signed
        shown = done if done and re.fullmatch(NAME_PATTERN, done) and len(done) <= 100 else None
        taken_as = TAKEN_AS.get(taken or "") if shown else None
        said = _deletion_said(deleted, kind, runs, stages, reports)
        return listing(request, principal, csrf, done=shown, taken=taken_as, deleted=said)

    _add_upload_form(router, needs, listing, checks)
    _add_delete_form(router, needs, rows, listing)


def _listing(
    settings: ServiceSettings, rows: UploadRows, page: Callable[..., Response]
) -> Callable[..., Response]:
    """``listing(request, principal, csrf, status=200, **said)``: the page of her uploads,
    with the upload form and what was ``said`` of the last request."""

    def listing(
        request: Request, principal: Any, csrf: str, status: int = 200, **said: Any
    ) -> Response:
        uploads = rows.owned(principal.contributor_id)
        return page(
            request, "uploads.html", status, principal=principal, csrf=csrf, uploads=uploads,
            form_limit=settings.max_upload_bytes, **said,
        )  # fmt: skip

    return listing


def _add_upload_form(
    router: APIRouter, needs: FormNeeds, listing: Callable[..., Response], checks: CheckPool
) -> None:
    """Add ``/console/uploads`` (POST: one whole file, checked as the API's uploads are) to
    ``router``; a refusal answers her ``listing`` with one line."""
    settings, store = needs.settings, needs.store
    form_is_genuine, rate_limit = needs.form_is_genuine, needs.rate_limit
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]

    @router.post("/uploads")
    @rate_limit
    async def upload_form(request: Request, signed: Session) -> Response:
        principal, csrf = signed
        try:
            form = await request.form(max_files=1, max_fields=5)
        except Exception:  # a malformed multipart body
            return listing(request, principal, csrf, 400, problem="the form could not be read")
        sent = form.get("csrf")
        if not form_is_genuine(request, csrf, sent if isinstance(sent, str) else None):
            return listing(request, principal, csrf, 403, problem="the form did not come from here")
        name, kind, file = form.get("name"), form.get("kind"), form.get("file")
        if not isinstance(file, UploadFile) or not file.filename:
            return listing(request, principal, csrf, 422, problem="choose a file to upload")
        if not _utf8_name(file):
            return listing(request, principal, csrf, 422,
                           problem="the file's name is not UTF-8 text: rename it")  # fmt: skip
        kind = kind if kind in ("data", "model") else "auto"  # the form's default
        name = name.strip() if isinstance(name, str) and name.strip() else file.filename
        name = name.rsplit(".", 2)[0] if name == file.filename else name
        if not (re.fullmatch(NAME_PATTERN, name) and len(name) <= 100):
            problem = "a name of letters, digits, '.', '_' and '-' (at most 100)"
            return listing(request, principal, csrf, 422, problem=problem)
        try:
            taken = await take_as_chosen(
                settings, store, checks, principal.contributor_id, name=name, kind=kind,
                filename=file.filename, source=file.file,
            )  # fmt: skip
        except UploadRejected as error:
            return listing(request, principal, csrf, 422, problem=f"{error} (nothing was kept)")
        except NotReceiving as error:
            return listing(request, principal, csrf, 409, problem=str(error))
        except NameTaken:
            return listing(request, principal, csrf, 409,
                           problem=f"you already have an upload named {name!r}")  # fmt: skip
        except StorageFull as error:
            return listing(request, principal, csrf, 507, problem=str(error))
        except OSError as error:  # the service's disk or processes, as the API answers it
            problem = f"{file.filename}: cannot be stored ({type(error).__name__}; nothing kept)"
            return listing(request, principal, csrf, 422, problem=problem)
        finally:
            await file.close()
        said = {"done": name} | ({"taken": taken} if taken else {})
        return RedirectResponse(f"/console/uploads?{urlencode(said)}", 303)


async def take_as_chosen(
    settings: ServiceSettings,
    store: ReportStore,
    checks: CheckPool,
    contributor_id: int,
    *,
    name: str,
    kind: str,
    filename: str,
    source: BinaryIO,
) -> str | None:
    """Keep ``source`` as her upload ``name`` (:func:`take_whole_file`) of ``kind``: ``data``
    or ``model`` as she chose (None is returned), or ``auto``: as data, and where the data
    check refuses it as a model (:class:`ModelSentAsData`, after which nothing of that first
    try is kept and ``name`` is free again) once more, the same bytes, as a model. Returns
    the key of :data:`TAKEN_AS` saying what ``auto`` took it as. Raises what
    :func:`take_whole_file` raises; a model check's refusal of the second try is its own."""

    async def take(taken: str) -> None:
        await take_whole_file(
            settings, store, checks, contributor_id, name=name, kind=taken, filename=filename,
            source=source,
        )  # fmt: skip

    try:
        await take("data" if kind == "auto" else kind)
    except ModelSentAsData:  # take_whole_file reads the source again from its start
        if kind != "auto":
            raise
        await take("model")
        return "model"
    if kind != "auto":
        return None
    return "folder" if is_archive(filename) else "file"


def _add_delete_form(
    router: APIRouter, needs: FormNeeds, rows: UploadRows, listing: Callable[..., Response]
) -> None:
    """Add ``/console/uploads/{id}/delete`` (POST: her upload and everything derived from it
    erased) to ``router``; the answer is her ``listing``, saying what was removed."""
    settings, store = needs.settings, needs.store
    form_is_genuine, rate_limit = needs.form_is_genuine, needs.rate_limit
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]

    @router.get("/uploads/{upload_id}/delete")
    def confirm_deletion(request: Request, signed: Session, upload_id: str) -> Response:
        """What deleting the upload removes, and the one button that does it."""
        principal, csrf = signed
        found = None
        if re.fullmatch(IDENTIFIER_PATTERN, upload_id):
            found = rows.find(principal.contributor_id, upload_id)
        if found is None or found.id != upload_id:
            return listing(request, principal, csrf, 404, problem="no such upload of yours")
        audits = rows.audits_naming(principal.contributor_id, found.id)
        return needs.page(
            request, "upload_delete.html", principal=principal, csrf=csrf, upload=found,
            audits=len(audits),
        )  # fmt: skip

    @router.post("/uploads/{upload_id}/delete")
    @rate_limit
    async def delete_form(request: Request, signed: Session, upload_id: str) -> Response:
        principal, csrf = signed
        form = await request.form(max_files=0, max_fields=5)
        sent = form.get("csrf")
        if not form_is_genuine(request, csrf, sent if isinstance(sent, str) else None):
            return listing(request, principal, csrf, 403, problem="the form did not come from here")
        found = None
        if re.fullmatch(IDENTIFIER_PATTERN, upload_id):
            found = await run_in_threadpool(rows.find, principal.contributor_id, upload_id)
        if found is None or found.id != upload_id:
            return listing(request, principal, csrf, 404, problem="no such upload of yours")
        try:
            erased = await run_in_threadpool(erase_upload, store, settings, found)
        except DeletionDeferred as error:
            return listing(request, principal, csrf, 202, deleting=found.name, problem=None,
                           when=str(error))  # fmt: skip
        except UploadInUse as error:
            return listing(request, principal, csrf, 409, problem=str(error))
        except UploadGone:
            return listing(request, principal, csrf, 404, problem="no such upload of yours")
        said = urlencode({"deleted": erased.name, "kind": erased.kind,
                          "runs": len(erased.run_directories), "stages": erased.stages,
                          "reports": erased.reports_redacted})  # fmt: skip
        return RedirectResponse(f"/console/uploads?{said}", 303)  # a reload does not re-post


def _count(text: str | None) -> int | None:
    """A count sent back in the redirect's query (digits, at most 9), else None."""
    return int(text) if text and text.isascii() and text.isdigit() and len(text) <= 9 else None


def _deletion_said(
    name: str | None, kind: str | None, runs: str | None, stages: str | None, reports: str | None
) -> str | None:
    """The sentence a deletion's redirect carries (``?deleted=…&runs=…``), as
    :meth:`Erased.sentence` says it; None where the query is not one a deletion makes."""
    counts = [_count(runs), _count(stages), _count(reports)]
    if not name or not re.fullmatch(NAME_PATTERN, name) or len(name) > 100:
        return None
    if kind not in ("data", "model") or any(count is None for count in counts):
        return None
    erased = Erased("", name, kind, ["-"] * (counts[0] or 0), counts[1] or 0, counts[2] or 0)
    return erased.sentence()


def _utf8_name(file: UploadFile) -> bool:
    """Whether the part's ``Content-Disposition`` (which the multipart parser decodes as
    Latin-1 where it is not UTF-8) was UTF-8 as sent."""
    try:
        file.headers.get("content-disposition", "").encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return False
    return True
