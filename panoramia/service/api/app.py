"""The HTTP API (FastAPI). OpenAPI at ``/openapi.json``, interactive docs at ``/docs``.

Every ``/v1`` route needs ``Authorization: Bearer <token>``. A contributor sees only what it
submitted or uploaded, and only its own models (two contributors' ``census/2`` are two models);
any other id or model answers 404 exactly as an unknown one does. An admin token sees
everything. A malformed body is answered 422 naming the field (never echoing the value); a
database that stays locked through the store's retries, 503 with ``Retry-After``.
"""

import math
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi import Path as FastApiPath
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from slowapi.errors import RateLimitExceeded
from slowapi.util import get_remote_address
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from panoramia.pipeline.registry import MODALITY_PATTERN
from panoramia.report.digest import with_own_verdict
from panoramia.service.api.request_limits import SpooledBody, make_limiter
from panoramia.service.console.pages import NotSignedIn, console_router, not_signed_in_redirect
from panoramia.service.schemas import (
    AuditRequest,
    AuditView,
    Health,
    ModelRef,
    ModelView,
    QuotedFigure,
    ReportSummary,
    ReportUpload,
    ReportView,
    UsageView,
)
from panoramia.service.schemas import Identifier as IdentifierType
from panoramia.service.schemas import Name as NameType
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.command import RequestProblem, audit_overrides, check_composes
from panoramia.service.submission.cost import OverBudget, check_budget, estimate_cost
from panoramia.service.submission.usage import file_bytes, usage
from panoramia.service.uploads.naming import portable_overrides, upload_resolver
from panoramia.service.uploads.routes import is_chunk, uploads_router
from panoramia.service.worker.queues import AuditQueue
from panoramia.store.database import current_revision
from panoramia.store.repository import ModelRef as StoredModelRef
from panoramia.store.repository import (
    Principal,
    ReportContent,
    ReportFilter,
    ReportStore,
    StorageFull,
    StoreBusy,
    TooManyAudits,
    as_utc,
    utcnow,
)
from panoramia.store.tables import Audit, Report

HTML_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox; "
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
"""Report pages are uploaded content: no scripts, no requests, no forms, no framing, an opaque
origin (``sandbox``); only inline styles and data images."""
NOT_FOUND = "not found"
RETRY_AFTER_S = 2


class PrincipalCache:
    """Token → principal for at most ``ttl_s`` seconds (never past the token's expiry): most
    requests authenticate without a query; a revoked token stops working within ``ttl_s``."""

    def __init__(self, store: ReportStore, ttl_s: float = 5.0):
        self.store, self.ttl_s = store, ttl_s
        self.entries: dict[str, tuple[float, Principal]] = {}

    async def lookup(self, token: str) -> Principal | None:
        now = time.monotonic()
        hit = self.entries.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        principal = await run_in_threadpool(self.store.authenticate, token)
        if principal is not None:
            if len(self.entries) > 10_000:
                self.entries.clear()
            ttl = self.ttl_s
            if principal.expires_at is not None:
                ttl = min(ttl, (principal.expires_at - utcnow()).total_seconds())
            self.entries[token] = (now + ttl, principal)
        return principal


def _validation_detail(error: RequestValidationError) -> list[dict]:
    """The errors' location, message and type, never the offending value (which may not even
    be JSON: NaN, a lone surrogate)."""
    detail = []
    for item in error.errors():
        location = [part if isinstance(part, int) else _printable(part) for part in item["loc"]]
        detail.append(
            {"loc": location, "msg": _printable(item.get("msg", "")), "type": item.get("type")}
        )
    return detail


def _printable(value: object) -> str:
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")[:500]


def _summary(report: Report) -> ReportSummary:
    digest = report.digest if isinstance(report.digest, dict) else {}
    found = digest.get("verdict") if isinstance(digest.get("verdict"), dict) else {}
    quote = found.get("quote") if isinstance(found.get("quote"), dict) else None
    return ReportSummary(
        id=report.id,
        model=report.model.name,
        version=report.model.version,
        modality=report.modality,
        level=found.get("level"),
        headline=found.get("headline"),
        quoted=QuotedFigure(**quote) if quote else None,
        p_value=found.get("p_value"),
        c_lb=report.c_lb,
        c_plus_eps_lb=report.c_plus_eps_lb,
        eps_tilde=report.eps_tilde,
        created_at=as_utc(report.created_at),
        audit_id=report.audit_id,
    )


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


