"""``panoramia serve``: migrate, recover orphaned audits, start the queue and uvicorn.

On start, the database is upgraded to the newest schema, running audits whose worker stopped
sending heartbeats are re-queued (or failed after ``max_attempts``), and every queued audit is
(re)dispatched. A reaper thread repeats the orphan recovery while the server runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from panoramia.service.queues import AuditQueue, make_queue
from panoramia.service.settings import ServiceSettings
from panoramia.store import ReportStore, make_engine, upgrade

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
            except Exception:
                log.exception("orphan recovery failed; retrying")


@contextmanager
def running_service(settings: ServiceSettings) -> Iterator[tuple[ReportStore, AuditQueue]]:
    """Store (migrated) and queue, with startup recovery and the reaper; closes both on exit."""
    engine = make_engine(settings.database_url)
    upgrade(engine)
    store = ReportStore(engine)
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


def serve(settings: ServiceSettings, *, host: str, port: int) -> None:
    """Run the service until interrupted (SIGINT/SIGTERM stop it gracefully)."""
    import uvicorn

    from panoramia.service.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    with running_service(settings) as (store, queue):
        app = create_app(settings, store, queue)
        uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
