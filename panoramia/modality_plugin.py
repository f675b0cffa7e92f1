"""What a modality plug-in declares (:class:`Modality`), apart from the registry that loads
the declarations (:mod:`panoramia.plugins`): a plug-in's ``plugin.py`` imports this module,
so importing one plug-in first loads no other."""

from __future__ import annotations

import dataclasses
import importlib
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, cast

from panoramia.settings_rule import Rule


@dataclass(frozen=True, eq=False)
class Modality:
    """One kind of audited data and the pieces that audit it (a plug-in's declaration; one
    object a plug-in, compared by identity)."""

    name: str
    """The ``modality`` value of its job schema and reports."""
    primary_config: str
    """``<primary_config>.yaml`` in its own config folder (``conf/`` beside its job schema's
    module, :func:`panoramia.pipeline.registry.plugin_config_dir`): the Hydra primary config
    (``--config-name``)."""
    schema_name: str
    """The ConfigStore name the primary config's defaults list extends."""
    job_schema_path: str
    """``module:Class`` of the job schema (a dataclass extending ``JobConfigBase``)."""
    pipeline_path: str
    """``module:Class`` of the pipeline (an ``AuditPipeline``)."""
    path_target: str
    """The ``target`` option that audits a contributor's model directory (``target.path``)."""
    data_sources: tuple[str, ...]
    """The ``data`` group options (``data/*.yaml`` of its config folder) that pick this modality."""
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
    upload_check_path: str | None = field(default=None)
    """``module:function`` ``(directory, manifest) -> None``: what an uploaded model folder of
    its formats must hold beyond the files its manifest names (InputError otherwise); run by
    the service's upload checks, so its module loads no deep-learning stack at import."""
    shows_examples: bool = field(default=False)
    """Whether its report shows example inputs (generated images, text chunks) beside the
    charts and the exposed records (the console's link to the page says so)."""
    choice_types: Mapping[str, type[StrEnum]] = field(default_factory=dict)
    """The choice settings it owns (none of the shared ones), by whole key, and the
    :class:`~enum.StrEnum` of each one's values (``panoramia.modalities.<name>.settings``):
    the settings engine checks a config of this modality against them
    (:func:`panoramia.audit_settings.choices_of`) and ``docs/RANGES.md`` lists them."""
    rules: tuple[Rule, ...] = field(default=())
    """Its rules across settings, checked after the shared ones
    (:func:`panoramia.audit_settings.rules_of`)."""
    implicit_manifest_path: str | None = field(default=None)
    """``module:function`` ``(directory) -> dict | None``: the manifest of a model folder that
    has no ``target.json`` but is recognisably this modality's (None: no such rule)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", MappingProxyType(dict(self.choices)))
        object.__setattr__(self, "choice_types", MappingProxyType(dict(self.choice_types)))

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

    def cost_model(self) -> Any:
        """Its cost module (a :class:`panoramia.audit_cost.CostModel`)."""
        return importlib.import_module(self.cost_path)

    def target_loader(self) -> Callable[..., Any]:
        """The function that opens this modality's targets."""
        return cast("Callable[..., Any]", resolve(self.target_loader_path))


def resolve(path: str) -> Any:
    """``module:name`` → the object (the paths come from plug-in declarations only)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