def create_app(
    settings: ServiceSettings,
    store: ReportStore,
    queue: AuditQueue,
    *,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
) -> FastAPI:
    """The API over ``store``, sending audits to ``queue``; ``lifespan`` (optional) runs around
    the server's life (:func:`panoramia.service.server.app_from_env` closes the queue there)."""
    app = FastAPI(
        title="panoramia-audit report service",
        version="1",
        description="Submit PANORAMIA audits and query per-model leakage reports.",
        lifespan=lifespan,
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
    principals = PrincipalCache(store)
    bearer = HTTPBearer(auto_error=False, description="A token from `panoramia tokens create`.")

    @app.exception_handler(RateLimitExceeded)
    async def _too_many(_request: Request, error: RateLimitExceeded) -> JSONResponse:
        return JSONResponse({"detail": f"rate limit exceeded: {error.detail}"}, 429)

    @app.exception_handler(RequestProblem)
    async def _problem(_request: Request, error: RequestProblem) -> JSONResponse:
        detail = [{"loc": ["body", *error.field], "msg": error.message, "type": "value_error"}]
        return JSONResponse({"detail": detail}, 422)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_detail(error)}, 422)

    @app.exception_handler(RecursionError)
    async def _too_deep(_request: Request, _error: RecursionError) -> JSONResponse:
        detail = [{"loc": ["body"], "msg": "nested too deeply", "type": "value_error"}]
        return JSONResponse({"detail": detail}, 422)

    @app.exception_handler(TooManyAudits)
    async def _too_many_audits(_request: Request, error: TooManyAudits) -> JSONResponse:
        message = f"{error} (PANORAMIA_MAX_ACTIVE_AUDITS): wait for one to end"
        return JSONResponse({"detail": message}, 429, {"Retry-After": "60"})

    @app.exception_handler(OverBudget)
    async def _over_budget(_request: Request, error: OverBudget) -> JSONResponse:
        if error.alone:  # it can never run: a bad request
            detail = [{"loc": ["body", "overrides"], "msg": str(error), "type": "value_error"}]
            return JSONResponse({"detail": detail}, 422)
        return JSONResponse(
            {"detail": f"{error}: wait for one of yours to end"}, 429, {"Retry-After": "60"}
        )

    @app.exception_handler(StorageFull)
    async def _storage_full(_request: Request, error: StorageFull) -> JSONResponse:
        return JSONResponse({"detail": f"{error} (PANORAMIA_MAX_STORAGE_MB)"}, 507)

    @app.exception_handler(StoreBusy)
    @app.exception_handler(OperationalError)
    async def _busy(_request: Request, _error: Exception) -> JSONResponse:
        return JSONResponse(
            {"detail": "the database is busy; retry shortly"},
            503,
            {"Retry-After": str(RETRY_AFTER_S)},
        )

    async def caller(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        principal = await principals.lookup(credentials.credentials) if credentials else None
        if principal is None:
            raise HTTPException(
                401, "missing or unknown bearer token", {"WWW-Authenticate": "Bearer"}
            )
        if principal.is_worker:
            raise HTTPException(403, "a worker's token reads running audits' inputs only")
        return principal

    async def worker_caller(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        principal = await principals.lookup(credentials.credentials) if credentials else None
        if principal is None or not principal.is_worker:
            raise HTTPException(
                401, "a worker's token is needed here", {"WWW-Authenticate": "Bearer"}
            )
        return principal

    Caller = Annotated[Principal, Depends(caller)]
    AuditId = Annotated[IdentifierType, FastApiPath(description="The audit's id.")]
    ReportId = Annotated[IdentifierType, FastApiPath(description="The report's id.")]
    ModelName = Annotated[NameType, FastApiPath(description="The model's name.")]

    @app.get("/healthz", tags=["service"])
    def healthz() -> Health:
        with store.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return Health(
            status="ok",
            database="ok",
            queue=queue.name,
            schema_revision=current_revision(store.engine),
        )

    @app.post("/v1/audits", status_code=202, tags=["audits"])
    @limiter.limit(settings.rate_limit)
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

    @app.get("/v1/audits/{audit_id}", tags=["audits"])
    def get_audit(audit_id: AuditId, principal: Caller) -> AuditView:
        audit = store.get_audit(principal, audit_id)
        if audit is None:
            raise HTTPException(404, NOT_FOUND)
        return _audit_view(audit, store.report_of_audit(audit.id))

    @app.delete("/v1/audits/{audit_id}", tags=["audits"])
    def cancel_audit(audit_id: AuditId, principal: Caller) -> AuditView:
        """Cancel: a queued audit at once, a running one when its worker next checks (seconds)."""
        audit = store.request_cancel(principal, audit_id)
        if audit is None:
            raise HTTPException(404, NOT_FOUND)
        if audit.status in ("succeeded", "failed"):
            raise HTTPException(409, f"audit already {audit.status}")
        return _audit_view(audit, None)

    @app.post("/v1/reports", status_code=201, tags=["reports"])
    @limiter.limit(settings.rate_limit)
    def upload_report(
        request: Request, response: Response, body: ReportUpload, principal: Caller
    ) -> ReportSummary:
        """Store a report made by a CLI run (``report.json``, optionally ``report.html``)."""
        content = ReportContent(
            document=with_own_verdict(body.report.model_dump(mode="json")),
            html=body.html,
            artifact_location=body.artifact_location,
        )
        report = store.add_report(
            principal,
            _stored_ref(body.model),
            content,
            max_bytes=settings.max_storage_bytes,
            file_bytes=file_bytes(store, settings, principal.contributor_id),
        )
        response.headers["Location"] = f"/v1/reports/{report.id}"
        return _summary(report)

    @app.get("/v1/models", tags=["reports"])
    def list_models(
        principal: Caller,
        response: Response,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    ) -> list[ModelView]:
        """Your models (an admin: everyone's) by name and version, with their report counts,
        ``limit`` at a time; a full page carries a ``Link`` to the next."""
        models = store.list_models(principal, limit=limit, offset=offset)
        if len(models) == limit:
            response.headers["Link"] = (
                f'</v1/models?limit={limit}&offset={offset + limit}>; rel="next"'
            )
        return [ModelView(**vars(m)) for m in models]

    @app.get("/v1/usage", tags=["service"])
    @limiter.limit(settings.rate_limit)
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

    @app.get("/v1/models/{model}/reports", tags=["reports"])
    def list_reports(
        model: ModelName,
        principal: Caller,
        latest: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
        modality: Annotated[str | None, Query(pattern=MODALITY_PATTERN)] = None,
        version: Annotated[NameType | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    ) -> list[ReportSummary]:
        """Your reports of ``model``, newest first (``latest``: only the newest)."""
        where = ReportFilter(latest, since, until, modality, version, limit, offset)
        reports = store.list_reports(principal, model, where)
        if reports is None:
            raise HTTPException(404, NOT_FOUND)
        return [_summary(r) for r in reports]

    @app.get("/v1/reports/{report_id}", tags=["reports"])
    def get_report(report_id: ReportId, principal: Caller) -> ReportView:
        report = store.get_report(principal, report_id)
        if report is None:
            raise HTTPException(404, NOT_FOUND)
        return ReportView(
            **_summary(report).model_dump(),
            artifact_location=report.artifact_location,
            declared=report.model.declared,
            claim=report.model.claim,
            document=report.document,
        )

    @app.get("/v1/reports/{report_id}/html", response_class=HTMLResponse, tags=["reports"])
    def get_report_html(report_id: ReportId, principal: Caller) -> HTMLResponse:
        page = store.get_report_html(principal, report_id)
        if page is None:
            raise HTTPException(404, NOT_FOUND)
        headers = {"Content-Security-Policy": HTML_POLICY, "X-Content-Type-Options": "nosniff"}
        return HTMLResponse(page, headers=headers)

    app.include_router(
        uploads_router(settings, store, caller, limiter.limit(settings.rate_limit), worker_caller)
    )
    app.add_exception_handler(NotSignedIn, not_signed_in_redirect)
    app.include_router(
        console_router(
            settings,
            store,
            report_policy=HTML_POLICY,
            rate_limit=limiter.limit(settings.rate_limit, key_func=get_remote_address),
        )
    )
    return app
