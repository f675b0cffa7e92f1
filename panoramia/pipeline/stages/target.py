"""The target stage: the demo target trained here (cached), or a brought model's identity."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from panoramia.hashing import settings_key
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import StageKey
from panoramia.targets import load_target

DEMO_TARGET = StageKey(
    "target",
    version=3,  # 2: initial weights follow train_seed; 3: identity in the record
    # Its key is the target section (a plug-in's target_key may reshape it), less who may be
    # imported and, for plain training, the DP fields.
    also_reads=("target",),
)
BESIDE_D_G = StageKey("target", version=3, also_reads=("target", "data.split", "generation_seed"))
"""A control trained on D_G too (``target.members=disjoint+generator_data``): its key adds
the split and the generation seed that draw D_G."""
BROUGHT_TARGET = StageKey("target", also_reads=("target",))
"""A brought model's target stage: its settings and identity (format, file hashes)."""


def build_target(audit: Audit, data: StageResult) -> StageResult:
    """Train the demo target (cached) or record an external target's identity."""
    config = audit.target_key(settings_key(audit.job.target))
    config.pop("trusted_modules", None)  # who may be imported, not what the target is
    if config.get("dp_epsilon", 0) is None:  # plain training: the key it always had
        for name in [key for key in config if key.startswith("dp_")]:
            config.pop(name)
    if audit.job.target.kind == "path":
        return external_target(audit, config, data)
    config.pop("name")
    config.pop("path")
    if audit.job.target.members == "disjoint+generator_data":  # D_G is in its training set
        config["generator_data"] = {
            "fractions": asdict(audit.job.data.split),
            "generation_seed": audit.generation_seed,
        }

    def build(directory: Path) -> dict:
        metrics = audit.train_demo_target(data, directory)
        # The identity (format, file hashes) goes into the record, read by every report.
        return {**metrics, "identity": load_target(directory).identity()}

    return audit.runner.run(
        BESIDE_D_G if "generator_data" in config else DEMO_TARGET,
        build,
        config=config,
        inputs=[data, *audit.target_inputs(data)],
        label=f"target {audit.job.target.name}",
    )


def external_target(audit: Audit, config: dict, data: StageResult) -> StageResult:
    """The target stage of a brought model: its identity (format, file hashes), probed on a
    few members first; the stage holds only its path."""
    adapter = load_target(audit.job.target.path, trusted_modules=audit.trusted_modules())
    audit.probe_target(adapter, data)
    identity = adapter.identity()

    def build(directory: Path) -> dict:
        (directory / "external.json").write_text(
            json.dumps({"path": str(Path(audit.job.target.path).resolve())})
        )
        return {"identity": identity}

    return audit.runner.run(
        BROUGHT_TARGET,
        build,
        config={**config, "identity": identity},
        inputs=[],
        label=f"target {audit.job.target.name}",
    )
