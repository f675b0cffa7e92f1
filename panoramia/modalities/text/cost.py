"""The text audit's cost estimate (:mod:`panoramia.audit_cost`): the causal LMs (target,
stand-ins, h and generator take the target's shape unless they set their own), the public
base's pre-training and the transformer distinguishers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from panoramia.audit_cost import (
    StageCost,
    distinguisher_stage,
    network_macs,
    number,
    split,
    trained_stages,
)

POOL_SETTING = "data.pool_chunks"
BYTES_PER_ROW = 256
"""A text chunk counted at 256 bytes (64 tokens of about 4 characters)."""


def stages(config: Mapping[str, Any], rows: float) -> list[StageCost]:
    """The training stages of a text ``config`` over ``rows`` chunks."""

    def network(block: str) -> float:
        return network_macs(config, block, shares_target_shape=True)

    found = trained_stages(config, rows, network)
    epochs = number(config, "generator.epochs", 1)
    found.append(
        StageCost("generator", network("generator"), rows * split(config, "generator"), epochs)
    )
    if number(config, "base.chunks"):
        found.append(
            StageCost(
                "base",
                network("target"),
                number(config, "base.chunks"),
                number(config, "base.epochs"),
            )
        )
    found.append(distinguisher_stage(config, rows, network("distinguisher")))
    return found
