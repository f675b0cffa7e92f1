"""``/v1/audits``: submit an audit (checked, priced and counted against her quota at the
door), follow it, cancel it."""

import math
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi import Path as FastApiPath

from panoramia.service.routing import RouteNeeds
from panoramia.service.schemas import AuditRequest, AuditView, ModelRef, RepeatRun, RepeatView
from panoramia.service.schemas import Identifier as IdentifierType
from panoramia.service.submission.command import RequestProblem, audit_overrides, check_composes
from panoramia.service.submission.cost import CostEstimate, check_budget, estimate_cost
from panoramia.service.submission.repeats import repeat_summary, seeded_overrides
from panoramia.service.submission.usage import usage
from panoramia.service.uploads.naming import check_columns, portable_overrides, upload_resolver
from panoramia.store.repository import ModelRef as StoredModelRef
from panoramia.store.repository import Principal, StorageFull, as_utc
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
            seed=repeat.get("seed") if isinstance(repeat.get("seed"), int) else None,
            report_id=run["report_id"],
            level=verdict.get("level") if isinstance(verdict.get("level"), str) else None,
        ))  # fmt: skip
    return RepeatView(
        id=found["group"],
        model=ModelRef(
            name=first.model.name,
            version=first.model.version,
            declared=first.model.declared,
            claim=first.model.claim,
        ),
        runs=runs,
        ended=found["ended"],
        pooled=found["pooled"],
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
        audits = submit(body, principal)
        response.headers["Location"] = f"/v1/audits/{audits[0].id}"
        return _audit_view(audits[0], None)

    def submit(body: AuditRequest, principal: Principal) -> list[Audit]:
        """Check, price and queue the request's audits (one per repeat); raises what the
        API answers 4xx."""
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
        runs = seeded_overrides(overrides, body.repeats) if body.repeats > 1 else [overrides]
        composed = check_composes(runs[0], settings.limits)
        estimate = estimate_cost(composed)
        if not math.isfinite(estimate.total):  # every number was checked finite: a safeguard
            raise RequestProblem(("overrides",), "the audit's cost cannot be estimated")
        total = CostEstimate(estimate.stages * len(runs))  # each repeat counted in full
        kept = usage(store, settings, principal.contributor_id)
        if kept.total >= kept.quota_bytes:  # its report and files could not be kept
            raise StorageFull(kept.quota_bytes, kept.total, 0)
        common = body.model_dump(mode="json") | {"cost": estimate.total, "uploads": named}
        requests = [
            common | {
                "overrides_resolved": portable_overrides(run, settings.uploads_dir),
                **({"repeat": {"index": index, "of": len(runs), "seed": int(run[-1][5:])}}
                   if len(runs) > 1 else {}),
            }
            for index, run in enumerate(runs)
        ]  # fmt: skip
        audits = store.create_audits(
            principal,
            _stored_ref(body.model),
            requests,
            max_active=settings.limits.max_active_audits,
            budget=lambda active: check_budget(total, active, settings.limits.max_audit_cost),
        )
        for audit in audits:
            queue.submit(audit.id)
        return audits

    router.submit = submit  # type: ignore[attr-defined]  # the console's form submits here too

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
