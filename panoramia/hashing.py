"""Content hashes of files and directory trees (SHA-256, hex), for stage keys and identities;
what of a settings dataclass a stage key holds (:func:`settings_key`)."""

from __future__ import annotations

import hashlib
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any

KEY_AT_DEFAULT = "key_at_default"
"""Field metadata: False for a setting added after stores were built, which a stage key leaves
out while it holds its default (so those stores are still found): :func:`settings_key`."""


def settings_key(config: Any) -> dict[str, Any]:
    """A settings dataclass as a stage key holds it: ``asdict``, less the fields marked
    ``KEY_AT_DEFAULT: False`` that hold their default."""
    settings = asdict(config)
    for entry in fields(config):
        if entry.metadata.get(KEY_AT_DEFAULT, True) or entry.default is MISSING:
            continue
        if settings[entry.name] == entry.default:
            del settings[entry.name]
    return settings


@dataclass
class _Box:
    value: Any


def settings_but(config: Any, but: tuple[str, ...] | frozenset[str]) -> dict[str, Any]:
    """``asdict(config)`` less the fields named in ``but``, which are never read: a stage
    whose key leaves a setting out does not read it (the graph records what a stage reads,
    :mod:`panoramia.pipeline.settings_reads`). The same dict, key order included."""
    return {
        entry.name: asdict(_Box(getattr(config, entry.name)))["value"]
        for entry in fields(config)
        if entry.name not in but
    }


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
