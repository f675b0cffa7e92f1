"""The image plug-in's declaration (the registry, :mod:`panoramia.plugins`, reads it)."""

from __future__ import annotations

from pathlib import Path

from panoramia.audit_settings import TargetKind, TargetMembers, values
from panoramia.modalities.image.settings import CHOICE_TYPES, RULES, ImageSource
from panoramia.modality_plugin import Modality


def check_uploaded_model(directory: Path, manifest: dict[str, object]) -> None:
    """An uploaded Hugging Face image classifier's folder holds its ``config.json`` (the
    torch formats' files are checked by the names their manifest gives)."""
    from panoramia.targets.manifest import hugging_face_folder

    if manifest.get("format") == "hf-image-classification":
        hugging_face_folder(directory, manifest)


PLUGIN = Modality(
    name="image",
    primary_config="image",
    schema_name="image_job_schema",
    job_schema_path="panoramia.modalities.image.config:ImageJobConfig",
    pipeline_path="panoramia.modalities.image.pipeline:ImagePipeline",
    path_target="image_path",
    data_sources=("mnist", "digits", "images"),
    file_data_sources=("images",),
    choices={
        "target.kind": values((TargetKind.TRAIN, TargetKind.PATH)),
        "target.members": values((TargetMembers.SAME, TargetMembers.DISJOINT)),
        "data.source": values(ImageSource),
    },
    choice_types=CHOICE_TYPES,
    rules=RULES,
    file_source_values=(ImageSource.FILES.value,),
    data_noun="images",
    target_formats=("hf-image-classification", "torch-safetensors", "torchscript", "onnx"),
    own_formats=("hf-image-classification",),
    target_loader_path="panoramia.modalities.image.targets:load_image_target",
    cost_path="panoramia.modalities.image.cost",
    upload_check_path="panoramia.modalities.image.plugin:check_uploaded_model",
    shows_examples=True,
)
