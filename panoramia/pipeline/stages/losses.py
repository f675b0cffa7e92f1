"""The losses stages: per-example losses of f, h or a stand-in on every set the audit uses."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.splits import POOL_SET
from panoramia.targets import load_target

SEQUENCE_LOSSES = "sequence_losses.npz"
"""Per-token losses (n, T) of each set, beside their means in ``losses.npz`` (text)."""


def build_losses(
    audit: Audit, model: StageResult, split: StageResult, synthetic: StageResult,
    *, which: str, pool: StageResult | None = None,
) -> StageResult:  # fmt: skip
    """Per-example losses of f (``which="target"``) or h on every set the audit uses; with
    ``pool`` (the synthetic stage, where it drew the attacker's pool), on the pool too."""

    def build(directory: Path) -> dict:
        adapter = load_target(
            model_directory(model), trusted_modules=audit.trusted_modules(),
            device=audit.inference_device(which),
        )  # fmt: skip
        pattern = f"*{audit.sets.suffix}"
        files = sorted([*split.directory.glob(pattern), *synthetic.directory.glob(pattern)])
        if pool is not None:
            files.append(pool.directory / f"{POOL_SET}{audit.sets.suffix}")
        side = {file.stem: audit.side_losses(adapter, audit.sets.read(file)) for file in files}
        losses = {k: v.mean(axis=1) if v.ndim == 2 else v for k, v in side.items()}
        # savez's stub: ** could fill allow_pickle: bool
        np.savez(directory / "losses.npz", **losses)  # type: ignore[arg-type]
        if any(v.ndim == 2 for v in side.values()):
            # savez's stub: ** could fill allow_pickle: bool
            np.savez(directory / SEQUENCE_LOSSES, **side)  # type: ignore[arg-type]
        return {"mean_loss": {k: round(float(v.mean()), 5) for k, v in losses.items()}}

    return audit.runner.run(
        f"losses_{which}",
        build,
        config={"which": which},
        inputs=[model, split, synthetic, *([pool] if pool is not None else [])],
        label=f"losses under {which}",
    )


def model_directory(model: StageResult) -> Path:
    """Where a target or helper stage's model lives (an external target's own path)."""
    path = model.directory
    if (path / "external.json").exists():
        path = Path(json.loads((path / "external.json").read_text())["path"])
    return path
