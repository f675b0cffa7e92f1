"""The console's audit form: start an audit of one of her model uploads, or of a model shared
with her (docs/SPEC.md §3.3), on her data uploads, with no script and no command line, and
follow it (or its repeats) to the verdict.

Two steps, because a page without script cannot change its own fields: first the data
(members) upload, then the fields that upload's kind needs — a table's label column and
slices among its own columns (read on arrival), a folder's kind (images or text). The form
submits through :func:`panoramia.service.audit_submission.submit_audits`, the API's own door,
so every check, limit and price is the API's; a refusal re-shows the form with the API's one
line.
"""

import re
from typing import Annotated, Any, cast
from urllib.parse import parse_qs, quote, urlencode

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse
from pydantic import ValidationError

from panoramia.report.pooled import MAX_REPEATS
from panoramia.report.verdict import WORDS
from panoramia.service.audit_submission import quote_audits, submit_audits
from panoramia.service.console.form_defaults import (
    proposed_label,
    proposed_members,
    proposed_model,
    proposed_nonmembers,
)
from panoramia.service.routing import FormNeeds, Queue
from panoramia.service.schemas import IDENTIFIER_PATTERN, NAME_PATTERN, AuditRequest
from panoramia.service.submission.audit_size import SIZE_WORDS, SIZES, default_split, size_overrides
from panoramia.service.submission.command import RequestProblem
from panoramia.service.submission.cost import OverBudget
from panoramia.service.submission.repeats import repeat_summary
from panoramia.service.uploads.naming import data_kind
from panoramia.store.repository import Principal, StorageFull, TooManyAudits
from panoramia.store.tables import Upload
from panoramia.store.uploads import READY, UploadRows

SHARED_OPTION = "shared:"
"""How the form's "Model" names a shared model: ``shared:<owner>/<name>/<version>`` (no part
holds a ``/``), beside her own model uploads' names (which hold no ``:``)."""
MAX_FORM_BYTES = 16_384
"""The most an audit form's body may hold (its fields are names, columns and numbers)."""
FOLDER_SOURCES = {"images": "images in one folder per class", "text_files": "text documents"}
"""What a folder upload may hold, and the data source each is audited as."""


def upload_kind(upload: Upload) -> str:
    """``table`` (a CSV or Parquet upload: its columns are known), ``arrays`` (an .npz of
    images), ``documents`` (a ``.jsonl`` or ``.txt`` of text documents) or ``folder`` (a
    folder: images per class, or text files): the kind the door checks
    (:func:`panoramia.service.uploads.naming.data_kind`)."""
    return data_kind(upload)


def columns_of(upload: Upload) -> list[str]:
    """A table upload's column names, in file order (read on arrival)."""
    return [str(column[0]) for column in (upload.summary or {}).get("columns") or []]


def proposals(data: list[Upload], models: list[Upload], members: Upload | None) -> dict:
    """What each field proposes before she chooses (:mod:`.form_defaults`): step 1 the
    members; step 2 the held-out rows, the model and the label. No control is proposed: one
    needs repeats, and their cost is hers to choose."""
    if members is None:
        return {"members": proposed_members(data)}
    table = upload_kind(members) == "table"
    model = proposed_model(models, "tabular" if table else None)
    chosen = next((m for m in models if m.name == model), None)
    label = (
        proposed_label(columns_of(members), members.summary or {}, chosen.summary or {})
        if table and chosen is not None
        else None
    )
    return {
        "nonmembers": proposed_nonmembers(data, members.name),
        "model": model,
        "label": label,
    }


FORM_FIELDS = ("members", "nonmembers", "model", "label", "slices", "holds", "model_name",
               "version", "control", "repeats", "size")  # fmt: skip
"""The audit form's own fields: what a "change and retry" link may carry back to it."""


def retry_fields(request: Any) -> dict[str, list[str]]:
    """The form's fields as an audit's stored request (``Audit.request``, the API request's
    dump) asked them: what "Change and retry" carries back to the form, so that she changes
    only what failed. {} for a request the form did not make (a shared model's, an
    operator's path, a request that is not a mapping)."""
    if not isinstance(request, dict):
        return {}
    data = got if isinstance(got := request.get("data"), dict) else {}
    model = got if isinstance(got := request.get("model"), dict) else {}
    target = got if isinstance(got := request.get("target"), dict) else {}
    control = got if isinstance(got := request.get("control"), dict) else {}
    repeat = got if isinstance(got := request.get("repeat"), dict) else {}
    fields: dict[str, Any] = {
        "members": data.get("members"), "nonmembers": data.get("nonmembers"),
        "model": target.get("path"), "label": data.get("label"),
        "model_name": model.get("name"), "version": model.get("version"),
        "control": control.get("path"),
        "repeats": str(repeat.get("of") or request.get("repeats") or 1),
        "holds": source if isinstance(source := data.get("source"), str)
        and source in FOLDER_SOURCES else None,
    }  # fmt: skip
    asked = got if isinstance(got := request.get("overrides"), list) else []
    split = [line for line in asked if isinstance(line, str) and line.startswith("data.")]
    try:
        sizes = {size: size_overrides(default_split(str(data.get("source"))), size)
                 for size in SIZES}  # fmt: skip
        fields["size"] = next((size for size, lines in sizes.items() if lines == split), None)
    except (KeyError, OSError):
        fields["size"] = None
    kept = {key: [value] for key, value in fields.items() if isinstance(value, str) and value}
    slices = [value for value in data.get("slices") or [] if isinstance(value, str)]
    return kept | ({"slices": slices} if slices else {})


