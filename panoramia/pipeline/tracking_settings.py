"""The job's ``logger`` setting (``+logger=mlflow``, ``conf/logger/``): its schema and the
check of its values, side by side.

``logger`` is no setting of the audit: no stage key and no report holds it
(:data:`NOT_AUDIT_SETTINGS`), and it changes no figure. Its values are taken as written:
an interpolation (``${…}``) is refused rather than resolved (a tracking URI read from another
setting or the environment would ship whatever it resolves to; MLflow's own
``MLFLOW_TRACKING_URI`` is the way to take the URI from the environment).

Where the runs go (:func:`tracking_settings`): ``logger.tracking_uri`` when set, else
``$MLFLOW_TRACKING_URI``, else the folder ``mlruns/`` in the working directory. A folder (a
path without a URI scheme) holds a SQLite store, ``<folder>/mlflow.db``, and the runs'
artifacts, ``<folder>/artifacts/``: MLflow 3 refuses its old file store (``./mlruns`` as a
tree of YAML files) unless ``MLFLOW_ALLOW_FILE_STORE=true``, and reads SQLite instead. Any
other URI (``sqlite:///…``, ``postgresql://…``, ``http(s)://…``, ``databricks``) is MLflow's
to open, as MLflow opens it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from panoramia.errors import InputError

KINDS = ("mlflow",)
"""The trackers ``logger.kind`` may name."""
DEFAULT_FOLDER = "mlruns"
"""The store's folder when neither ``logger.tracking_uri`` nor ``$MLFLOW_TRACKING_URI`` is set
(relative to the working directory)."""
DATABASE = "mlflow.db"
ARTIFACTS = "artifacts"
URI_ENV = "MLFLOW_TRACKING_URI"
ALLOW_FILE_STORE_ENV = "MLFLOW_ALLOW_FILE_STORE"
NOT_AUDIT_SETTINGS = ("logger", "gate")
"""Top-level keys of the job config that are not the audit's settings (where results are also
logged; the release gate's policy): left out of the report's ``config`` and of the params a
tracker logs."""
MAX_TEXT = 500
"""The longest ``logger.experiment`` or ``logger.run_name`` (MLflow's experiment names)."""
MAX_URI = 2000
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
"""A URI's scheme (``sqlite:``, ``postgresql+psycopg:``); a Windows drive letter aside."""
BARE_URIS = ("databricks", "databricks-uc")
"""Tracking URIs MLflow takes without a scheme's colon (Databricks' default profile)."""
INSTALL_HINT = "pip install -c constraints.txt -e '.[mlflow]' in the project's folder"
"""How to install the ``mlflow`` extra (mlflow-skinny, pinned in ``constraints.txt``)."""


@dataclass
class LoggerConfig:
    """Where an audit's results are also logged (``+logger=mlflow``; docs/AUDIT.md, "Logging
    to MLflow"). Checked by :func:`tracking_settings`."""

    kind: str = "mlflow"
    """The tracker: ``mlflow`` (the ``mlflow`` extra)."""
    tracking_uri: str | None = None
    """MLflow's tracking URI, or a folder for a local store (a SQLite database and the
    artifacts in it); None: ``$MLFLOW_TRACKING_URI``, else ``mlruns/`` in the working
    directory."""
    experiment: str = "panoramia-audit"
    """The MLflow experiment the runs go to (created when missing)."""
    run_name: str | None = None
    """The run's name; None: the run directory's name (a multirun's parent: the sweep's)."""


@dataclass(frozen=True)
class TrackingSettings:
    """The checked ``logger`` section: what the tracker opens."""

    kind: str
    tracking_uri: str
    """The URI handed to MLflow (a folder given: ``sqlite:///<folder>/mlflow.db``)."""
    shown_uri: str
    """The URI as the warning and status lines show it (the folder, when one was given)."""
    experiment: str
    run_name: str | None
    artifact_location: str | None
    """Where a new experiment keeps its runs' artifacts (a folder store's ``artifacts/``);
    None: the tracking server's or MLflow's default."""


def _required(raw: Mapping[str, object], key: str) -> str:
    value = _text(raw, key)
    if value is None:
        raise InputError(f"logger.{key}: a non-empty text is required")
    return value


def _text(raw: Mapping[str, object], key: str) -> str | None:
    """``logger.<key>`` checked: None where unset, else a non-empty text as written."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"logger.{key}: a non-empty text is required")
    if "${" in value:
        raise InputError(
            f"logger.{key}: an interpolation (${{…}}) is not accepted; write the value itself"
            + (f" (or set ${URI_ENV} and leave it unset)" if key == "tracking_uri" else "")
        )
    if any(ord(character) < 32 for character in value):
        raise InputError(f"logger.{key}: control characters are not accepted")
    limit = MAX_URI if key == "tracking_uri" else MAX_TEXT
    if len(value) > limit:
        raise InputError(f"logger.{key}: {len(value)} characters, at most {limit}")
    return value


def check_logger_chosen(overrides: list[str]) -> None:
    """InputError naming the first ``logger.<key>=…`` override when no override chooses a
    logger (``+logger=mlflow``): the schema's ``logger`` is None until one is chosen, and
    Hydra's own message for setting a key under it names neither."""
    keys = [item.split("=", 1)[0].lstrip("+~") for item in overrides]
    if any(key.split("@")[0] == "logger" for key in keys):
        return
    for key in keys:
        if key.startswith("logger."):
            raise InputError(f"{key}: no logger is chosen; add +logger=mlflow")


def _has_scheme(uri: str) -> bool:
    if uri in BARE_URIS:
        return True
    found = SCHEME.match(uri)
    return found is not None and len(found.group()) > 2  # ``C:`` is a drive, not a scheme


def _folder_store(folder: Path) -> tuple[str, str]:
    """(the SQLite URI, the artifacts' URI) of a local store in ``folder``; InputError where
    the folder holds MLflow's old file store (which a SQLite store beside it would not read)."""
    if (folder / ".trash").is_dir() or (folder / "0" / "meta.yaml").is_file():
        raise InputError(
            f"logger.tracking_uri: {folder} holds an MLflow file store, which MLflow 3 no "
            "longer opens by default; migrate it (mlflow migrate-filestore) or give another "
            f"folder (or file:{folder} with {ALLOW_FILE_STORE_ENV}=true)"
        )
    return f"sqlite:///{folder / DATABASE}", (folder / ARTIFACTS).as_uri()


def tracking_settings(
    raw: Mapping[str, object] | None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> TrackingSettings | None:
    """The ``logger`` section ``raw`` (unresolved, as composed; None: no logger) checked and
    turned into what the tracker opens. ``environ``: where ``$MLFLOW_TRACKING_URI`` is read
    (default ``os.environ``); ``cwd``: what a relative folder is relative to (default the
    working directory). :class:`InputError` naming the ``logger.*`` key for a kind that is
    not :data:`KINDS`, an empty or over-long text, control characters, an interpolation, or a
    ``file:`` store MLflow would refuse."""
    if raw is None:
        return None
    environ = os.environ if environ is None else environ
    kind = _required(raw, "kind")
    if kind not in KINDS:
        raise InputError(f"logger.kind: {kind!r} is not one of {', '.join(KINDS)}")
    experiment = _required(raw, "experiment")
    run_name = _text(raw, "run_name")
    uri = _text(raw, "tracking_uri")
    if uri is None:
        uri = environ.get(URI_ENV) or None
        if uri is not None and ("${" in uri or any(ord(c) < 32 for c in uri)):
            raise InputError(f"${URI_ENV}: not a tracking URI")
    base = Path.cwd() if cwd is None else cwd
    if uri is None or not _has_scheme(uri):
        folder = (base / Path(uri or DEFAULT_FOLDER).expanduser()).resolve()
        database, artifacts = _folder_store(folder)
        return TrackingSettings(kind, database, str(folder), experiment, run_name, artifacts)
    if uri.startswith("file:") and environ.get(ALLOW_FILE_STORE_ENV, "").lower() not in (
        "true",
        "1",
    ):
        raise InputError(
            "logger.tracking_uri: MLflow 3 refuses the file store (file:…) unless "
            f"{ALLOW_FILE_STORE_ENV}=true; give a folder instead (a SQLite store in it)"
        )
    return TrackingSettings(kind, uri, _shown(uri), experiment, run_name, None)


def _shown(uri: str) -> str:
    """``uri`` without a password (``https://user:secret@host`` shows ``https://user:***@host``)."""
    return re.sub(r"(//[^/:@]*:)[^/@]*@", r"\1***@", uri)
