"""Starting an audit's child: its environment, what the kernel lets it reach, its memory
ceiling, its log, and stopping it (docs: SECURITY.md, "Confinement").

The child gets a minimal environment (:func:`audit_environment`): no database or broker URL,
no token, nothing but what Python, torch and the pipeline need.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from pathlib import Path

from sqlalchemy.engine import make_url

from panoramia.lifeline import PARENT_ENV
from panoramia.sandbox import Confinement
from panoramia.service.settings import ServiceSettings
from panoramia.service.worker.record import read_own_file

log = logging.getLogger("panoramia.worker")

CHILD_ENVIRONMENT = (
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PYTHONPATH",
    "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
    "HF_HOME", "XDG_CACHE_HOME", "TORCH_HOME", "MPLCONFIGDIR", "PANORAMIA_CONF_DIR",
)  # fmt: skip
"""The only variables of the worker's environment an audit child inherits."""


def audit_environment(run_dir: Path, threads: int) -> dict[str, str]:
    """The audit child's whole environment: :data:`CHILD_ENVIRONMENT` from the worker's, plus
    the progress file, the lifeline, offline model hubs and thread counts. Secrets of the
    service (``PANORAMIA_DATABASE_URL``, ``PANORAMIA_REDIS_URL``, tokens) are never in it."""
    inherited = {name: os.environ[name] for name in CHILD_ENVIRONMENT if name in os.environ}
    return inherited | {
        "PANORAMIA_PROGRESS_FILE": str(run_dir / "progress.json"),
        PARENT_ENV: str(os.getpid()),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": str(threads),
        # The confinement closes /dev/shm: joblib's check for process pools would fail there
        # and warn in every audit's log ("joblib will operate in serial mode"); it runs
        # serially either way, so it is told so and stays quiet.
        "JOBLIB_MULTIPROCESSING": "0",
    }


def audit_confinement(
    settings: ServiceSettings, run_dir: Path, artifacts_dir: Path, request: dict | None = None
) -> Confinement:
    """What an audit child may reach (docs: SECURITY.md, "Confinement"): it reads the code,
    the configs and the shared models folder, and reads and writes its run directory (its
    inputs copied there, :mod:`panoramia.service.worker.staging`) and its contributor's
    artifact store; everything else under ``PANORAMIA_HOME`` (every contributor's data, other
    audits, other contributors' artifacts, the SQLite store) is out of reach."""
    from panoramia.pipeline.registry import config_folders

    protect = [settings.home, settings.data_dir, settings.audits_dir, settings.artifacts_dir]
    protect += [*settings.sandbox_protect]
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        store = Path(url.database).resolve()
        protect += [store.with_name(store.name + suffix) for suffix in ("", "-wal", "-shm")]
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    return Confinement(
        read=[settings.models_dir, *config_folders()],
        write=[run_dir, artifacts_dir],
        protect=protect,
        connect=http_target_ports(settings.models_dir, request),
    )


def http_target_ports(models_dir: Path, request: dict | None) -> list[int]:
    """The TCP port of the audit's ``http`` target (the one network connection an audit
    makes), read from its manifest under ``models_dir``; none for any other target."""
    from urllib.parse import urlsplit

    path = ((request or {}).get("target") or {}).get("path")
    if not path:
        return []
    try:
        manifest = json.loads(read_own_file(models_dir / path / "target.json", limit=2**20))
        if manifest.get("format") != "http":
            return []
        url = urlsplit(str(manifest["url"]))
        return [url.port or {"http": 80, "https": 443}.get(url.scheme, 80)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def private_folders(run_dir: Path) -> dict[str, str]:
    """A confined child's home, temporary and cache folders: inside its run directory."""
    private = run_dir / "tmp"
    private.mkdir(exist_ok=True)
    return {
        "HOME": str(private), "TMPDIR": str(private), "MPLCONFIGDIR": str(private / "mpl"),
        "XDG_CACHE_HOME": str(private / "cache"),
    }  # fmt: skip


def open_log(path: Path) -> int:
    """The attempt's log, created or appended without following a link (OSError on one)."""
    return os.open(
        path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )


def stop_child(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()


def cap_memory(pid: int, ceiling: int) -> None:
    """Set the kernel's ceiling on the child's data memory (``RLIMIT_DATA``, bytes) right after
    it starts, long before it has imported its first library; a process already gone is
    left alone."""
    import resource

    try:
        resource.prlimit(pid, resource.RLIMIT_DATA, (ceiling, ceiling))
    except (ProcessLookupError, PermissionError) as error:
        log.warning("audit child %d: no memory ceiling (%s)", pid, error)
