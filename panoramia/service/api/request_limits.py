"""Upload limits: a request-body size cap (413), bodies spooled to disk with a bound on how
many large ones are parsed at once, and per-contributor rate limits (429).

The size cap and the spool are one ASGI middleware (:class:`SpooledBody`).
Rate limits use slowapi, keyed by the caller's token digest (by address when there is none),
in memory or, with Celery, in Redis so that every server replica shares them.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from slowapi import Limiter
from slowapi.util import get_remote_address
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from panoramia.service.settings import ServiceSettings
from panoramia.store.tokens import hash_token

SPOOL_IN_MEMORY_BYTES = 2**20
"""A request body up to this size stays in memory while it arrives; a larger one goes to a
temporary file."""
REPLAY_CHUNK_BYTES = 2**16


class SpooledBody:
    """Receive each request body in full before the app sees it: a declared ``Content-Length``
    over ``max_bytes`` is refused (413) before anything is read, a body without one is cut off
    (413) as soon as it passes the limit, and a body over :data:`SPOOL_IN_MEMORY_BYTES` is
    spooled to a temporary file in ``spool_dir`` while it arrives (a slow or stalled upload
    holds no memory). At most ``max_large_at_once`` such large bodies are handed to the app at
    once (the others wait, on disk): the app's parsing and storing, which need several times a
    body's size in memory, then bound the server's memory whatever the number of uploads."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        *,
        spool_dir: Path | None,
        max_large_at_once: int,
        streamed: Callable[[str, str], bool] = lambda _method, _path: False,
    ):
        self.app = app
        self.streamed = streamed
        """(method, path) of requests whose route reads the body as it arrives, with limits
        of its own (an upload's chunks): passed through, never spooled."""
        self.max_bytes = max_bytes
        self.spool_dir = spool_dir
        self.large_at_once = asyncio.Semaphore(max_large_at_once)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.streamed(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await JSONResponse({"detail": "invalid Content-Length"}, 400)(scope, receive, send)
                return
            if int(declared) > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
        # typeshed's dir is str | None; tempfile takes any path (os.path.join)
        with tempfile.SpooledTemporaryFile(
            SPOOL_IN_MEMORY_BYTES,
            dir=self.spool_dir,  # type: ignore[arg-type]
        ) as spool:
            size = await self._spool(receive, spool)
            if size is None:  # the client went away
                return
            if size > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            spool.seek(0)
            replay = self._replay(spool, size, receive)
            if size <= SPOOL_IN_MEMORY_BYTES:
                await self.app(scope, replay, send)
                return
            async with self.large_at_once:
                await self.app(scope, replay, send)

    async def _spool(self, receive: Receive, spool: IO[bytes]) -> int | None:
        """The body's size once received into ``spool`` (stopping past the limit: a size over
        it), or None if the client disconnected."""
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return size
            spool.write(chunk)
            if not message.get("more_body", False):
                return size

    @staticmethod
    def _replay(spool: IO[bytes], size: int, receive: Receive) -> Receive:
        """A ``receive`` that gives the spooled body in chunks, then the client's own events."""
        given = False

        async def replay() -> Message:
            nonlocal given
            if given:
                return await receive()
            chunk = spool.read(REPLAY_CHUNK_BYTES)
            given = spool.tell() >= size
            return {"type": "http.request", "body": chunk, "more_body": not given}

        return replay

    def _message(self) -> str:
        return f"request body larger than {self.max_bytes} bytes (PANORAMIA_MAX_UPLOAD_MB)"

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await JSONResponse({"detail": self._message()}, 413)(scope, receive, send)


def _caller_key(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token:
        return "token:" + hash_token(token.strip())
    return "address:" + get_remote_address(request)


def make_limiter(settings: ServiceSettings) -> Limiter:
    storage = settings.redis_url if settings.queue == "celery" else "memory://"
    return Limiter(key_func=_caller_key, storage_uri=storage, headers_enabled=False)
