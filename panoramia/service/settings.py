"""Service settings, read from the environment (the Docker way) with embedded defaults."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from panoramia.errors import InputError
from panoramia.service.resource_limits import AuditLimits
from panoramia.store.database import database_url, panoramia_home


def _number(name: str, default: float, *, minimum: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{name}: expected a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{name}: expected a finite number, got {raw!r}")
    if value < minimum:
        raise InputError(f"{name}: must be at least {minimum:g}, got {raw!r}")
    return value


@dataclass(frozen=True)
class ServiceSettings:
    """Where the service keeps things and how it runs audits.

    Environment: ``PANORAMIA_HOME``, ``PANORAMIA_DATABASE_URL``, ``PANORAMIA_QUEUE``
    (``local`` | ``celery``), ``PANORAMIA_WORKERS`` (concurrent audits per process),
    ``PANORAMIA_REDIS_URL``, ``PANORAMIA_MAX_UPLOAD_MB``, ``PANORAMIA_MAX_PARSING_UPLOADS``,
    ``PANORAMIA_MAX_FILE_MB`` (an uploaded file), ``PANORAMIA_KEEP_INPUTS_HOURS``,
    ``PANORAMIA_UPLOAD_STALL_HOURS``, ``PANORAMIA_SERVICE_URL`` and ``PANORAMIA_WORKER_TOKEN``
    (a worker without the service's disk; the token also in the service's environment,
    which registers it),
    ``PANORAMIA_RATE_LIMIT`` (submissions
    and uploads per contributor, e.g. ``30/minute``), ``PANORAMIA_HEARTBEAT_S``,
    ``PANORAMIA_STALE_AFTER_S``, ``PANORAMIA_MAX_ATTEMPTS``, ``PANORAMIA_AUDIT_THREADS``,
    ``PANORAMIA_TRUSTED_MODULES`` (comma-separated module prefixes whose ``nn.Module`` classes
    a model manifest may name, beside the project's own), and the limits of
    :class:`~panoramia.service.resource_limits.AuditLimits`. A bad value stops the start with one
    line naming the variable.
    """

    home: Path = field(default_factory=panoramia_home)
    database_url: str = field(default_factory=database_url)
    queue: str = "local"
    workers: int = 1
    redis_url: str = "redis://127.0.0.1:6379/0"
    max_upload_bytes: int = 20 * 2**20
    max_storage_bytes: int = 1024 * 2**20
    """Reports (documents and pages) one contributor may keep (``PANORAMIA_MAX_STORAGE_MB``):
    an upload past it is answered 507, and so is an audit submitted once it is reached."""
    max_parsing_uploads: int = 2
    """Request bodies over 1 MiB handed to the app at once (``PANORAMIA_MAX_PARSING_UPLOADS``);
    the others wait, spooled to ``spool_dir``. The server's memory for uploads is about this
    many times a few body sizes, whatever the number of concurrent uploads."""
    check_slots: int = 2
    """Upload checks run at once in one server process (``PANORAMIA_CHECK_SLOTS``), one
    contributor's in all but one of them; the others wait in turn per contributor
    (:mod:`panoramia.service.check_pool`)."""
    max_file_bytes: int = 2 * 2**30
    """Bytes one uploaded file may have, and may expand to once decompressed or unpacked
    (``PANORAMIA_MAX_FILE_MB``); it counts in the owner's storage quota."""
    upload_stall_s: float = 24 * 3600.0
    """An upload whose last chunk is older than this is removed
    (``PANORAMIA_UPLOAD_STALL_HOURS``)."""
    keep_inputs_s: float = 0.0
    """How long an ended audit's staged copies of its inputs are kept
    (``PANORAMIA_KEEP_INPUTS_HOURS``; 0: removed as soon as the audit ends)."""
    service_url: str | None = None
    """For a worker on a machine without the service's disk (``PANORAMIA_SERVICE_URL``): it
    fetches audits' uploads from the service there, keeps its stages inside each audit's
    run folder and removes the folder when the audit ends."""
    worker_token: str | None = None
    """That worker's credential (``PANORAMIA_WORKER_TOKEN``, from ``tokens create --worker``)."""
    rate_limit: str = "30/minute"
    heartbeat_s: float = 5.0
    stale_after_s: float = 60.0
    """A running audit with no heartbeat for this long is orphaned (re-queued or failed)."""
    max_attempts: int = 3
    audit_threads: int = 1
    """torch/xgboost threads of each audit process."""
    audit_memory_bytes: int = 8 * 2**30
    """The kernel's ceiling on an audit child's data memory (``RLIMIT_DATA``: heap and
    private mappings; ``PANORAMIA_AUDIT_MEMORY_MB``): an audit that reaches it fails with one
    line, and the service goes on."""
    trusted_modules: tuple[str, ...] = ()
    """Module prefixes (beyond the project's own architectures) that a model manifest's
    ``module`` may come from: the operator's decision, never a contributor's."""
    trust_torchscript: bool = False
    """Open TorchScript models (``PANORAMIA_TRUST_TORCHSCRIPT=1``): they are programs whose
    ops can read and write files, so only for models the operator vouches for."""
    limits: AuditLimits = field(default_factory=AuditLimits)
    sandbox: bool = True
    """Confine each audit child with Landlock where the kernel offers it
    (``PANORAMIA_SANDBOX=0`` turns it off: audits then rely on the checks alone)."""
    require_sandbox: bool = False
    """Refuse to start, and to run audits, without the whole confinement: Landlock and the
    socket filter (``PANORAMIA_REQUIRE_SANDBOX=1``)."""
    sandbox_protect: tuple[Path, ...] = ()
    """More paths no audit child may read, beside the service's home and the known places of
    database and broker settings (``PANORAMIA_SANDBOX_PROTECT``, separated by ``:``): where
    the operator keeps a credential under a folder the child reads (``/etc``, ``/opt``)."""

    def check_sandbox(self) -> str:
        """The confinement audits get, in one line (:func:`panoramia.sandbox.describe`);
        InputError when it is required and unavailable or turned off."""
        from panoramia.sandbox import describe, fully_confined

        line = describe() if self.sandbox else "none: turned off (PANORAMIA_SANDBOX=0)"
        if self.require_sandbox and not (self.sandbox and fully_confined()):
            raise InputError(f"PANORAMIA_REQUIRE_SANDBOX=1, but audit confinement is {line}")
        return line

    @property
    def data_dir(self) -> Path:
        """Contributors' data: ``data/<contributor>/…`` (an audit reads only its owner's)."""
        return self.home / "data"

    @property
    def models_dir(self) -> Path:
        """Shared models under audit, referenced as ``path`` targets relative to this folder."""
        return self.home / "models"

    @property
    def remote_worker(self) -> bool:
        """Whether this process works without the service's disk (see ``service_url``)."""
        return bool(self.service_url)

    @property
    def uploads_dir(self) -> Path:
        """Contributors' uploads: ``uploads/<contributor id>/<upload id>/`` (service-named)."""
        return self.home / "uploads"

    @property
    def spool_dir(self) -> Path:
        """Request bodies being received (temporary files, removed when answered)."""
        return self.home / "spool"

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
        rate_limit = os.environ.get("PANORAMIA_RATE_LIMIT") or "30/minute"
        check_rate_limit(rate_limit)
        defaults = AuditLimits()
        limits = AuditLimits(
            **{
                name: type(getattr(defaults, name))(
                    _number(variable, getattr(defaults, name), minimum=minimum)
                )
                for name, variable, minimum in LIMIT_VARIABLES
            }
        )
        return cls(
            queue=queue,
            workers=int(_number("PANORAMIA_WORKERS", 1, minimum=1)),
            redis_url=os.environ.get("PANORAMIA_REDIS_URL") or "redis://127.0.0.1:6379/0",
            max_upload_bytes=int(_number("PANORAMIA_MAX_UPLOAD_MB", 20, minimum=0.001) * 2**20),
            max_storage_bytes=int(_number("PANORAMIA_MAX_STORAGE_MB", 1024, minimum=0.001) * 2**20),
            max_parsing_uploads=int(_number("PANORAMIA_MAX_PARSING_UPLOADS", 2, minimum=1)),
            check_slots=int(_number("PANORAMIA_CHECK_SLOTS", 2, minimum=1)),
            max_file_bytes=int(_number("PANORAMIA_MAX_FILE_MB", 2048, minimum=0.001) * 2**20),
            service_url=os.environ.get("PANORAMIA_SERVICE_URL") or None,
            worker_token=os.environ.get("PANORAMIA_WORKER_TOKEN") or None,
            upload_stall_s=_number("PANORAMIA_UPLOAD_STALL_HOURS", 24.0, minimum=0.01) * 3600,
            keep_inputs_s=_number("PANORAMIA_KEEP_INPUTS_HOURS", 0.0, minimum=0.0) * 3600,
            rate_limit=rate_limit,
            heartbeat_s=heartbeat,
            stale_after_s=_number("PANORAMIA_STALE_AFTER_S", 60.0, minimum=2 * heartbeat),
            max_attempts=int(_number("PANORAMIA_MAX_ATTEMPTS", 3, minimum=1)),
            audit_threads=int(_number("PANORAMIA_AUDIT_THREADS", 1, minimum=1)),
            audit_memory_bytes=int(_number("PANORAMIA_AUDIT_MEMORY_MB", 8192, minimum=64) * 2**20),
            trusted_modules=_module_prefixes(),
            trust_torchscript=_flag("PANORAMIA_TRUST_TORCHSCRIPT"),
            limits=limits,
            sandbox=_flag("PANORAMIA_SANDBOX", default="1"),
            require_sandbox=_flag("PANORAMIA_REQUIRE_SANDBOX"),
            sandbox_protect=_protected_paths(),
        )


LIMIT_VARIABLES = (
    ("max_epochs", "PANORAMIA_MAX_EPOCHS", 1),
    ("max_thresholds", "PANORAMIA_MAX_THRESHOLDS", 2),
    ("max_grid", "PANORAMIA_MAX_GRID", 1),
    ("max_estimators", "PANORAMIA_MAX_ESTIMATORS", 1),
    ("max_n_jobs", "PANORAMIA_MAX_N_JOBS", 1),
    ("max_count", "PANORAMIA_MAX_COUNT", 1),
    ("max_width", "PANORAMIA_MAX_WIDTH", 1),
    ("max_layers", "PANORAMIA_MAX_LAYERS", 1),
    ("max_ensemble", "PANORAMIA_MAX_ENSEMBLE", 1),
    ("audit_timeout_s", "PANORAMIA_AUDIT_TIMEOUT_S", 1),
    ("max_active_audits", "PANORAMIA_MAX_ACTIVE_AUDITS", 1),
    ("max_audit_cost", "PANORAMIA_MAX_AUDIT_COST", 1),
)
"""(AuditLimits field, environment variable, least accepted value)."""


def _flag(name: str, *, default: str = "0") -> bool:
    raw = (os.environ.get(name) or default).strip().lower()
    if raw not in ("0", "1", "true", "false", "yes", "no"):
        raise InputError(f"{name}: expected 1 or 0, got {raw!r}")
    return raw in ("1", "true", "yes")


def check_rate_limit(value: str) -> None:
    """InputError unless ``value`` is a rate-limit string slowapi understands (``30/minute``,
    ``5 per second; 100/hour``): a bad one would otherwise turn rate limiting off."""
    from limits import parse_many

    try:
        parsed = parse_many(value)
    except ValueError:
        parsed = []
    if not parsed:
        raise InputError(f"PANORAMIA_RATE_LIMIT: {value!r} is not a rate limit such as '30/minute'")


def _protected_paths() -> tuple[Path, ...]:
    """``PANORAMIA_SANDBOX_PROTECT``: absolute paths separated by ``:`` (a relative one stops
    the start with one line)."""
    raw = os.environ.get("PANORAMIA_SANDBOX_PROTECT", "")
    paths = tuple(Path(part) for part in raw.split(":") if part)
    for path in paths:
        if not path.is_absolute():
            raise InputError(f"PANORAMIA_SANDBOX_PROTECT: {str(path)!r} is not an absolute path")
    return paths


def _module_prefixes() -> tuple[str, ...]:
    from panoramia.targets.trust import trusted_modules_from_env

    return tuple(trusted_modules_from_env())
