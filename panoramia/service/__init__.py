"""The leakage-report service: FastAPI app, audit workers (local pool or Celery), settings.

``panoramia serve`` runs :func:`panoramia.service.server.serve`; ``panoramia worker`` runs a
Celery worker (:mod:`panoramia.service.worker.celery_app`). No torch import: audits run in child
processes (``python -m panoramia.pipeline.app``).
"""
