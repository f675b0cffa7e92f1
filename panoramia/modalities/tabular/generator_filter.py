"""The real-vs-synthetic quality filter for tables (PANORAMIA App. C.3); its core, shared with
images, is :mod:`panoramia.generators.realness`.

A classifier learns D_G (real, label 1) against extra synthetic rows (label 0), cross-fitted
on two folds so that every real row also gets a P(real) from a model that did not train on it.
Candidate synthetic rows that the classifier flags as synthetic with high confidence are
dropped: those whose P(real) is below the ``real_quantile`` quantile of the held-out real
rows' P(real) (with 0.05: a candidate goes when it looks less real than 95 % of unseen real
rows). Calibrating the bar on real rows makes it independent of the classifier's calibration.
At most ``max_drop`` of the candidates go (the least real-looking ones): with a generator that
is easy to tell apart, the filter removes its worst rows rather than nearly all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from panoramia.generators.realness import (
    FitPredict,
    cross_fitted_realness,
    held_out_auc,
    realness_threshold,
)
from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.modalities.tabular.table import TabularSchema


@dataclass(frozen=True)
class FilterResult:
    kept: pd.DataFrame
    """Candidates that pass, in their original order."""
    real_probability: np.ndarray
    """P(real) of every candidate (mean of the two fold models), shape (n_candidates,)."""
    threshold: float
    """The P(real) bar: the ``real_quantile`` quantile over held-out real rows, lowered where
    needed so that at most ``max_drop`` of the candidates fall below it."""


def _xgboost_realness(seed: int) -> FitPredict:
    """The fixed real-vs-synthetic classifier of the filter and the fidelity figure."""

    def fit_predict(train: np.ndarray, is_real: np.ndarray, inputs: list) -> list[np.ndarray]:
        import xgboost as xgb

        classifier = xgb.XGBClassifier(
            n_estimators=150, max_depth=4, learning_rate=0.1, n_jobs=1, random_state=seed
        )
        classifier.fit(train, is_real)
        return [classifier.predict_proba(x)[:, 1] for x in inputs]

    return fit_predict


def synthetic_fidelity(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: TabularSchema, *, seed: int
) -> float:
    """Held-out real-vs-synthetic ROC AUC of the filter's classifier (fixed settings) on
    ``real`` rows against ``synthetic`` rows: 0.5 when they cannot be told apart, 1 when they
    always can (:func:`panoramia.generators.realness.held_out_auc`). A figure for the report;
    nothing is chosen by it."""
    encoder = TabularEncoder.fit(pd.concat([real, synthetic]), schema)
    return held_out_auc(
        encoder.matrix(real), encoder.matrix(synthetic), _xgboost_realness(seed), seed=seed
    )


def filter_synthetic(
    real: pd.DataFrame,
    extra_synthetic: pd.DataFrame,
    candidates: pd.DataFrame,
    schema: TabularSchema,
    *,
    real_quantile: float,
    max_drop: float,
    seed: int,
) -> FilterResult:
    """Keep the candidates that look at least as real as all but ``real_quantile`` real rows."""
    encoder = TabularEncoder.fit(pd.concat([real, extra_synthetic]), schema)
    held_out_real, candidate_probability = cross_fitted_realness(
        encoder.matrix(real), encoder.matrix(extra_synthetic), encoder.matrix(candidates),
        _xgboost_realness(seed), seed=seed,
    )  # fmt: skip
    threshold = realness_threshold(
        held_out_real, candidate_probability, real_quantile=real_quantile, max_drop=max_drop
    )
    keep = candidate_probability >= threshold
    return FilterResult(candidates[keep].reset_index(drop=True), candidate_probability, threshold)
