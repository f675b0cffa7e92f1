"""The console's shared models (docs/SPEC.md §3.3): the versions she may audit and those she
published, a form to publish one of her model uploads, and each shared model's leakage page,
every version side by side, with her choices as a contributor (to be named to its owner, to
take her audits out of its report) and, for its owner, the withdrawal of a version.

Every page and form finds the version through the store as the API does: one she may not see
is the same 404 page as one that does not exist, GET and POST alike. What a page shows her of
a version's report is :func:`panoramia.service.shared_models.leakage_for`'s (the owner: every
field; a contributor: the aggregates only with three or more counted, and her own row).
"""

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse
from pydantic import ValidationError

from panoramia.accounting.claims import DpSgdClaim, EpsDeltaClaim, claim_from_dict
from panoramia.errors import InputError
from panoramia.report.shared_leakage import LEVEL_WORDS, MIN_AGGREGATE
from panoramia.report.verdict import WORDS, p_text
from panoramia.service.console.audit_form import read_form, validation_line
from panoramia.service.routing import FormNeeds
from panoramia.service.schemas import SharedPublication, is_name, is_owner_name
from panoramia.service.shared_models import model_leakage, publication_from
from panoramia.service.submission.command import RequestProblem
from panoramia.store.repository import Principal
from panoramia.store.shared_rows import MAX_AUDIENCE, SharedEntry, SharedModelExists
from panoramia.store.uploads import READY, UploadRows

SAID = {
    "published": "Published version {version}: the contributors of its audience now find it "
    "under “Start an audit”.",
    "withdrawn": "Withdrew version {version}: no new audit may name it; its audits and this "
    "report stay.",
    "named": "Its owner now sees your name on version {version}.",
    "pseudonym": "Its owner now sees your pseudonym on version {version}, not your name.",
    "left": "Your audits of version {version} are out of its report.",
    "back": "Your audits of version {version} are back in its report.",
}
"""What a form's redirect says on the leakage page (``?said=…&version=…``)."""
CHOICES: dict[str, dict[str, bool]] = {
    "named": {"named": True}, "pseudonym": {"named": False},
    "left": {"withdrawn": True}, "back": {"withdrawn": False},
}  # fmt: skip
"""A contributor's buttons on a version: what each sets of her participation."""
NEIGHBOURS = {"add_remove": "adding or removing one record", "replace_one": "replacing one record"}


def shared_address(owner: str, name: str) -> str:
    """The leakage page of ``owner``'s ``name`` (the owner's name percent-encoded)."""
    return f"/console/shared/{quote(owner, safe='')}/{name}"


def claim_words(claim: Any) -> str:
    """A declared guarantee (claims JSON) in words: "none declared", "(ε = 3, δ = 1e-05)-DP",
    or DP-SGD's hyper-parameters; never its accounting (seconds of work for a listing)."""
    if not isinstance(claim, dict) or claim.get("kind") in (None, "none"):
        return "none declared"
    try:
        read = claim_from_dict(claim)
    except (InputError, KeyError, TypeError, ValueError):
        return "a guarantee this page cannot read"
    if isinstance(read, EpsDeltaClaim):
        words = f"(ε = {read.epsilon:g}, δ = {read.delta:g})-DP"
    elif isinstance(read, DpSgdClaim):
        phases = "; then ".join(
            f"σ = {p.noise_multiplier:g}, sampling rate {p.sample_rate:g}, {p.steps:,} steps"
            for p in read.phases
        )
        size = f", N = {read.dataset_size:,}" if read.dataset_size else ""
        words = f"DP-SGD ({phases}{size}), for data differing by {NEIGHBOURS[read.neighbouring]}"
    else:
        return "none declared"
    if read.tuning is not None:
        words += f", the best of {read.tuning.describe()}"
    return words


def audience_words(entry: SharedEntry) -> str:
    """Who may audit a version, as its owner reads it."""
    if entry.audience == "everyone":
        return "every contributor"
    return ", ".join(entry.names) if entry.names else "nobody named"


def add_shared_pages(router: APIRouter, needs: FormNeeds) -> None:
    """Add ``/console/shared`` (GET: the list and the publish form; POST: publish),
    ``/console/shared/{owner}/{name}`` (the leakage page) and its version's forms
    ``…/{version}/participation`` and ``…/{version}/withdraw`` (POST) to ``router``, each form
    CSRF-checked and held to ``needs.rate_limit``."""
    _add_listing(router, needs)
    _add_leakage_page(router, needs)
    _add_version_forms(router, needs)


def _not_found(needs: FormNeeds, request: Request, session: tuple[Principal, str]) -> Response:
    """The Not found page of a shared model (the same for one she may not see)."""
    principal, csrf = session
    return needs.page(request, "not_found.html", 404, principal=principal, csrf=csrf,
                      what="shared model")  # fmt: skip


