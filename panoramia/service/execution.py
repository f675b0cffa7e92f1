"""Run one queued audit: claim it, run the pipeline in a child process, record the outcome.

Used by both the local worker pool and Celery workers. The child is
``python -m panoramia.pipeline.app`` in its own process group, tied to this worker's life
(:mod:`panoramia.lifeline`). While it runs, the worker sends heartbeats with the
child's stage progress and polls for a cancel; if the worker dies, heartbeats stop and the
service re-queues the audit, whose next run reuses every finished stage from the artifact cache.
The report and the audit's success are written in one transaction.

The child gets a minimal environment (:func:`audit_environment`): no database or broker URL,
no token, nothing but what Python, torch and the pipeline need. It runs at most the
per-audit wall-clock limit (``PANORAMIA_AUDIT_TIMEOUT_S``), then it is stopped and the audit
fails with that reason.
"""

from __future__ import annotations

import html
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.engine import make_url

from panoramia.errors import InputError
from panoramia.lifeline import PARENT_ENV
from panoramia.sandbox import Confinement, landlock_abi, launcher
from panoramia.service.audit_command import job_command
from panoramia.service.data_staging import (
    in_contributor_terms,
    stage_data_files,
    unreadable_entry,
)
from panoramia.service.schemas import ReportDocument
from panoramia.service.settings import ServiceSettings
from panoramia.service.uploads.sources import LocalUploads, RemoteUploads, UploadSource
from panoramia.store.repository import AuditStatus, ReportContent, ReportStore, as_utc
from panoramia.store.tables import Audit

log = logging.getLogger("panoramia.worker")
CHILD_ENVIRONMENT = (
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PYTHONPATH",
    "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
    "HF_HOME", "XDG_CACHE_HOME", "TORCH_HOME", "MPLCONFIGDIR", "PANORAMIA_CONF_DIR",
)  # fmt: skip
"""The only variables of the worker's environment an audit child inherits."""
POLL_S = 0.2
"""How often the worker looks at its child, the shutdown flag and the clock."""


