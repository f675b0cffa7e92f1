"""Run one queued audit: claim it, run the pipeline in a child process, record the outcome.

Used by both the local worker pool and Celery workers. The child is
``python -m panoramia.pipeline.app`` in its own process group, tied to this worker's life
(:mod:`panoramia.lifeline`). While it runs, the worker sends heartbeats with the
child's stage progress and polls for a cancel; if the worker dies, heartbeats stop and the
service re-queues the audit, whose next run reuses every finished stage from the artifact cache.
The report and the audit's success are written in one transaction.

The child is started by :mod:`panoramia.service.worker.launch` and its outcome read by
:mod:`panoramia.service.worker.record`. It runs at most the
per-audit wall-clock limit (``PANORAMIA_AUDIT_TIMEOUT_S``), then it is stopped and the audit
fails with that reason.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from panoramia.errors import InputError
from panoramia.report.html import undrawable
from panoramia.report.page_parts import PAGE_PARTS_FILE
from panoramia.sandbox import landlock_abi, launcher
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.command import job_command
from panoramia.service.submission.plan import AuditPlan
from panoramia.service.worker.launch import (
    audit_confinement,
    audit_environment,
    cap_memory,
    open_log,
    private_folders,
    stop_child,
)
from panoramia.service.worker.record import (
    ENDED,
    ContributorView,
    expire_inputs,
    finished_report,
    model_heading,
    read_progress,
    store_report,
)
from panoramia.service.worker.staging import stage_data_files, stage_plan_files
from panoramia.service.worker.upload_sources import LocalUploads, RemoteUploads, UploadSource
from panoramia.store.repository import AuditStatus, ReportContent, ReportStore, as_utc
from panoramia.store.tables import Audit

log = logging.getLogger("panoramia.worker")
POLL_S = 0.2
"""How often the worker looks at its child, the shutdown flag and the clock."""


def _shared_label(audit: Audit) -> str | None:
    """``owner/name:version`` where the audit's target is a shared model (docs/SPEC.md §3.3)."""
    key = (audit.request or {}).get("shared")
    if not isinstance(key, dict):
        return None
    return f"{key.get('owner')}/{key.get('name')}:{key.get('version')}"


class ClaimLost(Exception):
    """The worker's claim on the audit was taken over (it was presumed dead)."""


def worker_name() -> str:
    """Unique per claim: host, process, thread and a random suffix."""
    thread = threading.current_thread().name
    return f"{socket.gethostname()}:{os.getpid()}:{thread}:{uuid.uuid4().hex[:8]}"


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


class _Ended(Exception):
    """A run that ended before its child's outcome: :func:`run_audit` returns ``status``
    (FAILED, recorded already; None: the claim was lost)."""

    def __init__(self, status: AuditStatus | None) -> None:
        super().__init__(status)
        self.status = status


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
    for stale in ("report.json", "report.html", PAGE_PARTS_FILE, "progress.json"):
        (run_dir / stale).unlink(missing_ok=True)
    log_file = run_dir / f"attempt-{audit.attempts}.log"
    try:
        overrides, staged_names = _staged(store, settings, audit, worker, run_dir)
        command, env, confinement, confined = _child_command(
            store, settings, audit, worker, run_dir, overrides
        )
        started = time.perf_counter()
        assert audit.started_at is not None  # set when the worker claimed it
        queued_s = (as_utc(audit.started_at) - as_utc(audit.created_at)).total_seconds()
        log.info("audit %s attempt %d started by %s", audit_id, audit.attempts, worker)
        process = _start_child(
            store, settings, audit_id, worker, run_dir, log_file, command, env, confined
        )
    except _Ended as ended:
        return ended.status
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
    return _record(
        store, settings, audit, worker, run_dir, log_file, process, outcome, timings, staged_names
    )


