"""Composing a job against the modality plug-ins' schemas (the registry itself is
:mod:`panoramia.plugins`): the Hydra config directory, the job schemas registered in Hydra's
store, and the composition the CLI and the service's command builder share.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from panoramia.errors import InputError
from panoramia.modality_plugin import Modality
from panoramia.plugins import MODALITIES, modality

if TYPE_CHECKING:
    from omegaconf import DictConfig

CONF_DIR_ENV = "PANORAMIA_CONF_DIR"


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
    every override. Registering only the one a command line runs spares it the other plug-ins'
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
    """The shared Hydra config directory (the groups every modality uses: ``audit``, ``run``,
    ``hydra``, ``logger``, ``gates``): ``$PANORAMIA_CONF_DIR``, else ``conf/`` of the
    checkout, as an absolute path (a relative ``$PANORAMIA_CONF_DIR`` is read from the
    working directory). Each plug-in's own configs are in its folder
    (:func:`plugin_config_dir`)."""
    configured = os.environ.get(CONF_DIR_ENV)
    directory = Path(configured) if configured else Path(__file__).resolve().parents[2] / "conf"
    directory = directory.resolve()  # Hydra takes its main folder as an absolute path
    if not (directory / "run" / "default.yaml").is_file():
        raise FileNotFoundError(
            f"no run/default.yaml in {directory}; set {CONF_DIR_ENV} to the project's conf/ "
            "directory"
        )
    return directory


def plugin_config_dir(entry: Modality) -> Path | None:
    """The plug-in's own config folder: ``conf/`` beside the module of its job schema
    (``panoramia/modalities/<name>/conf/``: its primary config and its options of the
    ``data``, ``target``, ``generator``, ``helper``, ``distinguisher`` and ``experiment``
    groups), or None where it has none."""
    package = entry.job_schema_path.partition(":")[0].rpartition(".")[0]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "conf"
    return folder.resolve() if folder.is_dir() else None


def plugin_config_folders() -> list[Path]:
    """Each registered plug-in's own config folder (:func:`plugin_config_dir`), in the
    registry's order: what Hydra's search-path plug-in
    (``hydra_plugins/panoramia_configs``) appends after the shared folder."""
    folders: list[Path] = []
    for entry in MODALITIES.values():
        folder = plugin_config_dir(entry)
        if folder is not None and folder not in folders:
            folders.append(folder)
    return folders


def config_folders() -> list[Path]:
    """Where Hydra finds the job's configs, in the order it searches them: the shared folder
    (:func:`config_dir`), then each registered plug-in's own (:func:`plugin_config_folders`)."""
    return [config_dir(), *plugin_config_folders()]


def config_file(relative: str) -> Path | None:
    """The first of :func:`config_folders` holding ``relative`` (``target/xgboost.yaml``)
    as Hydra would find it, or None."""
    for folder in config_folders():
        if (folder / relative).is_file():
            return folder / relative
    return None


def existing_config_file(relative: str) -> Path:
    """:func:`config_file`, FileNotFoundError where no folder holds ``relative`` (for the
    tools that read a shipped config, ``benchmarks/``)."""
    found = config_file(relative)
    if found is None:
        raise FileNotFoundError(f"no {relative} in {', '.join(map(str, config_folders()))}")
    return found


def group_options(group: str) -> frozenset[str]:
    """The options of the config group ``group`` (``target``) across :func:`config_folders`."""
    return frozenset(
        path.stem for folder in config_folders() for path in (folder / group).glob("*.yaml")
    )