class ClaimLost(Exception):
    """The worker's claim on the audit was taken over (it was presumed dead)."""


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
    inputs copied there, :mod:`panoramia.service.data_staging`) and its contributor's
    artifact store; everything else under ``PANORAMIA_HOME`` (every contributor's data, other
    audits, other contributors' artifacts, the SQLite store) is out of reach."""
    from panoramia.pipeline.registry import config_dir

    protect = [settings.home, settings.data_dir, settings.audits_dir, settings.artifacts_dir]
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        store = Path(url.database).resolve()
        protect += [store.with_name(store.name + suffix) for suffix in ("", "-wal", "-shm")]
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    return Confinement(
        read=[settings.models_dir, config_dir()],
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


def worker_name() -> str:
    """Unique per claim: host, process, thread and a random suffix."""
    thread = threading.current_thread().name
    return f"{socket.gethostname()}:{os.getpid()}:{thread}:{uuid.uuid4().hex[:8]}"


def read_own_file(path: Path, *, limit: int = 256 * 2**20) -> str:
    """The text of a file the audit child wrote in its run directory, opened without following
    a link and only if it is a regular file with one name (a child may plant a link or a hard
    link there to make the unconfined worker read someone else's file); OSError otherwise."""
    import stat

    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or unreadable_entry(info) or info.st_size > limit:
            raise OSError(f"{path.name}: not a plain file of the audit's own")
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    finally:
        os.close(descriptor)


def _open_log(path: Path) -> int:
    """The attempt's log, created or appended without following a link (OSError on one)."""
    return os.open(
        path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )


def _read_progress(path: Path) -> dict | None:
    try:
        return json.loads(read_own_file(path, limit=2**16))
    except (OSError, ValueError):
        return None


def _last_error_line(log_file: Path) -> str:
    try:
        lines = [line.strip() for line in read_own_file(log_file).splitlines()]
    except OSError:
        return "the audit process failed (no log)"
    lines = [line for line in lines if line]
    for line in reversed(lines):
        if "error:" in line.lower() or "Error" in line:
            return line[:2000]
    return (lines[-1] if lines else "the audit process failed with no output")[:2000]


def _stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()


def run_audit(
    store: ReportStore,
    settings: ServiceSettings,
    audit_id: str,
    *,
    shutting_down: threading.Event | None = None,
) -> AuditStatus | None:
    """Run the fairest queued audit (:meth:`ReportStore.claim_next`); returns its final status
    (None: nothing was queued). ``audit_id`` is the message that woke the worker: every
    queued audit has sent one, so every queued audit is run, in the order that shares the
    workers among contributors rather than the order of the messages.

    ``shutting_down`` (set by a stopping local pool) ends the child and puts the audit back in
    the queue, so that the next start resumes it.
    """
    worker = worker_name()
    audit = store.claim_next(worker)
    if audit is None:
        return None
    if audit.id != audit_id:
        log.info("audit %s: woken for %s, ran the fairest queued one", audit.id, audit_id)
    try:
        return _run_claimed(store, settings, audit, worker, shutting_down)
    finally:
        if settings.remote_worker:  # whatever happened, nothing of hers stays on this disk
            shutil.rmtree(settings.audits_dir / audit.id, ignore_errors=True)


def _run_claimed(
    store: ReportStore,
    settings: ServiceSettings,
    audit: Audit,
    worker: str,
    shutting_down: threading.Event | None,
) -> AuditStatus | None:
    """:func:`run_audit` once ``worker`` holds the claim on ``audit``."""
    audit_id = audit.id
    run_dir = settings.audits_dir / audit_id
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("report.json", "report.html", "progress.json"):
        (run_dir / stale).unlink(missing_ok=True)
    log_file = run_dir / f"attempt-{audit.attempts}.log"
    try:  # the child reads copies made now, never the contributor's paths (no window)
        with HeartbeatWhile(store, audit_id, worker, settings.heartbeat_s) as beating:
            overrides, staged_names = stage_data_files(
                list(audit.request["overrides_resolved"]), settings.data_dir, run_dir,
                upload_source(store, settings),
            )  # fmt: skip
    except InputError as error:
        store.release(audit_id, worker, AuditStatus.FAILED, str(error), {})
        return AuditStatus.FAILED
    if beating.claim_lost:
        log.warning("audit %s: claim lost while copying its data; stopped", audit_id)
        return None
    artifacts_dir = settings.artifacts_dir / str(audit.contributor_id)
    if settings.remote_worker:  # nothing of hers outlives the audit on this machine
        artifacts_dir = run_dir / "stages"
    command = job_command(
        overrides,
        run_dir=run_dir,
        artifacts_dir=artifacts_dir,
        threads=settings.audit_threads,
        trusted_modules=settings.trusted_modules,
    )
    env = audit_environment(run_dir, settings.audit_threads)
    try:
        confinement = settings.check_sandbox()
    except InputError as error:
        store.release(audit_id, worker, AuditStatus.FAILED, str(error), {})
        return AuditStatus.FAILED
    confined = bool(settings.sandbox and landlock_abi())
    if confined:
        rules = audit_confinement(settings, run_dir, artifacts_dir, audit.request)
        command = launcher(rules, command, chdir=run_dir)
        env |= private_folders(run_dir)
    started = time.perf_counter()
    queued_s = (as_utc(audit.started_at) - as_utc(audit.created_at)).total_seconds()
    log.info("audit %s attempt %d started by %s", audit_id, audit.attempts, worker)
    try:
        output = _open_log(log_file)
    except OSError as error:
        store.release(audit_id, worker, AuditStatus.FAILED, f"log: {error.strerror}", {})
        return AuditStatus.FAILED
    try:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            cwd="/" if confined else run_dir,  # confined: it moves into run_dir once restricted
        )  # fmt: skip
    finally:
        os.close(output)
    _cap_memory(process.pid, settings.audit_memory_bytes)
    try:
        outcome = _watch(process, store, settings, audit_id, worker, run_dir, shutting_down)
    except ClaimLost:
        log.warning("audit %s: claim lost (presumed dead); stopped", audit_id)
        return None
    timings = {
        "queued_s": round(queued_s, 3),
        "run_s": round(time.perf_counter() - started, 3),
        "attempt": audit.attempts,
        "confinement": confinement,
    }
    if outcome is None:
        shown = ContributorView(staged_names, run_dir, settings.home)
        finished = _finished_report(
            process.returncode, run_dir, log_file, memory=settings.audit_memory_bytes
        )
        if isinstance(finished, ReportContent):
            timings["stages"] = finished.document.get("timings", {})
            last = _read_progress(run_dir / "progress.json")  # newer than the last heartbeat
            store.finish(
                audit_id, worker, shown.report(finished, audit_id), timings,
                last if isinstance(last, dict) else None,
            )  # fmt: skip
            outcome = (AuditStatus.SUCCEEDED, "")
        else:
            outcome = (AuditStatus.FAILED, shown.text(finished))
    if outcome[0] != AuditStatus.SUCCEEDED:
        store.release(audit_id, worker, outcome[0], outcome[1], timings)
    progress = _read_progress(run_dir / "progress.json")
    progress = progress if isinstance(progress, dict) else {}
    expire_inputs(store, settings, ended=run_dir if outcome[0] in ENDED else None)
    log.info(
        "audit %s: %s in %.1f s (stages %s/%s)",
        audit_id, outcome[0].value, timings["run_s"],
        progress.get("done", "-"), progress.get("total", "-"),
    )  # fmt: skip
    return outcome[0]


ENDED = (AuditStatus.SUCCEEDED, AuditStatus.FAILED, AuditStatus.CANCELLED)


def clear_remote_leftovers(settings: ServiceSettings) -> int:
    """A worker without the service's disk starts by removing every run folder a previous
    life of it left (killed mid-audit): nothing of a contributor's stays there. Returns how
    many it removed."""
    if not settings.remote_worker or not settings.audits_dir.is_dir():
        return 0
    left = [folder for folder in settings.audits_dir.iterdir() if not folder.is_symlink()]
    for folder in left:
        shutil.rmtree(folder, ignore_errors=True)
    return len(left)


def upload_source(store: ReportStore, settings: ServiceSettings) -> UploadSource:
    """Where this worker reads uploads: the service over HTTP for a worker on another
    machine (``PANORAMIA_SERVICE_URL``), else the service's disk."""
    if settings.remote_worker:
        if not settings.worker_token:
            raise InputError("PANORAMIA_SERVICE_URL is set: PANORAMIA_WORKER_TOKEN is needed too")
        return RemoteUploads(settings.service_url or "", settings.worker_token)
    return LocalUploads(store, settings.uploads_dir)


def expire_inputs(store: ReportStore, settings: ServiceSettings, *, ended: Path | None) -> int:
    """Remove the staged inputs (``<run dir>/inputs``) of audits that ended: the one in
    ``ended`` at once when ``PANORAMIA_KEEP_INPUTS_HOURS`` is 0, and every run directory's
    whose audit ended longer ago than that. Returns how many were removed."""
    removed = 0
    if ended is not None and settings.keep_inputs_s == 0:
        shutil.rmtree(ended / "inputs", ignore_errors=True)
        removed += 1
    cutoff = time.time() - settings.keep_inputs_s
    for inputs in settings.audits_dir.glob("*/inputs"):
        audit = store.get_audit(None, inputs.parent.name)
        finished = as_utc(audit.finished_at) if audit is not None else None
        if audit is None or (
            audit.status in ENDED and finished is not None and finished.timestamp() <= cutoff
        ):
            shutil.rmtree(inputs, ignore_errors=True)
            removed += 1
    return removed


def _watch(
    process: subprocess.Popen,
    store: ReportStore,
    settings: ServiceSettings,
    audit_id: str,
    worker: str,
    run_dir: Path,
    shutting_down: threading.Event | None,
) -> tuple[AuditStatus, str] | None:
    """Wait for the child, sending heartbeats every ``heartbeat_s``; stop it (at most
    :data:`POLL_S` late) on a cancel, a pool shutdown or the wall-clock limit. Returns the
    outcome that ended it early, None when it exited by itself; :class:`ClaimLost` (the child
    stopped, nothing written) when another worker took the audit over."""
    started = time.monotonic()
    next_beat = started + settings.heartbeat_s
    outcome: tuple[AuditStatus, str] | None = None
    while process.poll() is None:
        try:
            process.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if shutting_down is not None and shutting_down.is_set():
            outcome = (AuditStatus.QUEUED, "re-queued: the worker pool stopped")
        elif now - started > settings.limits.audit_timeout_s:
            outcome = (
                AuditStatus.FAILED,
                f"stopped after {settings.limits.audit_timeout_s:g} s: the per-audit time "
                "limit (PANORAMIA_AUDIT_TIMEOUT_S)",
            )
        elif now >= next_beat:
            next_beat = now + settings.heartbeat_s
            cancel = store.heartbeat(audit_id, worker, _read_progress(run_dir / "progress.json"))
            if cancel is None:
                _stop(process)
                raise ClaimLost(audit_id)
            if cancel:
                outcome = (AuditStatus.CANCELLED, "cancelled while running")
        if outcome is not None:
            _stop(process)
            break
    return outcome


class HeartbeatWhile:
    """A thread that records the worker's heartbeat every ``every_s`` seconds while the
    ``with`` block runs (copying a large data folder takes longer than the orphan limit);
    ``claim_lost``: another worker took the audit over meanwhile."""

    def __init__(self, store: ReportStore, audit_id: str, worker: str, every_s: float):
        self.store, self.audit_id, self.worker, self.every_s = store, audit_id, worker, every_s
        self.claim_lost = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while not self._done.wait(self.every_s):
            try:
                if self.store.heartbeat(self.audit_id, self.worker) is None:
                    self.claim_lost = True
                    return
            except Exception:  # a busy database: the next beat tries again
                log.warning("audit %s: heartbeat failed while copying", self.audit_id)

    def __enter__(self) -> HeartbeatWhile:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self._thread.join()


class ContributorView:
    """What a contributor reads of her audit: her files by her own names (``names``: each
    staged copy's path → her name for it), the run folder as ``<audit>`` and the service's
    home as ``<home>`` — never the server's layout."""

    def __init__(self, names: dict[str, str], run_dir: Path, home: Path):
        self.names = names
        self.places = ((str(run_dir), "<audit>"), (str(home), "<home>"))

    def text(self, text: str, *, escape: bool = False) -> str:
        """``text`` (``escape``: an HTML page, her names escaped) in her terms."""
        names = {copy: html.escape(name) for copy, name in self.names.items()} if escape else None
        text = in_contributor_terms(text, names or self.names)
        for place, placeholder in self.places:
            text = text.replace(place, html.escape(placeholder) if escape else placeholder)
        return text

    def document(self, node: object) -> object:
        """A JSON document with every string (keys included) in her terms."""
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, list):
            return [self.document(child) for child in node]
        if isinstance(node, dict):
            return {self.text(str(key)): self.document(child) for key, child in node.items()}
        return node

    def report(self, content: ReportContent, audit_id: str) -> ReportContent:
        """The run's report as stored for her; its files are the audit's (``audits/<id>``
        under the service's home, the operator's to open)."""
        return ReportContent(
            document=self.document(content.document),  # type: ignore[arg-type]
            html=self.text(content.html, escape=True) if content.html is not None else None,
            artifact_location=f"audits/{audit_id}",
        )