def retry_link(audit: Any) -> str | None:
    """The form's address with a failed or cancelled audit's fields ("Change and retry"),
    or None: an audit that did not fail, or whose request the form did not make."""
    if getattr(audit, "status", None) not in ("failed", "cancelled"):
        return None
    request = getattr(audit, "request", None)
    if not isinstance(request, dict) or request.get("shared"):
        return None
    fields = retry_fields(request)
    if "members" not in fields or "model" not in fields:
        return None
    return "/console/audits/new?" + urlencode(fields | {"retry": ["1"]}, doseq=True)


def read_form(body: bytes) -> dict[str, list[str]]:
    """An urlencoded form's fields, every value kept (``slices`` repeats); {} for a body too
    large or not ASCII (a browser percent-encodes every field)."""
    if len(body) > MAX_FORM_BYTES:
        return {}
    try:
        return parse_qs(body.decode("ascii"), max_num_fields=200)
    except (UnicodeDecodeError, ValueError):
        return {}


def audit_request(fields: dict[str, list[str]], members: Upload) -> AuditRequest:
    """The API request the form's ``fields`` ask for: her model upload as ``target``, or the
    shared model its "Model" names (pydantic's ValidationError for what it refuses, as the
    API would; RequestProblem for a shared model's option the form never offers)."""

    def one(name: str) -> str | None:
        values = fields.get(name) or [""]
        return values[0].strip() or None

    kind = upload_kind(members)
    source = {"table": "csv", "arrays": "images", "documents": "text_files"}.get(kind)
    source = source or one("holds") or "images"
    data: dict[str, Any] = {"source": source, "members": members.name}
    if one("nonmembers"):
        data["nonmembers"] = one("nonmembers")
    if source == "csv":
        data["label"] = one("label")
        data["slices"] = [value for value in fields.get("slices", []) if value]
    repeats = one("repeats") or "1"
    size = one("size") or "standard"
    if size not in SIZES:
        raise RequestProblem(("size",), "choose one of the audit sizes the form offers")
    try:
        sized = size_overrides(default_split(source), size)
    except (KeyError, OSError):  # "holds" is hers: only a registered source names a config
        raise RequestProblem(("data", "source"), "choose what the folder holds") from None
    control = {"control": {"path": one("control")}} if one("control") else {}
    chosen = one("model") or ""
    audited: dict[str, Any] = {
        "model": {"name": one("model_name") or "", "version": one("version") or "1"},
        "target": {"path": chosen},
    }
    if chosen.startswith(SHARED_OPTION):  # its name and version are the shared model's
        parts = chosen.removeprefix(SHARED_OPTION).split("/")
        if len(parts) != 3:
            raise RequestProblem(("shared",), "choose one of the shared models the form offers")
        audited = {"shared": dict(zip(("owner", "name", "version"), parts, strict=True))}
    return AuditRequest.model_validate({
        **audited,
        **control,
        "data": data,
        "overrides": sized,
        # not str.isdigit ("²" is a digit to it): anything else is pydantic's to refuse
        "repeats": int(repeats) if re.fullmatch(r"[0-9]{1,3}", repeats) else repeats,
    })  # fmt: skip


