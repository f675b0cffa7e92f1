"""The text plug-in's declaration (the registry, :mod:`panoramia.plugins`, reads it)."""

from __future__ import annotations

import json
from pathlib import Path

from panoramia.audit_settings import DataSource, TargetKind, TargetMembers, values
from panoramia.plugins import Modality


def bare_causal_lm_manifest(directory: Path) -> dict[str, str] | None:
    """The manifest of a Hugging Face causal-LM folder that has no ``target.json`` (its
    ``config.json`` names a ``…ForCausalLM`` or ``…LMHead…`` architecture), else None."""
    config = Path(directory) / "config.json"
    if not config.is_file():
        return None
    try:
        architectures = json.loads(config.read_text()).get("architectures") or []
    except (ValueError, AttributeError):
        return None
    if any(str(name).endswith("ForCausalLM") or "LMHead" in str(name) for name in architectures):
        return {"format": "hf-causal-lm", "modality": PLUGIN.name, "directory": "."}
    return None


PLUGIN = Modality(
    name="text",
    primary_config="text",
    schema_name="text_job_schema",
    job_schema_path="panoramia.modalities.text.config:TextJobConfig",
    pipeline_path="panoramia.modalities.text.pipeline:TextPipeline",
    path_target="text_path",
    data_sources=("python_docs", "text_files"),
    file_data_sources=("text_files",),
    choices={
        "target.kind": values((TargetKind.TRAIN, TargetKind.PATH)),
        "target.members": values((TargetMembers.SAME, TargetMembers.DISJOINT)),
        "data.source": values((DataSource.PYTHON_DOCS, DataSource.PYDOC, DataSource.FILES)),
    },
    file_source_values=(DataSource.FILES.value,),
    data_noun="text",
    target_formats=("hf-causal-lm", "peft"),
    own_formats=("hf-causal-lm", "peft"),
    target_loader_path="panoramia.modalities.text.targets:load_text_target",
    cost_path="panoramia.modalities.text.cost",
    shows_examples=True,
    implicit_manifest_path="panoramia.modalities.text.plugin:bare_causal_lm_manifest",
)