MEMORY_ERRORS = (
    "MemoryError",
    "can't allocate memory",
    "Cannot allocate memory",
    "bad_alloc",
    "out of memory",
)
"""What a child that reached its data ceiling writes last (Python's, torch's, C's, C++'s)."""


def _cap_memory(pid: int, ceiling: int) -> None:
    """Set the kernel's ceiling on the child's data memory (``RLIMIT_DATA``, bytes) right after
    it starts, long before it has imported its first library; a process already gone is
    left alone."""
    import resource

    try:
        resource.prlimit(pid, resource.RLIMIT_DATA, (ceiling, ceiling))
    except (ProcessLookupError, PermissionError) as error:
        log.warning("audit child %d: no memory ceiling (%s)", pid, error)


def _finished_report(
    returncode: int, run_dir: Path, log_file: Path, *, memory: int | None = None
) -> ReportContent | str:
    """The run's validated report and page, or why there is none (one line); ``memory``:
    the child's data ceiling in bytes, named when the child ran out of it."""
    if returncode != 0:
        line = _last_error_line(log_file)
        if memory is not None and any(error in line for error in MEMORY_ERRORS):
            return (
                f"the audit reached its memory ceiling of {memory // 2**20} MB "
                f"(PANORAMIA_AUDIT_MEMORY_MB): {line[:300]}"
            )
        return line
    try:
        text = read_own_file(run_dir / "report.json")
        ReportDocument.model_validate_json(text)
    except (OSError, ValidationError) as error:
        return f"report.json: {str(error).splitlines()[0]}"
    try:
        html = read_own_file(run_dir / "report.html")
    except OSError:
        return "report.html: missing after a successful run"
    return ReportContent(document=json.loads(text), html=html)
