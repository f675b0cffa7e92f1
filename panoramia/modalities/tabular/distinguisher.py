"""The tabular distinguisher: gradient-boosted trees (xgboost) on [row features, loss].

The same class serves the attack (side information = per-example loss of the target f) and
the baseline (loss of the helper h). Hyper-parameters come from a small grid, chosen by the
validation lower bound (:mod:`panoramia.mia.selection`). Scores are probabilities of "member".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from panoramia.mia.selection import CandidateRecord, validation_lower_bound
from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.modalities.tabular.table import TabularSchema
from panoramia.setting_bounds import COUNT, LEVEL, Limit, ranged, ranged_list

if TYPE_CHECKING:
    import xgboost as xgb

DEFAULT_GRID = (
    {"max_depth": 3, "n_estimators": 200, "learning_rate": 0.05},
    {"max_depth": 5, "n_estimators": 300, "learning_rate": 0.05},
    {"max_depth": 7, "n_estimators": 400, "learning_rate": 0.03, "min_child_weight": 3},
)


@dataclass
class XGBoostDistinguisherConfig:
    grid: list[dict] = ranged_list(lambda: [dict(c) for c in DEFAULT_GRID], most=1000, fewest=1)
    selection_thresholds: str = ranged("grid:100", limit=Limit.THRESHOLDS)
    selection_confidence: float = ranged(0.95, LEVEL)
    n_jobs: int = ranged(1, COUNT, limit=Limit.THREADS)


class XGBoostDistinguisher:
    """``fit(x_train, side_train, y_train, x_val, side_val, y_val)``; ``score(x, side)``.

    ``x_*`` are conformed rows (features and label); ``side_*`` the per-example losses,
    shape (n,), or (n, k) for k models' losses; ``y_*`` 1 = member, 0 = non-member.
    """

    def __init__(self, schema: TabularSchema, config: XGBoostDistinguisherConfig, *, seed: int):
        self.schema = schema
        self.config = config
        self.seed = seed
        self.encoder: TabularEncoder | None = None
        self.model: xgb.XGBClassifier | None = None
        self.candidates: list[CandidateRecord] = []

    def _features(self, rows: pd.DataFrame, side: np.ndarray) -> np.ndarray:
        assert self.encoder is not None
        return np.column_stack([self.encoder.matrix(rows), np.asarray(side, np.float64)])

    def fit(
        self,
        x_train: pd.DataFrame,
        side_train: np.ndarray,
        y_train: np.ndarray,
        x_val: pd.DataFrame,
        side_val: np.ndarray,
        y_val: np.ndarray,
    ) -> XGBoostDistinguisher:
        import xgboost as xgb

        self.encoder = TabularEncoder.fit(x_train, self.schema)
        train = self._features(x_train, side_train)
        val = self._features(x_val, side_val)
        best = -1.0
        for params in self.config.grid:
            model = xgb.XGBClassifier(**params, n_jobs=self.config.n_jobs, random_state=self.seed)
            model.fit(train, y_train)
            bound = validation_lower_bound(
                model.predict_proba(val)[:, 1], y_val,
                thresholds=self.config.selection_thresholds,
                confidence=self.config.selection_confidence,
            )  # fmt: skip
            self.candidates.append(CandidateRecord(dict(params), bound))
            if bound > best:
                best, self.model = bound, model
        return self

    def score(self, x: pd.DataFrame, side: np.ndarray) -> np.ndarray:
        """P(member) for each row, shape (n,)."""
        assert self.model is not None  # fit chose one
        return self.model.predict_proba(self._features(x, side))[:, 1].astype(np.float64)

    @property
    def chosen(self) -> CandidateRecord:
        return max(self.candidates, key=lambda c: c.validation_theta_lb)
