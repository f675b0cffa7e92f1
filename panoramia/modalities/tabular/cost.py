"""The tabular audit's cost estimate (:mod:`panoramia.audit_cost`): the target (an MLP or a
tree ensemble), the stand-ins, h, the table's generator and the XGBoost distinguishers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from panoramia.audit_cost import (
    StageCost,
    distinguisher_stage,
    leaves,
    mlp_macs,
    network_macs,
    number,
    split,
    trained_stages,
    value,
)

POOL_SETTING = "data.pool_size"
BYTES_PER_ROW = 64
"""A CSV row counted at 64 bytes."""


def stages(config: Mapping[str, Any], rows: float) -> list[StageCost]:
    """The training stages of a tabular ``config`` over ``rows`` rows."""

    def network(block: str) -> float:
        return network_macs(config, block)

    tree_target = value(config, "target.kind") == "xgboost"
    found = trained_stages(config, rows, network, tree_target=tree_target)
    found.append(_generator(config, rows * split(config, "generator")))
    found.append(_distinguishers(config, rows))
    return found


def _generator(config: Mapping[str, Any], rows: float) -> StageCost:
    if value(config, "generator.synthesizer") in ("ctgan", "tvae"):
        epochs = number(config, "generator.epochs", 1)
        return StageCost("generator", mlp_macs([256, 256, 256, 256]), rows, epochs)
    return StageCost("generator", mlp_macs([]) * 16, rows, 1)  # trees over the columns


def _distinguishers(config: Mapping[str, Any], rows: float) -> StageCost:
    """One XGBoost grid search per side and ensemble member (its leaves per row)."""
    grid = value(config, "distinguisher.grid")
    entries = grid if isinstance(grid, list) else [{}]
    per_row = sum(
        leaves(float(e.get("n_estimators", 100)), float(e.get("max_depth", 6)))
        for e in entries
        if isinstance(e, Mapping)
    )
    return distinguisher_stage(config, rows, per_row, epochs=1)