def _staged(
    store: ReportStore, settings: ServiceSettings, audit: Audit, worker: str, run_dir: Path
) -> tuple[list[str], dict[str, str]]:
    """The audit's overrides with each file a copy under ``run_dir`` (its plan's command line
    with the copies' paths; an audit stored before plans: its stored command line with each
    data path replaced), and each copy's name as she knows it (heartbeats sent meanwhile);
    ``_Ended`` where a copy fails (FAILED, recorded) or the claim was lost while copying
    (None)."""
    audit_id = audit.id
    try:
        plan = _plan(audit)
    except (ValueError, TypeError, KeyError) as error:
        store.release(audit_id, worker, AuditStatus.FAILED, f"its stored plan: {error}", {})
        raise _Ended(AuditStatus.FAILED) from None
    try:  # the child reads copies made now, never the contributor's paths (no window)
        with HeartbeatWhile(store, audit_id, worker, settings.heartbeat_s) as beating:
            source, label = upload_source(store, settings), _shared_label(audit)
            if plan is not None:
                paths, staged_names = stage_plan_files(
                    plan, settings.data_dir, run_dir, source, shared_label=label
                )
                overrides = plan.command_line(paths)
            else:
                overrides, staged_names = stage_data_files(
                    list(audit.request["overrides_resolved"]), settings.data_dir, run_dir,
                    source, shared_label=label,
                )  # fmt: skip
    except InputError as error:
        store.release(audit_id, worker, AuditStatus.FAILED, str(error), {})
        raise _Ended(AuditStatus.FAILED) from None
    if beating.claim_lost:
        log.warning("audit %s: claim lost while copying its data; stopped", audit_id)
        raise _Ended(None)
    return overrides, staged_names


def _plan(audit: Audit) -> AuditPlan | None:
    """The audit's stored plan; None for an audit stored before plans (its command line is
    kept under ``overrides_resolved``)."""
    stored = (audit.request or {}).get("plan")
    return AuditPlan.from_json(stored) if isinstance(stored, dict) else None


def _child_command(
    store: ReportStore,
    settings: ServiceSettings,
    audit: Audit,
    worker: str,
    run_dir: Path,
    overrides: list[str],
) -> tuple[list[str], dict[str, str], str, bool]:
    """The child's command line, its environment, the confinement in one line and whether
    it is confined (Landlock); ``_Ended`` (FAILED, recorded) where the confinement required
    is unavailable."""
    artifacts_dir = settings.artifacts_dir / str(audit.contributor_id)
    if settings.remote_worker:  # nothing of hers outlives the audit on this machine
        artifacts_dir = run_dir / "stages"
    plan = _plan(audit)  # read in _staged already: it reads
    try:
        command = job_command(
            overrides,
            run_dir=run_dir,
            artifacts_dir=artifacts_dir,
            threads=settings.audit_threads,
            trusted_modules=settings.trusted_modules,
            modality_name=plan.modality if plan is not None else None,
        )
    except InputError as error:
        store.release(audit.id, worker, AuditStatus.FAILED, str(error), {})
        raise _Ended(AuditStatus.FAILED) from None
    env = audit_environment(run_dir, settings.audit_threads)
    try:
        confinement = settings.check_sandbox()
    except InputError as error:
        store.release(audit.id, worker, AuditStatus.FAILED, str(error), {})
        raise _Ended(AuditStatus.FAILED) from None
    confined = bool(settings.sandbox and landlock_abi())
    if confined:
        rules = audit_confinement(settings, run_dir, artifacts_dir, audit.request)
        command = launcher(rules, command, chdir=run_dir)
        env |= private_folders(run_dir)
    return command, env, confinement, confined


