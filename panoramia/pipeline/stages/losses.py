"""The losses stages: per-example losses of f, h or a stand-in on every set the audit uses."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from panoramia.pipeline.stages.artifacts import Losses
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.splits import POOL_SET
from panoramia.pipeline.stages.stage_key import StageKey
from panoramia.targets import load_target

SEQUENCES = "sequences"
"""The folder of per-token losses (text): ``<set>.npy`` (n, T) float64 each, written a set at
a time, beside their means in ``losses.npz``."""
LOSSES = StageKey("losses")
"""The losses stages (``losses_<which>``): what they score is their inputs' (the model, the
sets); ``which`` names the side in the key."""
SEQUENCE_LOSSES = "sequence_losses.npz"
"""Where stores built before :data:`SEQUENCES` keep the per-token losses (one archive)."""


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
        losses = {}
        for file in files:  # one set's losses in memory at a time; its sequences to disk
            values = audit.side_losses(adapter, audit.sets.read(file))
            if values.ndim == 2:
                (directory / SEQUENCES).mkdir(exist_ok=True)
                np.save(directory / SEQUENCES / f"{file.stem}.npy", values)
                values = values.mean(axis=1)
            losses[file.stem] = values
        Losses(losses).save(directory)
        return {"mean_loss": {k: round(float(v.mean()), 5) for k, v in losses.items()}}

    return audit.runner.run(
        LOSSES,
        build,
        name=f"losses_{which}",
        config={"which": which},
        inputs=[model, split, synthetic, *([pool] if pool is not None else [])],
        label=f"losses under {which}",
    )


def side_losses_of(stage: StageResult) -> dict[str, np.ndarray]:
    """A losses stage's side information by set: its per-token losses (n, T), read from disk as
    needed (memory-mapped), where it stored them (text); else its per-example losses (n,)."""
    sequences = stage.directory / SEQUENCES
    if sequences.is_dir():
        return {path.stem: np.load(path, mmap_mode="r") for path in sorted(sequences.glob("*.npy"))}
    archive = stage.directory / SEQUENCE_LOSSES
    if archive.exists():
        return dict(np.load(archive))
    return dict(Losses.load(stage.directory))


def model_directory(model: StageResult) -> Path:
    """Where a target or helper stage's model lives (an external target's own path)."""
    path = model.directory
    if (path / "external.json").exists():
        path = Path(json.loads((path / "external.json").read_text())["path"])
    return path