def add_audit_pages(router: APIRouter, needs: FormNeeds, queue: Queue, refresh_s: int) -> None:
    """Add ``/console/audits/new`` (GET: the form; POST: submit it, held to
    ``needs.rate_limit``, its audits sent to ``queue``) and ``/console/repeats/{id}`` (a group
    of repeats followed to its pooled verdict, reloading every ``refresh_s`` when followed)."""
    settings, store, page = needs.settings, needs.store, needs.page
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]
    form_is_genuine, rate_limit = needs.form_is_genuine, needs.rate_limit
    rows = UploadRows(store)

    def form(
        request: Request, principal: Any, csrf: str, chosen: str | None, status: int = 200,
        problem: str | None = None, sent: dict[str, list[str]] | None = None,
        quote: dict[str, Any] | None = None,
    ) -> Response:  # fmt: skip
        ready = [u for u in rows.owned(principal.contributor_id) if u.state == READY]
        data = [u for u in ready if u.kind == "data"]
        models = [u for u in ready if u.kind == "model"]
        shared = [e for e in store.list_shared(principal) if not e.withdrawn]
        members = next((u for u in data if u.name == chosen), None)
        sent = sent or {}
        return page(
            request, "audit_form.html", status, principal=principal, csrf=csrf,
            data=data, models=models, members=members, shared=shared,
            shared_option=SHARED_OPTION,
            kind=upload_kind(members) if members else None,
            columns=columns_of(members) if members else [],
            proposed=proposals(data, models, members),
            folder_sources=FOLDER_SOURCES, problem=problem,
            sent={key: values for key, values in sent.items() if key != "csrf"},
            max_repeats=MAX_REPEATS, size_words=SIZE_WORDS, quote=quote,
            quoted={option["size"]: option for option in (quote or {}).get("sizes", [])},
        )  # fmt: skip

    @router.get("/audits/new")
    def new_audit(request: Request, signed: Session, members: str | None = None) -> Response:
        """The form; a "Change and retry" link (``retry=1``) brings back the fields of the
        audit it retries, shown as sent (nothing here is trusted: the POST checks all)."""
        principal, csrf = signed
        chosen = members if members and re.fullmatch(NAME_PATTERN, members) else None
        sent = None
        if request.query_params.get("retry") == "1":
            sent = {key: [value[:200] for value in request.query_params.getlist(key)][:8]
                    for key in FORM_FIELDS if key in request.query_params}  # fmt: skip
        return form(request, principal, csrf, chosen, sent=sent)

    @router.post("/audits/new")
    @rate_limit
    async def submit_form(request: Request, signed: Session) -> Response:
        principal, csrf = signed
        fields = read_form(await request.body())
        sent = (fields.get("csrf") or cast("list[str | None]", [None]))[0]
        chosen = (fields.get("members") or [""])[0]
        if not form_is_genuine(request, csrf, sent):
            return form(request, principal, csrf, None, 403, "the form did not come from here")
        members = None
        if re.fullmatch(NAME_PATTERN, chosen) and len(chosen) <= 100:  # no NUL reaches SQL
            members = await run_in_threadpool(rows.find, principal.contributor_id, chosen)
        if members is None or members.kind != "data" or members.state != READY:
            return form(request, principal, csrf, None, 422,
                        "Data (members): choose one of your ready data uploads")  # fmt: skip

        def refused(status: int, line: str) -> Response:
            return form(request, principal, csrf, members.name, status, line, fields)

        pricing = (fields.get("action") or [""])[0] == "quote"
        try:
            body = audit_request(fields, members)
            if pricing:  # checked and priced at every size, nothing queued
                quote = await run_in_threadpool(quote_audits, settings, store, principal, body)
                return form(request, principal, csrf, members.name, 200, None, fields, quote)
            audits = await run_in_threadpool(submit_audits, settings, store, queue, principal, body)
        except ValidationError as error:
            return refused(422, _form_words(validation_line(error)))
        except RequestProblem as error:
            where = ".".join(str(part) for part in error.field)
            return refused(422, _form_words(f"{where}: {error.message}"))
        except TooManyAudits as error:
            return refused(429, f"{error}: wait for one of yours to end")
        except OverBudget as error:
            return refused(422 if error.alone else 429, str(error))
        except StorageFull as error:
            return refused(507, str(error))
        if len(audits) > 1:
            return RedirectResponse(f"/console/repeats/{audits[0].repeat_group}?follow=1", 303)
        return RedirectResponse(f"/console/audits/{audits[0].id}?follow=1", 303)

    _add_repeats_page(router, needs, refresh_s)


def _add_repeats_page(router: APIRouter, needs: FormNeeds, refresh_s: int) -> None:
    """Add ``/console/repeats/{id}``: a group of repeats followed to its pooled verdict,
    reloading every ``refresh_s`` when followed."""
    store, page = needs.store, needs.page
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]

    @router.get("/repeats/{group_id}")
    def repeats_page(
        request: Request,
        signed: Session,
        group_id: str,
        follow: str | None = None,
    ) -> Response:
        principal, csrf = signed
        found = None
        if re.fullmatch(IDENTIFIER_PATTERN, group_id) and len(group_id) <= 36:
            found = repeat_summary(store, principal, group_id)
        if found is None:
            return page(request, "not_found.html", 404, principal=principal, csrf=csrf,
                        what="group of repeats")  # fmt: skip
        running = found["pooled"] is None
        return page(
            request, "repeats.html", principal=principal, csrf=csrf, found=found,
            model=found["audits"][0].model, words=WORDS,
            refresh=refresh_s if running and follow == "1" else None,
            following=follow == "1", refresh_s=refresh_s, quote=quote,
        )  # fmt: skip


FIELD_WORDS = {
    "model.name": "Model name",
    "model.version": "Version",
    "target.path": "Model",
    "data.members": "Data (members)",
    "data.nonmembers": "Held-out rows",
    "data.label": "Label column",
    "data.slices": "Slices",
    "repeats": "Repeats",
    "control": "Control model",
    "shared": "Model",
    "size": "Audit size",
}
"""The API's field names as the form labels them."""


def _form_words(line: str) -> str:
    """The API's one line with its field named as the form labels it."""
    for field, label in FIELD_WORDS.items():
        if line.startswith(field + ":") or line.startswith(field + "."):
            return label + line[len(field) :]
    return line


def validation_line(error: ValidationError) -> str:
    """The first error of a refused request as one line, ``field.path: message``, never the
    offending value."""
    items = error.errors()
    if not items:
        return "the form could not be read"
    first = items[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = str(first.get("msg", "")).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
