"""How the API answers what goes wrong: one JSON shape per cause, never a traceback, never
the offending value (which may not even be JSON: NaN, a lone surrogate)."""

from collections.abc import Iterable

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from slowapi.errors import RateLimitExceeded
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from panoramia.service.submission.command import RequestProblem
from panoramia.service.submission.cost import OverBudget
from panoramia.store.repository import StorageFull, StoreBusy, TooManyAudits
from panoramia.store.shared_rows import SharedModelWithdrawn

RETRY_AFTER_S = 2


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


def add_method_answers(app: FastAPI, routes: Iterable[object]) -> None:
    """A method a path does not take answers 405 with ``Allow`` naming every method its
    routes take (Starlette's names only those of the first route that matched the path)."""
    paths = [
        (route.path_regex, route.methods or set())
        for route in routes
        if isinstance(route, APIRoute)
    ]

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> Response:
        if error.status_code == 405:
            path = request.url.path
            taken = {method for regex, methods in paths if regex.match(path) for method in methods}
            if taken:
                error.headers = {**(error.headers or {}), "Allow": ", ".join(sorted(taken))}
        return await http_exception_handler(request, error)


def add_error_answers(app: FastAPI) -> None:
    """Register the API's answer to each cause of a refusal on ``app``."""

    @app.exception_handler(RateLimitExceeded)
    async def _too_many(_request: Request, error: RateLimitExceeded) -> JSONResponse:
        return JSONResponse({"detail": f"rate limit exceeded: {error.detail}"}, 429)

    @app.exception_handler(RequestProblem)
    async def _problem(_request: Request, error: RequestProblem) -> JSONResponse:
        if error.status != 422:  # an upload it names: none (404), not ready (409)
            where = ".".join(str(part) for part in error.field)
            return JSONResponse({"detail": f"{where}: {error.message}"}, error.status)
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

    @app.exception_handler(SharedModelWithdrawn)
    async def _withdrawn(_request: Request, error: SharedModelWithdrawn) -> JSONResponse:
        return JSONResponse({"detail": f"shared: {error}"}, 409)

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
