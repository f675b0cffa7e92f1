"""The tabular audit's schema (``panoramia/modalities/tabular/conf/config.yaml``): rows of a
table, sdv, xgboost."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from panoramia.modalities.tabular.distinguisher import XGBoostDistinguisherConfig
from panoramia.modalities.tabular.generator import TabularGeneratorConfig
from panoramia.modalities.tabular.settings import AdultHeldOut, TabularTargetKind
from panoramia.modalities.tabular.training import MlpConfig
from panoramia.pipeline.config import (
    DataConfigBase,
    JobConfigBase,
    QualityFilterConfig,
    TargetConfigBase,
    TrustedModulesMixin,
)
from panoramia.setting_bounds import (
    AMOUNT,
    BELOW_ONE,
    COUNT,
    FRACTION,
    LEVEL,
    RATE,
    Limit,
    Range,
    ranged,
    ranged_list,
)


@dataclass
class TabularDataConfig(DataConfigBase):
    """``adult`` (embedded) or ``csv`` (members_path, optional nonmembers_path, the schema)."""

    source: str = "adult"
    label: str | None = None
    categorical: list[str] = ranged_list(list, most=10_000)
    continuous: list[str] = ranged_list(list, most=10_000)
    pool_size: int = ranged(15000, COUNT)
    """adult: rows in each pool (the target's training set)."""
    held_out: str = AdultHeldOut.FILE.value
    """adult: the real non-members, drawn with the pools from both files pooled (``drawn``, what
    the plug-in's ``conf/data/adult.yaml`` sets) or UCI's test file (``file``: the audit did not
    draw them, so its reference audits are figures); in the data stage's key only where not
    ``file``. Other sources ignore it (their held-out rows are ``nonmembers_path``)."""


@dataclass
class TabularTargetConfig(TargetConfigBase, TrustedModulesMixin, MlpConfig):
    """The audited model: a demo target trained here (mlp, xgboost) or a directory (path)."""

    kind: str = TabularTargetKind.MLP.value
    name: str = "mlp"
    n_estimators: int = ranged(300, COUNT, limit=Limit.ESTIMATORS)
    max_depth: int = ranged(6, COUNT, limit=Limit.LAYERS)
    xgb_learning_rate: float = ranged(0.1, RATE)
    dp_epsilon: float | None = ranged(None, Range(0, math.inf, open_low=True))
    """kind=mlp: train with DP-SGD (Opacus) for this ε at ``dp_delta`` (``inf``: the same
    recipe without noise); the report's claim is then filled from the training. None: plain
    training."""
    dp_delta: float = ranged(1e-5, LEVEL)
    dp_max_grad_norm: float = ranged(1.0, Range(0, 10**6, open_low=True))


@dataclass
class TabularGeneratorSettings(TabularGeneratorConfig):
    """The synthesizer (fields of TabularGeneratorConfig), then labelling and filtering."""

    relabel: bool = True
    """Draw synthetic labels from a labeler trained on D_G (panoramia.modalities.tabular.helper)."""
    support_novelty: float = ranged(0.005, FRACTION)
    """Drop synthetic rows with a value, or a pair of values, that D_G never shows, on the
    columns and pairs where real rows show unseen ones less often than this share
    (panoramia.modalities.tabular.support); 0 turns the screen off. Applied before the filter."""
    match_marginals: bool = True
    """Map each continuous column of the generator's rows onto D_G's distribution by quantile
    (panoramia.modalities.tabular.marginals), before the screen and the filter."""
    filter: QualityFilterConfig = field(default_factory=QualityFilterConfig)


@dataclass
class TabularHelperConfig(MlpConfig):
    """h: the target's architecture, trained on this many synthetic rows."""

    n_rows: int = ranged(6000, AMOUNT)
    validation_fraction: float = ranged(0.2, BELOW_ONE)


@dataclass
class TabularJobConfig(JobConfigBase):
    modality: str = "tabular"
    data: TabularDataConfig = field(default_factory=TabularDataConfig)
    target: TabularTargetConfig = field(default_factory=TabularTargetConfig)
    generator: TabularGeneratorSettings = field(default_factory=TabularGeneratorSettings)
    helper: TabularHelperConfig = field(default_factory=TabularHelperConfig)
    distinguisher: XGBoostDistinguisherConfig = field(default_factory=XGBoostDistinguisherConfig)
