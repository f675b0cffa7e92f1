"""Content hashes of files and directory trees (SHA-256, hex), for stage keys and identities."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of the bytes of the file at ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_sha256(path: Path) -> str | dict[str, str]:
    """SHA-256 of a file, or of every file under a directory (by relative path)."""
    if path.is_file():
        return file_sha256(path)
    return {
        str(f.relative_to(path)): file_sha256(f) for f in sorted(path.rglob("*")) if f.is_file()
    }
