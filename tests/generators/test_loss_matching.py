"""Resampling synthetic examples on a real-data classifier's loss
(panoramia.modalities.image.loss_matching)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import ks_2samp

from panoramia.modalities.image.loss_matching import loss_matching_keep


def brute_force_keep(reference, candidate, priority, bins, max_drop) -> np.ndarray:
    """The rule spelt out with Python loops: the oracle for the vectorised version."""
    edges = np.quantile(reference, np.arange(1, bins) / bins)
    which = [int(np.sum(edges <= value)) for value in candidate]
    counts = [which.count(b) for b in range(bins)]
    n = len(candidate)
    cap = min(counts)  # full matching: every bin cut down to the emptiest one
    while sum(min(c, cap) for c in counts) < math.ceil((1 - max_drop) * n):
        cap += 1
    keep = np.zeros(n, bool)
    for b in range(bins):
        members = sorted((i for i in range(n) if which[i] == b), key=lambda i: (-priority[i], i))
        keep[members[:cap]] = True
    return keep


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_brute_force_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    reference = rng.exponential(1.0, 300)
    candidate = rng.exponential(rng.uniform(0.5, 3.0), int(rng.integers(1, 400)))
    priority = rng.integers(0, 5, candidate.size).astype(float)  # ties on purpose
    bins, max_drop = int(rng.integers(1, 12)), float(rng.uniform(0.0, 0.95))
    np.testing.assert_array_equal(
        loss_matching_keep(reference, candidate, priority=priority, bins=bins, max_drop=max_drop),
        brute_force_keep(reference, candidate, priority, bins, max_drop),
    )


def test_shifted_losses_are_resampled_to_the_reference() -> None:
    rng = np.random.default_rng(0)
    reference = rng.lognormal(-3.0, 1.5, 2000)  # real images: mostly confident
    candidate = rng.lognormal(-1.5, 1.5, 8000)  # synthetic: ~4.5× the loss at the median
    keep = loss_matching_keep(
        reference, candidate, priority=np.zeros(candidate.size), bins=20, max_drop=0.95
    )
    assert ks_2samp(reference, candidate).statistic > 0.3
    assert ks_2samp(reference, candidate[keep]).statistic < 0.05
    assert keep.sum() >= 0.05 * candidate.size


def test_max_drop_caps_the_correction_and_cuts_the_overfilled_bins_first() -> None:
    rng = np.random.default_rng(1)
    reference = rng.lognormal(-3.0, 1.5, 2000)
    candidate = rng.lognormal(-1.5, 1.5, 8000)
    keep = loss_matching_keep(
        reference, candidate, priority=np.zeros(candidate.size), bins=10, max_drop=0.3
    )
    assert keep.sum() == math.ceil(0.7 * candidate.size)
    before = ks_2samp(reference, candidate).statistic
    assert ks_2samp(reference, candidate[keep]).statistic < 0.8 * before
    # The lowest-loss bin (under-filled) loses nothing; the highest-loss one loses most.
    low, high = np.quantile(reference, [0.1, 0.9])
    assert keep[candidate < low].all()
    assert keep[candidate > high].mean() < keep.mean()


def test_same_distribution_keeps_nearly_everything() -> None:
    """The null case: synthetic losses already follow the real ones; only the sampling noise of
    the bin counts is trimmed."""
    rng = np.random.default_rng(2)
    reference, candidate = rng.gamma(0.5, 1.0, 5000), rng.gamma(0.5, 1.0, 5000)
    keep = loss_matching_keep(
        reference, candidate, priority=np.zeros(candidate.size), bins=5, max_drop=0.5
    )
    assert keep.mean() > 0.9


def test_priority_decides_within_a_bin() -> None:
    reference = np.linspace(0.0, 1.0, 101)
    candidate = np.r_[np.full(6, 0.2), np.full(2, 0.8)]  # 6 in the low bin, 2 in the high one
    priority = np.r_[np.arange(6.0), 0.0, 0.0]
    keep = loss_matching_keep(reference, candidate, priority=priority, bins=2, max_drop=0.9)
    np.testing.assert_array_equal(keep, [False] * 4 + [True] * 4)  # the 2 best low ones stay


@pytest.mark.parametrize(
    ("reference", "candidate", "kwargs", "message"),
    [
        (np.array([]), np.ones(3), {}, "reference"),
        (np.ones(3), np.ones(3), {"bins": 0}, "bins"),
        (np.ones(3), np.ones(3), {"max_drop": 1.0}, "max_drop"),
        (np.ones(3), np.array([1.0, np.nan, 2.0]), {}, "finite"),
    ],
)
def test_bad_input_is_refused(reference, candidate, kwargs, message) -> None:
    settings = {"priority": np.zeros(candidate.size), "bins": 3, "max_drop": 0.5, **kwargs}
    with pytest.raises(ValueError, match=message):
        loss_matching_keep(reference, candidate, **settings)
