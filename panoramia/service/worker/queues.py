"""Where submitted audits go: a local thread pool in the server, or Celery workers over Redis.

Both call :func:`panoramia.service.worker.run.run_audit`; the database is the source of truth
(an audit runs only once it is atomically claimed), so sending an id twice is harmless.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from panoramia.service.settings import ServiceSettings
from panoramia.service.worker.run import run_audit
from panoramia.store.repository import ReportStore

log = logging.getLogger("panoramia.queue")


class AuditQueue(Protocol):
    name: str

    def submit(self, audit_id: str) -> None: ...

    def close(self) -> None: ...


class LocalQueue:
    """``settings.workers`` audits at a time, in threads of the server process."""

    name = "local"

    def __init__(self, store: ReportStore, settings: ServiceSettings):
        self.store = store
        self.settings = settings
        self.stopping = threading.Event()
        self.pool = ThreadPoolExecutor(settings.workers, thread_name_prefix="audit")

    def _run(self, audit_id: str) -> None:
        if self.stopping.is_set():
            return
        try:
            run_audit(self.store, self.settings, audit_id, shutting_down=self.stopping)
        except Exception:
            log.exception("audit %s: worker error", audit_id)

    def submit(self, audit_id: str) -> None:
        self.pool.submit(self._run, audit_id)

    def close(self) -> None:
        """Stop: running audits are ended and put back in the queue for the next start."""
        self.stopping.set()
        self.pool.shutdown(wait=True, cancel_futures=True)


class CeleryQueue:
    """Send audit ids to Celery workers (``panoramia worker``) through Redis."""

    name = "celery"

    def __init__(self, settings: ServiceSettings):
        from panoramia.service.worker.celery_app import make_celery

        self.app = make_celery(settings)

    def submit(self, audit_id: str) -> None:
        self.app.send_task("panoramia.run_audit", args=[audit_id])

    def close(self) -> None:
        self.app.close()


def make_queue(store: ReportStore, settings: ServiceSettings) -> AuditQueue:
    return CeleryQueue(settings) if settings.queue == "celery" else LocalQueue(store, settings)
