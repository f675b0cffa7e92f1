"""Upload limits: a request-body size cap (413) and per-contributor rate limits (429).

The size cap is an ASGI middleware that refuses a declared ``Content-Length`` over the limit
before reading anything and stops reading a chunked body as soon as it passes the limit.
Rate limits use slowapi, keyed by the caller's token digest (by address when there is none),
in memory or, with Celery, in Redis so that every server replica shares them.
"""

from __future__ import annotations

from slowapi import Limiter
from slowapi.util import get_remote_address
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from panoramia.service.settings import ServiceSettings
from panoramia.store.tokens import hash_token


class BodySizeLimit:
    """Answer 413 to request bodies larger than ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
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
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, self._message())
            return message

        await self.app(scope, counted, send)

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
