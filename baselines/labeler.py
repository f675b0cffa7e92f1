"""The labeler: a classifier trained on D_G that labels synthetic rows.

A tabular generator samples the label column with the features, but its p(y | x) is often far
from the real one; the target f then finds synthetic rows "mislabelled", and its loss tells
synthetic from real for reasons unrelated to membership. Relabelling draws each synthetic
row's label from the labeler's predicted class probabilities (not the arg-max, which would make
synthetic labels easier than real ones), so p(y | x) follows a model of the real data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from panoramia.data.encoding import TabularEncoder
from panoramia.data.tabular import TabularSchema


def draw_classes(probabilities: np.ndarray, *, seed: int) -> np.ndarray:
    """One class index per row of (n, K) ``probabilities``, drawn from that row."""
    cumulative = np.cumsum(probabilities, axis=1)
    draws = np.random.default_rng(seed).random((len(probabilities), 1))
    return np.minimum((draws > cumulative).sum(axis=1), probabilities.shape[1] - 1)


class TabularLabeler:
    def __init__(self, schema: TabularSchema, *, seed: int) -> None:
        self.schema = schema
        self.seed = seed
        self.encoder: TabularEncoder | None = None
        self.model = None

    def fit(self, real: pd.DataFrame) -> TabularLabeler:
        """Train on real labelled rows (D_G: the generator's training members only)."""
        import xgboost as xgb

        self.encoder = TabularEncoder.fit(real, self.schema)
        self.model = xgb.XGBClassifier(
            n_estimators=200, max_depth=4, learning_rate=0.1, n_jobs=1, random_state=self.seed
        )
        self.model.fit(self.encoder.features(real), self.encoder.labels(real))
        return self

    def relabel(self, rows: pd.DataFrame, *, seed: int) -> pd.DataFrame:
        """A copy of ``rows`` whose label column is drawn from the labeler's probabilities."""
        assert self.encoder is not None
        assert self.model is not None
        probabilities = self.model.predict_proba(self.encoder.features(rows))
        classes = draw_classes(probabilities, seed=seed)
        out = rows.copy()
        out[self.schema.label] = np.asarray(self.encoder.classes)[classes]
        return out
