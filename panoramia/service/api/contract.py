"""The API's contract: every status each route answers, with its body, in the OpenAPI document.

Most of a route's refusals follow from what it is built with, and are derived here, in one
place, from the route itself (:func:`derived_refusals`): a contributor's token (401 none or
unknown, 403 a worker's), a worker's token (401), an id or name in the path (404: nothing of
hers by it), a JSON body (400 not JSON text, 413 past ``PANORAMIA_MAX_UPLOAD_MB``, 422 not
what the schema says), a rate limit (429,
:func:`~panoramia.service.route_answers.counted`), the database (503 while it stays locked).
What only a route's own code knows (409 while something is in use, 507 past her quota, a
second success status) it declares with ``responses=refusals(...)``
(:mod:`panoramia.service.route_answers`). Every refusal but 422 (FastAPI's validation shape)
answers :class:`~panoramia.service.route_answers.ErrorBody`.

:func:`complete_document` writes both into the document FastAPI generates, and states the
rules :class:`~panoramia.service.schemas.CleanBody` enforces on every request body where the
schema language can (:mod:`panoramia.service.api.body_rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi.routing import APIRoute

from panoramia.service.api.body_rules import state_body_rules
from panoramia.service.route_answers import HEADERS, RATE_LIMITED, WHY, ErrorBody

VALIDATION = 422
"""FastAPI's refusal of a body not as its schema says (its own shape, naming the field)."""


def _calls(route: APIRoute) -> set[Callable[..., Any]]:
    """Every dependency a route calls, however deep."""
    found, pending = set(), list(route.dependant.dependencies)
    while pending:
        dependency = pending.pop()
        if dependency.call is not None:
            found.add(dependency.call)
        pending += dependency.dependencies
    return found


def derived_refusals(
    route: APIRoute, contributor: Callable[..., Any], worker: Callable[..., Any]
) -> dict[int, str]:
    """The refusals ``route`` gives for what it is built with (see the module docstring)."""
    calls = _calls(route)
    found = {503: WHY[503]}
    if contributor in calls:
        found |= {401: WHY[401], 403: WHY[403]}
    if worker in calls:
        found[401] = WHY[401]
    if route.dependant.path_params:
        found[404] = WHY[404]
    if route.body_field is not None:
        found |= {400: WHY[400], 413: WHY[413]}
    if getattr(route.endpoint, RATE_LIMITED, False):
        found[429] = WHY[429]
    return found


def route_refusals(
    routes: Iterable[object], contributor: Callable[..., Any], worker: Callable[..., Any]
) -> dict[tuple[str, str], dict[int, str]]:
    """(path, method) → refusals, for every documented route among ``routes``."""
    found: dict[tuple[str, str], dict[int, str]] = {}
    for route in routes:
        if isinstance(route, APIRoute) and route.include_in_schema:
            refused = derived_refusals(route, contributor, worker)
            for method in route.methods or ():
                found[(route.path_format, method.lower())] = refused
    return found


def _error_answer(method: str, why: str, status: int) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": why}
    if method != "head":  # a HEAD answer has no body
        schema = {"$ref": "#/components/schemas/ErrorBody"}
        answer["content"] = {"application/json": {"schema": schema}}
    if status in HEADERS:
        answer["headers"] = HEADERS[status]
    return answer


def complete_document(
    document: dict[str, Any],
    refused: dict[tuple[str, str], dict[int, str]],
    *,
    max_file_bytes: int,
) -> dict[str, Any]:
    """``document`` (FastAPI's) with every refusal of every operation and its body, the
    request bodies' rules, and the largest upload this service takes (``max_file_bytes``:
    ``PANORAMIA_MAX_FILE_MB``, or the storage quota where that is smaller, since a larger
    upload could never be kept)."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorBody"] = ErrorBody.model_json_schema()
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            answers = operation.setdefault("responses", {})
            derived = refused.get((path, method), {})
            for status, why in derived.items():
                existing = answers.get(str(status), {})
                answers[str(status)] = _error_answer(method, why, status) | existing
            for status, answer in answers.items():  # a route's own refusals: their body
                if not status.isdigit() or int(status) < 400 or "content" in answer:
                    continue
                if int(status) == VALIDATION:  # FastAPI's shape, naming the field
                    schema = {"$ref": "#/components/schemas/HTTPValidationError"}
                    answer["content"] = {"application/json": {"schema": schema}}
                else:
                    full = _error_answer(method, answer.get("description", ""), int(status))
                    answers[status] = full | answer
    upload = schemas.get("UploadCreate", {}).get("properties", {}).get("size")
    if upload is not None:
        upload["maximum"] = max_file_bytes
        upload["description"] = (
            "Bytes: at most PANORAMIA_MAX_FILE_MB and the storage quota (this service's "
            "smaller); past what is left of your quota, 507."
        )
    state_body_rules(document)
    return document
