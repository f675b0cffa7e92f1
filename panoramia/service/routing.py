"""What every router of the API is built with (:func:`panoramia.service.api.app.create_app`
makes one and hands it to each resource's router)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from fastapi import Depends

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
        """The annotation of a route's signed-in contributor."""
        return Annotated[Principal, Depends(self.caller)]

    def worker(self) -> Any:
        """The annotation of a worker's route's caller."""
        return Annotated[Principal, Depends(self.worker_caller)]
