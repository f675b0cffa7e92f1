"""The demo target configs a request may name (``target.config``): the YAML files of ``target/``
(the plug-ins' config folders) whose settings are all of one modality's target schema, less the
configs that need a path (``TargetRef.path`` names those models). The door checks a request
against these (:func:`panoramia.service.submission.command.audit_plan`) and the OpenAPI document
lists them (:class:`panoramia.service.schemas.TargetRef`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from panoramia.pipeline.registry import config_file, group_options
from panoramia.plugins import MODALITIES, modality


def fits(target_config: Path, modality_name: str) -> bool:
    """Whether a target config sets only keys of ``modality_name``'s target schema."""
    import yaml

    keys = set(yaml.safe_load(target_config.read_text()) or {})
    return keys <= modality(modality_name).target_settings()


@cache
def target_configs(modality_name: str) -> tuple[str, ...]:
    """The configs a request may name for an audit of ``modality_name`` data, sorted."""
    needs_path = {entry.path_target for entry in MODALITIES.values()}
    found = (config_file(f"target/{name}.yaml") for name in group_options("target"))
    return tuple(
        sorted(
            path.stem
            for path in found
            if path is not None and path.stem not in needs_path and fits(path, modality_name)
        )
    )
