"""The console's sign-in: a signed session cookie and CSRF tokens.

A session cookie holds the digest of the contributor's token (never the token) and its expiry,
signed with HMAC-SHA256 under the service's session key; every request checks the signature,
the expiry and that the digest still names a live token (a revoked or expired token ends its
sessions). The key is ``PANORAMIA_SESSION_KEY`` (hex, ≥ 32 bytes) or, by default, a random key
kept in ``<PANORAMIA_HOME>/session.key`` (created once, owner-only; every server process of one
home shares it). Forms carry a CSRF token: after sign-in, an HMAC of the session; on the
sign-in form, a random value also set as a cookie (double submit). The cookies are HttpOnly,
``SameSite=Strict`` and ``Secure`` when the request came over TLS.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path

SESSION_COOKIE = "panoramia_session"
LOGIN_CSRF_COOKIE = "panoramia_login_csrf"
SESSION_S = 8 * 3600
"""How long a sign-in lasts (seconds)."""


def session_key(home: Path) -> bytes:
    """The key that signs sessions (see the module docstring); created on first use."""
    configured = os.environ.get("PANORAMIA_SESSION_KEY")
    if configured:
        key = bytes.fromhex(configured)
        if len(key) < 32:
            raise ValueError("PANORAMIA_SESSION_KEY: at least 32 bytes (64 hex digits)")
        return key
    path = home / "session.key"
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process may be writing it right now
            key = bytes.fromhex(path.read_text().strip() or "00")
            if len(key) >= 32:
                return key
            time.sleep(0.02)
        raise ValueError(f"{path}: not a session key") from None
    key = secrets.token_bytes(32)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key.hex())
    return key


def _sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def new_session(key: bytes, token_hash: str, *, now: float | None = None) -> str:
    """The cookie value of a session for the token whose digest is ``token_hash``."""
    expires = int((now or time.time()) + SESSION_S)
    payload = base64.urlsafe_b64encode(json.dumps([token_hash, expires]).encode()).rstrip(b"=")
    return f"{payload.decode()}.{_sign(key, payload)}"


def session_digest(key: bytes, cookie: str | None, *, now: float | None = None) -> str | None:
    """The token digest a valid, unexpired session cookie holds; None otherwise."""
    if not cookie or cookie.count(".") != 1 or len(cookie) > 1000:
        return None
    payload, signature = cookie.split(".")
    if not hmac.compare_digest(_sign(key, payload.encode()), signature):
        return None
    try:
        padded = payload + "=" * (-len(payload) % 4)
        token_hash, expires = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError):
        return None
    if not isinstance(token_hash, str) or not isinstance(expires, int):
        return None
    return token_hash if expires > (now or time.time()) else None


def csrf_token(key: bytes, session: str) -> str:
    """The CSRF token of the forms of a signed-in session."""
    return _sign(key, b"csrf:" + session.encode())


def csrf_matches(expected: str, sent: str | None) -> bool:
    return bool(sent) and hmac.compare_digest(expected, sent or "")
