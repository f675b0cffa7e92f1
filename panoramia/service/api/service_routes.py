"""The service's own routes: its health, and what a contributor keeps against her quota."""

from typing import Annotated

from fastapi import APIRouter, Request
from sqlalchemy import text

from panoramia.service.routing import RouteNeeds
from panoramia.service.schemas import Health, UsageView
from panoramia.service.submission.usage import usage
from panoramia.store.database import current_revision
from panoramia.store.repository import Principal


def service_router(needs: RouteNeeds) -> APIRouter:
    """``/healthz`` and ``/v1/usage``."""
    router = APIRouter(tags=["service"])
    settings, store, queue, rate_limit = needs.settings, needs.store, needs.queue, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]

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
