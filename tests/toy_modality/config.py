"""The toy audit's job schema (``tests/toy_modality/conf/toy.yaml`` extends ``toy_job_schema``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from panoramia.pipeline.config import DataConfigBase, JobConfigBase, TargetConfigBase
from panoramia.setting_bounds import BELOW_ONE, COUNT, Limit, Range, ranged


@dataclass
class ToyDataConfig(DataConfigBase):
    source: str = "blobs"
    pool_size: int = ranged(400, COUNT)
    """Points in each pool (the target's and the control's); as many real non-members."""
    dims: int = ranged(6, Range(1, 64, integer=True))
    """The points' dimensions (its own setting, its range declared here alone)."""


@dataclass
class ToyTargetConfig(TargetConfigBase):
    name: str = "toy"
    inverse_penalty: float = 1.0
    """The logistic regression's C: large fits the members closely (leaks)."""
    features: int = ranged(0, Range(0, 10**6, integer=True), limit=Limit.WIDTH)
    """Random Fourier features of the points (0: the raw points), to over-fit with; the
    service bounds it as a layer's width."""


@dataclass
class ToyGeneratorConfig:
    spread: float = 1.0
    """The fitted Gaussians' covariance is scaled by this."""
    covariance: str = "full"
    """``full`` or ``diagonal`` (its own choice, ``settings.py``): which of the fitted
    covariances the draws use."""


@dataclass
class ToyHelperConfig:
    n_points: int = 300
    inverse_penalty: float = 1.0
    features: int = 0
    validation_fraction: float = ranged(0.0, BELOW_ONE)


@dataclass
class ToyDistinguisherConfig:
    inverse_penalty: float = 1.0


@dataclass
class ToyJobConfig(JobConfigBase):
    modality: str = "toy"
    data: ToyDataConfig = field(default_factory=ToyDataConfig)
    target: ToyTargetConfig = field(default_factory=ToyTargetConfig)
    generator: ToyGeneratorConfig = field(default_factory=ToyGeneratorConfig)
    helper: ToyHelperConfig = field(default_factory=ToyHelperConfig)
    distinguisher: ToyDistinguisherConfig = field(default_factory=ToyDistinguisherConfig)
