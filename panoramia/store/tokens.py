"""Bearer tokens: printed once at creation, stored only as a SHA-256 digest.

A token carries 256 random bits, so a fast digest is enough to make the stored value useless to
someone who reads the database (no password-style stretching is needed for random secrets).
"""

from __future__ import annotations

import hashlib
import secrets

PREFIX = "pan_"


def new_token() -> str:
    """A fresh random token (``pan_`` + 43 URL-safe characters)."""
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """Hex SHA-256 of the token: the only form the store keeps."""
    return hashlib.sha256(token.encode()).hexdigest()
