"""Framing and content headers on every answer the service gives.

Pages set their own policy (the console's, a stored report's); every other answer (JSON, a
file a worker streams, an error) gets one that lets it be nothing but data: no framing, no
script, no sniffing a type from its bytes.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_HEADERS = {
    b"x-content-type-options": b"nosniff",
    b"x-frame-options": b"DENY",
    b"content-security-policy": b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    b"referrer-policy": b"same-origin",
}


class SafeHeaders:
    """An ASGI middleware adding :data:`DEFAULT_HEADERS` where an answer lacks them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in DEFAULT_HEADERS.items() if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
