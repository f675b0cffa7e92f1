"""Structured (typed) configuration of ``panoramia-audit``; YAML in ``conf/`` fills it in."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hydra.core.config_store import ConfigStore

CONF_DIR_ENV = "PANORAMIA_CONF_DIR"


@dataclass
class ScoresConfig:
    """A scores file with one row per audit example."""

    path: str | None = None
    """CSV/Parquet/NPZ file; None = the embedded official PANORAMIA Adult scores."""
    member_col: str = "member"
    baseline_col: str = "baseline_pred"
    mia_cols: list[str] = field(default_factory=lambda: ["mia_mlp10_pred", "mia_mlp100_pred"])


@dataclass
class AuditConfig:
    """Parameters of the tests (SPEC §2)."""

    thresholds: str = "grid:100"
    confidence: float = 0.95
    gamma: float = 0.0
    delta: float = 0.0


@dataclass
class JobConfig:
    scores: ScoresConfig = field(default_factory=ScoresConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    seed: int = 0


def register_schemas() -> None:
    """Register the schema that ``conf/config.yaml`` extends (type-checks every override)."""
    ConfigStore.instance().store(name="job_schema", node=JobConfig)


def config_dir() -> Path:
    """The Hydra config directory: ``$PANORAMIA_CONF_DIR``, else ``conf/`` of the checkout."""
    configured = os.environ.get(CONF_DIR_ENV)
    directory = Path(configured) if configured else Path(__file__).resolve().parents[2] / "conf"
    if not (directory / "config.yaml").is_file():
        raise FileNotFoundError(
            f"no config.yaml in {directory}; set {CONF_DIR_ENV} to the project's conf/ directory"
        )
    return directory
