"""``/v1/shared-models``: publish a model for others to audit, list those you may audit, read
a version's per-model leakage report (docs/SPEC.md §3.3), withdraw a version, and choose how
you take part in one. A version you may not see answers 404 on every route, as one that does
not exist; what its report shows you is :func:`panoramia.report.shared_leakage.view_for`'s."""

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi import Path as FastApiPath

from panoramia.report.shared_leakage import ModelLeakage, VersionLeakage
from panoramia.service.route_answers import headers, refusals
from panoramia.service.routing import RouteNeeds
from panoramia.service.schemas import Name as NameType
from panoramia.service.schemas import OwnerName as OwnerNameType
from panoramia.service.schemas import (
    ParticipationView,
    SharedModelView,
    SharedPublication,
)
from panoramia.service.shared_models import leakage_for, model_leakage, publication_from
from panoramia.store.repository import Principal
from panoramia.store.shared_rows import SharedEntry, SharedFileGone, SharedModelExists

NOT_FOUND = "not found"
Owner = Annotated[OwnerNameType, FastApiPath(description="The owner's contributor name.")]
ModelName = Annotated[NameType, FastApiPath(description="The shared model's name.")]
Version = Annotated[NameType, FastApiPath(description="The version.")]


def shared_view(entry: SharedEntry) -> SharedModelView:
    """The API's view of a listing entry (the audience for its owner only)."""
    return SharedModelView(
        owner=entry.owner, name=entry.name, version=entry.version, modality=entry.modality,
        claim=entry.claim, declared=entry.declared, published_at=entry.published_at,
        withdrawn=entry.withdrawn, mine=entry.mine,
        audience=entry.audience if entry.sees_audience else None,
        names=list(entry.names) if entry.sees_audience and entry.audience == "named" else None,
        audience_size=entry.audience_size,
    )  # fmt: skip


def shared_models_router(needs: RouteNeeds) -> APIRouter:
    """The shared models' routes."""
    router = APIRouter(tags=["shared models"])
    settings, store, rate_limit = needs.settings, needs.store, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]

    def visible(principal: Principal, owner: str, name: str, version: str) -> SharedEntry:
        return visible_version(needs, principal, owner, name, version)

    @router.post(
        "/v1/shared-models",
        status_code=201,
        responses=refusals(
            {
                403: "A model folder the operator placed is published by an admin only.",
                404: "No model upload of yours by that name (or no placed folder).",
                409: "You already published this name and version, or the upload has not "
                "fully arrived or is being checked.",
            },
            {201: headers(Location="/v1/shared-models/{owner}/{name}/{version}/leakage")},
        ),
    )
    @rate_limit
    def publish(
        request: Request, response: Response, body: SharedPublication, principal: Caller
    ) -> SharedModelView:
        """Publish one of your model uploads as a shared model version, with the guarantee
        you declare and who may audit it."""
        publication = publication_from(settings, store, principal, body)
        try:
            entry = store.publish(principal, publication)
        except (SharedModelExists, SharedFileGone) as error:
            raise HTTPException(409, str(error)) from None
        owner = quote(entry.owner, safe="")  # a header is Latin-1: the name percent-encoded
        response.headers["Location"] = (
            f"/v1/shared-models/{owner}/{entry.name}/{entry.version}/leakage"
        )
        return shared_view(entry)

    @router.get("/v1/shared-models")
    def list_shared(principal: Caller) -> list[SharedModelView]:
        """The shared model versions you may audit and those you published: owner, name,
        version, claim, when published (never a file, a path or an upload)."""
        return [shared_view(entry) for entry in store.list_shared(principal)]

    @router.get("/v1/shared-models/{owner}/{name}")
    @rate_limit
    def get_model_leakage(
        request: Request, owner: Owner, name: ModelName, principal: Caller
    ) -> ModelLeakage:
        """Every version you may see of a shared model, its leakage reports side by side."""
        found = model_leakage(store, principal, owner, name)
        if found is None:
            raise HTTPException(404, NOT_FOUND)
        return found

    @router.get("/v1/shared-models/{owner}/{name}/{version}/leakage")
    @rate_limit
    def get_leakage(
        request: Request, owner: Owner, name: ModelName, version: Version, principal: Caller
    ) -> VersionLeakage:
        """A version's per-model leakage report, as you may read it (docs/SPEC.md §3.3,
        SECURITY.md "Shared models")."""
        return leakage_for(store, principal, visible(principal, owner, name, version))

    @router.delete(
        "/v1/shared-models/{owner}/{name}/{version}",
        responses=refusals({403: "Only its owner withdraws a version."}),
    )
    @rate_limit
    def withdraw(
        request: Request, owner: Owner, name: ModelName, version: Version, principal: Caller
    ) -> SharedModelView:
        """Withdraw your version: no new audit may name it; its audits and reports stay
        with their contributors, and its leakage report stays readable."""
        entry = visible(principal, owner, name, version)
        if not entry.mine:
            raise HTTPException(403, "only its owner withdraws a shared model version")
        store.withdraw_shared(principal, name, version)
        return shared_view(visible(principal, owner, name, version))

    _add_participation(router, needs)
    return router


def visible_version(
    needs: RouteNeeds, principal: Principal, owner: str, name: str, version: str
) -> SharedEntry:
    """The version, where ``principal`` may see it; 404 otherwise (as for none)."""
    entry = needs.store.find_shared(principal, owner, name, version)
    if entry is None:
        raise HTTPException(404, NOT_FOUND)
    return entry


def _add_participation(router: APIRouter, needs: RouteNeeds) -> None:
    """Add ``PUT /v1/shared-models/{owner}/{name}/{version}/participation`` to ``router``."""
    store, rate_limit = needs.store, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]

    @router.put(
        "/v1/shared-models/{owner}/{name}/{version}/participation",
        responses=refusals({409: "You have not audited this version."}),
    )
    @rate_limit
    def participate(
        request: Request,
        owner: Owner,
        name: ModelName,
        version: Version,
        principal: Caller,
        named: Annotated[
            bool | None, Query(description="Show your name to its owner (else a pseudonym).")
        ] = None,
        withdrawn: Annotated[
            bool | None,
            Query(description="Take your audits out of its leakage report (false: put back)."),
        ] = None,
    ) -> ParticipationView:
        """Choose whether its owner sees your name (else a pseudonym), and whether your
        audits enter its leakage report (neither given: read your choices)."""
        entry = visible_version(needs, principal, owner, name, version)
        if not store.set_participation(principal, entry.id, named=named, withdrawn=withdrawn):
            raise HTTPException(409, "you have not audited this version")
        row = store.participation(principal, entry.id)
        assert row is not None
        return ParticipationView(
            pseudonym=row.pseudonym, named=row.named, withdrawn=row.withdrawn_at is not None
        )