def _start_child(
    store: ReportStore,
    settings: ServiceSettings,
    audit_id: str,
    worker: str,
    run_dir: Path,
    log_file: Path,
    command: list[str],
    env: dict[str, str],
    confined: bool,
) -> subprocess.Popen:
    """The child started (its output to ``log_file``) under the audit's memory ceiling;
    ``_Ended`` (FAILED, recorded) where the log cannot be opened."""
    try:
        output = open_log(log_file)
    except OSError as error:
        store.release(audit_id, worker, AuditStatus.FAILED, f"log: {error.strerror}", {})
        raise _Ended(AuditStatus.FAILED) from None
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            env=env, start_new_session=True,  # stdin: no library's question is ever answered
            cwd="/" if confined else run_dir,  # confined: it moves into run_dir once restricted
        )  # fmt: skip
    finally:
        os.close(output)
    cap_memory(process.pid, settings.audit_memory_bytes)
    return process


def _record(
    store: ReportStore,
    settings: ServiceSettings,
    audit: Audit,
    worker: str,
    run_dir: Path,
    log_file: Path,
    process: subprocess.Popen,
    outcome: tuple[AuditStatus, str] | None,
    timings: dict[str, Any],
    staged_names: dict[str, str],
) -> AuditStatus:
    """Record how the run ended (``outcome``: what stopped it early; None: it exited by
    itself, and its report or its failure is read from ``run_dir``; a report the database
    refuses fails it, :func:`store_report`), expire her inputs where it ended, log it;
    returns its status."""
    audit_id = audit.id
    if outcome is None:
        shown = ContributorView(staged_names, run_dir, settings.home)
        finished = finished_report(
            process.returncode, run_dir, log_file, memory=settings.audit_memory_bytes
        )
        if isinstance(finished, ReportContent):
            timings["stages"] = finished.document.get("timings", {})
            last = read_progress(run_dir / "progress.json")  # newer than the last heartbeat
            model = audit.request.get("model") if isinstance(audit.request, dict) else None
            report = shown.report(finished, audit_id, model_heading(model))
            problem = undrawable(report.document, report.parts) if report.parts else None
            refused = (
                f"the report could not be stored: {problem}"
                if problem is not None
                else store_report(store, audit_id, worker, report, timings,
                                  last if isinstance(last, dict) else None)
            )  # fmt: skip
            outcome = (AuditStatus.SUCCEEDED, "")
            if refused is not None:  # one line, no traceback: the audit fails with it
                log.warning("audit %s: %s", audit_id, refused)
                outcome = (AuditStatus.FAILED, shown.text(refused))
        else:
            outcome = (AuditStatus.FAILED, shown.text(finished))
    progress = read_progress(run_dir / "progress.json")
    progress = progress if isinstance(progress, dict) else {}
    if outcome[0] != AuditStatus.SUCCEEDED:  # with the stage it ended at, for her page
        store.release(audit_id, worker, outcome[0], outcome[1], timings, progress or None)
    expire_inputs(store, settings, ended=run_dir if outcome[0] in ENDED else None)
    log.info(
        "audit %s: %s in %.1f s (stages %s/%s)",
        audit_id, outcome[0].value, timings["run_s"],
        progress.get("done", "-"), progress.get("total", "-"),
    )  # fmt: skip
    return outcome[0]


def upload_source(store: ReportStore, settings: ServiceSettings) -> UploadSource:
    """Where this worker reads uploads: the service over HTTP for a worker on another
    machine (``PANORAMIA_SERVICE_URL``), else the service's disk."""
    if settings.remote_worker:
        if not settings.worker_token:
            raise InputError("PANORAMIA_SERVICE_URL is set: PANORAMIA_WORKER_TOKEN is needed too")
        return RemoteUploads(settings.service_url or "", settings.worker_token)
    return LocalUploads(store, settings.uploads_dir)


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
            cancel = store.heartbeat(audit_id, worker, read_progress(run_dir / "progress.json"))
            if cancel is None:
                stop_child(process)
                raise ClaimLost(audit_id)
            if cancel:
                outcome = (AuditStatus.CANCELLED, "cancelled while running")
        if outcome is not None:
            stop_child(process)
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
