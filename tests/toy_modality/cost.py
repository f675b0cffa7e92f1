"""The toy's cost estimate (:mod:`panoramia.audit_cost`): logistic regressions, counted as
small MLPs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from panoramia.audit_cost import StageCost, distinguisher_stage, mlp_macs, trained_stages

POOL_SETTING = "data.pool_size"
BYTES_PER_ROW = 32


def stages(config: Mapping[str, Any], rows: float) -> list[StageCost]:
    def network(block: str) -> float:
        return mlp_macs([])

    return [
        *trained_stages(config, rows, network),
        distinguisher_stage(config, rows, network("distinguisher")),
    ]
