"""Celery workers for audits (``PANORAMIA_QUEUE=celery``; ``panoramia worker`` starts one).

Tasks are acknowledged on receipt: the database, not the broker, keeps the audit's state, and
the server's orphan recovery re-sends audits whose worker died (so no 1-hour Redis visibility
timeout stands between a dead GPU machine and the retry). The threads pool keeps one process,
whose audits run as child processes.
"""

from __future__ import annotations

from functools import cache

from celery import Celery

from panoramia.service.settings import ServiceSettings


@cache
def _worker_store():
    from panoramia.store import ReportStore, make_engine

    settings = ServiceSettings.from_env()
    return ReportStore(make_engine(settings.database_url)), settings


def make_celery(settings: ServiceSettings) -> Celery:
    app = Celery("panoramia", broker=settings.redis_url)
    app.conf.update(
        task_acks_late=False,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )

    @app.task(name="panoramia.run_audit", ignore_result=True)
    def run_audit_task(audit_id: str) -> None:
        from panoramia.service.worker.run import run_audit

        store, worker_settings = _worker_store()
        run_audit(store, worker_settings, audit_id)

    return app


def __getattr__(name: str) -> Celery:
    """``app``: the worker's Celery app from the environment (``celery -A`` looks it up)."""
    if name == "app":
        return _environment_app()
    raise AttributeError(name)


@cache
def _environment_app() -> Celery:
    return make_celery(ServiceSettings.from_env())


def run_worker(settings: ServiceSettings, *, loglevel: str = "INFO") -> None:
    """Block running a Celery worker with ``settings.workers`` audit threads."""
    app = make_celery(settings)
    app.worker_main(
        ["worker", f"--loglevel={loglevel}", "--pool=threads", f"--concurrency={settings.workers}"]
    )
