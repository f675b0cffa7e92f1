"""The modality registry: every place that depends on the kind of data reads it from here.

A modality is one entry of :data:`MODALITIES` plus its wing ``panoramia/pipeline/<name>/``
(``config.py``: the job schema; ``data.py``: the data stage; ``pipeline.py``: the stages that
differ by data) and its primary config ``conf/<primary_config>.yaml``. The CLI
(:mod:`panoramia.pipeline.app`), :func:`register_schemas`, the service's request checks and
command builder and the API's ``modality`` filter read this table (the report builder takes
any ``JobConfigBase`` and names no modality).

Entries name their schema and pipeline class by import path, resolved on first use: the
service imports this module without loading a deep-learning stack, and a name here is never
taken from a request (the table is the allow-list).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import threading
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from panoramia.errors import InputError

if TYPE_CHECKING:
    from omegaconf import DictConfig

CONF_DIR_ENV = "PANORAMIA_CONF_DIR"


@dataclass(frozen=True)
class Modality:
    """One kind of audited data and the pieces that audit it."""

    name: str
    """The ``modality`` value of its job schema and reports."""
    primary_config: str
    """``conf/<primary_config>.yaml``: the Hydra primary config (``--config-name``)."""
    schema_name: str
    """The ConfigStore name the primary config's defaults list extends."""
    job_schema_path: str
    """``module:Class`` of the job schema (a dataclass extending ``JobConfigBase``)."""
    pipeline_path: str
    """``module:Class`` of the pipeline (an ``AuditPipeline``)."""
    path_target: str
    """The ``target`` option that audits a contributor's model directory (``target.path``)."""
    data_sources: tuple[str, ...]
    """The ``data`` group options (``conf/data/*.yaml``) that pick this modality."""
    file_data_sources: tuple[str, ...]
    """Those of :attr:`data_sources` that read the contributor's own files (the rest are
    embedded datasets)."""

    def command_line(self) -> list[str]:
        """The ``panoramia-audit`` arguments that select this modality's primary config."""
        return [] if self.primary_config == "config" else [f"--config-name={self.primary_config}"]

    def job_schema(self) -> type:
        """The job schema class (imports the modality's wing)."""
        return _resolve(self.job_schema_path)

    def pipeline_class(self) -> type:
        """The pipeline class (imports the modality's wing)."""
        return _resolve(self.pipeline_path)

    def target_schema(self) -> type:
        """The type of the job schema's ``target`` section."""
        return typing.get_type_hints(self.job_schema())["target"]

    def target_settings(self) -> frozenset[str]:
        """The names of the ``target`` section's settings (its schema's fields)."""
        return frozenset(field.name for field in dataclasses.fields(self.target_schema()))


def _resolve(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


MODALITIES: dict[str, Modality] = {
    entry.name: entry
    for entry in (
        Modality(
            name="tabular",
            primary_config="config",
            schema_name="job_schema",
            job_schema_path="panoramia.pipeline.tabular.config:TabularJobConfig",
            pipeline_path="panoramia.pipeline.tabular.pipeline:TabularPipeline",
            path_target="path",
            data_sources=("adult", "csv"),
            file_data_sources=("csv",),
        ),
        Modality(
            name="image",
            primary_config="image",
            schema_name="image_job_schema",
            job_schema_path="panoramia.pipeline.image.config:ImageJobConfig",
            pipeline_path="panoramia.pipeline.image.pipeline:ImagePipeline",
            path_target="image_path",
            data_sources=("mnist", "digits", "images"),
            file_data_sources=("images",),
        ),
        Modality(
            name="text",
            primary_config="text",
            schema_name="text_job_schema",
            job_schema_path="panoramia.pipeline.text.config:TextJobConfig",
            pipeline_path="panoramia.pipeline.text.pipeline:TextPipeline",
            path_target="text_path",
            data_sources=("python_docs", "text_files"),
            file_data_sources=("text_files",),
        ),
    )
}
"""Every modality by name, in the order the docs list them."""

MODALITY_PATTERN = "^(" + "|".join(MODALITIES) + ")$"
"""A regular expression that matches exactly the registered names (API query filters)."""


def modality(name: str) -> Modality:
    """The registered modality ``name``; InputError naming the setting otherwise."""
    try:
        return MODALITIES[name]
    except KeyError:
        raise InputError(f"modality: {name!r} is not one of {', '.join(MODALITIES)}") from None


def data_sources() -> dict[str, str]:
    """Every ``data`` group option → its modality's name."""
    return {source: m.name for m in MODALITIES.values() for source in m.data_sources}


def modality_of_command_line(arguments: list[str]) -> Modality | None:
    """The modality whose primary config ``panoramia-audit arguments`` selects, or None."""
    from panoramia.pipeline.preflight import config_name

    name = config_name(arguments)
    return next((m for m in MODALITIES.values() if m.primary_config == name), None)


_compose_lock = threading.Lock()  # Hydra's global state: one composition at a time


def compose_job(arguments: list[str]) -> DictConfig:
    """The job config that ``panoramia-audit arguments`` would run (one run, no sweep),
    composed against the registered schemas and *not* resolved (interpolations stay text).

    InputError ``config: …`` (one line) on an unknown key or option, a value of the wrong type,
    or a value left at ``???``. Safe to call from several threads."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from panoramia.pipeline.preflight import config_name, missing_keys, one_line

    with _compose_lock:
        register_schemas()
        try:
            GlobalHydra.instance().clear()
            with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
                composed = compose(
                    config_name=config_name(arguments),
                    overrides=[line for line in arguments if not line.startswith("-")],
                )
        except Exception as error:  # Hydra and OmegaConf raise several unrelated types
            raise InputError(f"config: {one_line(error)}") from None
        finally:
            GlobalHydra.instance().clear()
    missing = missing_keys(composed)
    if missing:
        raise InputError(f"config: required value(s) not set: {', '.join(missing)}")
    return composed


def folder_name(path: object) -> str:
    """A model directory's name as a model name (the ``${folder_name:…}`` resolver of the
    configs): its last component, characters other than letters, digits, ``.``, ``_`` and
    ``-`` replaced by ``-``; ``external`` if none is left or no path is set."""
    import re

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(str(path or "")).name).strip("-.")
    return name[:100] or "external"


def register_schemas(names: Iterable[str] | None = None) -> None:
    """Register the job schemas of the modalities ``names`` (default: all) under their
    ``schema_name``: the primary configs' defaults lists extend them, so Hydra type-checks
    every override. Registering only the one a command line runs spares it the other wings'
    imports. Also registers the configs' ``folder_name`` resolver. A schema already in
    Hydra's store is kept (building one costs ~0.03 s, and every composition asks)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("folder_name"):
        OmegaConf.register_new_resolver("folder_name", folder_name)

    store = ConfigStore.instance()
    for name in MODALITIES if names is None else names:
        entry = modality(name)
        if f"{entry.schema_name}.yaml" not in store.repo:
            store.store(name=entry.schema_name, node=entry.job_schema())


def config_dir() -> Path:
    """The Hydra config directory: ``$PANORAMIA_CONF_DIR``, else ``conf/`` of the checkout."""
    configured = os.environ.get(CONF_DIR_ENV)
    directory = Path(configured) if configured else Path(__file__).resolve().parents[2] / "conf"
    if not (directory / "config.yaml").is_file():
        raise FileNotFoundError(
            f"no config.yaml in {directory}; set {CONF_DIR_ENV} to the project's conf/ directory"
        )
    return directory
