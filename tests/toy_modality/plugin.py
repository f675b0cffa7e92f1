"""The toy plug-in's declaration: the one registry entry (registered by the test)."""

from __future__ import annotations

from panoramia.modality_plugin import Modality
from tests.toy_modality.settings import CHOICE_TYPES, RULES

PLUGIN = Modality(
    name="toy",
    primary_config="toy",
    schema_name="toy_job_schema",
    job_schema_path="tests.toy_modality.config:ToyJobConfig",
    pipeline_path="tests.toy_modality.pipeline:ToyPipeline",
    path_target="toy_path",
    data_sources=("toy_blobs",),
    file_data_sources=(),
    choices={
        "data.source": ("blobs",),
        "target.kind": ("train", "path"),
        "target.members": ("same", "disjoint"),
    },
    choice_types=CHOICE_TYPES,
    rules=RULES,
    file_source_values=(),
    data_noun="points",
    target_formats=("toy-linear",),
    own_formats=("toy-linear",),
    target_loader_path="tests.toy_modality.targets:load_toy_target",
    cost_path="tests.toy_modality.cost",
)
