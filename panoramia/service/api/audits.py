"""``/v1/audits``: submit an audit (checked, priced and counted against her quota at the
door), follow it, cancel it."""

from typing import Annotated, Any, cast

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi import Path as FastApiPath

from panoramia.service.audit_submission import quote_audits, submit_audits
from panoramia.service.route_answers import headers, links, refusals
from panoramia.service.routing import RouteNeeds
from panoramia.service.schemas import (
    AuditQuote,
    AuditRequest,
    AuditView,
    ModelRef,
    RepeatRun,
    RepeatView,
)
from panoramia.service.schemas import Identifier as IdentifierType
from panoramia.service.submission.repeats import repeat_summary
from panoramia.store.repository import Principal, as_utc
from panoramia.store.tables import Audit

NOT_FOUND = "not found"


def _model_view(audit: Audit) -> ModelRef:
    """The audited model as the API shows it."""
    found = audit.model
    return ModelRef(
        name=found.name, version=found.version, declared=found.declared, claim=found.claim
    )


SERVICE_ONLY = ("overrides_resolved", "plan")
"""What a stored request keeps for the service alone (its command line, its plan: server
paths of operator-placed files), never shown."""


def _audit_view(audit: Audit, report_id: str | None) -> AuditView:
    request = {k: v for k, v in audit.request.items() if k not in SERVICE_ONLY}
    return AuditView(
        id=audit.id,
        status=cast(Any, audit.status),  # a str column; pydantic checks it against the Literal
        model=_model_view(audit),
        request=request,
        progress=audit.progress or {},
        error=audit.error,
        attempts=audit.attempts,
        cancel_requested=audit.cancel_requested,
        timings=audit.timings or {},
        created_at=as_utc(audit.created_at),
        started_at=as_utc(audit.started_at),
        finished_at=as_utc(audit.finished_at),
        report_id=report_id,
        repeat_group=audit.repeat_group,
    )


def repeat_view(found: dict[str, Any]) -> RepeatView:
    """The API's view of :func:`~panoramia.service.submission.repeats.repeat_summary`."""
    first = found["audits"][0]
    runs = []
    for run in found["runs"]:
        audit, verdict = run["audit"], run["verdict"] or {}
        repeat = (audit.request or {}).get("repeat") or {}
        runs.append(RepeatRun(
            audit_id=audit.id, status=audit.status,
            role="control" if repeat.get("role") == "control" else "target",
            seed=repeat.get("seed") if isinstance(repeat.get("seed"), int) else None,
            report_id=run["report_id"],
            level=verdict.get("level") if isinstance(verdict.get("level"), str) else None,
        ))  # fmt: skip
    return RepeatView(
        id=found["group"],
        model=_model_view(first),
        runs=runs,
        ended=found["ended"],
        pooled=found["pooled"],
        paired=found["paired"],
    )


DOOR_REFUSALS = {
    404: "A model or data the request names is none of your uploads, nor a file the operator "
    "placed for you.",
    409: "An upload the request names has not fully arrived or is being checked, or a file "
    "name it gives is that of several of your uploads.",
    507: "Past your storage quota (PANORAMIA_MAX_STORAGE_MB): its report could not be kept.",
}
"""What the door (:func:`~panoramia.service.audit_submission.check_request` and the price's
quota check) refuses, for a submission and a quote alike."""
SUBMITTED = headers(Location="/v1/audits/{id}, or /v1/repeats/{id} for repeats.") | links(
    "audit_id",
    GetAudit=("GET", "/v1/audits/{audit_id}"),
    CancelAudit=("DELETE", "/v1/audits/{audit_id}"),
)
"""What ``POST /v1/audits``'s 202 says besides its body: where the audit is, what reads it."""


def audits_router(needs: RouteNeeds) -> APIRouter:
    """The audit routes, sending audits to ``queue``."""
    router = APIRouter(tags=["audits"])
    settings, store, queue, rate_limit = needs.settings, needs.store, needs.queue, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]
    AuditId = Annotated[IdentifierType, FastApiPath(description="The audit's id.")]

    @router.post(
        "/v1/audits",
        status_code=202,
        tags=["audits"],
        responses=refusals(
            DOOR_REFUSALS
            | {
                429: "Past PANORAMIA_RATE_LIMIT, past PANORAMIA_MAX_ACTIVE_AUDITS audits "
                "queued or running, or past PANORAMIA_MAX_AUDIT_COST with yours (Retry-After).",
            },
            {202: SUBMITTED},
        ),
    )
    @rate_limit
    def submit_audit(
        request: Request, response: Response, body: AuditRequest, principal: Caller
    ) -> AuditView:
        """Queue an audit; poll ``GET /v1/audits/{id}`` for its status and progress."""
        audits = submit_audits(settings, store, queue, principal, body)
        group = audits[0].repeat_group
        response.headers["Location"] = (
            f"/v1/repeats/{group}" if group else f"/v1/audits/{audits[0].id}"
        )
        return _audit_view(audits[0], None)

    @router.post(
        "/v1/quotes",
        tags=["audits"],
        responses=refusals(DOOR_REFUSALS),
    )
    @rate_limit
    def quote_audit(request: Request, body: AuditRequest, principal: Caller) -> AuditQuote:
        """Check and price a request as ``POST /v1/audits`` would, queueing nothing: its
        estimate beside her budget, and the audit sizes her data and the limits allow, each
        with the members the game would score, its price and the overrides that ask for it."""
        return AuditQuote.model_validate(quote_audits(settings, store, principal, body))

    @router.get("/v1/audits/{audit_id}", tags=["audits"])
    def get_audit(audit_id: AuditId, principal: Caller) -> AuditView:
        audit = store.get_audit(principal, audit_id)
        if audit is None:
            raise HTTPException(404, NOT_FOUND)
        return _audit_view(audit, store.report_of_audit(audit.id))

    @router.get("/v1/repeats/{group_id}", tags=["audits"])
    def get_repeats(group_id: AuditId, principal: Caller) -> RepeatView:
        """A group of repeats: its audits and, once all have ended, the pooled verdict."""
        found = repeat_summary(store, principal, group_id)
        if found is None:
            raise HTTPException(404, NOT_FOUND)
        return repeat_view(found)

    @router.delete(
        "/v1/audits/{audit_id}",
        tags=["audits"],
        responses=refusals({409: "The audit has already succeeded or failed."}),
    )
    def cancel_audit(audit_id: AuditId, principal: Caller) -> AuditView:
        """Cancel: a queued audit at once, a running one when its worker next checks (seconds).
        The audit is not removed: ``GET`` still reads it, ``cancelled`` (``DELETE
        /v1/models/{model}`` removes a model's audits)."""
        audit = store.request_cancel(principal, audit_id)
        if audit is None:
            raise HTTPException(404, NOT_FOUND)
        if audit.status in ("succeeded", "failed"):
            raise HTTPException(409, f"audit already {audit.status}")
        return _audit_view(audit, None)

    return router