def _add_listing(router: APIRouter, needs: FormNeeds) -> None:
    """``/console/shared``: the list and the publish form (GET), publishing (POST)."""
    settings, store, page = needs.settings, needs.store, needs.page
    form_is_genuine, rate_limit = needs.form_is_genuine, needs.rate_limit
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]

    def not_found(request: Request, session: tuple[Principal, str]) -> Response:
        return _not_found(needs, request, session)

    rows = UploadRows(store)

    def listing(
        request: Request, principal: Principal, csrf: str, status: int = 200,
        problem: str | None = None, sent: dict[str, str] | None = None,
    ) -> Response:  # fmt: skip
        entries = store.list_shared(principal)
        models = [u for u in rows.owned(principal.contributor_id)
                  if u.kind == "model" and u.state == READY]  # fmt: skip
        return page(
            request, "shared.html", status, principal=principal, csrf=csrf,
            theirs=[e for e in entries if not e.mine], mine=[e for e in entries if e.mine],
            models=models, problem=problem, sent=sent or {}, address=shared_address,
            claim_words=claim_words, audience_words=audience_words,
        )  # fmt: skip

    @router.get("/shared")
    def shared_list(request: Request, session: Session) -> Response:
        principal, csrf = session
        return listing(request, principal, csrf)

    @router.post("/shared")
    @rate_limit
    async def publish(request: Request, session: Session) -> Response:
        principal, csrf = session
        fields = {k: v[0] for k, v in read_form(await request.body()).items() if v}
        if not form_is_genuine(request, csrf, fields.get("csrf")):
            return listing(request, principal, csrf, 403, "the form did not come from here")
        sent = {k: v for k, v in fields.items() if k != "csrf"}

        def refused(status: int, line: str) -> Response:
            return listing(request, principal, csrf, status, line, sent)

        everyone = sent.get("audience", "all") == "all"
        names = [n.strip() for n in sent.get("names", "").split(",") if n.strip()]
        if everyone and names:  # never a wider audience than the names she typed
            return refused(422, "Audience: you named contributors but chose every "
                           "contributor: choose “only the contributors named below”, or "
                           "clear the names")  # fmt: skip
        if not everyone and not names:
            return refused(422, "Audience: name at least one contributor, or choose every "
                           "contributor")  # fmt: skip
        odd = next((n for n in names if not is_owner_name(n)), None)
        if odd is not None:  # the schema's own error names a union's branch: this names her
            return refused(422, f"Audience: {odd!r} is not a contributor's name (no '/', "
                           "'\\', control character or '${')")  # fmt: skip
        if len(names) > MAX_AUDIENCE:
            return refused(422, f"Audience: at most {MAX_AUDIENCE} names")
        try:
            body = SharedPublication.model_validate({
                "upload": sent.get("upload") or "", "name": sent.get("name", "").strip(),
                "version": sent.get("version", "").strip() or "1",
                "audience": "all" if everyone else names,
            })  # fmt: skip
            publication = await run_in_threadpool(
                publication_from, settings, store, principal, body
            )
            entry = await run_in_threadpool(store.publish, principal, publication)
        except ValidationError as error:
            return refused(422, _publish_words(validation_line(error)))
        except RequestProblem as error:
            where = ".".join(str(part) for part in error.field)
            return refused(error.status, _publish_words(f"{where}: {error.message}"))
        except SharedModelExists as error:
            return refused(409, str(error))
        said = f"?said=published&version={quote(entry.version)}"
        return RedirectResponse(shared_address(entry.owner, entry.name) + said, 303)


def _add_leakage_page(router: APIRouter, needs: FormNeeds) -> None:
    """``/console/shared/{owner}/{name}``: every version's leakage, side by side."""
    store, page = needs.store, needs.page
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]

    def not_found(request: Request, session: tuple[Principal, str]) -> Response:
        return _not_found(needs, request, session)

    @router.get("/shared/{owner}/{name}")
    def leakage_page(
        request: Request,
        session: Session,
        owner: str,
        name: str,
        said: Annotated[str | None, Query(max_length=20)] = None,
        version: Annotated[str | None, Query(max_length=100)] = None,
    ) -> Response:
        principal, csrf = session
        if not _valid_key(owner, name):
            return not_found(request, session)
        entries = store.shared_versions(principal, owner, name)
        found = model_leakage(store, principal, owner, name, entries)
        if found is None:
            return not_found(request, session)
        versions = [
            {"entry": entry, "report": report,
             "taking_part": store.participation(principal, entry.id)}
            for entry, report in zip(entries, found.versions, strict=True)
        ]  # fmt: skip
        notice = None
        if said in SAID and version and any(e.version == version for e in entries):
            notice = SAID[said].format(version=version)
        return page(
            request, "shared_model.html", principal=principal, csrf=csrf, model=found,
            versions=versions, owned=any(e.mine for e in entries),
            address=shared_address(found.owner, found.name), notice=notice,
            claim_words=claim_words, audience_words=audience_words, level_words=LEVEL_WORDS,
            words=WORDS, p_text=p_text, min_aggregate=MIN_AGGREGATE,
        )  # fmt: skip


