"""Hydra callback: log the audit's runs to a tracker when the job sets ``logger``
(``+logger=mlflow``; docs/AUDIT.md, "Logging to MLflow"). Registered for every job
(``conf/run/default.yaml``, before the multirun summary, so that it ends after it); without
``logger`` it does nothing and imports nothing.

- Before anything runs (``on_run_start``, ``on_multirun_start``): the ``logger`` settings are
  checked (:func:`~panoramia.pipeline.tracking_settings.tracking_settings`) and MLflow must be
  installed; else one line and exit 2.
- A multirun opens its parent run first and writes where it went to ``mlflow.json`` in the
  sweep directory, which its jobs read (they may run in other processes or on other hosts).
- Each job opens its run before its stages (params: the settings as written; status RUNNING)
  and, once ``report.json`` and ``report.html`` are written, adds the figures, the verdict
  and the two files, and ends it FINISHED (FAILED where the job failed; a process that ends
  first marks its open runs FAILED on the way out).
- The multirun ends its parent with the pooled figures and ``summary.md``.

A tracker that cannot be reached or refuses a call costs one warning line on stderr and
nothing else: the audit runs, its outputs stay where they are, and the exit status is the
audit's (a tracking server's outage is no finding about the model, and a release gate reads
the exit status). A sweep whose parent could not be opened logs none of its jobs.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from panoramia.errors import InputError
from panoramia.pipeline.tracking_settings import (
    INSTALL_HINT,
    TrackingSettings,
    tracking_settings,
)

if TYPE_CHECKING:
    from panoramia.pipeline.mlflow_tracker import MlflowTracker

PARENT_FILE = "mlflow.json"
"""In a multirun's sweep directory: the store (as shown), experiment and parent run, or why
the parent could not be opened."""
REPORT_FILES = ("report.json", "page_parts.json", "report.html")
SUMMARY_FILES = ("summary.md", "summary.json", "summary.csv", "validity.json")
ENDED_EARLY = "the process ended before the audit finished"
MAX_REASON = 300


def _section(config: DictConfig) -> dict[str, object] | None:
    """The ``logger`` section as composed, interpolations left as text; None: no logger."""
    node = OmegaConf.select(config, "logger")
    if node is None:
        return None
    return cast("dict[str, object]", OmegaConf.to_container(node, resolve=False))


def checked_settings(config: DictConfig) -> TrackingSettings | None:
    """The job's tracking settings, checked, with MLflow installed; None without ``logger``.
    :class:`InputError` for a bad ``logger.*`` value or a missing extra."""
    settings = tracking_settings(_section(config))
    if settings is None:
        return None
    from panoramia.pipeline.mlflow_tracker import mlflow_installed

    if not mlflow_installed():
        raise InputError(
            f"logger: +logger=mlflow needs MLflow, which is not installed: {INSTALL_HINT}"
        )
    return settings


def _checked_or_exit(config: DictConfig) -> TrackingSettings | None:
    try:
        return checked_settings(config)
    except InputError as error:
        print(f"panoramia-audit: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def _reason(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no message"
    text = f"{type(error).__name__}: {text}"
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def warn(settings: TrackingSettings, error: BaseException, outputs: str) -> None:
    """The one line a tracking failure costs (stderr)."""
    print(
        f"panoramia-audit: warning: not logged to MLflow at {settings.shown_uri} "
        f"({_reason(error)}); {outputs}",
        file=sys.stderr,
    )


@dataclass
class _OpenRun:
    tracker: MlflowTracker
    run_id: str
    settings: TrackingSettings
    directory: Path


_OPEN: dict[str, _OpenRun] = {}
"""Runs opened by this process and not yet ended (by run id)."""


def _end_open_runs() -> None:
    """At exit: the runs this process left open are marked FAILED (a job that exited with an
    error, an interrupted sweep)."""
    for run in list(_OPEN.values()):
        _OPEN.pop(run.run_id, None)
        with contextlib.suppress(Exception):  # the process is ending: nothing left to tell
            run.tracker.end(run.run_id, "FAILED", ENDED_EARLY)


atexit.register(_end_open_runs)


def _overrides(config: DictConfig) -> dict[str, str]:
    """The command line's overrides as a tag (a sweep's as given: ``seed=0,1``)."""
    from panoramia.pipeline.tracking_record import MAX_TAG

    given = OmegaConf.select(config, "hydra.overrides.task") or []
    return {"panoramia.overrides": " ".join(str(item) for item in given)[:MAX_TAG]}


class AuditTracking(Callback):
    """The Hydra callback (see the module's docstring)."""

    def __init__(self) -> None:
        self._parent: _OpenRun | None = None
        self._jobs: dict[str, _OpenRun] = {}

    # -- before anything runs -------------------------------------------------------------
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _checked_or_exit(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        settings = _checked_or_exit(config)
        if settings is None:
            return
        from panoramia.pipeline.mlflow_tracker import MlflowTracker

        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        record: dict[str, object] = {"tracking_uri": settings.shown_uri,
                                     "experiment": settings.experiment}  # fmt: skip
        try:
            tracker = MlflowTracker(settings)
            run_id = tracker.start(
                settings.run_name or f"{sweep_dir.parent.name}/{sweep_dir.name}",
                params={},
                tags={"panoramia.sweep_dir": str(sweep_dir), **_overrides(config)},
            )
        except Exception as error:  # MLflow and its stores raise many unrelated types
            warn(settings, error, "the sweep runs, and none of its jobs is logged")
            record["failed"] = _reason(error)
        else:
            self._parent = _OpenRun(tracker, run_id, settings, sweep_dir)
            _OPEN[run_id] = self._parent
            record |= {"experiment_id": tracker.experiment_id(), "parent_run_id": run_id}
        (sweep_dir / PARENT_FILE).write_text(json.dumps(record, indent=1) + "\n")

    # -- each job ---------------------------------------------------------------------------
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            settings = checked_settings(config)
        except InputError as error:  # a sweep over logger settings: this job's are bad
            print(f"panoramia-audit: warning: not logged to MLflow: {error}", file=sys.stderr)
            return
        if settings is None:
            return
        from panoramia.pipeline.mlflow_tracker import MlflowTracker
        from panoramia.pipeline.tracking_record import run_params

        run_dir = Path(str(config.hydra.runtime.output_dir))
        parent_id = None
        if config.hydra.mode == RunMode.MULTIRUN:
            parent = _parent_record(Path(str(config.hydra.sweep.dir)))
            if parent is not None and "failed" in parent:
                return  # the sweep's one warning was printed when it started
            if parent is not None and parent.get("experiment") == settings.experiment:
                parent_id = cast("str | None", parent.get("parent_run_id"))
        raw = cast("dict[str, Any]", OmegaConf.to_container(config, resolve=False))
        try:
            tracker = MlflowTracker(settings)
            run_id = tracker.start(
                settings.run_name if settings.run_name and parent_id is None else run_dir.name,
                params=run_params(raw),
                tags={"panoramia.run_dir": str(run_dir.resolve()), **_overrides(config)},
                parent_run_id=parent_id,
            )
        except Exception as error:  # MLflow and its stores raise many unrelated types
            warn(settings, error, "the audit runs; its outputs stay in its run directory")
            return
        job = _OpenRun(tracker, run_id, settings, run_dir)
        self._jobs[str(run_dir)] = job
        _OPEN[run_id] = job

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        job = self._jobs.pop(str(config.hydra.runtime.output_dir), None)
        if job is None:
            return
        from panoramia.pipeline.tracking_record import run_metrics, run_tags

        _OPEN.pop(job.run_id, None)
        outputs = f"the audit's outputs are in {job.directory}"
        try:
            report_file = job.directory / "report.json"
            if job_return.status != JobStatus.COMPLETED or not report_file.is_file():
                job.tracker.end(job.run_id, "FAILED", _failure(job_return))
                return
            report = json.loads(report_file.read_text())
            job.tracker.finish(
                job.run_id,
                metrics=run_metrics(report),
                tags=run_tags(report),
                artifacts=[job.directory / name for name in REPORT_FILES],
            )
        except Exception as error:  # MLflow and its stores raise many unrelated types
            warn(job.settings, error, outputs)
            return
        if config.hydra.mode != RunMode.MULTIRUN:
            print(
                f"mlflow: run {job.run_id} in experiment {job.settings.experiment!r} at "
                f"{job.settings.shown_uri}",
                flush=True,
            )

    # -- the sweep's end --------------------------------------------------------------------
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        parent, self._parent = self._parent, None
        if parent is None:
            return
        from panoramia.pipeline.tracking_record import sweep_record

        _OPEN.pop(parent.run_id, None)
        try:
            metrics, tags = sweep_record(parent.directory)
            parent.tracker.finish(
                parent.run_id,
                metrics=metrics,
                tags=tags,
                artifacts=[parent.directory / name for name in SUMMARY_FILES],
            )
        except Exception as error:  # MLflow and its stores raise many unrelated types
            warn(parent.settings, error, f"the sweep's outputs are in {parent.directory}")
            return
        print(
            f"mlflow: sweep run {parent.run_id} (its jobs nested under it) in experiment "
            f"{parent.settings.experiment!r} at {parent.settings.shown_uri}",
            flush=True,
        )


def _failure(job_return: JobReturn) -> str:
    """Why a job left no report: its error (Hydra raises it on reading the return value)."""
    if job_return.status == JobStatus.FAILED:
        try:
            job_return.return_value  # noqa: B018  # raises the job's error
        except Exception as error:
            return _reason(error)
    return "the job wrote no report.json"


def _parent_record(sweep_dir: Path) -> dict[str, Any] | None:
    try:
        found = json.loads((sweep_dir / PARENT_FILE).read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
