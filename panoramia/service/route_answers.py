"""What a route declares of its own answers, for the OpenAPI document: the refusals only
its code knows (:func:`refusals`), the headers and links of its success (:func:`headers`,
:func:`links`), that it is rate-limited (:func:`counted`), and the one body every refusal but
422 answers (:class:`ErrorBody`). The routes of every package (``api``, ``uploads``) declare
with these; :mod:`panoramia.service.api.contract` derives the rest and completes the
document. It imports nothing of the service, so that any route module may import it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

RATE_LIMITED = "panoramia_rate_limited"
"""The attribute :func:`counted` sets on a rate-limited route's endpoint."""
Responses = dict[int | str, dict[str, Any]]


class ErrorBody(BaseModel):
    """What every refusal but a malformed request (422) answers."""

    detail: str = Field(description="One line: what was refused and why.")


WHY: dict[int, str] = {
    400: "The body is not JSON text (not UTF-8), or its Content-Length is not a number.",
    401: "No bearer token, or one the service does not know (revoked, expired), or not a "
    "worker's token on a worker's route.",
    403: "A worker's token: it reads running audits' inputs only.",
    404: "Nothing of yours by that id or name (another contributor's answers the same).",
    409: "The resource is in a state that refuses this now.",
    413: "The request body is larger than PANORAMIA_MAX_UPLOAD_MB.",
    429: "Past PANORAMIA_RATE_LIMIT for your token (or past your active audits or their "
    "cost budget, with Retry-After).",
    503: "The database stayed locked through the store's retries: retry after Retry-After.",
    507: "Past your storage quota (PANORAMIA_MAX_STORAGE_MB).",
}
"""Why the service answers each refusal; a route's own ``refusals`` may say more."""
HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"required": True, "schema": {"type": "string", "const": "Bearer"}}},
    429: {"Retry-After": {"required": False, "schema": {"type": "string", "pattern": r"^\d+$"}}},
    503: {"Retry-After": {"required": True, "schema": {"type": "string", "pattern": r"^\d+$"}}},
}


def counted(limit: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Callable[..., Any]:
    """``limit`` (slowapi's decorator), marking the endpoints it wraps as rate-limited."""

    def decorate(endpoint: Callable[..., Any]) -> Callable[..., Any]:
        limited = limit(endpoint)
        setattr(limited, RATE_LIMITED, True)
        return limited

    return decorate


def refusals(reasons: dict[int, str], success: Responses | None = None) -> Responses:
    """A route's own answers for ``responses=``: each refusal's status with why it is given;
    ``success`` (status → OpenAPI response fields) documents a success status further (its
    headers, links, or a second success's body)."""
    answers: Responses = {status: {"description": why} for status, why in reasons.items()}
    return answers | dict(success or {})


def headers(**named: str) -> dict[str, Any]:
    """Response headers always sent, for a success's entry in :func:`refusals`."""
    return {
        "headers": {
            name.replace("_", "-"): {
                "required": True,
                "description": why,
                "schema": {"type": "string"},
            }
            for name, why in named.items()
        }
    }


def links(parameter: str, **named: tuple[str, str]) -> dict[str, Any]:
    """OpenAPI links from a created resource's answer (its ``id``) to what reads or changes
    it: each name's (method, path), ``parameter`` the path's name for the id."""
    return {
        "links": {
            name: {
                "operationRef": "#/paths/"
                + path.replace("~", "~0").replace("/", "~1")
                + "/"
                + method.lower(),
                "parameters": {parameter: "$response.body#/id"},
            }
            for name, (method, path) in named.items()
        }
    }
