"""The console's sign-in: a signed session cookie and CSRF tokens.

A session cookie holds the digest of the contributor's token (never the token) and its expiry,
signed with HMAC-SHA256 under the service's session key, with its sign-in time; every request
checks the signature, the expiry, that the digest still names a live token (a revoked or
expired token ends its sessions) and that the contributor has not signed out since (signing
out ends every session of hers). The key is ``PANORAMIA_SESSION_KEY`` (hex, ≥ 32 bytes) or, by
default, a random key kept in ``<PANORAMIA_HOME>/session.key`` (created once, owner-only;
every server process of one home shares it). Forms carry a CSRF token: after sign-in, an
HMAC of the session; on the sign-in form, a random value also set as a cookie (double
submit). The cookies are HttpOnly, ``SameSite=Strict`` and ``Secure`` over TLS.
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


class SessionKeyError(ValueError):
    """The session key could not be read: the message names its source and the fix."""


def _hex_key(text: str, source: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise SessionKeyError(f"{source}: not hexadecimal (64 hex digits expected)") from None
    if len(key) < 32:
        raise SessionKeyError(f"{source}: at least 32 bytes (64 hex digits) expected")
    return key


def session_key(home: Path) -> bytes:
    """The key that signs sessions (see the module docstring); created on first use. A key
    file that others may read, or that is not a key, is refused (SessionKeyError)."""
    configured = os.environ.get("PANORAMIA_SESSION_KEY")
    if configured:
        return _hex_key(configured, "PANORAMIA_SESSION_KEY")
    path = home / "session.key"
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _existing_key(path)
    key = secrets.token_bytes(32)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key.hex())
    return key


def _existing_key(path: Path) -> bytes:
    if path.stat().st_mode & 0o077:
        raise SessionKeyError(f"{path}: readable by others; chmod 600 it (or delete it)")
    for _ in range(50):  # another process may be writing it right now
        text = path.read_text().strip()
        if len(text) >= 64:
            return _hex_key(text, str(path))
        time.sleep(0.02)
    raise SessionKeyError(f"{path}: empty or cut short; delete it and a new key is made")


def _sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def new_session(key: bytes, token_hash: str, *, now: float | None = None) -> str:
    """The cookie value of a session for the token whose digest is ``token_hash``."""
    issued = now or time.time()
    body = json.dumps([token_hash, issued, int(issued + SESSION_S)]).encode()
    payload = base64.urlsafe_b64encode(body).rstrip(b"=")
    return f"{payload.decode()}.{_sign(key, payload)}"


def read_session(
    key: bytes, cookie: str | None, *, now: float | None = None
) -> tuple[str, float] | None:
    """The token digest and the sign-in time (Unix seconds) of a valid, unexpired session
    cookie; None otherwise."""
    if not cookie or cookie.count(".") != 1 or len(cookie) > 1000:
        return None
    payload, signature = cookie.split(".")
    if not hmac.compare_digest(_sign(key, payload.encode()), signature):
        return None
    try:
        padded = payload + "=" * (-len(payload) % 4)
        token_hash, issued, expires = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError):
        return None
    if not (
        isinstance(token_hash, str)
        and isinstance(issued, int | float)
        and not isinstance(issued, bool)
        and isinstance(expires, int)
    ):
        return None
    return (token_hash, float(issued)) if expires > (now or time.time()) else None


def session_digest(key: bytes, cookie: str | None, *, now: float | None = None) -> str | None:
    """The token digest a valid, unexpired session cookie holds; None otherwise."""
    found = read_session(key, cookie, now=now)
    return None if found is None else found[0]


def csrf_token(key: bytes, session: str) -> str:
    """The CSRF token of the forms of a signed-in session."""
    return _sign(key, b"csrf:" + session.encode())


def csrf_matches(expected: str, sent: str | None) -> bool:
    return bool(sent) and hmac.compare_digest(expected, sent or "")
