"""The service's own routes: its health, and what a contributor keeps against her quota."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from sqlalchemy import text

from panoramia.service.schemas import Health, UsageView
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.usage import usage
from panoramia.service.worker.queues import AuditQueue
from panoramia.store.database import current_revision
from panoramia.store.repository import Principal, ReportStore


def service_router(
    settings: ServiceSettings,
    store: ReportStore,
    queue: AuditQueue,
    caller: Callable[..., Any],
    rate_limit: Callable[[Callable[..., Any]], Callable[..., Any]],
) -> APIRouter:
    """``/healthz`` and ``/v1/usage``."""
    router = APIRouter(tags=["service"])
    Caller = Annotated[Principal, Depends(caller)]

    @router.get("/healthz")
    def healthz() -> Health:
        with store.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return Health(
            status="ok",
            database="ok",
            queue=queue.name,
            schema_revision=current_revision(store.engine),
        )

    @router.get("/v1/usage")
    @rate_limit
    def get_usage(request: Request, principal: Caller) -> UsageView:
        """What you keep on the service against your quota, and your queued work's cost."""
        kept = usage(store, settings, principal.contributor_id)
        return UsageView(
            database_bytes=kept.database_bytes,
            file_bytes=kept.file_bytes,
            quota_bytes=kept.quota_bytes,
            queued_cost=store.active_cost(principal.contributor_id),
            cost_budget=settings.limits.max_audit_cost,
        )

    return router
