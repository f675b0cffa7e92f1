"""Who is asking: a bearer token looked up (and cached a few seconds), a contributor's or a
worker's; the dependencies the routers use."""

import time
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, HTTPException
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from panoramia.store.repository import Principal, ReportStore, utcnow


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


def bearer_callers(
    store: ReportStore,
) -> tuple[Callable[..., Awaitable[Principal]], Callable[..., Awaitable[Principal]]]:
    """The dependencies of a contributor's routes (a worker's token: 403) and of the
    workers' routes (anything else: 401)."""
    principals = PrincipalCache(store)
    bearer = HTTPBearer(auto_error=False, description="A token from `panoramia tokens create`.")

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

    return caller, worker_caller
