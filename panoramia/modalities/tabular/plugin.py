"""The tabular plug-in's declaration (the registry, :mod:`panoramia.plugins`, reads it)."""

from __future__ import annotations

from panoramia.modalities.tabular.settings import CHOICE_TYPES, NARROWED, RULES, TabularSource
from panoramia.modality_plugin import Modality

PLUGIN = Modality(
    name="tabular",
    primary_config="config",
    schema_name="job_schema",
    job_schema_path="panoramia.modalities.tabular.config:TabularJobConfig",
    pipeline_path="panoramia.modalities.tabular.pipeline:TabularPipeline",
    path_target="path",
    data_sources=("adult", "csv"),
    file_data_sources=("csv",),
    choices=NARROWED,
    choice_types=CHOICE_TYPES,
    rules=RULES,
    file_source_values=(TabularSource.CSV.value,),
    data_noun="a table",
    target_formats=(
        "torch-safetensors",
        "torchscript",
        "xgboost-json",
        "lightgbm-text",
        "catboost-cbm",
        "skops",
        "http",
        "onnx",
    ),
    own_formats=(),
    target_loader_path="panoramia.modalities.tabular.targets:load_tabular_target",
    cost_path="panoramia.modalities.tabular.cost",
    upload_check_path="panoramia.modalities.tabular.upload_check:check_uploaded_model",
)
