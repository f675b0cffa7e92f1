"""Real-vs-synthetic quality filter (PANORAMIA App. C.3), for tables; images reuse its core.

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from panoramia.data.encoding import TabularEncoder
from panoramia.data.tabular import TabularSchema


@dataclass(frozen=True)
class FilterResult:
    kept: pd.DataFrame
    """Candidates that pass, in their original order."""
    real_probability: np.ndarray
    """P(real) of every candidate (mean of the two fold models), shape (n_candidates,)."""
    threshold: float
    """The P(real) bar: the ``real_quantile`` quantile over held-out real rows, lowered where
    needed so that at most ``max_drop`` of the candidates fall below it."""


def realness_threshold(
    held_out_real: np.ndarray,
    candidate_probability: np.ndarray,
    *,
    real_quantile: float,
    max_drop: float,
) -> float:
    """The P(real) bar: the ``real_quantile`` quantile over held-out real examples, lowered
    so that at most ``max_drop`` of the candidates fall below it."""
    threshold = float(np.quantile(held_out_real, real_quantile))
    return min(threshold, float(np.quantile(candidate_probability, max_drop)))


FitPredict = Callable[[Any, np.ndarray, list[Any]], list[np.ndarray]]
"""``fit_predict(train_x, is_real, [x, ...])``: fit a real-vs-synthetic classifier on
``train_x`` (is_real 1/0) and return P(real) of each array in the list."""


def cross_fitted_realness(
    real_x: Any,
    fake_x: Any,
    candidate_x: Any,
    fit_predict: FitPredict,
    *,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """P(real) of every real example (from the fold model that did not see it) and of every
    candidate (mean of the two fold models). ``*_x`` are arrays indexed by their first axis
    (feature matrices or images)."""
    rng = np.random.default_rng(seed)
    real_fold = rng.integers(0, 2, len(real_x))
    fake_fold = rng.integers(0, 2, len(fake_x))
    held_out_real = np.empty(len(real_x))
    candidate_probability = np.zeros(len(candidate_x))
    for fold in (0, 1):
        train = np.concatenate([real_x[real_fold != fold], fake_x[fake_fold != fold]])
        is_real = np.r_[np.ones((real_fold != fold).sum()), np.zeros((fake_fold != fold).sum())]
        real_p, candidate_p = fit_predict(train, is_real, [real_x[real_fold == fold], candidate_x])
        held_out_real[real_fold == fold] = real_p
        candidate_probability += candidate_p / 2
    return held_out_real, candidate_probability


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
    import xgboost as xgb

    def fit_predict(train: np.ndarray, is_real: np.ndarray, inputs: list) -> list[np.ndarray]:
        classifier = xgb.XGBClassifier(
            n_estimators=150, max_depth=4, learning_rate=0.1, n_jobs=1, random_state=seed
        )
        classifier.fit(train, is_real)
        return [classifier.predict_proba(x)[:, 1] for x in inputs]

    encoder = TabularEncoder.fit(pd.concat([real, extra_synthetic]), schema)
    held_out_real, candidate_probability = cross_fitted_realness(
        encoder.matrix(real), encoder.matrix(extra_synthetic), encoder.matrix(candidates),
        fit_predict, seed=seed,
    )  # fmt: skip
    threshold = realness_threshold(
        held_out_real, candidate_probability, real_quantile=real_quantile, max_drop=max_drop
    )
    keep = candidate_probability >= threshold
    return FilterResult(candidates[keep].reset_index(drop=True), candidate_probability, threshold)
