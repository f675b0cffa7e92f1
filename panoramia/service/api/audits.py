"""``/v1/audits``: submit an audit (checked, priced and counted against her quota at the
door), follow it, cancel it."""

import math
from typing import Annotated

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi import Path as FastApiPath

from panoramia.service.routing import RouteNeeds
from panoramia.service.schemas import AuditRequest, AuditView, ModelRef
from panoramia.service.schemas import Identifier as IdentifierType
from panoramia.service.submission.command import RequestProblem, audit_overrides, check_composes
from panoramia.service.submission.cost import check_budget, estimate_cost
from panoramia.service.submission.usage import usage
from panoramia.service.uploads.naming import check_columns, portable_overrides, upload_resolver
from panoramia.store.repository import ModelRef as StoredModelRef
from panoramia.store.repository import StorageFull, as_utc
from panoramia.store.tables import Audit
from panoramia.store.uploads import UploadRows

NOT_FOUND = "not found"


def _audit_view(audit: Audit, report_id: str | None) -> AuditView:
    request = {k: v for k, v in audit.request.items() if k != "overrides_resolved"}
    return AuditView(
        id=audit.id,
        status=audit.status,
        model=ModelRef(
            name=audit.model.name,
            version=audit.model.version,
            declared=audit.model.declared,
            claim=audit.model.claim,
        ),
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
    )


def _stored_ref(model: ModelRef) -> StoredModelRef:
    return StoredModelRef(model.name, model.version, model.declared, model.claim)


def audits_router(needs: RouteNeeds) -> APIRouter:
    """The audit routes, sending audits to ``queue``."""
    router = APIRouter(tags=["audits"])
    settings, store, queue, rate_limit = needs.settings, needs.store, needs.queue, needs.rate_limit
    Caller = needs.contributor()
    AuditId = Annotated[IdentifierType, FastApiPath(description="The audit's id.")]

    @router.post("/v1/audits", status_code=202, tags=["audits"])
    @rate_limit
    def submit_audit(
        request: Request, response: Response, body: AuditRequest, principal: Caller
    ) -> AuditView:
        """Queue an audit; poll ``GET /v1/audits/{id}`` for its status and progress."""
        named: dict[str, str] = {}
        overrides = audit_overrides(
            body,
            contributor=principal.name,
            data_dir=settings.data_dir,
            models_dir=settings.models_dir,
            allow_torchscript=settings.trust_torchscript,
            uploads=upload_resolver(settings, store, principal.contributor_id, named),
        )
        found = UploadRows(store)
        check_columns(body.data, {role: found.get(upload_id) for role, upload_id in named.items()})
        composed = check_composes(overrides, settings.limits)
        estimate = estimate_cost(composed)
        if not math.isfinite(estimate.total):  # every number was checked finite: a safeguard
            raise RequestProblem(("overrides",), "the audit's cost cannot be estimated")
        kept = usage(store, settings, principal.contributor_id)
        if kept.total >= kept.quota_bytes:  # its report and files could not be kept
            raise StorageFull(kept.quota_bytes, kept.total, 0)
        stored = body.model_dump(mode="json") | {
            "overrides_resolved": portable_overrides(overrides, settings.uploads_dir),
            "cost": estimate.total,
            "uploads": named,
        }
        audit = store.create_audit(
            principal,
            _stored_ref(body.model),
            stored,
            max_active=settings.limits.max_active_audits,
            budget=lambda active: check_budget(estimate, active, settings.limits.max_audit_cost),
        )
        queue.submit(audit.id)
        response.headers["Location"] = f"/v1/audits/{audit.id}"
        return _audit_view(audit, None)

    @router.get("/v1/audits/{audit_id}", tags=["audits"])
    def get_audit(audit_id: AuditId, principal: Caller) -> AuditView:
        audit = store.get_audit(principal, audit_id)
        if audit is None:
            raise HTTPException(404, NOT_FOUND)
        return _audit_view(audit, store.report_of_audit(audit.id))

    @router.delete("/v1/audits/{audit_id}", tags=["audits"])
    def cancel_audit(audit_id: AuditId, principal: Caller) -> AuditView:
        """Cancel: a queued audit at once, a running one when its worker next checks (seconds)."""
        audit = store.request_cancel(principal, audit_id)
        if audit is None:
            raise HTTPException(404, NOT_FOUND)
        if audit.status in ("succeeded", "failed"):
            raise HTTPException(409, f"audit already {audit.status}")
        return _audit_view(audit, None)

    return router
