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

import dataclasses
import importlib
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from panoramia.errors import InputError

BUILT_IN: tuple[str, ...] = ("tabular", "image", "text")
"""The shipped plug-ins, in the order the docs list them (the first is the default audit)."""


@dataclass(frozen=True)
class Modality:
    """One kind of audited data and the pieces that audit it (a plug-in's declaration)."""

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
    choices: Mapping[str, tuple[str, ...]]
    """The choice settings this modality narrows (``data.source``, ``target.kind``, …) and
    the values it allows of each (:func:`panoramia.audit_settings.choices_of`)."""
    file_source_values: tuple[str, ...]
    """The ``data.source`` values that read the contributor's files: such data has no
    control pool (``target.members`` other than ``same`` needs one)."""
    data_noun: str
    """What its data is called in a sentence (``a table``, ``images``)."""
    target_formats: tuple[str, ...]
    """The ``format`` values of ``target.json`` its target loader opens."""
    own_formats: tuple[str, ...]
    """Those of :attr:`target_formats` that belong to this modality whatever the manifest's
    ``modality`` field says (the rest are shared: the ``modality`` field, else the first
    registered modality that opens the format, decides)."""
    target_loader_path: str
    """``module:function`` ``(directory, manifest, trusted_modules, device) -> TargetModel``."""
    cost_path: str
    """The module of its cost estimate (a :class:`panoramia.audit_cost.CostModel`: the
    training stages of a composed, unresolved config and their multiply-adds); it imports no
    deep-learning stack (the service calls it)."""
    shows_examples: bool = field(default=False)
    """Whether its report shows example inputs (generated images, text chunks) beside the
    charts and the exposed records (the console's link to the page says so)."""
    implicit_manifest_path: str | None = field(default=None)
    """``module:function`` ``(directory) -> dict | None``: the manifest of a model folder that
    has no ``target.json`` but is recognisably this modality's (None: no such rule)."""

    def command_line(self) -> list[str]:
        """The ``panoramia-audit`` arguments that select this modality's primary config."""
        return [] if self.primary_config == "config" else [f"--config-name={self.primary_config}"]

    def job_schema(self) -> type:
        """The job schema class (imports the plug-in's schema module)."""
        return cast("type", resolve(self.job_schema_path))

    def pipeline_class(self) -> type:
        """The pipeline class (imports the plug-in's stages)."""
        return cast("type", resolve(self.pipeline_path))

    def target_schema(self) -> type:
        """The type of the job schema's ``target`` section."""
        return cast("type", typing.get_type_hints(self.job_schema())["target"])

    def target_settings(self) -> frozenset[str]:
        """The names of the ``target`` section's settings (its schema's fields)."""
        return frozenset(field.name for field in dataclasses.fields(self.target_schema()))

    def target_loader(self) -> Callable[..., Any]:
        """The function that opens this modality's targets."""
        return cast("Callable[..., Any]", resolve(self.target_loader_path))


def resolve(path: str) -> Any:
    """``module:name`` → the object (the paths come from plug-in declarations only)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


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
    """Add a plug-in that does not ship with the package (a test's, an operator's own):
    from then on every part of the program that asks this registry sees it. A name already
    registered is refused."""
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
    """The modality whose loader opens a model of this manifest: the one that owns its
    ``format``; else the one its ``modality`` field names, if that one opens the format;
    else the first registered one that does. An unknown format belongs to the default
    modality (whose loader refuses it, naming the formats it knows)."""
    kind = manifest.get("format")
    for entry in MODALITIES.values():
        if kind in entry.own_formats:
            return entry
    named = MODALITIES.get(str(manifest.get("modality")))
    if named is not None and kind in named.target_formats:
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
