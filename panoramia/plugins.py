"""The modality registry: which modalities exist, and what each plug-in declares.

A modality is one plug-in, the folder ``panoramia/modalities/<name>/``: its ``plugin.py``
declares one :class:`Modality` (``PLUGIN``), and its other modules hold its job schema, data
stage, stages, distinguisher, generator, helper, target loaders and cost estimate, which the
entry names by import path. :data:`BUILT_IN` below is the one place that names the shipped
plug-ins; everything else (the CLI, the job, the service's request checks, cost estimate and
upload checks, the target loader) asks this registry and compares against no modality's name.

Entries are loaded from ``panoramia.modalities.<name>.plugin``, modules that import no
deep-learning stack, so the service reads this registry without loading one; the paths an
entry names are resolved on first use. A name is never taken from a request: the registry is
the allow-list.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, cast

from panoramia.errors import InputError
from panoramia.modality_plugin import Modality, resolve

BUILT_IN: tuple[str, ...] = ("tabular", "image", "text")
"""The shipped plug-ins, in the order the docs list them (the first is the default audit)."""


def _load(name: str) -> Modality:
    entry = importlib.import_module(f"panoramia.modalities.{name}.plugin").PLUGIN
    if not isinstance(entry, Modality) or entry.name != name:
        raise TypeError(f"panoramia.modalities.{name}.plugin.PLUGIN is not the {name} Modality")
    return entry


MODALITIES: dict[str, Modality] = {name: _load(name) for name in BUILT_IN}
"""Every modality by name, in the order the docs list them."""

MODALITY_PATTERN = "^(" + "|".join(MODALITIES) + ")$"
"""A regular expression that matches exactly the registered names (API query filters)."""


def register(entry: Modality) -> None:
    """Add a plug-in that does not ship with the package (a test's, a developer's own) to this
    process's registry: from then on the job, the settings, the target loader and the cost
    estimate see it. Only in this process, and only where they ask the registry when they run:
    a child process (the service's audits, a parallel launcher's workers) and the tables the
    API's request schema builds at import (:mod:`panoramia.service.schemas`) do not, so a
    plug-in the service runs is named in :data:`BUILT_IN`. A name already registered is
    refused."""
    if entry.name in MODALITIES:
        raise ValueError(f"modality {entry.name!r} is already registered")
    MODALITIES[entry.name] = entry


def unregister(name: str) -> None:
    """Remove a plug-in added by :func:`register` (the shipped ones cannot be removed)."""
    if name in BUILT_IN:
        raise ValueError(f"modality {name!r} ships with the package")
    MODALITIES.pop(name, None)


def modality(name: str) -> Modality:
    """The registered modality ``name``; InputError naming the setting otherwise."""
    try:
        return MODALITIES[name]
    except KeyError:
        raise InputError(f"modality: {name!r} is not one of {', '.join(MODALITIES)}") from None


def default_modality() -> Modality:
    """The audit a config or manifest that names none belongs to (the first registered)."""
    return next(iter(MODALITIES.values()))


def data_sources() -> dict[str, str]:
    """Every ``data`` group option → its modality's name."""
    return {source: m.name for m in MODALITIES.values() for source in m.data_sources}


def target_formats() -> tuple[str, ...]:
    """Every ``target.json`` format some plug-in opens, each once, in registry order."""
    return tuple(dict.fromkeys(f for m in MODALITIES.values() for f in m.target_formats))


def modality_of_manifest(manifest: Mapping[str, Any]) -> Modality:
    """The modality a model of this manifest belongs to: the one that owns its ``format``;
    else the one its ``modality`` field names (whose loader refuses a format it does not
    open, :func:`panoramia.targets.load_target`); else the first registered one that opens
    the format. An unknown format belongs to the default
    modality."""
    kind = manifest.get("format")
    for entry in MODALITIES.values():
        if kind in entry.own_formats:
            return entry
    named = MODALITIES.get(str(manifest.get("modality")))
    if named is not None:
        return named
    opening = (m for m in MODALITIES.values() if kind in m.target_formats)
    return next(opening, default_modality())


def implicit_manifest(directory: Any) -> dict[str, Any] | None:
    """The manifest some plug-in recognises a folder without ``target.json`` by, or None."""
    for entry in MODALITIES.values():
        if entry.implicit_manifest_path is not None:
            manifest = resolve(entry.implicit_manifest_path)(directory)
            if manifest is not None:
                return cast("dict[str, Any]", manifest)
    return None
