"""The real-vs-synthetic filter's core, whatever the examples (PANORAMIA App. C.3).

A classifier learns D_G (real, label 1) against extra synthetic examples (label 0),
cross-fitted on two folds so that every real example also gets a P(real) from a model that did
not train on it. Candidates below the ``real_quantile`` quantile of the held-out real
examples' P(real) are dropped, at most ``max_drop`` of them (the least real-looking ones).
Calibrating the bar on real examples makes it independent of the classifier's calibration.
The tabular filter is :mod:`panoramia.modalities.tabular.generator_filter`, the image filter
:mod:`panoramia.modalities.image.generator_filter`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np


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


def _two_folds(
    real_x: Any, fake_x: Any, seed: int
) -> Iterator[tuple[Any, np.ndarray, np.ndarray, np.ndarray]]:
    """For each of two seeded folds: the training examples (real and fake outside the fold),
    their is-real labels, and the masks of the real and fake examples inside the fold."""
    rng = np.random.default_rng(seed)
    real_fold = rng.integers(0, 2, len(real_x))
    fake_fold = rng.integers(0, 2, len(fake_x))
    for fold in (0, 1):
        train = np.concatenate([real_x[real_fold != fold], fake_x[fake_fold != fold]])
        is_real = np.r_[np.ones((real_fold != fold).sum()), np.zeros((fake_fold != fold).sum())]
        yield train, is_real, real_fold == fold, fake_fold == fold


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
    held_out_real = np.empty(len(real_x))
    candidate_probability = np.zeros(len(candidate_x))
    for train, is_real, real_in, _ in _two_folds(real_x, fake_x, seed):
        real_p, candidate_p = fit_predict(train, is_real, [real_x[real_in], candidate_x])
        held_out_real[real_in] = real_p
        candidate_probability += candidate_p / 2
    return held_out_real, candidate_probability


def held_out_auc(real_x: Any, fake_x: Any, fit_predict: FitPredict, *, seed: int) -> float:
    """How well a classifier tells real from synthetic examples it did not train on: the ROC
    AUC of P(real) over both folds' held-out examples (0.5: indistinguishable, 1: always told
    apart). Cross-fitted on the same two seeded folds as the filter."""
    from sklearn.metrics import roc_auc_score

    real_p = np.empty(len(real_x))
    fake_p = np.empty(len(fake_x))
    for train, is_real, real_in, fake_in in _two_folds(real_x, fake_x, seed):
        real_p[real_in], fake_p[fake_in] = fit_predict(
            train, is_real, [real_x[real_in], fake_x[fake_in]]
        )
    labels = np.r_[np.ones(len(real_x)), np.zeros(len(fake_x))]
    return float(roc_auc_score(labels, np.r_[real_p, fake_p]))
