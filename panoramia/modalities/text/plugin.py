"""The text plug-in's declaration (the registry, :mod:`panoramia.plugins`, reads it)."""

from __future__ import annotations

import json
from pathlib import Path

from panoramia.audit_settings import TargetKind, TargetMembers, values
from panoramia.modalities.text.settings import CHOICE_TYPES, RULES, TextSource
from panoramia.modality_plugin import Modality


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


def check_uploaded_model(directory: Path, manifest: dict[str, object]) -> None:
    """An uploaded text model as the audit opens it: a peft adapter's base and adapter
    folders; a causal LM's folder with its ``config.json`` (an ONNX one's too, whose output
    must be declared logits; its graph is checked as every ONNX upload's)."""
    from panoramia.errors import InputError

    if manifest.get("format") == "onnx" and manifest.get("scores") != "logits":
        raise InputError('an ONNX causal LM\'s target.json declares "scores": "logits"')
    if manifest.get("format") == "peft":
        from panoramia.modalities.text.targets import peft_folders

        peft_folders(Path(directory), manifest)
    else:
        from panoramia.targets.manifest import hugging_face_folder

        hugging_face_folder(directory, manifest)


PLUGIN = Modality(
    name="text",
    primary_config="text",
    schema_name="text_job_schema",
    job_schema_path="panoramia.modalities.text.config:TextJobConfig",
    pipeline_path="panoramia.modalities.text.pipeline:TextPipeline",
    path_target="text_path",
    data_sources=("python_docs", "austen", "text_files"),
    file_data_sources=("text_files",),
    choices={
        "target.kind": values((TargetKind.TRAIN, TargetKind.PATH)),
        "target.members": values((TargetMembers.SAME, TargetMembers.DISJOINT)),
        "data.source": values(TextSource),
    },
    choice_types=CHOICE_TYPES,
    rules=RULES,
    file_source_values=(TextSource.FILES.value,),
    data_noun="text",
    target_formats=("hf-causal-lm", "peft", "onnx"),
    own_formats=("hf-causal-lm", "peft"),
    target_loader_path="panoramia.modalities.text.targets:load_text_target",
    cost_path="panoramia.modalities.text.cost",
    upload_check_path="panoramia.modalities.text.plugin:check_uploaded_model",
    shows_examples=True,
    implicit_manifest_path="panoramia.modalities.text.plugin:bare_causal_lm_manifest",
)
