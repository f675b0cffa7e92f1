"""Reports and models: upload a CLI run's report, list models, list and read reports and
their pages (served under a CSP that runs nothing)."""

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi import Path as FastApiPath
from fastapi.responses import HTMLResponse

from panoramia.plugins import MODALITY_PATTERN
from panoramia.report.digest import with_own_verdict
from panoramia.report.html import undrawable
from panoramia.report.page_head import shown_name
from panoramia.service.api.report_page import summary_page
from panoramia.service.model_deletion import model_deletion_sentence, remove_run_folders
from panoramia.service.rfc3339 import DateOrDateTimeText
from panoramia.service.route_answers import headers, links, refusals
from panoramia.service.routing import RouteNeeds
from panoramia.service.schemas import Identifier as IdentifierType
from panoramia.service.schemas import (
    ModelDeleted,
    ModelRef,
    ModelView,
    QuotedFigure,
    ReportSummary,
    ReportUpload,
    ReportView,
)
from panoramia.service.schemas import Name as NameType
from panoramia.service.submission.command import RequestProblem
from panoramia.service.submission.usage import file_bytes
from panoramia.store.model_rows import ModelInUse
from panoramia.store.repository import ModelRef as StoredModelRef
from panoramia.store.repository import (
    Principal,
    ReportContent,
    ReportFilter,
    as_utc,
)
from panoramia.store.tables import Report

HTML_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox; "
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
"""Report pages are uploaded content: no scripts, no requests, no forms, no framing, an opaque
origin (``sandbox``); only inline styles and data images."""
NOT_FOUND = "not found"


def _summary(report: Report) -> ReportSummary:
    digest = report.digest if isinstance(report.digest, dict) else {}
    found = got if isinstance(got := digest.get("verdict"), dict) else {}
    quote = got if isinstance(got := found.get("quote"), dict) else None
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


ReportId = Annotated[IdentifierType, FastApiPath(description="The report's id.")]
ModelName = Annotated[NameType, FastApiPath(description="The model's name.")]


def reports_router(needs: RouteNeeds) -> APIRouter:
    """The report and model routes."""
    router = APIRouter(tags=["reports"])
    _add_report_upload(router, needs)
    _add_model_routes(router, needs)
    _add_report_listing(router, needs)
    _add_report_reading(router, needs)
    return router


def _stored_ref(model: ModelRef) -> StoredModelRef:
    """The store's reference to the model an upload names."""
    return StoredModelRef(model.name, model.version, model.declared, model.claim)


STORED = headers(Location="/v1/reports/{id}: the report stored.") | links(
    "report_id",
    GetReport=("GET", "/v1/reports/{report_id}"),
    GetReportPage=("GET", "/v1/reports/{report_id}/html"),
)
"""What ``POST /v1/reports``'s 201 says besides its body: where the report is, its page."""


def _add_report_upload(router: APIRouter, needs: RouteNeeds) -> None:
    """Add ``POST /v1/reports`` (a CLI run's report stored) to ``router``."""
    settings, store, rate_limit = needs.settings, needs.store, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]

    @router.post(
        "/v1/reports",
        status_code=201,
        tags=["reports"],
        responses=refusals(
            {507: "Past your storage quota (PANORAMIA_MAX_STORAGE_MB)."},
            {201: STORED},
        ),
    )
    @rate_limit
    def upload_report(
        request: Request, response: Response, body: ReportUpload, principal: Caller
    ) -> ReportSummary:
        """Store a report made by a CLI run (``report.json``, and its page's charts or, from
        an older run, its page); 422 where the page cannot be drawn from the report."""
        document = with_own_verdict(body.report.model_dump(mode="json"))
        parts = None
        if body.page_parts is not None:
            parts = body.page_parts.headed(shown_name(body.model.name, body.model.version))
            problem = undrawable(document, parts)
            if problem is not None:
                raise RequestProblem(("report",), problem)
        content = ReportContent(
            document=document, html=body.html, parts=parts,
            artifact_location=body.artifact_location,
        )  # fmt: skip
        report = store.add_report(
            principal,
            _stored_ref(body.model),
            content,
            max_bytes=settings.max_storage_bytes,
            file_bytes=file_bytes(store, settings, principal.contributor_id),
        )
        response.headers["Location"] = f"/v1/reports/{report.id}"
        return _summary(report)


def _add_model_routes(router: APIRouter, needs: RouteNeeds) -> None:
    """Add ``GET /v1/models`` (hers) and ``DELETE /v1/models/{model}`` to ``router``."""
    settings, store, rate_limit = needs.settings, needs.store, needs.rate_limit
    Caller = Annotated[Principal, needs.contributor()]

    @router.get("/v1/models", tags=["reports"])
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

    @router.delete(
        "/v1/models/{model}",
        tags=["reports"],
        responses=refusals({409: "One of its audits is queued or running."}),
    )
    @rate_limit
    def delete_model(
        request: Request,
        model: ModelName,
        principal: Caller,
        version: Annotated[NameType | None, Query()] = None,
    ) -> ModelDeleted:
        """Delete your model entry ``model`` (one ``version``, or every version) with its
        reports and finished audits and their run folders; 409 while one of its audits is
        queued or running, 404 where you have no such entry."""
        try:
            deleted = store.delete_model(principal, model, version)
        except ModelInUse as error:
            raise HTTPException(409, str(error)) from None
        if deleted is None:
            raise HTTPException(404, NOT_FOUND)
        remove_run_folders(settings, deleted.audits)
        return ModelDeleted(
            name=deleted.name, versions=deleted.versions, reports=deleted.reports,
            audits=len(deleted.audits), message=model_deletion_sentence(deleted),
        )  # fmt: skip


def _add_report_listing(router: APIRouter, needs: RouteNeeds) -> None:
    """Add ``GET /v1/models/{model}/reports`` (her reports of a model) to ``router``."""
    store = needs.store
    Caller = Annotated[Principal, needs.contributor()]

    @router.get("/v1/models/{model}/reports", tags=["reports"])
    def list_reports(
        model: ModelName,
        principal: Caller,
        latest: bool = False,
        since: Annotated[DateOrDateTimeText | None, Query(description="Stored at or after.")] = (
            None
        ),
        until: Annotated[DateOrDateTimeText | None, Query(description="Stored at or before.")] = (
            None
        ),
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


def _add_report_reading(router: APIRouter, needs: RouteNeeds) -> None:
    """Add ``GET /v1/reports/{id}`` (a report with its document) and ``GET
    /v1/reports/{id}/html`` (its page, under :data:`HTML_POLICY`) to ``router``."""
    store = needs.store
    Caller = Annotated[Principal, needs.contributor()]

    @router.get("/v1/reports/{report_id}", tags=["reports"])
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

    @router.get("/v1/reports/{report_id}/html", response_class=HTMLResponse, tags=["reports"])
    def get_report_html(report_id: ReportId, principal: Caller) -> HTMLResponse:
        """The report's page: the one stored with it, else one the service writes from its
        figures (:func:`~panoramia.service.api.report_page.summary_page`)."""
        page = store.get_report_html(principal, report_id)
        if page is None:
            report = store.get_report(principal, report_id, with_document=False)
            if report is None:
                raise HTTPException(404, NOT_FOUND)
            page = summary_page(_summary(report))
        headers = {"Content-Security-Policy": HTML_POLICY, "X-Content-Type-Options": "nosniff"}
        return HTMLResponse(page, headers=headers)