def _add_version_forms(router: APIRouter, needs: FormNeeds) -> None:
    """A version's two forms: her participation, the owner's withdrawal (POST)."""
    store, page = needs.store, needs.page
    form_is_genuine, rate_limit = needs.form_is_genuine, needs.rate_limit
    Session = Annotated[tuple[Principal, str], Depends(needs.signed_in)]

    def not_found(request: Request, session: tuple[Principal, str]) -> Response:
        return _not_found(needs, request, session)

    async def version_form(
        request: Request, session: tuple[Principal, str], owner: str, name: str, version: str
    ) -> tuple[dict[str, str], SharedEntry | None, Response | None]:
        """A version's form read: its fields and the version, or the answer to give (the
        expired-form page; the 404 page for a version she may not see)."""
        principal, csrf = session
        fields = {k: v[0] for k, v in read_form(await request.body()).items() if v}
        if not form_is_genuine(request, csrf, fields.get("csrf")):
            expired = page(request, "not_found.html", 403, principal=principal, csrf=csrf,
                           what="form")  # fmt: skip
            return fields, None, expired
        entry = None
        if _valid_key(owner, name) and is_name(version):
            entry = await run_in_threadpool(store.find_shared, principal, owner, name, version)
        if entry is None:
            return fields, None, not_found(request, session)
        return fields, entry, None

    @router.post("/shared/{owner}/{name}/{version}/participation")
    @rate_limit
    async def participate(
        request: Request, session: Session, owner: str, name: str, version: str
    ) -> Response:
        principal, csrf = session
        fields, entry, answer = await version_form(request, session, owner, name, version)
        if entry is None:
            assert answer is not None
            return answer
        choice = fields.get("choice") or ""
        changes = CHOICES.get(choice)
        if changes is None:
            return page(request, "not_found.html", 422, principal=principal, csrf=csrf,
                        what="shared model", problem="Nothing changed: use one of the page's "
                        "buttons.")  # fmt: skip
        done = await run_in_threadpool(
            lambda: store.set_participation(principal, entry.id, **changes)
        )
        if not done:
            return page(request, "not_found.html", 409, principal=principal, csrf=csrf,
                        what="shared model", problem=f"Nothing changed: you have not audited "
                        f"version {entry.version} of {entry.name}.")  # fmt: skip
        said = f"?said={choice}&version={quote(entry.version)}"
        return RedirectResponse(shared_address(entry.owner, entry.name) + said, 303)

    @router.post("/shared/{owner}/{name}/{version}/withdraw")
    @rate_limit
    async def withdraw(
        request: Request, session: Session, owner: str, name: str, version: str
    ) -> Response:
        principal, csrf = session
        fields, entry, answer = await version_form(request, session, owner, name, version)
        if entry is None:
            assert answer is not None
            return answer
        if not entry.mine:
            return page(request, "not_found.html", 403, principal=principal, csrf=csrf,
                        what="shared model", problem="Only its owner withdraws a shared "
                        "model version.")  # fmt: skip
        if fields.get("confirm") != "yes":  # the page's box, ticked: never one click
            return page(request, "not_found.html", 422, principal=principal, csrf=csrf,
                        what="shared model", problem=f"Nothing was withdrawn: tick “I "
                        f"understand” beside version {entry.version} to withdraw it.")  # fmt: skip
        await run_in_threadpool(store.withdraw_shared, principal, entry.name, entry.version)
        said = f"?said=withdrawn&version={quote(entry.version)}"
        return RedirectResponse(shared_address(entry.owner, entry.name) + said, 303)


PUBLISH_WORDS = {"upload": "Model upload", "name": "Name", "version": "Version",
                 "audience": "Audience", "claim": "Guarantee"}  # fmt: skip
"""The publication's fields as the form labels them."""


def _publish_words(line: str) -> str:
    """The API's one line with its field named as the publish form labels it."""
    for field, label in PUBLISH_WORDS.items():
        if line.startswith(field + ":") or line.startswith(field + "."):
            return label + line[len(field) :]
    return line


def _valid_key(owner: str, name: str) -> bool:
    """Whether an address's owner and name could name a shared model (else: not found)."""
    return is_owner_name(owner) and is_name(name)
