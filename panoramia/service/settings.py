"""Service settings, read from the environment (the Docker way) with embedded defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from panoramia.errors import InputError
from panoramia.store.database import database_url, panoramia_home


def _number(name: str, default: float, *, minimum: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{name}: expected a number, got {raw!r}") from None
    if value < minimum:
        raise InputError(f"{name}: must be at least {minimum:g}, got {raw!r}")
    return value


@dataclass(frozen=True)
class ServiceSettings:
    """Where the service keeps things and how it runs audits.

    Environment: ``PANORAMIA_HOME``, ``PANORAMIA_DATABASE_URL``, ``PANORAMIA_QUEUE``
    (``local`` | ``celery``), ``PANORAMIA_WORKERS`` (concurrent audits per process),
    ``PANORAMIA_REDIS_URL``, ``PANORAMIA_MAX_UPLOAD_MB``, ``PANORAMIA_RATE_LIMIT`` (submissions
    and uploads per contributor, e.g. ``30/minute``), ``PANORAMIA_HEARTBEAT_S``,
    ``PANORAMIA_STALE_AFTER_S``, ``PANORAMIA_MAX_ATTEMPTS``, ``PANORAMIA_AUDIT_THREADS``.
    """

    home: Path = field(default_factory=panoramia_home)
    database_url: str = field(default_factory=database_url)
    queue: str = "local"
    workers: int = 1
    redis_url: str = "redis://127.0.0.1:6379/0"
    max_upload_bytes: int = 20 * 2**20
    rate_limit: str = "30/minute"
    heartbeat_s: float = 5.0
    stale_after_s: float = 60.0
    """A running audit with no heartbeat for this long is orphaned (re-queued or failed)."""
    max_attempts: int = 3
    audit_threads: int = 1
    """torch/xgboost threads of each audit process."""

    @property
    def data_dir(self) -> Path:
        """Contributors' data: ``data/<contributor>/…`` (an audit reads only its owner's)."""
        return self.home / "data"

    @property
    def models_dir(self) -> Path:
        """Shared models under audit, referenced as ``path`` targets relative to this folder."""
        return self.home / "models"

    @property
    def audits_dir(self) -> Path:
        return self.home / "audits"

    @property
    def artifacts_dir(self) -> Path:
        return self.home / "artifacts"

    @classmethod
    def from_env(cls) -> ServiceSettings:
        queue = os.environ.get("PANORAMIA_QUEUE") or "local"
        if queue not in ("local", "celery"):
            raise InputError(f"PANORAMIA_QUEUE: expected 'local' or 'celery', got {queue!r}")
        heartbeat = _number("PANORAMIA_HEARTBEAT_S", 5.0, minimum=0.1)
        return cls(
            queue=queue,
            workers=int(_number("PANORAMIA_WORKERS", 1, minimum=1)),
            redis_url=os.environ.get("PANORAMIA_REDIS_URL") or "redis://127.0.0.1:6379/0",
            max_upload_bytes=int(_number("PANORAMIA_MAX_UPLOAD_MB", 20, minimum=0.001) * 2**20),
            rate_limit=os.environ.get("PANORAMIA_RATE_LIMIT") or "30/minute",
            heartbeat_s=heartbeat,
            stale_after_s=_number("PANORAMIA_STALE_AFTER_S", 60.0, minimum=2 * heartbeat),
            max_attempts=int(_number("PANORAMIA_MAX_ATTEMPTS", 3, minimum=1)),
            audit_threads=int(_number("PANORAMIA_AUDIT_THREADS", 1, minimum=1)),
        )
