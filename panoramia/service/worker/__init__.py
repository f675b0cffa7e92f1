"""Running queued audits: the queues, the Celery app, staging inputs, the confined child and
its record."""
