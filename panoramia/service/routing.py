"""What every router of the API is built with (:func:`panoramia.service.api.app.create_app`
makes one and hands it to each resource's router), and what the console's signed-in forms
are built with (:func:`panoramia.service.console.pages.console_router` makes it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import Depends, Request, Response

from panoramia.service.check_pool import CheckPool
from panoramia.service.settings import ServiceSettings
from panoramia.store.repository import Principal, ReportStore


class Queue(Protocol):
    """Where a submitted audit's id is sent (:mod:`panoramia.service.worker.queues`)."""

    name: str

    def submit(self, audit_id: str) -> None: ...


@dataclass(frozen=True)
class RouteNeeds:
    """The service's settings, its store and queue, the bearer-token dependencies of a
    contributor's and of a worker's routes, the per-contributor rate limit, and the pool
    uploads' checks wait and run in."""

    settings: ServiceSettings
    store: ReportStore
    queue: Queue
    caller: Callable[..., Any]
    worker_caller: Callable[..., Any]
    rate_limit: Callable[[Callable[..., Any]], Callable[..., Any]]
    checks: CheckPool

    def contributor(self) -> Any:
        """The dependency of a route's signed-in contributor: its parameter is
        ``Annotated[Principal, needs.contributor()]``."""
        return Depends(self.caller)

    def worker(self) -> Any:
        """The dependency of a worker's route's caller: ``Annotated[Principal, needs.worker()]``."""
        return Depends(self.worker_caller)


SignedIn = Callable[[Request], Awaitable[tuple[Principal, str]]]
"""The console's session dependency: a request's principal and its forms' CSRF token."""


@dataclass(frozen=True)
class FormNeeds:
    """The service's settings and store, the console's page maker (``page(request, template,
    status, **context)``), its signed-in dependency, ``form_is_genuine(request, csrf, sent)``
    (a form's origin and CSRF token checked), and the API's rate limit per contributor (counted
    by her token, each route on its own as the API's are)."""

    settings: ServiceSettings
    store: ReportStore
    page: Callable[..., Response]
    signed_in: SignedIn
    form_is_genuine: Callable[[Request, str, str | None], bool]
    rate_limit: Callable[[Callable[..., Any]], Callable[..., Any]]
