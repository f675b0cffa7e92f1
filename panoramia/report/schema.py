"""The report document's type (``report.json``, schema versions :data:`SCHEMA_VERSIONS`): one
pydantic model that the writer checks its document against before writing it, and that the
service's report upload and the worker's record validate. Sections below the top level stay
plain JSON objects (their shapes are documented where they are written); keys this model does
not name are kept as they are."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from panoramia.report import SCHEMA_VERSIONS

# pydantic needs the Literal built from the tuple at runtime; mypy cannot read a variable there.
SchemaVersion = Literal[SCHEMA_VERSIONS]  # type: ignore[valid-type]


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class ReportDocument(BaseModel):
    """``report.json`` of schema version 1.0 to 1.10 (1.1 adds ``verdict``, 1.2
    ``detectable``, 1.3 ``gdp``, 1.4 ``null``, 1.5 ``attacker`` and ``exposure``, 1.6 the
    reference audits' p-values, groups tested against chance and the attacker's intervals, 1.7
    the groups' two statistics, 1.8 ``baseline.blind``, 1.9 the reference
    attack, 1.10 the plain loss attack beside it).
    Figures in nats; ``confidence`` a probability; ``m`` the audit set's size."""

    model_config = ConfigDict(extra="allow")
    schema_version: SchemaVersion
    kind: Literal["panoramia-audit-report"]
    created: datetime
    modality: str = Field(min_length=1, max_length=40)
    c_lb: float
    c_plus_eps_lb: float
    eps_tilde: float = Field(ge=0)
    confidence: float = Field(gt=0, lt=1)
    m: int = Field(ge=1)
    seed: int
    # Sections stay ``dict[Any, Any]`` (what a bare ``dict`` means to pydantic): ``dict[str,
    # Any]`` would make pydantic validate their keys as strings, which it does not do today.
    baseline: dict[Any, Any]
    attack: dict[Any, Any]
    reference_audits: dict[Any, Any]
    target: dict[Any, Any]
    data: dict[Any, Any]
    config: dict[Any, Any]
    timings: dict[Any, Any]
    versions: dict[str, str]

    _finite_numbers = field_validator("c_lb", "c_plus_eps_lb", "eps_tilde")(_finite)

    @field_validator("eps_tilde")
    @classmethod
    def _eps_tilde_is_the_difference(cls, value: float, info: ValidationInfo) -> float:
        if "c_lb" in info.data and "c_plus_eps_lb" in info.data:
            expected = max(0.0, info.data["c_plus_eps_lb"] - info.data["c_lb"])
            if abs(value - expected) > 1e-9:
                raise ValueError(f"{value} is not max(0, c_plus_eps_lb - c_lb) = {expected}")
        return value
