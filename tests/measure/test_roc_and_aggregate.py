"""ROC summaries against scikit-learn; aggregation over runs against scipy's t-interval."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score, roc_curve

from panoramia.errors import InputError
from panoramia.measure import aggregate, roc_summary


@pytest.mark.parametrize("decimals", [None, 1])
def test_roc_matches_scikit_learn(decimals: int | None) -> None:
    rng = np.random.default_rng(0)
    membership = rng.integers(0, 2, 30_000)
    scores = rng.normal(size=30_000) + 0.8 * membership
    if decimals is not None:
        scores = np.round(scores, decimals)  # ties
    summary = roc_summary(scores, membership)
    assert summary.auc == pytest.approx(roc_auc_score(membership, scores), abs=1e-12)
    fpr, tpr, _ = roc_curve(membership, scores)
    for alpha in (1e-3, 1e-2, 1e-1):
        assert summary.tpr_at_fpr[alpha] == pytest.approx(tpr[fpr <= alpha].max())


def test_tpr_only_where_the_fpr_is_resolvable() -> None:
    rng = np.random.default_rng(1)
    membership = np.r_[np.ones(500, int), np.zeros(500, int)]
    summary = roc_summary(rng.random(1000), membership)
    assert summary.tpr_at_fpr[1e-3] is None  # needs 10,000 negatives
    assert summary.tpr_at_fpr[1e-2] is None  # needs 1,000 negatives
    assert summary.tpr_at_fpr[1e-1] is not None


def test_aggregate_matches_scipy_interval() -> None:
    values = [0.31, 0.42, 0.28, 0.5, 0.37]
    result = aggregate(values, confidence=0.95)
    low, high = stats.t.interval(0.95, 4, loc=np.mean(values), scale=stats.sem(values))
    assert (result.mean, result.ci_low, result.ci_high) == pytest.approx(
        (np.mean(values), low, high)
    )
    assert result.n == 5


def test_aggregate_covers_the_mean_at_its_level() -> None:
    rng = np.random.default_rng(2)
    covered = sum(
        (lambda a: a.ci_low <= 1.0 <= a.ci_high)(aggregate(rng.normal(1.0, 0.3, 5)))
        for _ in range(2000)
    )
    assert 0.93 <= covered / 2000 <= 0.97


def test_aggregate_single_run_and_bad_values() -> None:
    single = aggregate([0.4])
    assert single.mean == 0.4
    assert np.isnan(single.ci_low)
    assert single.to_dict()["ci_low"] is None
    with pytest.raises(InputError, match="runs"):
        aggregate([])
    with pytest.raises(InputError, match="runs"):
        aggregate([0.1, np.nan])
