"""``panoramia serve``: migrate, recover orphaned audits, start the queue and uvicorn.

On start, the database is upgraded to the newest schema, running audits whose worker stopped
sending heartbeats are re-queued (or failed after ``max_attempts``), and every queued audit is
(re)dispatched. A reaper thread repeats the orphan recovery while the server runs, and takes
over the uploads' checks and deletions a dead server process left (once their rows have been
still for a minute). On SIGTERM
or SIGINT, uvicorn stops taking requests and the app's shutdown closes the queue: the local
pool's running audits are stopped and re-queued at once (the next start resumes them from the
artifact cache).

Files the service creates (database, audit run directories, artifacts) are its user's only:
the process runs with umask 077.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from panoramia.errors import InputError
from panoramia.service.console.sessions import SessionKeyError, session_key
from panoramia.service.settings import ServiceSettings
from panoramia.service.worker.queues import AuditQueue, make_queue
from panoramia.store import ReportStore, make_engine, upgrade

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("panoramia.serve")


def recover(store: ReportStore, queue: AuditQueue, settings: ServiceSettings) -> list[str]:
    """Re-queue (or fail) orphaned audits, then dispatch every queued one; returns requeued ids."""
    requeued, failed = store.recover_orphans(
        stale_after=timedelta(seconds=settings.stale_after_s), max_attempts=settings.max_attempts
    )
    for audit_id in failed:
        log.warning("audit %s failed: its worker died %d times", audit_id, settings.max_attempts)
    for audit_id in requeued:
        log.warning("audit %s re-queued: its worker stopped sending heartbeats", audit_id)
        queue.submit(audit_id)
    return requeued


class Reaper(threading.Thread):
    """Runs :func:`recover` for orphans every ``stale_after_s / 2`` seconds."""

    def __init__(self, store: ReportStore, queue: AuditQueue, settings: ServiceSettings):
        super().__init__(name="panoramia-reaper", daemon=True)
        self.store, self.queue, self.settings = store, queue, settings
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.settings.stale_after_s / 2):
            try:
                recover(self.store, self.queue, self.settings)
                expire_stalled_uploads(self.store, self.settings)
                recover_uploads(self.store, self.settings)
            except Exception:
                log.exception("orphan recovery failed; retrying")


def recover_uploads(store: ReportStore, settings: ServiceSettings) -> tuple[int, int]:
    """Checks and deletions of uploads that a dead server process left (see
    :func:`panoramia.service.uploads.intake.recover_uploads`)."""
    from panoramia.service.uploads.intake import recover_uploads as recover_left_uploads

    return recover_left_uploads(store, settings)


def expire_stalled_uploads(store: ReportStore, settings: ServiceSettings) -> int:
    """Remove uploads whose last chunk came longer than ``PANORAMIA_UPLOAD_STALL_HOURS`` ago
    (an upload started and never finished holds room in her quota and on disk)."""
    from datetime import timedelta

    from panoramia.service.uploads.files import UploadFolder
    from panoramia.store.repository import utcnow
    from panoramia.store.uploads import DELETING, RECEIVING, UploadRows

    rows = UploadRows(store)
    stalled = rows.stalled(utcnow() - timedelta(seconds=settings.upload_stall_s))
    for upload in stalled:
        if rows.move(upload.id, (RECEIVING,), DELETING):
            UploadFolder.of(settings.uploads_dir, upload.contributor_id, upload.id).remove()
            rows.remove(upload.id)
            log.info("upload %s: removed, nothing arrived for a while", upload.id)
    return len(stalled)


@contextmanager
def running_service(settings: ServiceSettings) -> Iterator[tuple[ReportStore, AuditQueue]]:
    """Store (migrated) and queue, with startup recovery and the reaper; closes both on exit."""
    engine = make_engine(settings.database_url)
    upgrade(engine)
    store = ReportStore(engine)
    if settings.worker_token and not settings.remote_worker:  # the service its workers reach
        store.ensure_worker_token(settings.worker_token)
    queue = make_queue(store, settings)
    recover(store, queue, settings)
    for audit_id in store.queued_audit_ids():
        queue.submit(audit_id)
    reaper = Reaper(store, queue, settings)
    reaper.start()
    try:
        yield store, queue
    finally:
        reaper.stopped.set()
        queue.close()
        engine.dispose()


def owner_only_files() -> None:
    """Files and folders this process creates from now on: readable by its user only."""
    os.umask(0o077)


def app_from_env() -> FastAPI:
    """The service app for ``ServiceSettings.from_env()``, owning its store and queue: they are
    opened here (migrate, recover, dispatch) and closed by the app's shutdown (uvicorn's
    factory: one call per server process)."""
    from fastapi.concurrency import run_in_threadpool

    from panoramia.service.api.app import create_app

    settings = ServiceSettings.from_env()
    log.info("audit confinement: %s", settings.check_sandbox())
    owner_only_files()
    resources = ExitStack()
    store, queue = resources.enter_context(running_service(settings))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            log.info("shutting down: stopping and re-queueing running audits")
            await run_in_threadpool(resources.close)

    return create_app(settings, store, queue, lifespan=lifespan)


def serve(settings: ServiceSettings, *, host: str, port: int, workers: int = 1) -> None:
    """Run the service until SIGINT/SIGTERM, in ``workers`` server processes.

    Several processes need ``PANORAMIA_QUEUE=celery``: audits then run in Celery workers and
    rate limits are counted in Redis, not once per process."""
    import uvicorn

    if workers < 1:
        raise InputError(f"--workers: must be at least 1, got {workers}")
    if workers > 1 and settings.queue != "celery":
        raise InputError(
            "--workers: several server processes need PANORAMIA_QUEUE=celery (with the local "
            "queue each process would run its own audit pool and rate limits)"
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    owner_only_files()
    settings.home.mkdir(parents=True, exist_ok=True)
    try:  # a bad console session key is one line here, not a traceback in each process
        session_key(settings.home)
    except SessionKeyError as error:
        raise InputError(str(error)) from None
    uvicorn.run(
        "panoramia.service.server:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,
    )
