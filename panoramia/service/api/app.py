"""The HTTP API (FastAPI). OpenAPI at ``/openapi.json``. FastAPI's interactive ``/docs`` and
``/redoc`` are off: they load a public CDN's script into the service's own origin (and show a
blank page where the service runs air-gapped); any OpenAPI viewer reads the JSON.

Every ``/v1`` route needs ``Authorization: Bearer <token>``. A contributor sees only what it
submitted or uploaded, and only its own models (two contributors' ``census/2`` are two models);
any other id or model answers 404 exactly as an unknown one does. An admin token sees
everything. A malformed body is answered 422 naming the field (never echoing the value); a
database that stays locked through the store's retries, 503 with ``Retry-After``.
"""

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import FastAPI
from slowapi.util import get_remote_address

from panoramia.service.api.audits import audits_router
from panoramia.service.api.auth import bearer_callers
from panoramia.service.api.errors import add_error_answers
from panoramia.service.api.headers import SafeHeaders
from panoramia.service.api.reports import HTML_POLICY, reports_router
from panoramia.service.api.request_limits import SpooledBody, make_limiter
from panoramia.service.api.service_routes import service_router
from panoramia.service.check_pool import CheckPool
from panoramia.service.console.pages import NotSignedIn, console_router, not_signed_in_redirect
from panoramia.service.routing import RouteNeeds
from panoramia.service.settings import ServiceSettings
from panoramia.service.uploads.routes import is_chunk, uploads_router
from panoramia.service.worker.queues import AuditQueue
from panoramia.store.repository import ReportStore


def create_app(
    settings: ServiceSettings,
    store: ReportStore,
    queue: AuditQueue,
    *,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
) -> FastAPI:
    """The API over ``store``, sending audits to ``queue``; ``lifespan`` (optional) runs around
    the server's life (:func:`panoramia.service.server.app_from_env` closes the queue there).
    One router per resource: service, audits, reports and models, uploads, the console."""
    app = FastAPI(
        title="panoramia-audit report service",
        version="1",
        description="Submit PANORAMIA audits and query per-model leakage reports.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    settings.spool_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    app.add_middleware(
        SpooledBody,
        max_bytes=settings.max_upload_bytes,
        spool_dir=settings.spool_dir,
        max_large_at_once=settings.max_parsing_uploads,
        streamed=is_chunk,
    )
    limiter = make_limiter(settings)
    app.state.limiter = limiter
    app.add_middleware(SafeHeaders)
    add_error_answers(app)
    caller, worker_caller = bearer_callers(store)
    checks = CheckPool(settings.check_slots)
    needs = RouteNeeds(
        settings, store, queue, caller, worker_caller, limiter.limit(settings.rate_limit), checks
    )
    for router in (service_router, audits_router, reports_router, uploads_router):
        app.include_router(router(needs))
    # Starlette types a handler as taking any Exception; this one takes its NotSignedIn.
    app.add_exception_handler(NotSignedIn, not_signed_in_redirect)  # type: ignore[arg-type]
    app.include_router(
        console_router(
            settings,
            store,
            report_policy=HTML_POLICY,
            rate_limit=limiter.limit(settings.rate_limit, key_func=get_remote_address),
            limit_by=lambda key: limiter.limit(settings.rate_limit, key_func=key),
            checks=checks,
            queue=queue,
        )
    )
    return app
