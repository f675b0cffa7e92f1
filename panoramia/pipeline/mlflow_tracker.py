"""Writing runs to MLflow (the ``mlflow`` extra): the one module that imports it.

Through :class:`mlflow.tracking.MlflowClient` only, never MLflow's fluent "active run" (a
Hydra job may run beside others in one process): a run is created, its params logged in
batches of MLflow's size, its metrics, tags and artifacts added when the audit ends, and
its status set. A multirun's children name their parent by MLflow's ``mlflow.parentRunId``
tag, which the UI nests. MLflow's own logging and warnings are kept off the console (the
caller prints one line per outcome); HTTP stores get short retries unless the user set
MLflow's (:data:`HTTP_DEFAULTS`).
"""

from __future__ import annotations

import getpass
import logging
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from panoramia.pipeline.tracking_settings import TrackingSettings

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

BATCH = 100
"""Params or tags per request (MLflow's ``MAX_PARAMS_TAGS_PER_BATCH``)."""
METRICS_BATCH = 1000
"""Metrics per request (``MAX_METRICS_PER_BATCH``)."""
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}
"""MLflow's HTTP retries and timeout (s) unless set: MLflow's own (7 retries with backoff,
120 s a request) wait ~4 min for a server that is down, after an audit that is done."""
QUIET = ("mlflow", "alembic", "urllib3.connectionpool", "urllib3.util.retry", "git")
"""Loggers kept under ERROR while MLflow is called (its retries log a warning each)."""
Item = TypeVar("Item")


def mlflow_installed() -> bool:
    """Whether MLflow's client can be imported (the ``mlflow`` extra)."""
    try:
        import mlflow.tracking  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def quiet() -> Iterator[None]:
    """MLflow's log records and Python warnings held back while MLflow is called."""
    loggers = [logging.getLogger(name) for name in QUIET]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class MlflowTracker:
    """One tracking store and experiment (:class:`TrackingSettings`); the experiment is
    created on first use where missing."""

    def __init__(self, settings: TrackingSettings) -> None:
        for key, value in HTTP_DEFAULTS.items():
            os.environ.setdefault(key, value)
        with quiet():
            from mlflow.tracking import MlflowClient

            self.client: MlflowClient = MlflowClient(tracking_uri=settings.tracking_uri)
        self.settings = settings
        self._experiment_id: str | None = None

    def experiment_id(self) -> str:
        """The experiment's id, creating it (with the store's artifact location) if missing;
        another process creating it at the same moment is no error."""
        if self._experiment_id is None:
            from mlflow.exceptions import MlflowException

            name = self.settings.experiment
            with quiet():
                found = self.client.get_experiment_by_name(name)
                if found is None:
                    try:
                        created = self.client.create_experiment(
                            name, artifact_location=self.settings.artifact_location
                        )
                    except MlflowException:
                        again = self.client.get_experiment_by_name(name)
                        if again is None:
                            raise
                        created = again.experiment_id
                else:
                    created = found.experiment_id
            self._experiment_id = str(created)
        return self._experiment_id

    def start(
        self,
        run_name: str,
        *,
        params: Mapping[str, str],
        tags: Mapping[str, str],
        parent_run_id: str | None = None,
    ) -> str:
        """A new run (status RUNNING) with ``params`` and ``tags``, under ``parent_run_id``
        where given; returns its id."""
        from mlflow.entities import Param
        from mlflow.utils.mlflow_tags import (
            MLFLOW_PARENT_RUN_ID,
            MLFLOW_SOURCE_NAME,
            MLFLOW_SOURCE_TYPE,
            MLFLOW_USER,
        )

        first = {
            MLFLOW_SOURCE_NAME: "panoramia-audit",
            MLFLOW_SOURCE_TYPE: "LOCAL",
            MLFLOW_USER: _user(),
            **tags,
        }
        if parent_run_id is not None:
            first[MLFLOW_PARENT_RUN_ID] = parent_run_id
        experiment = self.experiment_id()
        with quiet():
            run = self.client.create_run(experiment, tags=first, run_name=run_name)
            run_id: str = run.info.run_id
            listed = [Param(key, value) for key, value in params.items()]
            for chunk in _chunks(listed, BATCH):
                self.client.log_batch(run_id, params=chunk)
        return run_id

    def finish(
        self,
        run_id: str,
        *,
        metrics: Mapping[str, float] | None = None,
        tags: Mapping[str, str] | None = None,
        artifacts: Sequence[Path] = (),
        status: str = "FINISHED",
    ) -> None:
        """Add ``metrics`` (step 0), ``tags`` and the files ``artifacts`` (those that exist,
        at the artifact root) to the run, then end it with ``status``."""
        import time

        from mlflow.entities import Metric, RunTag

        now = int(time.time() * 1000)
        with quiet():
            metric_list = [Metric(k, v, now, 0) for k, v in (metrics or {}).items()]
            for chunk in _chunks(metric_list, METRICS_BATCH):
                self.client.log_batch(run_id, metrics=chunk)
            tag_list = [RunTag(k, v) for k, v in (tags or {}).items()]
            for tag_chunk in _chunks(tag_list, BATCH):
                self.client.log_batch(run_id, tags=tag_chunk)
            for path in artifacts:
                if path.is_file():
                    self.client.log_artifact(run_id, str(path))
            self.client.set_terminated(run_id, status=status)

    def end(self, run_id: str, status: str, reason: str | None = None) -> None:
        """End the run with ``status`` (``FAILED``, ``KILLED``), ``reason`` as a tag."""
        self.finish(run_id, tags={"panoramia.error": reason} if reason else None, status=status)


def _chunks(items: Sequence[Item], size: int) -> Iterator[list[Item]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's arbitrary uid)
        return "unknown"
