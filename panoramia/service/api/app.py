"""The HTTP API (FastAPI). OpenAPI at ``/openapi.json``. FastAPI's interactive ``/docs`` and
``/redoc`` are off: they load a public CDN's script into the service's own origin (and show a
blank page where the service runs air-gapped); any OpenAPI viewer reads the JSON.

Every ``/v1`` route needs ``Authorization: Bearer <token>``. A contributor sees only what it
submitted or uploaded, and only its own models (two contributors' ``census/2`` are two models);
any other id or model answers 404 exactly as an unknown one does. An admin token sees
everything. A malformed body is answered 422 naming the field (never echoing the value); a
database that stays locked through the store's retries, 503 with ``Retry-After``. The OpenAPI
document lists every status each route gives, with its body, and the rules its bodies are
held to (:mod:`panoramia.service.api.contract`).
"""

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI
from slowapi.util import get_remote_address

from panoramia.service.api.audits import audits_router
from panoramia.service.api.auth import bearer_callers
from panoramia.service.api.contract import complete_document, route_refusals
from panoramia.service.api.errors import add_error_answers, add_method_answers
from panoramia.service.api.headers import SafeHeaders
from panoramia.service.api.reports import HTML_POLICY, reports_router
from panoramia.service.api.request_limits import SpooledBody, make_limiter
from panoramia.service.api.service_routes import service_router
from panoramia.service.api.shared_models import shared_models_router
from panoramia.service.check_pool import CheckPool
from panoramia.service.console.pages import NotSignedIn, console_router, not_signed_in_redirect
from panoramia.service.route_answers import counted
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
    One router per resource: service, audits, reports and models, uploads, shared models,
    the console."""
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
        settings, store, queue, caller, worker_caller,
        counted(limiter.limit(settings.rate_limit)), checks,
    )  # fmt: skip
    routers = [make(needs) for make in (service_router, audits_router, reports_router,
                                        uploads_router, shared_models_router)]  # fmt: skip
    for router in routers:
        app.include_router(router)
    refused = route_refusals(
        (route for router in routers for route in router.routes), caller, worker_caller
    )

    def openapi() -> dict[str, Any]:
        """FastAPI's document, completed once (:func:`complete_document`)."""
        if app.openapi_schema is None:
            app.openapi_schema = complete_document(
                FastAPI.openapi(app),
                refused,
                max_file_bytes=min(settings.max_file_bytes, settings.max_storage_bytes),
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    # Starlette types a handler as taking any Exception; this one takes its NotSignedIn.
    app.add_exception_handler(NotSignedIn, not_signed_in_redirect)  # type: ignore[arg-type]
    console = console_router(
        settings,
        store,
        report_policy=HTML_POLICY,
        rate_limit=limiter.limit(settings.rate_limit, key_func=get_remote_address),
        limit_by=lambda key: limiter.limit(settings.rate_limit, key_func=key),
        checks=checks,
        queue=queue,
    )
    app.include_router(console)
    add_method_answers(app, [route for router in [*routers, console] for route in router.routes])
    return app
